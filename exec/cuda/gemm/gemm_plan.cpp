#include "exec/cuda/gemm/gemm_plan.h"

#include <algorithm>
#include <limits>
#include <string>

#include "common/error.h"

namespace fsdpsim {
namespace {

int64_t align_up(int64_t bytes) {
  return (bytes + kOperandAlignBytes - 1) / kOperandAlignBytes * kOperandAlignBytes;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The largest buffer of `category` among `ids` (none when there is none): the op's weights or gradient bucket.
BufferId largest_of(const Schedule& s, const std::vector<BufferId>& ids, BufferCategory category) {
  BufferId best;
  for (const BufferId id : ids) {
    if (!s.buffers.contains(id)) continue;
    const Buffer& b = s.buffers[id];
    if (b.category != category || b.size_bytes <= 0) continue;
    if (!best.valid() || b.size_bytes > s.buffers[best].size_bytes) best = id;
  }
  return best;
}

// A cursor walking through one IR buffer, GEMM after GEMM.
struct BufferCursor {
  BufferId buffer;
  int64_t size_bytes = 0;
  int64_t offset_bytes = 0;

  // Places `batch` entries of `entry_bytes`: consecutively when they fit in the rest of the buffer (wrapping to its
  // start when only the whole buffer holds them), else one entry read by all (stride 0, for inputs only: outputs
  // written by every entry at once would race). Returns false when the operand cannot be placed.
  bool place(int64_t entry_bytes, int64_t batch, int64_t elem_bytes, bool allow_shared, OperandPlace& out) {
    if (!buffer.valid() || entry_bytes > size_bytes) return false;
    const bool all_fit = entry_bytes * batch <= size_bytes;
    if (!all_fit && !allow_shared) return false;
    const int64_t need = all_fit ? entry_bytes * batch : entry_bytes;
    int64_t at = align_up(offset_bytes);
    if (at + need > size_bytes) at = 0;
    out = OperandPlace{buffer, at, all_fit ? entry_bytes / elem_bytes : 0};
    offset_bytes = at + need;
    return true;
  }
};

// cuBLAS takes m, n, k, leading dimensions and the batch count as 32-bit ints; operand sizes stay far from int64's
// limit (2^50 bytes is a petabyte) so the byte arithmetic below cannot overflow.
void check_int_range(const Op& op, const Gemm& g, int64_t elem_bytes) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  constexpr double kMaxOperandBytes = 1125899906842624.0;  // 2^50
  const double eb = static_cast<double>(elem_bytes);
  const auto bytes = [&](int64_t x, int64_t y) { return static_cast<double>(x) * static_cast<double>(y) * eb; };
  const bool dims_ok = g.m <= kMax && g.n <= kMax && g.k <= kMax && g.batch <= kMax;
  const bool sizes_ok =
      bytes(g.m, g.k) <= kMaxOperandBytes && bytes(g.n, g.k) <= kMaxOperandBytes && bytes(g.m, g.n) <= kMaxOperandBytes;
  if (dims_ok && sizes_ok) return;
  throw ScheduleError("the CUDA executor cannot run op '" + op.name + "'",
                      {"GEMM '" + g.name + "' (m=" + std::to_string(g.m) + ", n=" + std::to_string(g.n) +
                       ", k=" + std::to_string(g.k) + ", batch=" + std::to_string(g.batch) +
                       ") has a dimension beyond cuBLAS's 32-bit int or an operand beyond 2^50 bytes: split it into "
                       "several GEMMs in the schedule"});
}

// Entries of one launch: as many as every scratch operand's region cap allows (at least one).
int64_t chunk_of(const Gemm& g, int64_t elem_bytes, bool w_scratch, bool c_scratch) {
  int64_t chunk = g.batch;
  const auto limit = [&](int64_t entry_bytes) {
    chunk = std::min(chunk, std::max<int64_t>(1, kScratchRegionCapBytes / std::max<int64_t>(1, entry_bytes)));
  };
  limit(g.m * g.k * elem_bytes);
  if (w_scratch) limit(g.n * g.k * elem_bytes);
  if (c_scratch) limit(g.m * g.n * elem_bytes);
  return chunk;
}

// The launches of one GEMM: W and C from the cursors when they fit there, A always from scratch.
void plan_gemm(const Op& op, int32_t index, int64_t elem_bytes, BufferCursor& weights, BufferCursor& grads,
               std::vector<GemmLaunch>& out, StreamScratch& scratch) {
  const Gemm& g = op.gemms[static_cast<size_t>(index)];
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0) return;
  check_int_range(op, g, elem_bytes);
  const bool wgrad = ends_with(g.name, ".wgrad");
  const int64_t a_entry = g.m * g.k * elem_bytes, w_entry = g.n * g.k * elem_bytes, c_entry = g.m * g.n * elem_bytes;
  OperandPlace w, c;
  const bool w_in_buffer = !g.attention && !wgrad && weights.place(w_entry, g.batch, elem_bytes, true, w);
  const bool c_in_buffer = wgrad && grads.place(c_entry, g.batch, elem_bytes, false, c);
  const int64_t chunk = chunk_of(g, elem_bytes, !w_in_buffer, !c_in_buffer);
  scratch.a_bytes = std::max(scratch.a_bytes, align_up(chunk * a_entry));
  if (!w_in_buffer) scratch.w_bytes = std::max(scratch.w_bytes, align_up(chunk * w_entry));
  if (!c_in_buffer) scratch.c_bytes = std::max(scratch.c_bytes, align_up(chunk * c_entry));
  for (int64_t first = 0; first < g.batch; first += chunk) {
    GemmLaunch l{index, g.m, g.n, g.k, std::min(chunk, g.batch - first), {}, {}, {}};
    l.a = OperandPlace{BufferId::none(), 0, g.m * g.k};
    l.w = w_in_buffer ? OperandPlace{w.buffer, w.offset_bytes + first * w.batch_stride * elem_bytes, w.batch_stride}
                      : OperandPlace{BufferId::none(), 0, g.n * g.k};
    l.c = c_in_buffer ? OperandPlace{c.buffer, c.offset_bytes + first * c.batch_stride * elem_bytes, c.batch_stride}
                      : OperandPlace{BufferId::none(), 0, g.m * g.n};
    out.push_back(l);
  }
}

// Memory-bound work and host copies go through one region per stream, capped like the GEMM regions.
void plan_memory(const Op& op, StreamScratch& scratch) {
  if (is_collective(op.kind) || op.kind == OpKind::sync) return;
  const int64_t host = op.kind == OpKind::copy ? std::max(op.send_bytes, op.recv_bytes) : 0;
  const int64_t device = std::max(op.bytes_touched, host);
  scratch.memory_bytes = std::max(scratch.memory_bytes, align_up(std::min(device, kScratchRegionCapBytes)));
  scratch.pinned_host_bytes = std::max(scratch.pinned_host_bytes, align_up(std::min(host, kScratchRegionCapBytes)));
}

}  // namespace

