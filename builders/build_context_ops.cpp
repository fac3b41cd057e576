// BuildContext's op-construction helpers: a unit's compute op, sync ops, and the buffers an op allocates.
#include <utility>

#include "builders/builder_common.h"

namespace fsdpsim {

ComputeWork unit_work(const UnitCost& unit, Phase phase) {
  if (phase == Phase::bwd) return {unit.bwd_gemms, unit.bwd_bytes_touched, unit.bwd_class_bytes, unit.bwd_kernels};
  return {unit.fwd_gemms, unit.fwd_bytes_touched, unit.fwd_class_bytes, unit.fwd_kernels};
}

Op BuildContext::unit_compute(std::string_view what, int32_t unit, Phase phase, int32_t micro_batch, ComputeWork work,
                              std::vector<BufferId> reads, std::vector<OpId> deps) {
  Op op = make_compute(op_name(what, unit_cost(unit).name, micro_batch), phase, compute, std::move(work.gemms),
                       work.bytes_touched, work.class_bytes);
  op.kernels = work.kernels;
  op.unit = unit;
  op.micro_batch = micro_batch;
  op.reads = std::move(reads);
  op.deps = std::move(deps);
  return op;
}

Op BuildContext::unit_pass(std::string_view what, int32_t unit, Phase phase, int32_t micro_batch, ComputeWork work,
                           std::vector<BufferId> reads, std::vector<OpId> deps) {
  work.gemms =
      emit_fused_expert_gemms(*this, unit, phase, micro_batch, std::move(work.gemms), reads, deps, work.kernels);
  return unit_compute(what, unit, phase, micro_batch, std::move(work), std::move(reads), std::move(deps));
}

OpId BuildContext::add_sync(std::string name, Phase phase, StreamId stream, std::vector<OpId> deps,
                            std::vector<BufferId> frees, int32_t micro_batch) {
  Op sync = make_sync(std::move(name), phase, stream, std::move(deps), std::move(frees));
  sync.micro_batch = micro_batch;
  return w.add(std::move(sync));
}

BufferId BuildContext::add_scratch(Op& op, const std::string& name, BufferCategory category, int64_t size_bytes) {
  const BufferId b = w.buffer(name, category, size_bytes, false);
  op.allocs.push_back(b);
  op.frees.push_back(b);
  return b;
}

BufferId BuildContext::add_output(Op& op, const std::string& name, BufferCategory category, int64_t size_bytes) {
  const BufferId b = w.buffer(name, category, size_bytes, false);
  op.allocs.push_back(b);
  op.writes.push_back(b);
  return b;
}

}  // namespace fsdpsim
