#pragma once
/// A YAML document as JSON text, for callers that read JSON (the Python module's `schedule()`): mappings become
/// objects in their order, sequences arrays, and plain scalars numbers, booleans or null where YAML 1.2's core schema
/// reads them so; everything else stays a string.

#include <string>

namespace fsdpsim::cli {

/// `yaml_text` is fsdpsim's own output (the schedule writer's): yaml-cpp's exception would be a bug, not bad input.
std::string yaml_as_json(const std::string& yaml_text);

}  // namespace fsdpsim::cli
