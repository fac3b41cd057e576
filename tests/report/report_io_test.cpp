// Reading reports back, comparing predicted with measured, and calibrating from nccl-tests logs.
#include <gtest/gtest.h>

#include <algorithm>

#include "builders/builder.h"
#include "common/error.h"
#include "model/model.h"
#include "report/report_compare.h"
#include "sim/calibration.h"
#include "sim/engine.h"
#include "sim/nccl/collective_model.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

Report simulated(const std::vector<std::string>& sets) {
  FsdpConfig config;
  for (const auto& s : sets) apply_override(config, s);
  const Topology t = topology_preset("dgx-h100-ndr");
  const Schedule s = build_schedule(model_preset("llama3-8b"), config, t.gpus_per_node);
  return make_report(s, t, run_schedule(s, t, SimOptions{}));
}

TEST(ReportIo, JsonReadsBack) {
  const Report r = simulated({});
  const Report back = report_from_json(report_json(r), "r.json");
  EXPECT_EQ(back.step_time_s, r.step_time_s);
  EXPECT_EQ(back.peak_allocated_bytes, r.peak_allocated_bytes);
  ASSERT_EQ(back.ops.size(), r.ops.size());
  EXPECT_EQ(back.ops[5].name, r.ops[5].name);
  EXPECT_EQ(back.ops[5].duration_ns, r.ops[5].duration_ns);
}

TEST(ReportIo, TruncatedOrWrongFilesNameFileLineAndKey) {
  const std::string text = report_json(simulated({}));
  const std::string truncated = text.substr(0, text.size() / 2);
  EXPECT_NE(error_of([&] { report_from_json(truncated, "m.json"); }).find("m.json:"), std::string::npos);
  EXPECT_NE(error_of([&] { report_from_json(truncated, "m.json"); }).find("malformed JSON report"), std::string::npos);
  EXPECT_NE(error_of([] { report_from_json("{\"source\": \"x\"}", "m.json"); }).find("'model': missing required field"),
            std::string::npos);
  std::string wrong = text;
  wrong.replace(wrong.find("\"step_time_s\": "), 15, "\"step_time_s\": \"fast\", \"x\": ");
  EXPECT_NE(error_of([&] { report_from_json(wrong, "m.json"); }).find("'step_time_s': expected a number"),
            std::string::npos);
}

TEST(Compare, ErrorsAreRelativeToTheMeasurement) {
  // Predicted 1.1 s against measured 1.0 s is +10%.
  EXPECT_NEAR((Deviation{"x", 1.1, 1.0}.relative_error()), 0.1, 1e-12);
  Report p = simulated({});
  Report m = p;
  m.step_time_s = p.step_time_s * 2;  // the measurement took twice as long: the prediction is −50%
  for (auto& op : m.ops) op.duration_ns *= 2;
  const Comparison c = compare_reports(p, m);
  EXPECT_NEAR(c.step.relative_error(), -0.5, 1e-12);
  EXPECT_NEAR(c.median_abs_op_error, 0.5, 1e-12);
}

TEST(ReportIo, MeasuredOverheadsAndEmulationReadBack) {
  Report r = simulated({});
  r.overheads_measured = true;
  r.collectives_emulated = true;
  r.executor_scratch_bytes = 3 * kGiB;
  r.overheads.cuda_context_bytes = 600 * kMiB;
  const Report back = report_from_json(report_json(r), "r.json");
  EXPECT_TRUE(back.overheads_measured);
  EXPECT_TRUE(back.collectives_emulated);
  EXPECT_EQ(back.executor_scratch_bytes, 3 * kGiB);
  EXPECT_EQ(back.overheads.cuda_context_bytes, 600 * kMiB);
  EXPECT_EQ(back.gpu_memory_bytes, r.gpu_memory_bytes);
  // Reports written before these keys existed read as a simulation's: nothing measured, nothing emulated.
  std::string old = report_json(simulated({}));
  old.replace(old.find("\"overheads_measured\": false,"), std::string("\"overheads_measured\": false,").size(), "");
  old.replace(old.find("\"collectives_emulated\": false,"), std::string("\"collectives_emulated\": false,").size(), "");
  const Report older = report_from_json(old, "old.json");
  EXPECT_FALSE(older.overheads_measured);
  EXPECT_FALSE(older.collectives_emulated);
}

