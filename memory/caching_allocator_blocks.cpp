// Bookkeeping of the caching-allocator model: the block and segment arenas, the per-(stream, pool) free and
// unmapped lists, coalescing (try_merge_blocks of PyTorch's CUDACachingAllocator.cpp) and the counters.
#include <algorithm>
#include <limits>

#include "common/error.h"
#include "memory/caching_allocator.h"
#include "memory/caching_allocator_impl.h"

namespace fsdpsim {

using alloc_detail::AddressKey;
using alloc_detail::kNone;
using alloc_detail::PoolLists;
using alloc_detail::SizeKey;

namespace {

bool size_less(const SizeKey& a, const SizeKey& b) {
  return a.size_bytes != b.size_bytes ? a.size_bytes < b.size_bytes : a.address < b.address;
}

bool address_less(const AddressKey& a, const AddressKey& b) {
  return a.address < b.address;
}

}  // namespace

void CachingAllocator::layout(AllocatorLayout& out, std::vector<BlockHandle>& handles) const {
  FSDPSIM_CHECK(impl_ != nullptr, "layout() on a moved-from CachingAllocator");
  const Impl& im = *impl_;
  out.blocks.clear();
  out.segments.clear();
  out.streams.clear();
  handles.clear();
  std::vector<std::pair<int64_t, int32_t>> order;  // (address, block)
  for (size_t i = 0; i < im.blocks.size(); ++i) {
    if (im.blocks[i].live) order.emplace_back(im.blocks[i].address, static_cast<int32_t>(i));
  }
  std::sort(order.begin(), order.end());
  for (const auto& [address, index] : order) {
    const alloc_detail::Block& b = im.blocks[static_cast<size_t>(index)];
    out.blocks.push_back(BlockLayout{.address = b.address,
                                     .size_bytes = b.size_bytes,
                                     .segment_address = im.segments[static_cast<size_t>(b.segment)].base_address,
                                     .stream = im.streams[static_cast<size_t>(b.stream_slot)].stream,
                                     .small_pool = b.pool == alloc_detail::Pool::small,
                                     .allocated = b.allocated,
                                     .mapped = b.mapped});
    handles.push_back(b.allocated ? alloc_detail::encode_handle(index, b.generation) : kZeroByteBlock);
  }
  for (const alloc_detail::Segment& segment : im.segments) {
    if (!segment.live) continue;
    out.segments.push_back(SegmentLayout{.address = segment.base_address,
                                         .size_bytes = segment.size_bytes,
                                         .page_bytes = segment.page_bytes,
                                         .mapped_bytes = segment.mapped_bytes});
  }
  std::sort(out.segments.begin(), out.segments.end(),
            [](const SegmentLayout& a, const SegmentLayout& b) { return a.address < b.address; });
  for (const alloc_detail::StreamPools& pools : im.streams) out.streams.push_back(pools.stream);
  out.next_address = im.next_address;
}

int32_t CachingAllocator::Impl::stream_index(int32_t stream) {
  // Streams keep their slot for the allocator's lifetime (slots in order of first use), so a block can name its
  // lists by slot; a job has a handful of streams, so a scan is cheaper than a map.
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].stream == stream) return static_cast<int32_t>(i);
  }
  alloc_detail::StreamPools added;
  added.stream = stream;
  streams.push_back(std::move(added));
  return static_cast<int32_t>(streams.size() - 1);
}

PoolLists& CachingAllocator::Impl::lists(int32_t stream_index, Pool pool) {
  return streams[static_cast<size_t>(stream_index)].pools[static_cast<size_t>(pool)];
}

PoolLists& CachingAllocator::Impl::lists_of(const Block& block) {
  return lists(block.stream_slot, block.pool);
}

int32_t CachingAllocator::Impl::new_block(const Block& value) {
  int32_t index = 0;
  if (free_block_slots.empty()) {
    FSDPSIM_CHECK(blocks.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()), "too many blocks");
    index = static_cast<int32_t>(blocks.size());
    blocks.push_back(value);
    blocks.back().generation = 0;
  } else {
    index = free_block_slots.back();
    free_block_slots.pop_back();
    const uint32_t generation = blocks[static_cast<size_t>(index)].generation;  // keep: stale handles stay stale
    blocks[static_cast<size_t>(index)] = value;
    blocks[static_cast<size_t>(index)].generation = generation;
  }
  blocks[static_cast<size_t>(index)].live = true;
  return index;
}

void CachingAllocator::Impl::drop_block(int32_t block) {
  Block& b = blocks[static_cast<size_t>(block)];
  b.live = false;
  b.allocated = false;
  free_block_slots.push_back(block);
}

