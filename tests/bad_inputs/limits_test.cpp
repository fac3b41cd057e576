// The limits of common/limits.h: each absurd input is refused up front with a ConfigError that says it is beyond
// what fsdpsim models, names the key and gives the limit; a value at the limit is accepted. Also the two helpers the
// hardening added for messages: plain-text checking and JSON key positions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/json_location.h"
#include "common/limits.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "config/fsdp_config.h"
#include "config/parallel_layout.h"
#include "frontends/megatron_args.h"
#include "frontends/model_files.h"
#include "model/model.h"
#include "plan/sweep.h"
#include "schedule/ir_yaml.h"
#include "schedule/validate.h"
#include "sim/engine.h"
#include "topologies/hardware.h"

#include "tests/schedule/tiny_schedule.h"
#include "tests/support/error_of.h"

namespace fsdpsim {
namespace {

// A small valid model with the given layer count and hidden size (as text, so absurd values can be written).
std::string model_yaml(const std::string& layers, const std::string& hidden, const std::string& heads = "4") {
  return "name: m\nnum_layers: " + layers + "\nhidden_size: " + hidden +
         "\nffn_hidden_size: 128\nnum_attention_heads: " + heads + "\nvocab_size: 256\n";
}

TEST(Limits, InputFilesBeyond64MiBAreRefusedBeforeReading) {
  // A sparse file of 64 MiB + 1 byte: its size is known without writing (or reading) 64 MiB.
  const std::string path = std::string(FSDPSIM_BINARY_DIR) + "/tests/bad_inputs/too_big.yaml";
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  { std::ofstream(path) << "x"; }
  std::filesystem::resize_file(path, (int64_t{64} << 20) + 1);
  const std::string m = error_of([&] { (void)read_text_file(path); });
  // 64 MiB + 1 B formats as 64.0 MiB (one decimal).
  EXPECT_HAS(m, "too_big.yaml: a file of 64.0 MiB is beyond what fsdpsim models");
  EXPECT_HAS(m, "input files may hold at most 64.0 MiB");
  EXPECT_HAS(error_of([&] { (void)load_model(path); }), "beyond what fsdpsim models");  // the model loader too
  std::filesystem::resize_file(path, 1);
  EXPECT_EQ(read_text_file(path), "x");  // a small file is read as before
  std::filesystem::remove(path);
}

TEST(Limits, ModelDimensions) {
  // 16,384 layers is the limit: accepted; 16,385 is refused at the line of num_layers (line 2, value at column 13).
  EXPECT_EQ(parse_model_yaml(model_yaml("16384", "64"), "m.yaml").num_layers, 16384);
  std::string m = error_of([] { (void)parse_model_yaml(model_yaml("16385", "64"), "m.yaml"); });
  EXPECT_HAS(m, "m.yaml:2:13: 'num_layers': num_layers=16385 is beyond what fsdpsim models");
  EXPECT_HAS(m, "use at most 16384");
  // hidden_size 2^20 + 4 = 1048580, a multiple of the 4 heads (line 3, value at column 14).
  m = error_of([] { (void)parse_model_yaml(model_yaml("2", "1048580"), "m.yaml"); });
  EXPECT_HAS(m, "m.yaml:3:14: 'hidden_size': hidden_size=1048580 is beyond what fsdpsim models");
  // A vocabulary of 2^24 + 1 = 16777217.
  m = error_of([] {
    (void)parse_model_yaml(
        "name: m\nnum_layers: 2\nhidden_size: 64\nffn_hidden_size: 128\nnum_attention_heads: 4\n"
        "vocab_size: 16777217\n",
        "m.yaml");
  });
  EXPECT_HAS(m, "'vocab_size': vocab_size=16777217 is beyond what fsdpsim models");
}

TEST(Limits, ModelParameters) {
  // Every dimension within its limit (64 heads of 16,384), the whole too large: 16,384 layers of hidden 2^20 hold at
  // least 16384 × 4 × 2^40 (the four attention projections) ≈ 7.2e16 parameters > 2^50 ≈ 1.13e15.
  const std::string m = error_of([] { (void)parse_model_yaml(model_yaml("16384", "1048576", "64"), "m.yaml"); });
  EXPECT_HAS(m, "'num_layers': a model of");
  EXPECT_HAS(m, "parameters is beyond what fsdpsim models");
  EXPECT_HAS(m, "at most 1.13e+15 parameters");
}

TEST(Limits, HuggingFaceAndMegatronCountsAreNotTruncated) {
  // 2^32 + 1 layers used to become 1 layer when narrowed to int32.
  std::string m = error_of([] {
    (void)import_hf_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 4294967297, "num_attention_heads": 4, "vocab_size": 256})",
                           "c.json");
  });
  // "num_hidden_layers" is on line 2; its 19-character key starts at column 7, the value at column 28.
  EXPECT_HAS(m, "c.json:2:28: 'num_hidden_layers': 4294967297 is beyond what fsdpsim models");
  FsdpConfig config;
  std::optional<ModelSpec> model;
  m = error_of([&] { apply_megatron_args("--num-layers 4294967297", config, model); });
  EXPECT_HAS(m, "'--num-layers': 4294967297 is beyond what fsdpsim models");
  EXPECT_HAS(m, "use at most 16384");
}

