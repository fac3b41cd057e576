// Pipeline sends and receives on one host rank (see host_ops.h). A host rank runs one GPU of every pipeline stage,
// so a send and its receive are two stream workers of the same rank; they meet at the world's rendezvous, keyed by
// the pair and the step, exactly as the two ends of an ncclSend / ncclRecv meet.
#include <algorithm>

#include "exec/fault_report.h"
#include "exec/host/host_collectives.h"
#include "exec/host/host_ops.h"
#include "exec/stage_runs.h"

namespace fsdpsim {
namespace {

// The message of `send` in `step` on pipeline `rank`: what the send posts and what its receive must get.
std::vector<uint32_t> message(const Op& send, int32_t step, int32_t rank, int64_t words) {
  const uint64_t seed = pattern_seed(rank, send.id, step, BufferId::none(), 0);
  std::vector<uint32_t> values(static_cast<size_t>(words));
  for (int64_t i = 0; i < words; ++i) values[static_cast<size_t>(i)] = pattern_value(seed, i);
  return values;
}

std::string label(const Op& op, int32_t step) {
  return "op " + std::to_string(op.id.value()) + " '" + op.name + "' (" + std::string(to_string(op.kind)) + ", step " +
         std::to_string(step) + ")";
}

}  // namespace

void run_p2p_op(const Op& op, int32_t step, RankContext& ctx) {
  const bool sending = op.kind == OpKind::send;
  const Op& send = sending ? op : ctx.schedule.ops[op.peer];
  const Op& recv = sending ? ctx.schedule.ops[op.peer] : op;
  // The pair's two GPUs in this pipeline (whether the pp group's neighbours or the embedding group's first and last
  // stage), in the pp-outermost rank order of exec/stage_runs.h.
  const auto gpu = [&](const Op& end) { return rank_in_stage(ctx.schedule, ctx.rank, ctx.schedule.stage_of(end)); };
  const std::vector<int32_t> members{gpu(send), gpu(recv)};
  const int64_t words = scaled_words(send.send_bytes, ctx.options.bytes_scale);
  auto mine = make_contribution(ctx.rank, op.id, step,
                                sending ? message(send, step, ctx.rank, words) : std::vector<uint32_t>{});
  RendezvousResult r = ctx.world.exchange(RendezvousKey{op.group, members.front(), send.id, step}, members,
                                          sending ? 0 : 1, std::move(mine));
  if (r.status == RendezvousStatus::timed_out) {
    if (r.first_report) {
      ctx.problems.add(label(send, step) + " and its receive " + label(recv, step) + " did not meet within " +
                       format_time_ns(ctx.world.timeout_ns()) + ": " + describe_ranks(r.arrived) + " arrived; " +
                       describe_ranks(r.missing) + " never arrived");
    }
    ctx.world.abort();
    return;
  }
  if (r.status != RendezvousStatus::complete || sending) return;
  // The receive: exactly the send's message of this step, then into the received tensor.
  const Contribution& got = *r.contributions.front();
  if (got.op != send.id || got.step != step || got.values != message(send, step, ctx.rank, words)) {
    ctx.problems.add(label(recv, step) + " received data that is not " + label(send, step) + "'s message");
  }
  for (const BufferId b : recv.writes) {
    const auto regions = static_cast<int32_t>(ctx.plan.buffers[b].regions.size());
    std::vector<uint32_t> values(static_cast<size_t>(ctx.memory.region_words(b, 0, regions)), 0);
    std::copy_n(got.values.begin(), std::min(values.size(), got.values.size()), values.begin());
    ctx.memory.write(b, 0, regions, recv, values);
  }
}

}  // namespace fsdpsim
