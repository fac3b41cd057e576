// Measured fused-attention tables: one kernel's causal rows read from the measure script's CSV, the achieved rate
// interpolated in log head dim, log sequence and log batch × heads (derived by hand below), clamped at the edges, and
// refused with the file, line and field when malformed; a causal backward left empty derived from the unmasked row of
// its shape, checked against NVIDIA's published tables; the shipped tables (ours in bench/results, others' in
// bench/kernel_tables/published) give back their rows.
#include "topologies/attention_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/yaml_reader.h"
#include "tests/support/error_of.h"
#include "topologies/measured_table.h"

namespace fsdpsim {
namespace {

// A row whose causal forward runs at `forward_tflops` and backward at half that rate (2.5 × the FLOPs).
std::string row(const std::string& kernel, int64_t batch, int64_t seq, int64_t heads, double forward_tflops,
                int causal = 1) {
  const double flops = 4.0 * static_cast<double>(batch * heads) * static_cast<double>(seq) * static_cast<double>(seq) *
                       128 * (causal == 1 ? 0.5 : 1.0);
  const double forward_us = flops / (forward_tflops * 1e12) * 1e6;
  const double backward_us = 2.5 * flops / (forward_tflops / 2 * 1e12) * 1e6;
  char line[200];
  std::snprintf(line, sizeof line, "%s,%lld,%lld,%lld,128,%d,%.9f,%.9f,0\n", kernel.c_str(),
                static_cast<long long>(batch), static_cast<long long>(seq), static_cast<long long>(heads), causal,
                forward_us, backward_us);
  return line;
}

const char* const kHeader = "kernel,batch,seq,heads,head_dim,causal,forward_us,backward_us,forward_tflops\n";

// Sequence 1024: 100 TFLOP/s at batch × heads 8, 400 at 32; sequence 4096: 200 and 800.
std::string small_table() {
  return std::string(kHeader) + row("cudnn", 1, 1024, 8, 100) + row("cudnn", 1, 1024, 32, 400) +
         row("cudnn", 1, 4096, 8, 200) + row("cudnn", 1, 4096, 32, 800) + row("cudnn", 1, 4096, 8, 5, 0);
}

TEST(AttentionTable, InterpolatesTheRateInLogShapeAndClampsAtTheEdges) {
  const AttentionTable t = parse_attention_table_csv(small_table(), "a.csv", "");
  EXPECT_EQ(t.kernel, "cudnn");
  // On the grid: the row's own rates (the non-causal row is not read).
  EXPECT_NEAR(t.flops_per_s(false, 4096, 8, 128), 200e12, 1e3);
  EXPECT_NEAR(t.flops_per_s(true, 4096, 8, 128), 100e12, 1e3);
  // Halfway in log sequence and log batch × heads: at 1024 the geometric mean of 100 and 400 is 200, at 4096 that of
  // 200 and 800 is 400, and between them sqrt(200 × 400) = 282.84 TFLOP/s.
  EXPECT_NEAR(t.flops_per_s(false, 2048, 16, 128), std::sqrt(200.0 * 400.0) * 1e12, 1e4);
  // Beyond the measured range the edge's rate; one measured head dim stands for all.
  EXPECT_NEAR(t.flops_per_s(false, 65536, 256, 64), 800e12, 1e3);
  EXPECT_NEAR(t.flops_per_s(false, 512, 1, 256), 100e12, 1e3);
}

TEST(AttentionTable, RowsOfOneBatchTimesHeadsAreAveragedInLogRate) {
  // Batch 4 × 8 heads is the same 32 as batch 1 × 32 heads: 100 and 400 give their geometric mean, 200.
  const AttentionTable t = parse_attention_table_csv(small_table() + row("cudnn", 4, 1024, 8, 100), "a.csv", "cudnn");
  EXPECT_NEAR(t.flops_per_s(false, 1024, 32, 128), 200e12, 1e3);
}

TEST(AttentionTable, AKernelIsChosenByNameWhenTheTableHoldsSeveral) {
  const std::string two = small_table() + row("flash", 1, 1024, 8, 50);
  EXPECT_NEAR(parse_attention_table_csv(two, "a.csv", "flash").flops_per_s(false, 4096, 64, 128), 50e12, 1e3);
  EXPECT_HAS(error_of([&] { (void)parse_attention_table_csv(two, "a.csv", ""); }),
             "a.csv:1: 'kernel': the table holds 2 kernels (cudnn, flash) and none was chosen (name the one the job "
             "runs with --attention-kernel");
  EXPECT_HAS(error_of([&] { (void)parse_attention_table_csv(two, "a.csv", "fa3"); }),
             "a.csv:1: 'kernel': the table has no rows of kernel 'fa3' (it has cudnn, flash)");
}

TEST(AttentionTable, MalformedTablesNameTheFileTheLineAndTheField) {
  EXPECT_HAS(error_of([] { (void)parse_attention_table_csv("", "a.csv", ""); }),
             "a.csv:1: 'header': the file is empty");
  EXPECT_HAS(error_of([] { (void)parse_attention_table_csv("kernel,batch,seq,heads,head_dim\n", "a.csv", ""); }),
             "a.csv:1: 'causal': the header has no 'causal' column");
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,1024,8,128,1,-5,10,0\n", "a.csv", "");
             }),
             "a.csv:2: 'forward_us': '-5' is not a positive number");
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,1024,8,128,yes,5,10,0\n", "a.csv", "");
             }),
             "a.csv:2: 'causal': 'yes' is not 0 or 1");
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,1024.5,8,128,1,5,10,0\n", "a.csv", "");
             }),
             "a.csv:2: 'seq': '1024.5' is not a whole attention dimension");
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,1024,8,128,0,5,10,0\n", "a.csv", "");
             }),
             "a.csv:1: 'causal': the table has no causal rows of kernel 'cudnn'");
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,1024,8,128,1,1e-12,10,0\n", "a.csv", "");
             }),
             "a.csv:2: 'forward_us': the row's times give a rate no GPU runs at");
}

