// The rules on byte counts and totals: the step within fsdpsim's limits, and collectives' sizes that match their group.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include "common/limits.h"
#include "schedule/validate_rules.h"

namespace fsdpsim::validation {

// The step's totals within common/limits.h, so that the simulator's and the reports' 64-bit sums cannot
// overflow (a file can hold any counts; a built schedule is within them by check_job_limits()).
void check_totals(const Schedule& s, Problems& problems) {
  if (static_cast<int64_t>(s.ops.size()) > limits::kMaxScheduleOps ||
      static_cast<int64_t>(s.streams.size()) > limits::kMaxStreams) {
    problems.report("limits", std::to_string(s.ops.size()) + " ops on " + std::to_string(s.streams.size()) +
                                  " streams is beyond what fsdpsim models (at most " +
                                  std::to_string(limits::kMaxScheduleOps) + " ops and " +
                                  std::to_string(limits::kMaxStreams) + " streams)");
  }
  long double buffer_bytes = 0, op_bytes = 0, flops = 0, outputs = 0;
  // FLOPs are one GPU's work: a pipeline's schedule holds one rank of every stage, each its own GPU.
  std::map<int32_t, long double> stage_flops, stage_outputs;
  for (const Buffer& b : s.buffers) buffer_bytes += static_cast<long double>(b.size_bytes);
  for (const Op& op : s.ops) {
    op_bytes += static_cast<long double>(op.send_bytes) + static_cast<long double>(op.recv_bytes) +
                static_cast<long double>(op.bytes_touched);
    const int32_t stage = op.stream.valid() && op.stream.index() < s.streams.size() ? s.stage_of(op) : 0;
    for (const Gemm& g : op.gemms) {
      const long double out = static_cast<long double>(g.m) * static_cast<long double>(g.n) *
                              static_cast<long double>(g.batch);  // the simulator tiles these (even when k = 0)
      outputs += out;
      flops += 2.0L * out * static_cast<long double>(g.k);
      stage_outputs[stage] += out;
      stage_flops[stage] += 2.0L * out * static_cast<long double>(g.k);
    }
  }
  const auto over = [&](const char* what, long double total, int64_t limit) {
    if (total <= static_cast<long double>(limit)) return;
    std::ostringstream text;
    text << what << " add up to " << static_cast<double>(total) << ", beyond what fsdpsim models (at most " << limit
         << " per step)";
    problems.report("limits", text.str());
  };
  over("the buffers' sizes", buffer_bytes, limits::kMaxStepBytes);
  over("the ops' byte counts", op_bytes, limits::kMaxStepBytes);
  const auto busiest = [](const std::map<int32_t, long double>& per_stage) {
    long double most = 0;
    for (const auto& [stage, total] : per_stage) most = std::max(most, total);
    return most;
  };
  over("the GEMMs' FLOPs of one stage", busiest(stage_flops), limits::kMaxStepFlopsPerGpu);
  over("the GEMMs' output elements of one stage", busiest(stage_outputs), limits::kMaxStepFlopsPerGpu);
  over("the GEMMs' FLOPs", flops, limits::kMaxScheduleFlops);
  over("the GEMMs' output elements", outputs, limits::kMaxScheduleFlops);
}

void check_collective_bytes(const Schedule& s, Problems& problems) {
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind)) continue;
    const int64_t n = s.groups[op.group].size;
    bool ok = true;
    // recv == send × n without the product, which overflows for a file's absurd byte counts.
    if (op.kind == OpKind::all_gather) ok = op.recv_bytes % n == 0 && op.recv_bytes / n == op.send_bytes;
    if (op.kind == OpKind::reduce_scatter) ok = op.send_bytes % n == 0 && op.send_bytes / n == op.recv_bytes;
    if (op.kind == OpKind::all_reduce) ok = op.send_bytes == op.recv_bytes;
    if (!ok) {
      problems.report("collective-bytes", problems.describe_op(op.id) + ": " + std::string(to_string(op.kind)) +
                                              " over a group of " + std::to_string(n) + " sends " +
                                              std::to_string(op.send_bytes) + " B and receives " +
                                              std::to_string(op.recv_bytes) + " B per rank, which do not match");
    }
  }
}

}  // namespace fsdpsim::validation
