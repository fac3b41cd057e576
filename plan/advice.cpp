#include "plan/advice.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/units.h"

namespace fsdpsim {
namespace {

struct Change {
  std::vector<std::string> assignments;
  std::string explanation;
};

// The single changes worth trying from `c`, each the knob a training engineer would turn.
std::vector<Change> candidate_changes(const Topology& topology, const FsdpConfig& c) {
  std::vector<Change> out;
  if (c.data_parallel_sharding_strategy != ShardingStrategy::optim_grads_params) {
    out.push_back({{"data_parallel_sharding_strategy=optim_grads_params"},
                   "shard the weights too (ZeRO-3): each rank keeps 1/N of them, gathered per layer"});
  }
  if (c.micro_batch_size > 1) {
    out.push_back({{"micro_batch_size=" + std::to_string(c.micro_batch_size / 2)},
                   "halve the micro-batch: half the activations, more micro-batches per step"});
  }
  if (c.recompute_granularity == Recompute::none) {
    out.push_back({{"recompute_granularity=selective"}, "recompute the attention core in backward"});
  }
  // torchtitan's op-level SAC is what FSDP2 users have at hand: it drops about half of a layer's saved tensors.
  if (c.implementation == Implementation::fsdp2 && c.recompute_granularity == Recompute::none) {
    out.push_back({{"recompute_granularity=selective_op"},
                   "torchtitan op-level SAC: keep every second matmul output, recompute the rest in backward"});
  }
  if (c.recompute_granularity != Recompute::full) {
    Change full{{"recompute_granularity=full"},
                "recompute whole layers in backward: keep only each layer's input, ~1/3 more compute"};
    if (c.cpu_offloading_activations) full.assignments.push_back("cpu_offloading_activations=false");  // exclusive
    out.push_back(full);
  }
  if (c.fsdp_double_buffer || c.nccl_ub) {
    out.push_back({{"fsdp_double_buffer=false", "nccl_ub=false"}, "drop the persistent double buffers (and nccl_ub)"});
  }
  if (main_grad_dtype(c) == DType::fp32 || grad_comm_dtype(c) == DType::fp32) {
    out.push_back({{"main_grads_dtype=bf16", "grad_comm_dtype=bf16"}, "accumulate and reduce gradients in BF16"});
  }
  if (c.tp * 2 <= topology.gpus_per_node) {
    out.push_back({{"tp=" + std::to_string(c.tp * 2)}, "double tensor parallelism: splits weights and activations"});
  }
  out.push_back({{"cp=" + std::to_string(c.cp * 2)}, "double context parallelism: splits the sequence"});
  if (c.gpus > 0) {
    out.push_back({{"gpus=" + std::to_string(c.gpus * 2)}, "twice the GPUs: smaller shards per rank"});
  } else {
    out.push_back({{"nodes=" + std::to_string(c.nodes * 2)}, "twice the GPUs: smaller shards per rank"});
  }
  if (c.moe_routing_skew > 1.0) {
    out.push_back({{"moe_routing_skew=1"},
                   "balance the routing (a load-balancing loss, or a capacity factor that drops overflow tokens): "
                   "the busiest rank's experts get the mean load"});
  }
  if (!c.cpu_offloading_activations && c.recompute_granularity == Recompute::none) {
    out.push_back({{"cpu_offloading_activations=true"}, "offload saved activations to host memory during forward"});
  }
  return out;
}

}  // namespace

std::vector<AdviceItem> oom_advice(const ModelSpec& model, const Topology& topology, const FsdpConfig& config,
                                   const EvaluateOptions& options) {
  std::vector<AdviceItem> items;
  for (const Change& change : candidate_changes(topology, config)) {
    FsdpConfig c = config;
    for (const auto& a : change.assignments) apply_override(c, a, "advice");
    AdviceItem item;
    item.change = change.assignments.front();
    item.explanation = change.explanation;
    item.assignments = change.assignments;
    item.result = evaluate_config(model, topology, c, options);
    item.result.assignments = change.assignments;
    if (c.cpu_offloading_activations && !config.cpu_offloading_activations && item.result.valid) {
      // Offload lives or dies by the host: say what it assumed of the node's memory and of its shared host link.
      char assumed[256];
      std::snprintf(assumed, sizeof assumed, " (host: %s per node of %s; %.0f GB/s per GPU, %d GPU%s per host link)",
                    format_bytes(item.result.memory.host_offload_bytes_per_node).c_str(),
                    topology.host_memory_bytes > 0 ? format_bytes(topology.host_memory_bytes).c_str() : "unstated",
                    topology.host_bw_per_gpu_bytes_per_s() / 1e9, topology.gpus_per_host_link,
                    topology.gpus_per_host_link == 1 ? "" : "s");
      item.explanation += assumed;
    }
    if (item.result.valid) items.push_back(std::move(item));
  }
  // Fitting changes first, then those at risk, each fastest first; then the rest by the memory they would still need.
  std::stable_sort(items.begin(), items.end(), [](const AdviceItem& a, const AdviceItem& b) {
    if (a.result.memory.fit != b.result.memory.fit) return a.result.memory.fit < b.result.memory.fit;
    if (a.result.memory.fit != MemoryFit::out_of_memory) return a.result.step_time_s < b.result.step_time_s;
    return a.result.needed_bytes < b.result.needed_bytes;
  });
  return items;
}

std::string advice_text(const std::vector<AdviceItem>& advice, size_t limit) {
  std::ostringstream out;
  out << "\nwhat would make it fit (each change alone, simulated; best first)\n";
  char line[512];
  // Each alternative's GPU count: a change such as tp=2 or nodes=16 is simulated at the GPUs it implies, which the
  // reader compares before taking it.
  std::snprintf(line, sizeof line, "  %-4s %-38s %6s %10s %10s %12s  %s\n", "fits", "change", "GPUs", "memory", "step",
                "tokens/s/GPU", "why");
  out << line;
  size_t shown = 0;
  for (const auto& item : advice) {
    if (shown++ == limit) break;
    std::string change;
    for (const auto& a : item.assignments) change += (change.empty() ? "--set " : " --set ") + a;
    std::snprintf(line, sizeof line, "  %-4s %-38s %6d %10s %9.3fs %12.0f  %s\n",
                  sweep_verdict_label(item.result).c_str(), change.c_str(), item.result.gpus,
                  format_bytes(item.result.needed_bytes).c_str(), item.result.step_time_s,
                  item.result.tokens_per_s_per_gpu, item.explanation.c_str());
    out << line;
  }
  if (advice.empty()) out << "  (no single change could be simulated)\n";
  return out.str();
}

}  // namespace fsdpsim