TEST(Limits, JobStep) {
  const ModelSpec l405 = model_preset("llama3-405b");
  FsdpConfig c;
  // Tokens per step: 2^30 sequences × 2^21 tokens = 2^51 > 2^50. Micro-batches of 2^20 sequences over dp = 8 make
  // 2^30 / 2^23 = 128 micro-batches, within their own limit, so the token limit is the one that speaks.
  apply_override(c, "micro_batch_size=1048576");
  apply_override(c, "global_batch_size=1073741824");
  apply_override(c, "seq_length=2097152");
  std::string m = error_of([&] { (void)resolve_layout(l405, c, 8); });
  EXPECT_HAS(
      m,
      "'global_batch_size': a step of 2.25e+15 tokens (global_batch_size × seq_length) is beyond what fsdpsim models");
  // Ops: 80,000 sequences over dp 8 = 10,000 micro-batches; at least 2 ops × (126 + 2) units × 10,000 = 2,560,000 ops
  // > 2^20 = 1,048,576.
  c = FsdpConfig{};
  apply_override(c, "global_batch_size=80000");
  m = error_of([&] { (void)resolve_layout(l405, c, 8); });
  EXPECT_HAS(m,
             "a step of 10000 micro-batches through 126 layers (at least 2.56e+06 ops) is beyond what fsdpsim models");
  // Llama-3-8B with 4,096 micro-batches (32,768 / dp 8): at least 2 × 34 units × 4096 = 278,528 ops, and about
  // 5 × 4096 × 2 × 4096 tokens × 8.0e9 parameters ≈ 1.3e18 FLOPs per GPU: both within their limits.
  c = FsdpConfig{};
  apply_override(c, "global_batch_size=32768");
  EXPECT_EQ(resolve_layout(model_preset("llama3-8b"), c, 8).micro_batches, 4096);
  // FLOPs: one sequence of 2^24 tokens per rank through 405B: 2 × 2^24 × 4.06e11 ≈ 1.4e19 for the GEMMs alone.
  c = FsdpConfig{};
  apply_override(c, "seq_length=16777216");
  m = error_of([&] { (void)resolve_layout(l405, c, 8); });
  EXPECT_HAS(m, "<--set seq_length=16777216>: 'seq_length': a step of about");
  EXPECT_HAS(m, "FLOPs per GPU is beyond what fsdpsim models");
}

TEST(Limits, ConfigurationCounts) {
  FsdpConfig c;
  // micro_batch_size is read within 1 .. 2^20, so micro_batch_size × dp cannot overflow.
  EXPECT_HAS(
      error_of([&] { apply_override(c, "micro_batch_size=1048577"); }),
      "<--set micro_batch_size=1048577>: 'micro_batch_size': count 1048577 is out of range (it must be between 1 "
      "and 1048576)");
  EXPECT_HAS(error_of([&] { apply_override(c, "nodes=1048577"); }), "it must be between 1 and 1048576");
}

TEST(Limits, ScheduleFiles) {
  const std::string tiny = schedule_to_yaml(testing::tiny_schedule());
  // 513 streams: one more than kMaxStreams = 512 (8 per pipeline stage × 64 stages).
  std::string streams =
      "version: 1\ninfo: {model: m, implementation: fsdp2, strategy: optim, world_size: 8, "
      "micro_batches: 1, global_tokens_per_step: 1, model_flops_per_gpu: 1, compute_dtype: bf16}\n"
      "units: []\ngroups: []\nbuffers: []\nops: []\nstreams:\n";
  for (int i = 0; i < 513; ++i) streams += "  - {name: s" + std::to_string(i) + "}\n";
  std::string m = error_of([&] { (void)schedule_from_yaml(streams, "s.yaml"); });
  EXPECT_HAS(m, "s.yaml:8:3: 'streams': 513 streams is beyond what fsdpsim models");  // the list starts on line 8
  EXPECT_HAS(m, "a step may have at most 512 streams");
  // A buffer of 2^56 + 1 bytes.
  std::string big = tiny;
  big.replace(big.find("size_bytes: 400"), 15, "size_bytes: 72057594037927937");
  EXPECT_HAS(error_of([&] { (void)schedule_from_yaml(big, "s.yaml"); }), "value 72057594037927937 is out of range");
}

