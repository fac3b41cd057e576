// One host rank's memory: poison, tags and writer checksums catch every kind of bad read, and the byte accounting
// is the caching-allocator model's.
#include <gtest/gtest.h>

#include "exec/host/host_memory.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& part) {
  for (const auto& s : list) {
    if (s.find(part) != std::string::npos) return true;
  }
  return false;
}

constexpr int64_t kCapacity = int64_t{1} << 40;

struct Fixture {
  Schedule s = testing::tiny_schedule();
  HostPlan plan = make_host_plan(s, 1);
  ProblemLog log{2};
  RankMemory memory{s, plan, 2, AllocatorConfig{kCapacity, false, 0}, log};
  const Op& ag = s.ops[0];
  const Op& fwd = s.ops[1];
};

TEST(RankMemory, ReadBeforeWriteIsAMissingDependency) {
  Fixture f;
  f.memory.setup_persistent();
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));  // allocated, still poison
  std::vector<uint32_t> values;
  EXPECT_FALSE(f.memory.read(BufferId(1), 0, 1, f.fwd, values));
  EXPECT_EQ(values.size(), 100u);  // the caller still gets the region's length
  EXPECT_TRUE(contains(f.log.list(),
                       "rank 2: op 1 'fwd.layer.0' read buffer 1 'params.layer.0' before it was "
                       "written: a missing dependency (100 of 100 words were poison)"))
      << ::testing::PrintToString(f.log.list());
}

TEST(RankMemory, WrittenDataReadsBackWithItsValues) {
  Fixture f;
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));
  std::vector<uint32_t> in(100);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i * 3);
  f.memory.write(BufferId(1), 0, 1, f.ag, in);
  std::vector<uint32_t> out;
  EXPECT_TRUE(f.memory.read(BufferId(1), 0, 1, f.fwd, out));
  EXPECT_EQ(out, in);
  EXPECT_EQ(f.log.count(), 0u);
}

TEST(RankMemory, ReadAfterReleaseIsReported) {
  Fixture f;
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));
  f.memory.write_pattern(BufferId(1), {0}, f.ag, 0);
  f.memory.release(BufferId(1), f.fwd);
  std::vector<uint32_t> out;
  EXPECT_FALSE(f.memory.read(BufferId(1), 0, 1, f.s.ops[2], out));
  EXPECT_TRUE(contains(f.log.list(), "op 2 'bwd.layer.0' read buffer 1 'params.layer.0' while it was not allocated"));
}

TEST(RankMemory, CorruptedWordIsCaughtByTheWritersChecksum) {
  Fixture f;
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));
  f.memory.write_pattern(BufferId(1), {0}, f.ag, 0);
  // Same tag (this allocation's), different value: only the checksum the writer recorded can tell.
  f.memory.corrupt_word_for_test(BufferId(1), 7, make_word(buffer_tag(BufferId(1), 1), 12345));
  std::vector<uint32_t> out;
  EXPECT_FALSE(f.memory.read(BufferId(1), 0, 1, f.fwd, out));
  EXPECT_TRUE(contains(f.log.list(),
                       "read buffer 1 'params.layer.0' whose data do not match what op 0 "
                       "'ag.layer.0' wrote (corrupted"))
      << ::testing::PrintToString(f.log.list());
}

TEST(RankMemory, DataOfAnEarlierAllocationIsStale) {
  Fixture f;
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));  // generation 1
  f.memory.write_pattern(BufferId(1), {0}, f.ag, 0);
  f.memory.corrupt_word_for_test(BufferId(1), 0,
                                 make_word(buffer_tag(BufferId(1), 0), 1));  // a word tagged with generation 0
  std::vector<uint32_t> out;
  EXPECT_FALSE(f.memory.read(BufferId(1), 0, 1, f.fwd, out));
  EXPECT_TRUE(contains(f.log.list(),
                       "holding stale data of another buffer or an earlier allocation: a missing "
                       "dependency (1 of 100 words had a foreign tag)"));
}

TEST(RankMemory, WriteToAReleasedBufferIsReported) {
  Fixture f;
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));
  f.memory.release(BufferId(1), f.fwd);
  f.memory.write_pattern(BufferId(1), {0}, f.ag, 0);
  EXPECT_TRUE(contains(f.log.list(), "op 0 'ag.layer.0' wrote buffer 1 'params.layer.0' while it was not allocated"));
}

