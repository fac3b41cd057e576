#pragma once
/// Which micro-batches of a schedule repeat the one before them exactly, op for op, so that the engine may replay a
/// stretch of the run it has already simulated instead of simulating it again (sim/micro_batch_replay.h, "Replaying
/// repeated micro-batches"). A 16-micro-batch step of Llama-3-405B is sixteen copies of one micro-batch's 2,285 ops;
/// once the engine's whole state repeats from one micro-batch to the next, every later copy runs the same way, P
/// nanoseconds later.
///
/// Micro-batch m + 1 repeats micro-batch m when it has as many ops, at a uniform id offset (the same for every
/// pair), and each op o of m and o' = o + offset of m + 1 are alike for the engine: same kind, stream and cost,
/// dependencies, dependents, rendezvous peer and next op on the stream moved by the offset (or the same step-level
/// op), and buffers allocated and freed moved alike (the buffer the moved op allocates; the same buffer where a
/// step-level op allocated it) with equal sizes, categories and stages.

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "schedule/ir.h"
#include "sim/flat_ops.h"
#include "sim/id_range.h"
#include "sim/op_costs.h"

namespace fsdpsim {

class MicroBatchTranslation {
 public:
  MicroBatchTranslation() = default;
  /// `flat` and `costs` are the engine's (they must outlive this).
  MicroBatchTranslation(const Schedule& schedule, const FlatOps& flat, const OpCostTable& costs);

  /// The id offset between an op and the same op one micro-batch later; 0 when no micro-batch repeats.
  [[nodiscard]] int32_t op_offset() const { return op_offset_; }
  /// Micro-batch m + 1 repeats micro-batch m (false outside the schedule's micro-batches).
  [[nodiscard]] bool repeats(int32_t micro_batch) const {
    return micro_batch >= 0 && static_cast<size_t>(micro_batch) < repeats_.size() &&
           repeats_[static_cast<size_t>(micro_batch)] != 0;
  }
  /// Some micro-batch is repeated by the next.
  [[nodiscard]] bool any_repeats() const {
    return std::any_of(repeats_.begin(), repeats_.end(), [](char r) { return r != 0; });
  }
  /// Micro-batches m .. m + count − 1 are each repeated by the next.
  [[nodiscard]] bool repeats_all(int32_t first, int32_t count) const;
  /// The micro-batch of an op; -1 for a step-level op.
  [[nodiscard]] int32_t micro_batch_of(OpId op) const { return flat_->ops[op].micro_batch; }
  /// The lowest op id of a micro-batch (none when it has none).
  [[nodiscard]] OpId first_op(int32_t micro_batch) const;
  /// The op `times` micro-batches after `op` (a step-level op stays itself). Valid where repeats() says so.
  [[nodiscard]] OpId op_after(OpId op, int32_t times) const {
    return micro_batch_of(op) < 0 ? op : id_after(op, times * op_offset_);
  }
  /// The buffer `times` micro-batches after `buffer`: the one the moved allocating op allocates in its place (a
  /// buffer no micro-batch op allocates stays itself). BufferId::none() where the moved op does not exist.
  [[nodiscard]] BufferId buffer_after(BufferId buffer, int32_t times) const;
  /// The op that allocates `buffer` (none: a persistent buffer).
  [[nodiscard]] OpId allocating_op(BufferId buffer) const { return flat_->allocated_by[buffer]; }

 private:
  bool alike(OpId op, OpId moved) const;

  const Schedule* schedule_ = nullptr;
  const FlatOps* flat_ = nullptr;
  const OpCostTable* costs_ = nullptr;
  int32_t op_offset_ = 0;
  std::vector<OpId> first_op_;  // per micro-batch
  std::vector<char> repeats_;   // per micro-batch
};

}  // namespace fsdpsim
