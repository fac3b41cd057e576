// Typed ids of the IR (schedule/ir/ids.h): each kind of id is its own type, none converts to another or from an
// int without saying so, and an IdVector is indexed by its own kind only.
#include <gtest/gtest.h>

#include <sstream>
#include <type_traits>

#include "schedule/ir/ids.h"
#include "schedule/ir/ir.h"
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
