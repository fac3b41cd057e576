#include "builders/schedule_writer.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/limits.h"

namespace fsdpsim {

ScheduleWriter::ScheduleWriter(ScheduleInfo info) {
  schedule_.info = std::move(info);
}

GroupId ScheduleWriter::group(const std::string& name, int32_t size, int32_t stride) {
  const GroupId existing = schedule_.group_index(name);
  if (existing.valid()) {
    FSDPSIM_CHECK(schedule_.groups[existing].size == size, "group '" + name + "' redefined");
    return existing;
  }
  const GroupId id = schedule_.groups.next_id();
  schedule_.groups.push_back(Group{name, size, stride});
  return id;
}

StreamId ScheduleWriter::stream(const std::string& name, int32_t priority) {
  const StreamId existing = schedule_.stream_index(name);
  if (existing.valid()) return existing;
  const StreamId id = schedule_.streams.next_id();
  schedule_.streams.push_back(Stream{name, priority});
  tails_.push_back(OpId::none());
  return id;
}

BufferId ScheduleWriter::buffer(const std::string& name, BufferCategory category, int64_t size_bytes, bool persistent) {
  FSDPSIM_CHECK(size_bytes >= 0, "negative buffer size for " + name);
  const BufferId id = schedule_.buffers.next_id();
  schedule_.buffers.push_back(Buffer{id, name, category, size_bytes, persistent});
  return id;
}

void ScheduleWriter::mark_registered(BufferId buffer) {
  schedule_.buffers.at(buffer.index()).nccl_registered = true;
}

int32_t ScheduleWriter::unit(const std::string& name, int64_t params) {
  schedule_.units.push_back(UnitInfo{name, params});
  return static_cast<int32_t>(schedule_.units.size() - 1);
}

OpId ScheduleWriter::add_on_communicator(Op op, int32_t communicator) {
  const auto previous = last_on_communicator_.find(communicator);
  if (previous != last_on_communicator_.end()) op.deps.push_back(previous->second);
  const OpId id = add(std::move(op));
  last_on_communicator_[communicator] = id;
  return id;
}

void ScheduleWriter::reserve_ops(int64_t ops) {
  // Past the limit add() refuses the step anyway; a hint never reserves more than that.
  schedule_.ops.reserve(static_cast<size_t>(std::clamp<int64_t>(ops, 0, limits::kMaxScheduleOps)));
}

OpId ScheduleWriter::add(Op op) {
  const OpId id = schedule_.ops.next_id();
  // The backstop of check_job_limits' up-front estimate: stop before a step outgrows memory (common/limits.h).
  if (id.value() >= limits::kMaxScheduleOps) {
    throw ConfigError("the step of " + schedule_.info.model + " with " + std::to_string(schedule_.info.micro_batches) +
                      " micro-batches has more than " + std::to_string(limits::kMaxScheduleOps) +
                      " ops, which is beyond what fsdpsim models (raise micro_batch_size or lower global_batch_size)");
  }
  FSDPSIM_CHECK(op.stream.valid() && op.stream.index() < tails_.size(), "op on unknown stream: " + op.name);
  op.id = id;
  tails_[op.stream] = id;
  schedule_.ops.push_back(std::move(op));
  return id;
}

OpId ScheduleWriter::tail(StreamId stream) const {
  return tails_.at(stream.index());
}

std::vector<OpId> ScheduleWriter::tails(std::initializer_list<StreamId> streams) const {
  std::vector<OpId> out;
  for (const StreamId s : streams) {
    if (s.valid() && tail(s).valid()) out.push_back(tail(s));
  }
  return out;
}

Op& ScheduleWriter::op(OpId id) {
  return schedule_.ops.at(id.index());
}

Schedule ScheduleWriter::finish() {
  return std::move(schedule_);
}

Op make_collective(CollectiveSpec spec) {
  Op op;
  op.name = std::move(spec.name);
  op.kind = spec.kind;
  op.phase = spec.phase;
  op.stream = spec.stream;
  op.group = spec.group;
  op.dtype = spec.dtype;
  op.reduce_op = spec.reduce_op;
  const int64_t payload_bytes = spec.payload_bytes;
  const int64_t group_size = spec.group_size;
  switch (spec.kind) {
    case OpKind::all_gather:
      op.send_bytes = payload_bytes;
      op.recv_bytes = payload_bytes * group_size;
      break;
    case OpKind::reduce_scatter:
      op.send_bytes = payload_bytes * group_size;
      op.recv_bytes = payload_bytes;
      break;
    default:
      op.send_bytes = payload_bytes;
      op.recv_bytes = payload_bytes;
      break;
  }
  return op;
}

Op make_memory_op(OpKind kind, std::string name, Phase phase, StreamId stream, int64_t bytes_touched) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.phase = phase;
  op.stream = stream;
  op.bytes_touched = bytes_touched;
  return op;
}

Op make_compute(std::string name, Phase phase, StreamId stream, std::vector<Gemm> gemms, int64_t bytes_touched,
                KernelClassBytes class_bytes) {
  Op op = make_memory_op(OpKind::compute, std::move(name), phase, stream, bytes_touched);
  op.gemms = std::move(gemms);
  op.class_bytes = class_bytes;
  return op;
}

Op make_sync(std::string name, Phase phase, StreamId stream, std::vector<OpId> deps, std::vector<BufferId> frees) {
  Op op = make_memory_op(OpKind::sync, std::move(name), phase, stream, 0);
  op.deps = std::move(deps);
  op.frees = std::move(frees);
  return op;
}

}  // namespace fsdpsim
