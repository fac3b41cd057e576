#include "schedule/build/schedule_writer.h"

#include <utility>

#include "common/error.h"
#include "common/limits.h"

namespace fsdpsim {

ScheduleWriter::ScheduleWriter(ScheduleInfo info) {
  schedule_.info = std::move(info);
}

int32_t ScheduleWriter::group(const std::string& name, int32_t size, int32_t stride) {
  const int32_t existing = schedule_.group_index(name);
  if (existing >= 0) {
    FSDPSIM_CHECK(schedule_.groups[static_cast<size_t>(existing)].size == size, "group '" + name + "' redefined");
    return existing;
  }
  schedule_.groups.push_back(Group{name, size, stride});
  return static_cast<int32_t>(schedule_.groups.size() - 1);
}

int32_t ScheduleWriter::stream(const std::string& name, int32_t priority) {
  const int32_t existing = schedule_.stream_index(name);
  if (existing >= 0) return existing;
  schedule_.streams.push_back(Stream{name, priority});
  tails_.push_back(-1);
  return static_cast<int32_t>(schedule_.streams.size() - 1);
}

int32_t ScheduleWriter::buffer(const std::string& name, BufferCategory category, int64_t size_bytes, bool persistent) {
  FSDPSIM_CHECK(size_bytes >= 0, "negative buffer size for " + name);
  const auto id = static_cast<int32_t>(schedule_.buffers.size());
  schedule_.buffers.push_back(Buffer{id, name, category, size_bytes, persistent});
  return id;
}

void ScheduleWriter::mark_registered(int32_t buffer) {
  schedule_.buffers.at(static_cast<size_t>(buffer)).nccl_registered = true;
}

int32_t ScheduleWriter::unit(const std::string& name, int64_t params) {
  schedule_.units.push_back(UnitInfo{name, params});
  return static_cast<int32_t>(schedule_.units.size() - 1);
}

int32_t ScheduleWriter::add(Op op) {
  const auto id = static_cast<int32_t>(schedule_.ops.size());
  // The backstop of check_job_limits' up-front estimate: stop before a step outgrows memory (common/limits.h).
  if (id >= limits::kMaxScheduleOps) {
    throw ConfigError("the step of " + schedule_.info.model + " with " + std::to_string(schedule_.info.micro_batches) +
                      " micro-batches has more than " + std::to_string(limits::kMaxScheduleOps) +
                      " ops, which is beyond what fsdpsim models (raise micro_batch_size or lower global_batch_size)");
  }
  FSDPSIM_CHECK(op.stream >= 0 && op.stream < static_cast<int32_t>(tails_.size()), "op on unknown stream: " + op.name);
  op.id = id;
  tails_[static_cast<size_t>(op.stream)] = id;
  schedule_.ops.push_back(std::move(op));
  return id;
}

int32_t ScheduleWriter::tail(int32_t stream) const {
  return tails_.at(static_cast<size_t>(stream));
}

std::vector<int32_t> ScheduleWriter::tails(std::initializer_list<int32_t> streams) const {
  std::vector<int32_t> out;
  for (const int32_t s : streams) {
    if (s >= 0 && tail(s) >= 0) out.push_back(tail(s));
  }
  return out;
}

Op& ScheduleWriter::op(int32_t id) {
  return schedule_.ops.at(static_cast<size_t>(id));
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

Op make_compute(std::string name, Phase phase, int32_t stream, std::vector<Gemm> gemms, int64_t bytes_touched) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::compute;
  op.phase = phase;
  op.stream = stream;
  op.gemms = std::move(gemms);
  op.bytes_touched = bytes_touched;
  return op;
}

Op make_memory_op(OpKind kind, std::string name, Phase phase, int32_t stream, int64_t bytes_touched) {
  Op op;
  op.name = std::move(name);
  op.kind = kind;
  op.phase = phase;
  op.stream = stream;
  op.bytes_touched = bytes_touched;
  return op;
}

Op make_sync(std::string name, Phase phase, int32_t stream, std::vector<int32_t> deps, std::vector<int32_t> frees) {
  Op op;
  op.name = std::move(name);
  op.kind = OpKind::sync;
  op.phase = phase;
  op.stream = stream;
  op.deps = std::move(deps);
  op.frees = std::move(frees);
  return op;
}

}  // namespace fsdpsim
