// Out-of-memory handling of the caching-allocator model: DeviceCachingAllocator::malloc retries a failed cudaMalloc
// after release_available_cached_blocks (only with max_split_size) and then release_cached_blocks (every unsplit
// cached segment of every stream), and reports OOM only when the retry fails too. Also the max_split_size rules.
#include <gtest/gtest.h>

#include <optional>

#include "common/units.h"
#include "memory/caching_allocator.h"

namespace fsdpsim {
namespace {

CachingAllocator make_allocator(int64_t capacity_bytes, int64_t max_split_size_bytes = 0) {
  AllocatorConfig config;
  config.capacity_bytes = capacity_bytes;
  config.max_split_size_bytes = max_split_size_bytes;
  return CachingAllocator(config);
}

BlockHandle must_allocate(CachingAllocator& allocator, int64_t size_bytes, int32_t stream = 0) {
  const std::optional<BlockHandle> handle = allocator.allocate(size_bytes, stream);
  EXPECT_TRUE(handle.has_value()) << "allocation of " << size_bytes << " bytes failed";
  return handle.value_or(kZeroByteBlock);
}

TEST(AllocatorOom, CachedSegmentsAreReleasedAndTheRequestRetried) {
  CachingAllocator allocator = make_allocator(40 * kMiB);
  const BlockHandle a = must_allocate(allocator, 12 * kMiB);
  const BlockHandle b = must_allocate(allocator, 12 * kMiB, 1);  // another stream: its own cached segment
  allocator.free(a);
  allocator.free(b);
  // Two whole 12 MiB segments cached: reserved 24 MiB, allocated 0.
  ASSERT_EQ(allocator.stats().reserved_bytes, 24 * kMiB);
  must_allocate(allocator, 30 * kMiB);
  // No cached block ≥ 30 MiB; cudaMalloc(30 MiB) fails (24 + 30 = 54 > 40); without max_split_size
  // release_available_cached_blocks does nothing; release_cached_blocks frees both 12 MiB segments (2 cudaFree,
  // also stream 1's); the retry fits (0 + 30 ≤ 40). 3 cudaMalloc calls in all, reserved 30 MiB.
  EXPECT_EQ(allocator.stats().cuda_free_calls, 2);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 3);
  EXPECT_EQ(allocator.stats().reserved_bytes, 30 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 1);
  EXPECT_EQ(allocator.stats().peak_reserved_bytes, 30 * kMiB);  // max(24, 30)
  // A further 12 MiB segment would need 30 + 12 = 42 > 40 MiB and nothing is cached: out of memory, no change.
  EXPECT_FALSE(allocator.allocate(12 * kMiB, 0).has_value());
  EXPECT_EQ(allocator.stats().reserved_bytes, 30 * kMiB);
  EXPECT_EQ(allocator.stats().allocated_bytes, 30 * kMiB);
  EXPECT_EQ(allocator.stats().cuda_free_calls, 2);
}

TEST(AllocatorOom, RequestLargerThanTheDeviceFails) {
  CachingAllocator allocator = make_allocator(40 * kMiB);
  // 41 MiB needs a 42 MiB segment (rounded to 2 MiB) > 40 MiB even with nothing reserved.
  EXPECT_FALSE(allocator.allocate(41 * kMiB, 0).has_value());
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 0);
}

TEST(AllocatorOom, SplitSegmentsAreNotReleased) {
  CachingAllocator allocator = make_allocator(40 * kMiB);
  must_allocate(allocator, 6 * kMiB);                   // 20 MiB segment [6][free 14]
  allocator.free(must_allocate(allocator, 14 * kMiB));  // fills the 14 MiB hole exactly, then frees it
  // 14 MiB is free but inside a segment with a live block: release_cached_blocks cannot cudaFree it, and a 24 MiB
  // segment does not fit next to it (20 + 24 = 44 > 40): OOM although reserved − allocated = 14 MiB.
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 14 * kMiB);
  EXPECT_FALSE(allocator.allocate(24 * kMiB, 0).has_value());
  EXPECT_EQ(allocator.stats().cuda_free_calls, 0);
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * kMiB);
}

TEST(AllocatorMaxSplit, ReleaseAvailableFreesOnlyOneLargeEnoughOversizeBlock) {
  CachingAllocator allocator = make_allocator(100 * kMiB, 32 * kMiB);
  const BlockHandle p = must_allocate(allocator, 40 * kMiB);  // 40 MiB segment, ≥ max_split: never split
  const BlockHandle q = must_allocate(allocator, 36 * kMiB);  // 36 MiB segment
  allocator.free(p);
  allocator.free(q);
  must_allocate(allocator, 30 * kMiB);
  // 30 MiB < max_split may not take an oversize (≥ 32 MiB) cached block; cudaMalloc(30) fails (76 + 30 = 106 >
  // 100); release_available_cached_blocks frees the smallest cached block ≥ max(30, 32) = 32 MiB, the 36 MiB one
  // (one cudaFree); the retry fits (40 + 30 = 70 ≤ 100). The 40 MiB block stays cached.
  EXPECT_EQ(allocator.stats().cuda_free_calls, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 70 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 2);
  must_allocate(allocator, 34 * kMiB);
  // 34 MiB ≥ max_split may take the cached 40 MiB block (40 < 34 + kLargeBuffer = 54), unsplit: allocated counts
  // the block, 30 + 40 = 70 MiB, with no new cudaMalloc (still 3).
  EXPECT_EQ(allocator.stats().allocated_bytes, 70 * kMiB);
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 3);
}

TEST(AllocatorMaxSplit, OversizeBlockServesOnlyRequestsWithin20MiB) {
  CachingAllocator allocator = make_allocator(kGiB, 32 * kMiB);
  allocator.free(must_allocate(allocator, 60 * kMiB));  // cached 60 MiB oversize block
  must_allocate(allocator, 40 * kMiB);
  // 60 ≥ 40 + 20 = 60: too large to hand out, so a new 40 MiB segment: reserved 60 + 40 = 100 MiB.
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 2);
  EXPECT_EQ(allocator.stats().reserved_bytes, 100 * kMiB);
  must_allocate(allocator, 42 * kMiB);
  // 60 < 42 + 20 = 62: the cached block serves it whole; allocated 40 + 60 = 100 MiB, no new segment.
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 2);
  EXPECT_EQ(allocator.stats().allocated_bytes, 100 * kMiB);
}

TEST(AllocatorMaxSplit, ReleaseAvailableFreesSeveralOversizeBlocksLargestFirst) {
  CachingAllocator allocator = make_allocator(150 * kMiB, 32 * kMiB);
  const BlockHandle a = must_allocate(allocator, 34 * kMiB);
  const BlockHandle b = must_allocate(allocator, 36 * kMiB);
  const BlockHandle c = must_allocate(allocator, 38 * kMiB);
  allocator.free(a);
  allocator.free(b);
  allocator.free(c);
  // Cached: 34, 36 and 38 MiB (all oversize, whole segments): reserved 108 MiB.
  must_allocate(allocator, 48 * kMiB);
  // No cached block ≥ 48 MiB; cudaMalloc(48) fails (108 + 48 = 156 > 150); no single cached block ≥ max(48, 32),
  // so oversize blocks are freed largest first until 48 MiB are released: 38 (38 < 48), then 36 (74 ≥ 48). The
  // 34 MiB block stays. Retry: 34 + 48 = 82 ≤ 150.
  EXPECT_EQ(allocator.stats().cuda_free_calls, 2);
  EXPECT_EQ(allocator.stats().reserved_bytes, 82 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 2);
}

}  // namespace
}  // namespace fsdpsim
