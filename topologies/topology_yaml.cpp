// Topology YAML: the node and network shape of a cluster plus its GPU (a profile name, or a profile inline).
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "topologies/hardware.h"
#include "topologies/hardware_yaml.h"

namespace fsdpsim {
namespace {

const std::vector<std::string>& topology_keys() {
  static const std::vector<std::string> keys{"name",
                                             "description",
                                             "gpu",
                                             "gpus_per_node",
                                             "nvlink_domain_gpus",
                                             "nvlink_bw",
                                             "nvls",
                                             "nics_per_node",
                                             "nic_bw",
                                             "ib_sharp",
                                             "host_bw",
                                             "nic_latency",
                                             "max_nics_between_domains"};
  return keys;
}

// `gpu:` is a profile name (a scalar) or a whole profile (a mapping).
GpuProfile read_gpu(YamlMap& map) {
  const YAML::Node node = map.raw("gpu");
  if (node.IsMap()) {
    YamlMap inline_profile(node, map.source(), map.key_path("gpu"));
    return hardware_yaml::read_gpu_profile(inline_profile);
  }
  const YamlValue value(node, map.source(), map.key_path("gpu"));
  if (!node.IsScalar()) value.fail("expected a GPU profile name or a profile mapping", "write e.g. gpu: h100-sxm");
  const std::string name = value.as_string();
  if (auto profile = hardware_yaml::find_gpu_profile_preset(name)) return *profile;
  const std::vector<std::string> valid = gpu_profile_names();
  value.fail("unknown GPU profile '" + name + "'" + did_you_mean(name, valid),
             "valid profiles: " + join(valid) + "; or give the profile inline as a mapping");
}

void read_shape(YamlMap& map, Topology& t) {
  t.gpus_per_node = static_cast<int32_t>(map.get("gpus_per_node").as_int(1, 1 << 20));
  const YamlValue domain = map.get("nvlink_domain_gpus");
  t.nvlink_domain_gpus = static_cast<int32_t>(domain.as_int(1, 1 << 20));
  // An NVLink domain is made of whole nodes (a DGX, or the 18 compute trays of an NVL72 rack).
  if (t.nvlink_domain_gpus % t.gpus_per_node != 0) {
    domain.fail("an NVLink domain of " + std::to_string(t.nvlink_domain_gpus) + " GPUs is not a whole number of " +
                    std::to_string(t.gpus_per_node) + "-GPU nodes",
                "use gpus_per_node (" + std::to_string(t.gpus_per_node) + ") or a multiple of it");
  }
  t.nics_per_node = static_cast<int32_t>(map.get("nics_per_node").as_int(1, 1 << 10));
  const int64_t nics_per_domain = int64_t{t.nics_per_node} * (t.nvlink_domain_gpus / t.gpus_per_node);
  t.max_nics_between_domains =
      map.has("max_nics_between_domains")
          ? static_cast<int32_t>(map.get("max_nics_between_domains").as_int(0, nics_per_domain))
          : 0;
}

void read_links(YamlMap& map, Topology& t) {
  t.nvlink_bw_bytes_per_s = map.get("nvlink_bw").as_bandwidth_bytes_per_s();
  t.nvls = map.bool_or("nvls", false);
  // NVLink SHARP needs NVSwitch gen3 and an SM90+ GPU (NCCL runs NVLS only from Hopper on).
  if (t.nvls && t.gpu.arch == GpuArch::ampere) {
    map.get("nvls").fail(
        "NVLS needs a Hopper or newer GPU, but '" + t.gpu.name + "' is " + std::string(to_string(t.gpu.arch)),
        "set nvls: false");
  }
  t.nic_bw_bytes_per_s = map.get("nic_bw").as_bandwidth_bytes_per_s();
  t.ib_sharp = map.bool_or("ib_sharp", false);
  t.host_bw_bytes_per_s = map.get("host_bw").as_bandwidth_bytes_per_s();
  t.nic_latency_ns = map.has("nic_latency") ? map.get("nic_latency").as_time_ns() : 0;
}

Topology read_topology(YamlMap& map) {
  map.allow(topology_keys());
  map.finish();  // unknown keys first, with "did you mean"
  Topology t;
  const YamlValue name = map.get("name");
  t.name = name.as_string();
  if (t.name.empty()) name.fail("the topology name is empty", "write e.g. name: my-cluster");
  t.description = map.string_or("description", "");
  t.gpu = read_gpu(map);
  read_shape(map, t);
  read_links(map, t);
  return t;
}

}  // namespace

Topology parse_topology_yaml(const std::string& text, const std::string& source) {
  const YamlDocument doc = load_yaml_text(text, source);
  YamlMap map(doc.root, doc.source, "");
  return read_topology(map);
}

std::string topology_to_yaml(const Topology& t) {
  using hardware_yaml::exact_bandwidth_text;
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << t.name;
  out << YAML::Key << "description" << YAML::Value << t.description;
  // A built-in profile is named; anything else (a calibrated or edited profile) is written inline.
  const auto preset = hardware_yaml::find_gpu_profile_preset(t.gpu.name);
  out << YAML::Key << "gpu" << YAML::Value;
  if (preset && *preset == t.gpu) {
    out << t.gpu.name;
  } else {
    out << YAML::BeginMap;
    hardware_yaml::emit_gpu_profile_keys(out, t.gpu);
    out << YAML::EndMap;
  }
  out << YAML::Key << "gpus_per_node" << YAML::Value << t.gpus_per_node;
  out << YAML::Key << "nvlink_domain_gpus" << YAML::Value << t.nvlink_domain_gpus;
  out << YAML::Key << "nvlink_bw" << YAML::Value << exact_bandwidth_text(t.nvlink_bw_bytes_per_s, false);
  out << YAML::Key << "nvls" << YAML::Value << t.nvls;
  out << YAML::Key << "nics_per_node" << YAML::Value << t.nics_per_node;
  out << YAML::Key << "nic_bw" << YAML::Value << exact_bandwidth_text(t.nic_bw_bytes_per_s, true);
  out << YAML::Key << "ib_sharp" << YAML::Value << t.ib_sharp;
  out << YAML::Key << "host_bw" << YAML::Value << exact_bandwidth_text(t.host_bw_bytes_per_s, false);
  out << YAML::Key << "nic_latency" << YAML::Value << hardware_yaml::exact_time_text(t.nic_latency_ns);
  out << YAML::Key << "max_nics_between_domains" << YAML::Value << t.max_nics_between_domains;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace fsdpsim
