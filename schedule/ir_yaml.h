#pragma once
/// The schedule IR as YAML: `fsdpsim schedule -o FILE` writes it, `simulate --schedule FILE` and `exec` read it.
/// The round trip is exact: read(write(s)) == s. Fields at their default are left out of the file.

#include <string>

#include "schedule/ir.h"

namespace fsdpsim {

/// Writes the schedule as YAML (version 1).
std::string schedule_to_yaml(const Schedule& schedule);
/// Parses a schedule; structural problems (unknown keys, wrong types, unknown stream or group names, a missing or
/// newer version) are ConfigErrors naming file:line:key. Semantic checks are validate()'s job.
Schedule schedule_from_yaml(const std::string& text, const std::string& source);
/// Reads a schedule file.
Schedule load_schedule(const std::string& path);

}  // namespace fsdpsim