TEST(Compare, EmulatedCollectivesAreShownButNotScored) {
  // A measurement whose collectives were device copies: they took a tenth of the prediction, compute ops exactly
  // the prediction. The collectives must not enter the median, the worst-op list or the exposed-comm errors.
  const Report p = simulated({});
  Report m = p;
  m.collectives_emulated = true;
  for (auto& op : m.ops) {
    if (is_collective(op.kind)) op.duration_ns /= 10;
  }
  m.exposed_comm_s = p.exposed_comm_s / 10;
  const Comparison c = compare_reports(p, m);
  EXPECT_EQ(c.median_abs_op_error, 0);
  ASSERT_TRUE(c.step_less_exposed_comm.has_value());
  EXPECT_DOUBLE_EQ(c.step_less_exposed_comm->predicted, p.step_time_s - p.exposed_comm_s);
  int32_t collectives = 0;
  for (const auto& d : c.ops) {
    const bool collective = d.what.rfind("ag.", 0) == 0 || d.what.rfind("rs.", 0) == 0;
    if (collective) {
      EXPECT_FALSE(d.compared) << d.what;
    }
    collectives += collective ? 1 : 0;
  }
  EXPECT_GT(collectives, 0);
  for (const auto& d : c.phases) {
    if (d.what.find("exposed") != std::string::npos) {
      EXPECT_FALSE(d.compared) << d.what;
    }
  }
  const std::string text = comparison_text(c);
  EXPECT_NE(text.find("emulated"), std::string::npos);
  EXPECT_EQ(text.find("ag.layer"), std::string::npos) << "an emulated collective is listed among the worst ops";
  // The same measurement without the flag scores the collectives: they lead the worst-op list at +900%.
  m.collectives_emulated = false;
  EXPECT_NE(comparison_text(compare_reports(p, m)).find("+900.0%"), std::string::npos);
}

TEST(Compare, AnEmulatedPipelinesSendsAndReceivesAreNotScored) {
  // Emulated stage by stage, a send goes nowhere and a receive is a memset: they took a hundredth of the prediction.
  const Report p = simulated({"pp=2", "gpus=16", "global_batch_size=16"});
  Report m = p;
  m.collectives_emulated = true;
  int32_t p2p = 0;
  for (auto& op : m.ops) {
    if (!is_p2p(op.kind)) continue;
    op.duration_ns /= 100;
    ++p2p;
  }
  ASSERT_GT(p2p, 0);
  const Comparison c = compare_reports(p, m);
  for (size_t i = 0; i < c.ops.size(); ++i) {
    if (is_p2p(p.ops[i].kind)) {
      EXPECT_FALSE(c.ops[i].compared) << c.ops[i].what;
    }
  }
  m.collectives_emulated = false;  // measured for real, the same durations are scored
  const Comparison real = compare_reports(p, m);
  for (size_t i = 0; i < real.ops.size(); ++i) {
    if (is_p2p(p.ops[i].kind)) {
      EXPECT_TRUE(real.ops[i].compared) << real.ops[i].what;
    }
  }
}

TEST(Compare, APipelinesStagesAreComparedOneByOneAndReadBackFromJson) {
  const Report p = simulated({"pp=2", "gpus=16", "global_batch_size=16"});
  ASSERT_EQ(p.stage_peak_allocated_bytes.size(), 2u);
  const Report back = report_from_json(report_json(p), "p.json");
  EXPECT_EQ(back.stage_peak_allocated_bytes, p.stage_peak_allocated_bytes);
  EXPECT_EQ(back.stage_peak_reserved_bytes, p.stage_peak_reserved_bytes);
  Report m = back;
  m.stage_peak_allocated_bytes[1] = p.stage_peak_allocated_bytes[1] / 2;  // stage 1 measured at half the prediction
  const Comparison c = compare_reports(p, m);
  const auto row = [&](const std::string& what) {
    const auto at = std::find_if(c.memory.begin(), c.memory.end(), [&](const Deviation& d) { return d.what == what; });
    EXPECT_NE(at, c.memory.end()) << what;
    return at == c.memory.end() ? Deviation{} : *at;
  };
  EXPECT_DOUBLE_EQ(row("stage 0 peak allocated").relative_error(), 0.0);
  EXPECT_NEAR(row("stage 1 peak allocated").relative_error(), 1.0, 1e-6);  // predicted twice the measured
  EXPECT_DOUBLE_EQ(row("stage 1 peak reserved").relative_error(), 0.0);
  // A report without stages (FSDP only) has no such rows.
  const Report flat = simulated({});
  const Comparison none = compare_reports(flat, flat);
  EXPECT_TRUE(std::none_of(none.memory.begin(), none.memory.end(),
                           [](const Deviation& d) { return d.what.rfind("stage ", 0) == 0; }));
}

