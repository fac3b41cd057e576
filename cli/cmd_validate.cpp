#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/pickle.h"
#include "common/yaml_reader.h"
#include "report/memory_snapshot.h"
#include "report/profiler_trace.h"
#include "report/report_compare.h"

namespace fsdpsim::cli {
namespace {

struct ValidateOptions {
  std::string predicted;
  std::string measured;
  std::string measured_memory;
  std::string measured_trace;
  int32_t device = 0;
  std::string json;
  size_t worst = 15;
};

}  // namespace

void register_validate(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "compare a predicted report with a measured one, op by op");
  cmd->add_option("--predicted,-p", options->predicted, "report written by 'fsdpsim simulate --json'")->required();
  cmd->add_option("--measured,-m", options->measured, "report written by 'fsdpsim exec --json'");
  cmd->add_option("--measured-memory", options->measured_memory,
                  "a CUDA memory snapshot of your own run (torch.cuda.memory._dump_snapshot): its peaks and bytes by "
                  "category against the prediction");
  cmd->add_option("--measured-trace", options->measured_trace,
                  "a PyTorch profiler trace of your own run (Chrome-trace JSON with CUDA kernels): its step time and "
                  "exposed communication against the prediction");
  cmd->add_option("--device", options->device, "the snapshot's device to read")->capture_default_str();
  cmd->add_option("--json", options->json, "write the comparison as JSON to this file");
  cmd->add_option("--worst", options->worst, "how many ops with the largest error to list")->capture_default_str();
  cmd->callback([options] {
    if (options->measured.empty() && options->measured_memory.empty() && options->measured_trace.empty()) {
      throw ConfigError(SourceLocation{"<validate>", 0, 0}, "--measured", "nothing measured to compare with",
                        "give --measured (an 'fsdpsim exec --json' report), --measured-memory (a memory snapshot) or "
                        "--measured-trace (a profiler trace)");
    }
    const Report predicted = load_report(options->predicted);
    if (!options->measured_memory.empty()) {
      const SnapshotMemory m = read_memory_snapshot(
          read_pickle(read_file_bytes(options->measured_memory, limits::kMaxSnapshotBytes), options->measured_memory),
          options->measured_memory, options->device);
      std::cout << snapshot_comparison_text(predicted, m);
    }
    if (!options->measured_trace.empty()) {
      const TraceStep t = read_profiler_trace(read_file_bytes(options->measured_trace, limits::kMaxTraceBytes),
                                              options->measured_trace);
      std::cout << trace_comparison_text(predicted, t);
    }
    if (options->measured.empty()) return;
    const Report measured = load_report(options->measured);
    Comparison c;
    try {
      c = compare_reports(predicted, measured);
    } catch (const ConfigError& e) {
      // compare_reports sees two reports, not their files: name both here.
      throw ConfigError(SourceLocation{options->measured, 0, 0}, "ops",
                        e.problem() + " (predicted: " + options->predicted + ")", "");
    }
    std::cout << comparison_text(c, options->worst);
    if (!options->json.empty()) write_text_file(options->json, comparison_json(c), "--json");
  });
}

}  // namespace fsdpsim::cli
