// The fsdpsim program end to end: the main jobs run, bad input fails with a non-zero exit and a message that names
// the file, the key and the fix.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/run_fsdpsim.h"

namespace {

using Result = ProgramResult;

Result run(const std::string& args) {
  return run_fsdpsim(args);
}

std::string temp_path(const std::string& name) {
  return std::string(FSDPSIM_BINARY_DIR) + "/tests/cli/" + name;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Cli, VersionNamesTheReleaseAndTheBackends) {
  const Result r = run("--version");
  EXPECT_EQ(r.exit_code, 0);
  // The project's version (CMakeLists.txt) and whether this build has the CUDA backend.
  EXPECT_TRUE(contains(r.output, std::string("fsdpsim ") + FSDPSIM_VERSION + " (")) << r.output;
  EXPECT_TRUE(contains(r.output, "backend")) << r.output;
}

TEST(Cli, ScheduleOfTheDefaultJob) {
  const std::string out = temp_path("l70.schedule.yaml");
  const Result r = run("schedule --model llama3-70b --topology dgx-h100-ndr --set nodes=8 -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "llama3-70b, megatron_fsdp optim_grads_params, 64 GPUs")) << r.output;
  std::ifstream written(out);
  EXPECT_TRUE(written.good());
}

TEST(Cli, SimulateWritesJsonAndTrace) {
  const Result r = run("simulate --model llama3-8b --json " + temp_path("r.json") + " --trace " + temp_path("t.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "step time")) << r.output;
  EXPECT_TRUE(contains(r.output, "verdict         fits")) << r.output;
  EXPECT_TRUE(std::ifstream(temp_path("r.json")).good());
  EXPECT_TRUE(std::ifstream(temp_path("t.json")).good());
}

TEST(Cli, FidelityRunsFromAnyFolder) {
  // ctest runs this from the build tree, where no tests/fidelity/measurements.yaml exists: the suite is built in.
  const Result r = run("fidelity --bands");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "{{0.")) << r.output;
}

TEST(Cli, EveryVerdictCarriesItsBand) {
  const Result simulate = run("simulate --model llama3-8b --no-advice");
  EXPECT_TRUE(contains(simulate.output, " published runs)")) << simulate.output;
  const Result fit = run("fit --model llama3-8b --max-nodes 2");
  EXPECT_TRUE(contains(fit.output, "(band ")) << fit.output;
  EXPECT_TRUE(contains(fit.output, "published runs")) << fit.output;
  const Result sweep = run("sweep --model llama3-8b --grid micro_batch_size=1,2 --expandable-segments");
  EXPECT_EQ(sweep.exit_code, 0) << sweep.output;
  EXPECT_TRUE(contains(sweep.output, "90% band")) << sweep.output;
}

TEST(Cli, SweepComparesTheFsdpOnlyPlanWithItsPipelinePlans) {
  // 16 GPUs of Llama-3-8B: pp=1 and pp 2, 4, 8, 16 with both schedules, all at the FSDP-only plan's global batch.
  const Result r = run("sweep --model llama3-8b --set nodes=2 --compare-pp");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "sweep of 9 configurations")) << r.output;
  EXPECT_TRUE(contains(r.output, "every plan runs 16 GPUs and a global batch of 16 sequences")) << r.output;
  EXPECT_TRUE(contains(r.output, "pp=16 pipeline_schedule=interleaved_1f1b")) << r.output;
  // What every plan shares is stated; what --compare-pp varies (pp, its schedule and stages) and the GPUs are not.
  EXPECT_TRUE(contains(r.output, "fixed: nodes=2 implementation=megatron_fsdp")) << r.output;
  EXPECT_TRUE(contains(r.output, "seq_length=4096 micro_batch_size=1")) << r.output;
  EXPECT_FALSE(contains(r.output, " pp=1 ")) << r.output;
  const Result grid = run("sweep --model llama3-8b --set seq_length=8192 --set recompute_granularity=selective "
                          "--grid tp=1,2");
  EXPECT_TRUE(contains(grid.output, "ep=1 pp=1 seq_length=8192")) << grid.output;
  EXPECT_TRUE(contains(grid.output, "recompute_granularity=selective recompute_modules=core_attn\n")) << grid.output;
  EXPECT_FALSE(contains(grid.output, "tp=1 cp")) << grid.output;
  const Result nothing = run("sweep --model llama3-8b");
  EXPECT_NE(nothing.exit_code, 0);
  EXPECT_TRUE(contains(nothing.output, "'--grid': nothing to sweep")) << nothing.output;
}

TEST(Cli, TheRunHeaderShowsTheLayout) {
  // 32 GPUs, pp 4 with interleaving over 2 chunks: dp = 32 / 4 = 8, and without a global batch pp = 4 micro-batches.
  const Result r = run("simulate --model llama3-8b --no-advice --set gpus=32 --set pp=4 --set virtual_pipeline_stages=2 "
                       "--set pipeline_schedule=interleaved_1f1b --set recompute_granularity=selective");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "  layout: dp=8 tp=1 cp=1 ep=1 pp=4 vp=2; 4 micro-batches of 1 × 4096 tokens; "
                                 "recompute selective (core_attn); bf16\n"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "warning:")) << r.output;
}

