// Profiler traces: device kernels reduced to step time, busy times and exposed communication, on a hand-made trace
// whose answer is derived below. (No trace of a real run is committed yet: none has been recorded on a GPU.)
#include "report/profiler_trace.h"

#include <gtest/gtest.h>

#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

// Two ProfilerStep ranges on the GPU; in the second (1000-2000 us):
//   compute kernels  1000-1400, 1300-1600 (overlapping: union 1000-1600), 1800-1900
//   NCCL all-gather  1100-1200 (under compute), 1550-1700 (1600-1700 exposed)
//   NCCL reduce-scatter 1650-1850 (1700-1800 exposed; 1650-1700 overlaps the all-gather)
//   a kernel of the first step (100-200) and a CPU op are ignored.
const char* const kTrace = R"JSON({"traceEvents": [
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 900},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#2", "ts": 1000, "dur": 1000},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16", "ts": 100, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1000, "dur": 5000},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16", "ts": 1000, "dur": 400},
  {"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel", "ts": 1300, "dur": 300},
  {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": 1800, "dur": 100},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "ts": 1100, "dur": 100},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "ts": 1550, "dur": 150},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "ts": 1650, "dur": 200}
]})JSON";

TEST(ProfilerTrace, TheLastStepsKernelsGiveBusyAndExposedTimes) {
  const TraceStep t = read_profiler_trace(kTrace, "t.json");
  EXPECT_EQ(t.step_name, "ProfilerStep#2");
  EXPECT_EQ(t.kernels, 6);
  EXPECT_NEAR(t.step_time_s, 1000e-6, 1e-12);
  EXPECT_NEAR(t.compute_busy_s, (600 + 100) * 1e-6, 1e-12);  // 1000-1600 and 1800-1900
  EXPECT_NEAR(t.comm_busy_s, (100 + 300) * 1e-6, 1e-12);     // 1100-1200 and 1550-1850
  EXPECT_NEAR(t.exposed_comm_s, (1800 - 1600) * 1e-6, 1e-12);
  EXPECT_EQ(t.collectives.at("all_gather").kernels, 2);
  EXPECT_NEAR(t.collectives.at("all_gather").busy_s, 250e-6, 1e-12);
  EXPECT_NEAR(t.collectives.at("reduce_scatter").busy_s, 200e-6, 1e-12);
}

TEST(ProfilerTrace, WithoutStepRangesTheWholeTraceIsTheStep) {
  const TraceStep t = read_profiler_trace(R"([{"cat": "kernel", "name": "gemm", "ts": 10, "dur": 5},
                                              {"cat": "kernel", "name": "ncclKernel_AllReduce", "ts": 20, "dur": 10}])",
                                          "a.json");
  EXPECT_EQ(t.step_name, "whole trace");
  EXPECT_NEAR(t.step_time_s, 20e-6, 1e-12);
  EXPECT_NEAR(t.exposed_comm_s, 10e-6, 1e-12);
  EXPECT_EQ(nccl_kernel_kind("ncclDevKernel_SendRecv(...)"), "send_recv");
  EXPECT_EQ(nccl_kernel_kind("void at::native::elementwise_kernel"), "");
}

TEST(ProfilerTrace, WhatIsNotATraceWithKernelsSaysSo) {
  EXPECT_HAS(error_of([] { (void)read_profiler_trace("{\"traceEvents\": [", "t.json"); }),
             "t.json: 'traceEvents': not JSON");
  EXPECT_HAS(error_of([] { (void)read_profiler_trace("{\"x\": 1}", "t.json"); }), "no traceEvents list");
  EXPECT_HAS(error_of([] {
               (void)read_profiler_trace(R"({"traceEvents": [{"cat": "cpu_op", "ts": 1, "dur": 2}]})", "t.json");
             }),
             "the trace has no GPU kernels");
}

}  // namespace
}  // namespace fsdpsim
