// expandable_segments:True in the caching-allocator model (PyTorch Note [Expandable Segments]): one segment per
// (stream, pool) mapped in pages of 2 MiB (small pool) or 20 MiB (large pool); a request that finds no cached block
// maps pages at the lowest address that fits, merging with a free block just before the unmapped range; blocks
// split whenever the remainder is ≥ 512 B; pages are unmapped only by empty_cache or an allocation retry.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "common/units.h"
#include "memory/caching_allocator.h"

namespace fsdpsim {
namespace {

CachingAllocator make_allocator(bool expandable, int64_t capacity_bytes = kGiB) {
  AllocatorConfig config;
  config.capacity_bytes = capacity_bytes;
  config.expandable_segments = expandable;
  return CachingAllocator(config);
}

BlockHandle must_allocate(CachingAllocator& allocator, int64_t size_bytes, int32_t stream = 0) {
  const std::optional<BlockHandle> handle = allocator.allocate(size_bytes, stream);
  EXPECT_TRUE(handle.has_value()) << "allocation of " << size_bytes << " bytes failed";
  return handle.value_or(kZeroByteBlock);
}

// Five pairs of 7 MiB and 9 MiB requests, the 7 MiB blocks freed, then a 12 MiB request (the interleaving case of
// AllocatorFragmentation in allocator_reuse_test.cpp, where the default settings end at 112 MiB reserved).
void run_interleaving(CachingAllocator& allocator) {
  std::vector<BlockHandle> sevens;
  for (int pair = 0; pair < 5; ++pair) {
    sevens.push_back(must_allocate(allocator, 7 * kMiB));
    must_allocate(allocator, 9 * kMiB);
  }
  for (const BlockHandle h : sevens) allocator.free(h);
  must_allocate(allocator, 12 * kMiB);
}

TEST(AllocatorExpandable, InterleavingReservesLessThanTheDefault) {
  CachingAllocator fixed = make_allocator(false);
  CachingAllocator expandable = make_allocator(true);
  run_interleaving(fixed);
  run_interleaving(expandable);
  // Expandable, in MiB, blocks written [live] (free): 7 maps page 1 → [7](13); 9 → [7][9](4); 7 maps page 2 onto
  // the 4 MiB tail → (24) → [7](17); 9 → [9](8); 7 → [7](1); 9 maps page 3 → (21) → [9](12); 7 → [7](5); 9 maps
  // page 4 → (25) → [9](16); 7 → [7](9); 9 → [9]. Four pages = 80 MiB, exactly the 80 MiB allocated. Freeing the
  // 7s leaves 7 MiB holes between live 9s; 12 MiB maps page 5 after the last 9 → [12](8): reserved 100 MiB.
  EXPECT_EQ(expandable.stats().reserved_bytes, 100 * kMiB);
  EXPECT_EQ(fixed.stats().reserved_bytes, 112 * kMiB);
  EXPECT_LT(expandable.stats().reserved_bytes, fixed.stats().reserved_bytes);
  // Both hold the same live bytes: 5 × 9 + 12 = 57 MiB.
  EXPECT_EQ(expandable.stats().allocated_bytes, 57 * kMiB);
  EXPECT_EQ(fixed.stats().allocated_bytes, 57 * kMiB);
  EXPECT_EQ(expandable.stats().cuda_malloc_calls, 5);     // five page maps
  EXPECT_EQ(expandable.stats().segments, 1);              // one segment for (stream 0, large pool)
  EXPECT_EQ(expandable.stats().inactive_split_bytes, 0);  // PyTorch leaves expandable segments out of it
  EXPECT_EQ(expandable.stats().peak_reserved_bytes, 100 * kMiB);
}

TEST(AllocatorExpandable, GrowingRequestsTileOntoFreedMemory) {
  // Note [Expandable Segments]: blocks of a slightly larger size after the first ones were freed.
  CachingAllocator fixed = make_allocator(false);
  CachingAllocator expandable = make_allocator(true);
  for (CachingAllocator* allocator : {&fixed, &expandable}) {
    std::vector<BlockHandle> twelves;
    for (int i = 0; i < 4; ++i) twelves.push_back(must_allocate(*allocator, 12 * kMiB));
    for (const BlockHandle h : twelves) allocator->free(h);
    for (int i = 0; i < 4; ++i) must_allocate(*allocator, 14 * kMiB);
  }
  // Default: four 12 MiB segments, then none fits 14 MiB: four 14 MiB segments, 48 + 56 = 104 MiB, 8 cudaMalloc.
  EXPECT_EQ(fixed.stats().reserved_bytes, 104 * kMiB);
  EXPECT_EQ(fixed.stats().cuda_malloc_calls, 8);
  // Expandable: 12 → page 1 [12](8); 12 → page 2 (28) → [12](16); 12 → [12](4); 12 → page 3 (24) → [12](12):
  // 60 MiB. Freed, the four blocks and the tail merge into one 60 MiB free block that holds 4 × 14 = 56 MiB.
  EXPECT_EQ(expandable.stats().reserved_bytes, 60 * kMiB);
  EXPECT_EQ(expandable.stats().cuda_malloc_calls, 3);
  EXPECT_EQ(expandable.stats().allocated_bytes, 56 * kMiB);
}

TEST(AllocatorExpandable, PagesAre2MiBSmallAnd20MiBLarge) {
  CachingAllocator allocator = make_allocator(true);
  must_allocate(allocator, 1);  // small pool: one 2 MiB page
  EXPECT_EQ(allocator.stats().reserved_bytes, 2 * kMiB);
  must_allocate(allocator, 30 * kMiB);  // large pool: ⌈30 / 20⌉ = 2 pages = 40 MiB (a plain segment: 30 MiB)
  EXPECT_EQ(allocator.stats().reserved_bytes, 42 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 2);  // (stream 0, small) and (stream 0, large)
  must_allocate(allocator, 30 * kMiB, 1);    // stream 1 gets its own segment: 2 more pages
  EXPECT_EQ(allocator.stats().reserved_bytes, 82 * kMiB);
  EXPECT_EQ(allocator.stats().segments, 3);
}

TEST(AllocatorExpandable, EmptyCacheUnmapsWholeFreePagesOnly) {
  CachingAllocator allocator = make_allocator(true);
  const BlockHandle a = must_allocate(allocator, 30 * kMiB);  // 2 pages: [a 30](10)
  const BlockHandle b = must_allocate(allocator, 10 * kMiB);  // takes the 10 MiB tail: [a 30][b 10]
  ASSERT_EQ(allocator.stats().reserved_bytes, 40 * kMiB);
  allocator.free(a);  // (30)[b 10]: page 1 (0–20 MiB) is wholly free, page 2 (20–40) holds 10 MiB of b
  EXPECT_EQ(allocator.stats().reserved_bytes, 40 * kMiB);  // free does not unmap
  allocator.empty_cache();
  // Page 1 is unmapped; the free 20–30 MiB stays mapped: reserved 40 − 20 = 20 MiB, one unmap.
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * kMiB);
  EXPECT_EQ(allocator.stats().cuda_free_calls, 1);
  EXPECT_EQ(allocator.stats().segments, 1);
  allocator.free(b);  // (20) over page 2
  allocator.empty_cache();
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  EXPECT_EQ(allocator.stats().cuda_free_calls, 2);
  EXPECT_EQ(allocator.stats().segments, 0);
  must_allocate(allocator, 30 * kMiB);  // a fresh segment maps 2 pages again
  EXPECT_EQ(allocator.stats().reserved_bytes, 40 * kMiB);
}

TEST(AllocatorExpandable, FailedMapReleasesFreePagesAndRetries) {
  CachingAllocator allocator = make_allocator(true, 60 * kMiB);
  const BlockHandle a = must_allocate(allocator, 30 * kMiB);  // pages 1–2: [a 30](10), reserved 40
  must_allocate(allocator, 30 * kMiB);                        // (10) + page 3 → [a 30][b 30], reserved 60 = capacity
  ASSERT_EQ(allocator.stats().reserved_bytes, 60 * kMiB);
  // A small request needs a 2 MiB page: 60 + 2 > 60 and nothing is free: out of memory.
  EXPECT_FALSE(allocator.allocate(kMiB, 0).has_value());
  allocator.free(a);
  must_allocate(allocator, kMiB);
  // The map fails, release_cached_blocks unmaps page 1 (0–20 MiB, wholly free; 20–30 stays mapped):
  // reserved 40, then the retry maps a 2 MiB small page: 42 MiB.
  EXPECT_EQ(allocator.stats().cuda_free_calls, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes, 42 * kMiB);
}

}  // namespace
}  // namespace fsdpsim
