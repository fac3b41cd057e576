#pragma once
/// A schedule's ops as the engine reads them, flattened into a few arrays: the IR's Op structs are large and their
/// lists live scattered on the heap, and a 16-micro-batch step of Llama-3-405B walks 36,565 of them several times
/// per simulated step. Each op's stream, neighbours, list ranges and cost entry sit in one 64-byte record; its
/// dependencies, dependents and buffers in shared arrays; the few distinct costs' event-loop fields in a short list.
/// Built once per run by the engine (sim/engine.cpp, on the same walk that costs the ops), read by its event loop and
/// rate assignment, and compared op by op by MicroBatchTranslation.

#include <cstdint>
#include <span>
#include <vector>

#include "common/units.h"
#include "schedule/ir.h"
#include "sim/op_costs.h"

namespace fsdpsim {

/// A distinct cost as the event loop reads it (OpCost is 200 bytes, mostly what only reports read). A step's ops
/// share a few dozen of these: they stay in cache while the op records stream past.
struct FlatCost {
  CostModel model = CostModel::instant;
  bool holds_sms = false;  // a collective, or a kernel that holds SMs: its start and end change compute speed
  int32_t sms = 0;
  int32_t channels = 0;  // a collective's communicator channels (NCCL buffers); 0 for a copy-engine transfer
  int32_t flow_class = -1;
  TimeNs compute_ns = 0;
  TimeNs latency_ns = 0;
  double bytes = 0;
  double cap_bytes_per_s = 0;
  bool operator==(const FlatCost&) const = default;
};

/// One op: 64 bytes, one cache line.
struct alignas(64) FlatOp {
  StreamId stream{0};
  int32_t micro_batch = -1;
  OpId peer = OpId::none();                          // send/recv: the other end of the rendezvous; none otherwise
  GroupId group = GroupId::none();                   // a collective's process group; none otherwise
  OpId next_on_stream = OpId::none();                // the op after it on its stream; none for the last
  int32_t position = 0;                              // its place on its stream
  int32_t deps_begin = 0, deps_end = 0;              // into FlatOps::op_ids
  int32_t dependents_begin = 0, dependents_end = 0;  // into FlatOps::op_ids
  int32_t allocs_begin = 0, allocs_end = 0;          // into FlatOps::buffer_ids
  int32_t frees_begin = 0, frees_end = 0;            // into FlatOps::buffer_ids
  CostId cost{0};  // its entry in the OpCostTable and FlatOps::costs: equal entries, equal costs
  OpKind kind = OpKind::compute;

  [[nodiscard]] int32_t deps() const { return deps_end - deps_begin; }
};

struct FlatOps {
  IdVector<OpId, FlatOp> ops;                     // by op id
  IdVector<CostId, FlatCost> costs;               // by OpCostTable entry
  std::vector<OpId> op_ids;                       // every op's dependencies, then every op's dependents
  std::vector<BufferId> buffer_ids;               // every op's allocations, then its frees, op after op
  IdVector<StreamId, std::vector<OpId>> streams;  // per stream: its ops in order
  IdVector<BufferId, OpId> allocated_by;          // per buffer: the op that allocates it; none for a persistent one
  IdVector<BufferId, int32_t> alloc_index;        // per buffer: its place among that op's allocations

  [[nodiscard]] const FlatCost& cost_of(OpId op) const { return costs[ops[op].cost]; }
  /// The op at `i` of op_ids (a dependency or a dependent of an op: a position from its FlatOp's ranges).
  [[nodiscard]] OpId op_at(int32_t i) const { return op_ids[static_cast<size_t>(i)]; }
  /// The buffer at `i` of buffer_ids (an allocation or a free of an op: a position from its FlatOp's ranges).
  [[nodiscard]] BufferId buffer_at(int32_t i) const { return buffer_ids[static_cast<size_t>(i)]; }
};
static_assert(sizeof(FlatOp) == 64);

/// Flattens a schedule's ops one at a time, so that the engine walks the IR's ops once to cost and flatten them
/// (their lists lie scattered on the heap: each walk over a large schedule is mostly cache misses).
class FlatOpsBuilder {
 public:
  explicit FlatOpsBuilder(const Schedule& schedule);
  /// The next op: every op of the schedule in id order.
  void add(const Op& op);
  /// The flattened ops with their `costs` (indexed by op id), once every op is added.
  [[nodiscard]] FlatOps finish(const OpCostTable& costs) &&;

 private:
  FlatOps flat_;
};

/// Flattens `schedule`'s ops with their `costs` (indexed by op id).
FlatOps flatten_ops(const Schedule& schedule, const OpCostTable& costs);

}  // namespace fsdpsim
