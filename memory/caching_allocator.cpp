// The request path of the caching-allocator model: DeviceCachingAllocator::malloc and ::free of PyTorch's
// c10/cuda/CUDACachingAllocator.cpp (commit 001074d25084), with cudaMalloc replaced by a capacity check.
#include <algorithm>
#include <string>

#include "common/error.h"
#include "memory/caching_allocator.h"
#include "memory/caching_allocator_impl.h"

namespace fsdpsim {

using alloc_detail::encode_handle;
using alloc_detail::kHandleIndexBits;
using alloc_detail::kLargeBuffer;
using alloc_detail::kMaxRequestBytes;
using alloc_detail::kMinBlockSize;
using alloc_detail::kMinLargeAlloc;
using alloc_detail::kNone;
using alloc_detail::kRoundLarge;
using alloc_detail::kSmallBuffer;
using alloc_detail::kSmallSize;

namespace {

void validate(const AllocatorConfig& config) {
  const SourceLocation where{"<allocator config>", 0, 0};
  if (config.capacity_bytes <= 0) {
    throw ConfigError(where, "capacity_bytes", "is " + std::to_string(config.capacity_bytes),
                      "set it to the device memory the allocator may reserve: GPU memory minus CUDA context, "
                      "NCCL buffers and other fixed overheads, a positive number of bytes");
  }
  // CUDAAllocatorConfig::parseMaxSplitSize rejects max_split_size_mb below kLargeBuffer / 1 MiB = 20; the model
  // relies on it: a cached block of at least max_split_size is then never split (see release_block).
  if (config.max_split_size_bytes != 0 && config.max_split_size_bytes < kLargeBuffer) {
    throw ConfigError(where, "max_split_size_bytes (max_split_size_mb)",
                      "is " + std::to_string(config.max_split_size_bytes) + " bytes",
                      "use 0 for unlimited or at least 20 MiB (20971520 bytes), as PyTorch's "
                      "PYTORCH_CUDA_ALLOC_CONF max_split_size_mb requires");
  }
}

}  // namespace

// ---- public API -------------------------------------------------------------------------------------------------

CachingAllocator::CachingAllocator(AllocatorConfig config) : impl_(std::make_unique<Impl>()) {
  validate(config);
  impl_->config = config;
  impl_->stats = &stats_;
}

CachingAllocator::CachingAllocator(const CachingAllocator& other) : stats_(other.stats_) {
  FSDPSIM_CHECK(other.impl_ != nullptr, "copy of a moved-from CachingAllocator");
  impl_ = std::make_unique<Impl>(*other.impl_);
  impl_->stats = &stats_;
}

CachingAllocator& CachingAllocator::operator=(const CachingAllocator& other) {
  if (this != &other) {
    FSDPSIM_CHECK(other.impl_ != nullptr, "copy of a moved-from CachingAllocator");
    stats_ = other.stats_;
    impl_ = std::make_unique<Impl>(*other.impl_);
    impl_->stats = &stats_;
  }
  return *this;
}

CachingAllocator::CachingAllocator(CachingAllocator&& other) noexcept
    : stats_(other.stats_), impl_(std::move(other.impl_)) {
  if (impl_) impl_->stats = &stats_;
}

CachingAllocator& CachingAllocator::operator=(CachingAllocator&& other) noexcept {
  if (this != &other) {
    stats_ = other.stats_;
    impl_ = std::move(other.impl_);
    if (impl_) impl_->stats = &stats_;
  }
  return *this;
}

CachingAllocator::~CachingAllocator() = default;

std::optional<BlockHandle> CachingAllocator::allocate(int64_t size_bytes, int32_t stream) {
  FSDPSIM_CHECK(impl_ != nullptr, "allocate() on a moved-from CachingAllocator");
  return impl_->allocate(size_bytes, stream);
}

void CachingAllocator::free(BlockHandle block) {
  FSDPSIM_CHECK(impl_ != nullptr, "free() on a moved-from CachingAllocator");
  impl_->free(block);
}

void CachingAllocator::empty_cache() {
  FSDPSIM_CHECK(impl_ != nullptr, "empty_cache() on a moved-from CachingAllocator");
  impl_->release_cached_blocks();  // DeviceCachingAllocator::emptyCache
}

void CachingAllocator::reset_peaks() {
  // resetPeakStats → reset_peak_stat: peak = current.
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

int64_t CachingAllocator::round_size(int64_t size_bytes) {
  // DeviceCachingAllocator::round_size without roundup_power2_divisions (off by default).
  FSDPSIM_CHECK(size_bytes >= 0 && size_bytes < kMaxRequestBytes, "request size out of range");
  if (size_bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((size_bytes + kMinBlockSize - 1) / kMinBlockSize);
}

int64_t CachingAllocator::segment_size(int64_t rounded_bytes) {
  // DeviceCachingAllocator::get_allocation_size.
  if (rounded_bytes <= kSmallSize) return kSmallBuffer;
  if (rounded_bytes < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded_bytes + kRoundLarge - 1) / kRoundLarge);
}

// ---- DeviceCachingAllocator::malloc ------------------------------------------------------------------------------

std::optional<BlockHandle> CachingAllocator::Impl::allocate(int64_t size_bytes, int32_t stream) {
  FSDPSIM_CHECK(size_bytes >= 0, "negative allocation size " + std::to_string(size_bytes));
  if (size_bytes == 0) return kZeroByteBlock;  // NativeCachingAllocator::allocate skips malloc for size 0
  if (size_bytes >= kMaxRequestBytes) return std::nullopt;
  const int64_t size = CachingAllocator::round_size(size_bytes);
  const Pool pool = size <= kSmallSize ? Pool::small : Pool::large;  // get_pool
  const int32_t si = stream_index(stream);

  int32_t block = get_free_block(si, pool, size);
  if (block == kNone) block = alloc_block(si, pool, size);
  // Free enough oversize cached blocks (only with max_split_size) and retry.
  if (block == kNone && release_available_cached_blocks(si, pool, size)) block = alloc_block(si, pool, size);
  // Free every unsplit cached block of every stream and pool, and retry once more.
  if (block == kNone) {
    release_cached_blocks();
    block = alloc_block(si, pool, size);
  }
  if (block == kNone) return std::nullopt;  // "CUDA out of memory"
  return alloc_found_block(block, size);
}

int32_t CachingAllocator::Impl::get_free_block(int32_t stream_index, Pool pool, int64_t size_bytes) {
  alloc_detail::PoolLists& pl = lists(stream_index, pool);
  auto& list = pl.free_blocks;
  // Best fit: the smallest cached block ≥ size on this stream (lower_bound on BlockComparatorSize).
  auto it = std::lower_bound(list.begin(), list.end(), size_bytes,
                             [](const alloc_detail::SizeKey& k, int64_t size) { return k.size_bytes < size; });
  if (it == list.end()) return kNone;
  if (config.expandable_segments) {
    // A free block at the mapped end of an expandable segment can grow into the unmapped rest; for best fit
    // PyTorch ranks it by that expandable size, so later (larger) blocks that are smaller by it win.
    for (auto next = it + 1; next != list.end() && expandable_size(next->block) < expandable_size(it->block); ++next) {
      it = next;
    }
  }
  const int64_t max_split = config.max_split_size_bytes;
  if (max_split > 0) {
    // Do not return an oversized block for a small request.
    if (size_bytes < max_split && it->size_bytes >= max_split) return kNone;
    // An oversized block serves an oversized request only within kLargeBuffer of its size.
    if (size_bytes >= max_split && it->size_bytes >= size_bytes + kLargeBuffer) return kNone;
  }
  const int32_t block = it->block;
  erase_free_at(pl, it);
  return block;
}

int32_t CachingAllocator::Impl::alloc_block(int32_t stream_index, Pool pool, int64_t size_bytes) {
  if (config.expandable_segments) return try_allocate_expandable_block(stream_index, pool, size_bytes);
  // cudaMalloc of get_allocation_size(size) bytes; it fails when the device (capacity_bytes) cannot hold it.
  const int64_t alloc_bytes = CachingAllocator::segment_size(size_bytes);
  if (stats->reserved_bytes + alloc_bytes > config.capacity_bytes) return kNone;
  const int32_t segment = new_segment(alloc_bytes, 0);
  segments[static_cast<size_t>(segment)].mapped_bytes = alloc_bytes;
  add_reserved(alloc_bytes);
  ++stats->segments;
  ++stats->cuda_malloc_calls;
  Block value;
  value.address = segments[static_cast<size_t>(segment)].base_address;
  value.size_bytes = alloc_bytes;
  value.segment = segment;
  value.stream_slot = stream_index;
  value.pool = pool;
  return new_block(value);  // not in a free list yet, like p.block in alloc_block
}

bool CachingAllocator::Impl::release_available_cached_blocks(int32_t stream_index, Pool pool, int64_t size_bytes) {
  const int64_t max_split = config.max_split_size_bytes;
  // Does nothing unless max_split_size is set; never touches expandable segments (PyTorch PR #134338).
  if (max_split == 0 || config.expandable_segments) return false;
  const int64_t key = std::max(size_bytes, max_split);
  auto& list = lists(stream_index, pool).free_blocks;
  auto it = std::lower_bound(list.begin(), list.end(), key,
                             [](const alloc_detail::SizeKey& k, int64_t size) { return k.size_bytes < size; });
  if (it != list.end()) {
    release_block(it->block);  // one block large enough
    return true;
  }
  // No single block is large enough: free oversize blocks, the largest first, until enough is released.
  int64_t released_bytes = 0;
  while (released_bytes < key && !list.empty() && list.back().size_bytes >= max_split) {
    released_bytes += list.back().size_bytes;
    release_block(list.back().block);
  }
  return released_bytes >= key;
}

void CachingAllocator::Impl::release_cached_blocks() {
  // release_blocks(large_blocks) then release_blocks(small_blocks): every unsplit cached block is cudaFree'd;
  // in expandable segments every free page is unmapped, and a segment left with no mapped page is destroyed.
  for (const Pool pool : {Pool::large, Pool::small}) {
    scratch.clear();
    for (size_t si = 0; si < streams.size(); ++si) {
      for (const auto& key : streams[si].pools[static_cast<size_t>(pool)].free_blocks) scratch.push_back(key.block);
    }
    for (const int32_t block : scratch) {
      const Block& b = blocks[static_cast<size_t>(block)];
      if (segments[static_cast<size_t>(b.segment)].expandable()) {
        unmap_block(block);
        release_expandable_segment(block);
      } else if (!b.is_split()) {
        release_block(block);
      }
    }
  }
}

void CachingAllocator::Impl::release_block(int32_t block) {
  const Block& b = blocks[static_cast<size_t>(block)];
  // max_split_size ≥ kLargeBuffer keeps oversize cached blocks unsplit, so this is a whole segment.
  FSDPSIM_CHECK(!b.allocated && !b.is_split(), "release_block of a block that is not a whole cached segment");
  FSDPSIM_CHECK(!segments[static_cast<size_t>(b.segment)].expandable(), "release_block of an expandable segment");
  erase_free(block);
  add_reserved(-b.size_bytes);
  --stats->segments;
  ++stats->cuda_free_calls;
  drop_segment(b.segment);
  drop_block(block);
}

BlockHandle CachingAllocator::Impl::alloc_found_block(int32_t block, int64_t size_bytes) {
  if (should_split(blocks[static_cast<size_t>(block)], size_bytes)) {
    // The front `size_bytes` become a new allocated block; the old block keeps the remainder and is cached.
    Block front = blocks[static_cast<size_t>(block)];
    front.size_bytes = size_bytes;
    front.next = block;
    const int32_t allocated = new_block(front);  // may move `blocks`
    Block& rest = blocks[static_cast<size_t>(block)];
    if (rest.prev != kNone) blocks[static_cast<size_t>(rest.prev)].next = allocated;
    rest.prev = allocated;
    rest.address += size_bytes;
    rest.size_bytes -= size_bytes;
    insert_free(block);
    block = allocated;
  }
  Block& b = blocks[static_cast<size_t>(block)];
  b.allocated = true;
  if (++b.generation == 0) b.generation = 1;
  add_allocated(b.size_bytes);  // allocated_bytes counts the block, which may exceed the rounded request
  return encode_handle(block, b.generation);
}

bool CachingAllocator::Impl::should_split(const Block& block, int64_t size_bytes) const {
  const int64_t remaining = block.size_bytes - size_bytes;
  if (block.pool == Pool::small || config.expandable_segments) return remaining >= kMinBlockSize;
  const bool below_max_split = config.max_split_size_bytes == 0 || size_bytes < config.max_split_size_bytes;
  return below_max_split && remaining > kSmallSize;
}

// ---- DeviceCachingAllocator::free --------------------------------------------------------------------------------

void CachingAllocator::Impl::free(BlockHandle handle) {
  if (handle == kZeroByteBlock) return;
  const auto bits = static_cast<uint64_t>(handle);
  const auto index = static_cast<int64_t>(bits & 0xFFFFFFFFu);
  const auto generation = static_cast<uint32_t>(bits >> kHandleIndexBits);
  const bool valid = handle > 0 && index < static_cast<int64_t>(blocks.size()) &&
                     blocks[static_cast<size_t>(index)].live && blocks[static_cast<size_t>(index)].allocated &&
                     blocks[static_cast<size_t>(index)].generation == generation;
  FSDPSIM_CHECK(valid, "free() of block handle " + std::to_string(handle) + ", which is not live (double free?)");
  const auto block = static_cast<int32_t>(index);
  Block& b = blocks[static_cast<size_t>(block)];
  b.allocated = false;
  add_allocated(-b.size_bytes);
  free_block(block);
}

void CachingAllocator::Impl::free_block(int32_t block) {
  // Coalesce with free neighbours of the same segment (try_merge_blocks), then cache the block.
  try_merge_blocks(block, blocks[static_cast<size_t>(block)].prev);
  try_merge_blocks(block, blocks[static_cast<size_t>(block)].next);
  insert_free(block);
}

}  // namespace fsdpsim