TEST(Limits, ValidateBoundsTheStepTotals) {
  // 40 persistent buffers of 2^56 bytes add up to 40 × 2^56 ≈ 2.9e18 > 2^61 ≈ 2.3e18.
  Schedule s = testing::tiny_schedule();
  for (int i = 0; i < 40; ++i) {
    s.buffers.push_back(Buffer{s.buffers.next_id(), "big", BufferCategory::workspace, limits::kMaxBytes, true, false});
  }
  const std::vector<std::string> problems = validate(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_HAS(problems[0], "limits: the buffers' sizes add up to");
  EXPECT_HAS(problems[0], "beyond what fsdpsim models (at most 2305843009213693952 per step)");
  // A GEMM of 2^40 × 2^40 × 2: 2 × 2^81 FLOPs.
  s = testing::tiny_schedule();
  s.ops[1].gemms = {Gemm{"huge", int64_t{1} << 40, int64_t{1} << 40, 2, 1, false}};
  ASSERT_FALSE(validate(s).empty());
  EXPECT_HAS(validate(s)[0], "limits: the GEMMs' FLOPs of one stage add up to");
}

TEST(Limits, APipelineSplitsTheStepsFlopsOverItsStages) {
  // Megatron-Bridge's Llama-3.1-405B GB200 recipe (256 GPUs, TP 4, PP 16, global batch 1536 of 8,192 tokens): 384
  // micro-batches per data-parallel rank. Through the whole model the estimate is 5 × 384 × 2 × 8192 × 4.06e11 / 4
  // (+ attention) ≈ 3.5e18, above the 2^61 a GPU may do, but each of the 16 stages' GPUs does a sixteenth of it.
  const ModelSpec l405 = model_preset("llama3-405b");
  FsdpConfig c;
  for (const char* set : {"gpus=256", "tp=4", "pp=16", "virtual_pipeline_stages=4",
                          "pipeline_schedule=interleaved_1f1b", "global_batch_size=1536", "seq_length=8192",
                          "account_for_embedding_in_pipeline_split=true", "account_for_loss_in_pipeline_split=true"}) {
    apply_override(c, set);
  }
  EXPECT_EQ(resolve_layout(l405, c, 4).micro_batches, 384);
  // The whole schedule, one rank of every stage, still has to fit int64's sums: four times that batch over 64 stages
  // is about 1.4e19 through the model, beyond 2^62, though only 2.2e17 on each GPU.
  c = FsdpConfig{};
  for (const char* set : {"gpus=1024", "tp=4", "pp=64", "global_batch_size=6144", "seq_length=8192"}) {
    apply_override(c, set);
  }
  const std::string m = error_of([&] { (void)resolve_layout(l405, c, 4); });
  EXPECT_HAS(m, "FLOPs per data-parallel rank over the 64 pipeline stages is beyond what fsdpsim models");
}

TEST(Limits, SimulatorRefusesAStepBeyondAYear) {
  // The forward GEMM of 2^20 × 2^20 × 2^20 is 2^61 ≈ 2.3e18 FLOPs (exactly validate's limit). On a GPU of 1 GFLOPS
  // (the slowest rate a profile may give) at H100's ~0.8 efficiency it takes 2.3e18 / 8e8 ≈ 2.9e9 s, more than
  // kMaxStepTimeNs = 2^55 ns ≈ 3.6e7 s.
  Schedule s = testing::tiny_schedule();
  s.ops[1].gemms = {Gemm{"huge", int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20, 1, false}};
  ASSERT_TRUE(validate(s).empty());
  Topology t = topology_preset("dgx-h100-ndr");
  t.gpu.dense_bf16_flops_per_s = 1e9;
  const std::string m = error_of([&] { (void)run_schedule(s, t, SimOptions{}); });
  EXPECT_HAS(m, "op 1 'fwd.layer.0' would take");
  EXPECT_HAS(m, "which is beyond what fsdpsim models");
  t.gpu.dense_bf16_flops_per_s = 989e12;  // at H100's peak: 2.3e18 / (989e12 × 0.8) ≈ 2.9e3 s, simulated
  EXPECT_GT(run_schedule(s, t, SimOptions{}).steps.back().end_ns, 0);
}

TEST(Limits, HardwareRates) {
  const std::string base = read_text_file(std::string(FSDPSIM_SOURCE_DIR) + "/topologies/presets/dgx-h100-ndr.yaml");
  std::string slow = base;
  slow.replace(slow.find("nvlink_bw: 450GB/s"), 18, "nvlink_bw: 450B/s");  // 450 B/s < 1 MB/s
  EXPECT_HAS(error_of([&] { (void)parse_topology_yaml(slow, "t.yaml"); }),
             "'nvlink_bw': a bandwidth of 450B/s is beyond what fsdpsim models (use between 1MB/s and 1PB/s");
  std::string late = base;
  late.replace(late.find("nic_latency: 0ns"), 16, "nic_latency: 2s");
  EXPECT_HAS(error_of([&] { (void)parse_topology_yaml(late, "t.yaml"); }),
             "'nic_latency': a latency of 2.000 s is beyond what fsdpsim models");
}

TEST(Limits, SweepGrid) {
  SweepSpec spec;
  // 6 axes of 11 values: 11^6 = 1,771,561 points > 1,000,000.
  for (const char* key : {"nodes", "tp", "cp", "micro_batch_size", "seq_length", "recompute_num_layers"}) {
    spec.axes.push_back(GridAxis{key, std::vector<std::string>(11, "1"), {}, {}});
  }
  const std::string m = error_of([&] { (void)sweep_size(spec); });
  EXPECT_HAS(m,
             "<--grid>: a grid of 1.77e+06 points (11 nodes × 11 tp × 11 cp × 11 micro_batch_size × 11 seq_length × "
             "11 recompute_num_layers) is beyond what fsdpsim models");
  spec.axes.pop_back();  // 11^5 = 161,051 points: within the limit
  EXPECT_EQ(sweep_size(spec), 161051);
}

TEST(PlainText, ControlCharactersAndInvalidUtf8) {
  size_t bad = 0;
  EXPECT_TRUE(is_plain_text("DGX H100 — 8× NDR\tnodes\n", &bad));  // UTF-8 em dash and ×, a tab and a newline
  EXPECT_FALSE(is_plain_text("ab\x01", &bad));
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(is_plain_text("a\xff", &bad));  // 0xFF never appears in UTF-8
  EXPECT_EQ(bad, 1u);
  EXPECT_FALSE(is_plain_text("\xc3", &bad));  // a truncated two-byte sequence
  EXPECT_EQ(bad, 0u);
  EXPECT_FALSE(is_plain_text("\xed\xa0\x80", &bad));  // a UTF-16 surrogate (U+D800) encoded in UTF-8
  // A topology name with a control character is refused at its line (the writer could not round-trip it).
  EXPECT_HAS(error_of([] { (void)parse_model_yaml("name: \"a\\x01b\"\n", "m.yaml"); }),
             "m.yaml:1:7: 'name': the text has a control character or is not valid UTF-8 (byte 1)");
}

TEST(JsonLocation, KeyPaths) {
  const std::string text = "{\n  \"a\": 1,\n  \"ops\": [\n    {\"id\": 0},\n    {\"id\": 1, \"name\": \"x\"}\n  ]\n}\n";
  // "a" is on line 2; its value at column 8 (2 spaces, 3 characters of key, ':', ' ').
  EXPECT_EQ(json_path_location(text, "a", "f.json").str(), "f.json:2:8");
  // ops[1] is the object on line 5 at column 5; its "name" value at column 23 (`{"id": 1, ` is columns 5-14, the
  // 6-character key 15-20, then ':' and ' ').
  EXPECT_EQ(json_path_location(text, "ops[1]", "f.json").str(), "f.json:5:5");
  EXPECT_EQ(json_path_location(text, "ops[1].name", "f.json").str(), "f.json:5:23");
  EXPECT_EQ(json_path_location(text, "ops[2]", "f.json").str(), "f.json");  // not there: no line
  EXPECT_EQ(json_path_location("[[[[", "x", "f.json").str(), "f.json");     // any text is safe to scan
}

}  // namespace
}  // namespace fsdpsim