TEST(Cli, FewerMicroBatchesThanStagesWarnAndNameTheSetting) {
  // 16 GPUs, pp 4: dp 4, and a global batch of 4 sequences is one micro-batch per step, three stages idle at a time.
  const Result plain = run("simulate --model llama3-8b --no-advice --set gpus=16 --set pp=4 --set global_batch_size=4");
  EXPECT_TRUE(contains(plain.output, "warning: 1 micro-batch per step on pp=4 pipeline stages: most of the step is "
                                     "pipeline bubble; raise global_batch_size to at least 4 × micro_batch_size × dp=4"))
      << plain.output;
  // torchtitan's command line runs one micro-batch unless --parallelism.num_pp_microbatches says more.
  const std::string launch = "NGPU=64 ./run_train.sh --module llama3 --config llama3_70b "
                             "--parallelism.pipeline_parallel_degree 2";
  const Result titan = run("simulate --no-advice --torchtitan-args '" + launch + "'");
  EXPECT_TRUE(contains(titan.output, "raise --parallelism.num_pp_microbatches (torchtitan's default is 1) to at least 2"))
      << titan.output;
  const Result enough = run("simulate --no-advice --torchtitan-args '" + launch +
                            " --parallelism.num_pp_microbatches 8'");
  EXPECT_FALSE(contains(enough.output, "warning:")) << enough.output;
}

TEST(Cli, APredictedMemorySnapshotValidatesAgainstItsOwnPrediction) {
  const std::string json = temp_path("snap.json"), pickle = temp_path("snap.pickle");
  ASSERT_EQ(run("simulate --model llama3-8b --no-advice --json " + json + " --memory-snapshot " + pickle).exit_code, 0);
  const Result r = run("validate --predicted " + json + " --measured-memory " + pickle);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "memory: the prediction against the snapshot")) << r.output;
  EXPECT_TRUE(contains(r.output, "peak reserved")) << r.output;
  EXPECT_TRUE(contains(r.output, "optimizer state")) << r.output;
  EXPECT_TRUE(contains(r.output, "sharded weights and grads = param_shard + main_weight + grad_shard")) << r.output;
}

TEST(Cli, SimulateAScheduleFile) {
  const std::string file = temp_path("l8.schedule.yaml");
  ASSERT_EQ(run("schedule --model llama3-8b --set nodes=2 -o " + file).exit_code, 0);
  const Result r = run("simulate --schedule " + file + " --topology dgx-h100-ndr");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "2 nodes, 16 GPUs")) << r.output;
}

TEST(Cli, AnEmptyConfigurationFileIsReportedNotSilentlyTakenAsDefaults) {
  const std::string file = temp_path("empty.yaml");
  std::ofstream(file) << "# nothing set yet\n";
  const Result r = run("schedule --model llama3-8b -c " + file);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "warning: " + file + " sets no key; every key takes its default")) << r.output;
}

TEST(Cli, MissingScheduleFile) {
  const Result r = run("simulate --schedule /nonexistent/s.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "fsdpsim: error: /nonexistent/s.yaml: cannot open file")) << r.output;
}

TEST(Cli, UnknownTopology) {
  const Result r = run("simulate --model llama3-8b --topology dgx-h100-ndx");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "dgx-h100-ndx")) << r.output;
  EXPECT_TRUE(contains(r.output, "did you mean 'dgx-h100-ndr'")) << r.output;
}

TEST(Cli, ScheduleForAnotherWorldSize) {
  const std::string file = temp_path("l8.16gpus.yaml");
  ASSERT_EQ(run("schedule --model llama3-8b --set nodes=2 -o " + file).exit_code, 0);
  Result r = run("simulate --schedule " + file + " --set nodes=4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "'nodes': the schedule in " + file + " is for 16 GPUs but nodes=4 gives 32"))
      << r.output;
  // 4 GPUs (one GB200 tray) on 8-GPU DGX nodes: half of one node, on its NVLink.
  const std::string small = temp_path("l8.4gpus.yaml");
  ASSERT_EQ(run("schedule --model llama3-8b --topology gb200-nvl72 -o " + small).exit_code, 0);
  r = run("simulate --schedule " + small + " --topology dgx-h100-ndr");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dgx-h100-ndr (4 of its 8 GPUs)")) << r.output;
}

TEST(Cli, BadConfigurationNamesFileLineAndKey) {
  const std::string cfg = temp_path("bad.yaml");
  std::ofstream(cfg) << "nodes: 1\ntp: 3\n";
  Result r = run("schedule --model llama3-70b -c " + cfg);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, cfg + ":2:5: 'tp'")) << r.output;
  r = run("schedule --model llama3-70b --set micro_batch_sise=2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "did you mean 'micro_batch_size'")) << r.output;
  r = run("schedule --model llama3-70c");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "unknown model 'llama3-70c'")) << r.output;
}

