#pragma once
/// A job resolved from a model, a topology and `--set` overrides the way the CLI resolves `--model`, `--topology` and
/// `--set` (the engine and report tests' shorthand).

#include <string>
#include <vector>

#include "job/job.h"

namespace fsdpsim::testing {

inline Job job_of(const std::string& model, const std::string& topology, const std::vector<std::string>& sets) {
  JobOptions options;
  options.model = model;
  options.topology = topology;
  options.sets = sets;
  return resolve_job(options);
}

}  // namespace fsdpsim::testing