// The H100 table measured on 2026-11-26: cuDNN's causal forward of batch 1, sequence 8192, 32 heads of 128 took
// 893.37 µs (4 × 32 × 8192² × 128 × 0.5 FLOPs: 615.4 TFLOP/s), its backward 2848.04 µs; PyTorch's FlashAttention-2
// backend ran the forward in 1765.97 µs.
TEST(AttentionTable, TheShippedH100TableGivesBackItsMeasurements) {
  const std::string path = std::string(FSDPSIM_SOURCE_DIR) + "/bench/results/2026-11-26-h100-kernels/attention.csv";
  const double flops = 4.0 * 32 * 8192.0 * 8192.0 * 128 * 0.5;
  const AttentionTable cudnn = load_attention_table(path, "cudnn");
  EXPECT_NEAR(flops / cudnn.flops_per_s(false, 8192, 32, 128), 893.37e-6, 1e-10);
  EXPECT_NEAR(2.5 * flops / cudnn.flops_per_s(true, 8192, 32, 128), 2848.04e-6, 1e-10);
  EXPECT_NEAR(flops / load_attention_table(path, "flash").flops_per_s(false, 8192, 32, 128), 1765.97e-6, 1e-10);
  EXPECT_HAS(error_of([&] { (void)load_attention_table(path, ""); }), "none was chosen");
}