TEST(Cli, MegatronArgsJob) {
  const Result r =
      run("schedule --topology dgx-h100-ndr --set nodes=8 --megatron-args \"--num-layers 80 --hidden-size 8192 "
          "--ffn-hidden-size 28672 --num-attention-heads 64 --group-query-attention --num-query-groups 8 "
          "--vocab-size 128256 --swiglu --untie-embeddings-and-output-weights --normalization RMSNorm "
          "--disable-bias-linear --position-embedding-type rope --use-megatron-fsdp\"");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "82 (embedding, 80 decoder layers, output)")) << r.output;
}

TEST(Cli, FidelityCheckFailsWhenATargetIsMissed) {
  const std::string data = std::string(FSDPSIM_SOURCE_DIR) + "/tests/fidelity/measurements.yaml";
  Result r = run("fidelity --check --data " + data);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "peak_memory_gib        held_out")) << r.output;
  // A throughput target no model of published runs meets (0.1%) must fail the check with a non-zero exit.
  r = run("fidelity --check --throughput-target 0.001 --data " + data);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "throughput: held-out median error")) << r.output;
  r = run("fidelity --data " + temp_path("no-such-file.yaml"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "no-such-file.yaml")) << r.output;
}

// Measured kernel tables in the suite: only the named profile's rows run, each timed by the tables (their GEMMs and
// attention take no efficiency and no clock fraction), so a row's prediction differs from the fitted one.
TEST(Cli, FidelityWithMeasuredTablesRunsTheirGpusRowsOnly) {
  const std::string tables = std::string(FSDPSIM_SOURCE_DIR) + "/bench/results/2026-11-26-h100-kernels/";
  const std::string gemm = "--gemm-table " + tables + "gemm.csv";
  Result r = run("fidelity " + gemm);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "--tables-for")) << r.output;
  r = run("fidelity " + gemm + " --tables-for no-such-gpu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "no row of the suite runs on GPU profile 'no-such-gpu'")) << r.output;
  r = run("fidelity " + gemm + " --attention-table " + tables +
          "attention.csv --attention-kernel cudnn --tables-for h100-sxm");
  EXPECT_TRUE(contains(r.output, "bridge-25.11-llama3-8b-8xh100-mfsdp-tp1-gbs128-mbs1")) << r.output;
  EXPECT_FALSE(contains(r.output, "h100-96gb")) << r.output;  // torchtitan's rows run on the 96 GB variant
  EXPECT_FALSE(contains(r.output, "a100")) << r.output;
  const Result fitted = run("fidelity");
  const auto line_of = [](const std::string& text, const std::string& row) {
    const size_t at = text.find(row + " ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  const std::string row = "bridge-25.11-llama3-8b-8xh100-mfsdp-tp1-gbs128-mbs1";
  EXPECT_FALSE(line_of(r.output, row).empty());
  EXPECT_NE(line_of(r.output, row), line_of(fitted.output, row));
}

// A report timed by measured tables says which: the text's "timed by measured tables" line and the JSON's
// `measured_tables` name each file and the attention kernel read; a report timed by the profile has neither.
TEST(Cli, SimulateNamesTheMeasuredTablesThatTimedIt) {
  const std::string published = std::string(FSDPSIM_SOURCE_DIR) + "/bench/kernel_tables/published/";
  const std::string job = "simulate --model llama3-8b --topology dgx-h100-ndr --set nodes=1 --set seq_length=8192 ";
  const std::string json = temp_path("measured_tables.json");
  Result r = run(job + "--gemm-table " + published + "h100-gemm-openxla.csv --attention-table " + published +
                 "h100-attention-flashattention3-paper.csv --attention-kernel flash_attn3 --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "timed by measured tables: GEMMs: " + published +
                                     "h100-gemm-openxla.csv; attention: " + published +
                                     "h100-attention-flashattention3-paper.csv, kernel flash_attn3"))
      << r.output;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(text, "\"measured_tables\": [")) << text.substr(0, 2000);
  // One table's only kernel is read without naming it, and the report names the kernel it read.
  r = run(job + "--attention-table " + published + "gb200-attention-cudnn-frontend-sdpa.csv");
  // NVIDIA's GB200 rows ran Llama-3.1's 8:1 grouped-query shape, Llama-3-8B runs 4:1, and the line says both.
  EXPECT_TRUE(contains(r.output,
                       "gb200-attention-cudnn-frontend-sdpa.csv, kernel cudnn (query heads per key/value head: 8; "
                       "this job's 4 timed at the nearest)"))
      << r.output;
  r = run(job + "--json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "timed by measured tables")) << r.output;
  std::ifstream plain(json);
  const std::string plain_text((std::istreambuf_iterator<char>(plain)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(contains(plain_text, "measured_tables")) << plain_text.substr(0, 2000);
}

}  // namespace
