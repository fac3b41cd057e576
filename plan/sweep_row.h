#pragma once
/// One sweep point as JSON, written in one place: the rows of `sweep --json` and `fit --json` and the results of the
/// part files `sweep --shard i/N --part FILE` writes are the same object. It holds everything a SweepResult holds (the
/// flat fields a reader of the report wants first, then the whole memory verdict and training cost), so that a part
/// reads back to the very result that was written and `merge` prints what a one-process sweep prints.

#include <string>

#include <nlohmann/json.hpp>

#include "plan/json_fields.h"
#include "plan/sweep.h"

namespace fsdpsim {

/// The row of one point. Doubles are JSON numbers: nlohmann writes the shortest text that reads back to the same double.
[[nodiscard]] nlohmann::ordered_json sweep_row_json(const SweepResult& r);

/// Reads a row that sweep_row_json wrote, found at `path` of the file `in` reads; derived fields ("fits",
/// "verdict", the flat copies of the verdict and cost) are not read back.
[[nodiscard]] SweepResult read_sweep_row(const JsonFields& in, const nlohmann::ordered_json& row,
                                         const std::string& path);

}  // namespace fsdpsim
