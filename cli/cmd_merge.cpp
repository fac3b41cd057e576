// `fsdpsim merge`: the parts of a sharded sweep (`sweep --shard i/N --part FILE`) joined into the ranked result the
// one-process sweep prints and writes.
#include <memory>

#include "cli/commands.h"
#include "cli/sweep_print.h"
#include "plan/sweep_parts.h"

namespace fsdpsim::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> parts;
  SweepOutputs outputs;
  std::string rank_by;  ///< empty: the sweep's own --rank-by
};

}  // namespace

void register_merge(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd =
      app.add_subcommand("merge", "join the parts of a sharded sweep (sweep --shard i/N --part FILE) into one result");
  cmd->add_option("parts", o->parts, "every shard's part file")->required();
  cmd->add_option("--rank-by", o->rank_by, "rank differently than the sweep did: throughput, cost, memory or time")
      ->check(CLI::IsMember({"throughput", "cost", "memory", "time"}));
  cmd->add_option("--top", o->outputs.top, "rows of the printed table")->capture_default_str();
  cmd->add_option("--csv", o->outputs.csv, "write every point, ranked, as CSV");
  cmd->add_option("--json", o->outputs.json, "write every point, ranked, as JSON");
  cmd->add_option("--html", o->outputs.html, "write a self-contained HTML report");
  cmd->callback([o] {
    std::vector<SweepPart> parts;
    for (const std::string& path : o->parts) parts.push_back(load_sweep_part(path));
    const std::vector<SweepResult> results = merge_sweep_parts(parts, o->parts);
    const auto& header = parts.front().header;
    const auto sweep_rank = header.find("rank_by");
    o->outputs.rank_by = !o->rank_by.empty()          ? o->rank_by
                         : sweep_rank != header.end() ? sweep_rank->second
                                                      : "throughput";
    print_sweep(header, results, o->outputs);
  });
}

}  // namespace fsdpsim::cli
