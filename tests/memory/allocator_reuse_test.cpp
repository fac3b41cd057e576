// Reuse, splitting, coalescing, fragmentation and peaks of the caching-allocator model (default settings).
// Rules (c10/cuda/CUDACachingAllocator.cpp): best fit per (stream, pool); a large-pool block is split when the
// remainder is > 1 MiB (kSmallSize), a small-pool block when it is ≥ 512 B; requests of 1–10 MiB open 20 MiB
// segments, ≥ 10 MiB requests a segment of their size rounded up to 2 MiB.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "common/units.h"
#include "memory/caching_allocator.h"

namespace fsdpsim {
namespace {

CachingAllocator make_allocator(int64_t capacity_bytes = kGiB) {
  AllocatorConfig config;
  config.capacity_bytes = capacity_bytes;
  return CachingAllocator(config);
}

BlockHandle must_allocate(CachingAllocator& allocator, int64_t size_bytes, int32_t stream = 0) {
  const std::optional<BlockHandle> handle = allocator.allocate(size_bytes, stream);
  EXPECT_TRUE(handle.has_value()) << "allocation of " << size_bytes << " bytes failed";
  return handle.value_or(kZeroByteBlock);
}

TEST(AllocatorReuse, FreedBlockIsReusedOnTheSameStreamOnly) {
  CachingAllocator allocator = make_allocator();
  const BlockHandle first = must_allocate(allocator, 3 * kMiB);
  // 3 MiB: a 20 MiB segment split into [3 MiB live][17 MiB cached].
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 1);
  allocator.free(first);  // coalesces back into one 20 MiB cached block
  must_allocate(allocator, 3 * kMiB);
  // Best fit finds the cached 20 MiB block: no new cudaMalloc, reserved stays 20 MiB.
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * kMiB);
  // Stream 1 cannot use stream 0's cached 17 MiB: a second 20 MiB segment, reserved 20 + 20 = 40 MiB.
  must_allocate(allocator, 3 * kMiB, 1);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 2);
  EXPECT_EQ(allocator.stats().reserved_bytes, 40 * kMiB);
  EXPECT_EQ(allocator.stats().allocated_bytes, 6 * kMiB);  // 3 + 3
}

TEST(AllocatorReuse, LargeRequestReusesItsExactSegment) {
  CachingAllocator allocator = make_allocator();
  allocator.free(must_allocate(allocator, 12 * kMiB));  // a 12 MiB segment, now cached whole
  must_allocate(allocator, 11 * kMiB);
  // 11 MiB best-fits the cached 12 MiB block; the remainder 1 MiB is not > kSmallSize, so no split and the whole
  // 12 MiB block is live: allocated 12 MiB, still one cudaMalloc.
  EXPECT_EQ(allocator.stats().allocated_bytes, 12 * kMiB);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 1);
}

TEST(AllocatorReuse, SmallAndLargePoolsDoNotShare) {
  CachingAllocator allocator = make_allocator();
  allocator.free(must_allocate(allocator, 3 * kMiB));  // 20 MiB large-pool segment, cached
  must_allocate(allocator, 4096);
  // 4096 B ≤ 1 MiB goes to the small pool, which has nothing cached: a new 2 MiB segment, 20 + 2 = 22 MiB.
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 2);
  EXPECT_EQ(allocator.stats().reserved_bytes, 22 * kMiB);
}

TEST(AllocatorSplit, TwoSixMiBRequestsShareATwentyMiBSegmentAndCoalesce) {
  CachingAllocator allocator = make_allocator();
  const BlockHandle a = must_allocate(allocator, 6 * kMiB);
  // [a 6][free 14]: remainder 14 MiB > 1 MiB is split off.
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 14 * kMiB);
  const BlockHandle b = must_allocate(allocator, 6 * kMiB);
  // b best-fits the 14 MiB block: [a 6][b 6][free 8], still one segment.
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 1);
  EXPECT_EQ(allocator.stats().segments, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * kMiB);
  EXPECT_EQ(allocator.stats().allocated_bytes, 12 * kMiB);  // 6 + 6
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 8 * kMiB);
  allocator.free(a);
  // [free 6][b 6][free 8]: a's only neighbour b is live, so nothing merges; inactive 6 + 8 = 14 MiB.
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 14 * kMiB);
  allocator.free(b);
  // b merges with both neighbours: one unsplit 20 MiB block, which is not "inactive split".
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 0);
  EXPECT_EQ(allocator.stats().allocated_bytes, 0);
  // A 20 MiB request fits only if the segment is one block again: no second cudaMalloc.
  must_allocate(allocator, 20 * kMiB);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 1);
  EXPECT_EQ(allocator.stats().allocated_bytes, 20 * kMiB);
}

