#pragma once
/// Assembles a Schedule for the builders: groups and streams by name (a name already added returns its id), buffers
/// and ops with dense typed ids (schedule/ids.h) assigned in order of addition, and each stream's tail (the last op
/// enqueued on it), which is what `stream.wait_stream(other)` waits for (docs/architecture.md §4.2).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// Appends groups, streams, buffers, units and ops to a Schedule under construction.
class ScheduleWriter {
 public:
  explicit ScheduleWriter(ScheduleInfo info);

  /// Adds a group (or returns the existing one of that name).
  GroupId group(const std::string& name, int32_t size, int32_t stride);
  /// Adds a stream (or returns the existing one of that name).
  StreamId stream(const std::string& name, int32_t priority = 0);
  /// Adds the stream playing `role`, named after it.
  StreamId stream(StreamRole role, int32_t priority = 0) { return stream(std::string(to_string(role)), priority); }
  /// Adds a buffer and returns its id.
  BufferId buffer(const std::string& name, BufferCategory category, int64_t size_bytes, bool persistent);
  /// Marks a buffer as registered with NCCL (nccl_ub).
  void mark_registered(BufferId buffer);
  /// Adds a unit and returns its index.
  int32_t unit(const std::string& name, int64_t params);
  /// Appends an op (its id is assigned here) and returns the id.
  OpId add(Op op);
  /// Makes room for `ops` ops in all (a hint: more may be added), so that adding them does not move the ops before.
  void reserve_ops(int64_t ops);
  /// Appends a collective issued on NCCL communicator `communicator` (a key the builder chooses, one per
  /// communicator): it also waits for the previous collective on that communicator, because ProcessGroupNCCL runs
  /// one communicator's collectives on one internal stream in the order the host issued them.
  OpId add_on_communicator(Op op, int32_t communicator);
  /// The last op enqueued on `stream`, or none.
  [[nodiscard]] OpId tail(StreamId stream) const;
  /// The tails of `streams` that exist, for a wait on all of them.
  [[nodiscard]] std::vector<OpId> tails(std::initializer_list<StreamId> streams) const;
  /// Access to an op already added (to add frees or deps after the fact).
  Op& op(OpId id);
  [[nodiscard]] const Buffer& buffer_at(BufferId id) const { return schedule_.buffers.at(id.index()); }
  [[nodiscard]] const Schedule& schedule() const { return schedule_; }
  ScheduleInfo& info() { return schedule_.info; }
  /// Hands over the finished schedule.
  Schedule finish();

 private:
  Schedule schedule_;
  IdVector<StreamId, OpId> tails_;
  std::map<int32_t, OpId> last_on_communicator_;  ///< per communicator: the last collective issued on it
};

/// What a collective op is, by name (make_collective's argument; write it with designated initialisers).
struct CollectiveSpec {
  OpKind kind = OpKind::all_gather;
  std::string name;
  Phase phase = Phase::fwd;
  StreamId stream{0};
  GroupId group;
  int32_t group_size = 1;
  /// The per-rank shard for all_gather/reduce_scatter (send for AG, recv for RS), the buffer for all_reduce/all_to_all.
  int64_t payload_bytes = 0;
  DType dtype = DType::bf16;
  ReduceOp reduce_op = ReduceOp::none;
};
/// A collective op with the per-rank byte counts of ir.h's conventions for its kind over a group of `group_size`.
Op make_collective(CollectiveSpec spec);
/// A compute op.
Op make_compute(std::string name, Phase phase, StreamId stream, std::vector<Gemm> gemms, int64_t bytes_touched,
                KernelClassBytes class_bytes = {});
/// A memory-bound op of another kind (copy, optimizer) that touches `bytes_touched` bytes.
Op make_memory_op(OpKind kind, std::string name, Phase phase, StreamId stream, int64_t bytes_touched);
/// A sync op: `stream` waits for `deps`, then `frees` are released.
Op make_sync(std::string name, Phase phase, StreamId stream, std::vector<OpId> deps, std::vector<BufferId> frees);

}  // namespace fsdpsim
