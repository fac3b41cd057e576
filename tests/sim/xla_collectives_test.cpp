// The NCCL model's bus bandwidth against OpenXLA's measured collectives (bench/kernel_tables/published/
// collectives-openxla.csv: XLA's all-gathers, reduce-scatters, all-reduces and all-to-alls on an 8-GPU H100 and B200
// node and in GB200 and GB300 NVL72 racks, groups of 2-72 consecutive GPUs, every group at once, F32, 256 B to 32 GiB).
//
// XLA timed whole executions (the median of 20), so every time carries a fixed cost of its own runtime, 60 µs to 1 ms,
// that NCCL's latency is not; the bandwidth is what is compared: the slope of a least-squares line of time over bus
// bytes (size · (n−1)/n, twice that for all-reduce) through each series' four largest sizes (256 MiB-2 GiB on a node,
// 2.25-32 GiB in a rack), against the model's bus bandwidth for the largest size. Where the model misses, the test
// holds the gap and its direction, as collective_reference_test.cpp does with its unmatched rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "run/bus_bandwidth.h"
#include "schedule/dtype.h"
#include "schedule/ir.h"
#include "sim/nccl/collective_model.h"
#include "topologies/hardware.h"
#include "topologies/measured_table.h"

namespace fsdpsim {
namespace {

struct Series {
  std::string gpu, op;
  int32_t ranks = 0, groups = 0;
  std::vector<std::pair<int64_t, double>> size_time_us;  ///< sorted by size
  double measured_gbps = 0;                              ///< the fitted bus bandwidth
  double model_gbps = 0;
  [[nodiscard]] double error() const { return (model_gbps - measured_gbps) / measured_gbps; }
};

OpKind kind_of(const Series& s) {
  return *parse_op_kind(s.op);
}

// Bus bytes over time through the four largest sizes: the slope of the least-squares line, in GB/s.
double fitted_gbps(const Series& s) {
  const double factor = busbw_factor(kind_of(s), s.ranks);  // nccl-tests' bus bytes per byte
  const size_t from = s.size_time_us.size() - 4;
  double mean_x = 0, mean_y = 0;
  for (size_t i = from; i < s.size_time_us.size(); ++i) {
    mean_x += static_cast<double>(s.size_time_us[i].first) * factor / 4;
    mean_y += s.size_time_us[i].second / 4;
  }
  double sxy = 0, sxx = 0;
  for (size_t i = from; i < s.size_time_us.size(); ++i) {
    const double dx = static_cast<double>(s.size_time_us[i].first) * factor - mean_x;
    sxy += dx * (s.size_time_us[i].second - mean_y);
    sxx += dx * dx;
  }
  return sxx / sxy / 1e3;  // bytes per µs → GB/s
}

// The NVIDIA series of the table with their fitted and modelled bandwidths (the MI300X rows are too irregular in size
// for a slope: README "Published collectives").
const std::vector<Series>& all_series() {
  static const std::vector<Series> series = [] {
    const std::map<std::string, std::string> preset{
        {"h100", "dgx-h100-ndr"}, {"b200", "hgx-b200-ndr"}, {"gb200", "gb200-nvl72"}, {"gb300", "gb300-nvl72"}};
    const std::string path = std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/collectives-openxla.csv";
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    std::map<std::string, size_t> at = measured_table::header_columns(
        line, {"gpu", "op", "ranks", "groups", "size_bytes", "time_us"}, path, "rerun convert_openxla_collectives.py");
    std::map<std::tuple<std::string, std::string, int32_t, int32_t>, Series> by_key;
    while (std::getline(in, line)) {
      const std::vector<std::string> cells = measured_table::split_csv(line);
      const std::string& gpu = cells[at["gpu"]];
      if (!preset.contains(gpu)) continue;
      const int32_t ranks = std::stoi(cells[at["ranks"]]), groups = std::stoi(cells[at["groups"]]);
      Series& s = by_key[{gpu, cells[at["op"]], ranks, groups}];
      s.gpu = gpu;
      s.op = cells[at["op"]];
      s.ranks = ranks;
      s.groups = groups;
      s.size_time_us.emplace_back(std::stoll(cells[at["size_bytes"]]), std::stod(cells[at["time_us"]]));
    }
    std::vector<Series> out;
    std::map<std::string, Topology> topologies;
    for (auto& [key, s] : by_key) {
      std::sort(s.size_time_us.begin(), s.size_time_us.end());
      s.measured_gbps = fitted_gbps(s);
      if (!topologies.contains(s.gpu)) topologies.emplace(s.gpu, topology_preset(preset.at(s.gpu)));
      const Topology& topology = topologies.at(s.gpu);
      CollectiveRequest request;
      request.kind = kind_of(s);
      request.size_bytes = s.size_time_us.back().first;
      request.dtype = DType::fp32;
      request.reduce_op = s.op == "all_reduce" || s.op == "reduce_scatter" ? ReduceOp::sum : ReduceOp::none;
      request.placement = place_group(topology, s.ranks * s.groups, s.ranks, 1);
      s.model_gbps = collective_cost(request, topology).bus_bw_bytes_per_s / 1e9;
      out.push_back(s);
    }
    return out;
  }();
  return series;
}

std::vector<const Series*> where(bool (*keep)(const Series&)) {
  std::vector<const Series*> out;
  for (const Series& s : all_series()) {
    if (keep(s)) out.push_back(&s);
  }
  return out;
}

std::string describe(const Series& s) {
  return s.gpu + " " + s.op + " " + std::to_string(s.ranks) + " x " + std::to_string(s.groups) + ": model " +
         std::to_string(s.model_gbps) + " GB/s, XLA " + std::to_string(s.measured_gbps);
}

bool nvl72_rack(const Series& s) {
  return s.gpu == "gb200" || s.gpu == "gb300";
}

TEST(XlaCollectives, TheTableHoldsEveryNvidiaSeries) {
  // 4 ops × (3 group sizes on each 8-GPU node + 10 in each rack), each with at least its four largest sizes.
  EXPECT_EQ(all_series().size(), 4U * (3 + 3 + 10 + 10));
  for (const Series& s : all_series()) EXPECT_GE(s.size_time_us.size(), 20U) << describe(s);
}

// In an NVL72 rack the ring's 720 GB/s (16 channels × NCCL's 45 GB/s) is what all-gathers and reduce-scatters of
// 4-72 GPUs stream at: every series within 12.5% of XLA's, the median within 5% (4.6% today; the largest, 12.3%, is
// 16 groups of 4 gathering at once).
TEST(XlaCollectives, Nvl72AllGathersAndReduceScattersStreamAtTheModelsBandwidth) {
  const auto series =
      where([](const Series& s) { return nvl72_rack(s) && (s.op == "all_gather" || s.op == "reduce_scatter"); });
  ASSERT_EQ(series.size(), 40U);
  std::vector<double> errors;
  for (const Series* s : series) {
    EXPECT_LE(std::abs(s->error()), 0.125) << describe(*s);
    errors.push_back(std::abs(s->error()));
  }
  std::nth_element(errors.begin(), errors.begin() + 20, errors.end());
  EXPECT_LE(errors[20], 0.05);
}

// NVL72 all-reduces of 4 GPUs run NCCL's ring and of 8 its NVLS (0.74 × 18 × 40.1 × 2·7/9 = 831 GB/s): within 6%.
TEST(XlaCollectives, Nvl72AllReducesOfFourAndEightGpusMatch) {
  const auto series = where([](const Series& s) { return nvl72_rack(s) && s.op == "all_reduce" && s.ranks <= 8; });
  ASSERT_EQ(series.size(), 8U);
  for (const Series* s : series) EXPECT_LE(std::abs(s->error()), 0.06) << describe(*s);
}

// A documented gap: NVLS all-reduces of 16-72 GPUs measured 900-954 GB/s where the model, whose NVLS factor stops
// growing at 8 ranks, gives 831 — as NCCL 2.26's nccl-tests measured a whole NVL72 (841 GB/s at 8 GB, coreweave; the
// reference rows). XLA's newer NCCL gains past 8 ranks; the model stays with the published nccl-tests. Every series
// is 7-13% below.
TEST(XlaCollectives, Nvl72AllReducesBeyondEightGpusRunFasterThanTheModel) {
  const auto series = where([](const Series& s) { return nvl72_rack(s) && s.op == "all_reduce" && s.ranks > 8; });
  ASSERT_EQ(series.size(), 12U);
  for (const Series* s : series) {
    EXPECT_LT(s->error(), -0.05) << "the gap closed: " << describe(*s);
    EXPECT_GT(s->error(), -0.15) << describe(*s);
  }
}

// A documented gap: pairs of GPUs in an 8-GPU node (four pairs at once) measured 212-281 GB/s on H100 and 454-491 on
// B200 where the model gives any group inside the NVLink domain the node's ring bandwidth (360, 720); the whole
// node's all-gather is within 2% (H100) and its reduce-scatter within 9%. NCCL's channel count for a 2-rank ring is
// not modelled.
TEST(XlaCollectives, PairsInAnEightGpuNodeRunSlowerThanTheModel) {
  const auto pairs = where([](const Series& s) { return !nvl72_rack(s) && s.ranks == 2 && s.op != "all_to_all"; });
  ASSERT_EQ(pairs.size(), 6U);
  for (const Series* s : pairs) EXPECT_GT(s->error(), 0.25) << "the gap closed: " << describe(*s);
  const auto whole_h100 = where([](const Series& s) {
    return s.gpu == "h100" && s.ranks == 8 && (s.op == "all_gather" || s.op == "reduce_scatter");
  });
  ASSERT_EQ(whole_h100.size(), 2U);
  for (const Series* s : whole_h100) EXPECT_LE(std::abs(s->error()), 0.09) << describe(*s);
}

}  // namespace
}  // namespace fsdpsim
