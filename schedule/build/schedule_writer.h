#pragma once
/// Assembles a Schedule op by op for the builders: names → indices, dense ids, and each stream's tail (the last op
/// enqueued on it), which is what `stream.wait_stream(other)` waits for.

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/ir/ir.h"

namespace fsdpsim {

/// Appends groups, streams, buffers, units and ops to a Schedule under construction.
class ScheduleWriter {
 public:
  explicit ScheduleWriter(ScheduleInfo info);

  /// Adds a group (or returns the existing one of that name).
  int32_t group(const std::string& name, int32_t size, int32_t stride);
  /// Adds a stream (or returns the existing one of that name).
  int32_t stream(const std::string& name, int32_t priority = 0);
  /// Adds a buffer and returns its id.
  int32_t buffer(const std::string& name, BufferCategory category, int64_t size_bytes, bool persistent);
  /// Marks a buffer as registered with NCCL (nccl_ub).
  void mark_registered(int32_t buffer);
  /// Adds a unit and returns its index.
  int32_t unit(const std::string& name, int64_t params);
  /// Appends an op (its id is assigned here) and returns the id.
  int32_t add(Op op);
  /// The last op enqueued on `stream`, or -1.
  [[nodiscard]] int32_t tail(int32_t stream) const;
  /// The ops of `stream_a`'s and `stream_b`'s tails that exist, for a wait on both.
  [[nodiscard]] std::vector<int32_t> tails(std::initializer_list<int32_t> streams) const;
  /// Access to an op already added (to add frees or deps after the fact).
  Op& op(int32_t id);
  [[nodiscard]] const Buffer& buffer_at(int32_t id) const { return schedule_.buffers.at(static_cast<size_t>(id)); }
  [[nodiscard]] const Schedule& schedule() const { return schedule_; }
  ScheduleInfo& info() { return schedule_.info; }
  /// Hands over the finished schedule.
  Schedule finish();

 private:
  Schedule schedule_;
  std::vector<int32_t> tails_;
};

/// What a collective op is, by name (make_collective's argument; write it with designated initialisers).
struct CollectiveSpec {
  OpKind kind = OpKind::all_gather;
  std::string name;
  Phase phase = Phase::fwd;
  int32_t stream = 0;
  int32_t group = -1;
  int32_t group_size = 1;
  /// The per-rank shard for all_gather/reduce_scatter (send for AG, recv for RS), the buffer for all_reduce/all_to_all.
  int64_t payload_bytes = 0;
  DType dtype = DType::bf16;
  ReduceOp reduce_op = ReduceOp::none;
};
/// A collective op with the per-rank byte counts of ir.h's conventions for its kind over a group of `group_size`.
Op make_collective(CollectiveSpec spec);
/// A compute op.
Op make_compute(std::string name, Phase phase, int32_t stream, std::vector<Gemm> gemms, int64_t bytes_touched);
/// A memory-bound op of another kind (copy, optimizer) that touches `bytes_touched` bytes.
Op make_memory_op(OpKind kind, std::string name, Phase phase, int32_t stream, int64_t bytes_touched);
/// A sync op: `stream` waits for `deps`, then `frees` are released.
Op make_sync(std::string name, Phase phase, int32_t stream, std::vector<int32_t> deps, std::vector<int32_t> frees);

}  // namespace fsdpsim
