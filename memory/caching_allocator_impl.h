#pragma once
/// Internal state of CachingAllocator (memory/caching_allocator.h), shared by memory/caching_allocator*.cpp only.
///
/// The model follows PyTorch's c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator, read at commit
/// 001074d25084): every function named in a comment here is the PyTorch function the code models. Blocks live in
/// an index arena (no per-call heap allocation once warm); free blocks of one (stream, pool) sit in a vector sorted
/// by (size, address), the per-stream slice of PyTorch's BlockComparatorSize set, so best fit is a binary search.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "memory/caching_allocator.h"

namespace fsdpsim::alloc_detail {

// Constants of c10/cuda/CUDACachingAllocator.cpp.
inline constexpr int64_t kMinBlockSize = 512;                 // kMinBlockSize: all sizes rounded to ≥ 512 B
inline constexpr int64_t kSmallSize = int64_t{1} << 20;       // kSmallSize: largest "small" request, 1 MiB
inline constexpr int64_t kSmallBuffer = int64_t{2} << 20;     // kSmallBuffer: small requests packed in 2 MiB
inline constexpr int64_t kLargeBuffer = int64_t{20} << 20;    // kLargeBuffer: 1–10 MiB requests share 20 MiB
inline constexpr int64_t kMinLargeAlloc = int64_t{10} << 20;  // kMinLargeAlloc: below it, a kLargeBuffer segment
inline constexpr int64_t kRoundLarge = int64_t{2} << 20;      // kRoundLarge: larger segments rounded to 2 MiB
// NativeCachingAllocator::allocate refuses 1 EB or more ("Tried to allocate more than 1EB memory").
inline constexpr int64_t kMaxRequestBytes = int64_t{1} << 60;

/// A handle is (generation << 32) | block index; generation ≥ 1, so no handle equals kZeroByteBlock.
inline constexpr int kHandleIndexBits = 32;
inline BlockHandle encode_handle(int32_t block, uint32_t generation) {
  return static_cast<BlockHandle>((uint64_t{generation} << kHandleIndexBits) | static_cast<uint32_t>(block));
}

/// "No block / no segment" in the index links.
inline constexpr int32_t kNone = -1;

/// BlockPool: small_blocks (≤ kSmallSize) or large_blocks.
enum class Pool : uint8_t { small = 0, large = 1 };

/// One Block of PyTorch: a range of a segment, allocated, cached free, or (expandable segments) unmapped.
struct Block {
  int64_t address = 0;  ///< synthetic device address; segments get disjoint ranges
  int64_t size_bytes = 0;
  int32_t prev = kNone;  ///< neighbour at the lower address in the same segment (Block::prev)
  int32_t next = kNone;  ///< neighbour at the higher address (Block::next)
  int32_t segment = kNone;
  int32_t stream_slot = 0;  ///< index of the stream in Impl::streams (the allocation stream, Block::stream)
  uint32_t generation = 0;  ///< bumped at every hand-out, so a stale handle is caught
  Pool pool = Pool::large;
  bool allocated = false;
  bool mapped = true;  ///< false: address space of an expandable segment with no physical pages
  bool live = false;   ///< the arena slot is in use

  /// Block::is_split(): shares its segment with other blocks.
  [[nodiscard]] bool is_split() const { return prev != kNone || next != kNone; }
};

/// One cudaMalloc segment, or one ExpandableSegment (a reserved address range mapped page by page).
struct Segment {
  int64_t base_address = 0;
  int64_t size_bytes = 0;    ///< cudaMalloc size, or the address-space size of an expandable segment
  int64_t page_bytes = 0;    ///< mapping granularity of an expandable segment; 0 for a cudaMalloc segment
  int64_t mapped_bytes = 0;  ///< bytes this segment adds to reserved_bytes
  bool live = false;

  [[nodiscard]] bool expandable() const { return page_bytes > 0; }
};

/// Entry of a free list, ordered by (size, address) like BlockComparatorSize within one stream.
struct SizeKey {
  int64_t size_bytes = 0;
  int64_t address = 0;
  int32_t block = kNone;
};

/// Entry of an unmapped list, ordered by address like BlockComparatorAddress within one stream.
struct AddressKey {
  int64_t address = 0;
  int32_t block = kNone;
};

/// BlockPool::blocks and BlockPool::unmapped restricted to one stream.
struct PoolLists {
  std::vector<SizeKey> free_blocks;
  std::vector<AddressKey> unmapped;
};

/// The two pools of one stream.
struct StreamPools {
  int32_t stream = 0;
  std::array<PoolLists, 2> pools;  ///< indexed by Pool
};

}  // namespace fsdpsim::alloc_detail

namespace fsdpsim {

/// The whole mutable state; every operation is a member so that it may name the private Impl type.
struct CachingAllocator::Impl {
  using Block = alloc_detail::Block;
  using Pool = alloc_detail::Pool;

  AllocatorConfig config;
  AllocatorStats* stats = nullptr;  ///< the owning CachingAllocator's stats_ (re-pointed on copy and move)
  std::vector<Block> blocks;
  std::vector<int32_t> free_block_slots;
  std::vector<alloc_detail::Segment> segments;
  std::vector<int32_t> free_segment_slots;
  std::vector<alloc_detail::StreamPools> streams;  ///< in order of first use; a slot never moves
  std::vector<int32_t> scratch;                    ///< reused by the release passes
  int64_t next_address = 0;

  // caching_allocator.cpp: the request path (DeviceCachingAllocator::malloc and free).
  std::optional<BlockHandle> allocate(int64_t size_bytes, int32_t stream);
  void free(BlockHandle handle);
  int32_t get_free_block(int32_t stream_index, Pool pool, int64_t size_bytes);
  int32_t alloc_block(int32_t stream_index, Pool pool, int64_t size_bytes);
  bool release_available_cached_blocks(int32_t stream_index, Pool pool, int64_t size_bytes);
  void release_cached_blocks();
  void release_block(int32_t block);
  BlockHandle alloc_found_block(int32_t block, int64_t size_bytes);
  [[nodiscard]] bool should_split(const Block& block, int64_t size_bytes) const;
  void free_block(int32_t block);

  // caching_allocator_blocks.cpp: arena, lists, merging, counters.
  int32_t stream_index(int32_t stream);
  alloc_detail::PoolLists& lists(int32_t stream_index, Pool pool);
  alloc_detail::PoolLists& lists_of(const Block& block);
  int32_t new_block(const Block& value);
  void drop_block(int32_t block);
  int32_t new_segment(int64_t size_bytes, int64_t page_bytes);
  void drop_segment(int32_t segment);
  void insert_free(int32_t block);
  void erase_free(int32_t block);
  void erase_free_at(alloc_detail::PoolLists& lists, std::vector<alloc_detail::SizeKey>::iterator it);
  void insert_unmapped(int32_t block);
  void erase_unmapped(int32_t block);
  int64_t try_merge_blocks(int32_t dst, int32_t src);
  [[nodiscard]] bool counts_as_inactive_split(const Block& block) const;
  void add_reserved(int64_t bytes);
  void add_allocated(int64_t bytes);

  // caching_allocator_expandable.cpp: expandable_segments:True.
  int32_t try_allocate_expandable_block(int32_t stream_index, Pool pool, int64_t size_bytes);
  int32_t find_expandable_block(int32_t stream_index, Pool pool, int64_t size_bytes);
  bool map_block(int32_t block, int64_t size_bytes);
  void unmap_block(int32_t block);
  void release_expandable_segment(int32_t block);
  [[nodiscard]] int64_t expandable_size(int32_t block) const;
};

}  // namespace fsdpsim
