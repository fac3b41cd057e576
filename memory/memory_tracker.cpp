#include "memory/memory_tracker.h"

#include <algorithm>

#include "common/error.h"

namespace fsdpsim {

MemoryTracker::MemoryTracker(const Schedule& schedule, AllocatorConfig config, bool record_timeline)
    : schedule_(schedule),
      allocator_(config),
      blocks_(schedule.buffers.size(), -1),
      unbacked_(schedule.buffers.size(), 0),
      record_timeline_(record_timeline) {}

int64_t MemoryTracker::allocated_bytes() const {
  return allocator_.stats().allocated_bytes + unbacked_total_;
}

int64_t MemoryTracker::reserved_bytes() const {
  // After an allocation failure the bytes counted outside the allocator would first reuse its cached free blocks:
  // what the job needs is then at least what it allocates.
  return std::max(allocator_.stats().reserved_bytes, allocated_bytes());
}

void MemoryTracker::allocate(BufferId buffer, OpId op, StreamId stream, TimeNs time_ns, int32_t step) {
  const Buffer& b = schedule_.buffers[buffer];
  if (b.size_bytes == 0) return;  // PyTorch hands out no block for an empty tensor
  FSDPSIM_CHECK(blocks_[buffer] < 0 && unbacked_[buffer] == 0, "buffer allocated twice: " + b.name);
  const int64_t rounded = CachingAllocator::round_size(b.size_bytes);
  // After the first failure the allocator is not asked again (each failure would release and retry its whole
  // cache): the rest of the run is counted, to tell how much the job would need.
  const auto block = oom_ ? std::nullopt : allocator_.allocate(b.size_bytes, stream.value());
  if (block) {
    blocks_[buffer] = *block;
    const size_t slot = CachingAllocator::slot_of(*block);
    if (slot >= buffer_of_slot_.size()) buffer_of_slot_.resize(slot + 1);
    buffer_of_slot_[slot] = buffer;
  } else {
    // Out of memory: remember the first failure, then keep counting the bytes so the rest of the step is still
    // measured (what the job would need).
    if (!oom_) {
      oom_ = OomEvent{step, time_ns, op, buffer, b.size_bytes, allocator_.stats().reserved_bytes, live_};
    }
    unbacked_[buffer] = rounded;
    unbacked_total_ += rounded;
  }
  live_[static_cast<size_t>(b.category)] += rounded;
  const int64_t allocated = allocated_bytes();
  if (allocated > peak_allocated_.bytes) peak_allocated_ = MemoryPeak{allocated, time_ns, step, op, live_};
  const int64_t reserved = reserved_bytes();
  if (reserved > peak_reserved_.bytes) peak_reserved_ = MemoryPeak{reserved, time_ns, step, op, live_};
  sample(time_ns);
}

void MemoryTracker::release(BufferId buffer, TimeNs time_ns) {
  const Buffer& b = schedule_.buffers[buffer];
  if (b.size_bytes == 0) return;
  auto& block = blocks_[buffer];
  auto& unbacked = unbacked_[buffer];
  FSDPSIM_CHECK(block >= 0 || unbacked > 0 || b.size_bytes == 0, "buffer freed while not allocated: " + b.name);
  if (block >= 0) {
    allocator_.free(block);
    block = -1;
  }
  unbacked_total_ -= unbacked;
  unbacked = 0;
  live_[static_cast<size_t>(b.category)] -= CachingAllocator::round_size(b.size_bytes);
  sample(time_ns);
}

void MemoryTracker::state(MemoryState& out) const {
  std::vector<BlockHandle> handles;
  allocator_.layout(out.layout, handles);
  out.block_buffers.assign(handles.size(), BufferId::none());
  for (size_t i = 0; i < handles.size(); ++i) {
    if (handles[i] != kZeroByteBlock) out.block_buffers[i] = buffer_of_slot_[CachingAllocator::slot_of(handles[i])];
  }
  out.live = live_;
  out.stats = allocator_.stats();
  out.timeline_samples = timeline_.size();
  out.oom = oom_.has_value();
}

void MemoryTracker::rename_live(std::span<const BufferId> from, std::span<const BufferId> to) {
  FSDPSIM_CHECK(from.size() == to.size(), "one new name per live buffer");
  std::vector<BlockHandle> moved;
  for (const BufferId b : from) {
    FSDPSIM_CHECK(blocks_[b] > kZeroByteBlock, "renamed buffer is not live");
    moved.push_back(blocks_[b]);
    blocks_[b] = -1;
  }
  for (size_t i = 0; i < to.size(); ++i) {
    FSDPSIM_CHECK(blocks_[to[i]] < 0, "renamed buffer is already live");
    blocks_[to[i]] = moved[i];
  }
}

void MemoryTracker::repeat_samples(size_t begin, size_t end, TimeNs shift_ns) {
  FSDPSIM_CHECK(begin <= end && end <= timeline_.size(), "repeated samples out of range");
  for (size_t i = begin; i < end; ++i) {
    MemorySample sample = timeline_[i];
    sample.time_ns += shift_ns;
    timeline_.push_back(sample);
  }
}

void MemoryTracker::reset_peaks(TimeNs time_ns, int32_t step) {
  peak_allocated_ = MemoryPeak{allocated_bytes(), time_ns, step, OpId::none(), live_};
  peak_reserved_ = MemoryPeak{reserved_bytes(), time_ns, step, OpId::none(), live_};
  allocator_.reset_peaks();
}

void MemoryTracker::sample(TimeNs time_ns) {
  if (!record_timeline_) return;
  MemorySample s{time_ns, live_, allocated_bytes(), reserved_bytes()};
  if (!timeline_.empty() && timeline_.back().time_ns == time_ns) {
    timeline_.back() = s;
  } else {
    timeline_.push_back(s);
  }
}

}  // namespace fsdpsim
