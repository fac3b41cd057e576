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
  int32_t stream = 0;
  int32_t micro_batch = -1;
  int32_t peer = -1;                                 // send/recv: the other end of the rendezvous
  int32_t group = -1;                                // a collective's process group
  int32_t next_on_stream = -1;                       // the op after it on its stream; -1 for the last
  int32_t position = 0;                              // its place on its stream
  int32_t deps_begin = 0, deps_end = 0;              // into FlatOps::op_ids
  int32_t dependents_begin = 0, dependents_end = 0;  // into FlatOps::op_ids
  int32_t allocs_begin = 0, allocs_end = 0;          // into FlatOps::buffer_ids
  int32_t frees_begin = 0, frees_end = 0;            // into FlatOps::buffer_ids
  int32_t cost = 0;  // its entry in the OpCostTable and FlatOps::costs: equal entries, equal costs
  OpKind kind = OpKind::compute;

  [[nodiscard]] int32_t deps() const { return deps_end - deps_begin; }
};

struct FlatOps {
  std::vector<FlatOp> ops;                    // by op id
  std::vector<FlatCost> costs;                // by OpCostTable entry
  std::vector<int32_t> op_ids;                // every op's dependencies, then every op's dependents
  std::vector<BufferId> buffer_ids;           // every op's allocations, then its frees, op after op
  std::vector<std::vector<int32_t>> streams;  // per stream: its ops in order
  std::vector<int32_t> allocated_by;          // per buffer: the op that allocates it, -1 for none
  std::vector<int32_t> alloc_index;           // per buffer: its place among that op's allocations

  [[nodiscard]] const FlatCost& cost_of(int32_t op) const {
    return costs[static_cast<size_t>(ops[static_cast<size_t>(op)].cost)];
  }
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