int32_t CachingAllocator::Impl::new_segment(int64_t size_bytes, int64_t page_bytes) {
  alloc_detail::Segment value;
  value.base_address = next_address;  // addresses are never reused, so (size, address) keys stay unique
  value.size_bytes = size_bytes;
  value.page_bytes = page_bytes;
  value.live = true;
  next_address += size_bytes;
  if (free_segment_slots.empty()) {
    segments.push_back(value);
    return static_cast<int32_t>(segments.size() - 1);
  }
  const int32_t index = free_segment_slots.back();
  free_segment_slots.pop_back();
  segments[static_cast<size_t>(index)] = value;
  return index;
}

void CachingAllocator::Impl::drop_segment(int32_t segment) {
  segments[static_cast<size_t>(segment)].live = false;
  free_segment_slots.push_back(segment);
}

bool CachingAllocator::Impl::counts_as_inactive_split(const Block& block) const {
  // inactive_split_bytes: cached blocks of split segments; PyTorch leaves expandable segments out (free_block).
  return block.is_split() && !segments[static_cast<size_t>(block.segment)].expandable();
}

void CachingAllocator::Impl::insert_free(int32_t block) {
  const Block& b = blocks[static_cast<size_t>(block)];
  FSDPSIM_CHECK(b.live && !b.allocated && b.mapped, "insert_free of a block that is not a free mapped block");
  auto& list = lists_of(b).free_blocks;
  const SizeKey key{b.size_bytes, b.address, block};
  list.insert(std::upper_bound(list.begin(), list.end(), key, size_less), key);
  if (counts_as_inactive_split(b)) stats->inactive_split_bytes += b.size_bytes;
}

void CachingAllocator::Impl::erase_free(int32_t block) {
  const Block& b = blocks[static_cast<size_t>(block)];
  PoolLists& pl = lists_of(b);
  const SizeKey key{b.size_bytes, b.address, block};
  auto it = std::lower_bound(pl.free_blocks.begin(), pl.free_blocks.end(), key, size_less);
  FSDPSIM_CHECK(it != pl.free_blocks.end() && it->block == block, "cached block missing from its free list");
  erase_free_at(pl, it);
}

void CachingAllocator::Impl::erase_free_at(PoolLists& lists, std::vector<SizeKey>::iterator it) {
  const Block& b = blocks[static_cast<size_t>(it->block)];
  if (counts_as_inactive_split(b)) stats->inactive_split_bytes -= b.size_bytes;
  lists.free_blocks.erase(it);
}

void CachingAllocator::Impl::insert_unmapped(int32_t block) {
  const Block& b = blocks[static_cast<size_t>(block)];
  auto& list = lists_of(b).unmapped;
  const AddressKey key{b.address, block};
  list.insert(std::upper_bound(list.begin(), list.end(), key, address_less), key);
}

void CachingAllocator::Impl::erase_unmapped(int32_t block) {
  const Block& b = blocks[static_cast<size_t>(block)];
  auto& list = lists_of(b).unmapped;
  auto it = std::lower_bound(list.begin(), list.end(), AddressKey{b.address, block}, address_less);
  FSDPSIM_CHECK(it != list.end() && it->block == block, "unmapped block missing from its list");
  list.erase(it);
}

int64_t CachingAllocator::Impl::try_merge_blocks(int32_t dst, int32_t src) {
  // try_merge_blocks: `src` must be a neighbour that is neither allocated nor of the other mapping state.
  if (src == kNone) return 0;
  {
    const Block& s = blocks[static_cast<size_t>(src)];
    if (s.allocated || s.mapped != blocks[static_cast<size_t>(dst)].mapped) return 0;
    if (s.mapped) {
      erase_free(src);
    } else {
      erase_unmapped(src);
    }
  }
  const Block s = blocks[static_cast<size_t>(src)];
  Block& d = blocks[static_cast<size_t>(dst)];
  if (d.prev == src) {  // [src dst]
    d.address = s.address;
    d.prev = s.prev;
    if (d.prev != kNone) blocks[static_cast<size_t>(d.prev)].next = dst;
  } else {  // [dst src]
    d.next = s.next;
    if (d.next != kNone) blocks[static_cast<size_t>(d.next)].prev = dst;
  }
  d.size_bytes += s.size_bytes;
  drop_block(src);
  return s.size_bytes;
}

void CachingAllocator::Impl::add_reserved(int64_t bytes) {
  stats->reserved_bytes += bytes;
  stats->peak_reserved_bytes = std::max(stats->peak_reserved_bytes, stats->reserved_bytes);
}

void CachingAllocator::Impl::add_allocated(int64_t bytes) {
  stats->allocated_bytes += bytes;
  stats->peak_allocated_bytes = std::max(stats->peak_allocated_bytes, stats->allocated_bytes);
}

}  // namespace fsdpsim
