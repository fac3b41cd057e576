// Rounding, segment sizes, configuration errors and handle misuse of the caching-allocator model.
// Constants (c10/cuda/CUDACachingAllocator.cpp): kMinBlockSize 512 B, kSmallSize 1 MiB, kSmallBuffer 2 MiB,
// kLargeBuffer 20 MiB, kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "common/units.h"
#include "memory/caching_allocator.h"

namespace fsdpsim {
namespace {

AllocatorConfig config_with_capacity(int64_t capacity_bytes) {
  AllocatorConfig config;
  config.capacity_bytes = capacity_bytes;
  return config;
}

TEST(AllocatorSizes, RoundSizeAtTheBoundaries) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512);      // below kMinBlockSize → 512
  EXPECT_EQ(CachingAllocator::round_size(512), 512);    // already a multiple of 512
  EXPECT_EQ(CachingAllocator::round_size(513), 1024);   // ⌈513 / 512⌉ = 2 → 1024
  EXPECT_EQ(CachingAllocator::round_size(kMiB), kMiB);  // 1 MiB = 2048 × 512
  // 1 MiB + 1 → ⌈1048577 / 512⌉ = 2049 → 2049 × 512 = 1049088 = 1 MiB + 512.
  EXPECT_EQ(CachingAllocator::round_size(kMiB + 1), kMiB + 512);
  // 10 MiB − 1 = 10485759 → ⌈10485759 / 512⌉ = 20480 → 20480 × 512 = 10 MiB.
  EXPECT_EQ(CachingAllocator::round_size(10 * kMiB - 1), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::round_size(10 * kMiB), 10 * kMiB);
  // 10 MiB + 1 → 20481 × 512 = 10 MiB + 512.
  EXPECT_EQ(CachingAllocator::round_size(10 * kMiB + 1), 10 * kMiB + 512);
}

TEST(AllocatorSizes, SegmentSizeAtTheBoundaries) {
  // get_allocation_size: ≤ 1 MiB → kSmallBuffer (2 MiB); < 10 MiB → kLargeBuffer (20 MiB); else ⌈size / 2 MiB⌉.
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(1)), 2 * kMiB);  // 512 B
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(512)), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(513)), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(kMiB)), 2 * kMiB);       // = kSmallSize
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(kMiB + 1)), 20 * kMiB);  // 1 MiB + 512
  // round_size(10 MiB − 1) is exactly 10 MiB, which is not < kMinLargeAlloc: ⌈10 / 2⌉ × 2 MiB = 10 MiB.
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(10 * kMiB - 1)), 10 * kMiB);
  EXPECT_EQ(CachingAllocator::segment_size(10 * kMiB - 512), 20 * kMiB);  // the largest request below 10 MiB
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(10 * kMiB)), 10 * kMiB);
  // 10 MiB + 512 → ⌈(10 MiB + 512) / 2 MiB⌉ = 6 → 12 MiB.
  EXPECT_EQ(CachingAllocator::segment_size(CachingAllocator::round_size(10 * kMiB + 1)), 12 * kMiB);
}

TEST(AllocatorSizes, OneByteTakes512BytesOfASmallSegment) {
  CachingAllocator allocator(config_with_capacity(kGiB));
  ASSERT_TRUE(allocator.allocate(1, 0).has_value());
  const AllocatorStats& s = allocator.stats();
  EXPECT_EQ(s.allocated_bytes, 512);      // round_size(1)
  EXPECT_EQ(s.reserved_bytes, 2 * kMiB);  // one kSmallBuffer segment
  // Small pool: the remainder 2 MiB − 512 ≥ kMinBlockSize is split off and cached inside a segment with a live
  // block: 2097152 − 512 = 2096640 inactive split bytes.
  EXPECT_EQ(s.inactive_split_bytes, 2 * kMiB - 512);
  EXPECT_EQ(s.segments, 1);
  EXPECT_EQ(s.cuda_malloc_calls, 1);
}

