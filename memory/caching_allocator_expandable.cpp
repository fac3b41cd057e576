// expandable_segments:True in the caching-allocator model: PyTorch's Note [Expandable Segments] and
// ExpandableSegment in c10/cuda/CUDACachingAllocator.cpp (commit 001074d25084); user docs: "expandable_segments"
// under PYTORCH_CUDA_ALLOC_CONF in docs/source/notes/cuda.rst.
//
// Each (stream, pool) gets one segment: a reserved address range (1⅛ × the device memory; here capacity_bytes)
// whose physical pages are mapped on demand at the lowest address that fits, so a request tiles onto the end of
// the previous ones instead of opening a fresh cudaMalloc segment. Pages are kSmallBuffer = 2 MiB in the small
// pool and kLargeBuffer = 20 MiB in the large pool (find_expandable_block: "we use 2MiB pages for our small pool and
// 20MiB pages for our large pool"). Pages are unmapped only by release_cached_blocks (empty_cache or the retry
// after a failed allocation), never on free. Each map counts as a cudaMalloc call and each unmap as a cudaFree call
// (num_device_alloc / num_device_free); `segments` counts segments with at least one mapped page.
#include <algorithm>

#include "common/error.h"
#include "common/int_math.h"
#include "memory/caching_allocator.h"
#include "memory/caching_allocator_impl.h"

