// Compute ops and host copies on one host rank (see host_ops.h).
#include <algorithm>

#include "exec/host/host_ops.h"

namespace fsdpsim {
namespace {

int32_t region_count(const RankContext& ctx, BufferId buffer) {
  return static_cast<int32_t>(ctx.plan.buffers[buffer].regions.size());
}

// Reads every region of every buffer in `buffers` for `op`; the values, concatenated.
std::vector<uint32_t> read_buffers(const std::vector<BufferId>& buffers, const Op& op, RankContext& ctx) {
  std::vector<uint32_t> values;
  for (const BufferId b : buffers) ctx.memory.read(b, 0, region_count(ctx, b), op, values);
  return values;
}

}  // namespace

void HostStore::put(int32_t unit, int32_t micro_batch, Entry entry) {
  const std::lock_guard lock(mutex_);
  entries_[{unit, micro_batch}] = std::move(entry);
}

bool HostStore::get(int32_t unit, int32_t micro_batch, Entry* out) const {
  const std::lock_guard lock(mutex_);
  const auto it = entries_.find({unit, micro_batch});
  if (it == entries_.end()) return false;
  *out = it->second;
  return true;
}

uint64_t run_compute_op(const Op& op, int32_t step, RankContext& ctx) {
  // Inputs first, all of them, so that an op that updates a buffer in place (an accumulation) reads the old data.
  std::vector<uint32_t> values;
  for (const BufferId b : op.reads) {
    for (const int32_t r : op_regions(ctx.plan, op, b)) ctx.memory.read(b, r, 1, op, values);
  }
  const uint64_t checksum = words_checksum(values);
  for (const BufferId b : op.writes) ctx.memory.write_pattern(b, op_regions(ctx.plan, op, b), op, step);
  return checksum;
}

void run_host_copy(const Op& op, int32_t step, RankContext& ctx) {
  if (op.send_bytes > 0) {  // device → host: the bytes go to host memory, keyed by what the reload will ask for
    ctx.host.put(op.unit, op.micro_batch, HostStore::Entry{read_buffers(op.reads, op, ctx), step, op.id});
  }
  if (op.recv_bytes <= 0) return;
  HostStore::Entry entry;
  const bool found = ctx.host.get(op.unit, op.micro_batch, &entry) && entry.step == step;
  if (!found) {
    ctx.problems.add("op " + std::to_string(op.id.value()) + " '" + op.name + "' copied unit " +
                     std::to_string(op.unit) + " micro-batch " + std::to_string(op.micro_batch) +
                     " back from host memory before its device-to-host copy had written it: a missing dependency");
  }
  size_t cursor = 0;
  for (const BufferId b : op.writes) {  // host → device: the same bytes, now tagged as the reload buffer's
    const int32_t regions = region_count(ctx, b);
    std::vector<uint32_t> values(static_cast<size_t>(ctx.memory.region_words(b, 0, regions)), 0);
    for (size_t i = 0; i < values.size() && found && cursor < entry.values.size(); ++i) {
      values[i] = entry.values[cursor++];
    }
    ctx.memory.write(b, 0, regions, op, values);
  }
}

}  // namespace fsdpsim
