// The host backend's memory layout: data words, scaled sizes, regions of shared buffers, collective pieces, and
// group membership in Megatron's rank order.
#include <gtest/gtest.h>

#include <set>

#include "exec/host/host_plan.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

TEST(HostWords, TagsNeverLookLikePoisonAndValuesWrapAt20Bits) {
  std::set<uint32_t> tags;
  for (int32_t b = 0; b < 2000; ++b) {
    for (int32_t g = 0; g < 3; ++g) {
      const uint32_t t = buffer_tag(BufferId(b), g);
      EXPECT_LT(t, kPoisonTag);
      tags.insert(t);
    }
  }
  // 6,000 draws from 4,095 tags: far more than one distinct tag (a constant tag would catch nothing).
  EXPECT_GT(tags.size(), 1000u);
  // 0x12345 | tag 0x7 << 20 = 0x712345; a value of 2^20 + 5 keeps only its low 20 bits (5).
  EXPECT_EQ(make_word(0x7, 0x12345), 0x712345u);
  EXPECT_EQ(make_word(0x7, (1u << 20) + 5), 0x700005u);
  EXPECT_EQ(word_tag(kPoisonWord), kPoisonTag);
  EXPECT_NE(pattern_value(1, 0), pattern_value(2, 0));
  EXPECT_LE(pattern_value(1, 7), kValueMask);
}

TEST(HostWords, ScaledWordsRoundUpToWholeRealBytesAndWords) {
  // 4,096 B at scale 1,024 → 4 real bytes → 1 word; 4,097 B → 5 real bytes → 2 words; 0 B still gets 1 word.
  EXPECT_EQ(scaled_words(4096, 1024), 1);
  EXPECT_EQ(scaled_words(4097, 1024), 2);
  EXPECT_EQ(scaled_words(0, 1024), 1);
  // 400 B at scale 1 → 100 words.
  EXPECT_EQ(scaled_words(400, 1), 100);
}

TEST(HostPlan, TinyScheduleUsesWholeBuffers) {
  const Schedule s = testing::tiny_schedule();
  const HostPlan plan = make_host_plan(s, 1);
  // Scale 1: param shard 100 B → 25 words, gathered 400 B → 100, activations 50 B → ceil(50 / 4) = 13.
  EXPECT_EQ(plan.buffers[0].words, 25);
  EXPECT_EQ(plan.buffers[1].words, 100);
  EXPECT_EQ(plan.buffers[2].words, 13);
  ASSERT_EQ(plan.buffers[0].regions.size(), 1u);
  // The all-gather sends 100 B (25 words) per rank to 4 members: 100 words out, from and into whole buffers.
  const CollectivePlan& ag = plan.collectives[0];
  EXPECT_EQ(ag.chunk_words, 25);
  EXPECT_EQ(ag.in.words, 25);
  EXPECT_EQ(ag.out.words, 100);
  ASSERT_EQ(ag.in.pieces.size(), 1u);
  EXPECT_EQ(ag.in.pieces[0].buffer, BufferId(0));
  EXPECT_EQ(ag.out.pieces[0].buffer, BufferId(1));
  // The reduce-scatter receives 100 B (25 words): its input is 4 × 25 words of the gradient buffer.
  const CollectivePlan& rs = plan.collectives[3];
  EXPECT_EQ(rs.chunk_words, 25);
  EXPECT_EQ(rs.in.words, 100);
  EXPECT_EQ(rs.out.words, 25);
  EXPECT_TRUE(plan.collectives[1].in.pieces.empty());  // not a collective
}

// A whole-model shard of 300 B that two units' all-gathers (100 B each) read slices of, as Megatron-FSDP's
// param_shard buffer.
Schedule shared_shard_schedule() {
  Schedule s = testing::tiny_schedule();
  s.buffers[0].size_bytes = 300;
  s.buffers.push_back(Buffer{BufferId(5), "params.layer.1", BufferCategory::gathered_param, 400, false, false});
  Op ag1 = s.ops[0];
  ag1.id = OpId(4);
  ag1.name = "ag.layer.1";
  ag1.unit = 1;
  ag1.allocs = {BufferId(5)};
  ag1.writes = {BufferId(5)};
  Op use1 = s.ops[1];
  use1.id = OpId(5);
  use1.name = "fwd.layer.1";
  use1.unit = 1;
  use1.deps = {OpId(4)};
  use1.reads = {BufferId(5), BufferId(0)};
  use1.allocs = {};
  use1.writes = {};
  use1.frees = {BufferId(5)};
  s.ops.push_back(ag1);
  s.ops.push_back(use1);
  return s;
}

