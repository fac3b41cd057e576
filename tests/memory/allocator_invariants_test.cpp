// Properties of the caching-allocator model over long pseudo-random call sequences, for each configuration:
// counters stay consistent, the same calls give the same counters (determinism), and once every block is freed
// empty_cache gives every byte back (freed blocks coalesce into whole segments / whole mapped page runs).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "common/units.h"
#include "memory/caching_allocator.h"

namespace fsdpsim {
namespace {

struct Case {
  std::string name;
  bool expandable = false;
  int64_t max_split_size_bytes = 0;
};

// Names the case in test listings instead of gtest's byte dump.
[[maybe_unused]] void PrintTo(const Case& c, std::ostream* out) {
  *out << c.name;
}

class AllocatorInvariants : public testing::TestWithParam<Case> {};

AllocatorConfig config_for(const Case& c) {
  AllocatorConfig config;
  config.capacity_bytes = 2 * kGiB;  // small enough that some requests hit the release-and-retry path
  config.expandable_segments = c.expandable;
  config.max_split_size_bytes = c.max_split_size_bytes;
  return config;
}

// A request size: mostly small and mid-sized tensors, sometimes a large one (std::mt19937_64 output is fixed by
// the standard, so the sequence is the same everywhere).
int64_t draw_size(std::mt19937_64& rng) {
  const uint64_t kind = rng() % 10;
  if (kind < 4) return static_cast<int64_t>(rng() % (1 << 20)) + 1;          // ≤ 1 MiB: small pool
  if (kind < 8) return static_cast<int64_t>(rng() % (9 << 20)) + (1 << 20);  // 1–10 MiB
  return static_cast<int64_t>(rng() % (200 << 20)) + (10 << 20);             // 10–210 MiB
}

void expect_consistent(const AllocatorStats& s, int64_t capacity_bytes) {
  EXPECT_GE(s.allocated_bytes, 0);
  EXPECT_LE(s.allocated_bytes, s.reserved_bytes);
  EXPECT_LE(s.reserved_bytes, capacity_bytes);
  EXPECT_GE(s.inactive_split_bytes, 0);
  EXPECT_LE(s.inactive_split_bytes, s.reserved_bytes - s.allocated_bytes);
  EXPECT_GE(s.peak_allocated_bytes, s.allocated_bytes);
  EXPECT_GE(s.peak_reserved_bytes, s.reserved_bytes);
}

bool same(const AllocatorStats& a, const AllocatorStats& b) {
  return a.allocated_bytes == b.allocated_bytes && a.reserved_bytes == b.reserved_bytes &&
         a.peak_allocated_bytes == b.peak_allocated_bytes && a.peak_reserved_bytes == b.peak_reserved_bytes &&
         a.cuda_malloc_calls == b.cuda_malloc_calls && a.cuda_free_calls == b.cuda_free_calls &&
         a.segments == b.segments && a.inactive_split_bytes == b.inactive_split_bytes;
}

// Runs 20,000 calls on `allocator`, frees what is left, and returns the counters after the last free.
AllocatorStats run_sequence(CachingAllocator& allocator, int64_t capacity_bytes, int* failures) {
  std::mt19937_64 rng(20240611);
  std::vector<BlockHandle> live;
  for (int step = 0; step < 20000; ++step) {
    if (!live.empty() && rng() % 100 < 50) {
      const size_t victim = static_cast<size_t>(rng() % live.size());
      allocator.free(live[victim]);
      live[victim] = live.back();
      live.pop_back();
    } else {
      const int32_t stream = static_cast<int32_t>(rng() % 3);
      const std::optional<BlockHandle> h = allocator.allocate(draw_size(rng), stream);
      if (h) {
        live.push_back(*h);
      } else {
        ++*failures;
      }
    }
    if (step % 997 == 0) expect_consistent(allocator.stats(), capacity_bytes);
  }
  for (const BlockHandle h : live) allocator.free(h);
  return allocator.stats();
}

TEST_P(AllocatorInvariants, CountersStayConsistentAndEverythingComesBack) {
  const AllocatorConfig config = config_for(GetParam());
  CachingAllocator first(config);
  CachingAllocator second(config);
  int failures_first = 0;
  int failures_second = 0;
  const AllocatorStats end_first = run_sequence(first, config.capacity_bytes, &failures_first);
  const AllocatorStats end_second = run_sequence(second, config.capacity_bytes, &failures_second);
  EXPECT_TRUE(same(end_first, end_second)) << "same calls, different counters";
  EXPECT_EQ(failures_first, failures_second);
  // Nothing is live: no allocated bytes and no split segment (every freed block merged with its free neighbours).
  EXPECT_EQ(end_first.allocated_bytes, 0);
  EXPECT_EQ(end_first.inactive_split_bytes, 0);
  EXPECT_GT(end_first.cuda_malloc_calls, 0);
  first.empty_cache();
  EXPECT_EQ(first.stats().reserved_bytes, 0);
  EXPECT_EQ(first.stats().segments, 0);
  // Without expandable segments each cudaMalloc'd segment was cudaFree'd once. (Page maps and unmaps need not
  // pair up: one map of three pages may be unmapped in two runs.)
  if (!GetParam().expandable) {
    EXPECT_EQ(first.stats().cuda_malloc_calls, first.stats().cuda_free_calls);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, AllocatorInvariants,
                         testing::Values(Case{"default", false, 0}, Case{"max_split_64MiB", false, 64 * kMiB},
                                         Case{"expandable", true, 0}),
                         [](const testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace fsdpsim
