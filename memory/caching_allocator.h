#pragma once
/// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): sizes rounded to 512 B, a small
/// pool (≤ 1 MiB, 2 MiB segments) and a large pool (20 MiB segments below 10 MiB, else rounded to 2 MiB), best-fit
/// reuse of cached blocks per stream, block splitting and coalescing, cudaMalloc of a new segment when nothing
/// fits, and on failure the release of every unused cached segment before a retry. `reserved_bytes` is what
/// torch.cuda.memory_reserved() reports, `allocated_bytes` what torch.cuda.memory_allocated() reports.
/// With expandable_segments each (stream, pool) maps pages of 2 MiB (small pool) or 20 MiB (large pool) into one
/// growing segment instead (see memory/caching_allocator_expandable.cpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace fsdpsim {

/// Allocator settings (PYTORCH_CUDA_ALLOC_CONF).
struct AllocatorConfig {
  int64_t capacity_bytes = 0;        ///< device memory the allocator may reserve (after context, NCCL, ...)
  bool expandable_segments = false;  ///< expandable_segments:True — one growing segment per stream and pool
  int64_t max_split_size_bytes = 0;  ///< max_split_size_mb; 0 = unlimited
};

/// Handle of one live allocation.
using BlockHandle = int64_t;
/// The handle a zero-byte request gets: it holds no memory (PyTorch hands out nullptr) and freeing it does nothing.
inline constexpr BlockHandle kZeroByteBlock = 0;

/// Counters of the allocator.
struct AllocatorStats {
  int64_t allocated_bytes = 0;  ///< sum of live blocks (rounded sizes, or the whole block when a remainder is too
                                ///< small to split off: ≤ 1 MiB in the large pool)
  int64_t reserved_bytes = 0;   ///< sum of segments held from cudaMalloc
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t cuda_malloc_calls = 0;     ///< segments created (each costs time in the first step); expandable: page maps
  int64_t cuda_free_calls = 0;       ///< segments released (empty_cache on an allocation failure); expandable: unmaps
  int64_t segments = 0;              ///< segments currently held; expandable: segments with a mapped page
  int64_t inactive_split_bytes = 0;  ///< free bytes inside segments that also hold live blocks (fragmentation)
};

/// One block of an allocator's state as CachingAllocator::layout() lists it.
struct BlockLayout {
  int64_t address = 0;
  int64_t size_bytes = 0;
  int64_t segment_address = 0;
  int32_t stream = 0;
  bool small_pool = false;
  bool allocated = false;
  bool mapped = true;
  bool operator==(const BlockLayout&) const = default;
};

/// One segment as CachingAllocator::layout() lists it.
struct SegmentLayout {
  int64_t address = 0;
  int64_t size_bytes = 0;
  int64_t page_bytes = 0;
  int64_t mapped_bytes = 0;
  bool operator==(const SegmentLayout&) const = default;
};

/// Everything that decides an allocator's later answers: its blocks and segments in address order, the streams in
/// the order they were first used, and the next segment's address. Handles are left out: equal states may hand
/// the same block out under different handles (arena slots are reused in any order), and nothing else depends on
/// them. Two allocators with equal layouts answer every later sequence of requests with the same blocks.
struct AllocatorLayout {
  std::vector<BlockLayout> blocks;
  std::vector<SegmentLayout> segments;
  std::vector<int32_t> streams;
  int64_t next_address = 0;
  bool operator==(const AllocatorLayout&) const = default;
};

/// The allocator of one device.
class CachingAllocator {
 public:
  /// Throws ConfigError when capacity_bytes is not positive or max_split_size_bytes is neither 0 nor ≥ 20 MiB.
  explicit CachingAllocator(AllocatorConfig config);
  /// Copies the whole state (segments, cached blocks, live handles stay valid in the copy).
  CachingAllocator(const CachingAllocator& other);
  /// Copies the whole state.
  CachingAllocator& operator=(const CachingAllocator& other);
  /// Moves the state; the moved-from allocator may only be destroyed or assigned to.
  CachingAllocator(CachingAllocator&& other) noexcept;
  /// Moves the state; the moved-from allocator may only be destroyed or assigned to.
  CachingAllocator& operator=(CachingAllocator&& other) noexcept;
  /// Frees the model's state (no device memory is involved).
  ~CachingAllocator();

  /// Allocates `size_bytes` for use on `stream`. Returns nullopt when even after releasing every cached segment no
  /// segment large enough fits in capacity_bytes (an out-of-memory error). A zero-byte request returns
  /// kZeroByteBlock; a negative one is a caller bug (InternalError).
  std::optional<BlockHandle> allocate(int64_t size_bytes, int32_t stream);
  /// Returns a block to its pool (cached; the segment is kept). A handle that is not live (double free) is a caller
  /// bug (InternalError).
  void free(BlockHandle block);
  /// torch.cuda.empty_cache(): releases every segment with no live block (with expandable segments: unmaps every
  /// page that holds no live block).
  void empty_cache();
  /// Clears the peak counters (torch.cuda.reset_peak_memory_stats()).
  void reset_peaks();

  /// The state as a layout (see AllocatorLayout); `handles` gets the handle of each listed block that is allocated
  /// (kZeroByteBlock for the others), in the same order.
  void layout(AllocatorLayout& out, std::vector<BlockHandle>& handles) const;
  /// The counters (torch.cuda.memory_stats() "all" values).
  [[nodiscard]] const AllocatorStats& stats() const { return stats_; }
  /// The arena slot of a live handle: live blocks have distinct slots (a tracker keys its buffers by them).
  [[nodiscard]] static size_t slot_of(BlockHandle block) { return static_cast<uint32_t>(block); }
  /// The size a request is rounded to (512 B granularity).
  [[nodiscard]] static int64_t round_size(int64_t size_bytes);
  /// The segment size cudaMalloc is asked for when a request of `rounded_bytes` finds no cached block.
  [[nodiscard]] static int64_t segment_size(int64_t rounded_bytes);

 private:
  struct Impl;  // blocks, segments and per-(stream, pool) free lists: memory/caching_allocator_impl.h
  AllocatorStats stats_;
  std::unique_ptr<Impl> impl_;  // never null except in a moved-from allocator
};

}  // namespace fsdpsim
