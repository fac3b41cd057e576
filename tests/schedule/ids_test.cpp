// Typed ids of the IR (schedule/ids.h): each kind of id is its own type, none converts to another or from an
// int without saying so, and an IdVector is indexed by its own kind only.
#include <gtest/gtest.h>

#include <sstream>
#include <type_traits>

#include "common/error.h"
#include "schedule/ids.h"
#include "schedule/ir.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

// The point of the types: mixing kinds, or passing a raw number, does not compile.
static_assert(!std::is_convertible_v<OpId, BufferId>);
static_assert(!std::is_convertible_v<BufferId, OpId>);
static_assert(!std::is_convertible_v<StreamId, GroupId>);
static_assert(!std::is_convertible_v<int32_t, OpId>);
static_assert(!std::is_convertible_v<OpId, int32_t>);
static_assert(!std::is_convertible_v<OpId, size_t>);
static_assert(std::is_constructible_v<OpId, int32_t>);  // explicitly, where a number is read from a file
static_assert(sizeof(OpId) == sizeof(int32_t));         // the engine's arrays stay as compact as before

template <class V, class I>
concept IndexableBy = requires(V v, I i) {
  v[i];
};
static_assert(IndexableBy<IdVector<OpId, int>, OpId>);
static_assert(!IndexableBy<IdVector<OpId, int>, BufferId>);

TEST(Ids, DefaultIsNoneAndNoneIsInvalid) {
  EXPECT_FALSE(OpId().valid());
  EXPECT_EQ(OpId(), OpId::none());
  EXPECT_EQ(OpId::none().value(), -1);
  EXPECT_TRUE(OpId(0).valid());
  EXPECT_EQ(BufferId(7).index(), 7u);
}

TEST(Ids, OrderAndTextFollowTheNumber) {
  EXPECT_LT(OpId(2), OpId(10));
  EXPECT_LT(GroupId::none(), GroupId(0));  // the world communicator (none) sorts before every group
  EXPECT_EQ(to_string(StreamId(3)), "3");
  std::ostringstream out;
  out << BufferId(12);
  EXPECT_EQ(out.str(), "12");
}

TEST(Ids, IdVectorIndexesAndKnowsItsIds) {
  IdVector<BufferId, int> sizes{10, 20, 30};
  EXPECT_EQ(sizes[BufferId(1)], 20);
  EXPECT_TRUE(sizes.contains(BufferId(2)));
  EXPECT_FALSE(sizes.contains(BufferId(3)));
  EXPECT_FALSE(sizes.contains(BufferId::none()));
  EXPECT_EQ(sizes.next_id(), BufferId(3));
  sizes.push_back(40);
  EXPECT_EQ(sizes[sizes.next_id().value() - 1], 40);  // plain positions still work, as in a std::vector
}

TEST(Ids, ReorderingOpsRenumbersTheirDependenciesAndPeers) {
  // 0 send (peer 2), 1 compute, 2 recv (peer 0, after 1): listed as 1, 2, 0 they become 0 compute, 1 recv, 2 send.
  Schedule s;
  s.ops.resize(3);
  for (int32_t i = 0; i < 3; ++i) s.ops[OpId(i)].id = OpId(i);
  s.ops[OpId(0)].kind = OpKind::send;
  s.ops[OpId(0)].peer = OpId(2);
  s.ops[OpId(0)].deps = {OpId(1)};
  s.ops[OpId(1)].name = "compute";
  s.ops[OpId(2)].kind = OpKind::recv;
  s.ops[OpId(2)].peer = OpId(0);
  s.ops[OpId(2)].deps = {OpId(1)};
  reorder_ops(s, {OpId(1), OpId(2), OpId(0)});
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(s.ops[OpId(i)].id, OpId(i));
  EXPECT_EQ(s.ops[OpId(0)].name, "compute");
  EXPECT_EQ(s.ops[OpId(1)].kind, OpKind::recv);
  EXPECT_EQ(s.ops[OpId(1)].peer, OpId(2));
  EXPECT_EQ(s.ops[OpId(1)].deps, std::vector<OpId>{OpId(0)});
  EXPECT_EQ(s.ops[OpId(2)].kind, OpKind::send);
  EXPECT_EQ(s.ops[OpId(2)].peer, OpId(1));
  EXPECT_EQ(s.ops[OpId(2)].deps, std::vector<OpId>{OpId(0)});
  // An order that is not a permutation is a bug in the caller.
  EXPECT_THROW(reorder_ops(s, {OpId(0), OpId(0), OpId(1)}), InternalError);
  EXPECT_THROW(reorder_ops(s, {OpId(0), OpId(1)}), InternalError);
}

TEST(Roles, EveryGroupRoleHasMegatronsNameAndParsesBack) {
  const std::vector<std::pair<GroupRole, std::string_view>> names{{GroupRole::tp, "tp"},
                                                                  {GroupRole::cp, "cp"},
                                                                  {GroupRole::ep, "ep"},
                                                                  {GroupRole::etp, "etp"},
                                                                  {GroupRole::dp_shard, "dp_shard"},
                                                                  {GroupRole::dp_outer, "dp_outer"},
                                                                  {GroupRole::edp, "edp"},
                                                                  {GroupRole::edp_outer, "edp_outer"},
                                                                  {GroupRole::pp, "pp"},
                                                                  {GroupRole::embd, "embd"}};
  for (const auto& [role, name] : names) {
    EXPECT_EQ(to_string(role), name);
    EXPECT_EQ(parse_group_role(name), role);
  }
  EXPECT_FALSE(parse_group_role("dp").has_value());
}

TEST(Roles, TheScheduleFindsItsGroupsByRoleAndItsComputeStream) {
  const Schedule s = testing::tiny_schedule();  // groups: dp_shard; streams: compute, ag, rs
  EXPECT_EQ(s.group_index(GroupRole::dp_shard), GroupId(0));
  EXPECT_FALSE(s.group_index(GroupRole::tp).valid());
  EXPECT_EQ(s.compute_stream(), StreamId(0));
  Schedule renamed = s;
  renamed.streams[0].name = "main";
  EXPECT_FALSE(renamed.compute_stream().valid());
}

}  // namespace
}  // namespace fsdpsim
