// Injected faults as given (--inject text) and as resolved against a schedule, and the wording every fault report
// shares: memory in use by category, the simulator's predicted peak, lists of ranks. Every bad spec is an error that
// names the field and shows what would be valid.
#include <gtest/gtest.h>

#include "common/error.h"
#include "exec/fault_report.h"
#include "exec/host/host_faults.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs parse_host_fault on a spec that must fail; returns the error.
ConfigError parse_error(const std::string& spec) {
  try {
    (void)parse_host_fault(spec);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError for '" << spec << "'";
  return ConfigError("none");
}

ConfigError resolve_error(const std::vector<HostFault>& faults) {
  try {
    (void)resolve_host_faults(testing::tiny_schedule(), faults, 4, 2);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return ConfigError("none");
}

TEST(ParseHostFault, StallNamesTheRankAndTheOp) {
  const HostFault f = parse_host_fault("stall:rank=3,op=ag.layer.2.mb0");
  EXPECT_EQ(f.kind, HostFaultKind::stall_rank);
  EXPECT_EQ(f.rank, 3);
  EXPECT_EQ(f.op, "ag.layer.2.mb0");
  EXPECT_EQ(f.step, 0);      // the first step unless given
  EXPECT_EQ(f.stall_ns, 0);  // until the run stops unless given
  EXPECT_EQ(f.origin, "--inject stall:rank=3,op=ag.layer.2.mb0");
}

TEST(ParseHostFault, StallForADurationInAGivenStep) {
  const HostFault f = parse_host_fault("stall:rank=1,op=7,step=1,for=2s");
  EXPECT_EQ(f.op, "7");
  EXPECT_EQ(f.step, 1);
  EXPECT_EQ(f.stall_ns, 2'000'000'000);  // 2 s = 2·10⁹ ns
}

TEST(ParseHostFault, OomWithABuffer) {
  const HostFault f = parse_host_fault("oom:rank=0,op=fwd.layer.5.mb0,buffer=act.layer.5.mb0");
  EXPECT_EQ(f.kind, HostFaultKind::fail_alloc);
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.op, "fwd.layer.5.mb0");
  EXPECT_EQ(f.buffer, "act.layer.5.mb0");
}

TEST(ParseHostFault, BadSpecsNameTheFieldAndTheFix) {
  ConfigError e = parse_error("stal:rank=3,op=x");
  EXPECT_EQ(e.key(), "kind");
  EXPECT_EQ(e.where().file, "--inject stal:rank=3,op=x");
  EXPECT_TRUE(has(e.problem(), "is 'stal' (did you mean 'stall'?)")) << e.what();
  EXPECT_TRUE(has(e.fix(), "use stall (a rank that never arrives")) << e.what();

  e = parse_error("stall:rank=x,op=a");
  EXPECT_EQ(e.key(), "rank");
  EXPECT_TRUE(has(e.problem(), "is 'x', not a rank")) << e.what();
  EXPECT_TRUE(has(e.fix(), "give a whole number from 0, e.g. rank=3")) << e.what();

  e = parse_error("oom:rank=0");
  EXPECT_EQ(e.key(), "op");
  EXPECT_EQ(e.problem(), "is missing");
  EXPECT_TRUE(has(e.fix(), "oom:rank=0,op=fwd.layer.5.mb0")) << e.what();

  e = parse_error("stall:rank=0,op=a,buffer=b");
  EXPECT_EQ(e.key(), "buffer");
  EXPECT_TRUE(has(e.problem(), "is not a field of a stall fault")) << e.what();
  EXPECT_TRUE(has(e.fix(), "the fields are rank, op, step, for")) << e.what();

  e = parse_error("oom:rank=0,op=a,for=1s");
  EXPECT_EQ(e.key(), "for");
  EXPECT_TRUE(has(e.fix(), "the fields are rank, op, step, buffer")) << e.what();

  e = parse_error("stall:rank=0,rank=1,op=a");
  EXPECT_EQ(e.key(), "rank");
  EXPECT_EQ(e.problem(), "is given twice");

  e = parse_error("rank=0,op=a");
  EXPECT_EQ(e.key(), "kind");
  EXPECT_EQ(e.problem(), "has no kind");

  e = parse_error("stall:rank=0,op");
  EXPECT_EQ(e.key(), "op");
  EXPECT_EQ(e.problem(), "is not key=value");

  e = parse_error("stall:rank=0,op=a,for=2");
  EXPECT_EQ(e.key(), "for");
  EXPECT_TRUE(has(e.fix(), "e.g. for=2s")) << e.what();

  e = parse_error("stall:rank=0,op=a,step=-1");
  EXPECT_EQ(e.key(), "step");
  EXPECT_TRUE(has(e.problem(), "is '-1', not a step")) << e.what();
}

TEST(ResolveHostFaults, NamesAndIdsBecomeIdsPerRank) {
  const Schedule s = testing::tiny_schedule();
  HostFault stall;
  stall.rank = 2;
  stall.op = "rs.layer.0";
  HostFault oom;
  oom.kind = HostFaultKind::fail_alloc;
  oom.rank = 0;
  oom.op = "1";  // fwd.layer.0 by id
  oom.step = 1;
  const auto by_rank = resolve_host_faults(s, {stall, oom}, 4, 2);
  ASSERT_EQ(by_rank.size(), 4u);
  ASSERT_EQ(by_rank[2].size(), 1u);
  EXPECT_EQ(by_rank[2][0].op, OpId(3));  // rs.layer.0 is op 3
  ASSERT_EQ(by_rank[0].size(), 1u);
  EXPECT_EQ(by_rank[0][0].op, OpId(1));
  EXPECT_EQ(by_rank[0][0].step, 1);
  EXPECT_EQ(by_rank[0][0].buffer, BufferId(2));  // fwd.layer.0 allocates only buffer 2, act.layer.0
  EXPECT_TRUE(by_rank[1].empty());
  EXPECT_TRUE(by_rank[3].empty());
}

TEST(ResolveHostFaults, FaultsThatNameNothingAreErrors) {
  HostFault f;
  f.op = "ag.layer.1";
  ConfigError e = resolve_error({f});
  EXPECT_EQ(e.where().file, "<host options>");  // no origin: the options' field is named
  EXPECT_EQ(e.key(), "faults[0].op");
  EXPECT_TRUE(has(e.problem(), "'ag.layer.1' names no op of the schedule (did you mean 'ag.layer.0'?)")) << e.what();
  EXPECT_TRUE(has(e.fix(), "an id from 0 to 3")) << e.what();

  f = HostFault{};
  f.op = "ag.layer.0";
  f.rank = 4;
  f.origin = "--inject stall:rank=4,op=ag.layer.0";
  e = resolve_error({f});
  EXPECT_EQ(e.where().file, "--inject stall:rank=4,op=ag.layer.0");
  EXPECT_EQ(e.key(), "rank");
  EXPECT_EQ(e.problem(), "is 4 but the run has 4 ranks");
  EXPECT_EQ(e.fix(), "use a rank from 0 to 3");

  f = HostFault{};
  f.op = "ag.layer.0";
  f.step = 2;
  e = resolve_error({f});
  EXPECT_EQ(e.key(), "faults[0].step");
  EXPECT_EQ(e.problem(), "is 2 but the run has 2 steps");

  f = HostFault{};
  f.kind = HostFaultKind::fail_alloc;
  f.op = "rs.layer.0";  // frees the gradients, allocates nothing
  e = resolve_error({f});
  EXPECT_EQ(e.key(), "faults[0].op");
  EXPECT_EQ(e.problem(), "op 'rs.layer.0' allocates no buffer, so no allocation of it can fail");
  EXPECT_EQ(e.fix(), "name an op that allocates one, e.g. 'ag.layer.0'");  // the next one, wrapping around

  f.op = "fwd.layer.0";
  f.buffer = "act.layer.1";
  e = resolve_error({f});
  EXPECT_EQ(e.key(), "faults[0].buffer");
  EXPECT_TRUE(has(e.problem(),
                  "'act.layer.1' is not a buffer op 'fwd.layer.0' allocates (did you mean "
                  "'act.layer.0'?)"))
      << e.what();
  EXPECT_EQ(e.fix(), "name one of act.layer.0, or leave 'buffer' out to fail the first");
}

TEST(FaultReport, MemoryInUseListsCategoriesLargestFirst) {
  CategoryBytes bytes{};
  bytes[static_cast<size_t>(BufferCategory::activation)] = 2 * kGiB;
  bytes[static_cast<size_t>(BufferCategory::param_shard)] = kGiB;
  bytes[static_cast<size_t>(BufferCategory::gathered_param)] = kGiB;
  // 2 + 1 + 1 = 4 GiB; activation first (largest), then the two 1 GiB categories in category order (param_shard is
  // declared before gathered_param).
  EXPECT_EQ(describe_memory_in_use(4 * kGiB, bytes),
            "4.0 GiB in use (activation 2.0 GiB, param_shard 1.0 GiB, gathered_param 1.0 GiB)");
  EXPECT_EQ(describe_memory_in_use(0, CategoryBytes{}), "0 B in use");
}

TEST(FaultReport, PredictedPeakWithItsOpAndBreakdown) {
  const Schedule s = testing::tiny_schedule();
  MemoryPeak peak;
  peak.bytes = 2048;
  peak.op = OpId(1);
  peak.breakdown[static_cast<size_t>(BufferCategory::activation)] = 512;
  peak.breakdown[static_cast<size_t>(BufferCategory::param_shard)] = 1536;
  EXPECT_EQ(describe_predicted_peak(s, peak),
            "; the simulator predicted a peak of 2.0 KiB for this schedule (reached at op 'fwd.layer.0': param_shard "
            "1.5 KiB, activation 512 B)");
  EXPECT_EQ(describe_predicted_peak(s, std::nullopt), "; no simulator prediction was available");
}

TEST(FaultReport, RanksAndPredictionsComputedOnce) {
  EXPECT_EQ(describe_ranks({3}), "rank 3");
  EXPECT_EQ(describe_ranks({0, 1, 2}), "ranks 0, 1, 2");
  EXPECT_EQ(describe_ranks({}), "no rank");
  int calls = 0;
  PredictedPeak predicted([&calls]() -> std::optional<MemoryPeak> {
    ++calls;
    return MemoryPeak{4096, 0, 0, OpId(2), {}};
  });
  EXPECT_EQ(predicted.get()->bytes, 4096);
  EXPECT_EQ(predicted.get()->bytes, 4096);
  EXPECT_EQ(calls, 1);
  PredictedPeak failing([]() -> std::optional<MemoryPeak> { throw Error("no topology"); });
  EXPECT_FALSE(failing.get().has_value());  // a report must not fail because the prediction could not be made
  PredictedPeak none(nullptr);
  EXPECT_FALSE(none.get().has_value());
}

}  // namespace
}  // namespace fsdpsim