TEST(AllocatorSizes, TenMiBGetsItsOwnExactSegment) {
  CachingAllocator allocator(config_with_capacity(kGiB));
  ASSERT_TRUE(allocator.allocate(10 * kMiB, 0).has_value());
  // 10 MiB is not < kMinLargeAlloc: segment = 10 MiB, nothing left to split.
  EXPECT_EQ(allocator.stats().reserved_bytes, 10 * kMiB);
  EXPECT_EQ(allocator.stats().allocated_bytes, 10 * kMiB);
  EXPECT_EQ(allocator.stats().inactive_split_bytes, 0);
}

TEST(AllocatorSizes, SmallRemainderOfALargeBlockIsNotSplitOff) {
  CachingAllocator allocator(config_with_capacity(kGiB));
  // 19.5 MiB (20447232 B, a multiple of 512) is ≥ kMinLargeAlloc, so its segment is ⌈19.5 / 2⌉ × 2 MiB = 20 MiB.
  // The remainder 0.5 MiB is not > kSmallSize (1 MiB), so the whole 20 MiB block is handed out: allocated_bytes
  // counts the block, 20 MiB, not the request.
  ASSERT_TRUE(allocator.allocate(19 * kMiB + kMiB / 2, 0).has_value());
  EXPECT_EQ(allocator.stats().allocated_bytes, 20 * kMiB);
  EXPECT_EQ(allocator.stats().reserved_bytes, 20 * kMiB);
}

TEST(AllocatorSizes, ZeroBytesHoldNoMemory) {
  CachingAllocator allocator(config_with_capacity(kGiB));
  const auto handle = allocator.allocate(0, 0);
  ASSERT_TRUE(handle.has_value());
  EXPECT_EQ(*handle, kZeroByteBlock);
  EXPECT_EQ(allocator.stats().allocated_bytes, 0);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0);
  allocator.free(*handle);  // a no-op, as freeing nullptr is
  EXPECT_EQ(allocator.stats().cuda_malloc_calls, 0);
}

TEST(AllocatorSizes, DoubleFreeAndNegativeSizeAreCallerBugs) {
  CachingAllocator allocator(config_with_capacity(kGiB));
  const auto handle = allocator.allocate(4 * kMiB, 0);
  ASSERT_TRUE(handle.has_value());
  allocator.free(*handle);
  try {
    allocator.free(*handle);
    FAIL() << "double free was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("not live (double free?)"), std::string::npos) << e.what();
  }
  // The block of the freed handle is handed out again, but the old handle stays stale (generation differs).
  const auto again = allocator.allocate(4 * kMiB, 0);
  ASSERT_TRUE(again.has_value());
  EXPECT_NE(*again, *handle);
  EXPECT_THROW(allocator.free(*handle), InternalError);
  EXPECT_THROW((void)allocator.allocate(-1, 0), InternalError);
}

TEST(AllocatorConfigErrors, CapacityMustBePositive) {
  try {
    CachingAllocator allocator(config_with_capacity(0));
    FAIL() << "capacity 0 was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.key(), "capacity_bytes");
    EXPECT_NE(what.find("<allocator config>"), std::string::npos) << what;
    EXPECT_NE(what.find("is 0"), std::string::npos) << what;
    EXPECT_NE(what.find("a positive number of bytes"), std::string::npos) << what;
  }
}

TEST(AllocatorConfigErrors, MaxSplitSizeBelow20MiBIsRejected) {
  AllocatorConfig config = config_with_capacity(kGiB);
  config.max_split_size_bytes = 16 * kMiB;  // PyTorch: max_split_size_mb must be ≥ kLargeBuffer / 1 MiB = 20
  try {
    CachingAllocator allocator(config);
    FAIL() << "max_split_size 16 MiB was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(e.key().find("max_split_size"), std::string::npos) << e.key();
    EXPECT_NE(what.find("16777216 bytes"), std::string::npos) << what;  // 16 × 1048576
    EXPECT_NE(what.find("0 for unlimited or at least 20 MiB"), std::string::npos) << what;
  }
  config.max_split_size_bytes = 20 * kMiB;  // the smallest valid value
  EXPECT_NO_THROW(CachingAllocator{config});
}

}  // namespace
}  // namespace fsdpsim