// NVIDIA's published H200 table (bench/kernel_tables/published/: cudnn-frontend's benchmark_results.csv, converted): the
// causal batch 2 × 16 heads × 8192 × 128 row ran cuDNN's forward at 572.86 TFLOP/s, so 4 × 32 × 8192² × 128 × 0.5
// FLOPs take 959.66 µs, and its backward at 463.54 (2,964.98 µs). Our own H200 table has the same FLOPs as batch 1 × 32
// heads at 928 and 2,778 µs: two sources, one GPU, within 7%. Its FlashAttention-2 (PyTorch's flash backend) ran the
// forward at 325.14 TFLOP/s.
TEST(AttentionTable, ThePublishedH200TableAgreesWithOurOwn) {
  const std::string bench = std::string(FSDPSIM_SOURCE_DIR) + "/bench/";
  const std::string published_csv = bench + "kernel_tables/published/h200-attention-cudnn-frontend.csv";
  const double flops = 4.0 * 32 * 8192.0 * 8192.0 * 128 * 0.5;
  const AttentionTable published = load_attention_table(published_csv, "cudnn");
  EXPECT_NEAR(flops / published.flops_per_s(false, 8192, 32, 128), 959.66e-6, 1e-10);
  EXPECT_NEAR(2.5 * flops / published.flops_per_s(true, 8192, 32, 128), 2964.98e-6, 1e-10);
  const AttentionTable ours = load_attention_table(bench + "results/2026-11-27-kernels/h200-attention.csv", "cudnn");
  for (const bool backward : {false, true}) {
    const double ratio = ours.flops_per_s(backward, 8192, 32, 128) / published.flops_per_s(backward, 8192, 32, 128);
    EXPECT_GT(ratio, 1.0) << "backward " << backward;  // newer cuDNN, the same GPU
    EXPECT_LT(ratio, 1.07) << "backward " << backward;
  }
  const AttentionTable flash2 = load_attention_table(published_csv, "flash");
  EXPECT_NEAR(flops / flash2.flops_per_s(false, 8192, 32, 128), 1690.84e-6, 1e-10);
}

// A causal row without a backward time takes it from the unmasked row of its shape: the unmasked backward rate times
// the causal forward's share of the unmasked forward rate. Here the causal forward runs at 100 TFLOP/s, the unmasked
// forward at 200 and its backward at 150, so the causal backward runs at 150 × 100 / 200 = 75 TFLOP/s.
TEST(AttentionTable, AMaskedBackwardIsDerivedFromTheUnmaskedRowOfItsShape) {
  const double causal_flops = 4.0 * 16 * 4096.0 * 4096.0 * 128 * 0.5;
  const std::string text = std::string(kHeader) + "cudnn,1,4096,16,128,1," + std::to_string(causal_flops / 100e6) +
                           ",,0\ncudnn,1,4096,16,128,0," + std::to_string(2 * causal_flops / 200e6) + "," +
                           std::to_string(2.5 * 2 * causal_flops / 150e6) + ",0\n";
  const AttentionTable t = parse_attention_table_csv(text, "a.csv", "cudnn");
  EXPECT_NEAR(t.flops_per_s(false, 4096, 16, 128), 100e12, 1e7);
  EXPECT_NEAR(t.flops_per_s(true, 4096, 16, 128), 75e12, 1e7);
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,4096,16,128,1,5,,0\n", "a.csv", "");
             }),
             "a.csv:2: 'backward_us': the causal row has no backward time and the table has no row of kernel 'cudnn' "
             "without the mask at the same batch, seq, heads, kv_heads and head_dim to derive it from");
  EXPECT_HAS(error_of([] {
               (void)parse_attention_table_csv(std::string(kHeader) + "cudnn,1,4096,16,128,0,5,,0\n", "a.csv", "");
             }),
             "a.csv:2: 'backward_us': a row without a causal mask has no backward time");
}

// `csv` with every causal row's backward time removed, as a publication without the masked backward would give it.
std::string without_causal_backward(const std::string& csv) {
  std::stringstream in(csv);
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) cells.push_back(cell);
    if (cells.at(5) == "1") cells.at(7).clear();
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cells[i];
    out += "\n";
  }
  return out;
}