TEST(RankMemory, PersistentBuffersStartValid) {
  Fixture f;
  f.memory.setup_persistent();
  std::vector<uint32_t> out;
  EXPECT_TRUE(f.memory.read(BufferId(0), 0, 1, f.ag, out));  // the param shard holds the model's state
  EXPECT_TRUE(f.memory.read(BufferId(4), 0, 1, f.s.ops[3], out));
  EXPECT_EQ(f.log.count(), 0u);
}

TEST(RankMemory, AccountingFollowsTheAllocatorModel) {
  Fixture f;
  f.memory.setup_persistent();
  // Two persistent 100 B buffers, each rounded to 512 B (small pool, split off a 2 MiB segment): 1,024 B.
  EXPECT_EQ(f.memory.allocated_bytes(), 1024);
  f.memory.begin_step(0);
  f.memory.allocate(BufferId(1), f.ag, StreamId(1));   // 400 B → 512 B: 1,536
  f.memory.allocate(BufferId(2), f.fwd, StreamId(0));  // 50 B → 512 B: 2,048, the peak, reached by op 1
  f.memory.release(BufferId(1), f.fwd);                // 1,536
  const MemoryPeak peak = f.memory.peak();
  EXPECT_EQ(peak.bytes, 2048);
  EXPECT_EQ(peak.op, OpId(1));
  EXPECT_EQ(peak.breakdown[static_cast<size_t>(BufferCategory::param_shard)], 512);
  EXPECT_EQ(peak.breakdown[static_cast<size_t>(BufferCategory::gathered_param)], 512);
  EXPECT_EQ(peak.breakdown[static_cast<size_t>(BufferCategory::activation)], 512);
  EXPECT_EQ(f.memory.allocated_bytes(), 1536);
}

TEST(RankMemory, AllocatedBytesCountAWholeUnsplitBlock) {
  // PyTorch (and the simulator) count a block's size: a 20,000,000 B request rounds to 20,000,256 B (512 B
  // multiples), is above 10 MiB so its segment is rounded to 2 MiB: 10 × 2,097,152 = 20,971,520 B; the remainder
  // 971,264 B is not above 1 MiB, so the block is not split and all 20,971,520 B count as allocated, while the sum
  // over live buffers of their rounded sizes is 20,000,256 B.
  Schedule s = testing::tiny_schedule();
  s.buffers[1].size_bytes = 20'000'000;
  const HostPlan plan = make_host_plan(s, 1 << 20);
  ProblemLog log(0);
  RankMemory memory(s, plan, 0, AllocatorConfig{kCapacity, false, 0}, log);
  memory.allocate(BufferId(1), s.ops[0], StreamId(1));
  EXPECT_EQ(memory.allocated_bytes(), 20'971'520);
  EXPECT_EQ(memory.live_rounded_bytes(), 20'000'256);
}

TEST(RankMemory, AllocatorModelOutOfMemoryIsReportedOnceAndStillCounted) {
  // A 1 MiB capacity cannot hold the 2 MiB segment a small request needs (the small pool's segment size).
  Schedule s = testing::tiny_schedule();
  const HostPlan plan = make_host_plan(s, 1);
  ProblemLog log(0);
  RankMemory memory(s, plan, 0, AllocatorConfig{int64_t{1} << 20, false, 0}, log);
  memory.allocate(BufferId(1), s.ops[0], StreamId(1));
  memory.allocate(BufferId(2), s.ops[1], StreamId(0));
  ASSERT_EQ(log.count(), 1u) << ::testing::PrintToString(log.list());
  EXPECT_EQ(log.list()[0],
            "rank 0: the caching-allocator model has no room for buffer 1 'params.layer.0' (400 B) "
            "allocated by op 0: the rank would run out of memory "
            "(HostOptions::allocator_capacity_bytes)");
  EXPECT_EQ(memory.allocated_bytes(), 1024);  // 512 + 512 B counted without blocks, as the simulator counts them
}

TEST(ProblemLog, KeepsTheFirstProblemsAndCountsTheRest) {
  ProblemLog log(5, 3);
  for (int i = 0; i < 5; ++i) log.add("p" + std::to_string(i));
  const auto list = log.list();
  ASSERT_EQ(list.size(), 4u);  // 3 kept + 1 line for the 2 dropped
  EXPECT_EQ(list[0], "rank 5: p0");
  EXPECT_EQ(list[3], "rank 5: 2 more problems not listed");
  EXPECT_EQ(log.count(), 5u);
}

}  // namespace
}  // namespace fsdpsim
