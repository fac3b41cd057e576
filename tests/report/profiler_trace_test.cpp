// Profiler traces: device kernels reduced to step time, busy times and exposed communication, on a hand-made trace
// whose answer is derived below. (No trace of a real run is committed yet: none has been recorded on a GPU.)
#include "report/profiler_trace.h"

#include <gtest/gtest.h>

#include "builders/builder.h"
#include "model/model.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"
#include "topologies/hardware.h"

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

TEST(ProfilerTrace, NcclMetadataGivesCallSizesAndBusBandwidth) {
  // Two 8-rank all-gathers of 1 MiB bf16 each (In 65,536, Out 524,288 elements) taking 10 us and 30 us: 2 MiB in
  // 40 us, bus bytes 2 MiB × 7/8. A 4-rank all-reduce of 1,000 floats in 10 us: 4,000 bytes × 2 × 3/4. A kernel
  // without metadata (an older PyTorch) counts as a kernel but not as a size.
  const TraceStep t = read_profiler_trace(R"JSON({"traceEvents": [
    {"cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "ts": 0, "dur": 10,
     "args": {"Collective name": "_allgather_base", "In msg nelems": 65536, "Out msg nelems": 524288,
              "Group size": 8, "dtype": "BFloat16"}},
    {"cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "ts": 20, "dur": 30,
     "args": {"In msg nelems": 65536, "Out msg nelems": 524288, "Group size": 8, "dtype": "BFloat16"}},
    {"cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 60, "dur": 10,
     "args": {"In msg nelems": 1000, "Out msg nelems": 1000, "Group size": 4, "dtype": "Float"}},
    {"cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 80, "dur": 10,
     "args": {"In msg nelems": 1000, "Group size": 4, "dtype": "Float"}}
  ]})JSON",
                                          "t.json");
  ASSERT_EQ(t.collective_sizes.size(), 2u);
  const TraceCollectiveSize& ag = t.collective_sizes[0];
  EXPECT_EQ(ag.kind, "all_gather");
  EXPECT_EQ(ag.group_size, 8);
  EXPECT_EQ(ag.kernels, 2);
  EXPECT_EQ(ag.bytes, 2 * 1048576);
  EXPECT_NEAR(ag.bus_bw_bytes_per_s, 2.0 * 1048576 * 7 / 8 / 40e-6, 1e-3);
  const TraceCollectiveSize& ar = t.collective_sizes[1];
  EXPECT_EQ(ar.kind, "all_reduce");
  EXPECT_EQ(ar.kernels, 1);
  EXPECT_NEAR(ar.bus_bw_bytes_per_s, 4000.0 * 2 * 3 / 4 / 10e-6, 1e-6);
  EXPECT_EQ(t.collectives.at("all_reduce").kernels, 2);
}

TEST(ProfilerTrace, ComputeKernelsCountInTheirInnermostRangeAndTheOptimizerIsFound) {
  // layers.0 (0-100) holds layers.0.attn (10-40); a kernel at 20 is the attention's, one at 50 the layer's; the
  // optimizer's range holds two overlapping kernels (union 30 us); a kernel at 300 is in no range.
  const TraceStep t = read_profiler_trace(R"JSON({"traceEvents": [
    {"cat": "gpu_user_annotation", "name": "ProfilerStep#0", "ts": 0, "dur": 400},
    {"cat": "gpu_user_annotation", "name": "layers.0", "ts": 0, "dur": 100},
    {"cat": "gpu_user_annotation", "name": "layers.0.attn", "ts": 10, "dur": 30},
    {"cat": "gpu_user_annotation", "name": "Optimizer.step#AdamW.step", "ts": 200, "dur": 50},
    {"cat": "kernel", "name": "flash_fwd", "ts": 20, "dur": 10},
    {"cat": "kernel", "name": "gemm", "ts": 50, "dur": 20},
    {"cat": "kernel", "name": "multi_tensor_apply", "ts": 200, "dur": 20},
    {"cat": "kernel", "name": "multi_tensor_apply", "ts": 210, "dur": 20},
    {"cat": "kernel", "name": "elementwise", "ts": 300, "dur": 5}
  ]})JSON",
                                          "t.json");
  EXPECT_EQ(t.ranges.at("layers.0.attn").kernels, 1);
  EXPECT_NEAR(t.ranges.at("layers.0.attn").busy_s, 10e-6, 1e-12);
  EXPECT_EQ(t.ranges.at("layers.0").kernels, 1);
  EXPECT_NEAR(t.ranges.at("layers.0").busy_s, 20e-6, 1e-12);
  EXPECT_EQ(t.ranges.at("Optimizer.step#AdamW.step").kernels, 2);
  EXPECT_NEAR(t.optimizer_s, 30e-6, 1e-12);
  EXPECT_EQ(t.unranged_kernels, 1);
}

TEST(ProfilerTrace, APredictedTraceReadsBackToThePredictionsStepAndCollectives) {
  // fsdpsim's own exporter (simulate --profiler-trace) is the round trip: the steady step's time, every collective's
  // bytes and group size, and each unit's compute ops inside its range.
  FsdpConfig config;
  const Topology topology = topology_preset("dgx-h100-ndr");
  const Schedule s = build_schedule(model_preset("llama3-8b"), config, topology.gpus_per_node);
  const RunRecord run = run_schedule(s, topology, SimOptions{});
  const TraceStep t = read_profiler_trace(predicted_profiler_trace(s, run), "predicted.json");
  const StepRun& last = run.steps.back();
  EXPECT_EQ(t.step_name, "ProfilerStep#" + std::to_string(run.steps.size() - 1));
  EXPECT_NEAR(t.step_time_s, static_cast<double>(last.end_ns - last.start_ns) * 1e-9, 1e-9);
  std::map<std::string, int64_t> ir_bytes, ir_calls;
  int64_t compute_ops = 0, optimizer_ops = 0;
  for (const Op& op : s.ops) {
    if (is_collective(op.kind)) {
      const std::string kind(to_string(op.kind));
      ir_bytes[kind] += std::max(op.send_bytes, op.recv_bytes);
      ++ir_calls[kind];
    }
    compute_ops += op.kind == OpKind::compute && op.unit >= 0;
    optimizer_ops += op.kind == OpKind::optimizer;
  }
  ASSERT_FALSE(ir_bytes.empty());
  for (const TraceCollectiveSize& c : t.collective_sizes) {
    EXPECT_EQ(c.group_size, 8) << c.kind;
    EXPECT_EQ(c.bytes, ir_bytes.at(c.kind)) << c.kind;
    EXPECT_EQ(c.kernels, ir_calls.at(c.kind)) << c.kind;
    EXPECT_GT(c.bus_bw_bytes_per_s, 0) << c.kind;
  }
  EXPECT_EQ(t.collective_sizes.size(), ir_bytes.size());
  int64_t ranged = 0;
  for (const auto& [name, range] : t.ranges) ranged += name.rfind("Optimizer.step#", 0) == 0 ? 0 : range.kernels;
  EXPECT_EQ(ranged, compute_ops);
  EXPECT_EQ(t.ranges.at("Optimizer.step#fsdpsim.step").kernels, optimizer_ops);
  EXPECT_GT(t.optimizer_s, 0);
  EXPECT_LE(t.exposed_comm_s, t.comm_busy_s);
}

}  // namespace
}  // namespace fsdpsim
