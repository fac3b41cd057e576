// NVIDIA's DeepSeek-V3 Megatron-FSDP example script (examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh in
// NVIDIA/Megatron-LM @ d98e8a64ddf3), its training flags pasted whole, on GB200 racks used 64 GPUs each.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "job/job.h"
#include "report/report.h"
#include "sim/engine.h"

namespace fsdpsim {
namespace {

// The fixture's flags with the script's own defaults for its shell variables, as bash would expand them.
std::string script_flags() {
  std::ifstream in(std::string(FSDPSIM_SOURCE_DIR) + "/tests/data/megatron/deepseek_v3_mfsdp_flags.txt");
  std::string text, line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') text += line + "\n";
  }
  for (const auto& [var, value] :
       std::vector<std::pair<std::string, std::string>>{{"${TP}", "1"},
                                                        {"${EP}", "8"},
                                                        {"${MBS}", "4"},
                                                        {"${GBS}", "2048"},
                                                        {"${SHARDING_STRATEGY}", "optim_grads_params"}}) {
    for (size_t at = text.find(var); at != std::string::npos; at = text.find(var)) text.replace(at, var.size(), value);
  }
  return text;
}

Report simulate(int32_t nodes, Job* job_out = nullptr) {
  JobOptions options;
  options.topology = "gb200-nvl72-64";
  options.megatron_args = script_flags();
  options.sets = {"nodes=" + std::to_string(nodes)};
  Job job = resolve_job(options);
  const Schedule schedule = build_job_schedule(job);
  Report report = make_report(schedule, job.topology, run_schedule(schedule, job.topology, SimOptions{}));
  if (job_out) *job_out = std::move(job);
  return report;
}

TEST(DeepSeekV3Script, EveryFlagIsReadAndTheModelIsDeepSeekV3WithOneMtpModule) {
  Job job;
  const Report r = simulate(64, &job);
  // 671.03B parameters in the main model, 37.55B of them active per token (8 of 256 routed experts in 58 MoE layers,
  // the first 3 layers dense: --moe-layer-freq ([0]*3+[1]*58)); the MTP module adds its decoder layer (an MoE layer
  // like the last), enorm, hnorm, eh_proj (7168 × 14336) and final norm: 11.61B, sharing embedding and output
  // layer, so 682.64B. (The Hugging Face checkpoint's 685B also stores the MTP module's copies of both, 2 × 0.93B.)
  EXPECT_EQ(job.model.mtp_num_layers, 1);
  EXPECT_EQ(job.model.num_layers, 61);
  EXPECT_EQ(job.model.vocab_size, 129'280);  // from --tokenizer-model deepseek-ai/DeepSeek-V3
  EXPECT_NEAR(static_cast<double>(r.model_size.params) / 1e9, 682.64, 0.01);
  ModelSpec main_model = job.model;
  main_model.mtp_num_layers = 0;
  EXPECT_NEAR(static_cast<double>(count_parameters(main_model).total) / 1e9, 671.03, 0.01);
  EXPECT_NEAR(static_cast<double>(count_parameters(main_model).active_per_token) / 1e9, 37.55, 0.01);
  // The flags that shape the step are modelled, the rest (logging, data, optimizer, router details) listed once.
  for (const char* modelled : {"--recompute-modules", "--mtp-num-layers", "--moe-layer-freq", "--use-nccl-ub"}) {
    EXPECT_EQ(std::count(job.read_not_modelled.begin(), job.read_not_modelled.end(), modelled), 0) << modelled;
  }
  EXPECT_EQ(std::count(job.read_not_modelled.begin(), job.read_not_modelled.end(), "--lr"), 1);
  EXPECT_EQ(job.config.recompute_modules,
            (std::vector<RecomputeModule>{RecomputeModule::mlp, RecomputeModule::moe, RecomputeModule::mla_up_proj,
                                          RecomputeModule::layernorm}));
}

TEST(DeepSeekV3Script, FitsOn256Gb200sButNotOn128) {
  // 256 GPUs: 16 B per sharded parameter over 256 ranks (expert parameters over the 32-rank expert data-parallel
  // group) and the double-buffer pools persist; the selective recompute of mlp, moe, mla_up_proj and layernorm keeps
  // activations near 75 GiB at the peak (the MTP layer's backward).
  const Report r256 = simulate(64);
  EXPECT_FALSE(r256.oom) << r256.oom_reason;
  EXPECT_LT(r256.peak_reserved_bytes, r256.gpu_memory_bytes);
  // 128 GPUs: the shards double (persistent 55 → 95 GiB) with the same activations: out of memory.
  const Report r128 = simulate(32);
  EXPECT_TRUE(r128.oom);
  EXPECT_GT(r128.persistent_total_bytes - r256.persistent_total_bytes, int64_t{35} << 30);
  EXPECT_EQ(r128.memory_breakdown.at("activation"), r256.memory_breakdown.at("activation"));
}

}  // namespace
}  // namespace fsdpsim