// The derivation checked where NVIDIA published both backwards (cudnn-frontend's SDPA benchmarks, converted in
// bench/kernel_tables/published/): with each causal backward removed, the rule gives it back within 10% at every
// measured shape of the GB200, GB300 and H200 tables (median 2.6%, largest 8.0%, PyTorch's FlashAttention-2 at
// 16,384 on the H200).
TEST(AttentionTable, TheDerivedMaskedBackwardMatchesNvidiasPublishedOnes) {
  const std::string dir = std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/";
  std::vector<double> errors;
  for (const auto& [file, kernel] :
       std::vector<std::pair<std::string, std::string>>{{"gb200-attention-cudnn-frontend-sdpa.csv", "cudnn"},
                                                        {"gb300-attention-cudnn-frontend-sdpa.csv", "cudnn"},
                                                        {"h200-attention-cudnn-frontend-gqa.csv", "cudnn"},
                                                        {"h200-attention-cudnn-frontend.csv", "cudnn"},
                                                        {"h200-attention-cudnn-frontend.csv", "flash"}}) {
    const std::string csv = read_file_bytes(dir + file, measured_table::kMaxTableBytes);
    const AttentionTable measured = parse_attention_table_csv(csv, file, kernel);
    const AttentionTable derived = parse_attention_table_csv(without_causal_backward(csv), file, kernel);
    ASSERT_EQ(measured.groups.size(), 1U) << file;
    const int64_t group = measured.groups[0].query_heads_per_kv_head;
    for (const AttentionHeadDim& d : measured.groups[0].head_dims) {
      for (const AttentionSeqRow& s : d.seqs) {
        for (const AttentionPoint& p : s.points) {
          const double ratio = derived.flops_per_s(true, s.seq, p.batch_heads, d.head_dim, group) /
                               measured.flops_per_s(true, s.seq, p.batch_heads, d.head_dim, group);
          EXPECT_NEAR(ratio, 1.0, 0.10) << file << " " << kernel << " seq " << s.seq;
          errors.push_back(std::abs(ratio - 1));
          // The forward is read as published either way.
          EXPECT_DOUBLE_EQ(derived.flops_per_s(false, s.seq, p.batch_heads, d.head_dim, group),
                           measured.flops_per_s(false, s.seq, p.batch_heads, d.head_dim, group));
        }
      }
    }
  }
  ASSERT_EQ(errors.size(), 25U);  // 5 shapes each for GB200, GB300 and the GQA H200; 5 per kernel for the older H200
  std::nth_element(errors.begin(), errors.begin() + 12, errors.end());
  EXPECT_LT(errors[12], 0.05);  // the median
}

// FlashAttention-3's own causal backward, published beside its unmasked one in PyTorch's FlexAttention benchmarks
// (pytorch/pytorch PR #137036, drisspg's comment of 2024-10-29, "Different doc masks Fav3", one H100): batch 4 × 16
// heads of 64 at sequence 16,384, fwd_fav3 / bwd_fav3 8,778.53 / 24,306.18 µs unmasked and 4,642.50 / 12,733.66 µs
// causal. The rule derives 24,306.18 × 4,642.50 / 8,778.53 = 12,854.2 µs, 0.9% above the measured backward.
TEST(AttentionTable, TheDerivedMaskedBackwardMatchesFlashAttention3sOwn) {
  const std::string text = std::string(kHeader) +
                           "flash_attn3,4,16384,16,64,1,4642.496109,,0\n"
                           "flash_attn3,4,16384,16,64,0,8778.528214,24306.175232,0\n";
  const AttentionTable t = parse_attention_table_csv(text, "pr137036.csv", "flash_attn3");
  const double causal_flops = 4.0 * 64 * 16384.0 * 16384.0 * 64 * 0.5;
  const double derived_us = 2.5 * causal_flops / t.flops_per_s(true, 16384, 64, 64) * 1e6;
  EXPECT_NEAR(derived_us, 24306.175232 * 4642.496109 / 8778.528214, 0.01);
  EXPECT_NEAR(derived_us / 12733.663559, 1.0, 0.02);
}

