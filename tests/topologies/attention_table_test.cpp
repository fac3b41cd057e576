// Measured fused-attention tables: one kernel's causal rows read from the measure script's CSV, the achieved rate
// interpolated in log head dim, log sequence and log batch × heads (derived by hand below), clamped at the edges, and
// refused with the file, line and field when malformed; the H100 table in bench/results gives back its rows.
#include "topologies/attention_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error.h"
#include "tests/support/error_of.h"

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

}  // namespace
}  // namespace fsdpsim