TEST(HostPlan, CollectivesGetTheirOwnRegionOfASharedBuffer) {
  const Schedule s = shared_shard_schedule();
  const HostPlan plan = make_host_plan(s, 1);
  // Unit 0's slice (25 words) comes first (op 0 uses it first), unit 1's next, and the remaining 300 / 4 − 50 = 25
  // words form a region of their own.
  const BufferLayout& shard = plan.buffers[0];
  ASSERT_EQ(shard.regions.size(), 3u);
  EXPECT_EQ(shard.regions[0].offset, 0);
  EXPECT_EQ(shard.regions[1].offset, 25);
  EXPECT_EQ(shard.regions[2].offset, 50);
  EXPECT_EQ(shard.regions[2].words, 25);
  EXPECT_EQ(shard.words, 75);
  EXPECT_EQ(shard.region_units, (std::vector<int32_t>{0, 1, kAnyUnit}));
  EXPECT_EQ(plan.collectives[4].in.pieces[0].first_region, 1);
  EXPECT_EQ(plan.collectives[4].in.pieces[0].regions, 1);
  // A forward op of unit 1 touches unit 1's slice only; an optimizer op touches all of it.
  EXPECT_EQ(op_regions(plan, s.ops[5], BufferId(0)), (std::vector<int32_t>{1}));
  Op optimizer = s.ops[5];
  optimizer.phase = Phase::optim;
  EXPECT_EQ(op_regions(plan, optimizer, BufferId(0)), (std::vector<int32_t>{0, 1, 2}));
  Op other = s.ops[5];
  other.unit = 7;  // no region of its own
  EXPECT_EQ(op_regions(plan, other, BufferId(0)), (std::vector<int32_t>{0, 1, 2}));
}

TEST(HostPlan, BucketPaddingBecomesZeroPiece) {
  Schedule s = testing::tiny_schedule();
  s.ops[3].send_bytes = 480;  // a 480 B bucket (120 B per member) over the 400 B gradient buffer
  s.ops[3].recv_bytes = 120;
  const HostPlan plan = make_host_plan(s, 1);
  // Chunk 120 B = 30 words, input 4 × 30 = 120 words: the buffer's 100 words, then 20 words of padding.
  const CollectiveSide& in = plan.collectives[3].in;
  EXPECT_EQ(in.words, 120);
  ASSERT_EQ(in.pieces.size(), 2u);
  EXPECT_EQ(in.pieces[0].words, 100);
  EXPECT_EQ(in.pieces[1].buffer, BufferId::none());
  EXPECT_EQ(in.pieces[1].words, 20);
}

TEST(HostPlan, CollectiveWithoutBuffersUsesScratch) {
  Schedule s = testing::tiny_schedule();
  s.ops[0].reads.clear();
  s.ops[0].writes.clear();
  s.ops[0].allocs.clear();
  s.ops[1].frees.clear();
  const HostPlan plan = make_host_plan(s, 1);
  EXPECT_TRUE(plan.collectives[0].in.scratch);
  EXPECT_TRUE(plan.collectives[0].out.scratch);
}

TEST(HostPlan, GroupMembersFollowMegatronRankOrder) {
  // dp_shard of 8 with stride 1 on 16 ranks: rank 9 is in the second node's group, 8 … 15.
  EXPECT_EQ(group_members(Group{"dp_shard", 8, 1}, 9), (std::vector<int32_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  // dp_outer of 2 with stride 8: rank 9 pairs with rank 1 (position (9 / 8) % 2 = 1, first = 9 − 8 = 1).
  EXPECT_EQ(group_members(Group{"dp_outer", 2, 8}, 9), (std::vector<int32_t>{1, 9}));
  // tp of 2 with stride 1: rank 5 pairs with rank 4.
  EXPECT_EQ(group_members(Group{"tp", 2, 1}, 5), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(describe_members("tp", {4, 5}), "'tp' [4, 5]");
}

}  // namespace
}  // namespace fsdpsim