// The FlashAttention-3 paper's H100 rates (arXiv 2407.08608, Figures 5 and 6; bench/kernel_tables/published/), causal
// batch 2 × 16 heads × sequence 8192 × head dim 128: 4 × 32 × 8192² × 128 × 0.5 = 549.76 GFLOP. FlashAttention-3's
// forward at 602 TFLOP/s takes 913.2 µs; its backward, published only without the mask (559 TFLOP/s, forward 646),
// runs at 559 × 602 / 646 = 520.9 TFLOP/s: 2.5 × 549.76 GFLOP in 2,638.3 µs. cuDNN's of the same paper: forward 529,
// backward 518 × 529 / 600 = 456.7 TFLOP/s.
TEST(AttentionTable, ThePublishedFlashAttention3TableTimesACallByHand) {
  const std::string path =
      std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/h100-attention-flashattention3-paper.csv";
  const double flops = 4.0 * 32 * 8192.0 * 8192.0 * 128 * 0.5;
  const AttentionTable fa3 = load_attention_table(path, "flash_attn3");
  EXPECT_NEAR(flops / fa3.flops_per_s(false, 8192, 32, 128) * 1e6, 913.2, 0.05);
  EXPECT_NEAR(fa3.flops_per_s(true, 8192, 32, 128), 559e12 * 602 / 646, 1e10);  // times are written to 0.01 µs
  EXPECT_NEAR(2.5 * flops / fa3.flops_per_s(true, 8192, 32, 128) * 1e6, 2638.3, 0.2);
  const AttentionTable cudnn = load_attention_table(path, "cudnn");
  EXPECT_NEAR(cudnn.flops_per_s(true, 8192, 32, 128), 518e12 * 529 / 600, 1e10);
  // Head dim 64 (32 heads of 64 at the same tokens): FlashAttention-3's causal forward at 460 TFLOP/s.
  EXPECT_NEAR(fa3.flops_per_s(false, 8192, 64, 64), 460e12, 1e10);
}

// NVIDIA's published Blackwell tables: cuDNN 9.22 on a GB200, causal batch 2 × 64 query heads (8 key/value heads) ×
// sequence 8192 × head dim 128, forward at 1,574 TFLOP/s and backward at 1,332 (4 × 128 × 8192² × 128 × 0.5 =
// 2,199 GFLOP: 1,397.1 µs and 4,127.3 µs); the GB300 ran the same call at 1,856 and 1,435; cuDNN 9.13 on a B200,
// batch 1 × 128 heads, at 1,171.278 and 942.509.
TEST(AttentionTable, ThePublishedBlackwellTablesGiveBackTheirRates) {
  const std::string dir = std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/";
  const double flops = 4.0 * 128 * 8192.0 * 8192.0 * 128 * 0.5;
  const AttentionTable gb200 = load_attention_table(dir + "gb200-attention-cudnn-frontend-sdpa.csv", "");
  EXPECT_NEAR(flops / gb200.flops_per_s(false, 8192, 128, 128) * 1e6, 1397.1, 0.05);
  EXPECT_NEAR(2.5 * flops / gb200.flops_per_s(true, 8192, 128, 128) * 1e6, 4127.3, 0.05);
  const AttentionTable gb300 = load_attention_table(dir + "gb300-attention-cudnn-frontend-sdpa.csv", "");
  EXPECT_NEAR(gb300.flops_per_s(false, 8192, 128, 128), 1856e12, 1e10);
  EXPECT_NEAR(gb300.flops_per_s(true, 8192, 128, 128), 1435e12, 1e10);
  const AttentionTable b200 = load_attention_table(dir + "b200-attention-cudnn-frontend-sdpa.csv", "cudnn");
  EXPECT_NEAR(b200.flops_per_s(false, 8192, 128, 128), 1171.278e12, 1e10);
  EXPECT_NEAR(b200.flops_per_s(true, 8192, 128, 128), 942.509e12, 1e10);
}