namespace fsdpsim {

using alloc_detail::kLargeBuffer;
using alloc_detail::kNone;
using alloc_detail::kSmallBuffer;

namespace {

}  // namespace

int32_t CachingAllocator::Impl::try_allocate_expandable_block(int32_t stream_index, Pool pool, int64_t size_bytes) {
  // try_allocate_expandable_block: `candidate` starts a run of free and unmapped blocks with room for the request;
  // map the unmapped parts front to back until the (merged) candidate is large enough.
  int32_t candidate = find_expandable_block(stream_index, pool, size_bytes);
  if (!blocks[static_cast<size_t>(candidate)].mapped &&
      !map_block(candidate, std::min(blocks[static_cast<size_t>(candidate)].size_bytes, size_bytes))) {
    return kNone;
  }
  while (blocks[static_cast<size_t>(candidate)].size_bytes < size_bytes) {
    const int32_t next = blocks[static_cast<size_t>(candidate)].next;
    if (next == kNone || blocks[static_cast<size_t>(next)].mapped) return kNone;  // cannot happen: space was checked
    const int64_t remaining = size_bytes - blocks[static_cast<size_t>(candidate)].size_bytes;
    if (!map_block(next, std::min(remaining, blocks[static_cast<size_t>(next)].size_bytes))) return kNone;
    candidate = next;  // map_block merged the free candidate into `next`
  }
  erase_free(candidate);
  return candidate;
}

int32_t CachingAllocator::Impl::find_expandable_block(int32_t stream_index, Pool pool, int64_t size_bytes) {
  // The lowest address, over this stream's segments, where free plus unmapped space holds the request; a free
  // block just before an unmapped range counts with it.
  for (const auto& key : lists(stream_index, pool).unmapped) {
    int32_t start = key.block;
    const int32_t prev = blocks[static_cast<size_t>(start)].prev;
    if (prev != kNone && !blocks[static_cast<size_t>(prev)].allocated) start = prev;
    int64_t room_bytes = 0;
    for (int32_t b = start; b != kNone && room_bytes < size_bytes && !blocks[static_cast<size_t>(b)].allocated;
         b = blocks[static_cast<size_t>(b)].next) {
      room_bytes += blocks[static_cast<size_t>(b)].size_bytes;
    }
    if (room_bytes >= size_bytes) return start;
  }
  // None: a new segment whose address space is 1⅛ × the device memory, in whole pages.
  const int64_t page_bytes = pool == Pool::small ? kSmallBuffer : kLargeBuffer;
  const int64_t space_bytes = round_up(config.capacity_bytes + config.capacity_bytes / 8, page_bytes);
  const int32_t segment = new_segment(space_bytes, page_bytes);
  Block value;
  value.address = segments[static_cast<size_t>(segment)].base_address;
  value.size_bytes = space_bytes;
  value.segment = segment;
  value.stream_slot = stream_index;
  value.pool = pool;
  value.mapped = false;
  const int32_t block = new_block(value);
  insert_unmapped(block);
  return block;
}

bool CachingAllocator::Impl::map_block(int32_t block, int64_t size_bytes) {
  // map_block: back the first `size_bytes` (rounded up to pages) of an unmapped range with physical pages.
  const Block& b = blocks[static_cast<size_t>(block)];
  const alloc_detail::Segment& seg = segments[static_cast<size_t>(b.segment)];
  FSDPSIM_CHECK(!b.mapped && size_bytes <= b.size_bytes, "map_block of a mapped block or past its end");
  const int64_t mapped_bytes = ceil_div(size_bytes, seg.page_bytes) * seg.page_bytes;
  // cuMemCreate fails (ExpandableSegment::map returns an empty range) when the device is full.
  if (stats->reserved_bytes + mapped_bytes > config.capacity_bytes) return false;
  erase_unmapped(block);
  blocks[static_cast<size_t>(block)].mapped = true;
  if (mapped_bytes < blocks[static_cast<size_t>(block)].size_bytes) {
    Block rest = blocks[static_cast<size_t>(block)];
    rest.address += mapped_bytes;
    rest.size_bytes -= mapped_bytes;
    rest.mapped = false;
    rest.prev = block;
    const int32_t r = new_block(rest);  // may move `blocks`
    if (rest.next != kNone) blocks[static_cast<size_t>(rest.next)].prev = r;
    blocks[static_cast<size_t>(block)].next = r;
    blocks[static_cast<size_t>(block)].size_bytes = mapped_bytes;
    insert_unmapped(r);
  }
  try_merge_blocks(block, blocks[static_cast<size_t>(block)].prev);
  try_merge_blocks(block, blocks[static_cast<size_t>(block)].next);
  insert_free(block);
  alloc_detail::Segment& segment = segments[static_cast<size_t>(blocks[static_cast<size_t>(block)].segment)];
  if (segment.mapped_bytes == 0) ++stats->segments;
  segment.mapped_bytes += mapped_bytes;
  add_reserved(mapped_bytes);
  ++stats->cuda_malloc_calls;
  return true;
}

void CachingAllocator::Impl::unmap_block(int32_t block) {
  // unmap_block: return every whole page inside a free block; partial pages at either end stay mapped and free.
  const Block b = blocks[static_cast<size_t>(block)];
  const alloc_detail::Segment& seg = segments[static_cast<size_t>(b.segment)];
  const int64_t offset = b.address - seg.base_address;
  const int64_t first_page = ceil_div(offset, seg.page_bytes);
  const int64_t end_page = (offset + b.size_bytes) / seg.page_bytes;
  if (first_page >= end_page) return;
  erase_free(block);
  const int64_t start = seg.base_address + first_page * seg.page_bytes;
  const int64_t end = seg.base_address + end_page * seg.page_bytes;
  int32_t before = kNone;
  int32_t after = kNone;
  if (start > b.address) {  // prev? -> before -> block
    Block piece = b;
    piece.size_bytes = start - b.address;
    piece.next = block;
    before = new_block(piece);
    if (b.prev != kNone) blocks[static_cast<size_t>(b.prev)].next = before;
    blocks[static_cast<size_t>(block)].prev = before;
  }
  if (end < b.address + b.size_bytes) {  // block -> after -> next?
    Block piece = b;
    piece.address = end;
    piece.size_bytes = b.address + b.size_bytes - end;
    piece.prev = block;
    after = new_block(piece);
    if (b.next != kNone) blocks[static_cast<size_t>(b.next)].prev = after;
    blocks[static_cast<size_t>(block)].next = after;
  }
  Block& u = blocks[static_cast<size_t>(block)];
  u.address = start;
  u.size_bytes = end - start;
  u.mapped = false;
  try_merge_blocks(block, blocks[static_cast<size_t>(block)].prev);
  try_merge_blocks(block, blocks[static_cast<size_t>(block)].next);
  insert_unmapped(block);
  if (before != kNone) insert_free(before);
  if (after != kNone) insert_free(after);
  alloc_detail::Segment& segment = segments[static_cast<size_t>(b.segment)];
  segment.mapped_bytes -= end - start;
  if (segment.mapped_bytes == 0) --stats->segments;
  add_reserved(-(end - start));
  ++stats->cuda_free_calls;
}

void CachingAllocator::Impl::release_expandable_segment(int32_t block) {
  // release_blocks: a segment reduced to one unmapped block gives its address space back.
  const Block& b = blocks[static_cast<size_t>(block)];
  if (b.mapped || b.is_split()) return;
  erase_unmapped(block);
  drop_segment(b.segment);
  drop_block(block);
}

int64_t CachingAllocator::Impl::expandable_size(int32_t block) const {
  // get_free_block's expandable_size: a free block followed by unmapped space can grow into it.
  const Block& b = blocks[static_cast<size_t>(block)];
  if (b.next == kNone || blocks[static_cast<size_t>(b.next)].mapped) return b.size_bytes;
  return b.size_bytes + blocks[static_cast<size_t>(b.next)].size_bytes;
}

}  // namespace fsdpsim