TEST(Compare, HostBackendTimesAreShownButNotScoredAgainstAGpuPrediction) {
  // The host backend's threads took ten times the GPU's prediction; its memory matches to the byte.
  const Report p = simulated({});
  Report m = p;
  m.source = "fsdpsim exec (host, 8 threads)";
  m.step_time_s = 10 * p.step_time_s;
  for (auto& op : m.ops) op.duration_ns *= 10;
  const Comparison c = compare_reports(p, m);
  EXPECT_FALSE(c.step.compared);
  for (const auto& d : c.ops) EXPECT_FALSE(d.compared) << d.what;
  for (const auto& d : c.phases) EXPECT_FALSE(d.compared) << d.what;
  for (const auto& d : c.memory) EXPECT_TRUE(d.compared) << d.what;  // memory still speaks
  EXPECT_NE(comparison_text(c).find("not comparable with a GPU prediction"), std::string::npos);
  // A GPU measurement of the same schedule is scored.
  m.source = "fsdpsim exec (cuda, NVIDIA H100 80GB HBM3)";
  EXPECT_TRUE(compare_reports(p, m).step.compared);
}

TEST(Compare, MeasuredOverheadsAreCompared) {
  const Report p = simulated({});
  Report m = p;
  m.overheads_measured = true;
  m.overheads.cuda_context_bytes = p.overheads.cuda_context_bytes / 2;  // the prediction is +100%
  const Comparison c = compare_reports(p, m);
  bool found = false;
  for (const auto& d : c.memory) {
    if (d.what != "CUDA context") continue;
    found = true;
    EXPECT_NEAR(d.relative_error(), 1.0, 1e-12);
  }
  EXPECT_TRUE(found);
  // Without measured overheads there is nothing to compare them with.
  EXPECT_EQ(compare_reports(p, p).memory.size(), 2u);
}

TEST(Compare, DifferentSchedulesAreRefused) {
  const Report a = simulated({});
  const Report b = simulated({"data_parallel_sharding_strategy=optim"});
  EXPECT_NE(error_of([&] { compare_reports(a, b); }).find("different schedules"), std::string::npos);
}

// An all_gather_perf run on 8 GPUs of one host, as nccl-tests prints it (columns: size, count, type, redop, root,
// then time, algbw, busbw, #wrong out of place and in place).
const char* kAllGatherLog =
    R"(# nThread 1 nGpus 8 minBytes 1048576 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid  1000 on     node01 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1000 on     node01 device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  1000 on     node01 device  2 [0x3a] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  1000 on     node01 device  3 [0x5d] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid  1000 on     node01 device  4 [0x9a] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid  1000 on     node01 device  5 [0xab] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid  1000 on     node01 device  6 [0xba] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid  1000 on     node01 device  7 [0xdb] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576         32768     float    none      -1    20.85   50.29   44.01      0    20.10   52.17   45.65      0
  8589934592     268435456     float    none      -1  23244.2  369.55  323.36      0  23100.0  371.86  325.38      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 184.6
)";

TEST(Calibration, ParsesAnNcclTestsLog) {
  const auto rows = parse_nccl_tests_log(kAllGatherLog, "all_gather_perf.log", OpKind::all_gather);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].ranks, 8);
  EXPECT_EQ(rows[1].nodes, 1);
  EXPECT_EQ(rows[1].size_bytes, 8589934592);
  EXPECT_DOUBLE_EQ(rows[1].busbw_bytes_per_s, 323.36e9);  // out-of-place busbw
  EXPECT_DOUBLE_EQ(rows[1].time_s, 23244.2e-6);
}