ComputePlan plan_compute(const Schedule& schedule, int64_t elem_bytes) {
  FSDPSIM_CHECK(elem_bytes > 0, "GEMM element size must be positive");
  ComputePlan plan;
  plan.launches.resize(schedule.ops.size());
  plan.scratch.resize(schedule.streams.size());
  for (size_t index = 0; index < schedule.ops.size(); ++index) {
    const Op& op = schedule.ops[index];
    FSDPSIM_CHECK(op.id.index() == index, "op ids must equal their index (run validation)");
    FSDPSIM_CHECK(schedule.streams.contains(op.stream),
                  "op '" + op.name + "' names a stream that does not exist (run validation)");
    StreamScratch& scratch = plan.scratch[op.stream.index()];
    plan_memory(op, scratch);
    if (op.kind != OpKind::compute) continue;
    const auto cursor = [&](const std::vector<BufferId>& ids, BufferCategory category) {
      const BufferId b = largest_of(schedule, ids, category);
      return BufferCursor{b, b.valid() ? schedule.buffers[b].size_bytes : 0, 0};
    };
    BufferCursor weights = cursor(op.reads, BufferCategory::gathered_param);
    BufferCursor grads = cursor(op.writes, BufferCategory::unsharded_grad);
    std::vector<GemmLaunch>& out = plan.launches[index];
    for (size_t i = 0; i < op.gemms.size(); ++i) {
      plan_gemm(op, static_cast<int32_t>(i), elem_bytes, weights, grads, out, scratch);
    }
  }
  return plan;
}

}  // namespace fsdpsim
