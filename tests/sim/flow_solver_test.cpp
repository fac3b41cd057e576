#include "sim/flow_solver.h"

#include <gtest/gtest.h>

namespace fsdpsim {
namespace {

// One load of 1 wire byte per byte on link 0; on links 0 and 1; of 2 bytes on link 0.
const LinkLoad kLink0[] = {{0, 1.0}};
const LinkLoad kLinks01[] = {{0, 1.0}, {1, 1.0}};
const LinkLoad kLink0Twice[] = {{0, 2.0}};

std::vector<double> solve(std::vector<FlowLink> links, std::vector<Flow> flows) {
  return solve_max_min(links, flows);
}

TEST(FlowSolver, AloneAFlowRunsAtItsCap) {
  // Cap 40 on a link of 100: the cap binds.
  const auto r = solve({FlowLink{100}}, {Flow{40, kLink0}});
  EXPECT_DOUBLE_EQ(r[0], 40);
}

TEST(FlowSolver, EqualFlowsShareALinkEqually) {
  const auto r = solve({FlowLink{100}}, {Flow{100, kLink0}, Flow{100, kLink0}});
  EXPECT_DOUBLE_EQ(r[0], 50);
  EXPECT_DOUBLE_EQ(r[1], 50);
}

TEST(FlowSolver, MaxMinGivesTheLeftoverToUnconstrainedFlows) {
  // Three flows on link 0 (capacity 90); flow 2 also crosses link 1 (capacity 10). Flow 2 is frozen at 10 by link 1;
  // flows 0 and 1 then share the remaining 80 of link 0: 40 each.
  const auto r = solve({FlowLink{90}, FlowLink{10}}, {Flow{1000, kLink0}, Flow{1000, kLink0}, Flow{1000, kLinks01}});
  EXPECT_DOUBLE_EQ(r[2], 10);
  EXPECT_DOUBLE_EQ(r[0], 40);
  EXPECT_DOUBLE_EQ(r[1], 40);
}

TEST(FlowSolver, WeightsCountWireBytesPerFlowByte) {
  // A flow that puts 2 wire bytes per byte on the link and one that puts 1: equal rates x with 2x + x = 90 → 30.
  const auto r = solve({FlowLink{90}}, {Flow{1000, kLink0Twice}, Flow{1000, kLink0}});
  EXPECT_DOUBLE_EQ(r[0], 30);
  EXPECT_DOUBLE_EQ(r[1], 30);
}

TEST(FlowSolver, FlowWithoutLinksRunsAtItsCap) {
  const auto r = solve({FlowLink{1}}, {Flow{7, {}}});
  EXPECT_DOUBLE_EQ(r[0], 7);
}

TEST(FlowSolver, ASolverReusedAcrossChangesGivesWhatAFreshOneGives) {
  // The engine keeps one solver and meets the same sets of transfers again and again; a remembered answer must be
  // the fresh one, and a change of the links must not return a stale one.
  MaxMinSolver reused;
  std::vector<double> rates;
  const std::vector<FlowLink> wide{FlowLink{90}, FlowLink{10}};
  const std::vector<FlowLink> narrow{FlowLink{60}, FlowLink{10}};
  const std::vector<Flow> three{Flow{1000, kLink0}, Flow{1000, kLink0}, Flow{1000, kLinks01}};
  const std::vector<Flow> two{Flow{1000, kLink0}, Flow{1000, kLink0Twice}};
  for (int round = 0; round < 3; ++round) {
    reused.solve(wide, three, rates);
    EXPECT_EQ(rates, solve(wide, three));
    reused.solve(wide, two, rates);
    EXPECT_EQ(rates, solve(wide, two));
    reused.solve(narrow, three, rates);
    EXPECT_EQ(rates, solve(narrow, three));  // link 0 at 60: flow 2 at 10, flows 0 and 1 at 25
    EXPECT_DOUBLE_EQ(rates[0], 25);
  }
}

}  // namespace
}  // namespace fsdpsim