// Grouped-query attention: the optional kv_heads column puts each row in its group (query heads per key/value head;
// absent or empty, multi-head attention), and a call is looked up between the two measured group sizes that bracket
// its own, in log group size and log rate. Here multi-head rows run at 100 TFLOP/s and the 8:1 group's at 200, both
// at sequence 4096 and 16 query heads of 128; a 4:1 call sits 2/3 of the way in log size from 1 to 8, so it runs at
// 100^(1/3) · 200^(2/3) = 158.74 TFLOP/s forward (and half that backward: the row helper's backward).
TEST(AttentionTable, AGroupedQueryCallIsLookedUpBetweenTheMeasuredGroupSizes) {
  const std::string header = "kernel,batch,seq,heads,head_dim,causal,forward_us,backward_us,forward_tflops,kv_heads\n";
  const auto grouped = [](const std::string& line, const std::string& kv_heads) {
    return line.substr(0, line.size() - 1) + "," + kv_heads + "\n";
  };
  const std::string text =
      header + grouped(row("cudnn", 1, 4096, 16, 100), "16") + grouped(row("cudnn", 1, 4096, 16, 200), "2");
  const AttentionTable t = parse_attention_table_csv(text, "gqa.csv", "");
  ASSERT_EQ(t.groups.size(), 2U);
  EXPECT_EQ(t.groups[0].query_heads_per_kv_head, 1);
  EXPECT_EQ(t.groups[1].query_heads_per_kv_head, 8);
  EXPECT_NEAR(t.flops_per_s(false, 4096, 16, 128, 1), 100e12, 1e4);
  EXPECT_NEAR(t.flops_per_s(false, 4096, 16, 128, 8), 200e12, 1e4);
  EXPECT_NEAR(t.flops_per_s(false, 4096, 16, 128, 4), 158.7401e12, 1e8);
  EXPECT_NEAR(t.flops_per_s(true, 4096, 16, 128, 4), 158.7401e12 / 2, 1e8);
  // Beyond the measured sizes, the edge's; the default is multi-head attention.
  EXPECT_NEAR(t.flops_per_s(false, 4096, 16, 128, 16), 200e12, 1e4);
  EXPECT_NEAR(t.flops_per_s(false, 4096, 16, 128), 100e12, 1e4);
  // An empty kv_heads cell is multi-head attention, as a table without the column is.
  const AttentionTable empty_cell =
      parse_attention_table_csv(header + grouped(row("cudnn", 1, 4096, 16, 100), ""), "gqa.csv", "");
  ASSERT_EQ(empty_cell.groups.size(), 1U);
  EXPECT_EQ(empty_cell.groups[0].query_heads_per_kv_head, 1);
  const AttentionTable without_column = parse_attention_table_csv(small_table(), "a.csv", "");
  ASSERT_EQ(without_column.groups.size(), 1U);
  EXPECT_EQ(without_column.groups[0].query_heads_per_kv_head, 1);
  // A table of one group size answers every call with it: the 8:1 rows of NVIDIA's GB200 table serve a multi-head
  // call as they are.
  const AttentionTable gb200 = load_attention_table(
      std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/gb200-attention-cudnn-frontend-sdpa.csv", "");
  ASSERT_EQ(gb200.groups.size(), 1U);
  EXPECT_EQ(gb200.groups[0].query_heads_per_kv_head, 8);
  EXPECT_DOUBLE_EQ(gb200.flops_per_s(false, 8192, 128, 128, 1), gb200.flops_per_s(false, 8192, 128, 128, 8));
}

TEST(AttentionTable, AKvHeadCountThatDoesNotDivideTheQueryHeadsIsRefused) {
  const std::string header = "kernel,batch,seq,heads,head_dim,causal,forward_us,backward_us,kv_heads\n";
  for (const char* kv : {"3", "32", "0", "-8", "two"}) {
    const std::string error = error_of([&] {
      (void)parse_attention_table_csv(header + "cudnn,1,4096,16,128,1,5,9," + std::string(kv) + "\n", "g.csv", "");
    });
    EXPECT_HAS(error, "g.csv:2: 'kv_heads'") << kv;
  }
  EXPECT_HAS(error_of([&] { (void)parse_attention_table_csv(header + "cudnn,1,4096,16,128,1,5,9,3\n", "g.csv", ""); }),
             "g.csv:2: 'kv_heads': 3 key/value heads do not divide the row's 16 query heads into equal groups (write "
             "the key/value head count the call ran with");
  // A causal row's missing backward is derived only from the unmasked row of its own group.
  EXPECT_HAS(error_of([&] {
               (void)parse_attention_table_csv(header + "cudnn,1,4096,16,128,1,5,,2\ncudnn,1,4096,16,128,0,10,30,16\n",
                                               "g.csv", "");
             }),
             "g.csv:2: 'backward_us': the causal row has no backward time");
}

}  // namespace
}  // namespace fsdpsim
