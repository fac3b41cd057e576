// `fsdpsim exec --backend host --inject ... --collective-timeout ...` end to end: each injected fault ends the run
// with its report and a non-zero exit (no hang: the test runs under a ctest TIMEOUT), and bad specs are input errors
// (exit 2) naming the field.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include "tests/support/llama_shaped.h"
#include "tests/support/run_fsdpsim.h"

namespace {

using Result = ProgramResult;

Result run(const std::string& args) {
  return run_fsdpsim(args);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A Llama-shaped model small enough for 8 threads as ranks to run a step in well under a second (8 layers). Each
// test writes its own file: ctest runs the tests of this program in parallel processes, and one rewriting a shared
// file while another reads it made the reader see an empty model.
std::string small_model() {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string path = std::string(FSDPSIM_BINARY_DIR) + "/tests/exec/fault_cli_model." + test + ".yaml";
  std::ofstream(path) << llama_shaped_yaml(8);
  return path;
}

// One node of the default topology (8 GPUs, so 8 threads as ranks in one dp_shard group), one step.
std::string exec_args(const std::string& backend = "host") {
  return "exec --backend " + backend + " --model " + small_model() + " --set nodes=1 --steps 1 --bytes-scale 16384";
}

TEST(ExecFaultCli, StalledRankIsReportedWithWhoArrived) {
  const Result r = run(exec_args() + " --collective-timeout 500ms --inject stall:rank=3,op=ag.layer.2.mb0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // Ranks 0-2 and 4-7 reach the all-gather of layer 2 and wait 500 ms for rank 3, which stalls at it.
  EXPECT_TRUE(contains(r.output,
                       "'ag.layer.2.mb0' (all_gather over 'dp_shard' [0, 1, 2, 3, 4, 5, 6, 7], step 0) "
                       "did not complete within 500.00 ms: ranks 0, 1, 2, 4, 5, 6, 7 arrived; rank 3 "
                       "never arrived"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "rank 3: injected fault: stalled at op ")) << r.output;
  EXPECT_TRUE(contains(r.output, "fsdpsim: error: the run found 2 problem(s); see above")) << r.output;
}

TEST(ExecFaultCli, FailedAllocationIsSetAgainstTheSimulatorsPeak) {
  const Result r = run(exec_args() + " --inject oom:rank=0,op=fwd.layer.5.mb0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::regex report(
      "rank 0: out of memory \\(an injected fault\\): allocating [0-9.]+ [KMG]?i?B for buffer "
      "[0-9]+ '[^']+' \\(activation\\) in op [0-9]+ 'fwd\\.layer\\.5\\.mb0' \\(step 0\\) failed "
      "with [0-9.]+ [KMG]iB in use \\([^)]*activation [^)]*\\); the simulator predicted a peak "
      "of ([0-9.]+ [KMG]iB) for this schedule");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, report)) << r.output;
  // The prediction quoted is the simulator's own peak for the same job, as `fsdpsim simulate` reports it.
  const Result sim = run("simulate --model " + small_model() + " --set nodes=1");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  EXPECT_TRUE(contains(sim.output, "peak allocated  " + m[1].str() + " at")) << m[1] << "\n" << sim.output;
  EXPECT_TRUE(contains(r.output, "fsdpsim: error: the run found 1 problem(s); see above")) << r.output;
}

TEST(ExecFaultCli, BadInjectSpecsAreInputErrorsNamingTheField) {
  Result r = run(exec_args() + " --inject stall:rank=x,op=ag.layer.2.mb0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "fsdpsim: error: --inject stall:rank=x,op=ag.layer.2.mb0: 'rank': is 'x', not a "
                       "rank (give a whole number from 0, e.g. rank=3)"))
      << r.output;
  r = run(exec_args() + " --inject stall:rank=0,op=ag.layer.99.mb0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "'op': 'ag.layer.99.mb0' names no op of the schedule")) << r.output;
  r = run(exec_args() + " --inject oom:rank=8,op=fwd.layer.5.mb0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "'rank': is 8 but the run has 8 ranks (use a rank from 0 to 7)")) << r.output;
  r = run(exec_args() + " --collective-timeout 5");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "'--collective-timeout'")) << r.output;
  EXPECT_TRUE(contains(r.output, "e.g. --collective-timeout 5s")) << r.output;
  r = run(exec_args("cuda") + " --inject stall:rank=0,op=ag.layer.2.mb0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "'--inject': injects faults into the host backend only (drop --inject, or run with "
                       "--backend host)"))
      << r.output;
}

TEST(ExecFaultCli, CleanRunWithATimeoutExitsZero) {
  const Result r = run(exec_args() + " --collective-timeout 5s");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
