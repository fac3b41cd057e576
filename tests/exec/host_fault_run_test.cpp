// Faults injected into host runs of the hand-built one-unit schedule (4 ranks): each gives exactly the report
// expected — the op, the group, who arrived and who did not, the buffer and the memory in use by category, the
// simulator's prediction — and the run ends with every thread joined. These tests run under a ctest TIMEOUT: a fault
// that made the executor hang fails here instead of hanging CI.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>

#include "common/error.h"
#include "exec/host/host_runner.h"
#include "tests/schedule/tiny_schedule.h"

namespace fsdpsim {
namespace {

// Threads of this process now (Linux: /proc/self/status), to check that a failed run leaves none behind. A thread is
// started and joined first, so that helper threads a runtime starts with the first thread (a sanitizer's) are
// already counted in the baseline.
int thread_count() {
  std::thread([] {}).join();
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// The tiny schedule's buffers are a few hundred bytes: keep them whole. The timeout is short enough to keep each
// test under a second and long enough for every healthy rank to arrive even in a sanitizer build; no assertion
// depends on how long anything took.
HostOptions options_with(std::vector<HostFault> faults) {
  HostOptions o;
  o.bytes_scale = 1;
  o.timeout_ns = 500'000'000;  // 500 ms
  o.faults = std::move(faults);
  return o;
}

HostFault stall_at(int32_t rank, const std::string& op) {
  HostFault f;
  f.rank = rank;
  f.op = op;
  return f;
}

HostFault oom_at(int32_t rank, const std::string& op, int32_t step) {
  HostFault f;
  f.kind = HostFaultKind::fail_alloc;
  f.rank = rank;
  f.op = op;
  f.step = step;
  return f;
}

// The one problem that starts with "rank R: " + `text` for some R, or "" (with a failure) when there is not exactly
// one.
std::string the_problem(const ExecResult& r, const std::string& text) {
  std::string found;
  int count = 0;
  for (const std::string& p : r.problems) {
    const size_t colon = p.find(": ");
    if (colon != std::string::npos && p.compare(colon + 2, std::string::npos, text) == 0) {
      found = p;
      ++count;
    }
  }
  EXPECT_EQ(count, 1) << "'" << text << "' in " << ::testing::PrintToString(r.problems);
  return found;
}

TEST(HostFaults, RankThatNeverArrivesAtItsAllGather) {
  const int threads_before = thread_count();
  const ExecResult r = run_host(testing::tiny_schedule(), options_with({stall_at(3, "ag.layer.0")}));
  // Ranks 0, 1 and 2 post to the all-gather's rendezvous and wait 500 ms for rank 3, which stalls at that op: one of
  // them reports (once for the group), naming both sides; rank 3 says it was stalled on purpose. Nothing else: the
  // other ranks stop without reporting the consequences.
  ASSERT_EQ(r.problems.size(), 2u) << ::testing::PrintToString(r.problems);
  const std::string report = the_problem(
      r,
      "op 0 'ag.layer.0' (all_gather over 'dp_shard' [0, 1, 2, 3], step 0) did not complete within 500.00 ms: "
      "ranks 0, 1, 2 arrived; rank 3 never arrived");
  EXPECT_NE(report.rfind("rank 3:", 0), 0u) << report;  // reported by a rank that arrived
  bool noted = false;
  for (const std::string& p : r.problems) {
    noted = noted || (p.rfind("rank 3: injected fault: stalled at op 0 'ag.layer.0' (step 0) for ", 0) == 0 &&
                      p.find(", until the run stopped") != std::string::npos);
  }
  EXPECT_TRUE(noted) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(thread_count(), threads_before);  // 4 interpreter threads + 4 × 3 stream workers, all joined
}

TEST(HostFaults, RankStalledInComputeIsMissedAtItsNextCollective) {
  const ExecResult r = run_host(testing::tiny_schedule(), options_with({stall_at(2, "fwd.layer.0")}));
  // Every rank completes the all-gather; rank 2 then stalls in its forward, so it never reaches the reduce-scatter
  // that the others enter after their backward.
  ASSERT_EQ(r.problems.size(), 2u) << ::testing::PrintToString(r.problems);
  (void)the_problem(r,
                    "op 3 'rs.layer.0' (reduce_scatter over 'dp_shard' [0, 1, 2, 3], step 0) did not complete "
                    "within 500.00 ms: ranks 0, 1, 3 arrived; rank 2 never arrived");
}

TEST(HostFaults, SlowRankWithinTheTimeoutFinishesClean) {
  HostFault slow = stall_at(1, "ag.layer.0");
  slow.stall_ns = 20'000'000;  // 20 ms late, against a 2 s timeout: slow, not hung
  HostOptions o = options_with({slow});
  o.timeout_ns = 2'000'000'000;
  const ExecResult r = run_host(testing::tiny_schedule(), o);
  EXPECT_TRUE(r.problems.empty()) << ::testing::PrintToString(r.problems);
  ASSERT_EQ(r.run.steps.size(), 2u);
  EXPECT_EQ(r.run.steps.back().peak_allocated.bytes, 2048);  // as in a clean run (host_runner_test.cpp)
}

TEST(HostFaults, StallThatNoRankWaitsForStillEndsTheRun) {
  HostOptions o = options_with({stall_at(0, "rs.layer.0")});
  o.emulate = true;  // rank 0 alone: no peer waits for it, and no op depends on its reduce-scatter
  o.timeout_ns = 100'000'000;
  const int threads_before = thread_count();
  const ExecResult r = run_host(testing::tiny_schedule(), o);
  // The stalled rank gives up itself after three times the timeout: 3 × 100 ms = 300 ms.
  ASSERT_EQ(r.problems.size(), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.problems[0],
            "rank 0: op 3 'rs.layer.0' (step 0) did not finish within 300.00 ms: an injected stall "
            "that no other rank was waiting for; the run stops");
  EXPECT_EQ(thread_count(), threads_before);
}

TEST(HostFaults, WaitForAnOpNamesWhatItsStreamIsStuckIn) {
  HostOptions o = options_with({stall_at(0, "fwd.layer.0")});
  o.emulate = true;
  o.timeout_ns = 200'000'000;
  const ExecResult r = run_host(testing::tiny_schedule(), o);
  // The reduce-scatter's stream waits for the backward, which queues behind the stalled forward on the compute
  // stream; the wait gives up after 2 × 200 ms = 400 ms (the stall would give up after 3 × 200 ms) and names the
  // forward.
  ASSERT_EQ(r.problems.size(), 2u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.problems[0],
            "rank 0: stream 'rs' waited 400.00 ms for op 2 'bwd.layer.0' to finish, and it did not "
            "(stream 'compute' is still in op 1 'fwd.layer.0')");
  EXPECT_EQ(r.problems[1].rfind("rank 0: injected fault: stalled at op 1 'fwd.layer.0' (step 0) for ", 0), 0u)
      << r.problems[1];
}

TEST(HostFaults, FailedAllocationReportsTheBufferTheMemoryInUseAndThePrediction) {
  int predictions = 0;
  HostOptions o = options_with({oom_at(0, "fwd.layer.0", 0)});
  o.predicted_peak = [&predictions]() -> std::optional<MemoryPeak> {
    ++predictions;
    // The tiny schedule's predicted peak (host_runner_test.cpp derives the same 2,048 B measured): four 512 B blocks,
    // reached when the forward allocates its activations.
    MemoryPeak peak;
    peak.bytes = 2048;
    peak.op = OpId(1);
    for (const BufferCategory c : {BufferCategory::param_shard, BufferCategory::grad_shard,
                                   BufferCategory::gathered_param, BufferCategory::activation}) {
      peak.breakdown[static_cast<size_t>(c)] = 512;
    }
    return peak;
  };
  const int threads_before = thread_count();
  const ExecResult r = run_host(testing::tiny_schedule(), o);
  // When the forward allocates on rank 0, the persistent param and grad shards (100 B each, 512 B blocks) and the
  // all-gathered params it depends on (400 B → 512 B) are live: 3 × 512 B = 1,536 B = 1.5 KiB, the categories
  // equal, so in category order. The activations it asks for are 50 B.
  ASSERT_EQ(r.problems.size(), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.problems[0],
            "rank 0: out of memory (an injected fault): allocating 50 B for buffer 2 'act.layer.0' (activation) in "
            "op 1 'fwd.layer.0' (step 0) failed with 1.5 KiB in use (param_shard 512 B, grad_shard 512 B, "
            "gathered_param 512 B); the simulator predicted a peak of 2.0 KiB for this schedule (reached at op "
            "'fwd.layer.0': param_shard 512 B, grad_shard 512 B, gathered_param 512 B, activation 512 B)");
  EXPECT_EQ(predictions, 1);  // asked once, when the report needed it
  EXPECT_EQ(thread_count(), threads_before);
}

TEST(HostFaults, FailedAllocationInALaterStepOfANamedBuffer) {
  HostFault f = oom_at(2, "bwd.layer.0", 1);
  f.buffer = "grads.layer.0";
  const ExecResult r = run_host(testing::tiny_schedule(), options_with({f}));
  // Step 0 runs clean. In step 1 the backward allocates the gradients after the forward freed the gathered params
  // and while its activations are live: param_shard, grad_shard, activation, 512 B each = 1.5 KiB. No prediction was
  // given.
  ASSERT_EQ(r.problems.size(), 1u) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.problems[0],
            "rank 2: out of memory (an injected fault): allocating 400 B for buffer 3 'grads.layer.0' "
            "(unsharded_grad) in op 2 'bwd.layer.0' (step 1) failed with 1.5 KiB in use (param_shard 512 B, "
            "grad_shard 512 B, activation 512 B); no simulator prediction was available");
}

TEST(HostFaults, BadFaultIsAnInputErrorBeforeAnyThreadStarts) {
  HostFault f = stall_at(7, "ag.layer.0");
  const int threads_before = thread_count();
  try {
    (void)run_host(testing::tiny_schedule(), options_with({f}));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "faults[0].rank");
    EXPECT_EQ(e.problem(), "is 7 but the run has 4 ranks");
  }
  EXPECT_EQ(thread_count(), threads_before);
}

}  // namespace
}  // namespace fsdpsim
