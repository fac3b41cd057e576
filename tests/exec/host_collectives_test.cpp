// The host collectives as functions (results derived by hand, like nccl-tests' expected buffers) and the
// rendezvous that ranks meet at.
#include <gtest/gtest.h>

#include <thread>

#include "exec/host/host_collectives.h"
#include "exec/host/host_plan.h"
#include "exec/host/host_world.h"

namespace fsdpsim {
namespace {

Op collective(OpKind kind) {
  Op op;
  op.id = OpId(12);
  op.name = "coll";
  op.kind = kind;
  op.group = GroupId(0);
  return op;
}

CollectiveCall call_for(const Op& op, int32_t rank, int64_t chunk) {
  CollectiveCall c;
  c.op = &op;
  c.group_name = "dp";
  c.members = {0, 1};
  c.rank = rank;
  c.step = 1;
  c.chunk_words = chunk;
  c.in_words = collective_in_words(op.kind, chunk, 2);
  return c;
}

std::vector<std::shared_ptr<const Contribution>> inputs(const Op& op, std::vector<uint32_t> r0,
                                                        std::vector<uint32_t> r1) {
  return {make_contribution(0, op.id, 1, std::move(r0)), make_contribution(1, op.id, 1, std::move(r1))};
}

TEST(HostCollectives, AllGatherConcatenatesInGroupOrder) {
  const Op op = collective(OpKind::all_gather);
  // Chunk 2: rank 0 sends [1, 2], rank 1 sends [3, 4]; every member receives [1, 2, 3, 4].
  const CollectiveOutcome out = run_collective(call_for(op, 1, 2), inputs(op, {1, 2}, {3, 4}));
  EXPECT_TRUE(out.problems.empty());
  EXPECT_EQ(out.values, (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_EQ(out.wrong, 0);
}

TEST(HostCollectives, ReduceScatterSumsThisMembersChunk) {
  const Op op = collective(OpKind::reduce_scatter);
  // Rank 1 keeps chunk 1 (words 2, 3): [3 + 30, 4 + 40] = [33, 44].
  const CollectiveOutcome out = run_collective(call_for(op, 1, 2), inputs(op, {1, 2, 3, 4}, {10, 20, 30, 40}));
  EXPECT_EQ(out.values, (std::vector<uint32_t>{33, 44}));
  EXPECT_TRUE(out.problems.empty());
}

TEST(HostCollectives, AllReduceSumsModulo2To20) {
  const Op op = collective(OpKind::all_reduce);
  // [0xFFFFF + 1, 5 + 6] = [2^20 → 0, 11]: the value bits wrap exactly.
  const CollectiveOutcome out = run_collective(call_for(op, 0, 2), inputs(op, {0xFFFFF, 5}, {1, 6}));
  EXPECT_EQ(out.values, (std::vector<uint32_t>{0, 11}));
}

TEST(HostCollectives, AllToAllExchangesBlocks) {
  const Op op = collective(OpKind::all_to_all);
  // Rank 0 receives block 0 of every member: rank 0's [1, 2] then rank 1's [5, 6].
  const CollectiveOutcome out = run_collective(call_for(op, 0, 2), inputs(op, {1, 2, 3, 4}, {5, 6, 7, 8}));
  EXPECT_EQ(out.values, (std::vector<uint32_t>{1, 2, 5, 6}));
  EXPECT_EQ(expected_output_word(call_for(op, 0, 2), inputs(op, {1, 2, 3, 4}, {5, 6, 7, 8}), 3), 6u);
}

TEST(HostCollectives, EmulatedMemberStandsInForEveryMember) {
  const Op op = collective(OpKind::reduce_scatter);
  CollectiveCall c = call_for(op, 0, 2);
  c.emulated = true;
  // Both members hold [1, 2, 3, 4]; rank 0 keeps chunk 0 summed twice: [2, 4].
  const CollectiveOutcome out = run_collective(c, {make_contribution(0, op.id, 1, {1, 2, 3, 4})});
  EXPECT_TRUE(out.problems.empty());
  EXPECT_EQ(out.values, (std::vector<uint32_t>{2, 4}));
}

TEST(HostCollectives, WrongRendezvousGroupIsReported) {
  const Op op = collective(OpKind::all_gather);
  // Rank 2 posted where member 1 belongs (a rendezvous keyed to the wrong group instance).
  const CollectiveOutcome out = run_collective(
      call_for(op, 0, 2), {make_contribution(0, op.id, 1, {1, 2}), make_contribution(2, op.id, 1, {3, 4})});
  ASSERT_EQ(out.problems.size(), 1u);
  EXPECT_NE(out.problems[0].find("op 12 'coll' (all_gather over 'dp' [0, 1], step 1): rank 2 contributed in the "
                                 "place of member 1: a wrong rendezvous group"),
            std::string::npos)
      << out.problems[0];
  EXPECT_EQ(out.values, (std::vector<uint32_t>{0, 0, 0, 0}));  // nothing moved
}

TEST(HostCollectives, CorruptedContributionIsReported) {
  const Op op = collective(OpKind::all_reduce);
  auto bad = std::make_shared<Contribution>(*make_contribution(1, op.id, 1, {5, 6}));
  bad->values[1] = 7;  // changed after it was posted
  const CollectiveOutcome out = run_collective(call_for(op, 0, 2), {make_contribution(0, op.id, 1, {1, 2}), bad});
  ASSERT_EQ(out.problems.size(), 1u);
  EXPECT_NE(out.problems[0].find("the data rank 1 contributed changed after it was posted: corrupted data"),
            std::string::npos);
}

TEST(HostCollectives, ReduceScatterMembersCheckOnlyTheChunkTheyRead) {
  const Op op = collective(OpKind::reduce_scatter);
  // Rank 1's input in chunks of 2 words: [5, 6 | 7, 8]; word 3 (chunk 1, which only member 1 reads) changes after
  // posting. Member 0 reads chunk 0 of each input and is unaffected; member 1 reports the corruption.
  auto bad = std::make_shared<Contribution>(*make_contribution(1, op.id, 1, {5, 6, 7, 8}, 2));
  bad->values[3] = 9;
  const std::vector<std::shared_ptr<const Contribution>> in{make_contribution(0, op.id, 1, {1, 2, 3, 4}, 2), bad};
  const CollectiveOutcome member0 = run_collective(call_for(op, 0, 2), in);
  EXPECT_TRUE(member0.problems.empty()) << ::testing::PrintToString(member0.problems);
  EXPECT_EQ(member0.values, (std::vector<uint32_t>{6, 8}));  // [1 + 5, 2 + 6]
  const CollectiveOutcome member1 = run_collective(call_for(op, 1, 2), in);
  ASSERT_EQ(member1.problems.size(), 1u);
  EXPECT_NE(member1.problems[0].find("corrupted data"), std::string::npos);
}

TEST(HostCollectives, MismatchedOpStepOrLengthIsReported) {
  const Op op = collective(OpKind::all_reduce);
  const CollectiveOutcome out = run_collective(
      call_for(op, 0, 2), {make_contribution(0, op.id, 1, {1, 2}), make_contribution(1, OpId(13), 0, {1, 2, 3})});
  ASSERT_EQ(out.problems.size(), 2u);
  EXPECT_NE(out.problems[0].find("rank 1 contributed op 13 of step 0: a mismatched collective"), std::string::npos);
  EXPECT_NE(out.problems[1].find("rank 1 contributed 3 words where 2 were expected"), std::string::npos);
}

TEST(HostWorld, MembersMeetAndReadEachOthersData) {
  HostWorld world(10'000'000'000);
  const RendezvousKey key{GroupId(0), 0, OpId(12), 1};
  RendezvousResult a;
  std::thread other([&] { a = world.exchange(key, {0, 1}, 0, make_contribution(0, OpId(12), 1, {1})); });
  const RendezvousResult b = world.exchange(key, {0, 1}, 1, make_contribution(1, OpId(12), 1, {2}));
  other.join();
  ASSERT_EQ(a.status, RendezvousStatus::complete);
  ASSERT_EQ(b.status, RendezvousStatus::complete);
  EXPECT_EQ(a.contributions[1]->values, (std::vector<uint32_t>{2}));
  EXPECT_EQ(b.contributions[0]->values, (std::vector<uint32_t>{1}));
}

TEST(HostWorld, MissingMembersTimeOutAndAreNamed) {
  HostWorld world(50'000'000);  // 50 ms
  const RendezvousResult r =
      world.exchange(RendezvousKey{GroupId(0), 0, OpId(3), 0}, {0, 1, 2}, 0, make_contribution(0, OpId(3), 0, {}));
  EXPECT_EQ(r.status, RendezvousStatus::timed_out);
  EXPECT_EQ(r.missing, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(r.first_report);
}

TEST(HostWorld, AbortReleasesWaitersAtOnce) {
  HostWorld world(600'000'000'000);  // ten minutes: only the abort can end the wait
  std::thread waiter([&] {
    const RendezvousResult r =
        world.exchange(RendezvousKey{GroupId(0), 0, OpId(1), 0}, {0, 1}, 0, make_contribution(0, OpId(1), 0, {}));
    EXPECT_EQ(r.status, RendezvousStatus::aborted);
  });
  world.abort();
  waiter.join();
  EXPECT_TRUE(world.aborted());
}

}  // namespace
}  // namespace fsdpsim
