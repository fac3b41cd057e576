// A collective on one host rank (see host_ops.h): input pieces → rendezvous → checked output pieces.
#include <algorithm>
#include <chrono>
#include <thread>

#include "exec/fault_report.h"
#include "exec/host/host_collectives.h"
#include "exec/host/host_ops.h"

namespace fsdpsim {
namespace {

// The input: the pieces of buffers (checked as they are read), bucket padding as zeros, or, for a collective no
// buffer holds (TP/EP inside a unit), this rank's own pattern.
std::vector<uint32_t> read_input(const Op& op, int32_t step, const CollectiveSide& side, RankContext& ctx) {
  std::vector<uint32_t> values;
  if (side.scratch) {
    const uint64_t seed = pattern_seed(ctx.rank, op.id, step, BufferId::none(), 0);
    for (int64_t i = 0; i < side.words; ++i) values.push_back(pattern_value(seed, i));
    return values;
  }
  for (const Piece& p : side.pieces) {
    if (!p.buffer.valid()) {
      values.resize(values.size() + static_cast<size_t>(p.words), 0);
    } else {
      ctx.memory.read(p.buffer, p.first_region, p.regions, op, values);
    }
  }
  values.resize(static_cast<size_t>(side.words), 0);  // a longer concatenation sends its first words
  return values;
}

// Writes the output into its pieces; words past the result (a buffer longer than what it receives) become zeros.
void write_output(const Op& op, const CollectiveSide& side, const std::vector<uint32_t>& values, RankContext& ctx) {
  size_t cursor = 0;
  for (const Piece& p : side.pieces) {
    std::vector<uint32_t> part(static_cast<size_t>(p.words), 0);
    for (size_t i = 0; i < part.size() && cursor < values.size(); ++i) part[i] = values[cursor++];
    if (p.buffer.valid()) ctx.memory.write(p.buffer, p.first_region, p.regions, op, part);
  }
}

std::string label(const Op& op, int32_t step, const std::string& group, const std::vector<int32_t>& members) {
  return "op " + std::to_string(op.id.value()) + " '" + op.name + "' (" + std::string(to_string(op.kind)) + " over " +
         describe_members(group, members) + ", step " + std::to_string(step) + ")";
}

}  // namespace

void run_collective_op(const Op& op, int32_t step, RankContext& ctx) {
  if (ctx.options.collective_delay_ns > 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(ctx.options.collective_delay_ns));
  }
  const CollectivePlan& plan = ctx.plan.collectives[op.id.index()];
  const Group& group = ctx.schedule.groups[op.group];
  CollectiveCall call;
  call.op = &op;
  call.group_name = group.name;
  call.members = group_members(group, ctx.rank);
  call.rank = ctx.rank;
  call.step = step;
  call.chunk_words = plan.chunk_words;
  call.in_words = plan.in.words;
  call.emulated = ctx.options.emulate;
  // Reduce-scatter and all-to-all members read one chunk of each input: checksum the chunks separately.
  const bool chunked = op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_to_all;
  auto mine =
      make_contribution(ctx.rank, op.id, step, read_input(op, step, plan.in, ctx), chunked ? plan.chunk_words : 0);
  std::vector<std::shared_ptr<const Contribution>> contributions;
  if (call.emulated) {
    contributions.push_back(std::move(mine));  // every member's input is taken to equal ours
  } else {
    const auto position =
        static_cast<size_t>(std::find(call.members.begin(), call.members.end(), ctx.rank) - call.members.begin());
    RendezvousResult r = ctx.world.exchange(RendezvousKey{op.group, call.members.front(), op.id, step}, call.members,
                                            position, std::move(mine));
    if (r.status == RendezvousStatus::timed_out) {
      if (r.first_report) {
        // Which members arrived and which did not is what tells a hung peer from a slow one.
        ctx.problems.add(label(op, step, group.name, call.members) + " did not complete within " +
                         format_time_ns(ctx.world.timeout_ns()) + ": " + describe_ranks(r.arrived) + " arrived; " +
                         describe_ranks(r.missing) + " never arrived");
      }
      ctx.world.abort();  // what waits on this op would time out too: stop the run
    }
    if (r.status != RendezvousStatus::complete) return;
    contributions = std::move(r.contributions);
  }
  const CollectiveOutcome outcome = run_collective(call, contributions);
  for (const std::string& p : outcome.problems) ctx.problems.add(p);
  write_output(op, plan.out, outcome.values, ctx);
}

}  // namespace fsdpsim