TEST(AllocatorFragmentation, InterleavedSizesLeaveHolesALargerRequestCannotUse) {
  CachingAllocator allocator = make_allocator();
  std::vector<BlockHandle> sevens;
  for (int pair = 0; pair < 5; ++pair) {
    sevens.push_back(must_allocate(allocator, 7 * kMiB));
    must_allocate(allocator, 9 * kMiB);
  }
  // Each 7 MiB request finds only 4 MiB holes, so it opens a 20 MiB segment [7][free 13]; the 9 MiB request then
  // best-fits the 13 MiB block: [7][9][free 4]. Five segments: reserved 5 × 20 = 100 MiB, allocated 5 × 16 =
  // 80 MiB, inactive split 5 × 4 = 20 MiB.
  EXPECT_EQ(allocator.stats().reserved_bytes, 100 * kMiB);
  EXPECT_EQ(allocator.stats().allocated_bytes, 80 * kMiB);
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 20 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 5);
  for (const BlockHandle h : sevens) allocator.free(h);
  // Each freed 7 MiB block sits between the segment start and a live 9 MiB block: no merge. allocated 80 − 35 =
  // 45 MiB, reserved still 100 MiB, inactive split 20 + 5 × 7 = 55 MiB.
  EXPECT_EQ(allocator.stats().allocated_bytes, 45 * kMiB);
  EXPECT_EQ(allocator.stats().reserved_bytes, 100 * kMiB);
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 55 * kMiB);
  must_allocate(allocator, 12 * kMiB);
  // 55 MiB is cached, but in pieces of 4 and 7 MiB: the 12 MiB request needs a new 12 MiB segment. reserved
  // 100 + 12 = 112 MiB; the 55 MiB of holes stay idle (112 − 57 = 55).
  EXPECT_EQ(allocator.stats().reserved_bytes, 112 * kMiB);
  EXPECT_EQ(allocator.stats().allocated_bytes, 57 * kMiB);
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 55 * kMiB);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 6);
}

TEST(AllocatorPeaks, PeaksFollowTheHighWaterMarkAndReset) {
  CachingAllocator allocator = make_allocator();
  const BlockHandle a = must_allocate(allocator, 12 * kMiB);  // own 12 MiB segment
  const BlockHandle b = must_allocate(allocator, 14 * kMiB);  // own 14 MiB segment
  allocator.free(a);
  // allocated 12 + 14 − 12 = 14 MiB; the peaks stay at 12 + 14 = 26 MiB.
  EXPECT_EQ(allocator.stats().allocated_bytes, 14 * kMiB);
  EXPECT_EQ(allocator.stats().peak_allocated_bytes, 26 * kMiB);
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 26 * kMiB);
  allocator.reset_peaks();
  EXPECT_EQ(allocator.stats().peak_allocated_bytes, 14 * kMiB);  // peak = current
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 26 * kMiB);
  const BlockHandle c = must_allocate(allocator, 12 * kMiB);     // reuses a's cached segment
  EXPECT_EQ(allocator.stats().peak_allocated_bytes, 26 * kMiB);  // 14 + 12
  allocator.free(b);
  allocator.free(c);
  allocator.empty_cache();  // both segments are whole and free: reserved 0
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 26 * kMiB);
  allocator.reset_peaks();
  EXPECT_EQ(allocator.stats().peak_allocated_bytes, 0);
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 0);
}

TEST(AllocatorEmptyCache, ReleasesOnlySegmentsWithoutLiveBlocks) {
  CachingAllocator allocator = make_allocator();
  const BlockHandle a = must_allocate(allocator, 3 * kMiB);  // 20 MiB segment [3][free 17]
  allocator.free(must_allocate(allocator, 18 * kMiB));       // > 17 MiB: own 18 MiB segment, cached whole
  allocator.empty_cache();
  // Only the 18 MiB segment is free as a whole: one cudaFree, reserved 20 + 18 − 18 = 20 MiB.
  EXPECT_EQ(allocator.stats().cuda_free_calls, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 1);
  allocator.free(a);
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().cuda_free_calls, 2);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_EQ(allocator.stats().segments, 0);
}

TEST(AllocatorCopy, ACopyCarriesOnIndependently) {
  CachingAllocator original = make_allocator();
  const BlockHandle a = must_allocate(original, 6 * kMiB);
  CachingAllocator copy = original;
  copy.free(a);  // the handle is valid in the copy
  must_allocate(copy, 20 * kMiB);
  // In the copy a's segment coalesced and serves 20 MiB: still 1 cudaMalloc. The original is untouched.
  EXPECT_EQ(copy.stats().cuda_malloc_calls, 1);
  EXPECT_EQ(copy.stats().allocated_bytes, 20 * kMiB);
  EXPECT_EQ(original.stats().allocated_bytes, 6 * kMiB);
  CachingAllocator moved = std::move(copy);
  EXPECT_EQ(moved.stats().allocated_bytes, 20 * kMiB);
  must_allocate(moved, kMiB);  // a moved allocator keeps working: 1 MiB is small pool, new 2 MiB segment
  EXPECT_EQ(moved.stats().reserved_bytes, 22 * kMiB);
}

}  // namespace
}  // namespace fsdpsim
