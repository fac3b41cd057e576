#pragma once
/// What `sweep` and `merge` print and write: the summary lines, the ranked table, CSV, JSON and HTML. Both go
/// through here, so a merged sweep's outputs equal a one-process sweep's byte for byte.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "plan/sweep.h"

namespace fsdpsim::cli {

/// Where the outputs go and how the points rank.
struct SweepOutputs {
  std::string rank_by = "throughput";
  size_t top = 20;
  std::string csv, json, html;
};

/// "throughput" → RankBy::throughput, ...
RankBy rank_by_name(const std::string& name);

/// The summary's inputs that are not in the results (model, hardware, the --compare-pp line, the goodput inputs),
/// as strings: a sweep part carries them to `merge`.
std::map<std::string, std::string> sweep_header(const SweepSpec& spec, const std::string& compared,
                                                const std::string& rank_by);

/// Prints the summary and the table on stdout and writes the files the outputs name.
void print_sweep(const std::map<std::string, std::string>& header, const std::vector<SweepResult>& results,
                 const SweepOutputs& outputs);

}  // namespace fsdpsim::cli
