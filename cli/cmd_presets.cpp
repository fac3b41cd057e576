#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "config/fsdp_config.h"
#include "frontends/megatron_args.h"
#include "model/model.h"
#include "topologies/hardware.h"

namespace fsdpsim::cli {
namespace {

struct PresetsOptions {
  bool keys = false;
  bool megatron_flags = false;
  std::string json;
};

// Everything `presets` lists, for programs: the models with their sizes, the topologies with their GPUs, the
// GPU profiles, the configuration keys and the Megatron-LM flags read.
std::string presets_json() {
  nlohmann::ordered_json j;
  j["models"] = nlohmann::ordered_json::array();
  for (const auto& name : model_preset_names()) {
    const ModelSpec m = model_preset(name);
    j["models"].push_back({{"name", name},
                           {"parameters", count_parameters(m).total},
                           {"layers", m.num_layers},
                           {"hidden_size", m.hidden_size},
                           {"experts", m.is_moe() ? m.moe.num_experts : 0},
                           {"top_k", m.is_moe() ? m.moe.top_k : 0}});
  }
  j["topologies"] = nlohmann::ordered_json::array();
  for (const auto& name : topology_preset_names()) {
    const Topology t = topology_preset(name);
    j["topologies"].push_back({{"name", name},
                               {"description", t.description},
                               {"gpu", t.gpu.name},
                               {"gpus_per_node", t.gpus_per_node},
                               {"nvlink_domain_gpus", t.nvlink_domain_gpus}});
  }
  j["gpu_profiles"] = gpu_profile_names();
  j["keys"] = nlohmann::ordered_json::array();
  for (const auto& k : config_keys()) j["keys"].push_back({{"name", k.name}, {"type", k.type}, {"help", k.help}});
  j["megatron_flags"] = known_megatron_flags();
  return j.dump(2) + "\n";
}

void print_presets() {
  char line[256];
  std::cout << "models:\n";
  for (const auto& name : model_preset_names()) {
    const ModelSpec m = model_preset(name);
    const ParameterCount p = count_parameters(m);
    std::snprintf(
        line, sizeof line, "  %-16s %8.2fB parameters, %3d layers, hidden %6lld%s\n", name.c_str(),
        static_cast<double>(p.total) / 1e9, m.num_layers, static_cast<long long>(m.hidden_size),
        m.is_moe()
            ? (", MoE " + std::to_string(m.moe.num_experts) + " experts top-" + std::to_string(m.moe.top_k)).c_str()
            : "");
    std::cout << line;
  }
  std::cout << "\ntopologies:\n";
  for (const auto& name : topology_preset_names()) {
    const Topology t = topology_preset(name);
    std::snprintf(line, sizeof line, "  %-20s %s\n", name.c_str(), t.description.c_str());
    std::cout << line;
  }
  std::cout << "\nGPU profiles:\n";
  for (const auto& name : gpu_profile_names()) std::cout << "  " << name << "\n";
}

}  // namespace

void register_presets(CLI::App& app) {
  auto options = std::make_shared<PresetsOptions>();
  CLI::App* cmd = app.add_subcommand("presets", "list the built-in models, topologies and GPU profiles");
  cmd->add_flag("--keys", options->keys, "list the configuration keys with their help");
  cmd->add_flag("--megatron-flags", options->megatron_flags, "list the Megatron-LM flags --megatron-args reads");
  cmd->add_option("--json", options->json, "write every preset, key and flag as JSON to this file");
  cmd->callback([options] {
    if (!options->json.empty()) write_text_file(options->json, presets_json(), "--json");
    if (options->keys) {
      for (const auto& k : config_keys()) std::cout << k.name << " (" << k.type << "): " << k.help << "\n";
      return;
    }
    if (options->megatron_flags) {
      for (const auto& f : known_megatron_flags()) std::cout << f << "\n";
      return;
    }
    print_presets();
  });
}

}  // namespace fsdpsim::cli
