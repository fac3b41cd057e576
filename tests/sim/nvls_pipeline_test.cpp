// The chunk pipeline of NVLS / NVLSTree calls (sim/nccl/nccl_pipeline.cpp): one call derived by hand, NCCL's chunk-size
// thresholds, the limits (largest calls, profiles without the constants, algorithms it does not apply to), NCCL's
// algorithm choice left alone, and measured 8×H100 / 8×H200 all-reduce sweeps from 4 MiB to 16 GiB: the Hopper
// constants' calibration sweep and a held-out one (docs/architecture.md §6.9).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/units.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "sim/nccl/collective_model.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

CollectiveRequest all_reduce(const Topology& t, int32_t ranks, int64_t bytes, DType dtype = DType::bf16) {
  CollectiveRequest r;
  r.kind = OpKind::all_reduce;
  r.size_bytes = bytes;
  r.dtype = dtype;
  r.reduce_op = ReduceOp::sum;
  r.placement = place_group(t, ranks, ranks, 1);
  return r;
}

double busbw_gbps(const CollectiveRequest& r, const Topology& t) {
  return predicted_busbw_bytes_per_s(r, t) / 1e9;
}

TEST(NvlsPipeline, OneB200CallByHand) {
  const Topology t = topology_preset("hgx-b200-ndr");
  ASSERT_EQ(t.gpu.nvls_chunk_handshake_ns, 5'550);
  ASSERT_DOUBLE_EQ(t.gpu.nvls_pipeline_fill_chunks, 2.6);
  // 8×B200 all-reduce of 128 MiB (S = 134,217,728 B). NVLS runs 24 channels × 8 heads = 192 pieces. NCCL's chunk:
  // S < 64·192·128 KiB = 1.5 GiB → 64 KiB; S >= 8·192·64 KiB = 96 MiB → stays 64 KiB.
  // NCCL's table: busbw 0.74·18·40.1·2·7/9 = 830.872 GB/s over 2·7/8·S = 234,881,024 bus bytes = 282.69 us, latency 25
  // us. Per piece that is S / 282.69 / 192 = 2472.9 B/us; a 128 KiB chunk takes 53.003 us of it, of which 5.55 us is
  // the handshake, so the raw rate is 131072 / 47.453 = 2762.1 B/us. Steps per piece: S / (192·64 KiB) = 10.667, each
  // 65536 / 2762.1 + 5.55 = 29.276 us: streaming 312.28 us (busbw 234,881,024 / 312.28 = 752.1 GB/s), fill 2.6 × 29.276
  // = 76.12 us. Total 25 + 76.12 + 312.28 = 413.40 us: busbw 568.2 GB/s (measured 568, ml-engineering; one of the two
  // rows the Blackwell constants were fitted on).
  const CollectiveCost c = collective_cost(all_reduce(t, 8, 128 * kMiB), t);
  EXPECT_EQ(c.algo, NcclAlgo::nvls);
  EXPECT_EQ(c.chunk_bytes, 64 * kKiB);
  EXPECT_NEAR(static_cast<double>(c.pipeline_fill_ns), 76'120, 10);
  EXPECT_NEAR(static_cast<double>(c.latency_ns), 101'120, 10);
  EXPECT_NEAR(c.bus_bw_bytes_per_s / 1e9, 752.1, 0.1);
  EXPECT_NEAR(busbw_gbps(all_reduce(t, 8, 128 * kMiB), t), 568.2, 0.1);
}

TEST(NvlsPipeline, NcclShrinksTheChunkForSmallerCalls) {
  const Topology t = topology_preset("hgx-b200-ndr");
  // 192 pieces: 128 KiB from 64·192·128 KiB = 1.5 GiB, 64 KiB from 8·192·64 KiB = 96 MiB, 32 KiB from
  // 2·192·32 KiB = 12 MiB, 16 KiB below (NCCL computeColl).
  const std::vector<std::pair<int64_t, int64_t>> cases{{3 * kGiB / 2, 128 * kKiB}, {3 * kGiB / 2 - 4096, 64 * kKiB},
                                                       {96 * kMiB, 64 * kKiB},     {96 * kMiB - 4096, 32 * kKiB},
                                                       {12 * kMiB, 32 * kKiB},     {12 * kMiB - 4096, 16 * kKiB}};
  for (const auto& [bytes, chunk] : cases) {
    CollectiveRequest r = all_reduce(t, 8, bytes);
    r.algo = NcclAlgo::nvls;
    EXPECT_EQ(collective_cost(r, t).chunk_bytes, chunk) << bytes << " B";
  }
  // NVLSTree: 128 KiB on 2 domains, at most 64 KiB on 4 or more (NCCL_NVLSTREE_MAX_CHUNKSIZE's default).
  CollectiveRequest two = all_reduce(t, 16, 16 * kGiB);
  two.algo = NcclAlgo::nvls_tree;
  EXPECT_EQ(collective_cost(two, t).chunk_bytes, 128 * kKiB);
  CollectiveRequest four = all_reduce(t, 32, 16 * kGiB);
  four.algo = NcclAlgo::nvls_tree;
  EXPECT_EQ(collective_cost(four, t).chunk_bytes, 64 * kKiB);
}

TEST(NvlsPipeline, TheLargestCallsStreamAtNcclsTableRate) {
  // NCCL's tables describe the largest calls: with the largest chunk the streaming rate is the table's, and only the
  // fill (2.6 steps of 53.0 us on 8×B200) is added: 16 GiB busbw 827.2 against the table's 830.3.
  const Topology t = topology_preset("hgx-b200-ndr");
  const CollectiveCost c = collective_cost(all_reduce(t, 8, 16 * kGiB), t);
  EXPECT_EQ(c.chunk_bytes, 128 * kKiB);
  EXPECT_NEAR(c.bus_bw_bytes_per_s, 0.74 * 18 * 40.1e9 * 2 * 7 / 9, 1e3);
  EXPECT_NEAR(static_cast<double>(c.pipeline_fill_ns), 2.6 * 53'003, 20);
}

TEST(NvlsPipeline, AProfileWithoutTheConstantsKeepsNcclsModel) {
  Topology t = topology_preset("hgx-b200-ndr");
  t.gpu.nvls_chunk_handshake_ns = 0;
  t.gpu.nvls_pipeline_fill_chunks = 0;
  // 128 MiB at the table: 25 us + 234,881,024 B / 830.872 GB/s = 307.69 us → 763.4 GB/s (the 2.28 model).
  const CollectiveCost c = collective_cost(all_reduce(t, 8, 128 * kMiB), t);
  EXPECT_EQ(c.chunk_bytes, 0);
  EXPECT_EQ(c.pipeline_fill_ns, 0);
  EXPECT_EQ(c.latency_ns, 25'000);
  EXPECT_NEAR(busbw_gbps(all_reduce(t, 8, 128 * kMiB), t), 763.4, 0.1);
}

TEST(NvlsPipeline, OnlyNvlsFamilyCallsWithUnstagedBuffersPayIt) {
  const Topology t = topology_preset("dgx-h100-ndr");
  CollectiveRequest ring = all_reduce(t, 8, kGiB);
  ring.algo = NcclAlgo::ring;
  EXPECT_EQ(collective_cost(ring, t).chunk_bytes, 0);
  EXPECT_EQ(collective_cost(ring, t).pipeline_fill_ns, 0);
  // Registered NVLS all-gather moves 512 KiB staging steps, not chunks: NCCL's table as is.
  CollectiveRequest ag = all_reduce(t, 8, kGiB);
  ag.kind = OpKind::all_gather;
  ag.reduce_op = ReduceOp::none;
  ag.registered = true;
  const CollectiveCost staged = collective_cost(ag, t);
  ASSERT_EQ(staged.algo, NcclAlgo::nvls);
  EXPECT_EQ(staged.chunk_bytes, 0);
  EXPECT_EQ(staged.pipeline_fill_ns, 0);
}

TEST(NvlsPipeline, NcclChoosesByItsTablesNotByThePipeline) {
  // ml-engineering's 8×H200: NCCL runs ring LL up to 1 MiB and NVLS from 2 MiB, as its tables say (NVLS 25 + 7.49 =
  // 32.5 us < ring LL 41.0 us at 2 MiB). Timed with its pipeline, that NVLS call (16 KiB chunks, one step) takes
  // longer than ring LL would; NCCL picks it all the same, and so does the model. (Measured: 56.9 us.)
  const Topology t = topology_preset("hgx-h200-ndr");
  const CollectiveCost nvls = collective_cost(all_reduce(t, 8, 2 * kMiB), t);
  EXPECT_EQ(nvls.algo, NcclAlgo::nvls);
  EXPECT_EQ(nvls.chunk_bytes, 16 * kKiB);
  CollectiveRequest ring = all_reduce(t, 8, 2 * kMiB);
  ring.algo = NcclAlgo::ring;
  ring.proto = NcclProto::ll;
  EXPECT_GT(nvls.time_ns, collective_cost(ring, t).time_ns);
}

// ---- Measured size sweeps on one Hopper node ----

struct SweepRow {
  const char* source;
  const char* topology;
  int64_t size_bytes;
  DType dtype;
  double measured_gbps;
  bool calibration;       ///< a row the Hopper constants (h100-sxm.yaml) were fitted on
  const char* unmatched;  ///< nullptr: within 10 %; otherwise why not
};

// NVIDIA/dgxc-benchmarking nccl/README.md (commit 46e42015), "View sample output (AllReduce excerpt)": all_reduce_perf
// on one host of 8 × NVIDIA H100 80GB HBM3, float sum, 20 iterations, no CUDA graph; out-of-place busbw. The Hopper
// constants were fitted on these 13 rows (RMS log error 3.8 %).
constexpr const char* kDgxc = "dgxc-benchmarking 8xH100";
// stas00/ml-engineering network/benchmarks/results/all-reduce-8xH200.md (commit c53741b8): torch all_reduce_bench.py
// on 8 × H200 SXM, torch 2.9.1, NCCL 2.27.7, 20 trials; NVLS from 2 MiB. Held out. The h200-sxm profile keeps the
// h100-sxm constants (same NVSwitch and NVLink 4).
constexpr const char* kMlEngH200 = "ml-engineering 8xH200";
// Through torch each call also pays Python and launch overhead; at 4-32 MiB the H200 sweep runs 21 %, 12 %, 7 % and
// 6 % below the H100 nccl-tests sweep above on the same NVLink 4, which is where the model reads it high.
constexpr const char* kTorchOverhead =
    "torch's per-call overhead: this sweep runs 6-21 % below the nccl-tests 8xH100 sweep at 4-32 MiB on the same "
    "NVLink 4, and the model, fitted on nccl-tests, reads it 12-15 % high";

const std::vector<SweepRow>& sweep_rows() {
  static const std::vector<SweepRow> rows{
      {kDgxc, "dgx-h100-ndr", 4 * kMiB, DType::fp32, 135.44, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 8 * kMiB, DType::fp32, 176.77, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 16 * kMiB, DType::fp32, 237.21, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 32 * kMiB, DType::fp32, 294.69, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 64 * kMiB, DType::fp32, 361.67, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 128 * kMiB, DType::fp32, 400.53, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 256 * kMiB, DType::fp32, 422.25, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 512 * kMiB, DType::fp32, 436.79, true, nullptr},
      {kDgxc, "dgx-h100-ndr", kGiB, DType::fp32, 466.33, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 2 * kGiB, DType::fp32, 473.37, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 4 * kGiB, DType::fp32, 477.24, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 8 * kGiB, DType::fp32, 480.16, true, nullptr},
      {kDgxc, "dgx-h100-ndr", 16 * kGiB, DType::fp32, 479.90, true, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 4 * kMiB, DType::bf16, 107.16, false, kTorchOverhead},
      {kMlEngH200, "hgx-h200-ndr", 8 * kMiB, DType::bf16, 155.53, false, kTorchOverhead},
      {kMlEngH200, "hgx-h200-ndr", 16 * kMiB, DType::bf16, 219.89, false, kTorchOverhead},
      {kMlEngH200, "hgx-h200-ndr", 32 * kMiB, DType::bf16, 275.84, false, kTorchOverhead},
      {kMlEngH200, "hgx-h200-ndr", 64 * kMiB, DType::bf16, 346.51, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 128 * kMiB, DType::bf16, 401.93, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 256 * kMiB, DType::bf16, 436.15, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 512 * kMiB, DType::bf16, 450.29, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", kGiB, DType::bf16, 463.58, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 2 * kGiB, DType::bf16, 469.17, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 4 * kGiB, DType::bf16, 473.10, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 8 * kGiB, DType::bf16, 477.45, false, nullptr},
      {kMlEngH200, "hgx-h200-ndr", 16 * kGiB, DType::bf16, 482.26, false, nullptr},
  };
  return rows;
}

std::string row_name(const SweepRow& row) {
  return std::string(row.source) + " " + format_bytes(row.size_bytes);
}

TEST(NvlsPipelineSweeps, HopperAllReduceFrom4MiBTo16GiB) {
  for (const SweepRow& row : sweep_rows()) {
    const Topology t = topology_preset(row.topology);
    const CollectiveRequest r = all_reduce(t, 8, row.size_bytes, row.dtype);
    ASSERT_EQ(collective_cost(r, t).algo, NcclAlgo::nvls) << row_name(row);
    const double predicted = busbw_gbps(r, t);
    const double error = (predicted - row.measured_gbps) / row.measured_gbps;
    if (row.unmatched == nullptr) {
      EXPECT_LE(std::abs(error), 0.10) << row_name(row) << ": predicted " << predicted << ", measured "
                                       << row.measured_gbps;
    } else {
      EXPECT_GT(std::abs(error), 0.10) << row_name(row) << ": the documented gap closed (predicted " << predicted
                                       << "); it said: " << row.unmatched;
    }
  }
}

TEST(NvlsPipelineSweeps, NcclsTablesAloneMissTheMiddleSizes) {
  // Without the pipeline the same sweep is read 11-51 % high from 4 MiB to 512 MiB (NCCL's NVLS latency is 25 us and
  // its bandwidth is the largest calls'): what the pipeline is for.
  int missed = 0, middle = 0;
  for (const SweepRow& row : sweep_rows()) {
    if (std::string_view(row.source) != kDgxc || row.size_bytes > 512 * kMiB) continue;
    Topology t = topology_preset(row.topology);
    t.gpu.nvls_chunk_handshake_ns = 0;
    t.gpu.nvls_pipeline_fill_chunks = 0;
    const double predicted = busbw_gbps(all_reduce(t, 8, row.size_bytes, row.dtype), t);
    ++middle;
    missed += (predicted - row.measured_gbps) / row.measured_gbps > 0.10 ? 1 : 0;
  }
  EXPECT_EQ(middle, 8);
  EXPECT_EQ(missed, 8);
}

}  // namespace
}  // namespace fsdpsim
