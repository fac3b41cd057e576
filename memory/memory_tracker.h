#pragma once
/// The simulated rank's memory over time: bytes per buffer category, PyTorch's allocated and reserved bytes (through
/// the caching-allocator model), the peak with its time, the op running then and the breakdown, and the first
/// allocation that does not fit.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/units.h"
#include "memory/caching_allocator.h"
#include "schedule/ir.h"

namespace fsdpsim {

inline constexpr size_t kCategoryCount = kBufferCategoryCount;
/// Bytes per BufferCategory (indexed by its value).
using CategoryBytes = std::array<int64_t, kCategoryCount>;

/// Memory at one moment.
struct MemorySample {
  TimeNs time_ns = 0;
  CategoryBytes bytes{};        ///< live bytes per category (allocator-rounded)
  int64_t allocated_bytes = 0;  ///< torch.cuda.memory_allocated()
  int64_t reserved_bytes = 0;   ///< torch.cuda.memory_reserved()
};

/// The highest point of a counter.
struct MemoryPeak {
  int64_t bytes = 0;
  TimeNs time_ns = 0;
  int32_t step = 0;
  OpId op;                    ///< the op whose allocation reached the peak (none: the persistent buffers alone)
  CategoryBytes breakdown{};  ///< live bytes per category at that moment
};

/// An allocation that did not fit.
struct OomEvent {
  int32_t step = 0;
  TimeNs time_ns = 0;
  OpId op;  ///< none: setup (the persistent buffers)
  BufferId buffer;
  int64_t request_bytes = 0;
  int64_t reserved_bytes = 0;
  CategoryBytes breakdown{};
};

/// What a tracker holds at one moment, as the engine's replay of repeating micro-batches compares it
/// (sim/replay_boundary.h).
struct MemoryState {
  AllocatorLayout layout;
  std::vector<BufferId> block_buffers;  ///< per layout block: the buffer it holds (none for a free block)
  CategoryBytes live{};
  AllocatorStats stats;
  size_t timeline_samples = 0;
  bool oom = false;
};

/// Tracks one rank's memory while the engine runs.
class MemoryTracker {
 public:
  MemoryTracker(const Schedule& schedule, AllocatorConfig config, bool record_timeline);

  /// Allocates a buffer for `op` on `stream` at `time_ns`.
  void allocate(BufferId buffer, OpId op, StreamId stream, TimeNs time_ns, int32_t step);
  /// Releases a buffer at `time_ns`.
  void release(BufferId buffer, TimeNs time_ns);

  [[nodiscard]] const MemoryPeak& peak_allocated() const { return peak_allocated_; }
  [[nodiscard]] const MemoryPeak& peak_reserved() const { return peak_reserved_; }
  [[nodiscard]] const std::optional<OomEvent>& oom() const { return oom_; }
  [[nodiscard]] const std::vector<MemorySample>& timeline() const { return timeline_; }
  [[nodiscard]] const AllocatorStats& allocator_stats() const { return allocator_.stats(); }
  [[nodiscard]] int64_t allocated_bytes() const;
  /// Live bytes per category now (allocator-rounded).
  [[nodiscard]] const CategoryBytes& live_bytes() const { return live_; }
  /// Reserved bytes (after an OOM: at least the allocated bytes, which would reuse the cached free blocks first).
  [[nodiscard]] int64_t reserved_bytes() const;
  /// The state now (see MemoryState), into `out`.
  void state(MemoryState& out) const;
  /// For a replayed stretch of the run: the live buffers `from[i]` are `to[i]` from now on, in the same blocks.
  void rename_live(std::span<const BufferId> from, std::span<const BufferId> to);
  /// For a replayed stretch of the run: appends copies of the timeline samples [begin, end), `shift_ns` later.
  void repeat_samples(size_t begin, size_t end, TimeNs shift_ns);
  /// Restarts peak tracking at the start of a step (each step's peak is reported); the peaks start from the
  /// memory in use now.
  void reset_peaks(TimeNs time_ns, int32_t step);

 private:
  void sample(TimeNs time_ns);
  const Schedule& schedule_;
  CachingAllocator allocator_;
  IdVector<BufferId, BlockHandle> blocks_;  // per buffer; -1 when not live
  std::vector<BufferId> buffer_of_slot_;    // per allocator block slot: the buffer it last held (state())
  IdVector<BufferId, int64_t> unbacked_;    // per buffer: bytes counted without a block (after an OOM)
  CategoryBytes live_{};
  int64_t unbacked_total_ = 0;
  MemoryPeak peak_allocated_, peak_reserved_;
  std::optional<OomEvent> oom_;
  bool record_timeline_;
  std::vector<MemorySample> timeline_;
};

}  // namespace fsdpsim