TEST(Calibration, LogErrorsNameFileAndLine) {
  // The 8 GiB row is line 17: 1 header, 1 "#", "Using devices", 8 rank lines, "#", 3 column headers, the 1 MiB row.
  std::string broken = kAllGatherLog;
  broken.replace(broken.find("  8589934592"), 12, "  lots-of-B  ");
  EXPECT_NE(error_of([&] { parse_nccl_tests_log(broken, "ag.log", OpKind::all_gather); }).find("ag.log:17:1"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_nccl_tests_log(kAllGatherLog, "x.log", std::nullopt);
            }).find("does not say which collective"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_nccl_tests_log("# nothing\n", "x.log", OpKind::all_gather); }).find("no result rows"),
            std::string::npos);
}

TEST(Calibration, BusbwScaleIsMeasuredOverPredicted) {
  // The largest all-gather (8 GiB on 8 GPUs of one node) measured 323.36 GB/s; the scale is that over what the model
  // predicts for the same call on dgx-h100-ndr, and the calibrated model then predicts the measurement.
  const Topology t = topology_preset("dgx-h100-ndr");
  GpuMeasurements m;
  m.collectives = parse_nccl_tests_log(kAllGatherLog, "ag.log", OpKind::all_gather);
  CollectiveRequest r;
  r.kind = OpKind::all_gather;
  r.size_bytes = 8589934592;
  r.dtype = DType::fp32;
  r.placement = place_group(t, 8, 8, 1);
  const double predicted = predicted_busbw_bytes_per_s(r, t);
  const GpuProfile calibrated = calibrate_profile(t.gpu, t, m, "test", nullptr);
  EXPECT_NEAR(calibrated.busbw_scale_all_gather, 323.36e9 / predicted, 1e-12);
  EXPECT_EQ(calibrated.busbw_scale_reduce_scatter, 1.0);  // not measured: unchanged
  Topology tc = t;
  tc.gpu = calibrated;
  // Latency is a few tens of us of a 26 ms transfer: the calibrated prediction lands within 0.2% of the measurement.
  EXPECT_NEAR(predicted_busbw_bytes_per_s(r, tc), 323.36e9, 323.36e9 * 0.002);
  // The profile round-trips through YAML with its calibration.
  EXPECT_EQ(parse_gpu_profile_yaml(gpu_profile_to_yaml(calibrated), "p.yaml"), calibrated);
}

TEST(Calibration, GemmAndCopyMeasurementsSetEfficiencies) {
  // 791 TFLOP/s measured on a 989 TFLOP/s H100 → 0.7998; a 2.8 TB/s copy of 3.35 TB/s → 0.8358.
  const Topology t = topology_preset("dgx-h100-ndr");
  GpuMeasurements m;
  m.gemms = {GemmSample{8192, 8192, 8192, DType::bf16, 791e12}, GemmSample{1024, 1024, 1024, DType::bf16, 400e12}};
  m.copy_bw_bytes_per_s = 2.8e12;
  const GpuProfile p = calibrate_profile(t.gpu, t, m, "test", nullptr);
  EXPECT_NEAR(p.gemm_max_efficiency, 791.0 / 989.0, 1e-12);
  EXPECT_NEAR(p.memory_efficiency, 2.8 / 3.35, 1e-12);
  EXPECT_EQ(p.hbm_bytes, t.gpu.hbm_bytes) << "no memory size measured: the profile's stays";
}

TEST(Calibration, TheMemoryCudaReportsReplacesTheProfiles) {
  const Topology t = topology_preset("dgx-h100-ndr");
  GpuMeasurements m;
  m.memory_bytes = t.gpu.hbm_bytes - 500 * kMiB;
  CalibrationSummary summary;
  const GpuProfile p = calibrate_profile(t.gpu, t, m, "test", &summary);
  EXPECT_EQ(p.hbm_bytes, m.memory_bytes);
  ASSERT_EQ(summary.lines.size(), 1u);
  EXPECT_NE(summary.lines.front().find("hbm_bytes"), std::string::npos);
}

}  // namespace
}  // namespace fsdpsim
