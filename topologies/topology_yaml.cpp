// Topology YAML: the node and network shape of a cluster plus its GPU (a profile name, or a profile inline).
#include <string>
#include <vector>

#include "common/error.h"
#include "common/key_table.h"
#include "common/text.h"
#include "topologies/hardware.h"
#include "topologies/hardware_yaml.h"

namespace fsdpsim {
namespace {

using TopologyRow = KeyRow<Topology>;
using hardware_yaml::exact_bandwidth_text;
using hardware_yaml::exact_time_text;

// `gpu:` is a profile name (a scalar) or a whole profile (a mapping).
GpuProfile read_gpu(const YamlValue& value) {
  const YAML::Node& node = value.node();
  if (node.IsMap()) {
    YamlMap inline_profile(node, value.source(), value.key_path());
    return hardware_yaml::read_gpu_profile(inline_profile);
  }
  if (!node.IsScalar()) value.fail("expected a GPU profile name or a profile mapping", "write e.g. gpu: h100-sxm");
  const std::string name = value.as_string();
  if (auto profile = hardware_yaml::find_gpu_profile_preset(name)) return *profile;
  const std::vector<std::string> valid = gpu_profile_names();
  value.fail("unknown GPU profile '" + name + "'" + did_you_mean(name, valid),
             "valid profiles: " + join(valid) + "; or give the profile inline as a mapping");
}

// A built-in profile is named; anything else (a calibrated or edited profile) is written inline.
void write_gpu_value(YAML::Emitter& out, const GpuProfile& gpu) {
  const auto preset = hardware_yaml::find_gpu_profile_preset(gpu.name);
  if (preset && *preset == gpu) {
    out << gpu.name;
    return;
  }
  out << YAML::BeginMap;
  hardware_yaml::emit_gpu_profile_keys(out, gpu);
  out << YAML::EndMap;
}

void write_gpu(YAML::Emitter& out, const std::string& key, const GpuProfile& gpu) {
  out << YAML::Key << key << YAML::Value;
  write_gpu_value(out, gpu);
}

// An NVLink domain is made of whole nodes (a DGX, or the 18 compute trays of an NVL72 rack).
void check_whole_nodes(const Topology& t, const YamlValue& domain) {
  if (t.nvlink_domain_gpus % t.gpus_per_node == 0) return;
  domain.fail("an NVLink domain of " + std::to_string(t.nvlink_domain_gpus) + " GPUs is not a whole number of " +
                  std::to_string(t.gpus_per_node) + "-GPU nodes",
              "use gpus_per_node (" + std::to_string(t.gpus_per_node) + ") or a multiple of it");
}

// NVLink SHARP needs NVSwitch gen3 and an SM90+ NVIDIA GPU (NCCL runs NVLS only from Hopper on; AMD has none).
void check_nvls_gpu(const Topology& t, const YamlValue& nvls) {
  if (!t.nvls || (t.gpu.arch != GpuArch::ampere && !is_amd(t.gpu.arch))) return;
  nvls.fail(
      "NVLS needs an NVIDIA Hopper or newer GPU, but '" + t.gpu.name + "' is " + std::string(to_string(t.gpu.arch)),
      "set nvls: false");
}

// A point-to-point mesh (AMD's Infinity Fabric between the OAMs of a platform) joins the GPUs of one node; no mesh
// spans nodes.
void check_mesh_in_one_node(const Topology& t, const YamlValue& mesh) {
  if (!t.xgmi_mesh || t.nvlink_domain_gpus == t.gpus_per_node) return;
  mesh.fail("a point-to-point mesh joins the GPUs of one node, but nvlink_domain_gpus (" +
                std::to_string(t.nvlink_domain_gpus) + ") spans " +
                std::to_string(t.nvlink_domain_gpus / t.gpus_per_node) + " nodes of " +
                std::to_string(t.gpus_per_node) + " GPUs",
            "set nvlink_domain_gpus to gpus_per_node (" + std::to_string(t.gpus_per_node) +
                "), or xgmi_mesh: false for a switched fabric");
}

// A link's bandwidth, read in the second pass (see topology_rows); `prefer_bits` for line rates quoted in bits.
TopologyRow link_bandwidth_row(const std::string& key, double Topology::*field, bool prefer_bits) {
  return {key, KeyPresence::required,
          [field](Topology& t, const YamlValue& v) { t.*field = v.as_bandwidth_bytes_per_s(); },
          [field, prefer_bits](YAML::Emitter& o, const std::string& k, const Topology& t) {
            emit_key(o, k, exact_bandwidth_text(t.*field, prefer_bits));
          },
          ReadPass::second};
}

// `mixed_gpus:` the pool's other GPUs, each a profile name or a whole profile as `gpu:` is; read in the second pass.
TopologyRow mixed_gpus_row() {
  return {"mixed_gpus", KeyPresence::optional,
          [](Topology& t, const YamlValue& v) {
            if (!v.node().IsSequence() || v.node().size() == 0) {
              v.fail("expected a list of the pool's other GPUs", "write e.g. mixed_gpus: [h100-sxm]");
            }
            for (size_t i = 0; i < v.node().size(); ++i) {
              t.mixed_gpus.push_back(
                  read_gpu(YamlValue(v.node()[i], v.source(), v.key_path() + "[" + std::to_string(i) + "]")));
            }
          },
          [](YAML::Emitter& o, const std::string& k, const Topology& t) {
            if (t.mixed_gpus.empty()) return;
            o << YAML::Key << k << YAML::Value << YAML::BeginSeq;
            for (const GpuProfile& gpu : t.mixed_gpus) write_gpu_value(o, gpu);
            o << YAML::EndSeq;
          },
          ReadPass::second};
}

// Every key a topology may hold, once: the allowed keys, the reader and the writer (table order, which is the
// file's). The node shape is read first and the links (the second pass) after, as they always have been, so a file
// with a problem in each reports the shape's. Optional keys are always written, at their default too.
const std::vector<TopologyRow>& topology_rows() {
  using R = KeyPresence;
  static const std::vector<TopologyRow> rows{
      {"name", R::required,
       [](Topology& t, const YamlValue& v) {
         t.name = v.as_string();
         if (t.name.empty()) v.fail("the topology name is empty", "write e.g. name: my-cluster");
       },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.name); }},
      {"description", R::optional, [](Topology& t, const YamlValue& v) { t.description = v.as_string(); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.description); }},
      {"gpu", R::required, [](Topology& t, const YamlValue& v) { t.gpu = read_gpu(v); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { write_gpu(o, k, t.gpu); }},
      {"gpus_per_node", R::required,
       [](Topology& t, const YamlValue& v) { t.gpus_per_node = static_cast<int32_t>(v.as_int(1, 1 << 20)); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.gpus_per_node); }},
      {"nvlink_domain_gpus", R::required,
       [](Topology& t, const YamlValue& v) {
         t.nvlink_domain_gpus = static_cast<int32_t>(v.as_int(1, 1 << 20));
         check_whole_nodes(t, v);
       },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.nvlink_domain_gpus); }},
      link_bandwidth_row("nvlink_bw", &Topology::nvlink_bw_bytes_per_s, false),
      {"nvls", R::optional,
       [](Topology& t, const YamlValue& v) {
         t.nvls = v.as_bool();
         check_nvls_gpu(t, v);
       },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.nvls); }, ReadPass::second},
      {"nics_per_node", R::required,
       [](Topology& t, const YamlValue& v) { t.nics_per_node = static_cast<int32_t>(v.as_int(1, 1 << 10)); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.nics_per_node); }},
      link_bandwidth_row("nic_bw", &Topology::nic_bw_bytes_per_s, true),
      {"ib_sharp", R::optional, [](Topology& t, const YamlValue& v) { t.ib_sharp = v.as_bool(); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.ib_sharp); }, ReadPass::second},
      link_bandwidth_row("host_bw", &Topology::host_bw_bytes_per_s, false),
      {"gpus_per_host_link", R::optional,
       [](Topology& t, const YamlValue& v) {
         t.gpus_per_host_link = static_cast<int32_t>(v.as_int(1, t.gpus_per_node));
       },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.gpus_per_host_link); },
       ReadPass::second},
      {"host_memory", R::optional, [](Topology& t, const YamlValue& v) { t.host_memory_bytes = v.as_bytes(0); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) {
         emit_key(o, k, hardware_yaml::exact_bytes_text(t.host_memory_bytes));
       },
       ReadPass::second},
      {"xgmi_mesh", R::optional,
       [](Topology& t, const YamlValue& v) {
         t.xgmi_mesh = v.as_bool();
         check_mesh_in_one_node(t, v);
       },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.xgmi_mesh); },
       ReadPass::second},
      {"nic_latency", R::optional, [](Topology& t, const YamlValue& v) { t.nic_latency_ns = v.as_time_ns(); },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) {
         emit_key(o, k, exact_time_text(t.nic_latency_ns));
       },
       ReadPass::second},
      mixed_gpus_row(),
      // At most every NIC of a domain (read after nics_per_node and the domain size).
      {"max_nics_between_domains", R::optional,
       [](Topology& t, const YamlValue& v) {
         const int64_t nics_per_domain = int64_t{t.nics_per_node} * (t.nvlink_domain_gpus / t.gpus_per_node);
         t.max_nics_between_domains = static_cast<int32_t>(v.as_int(0, nics_per_domain));
       },
       [](YAML::Emitter& o, const std::string& k, const Topology& t) { emit_key(o, k, t.max_nics_between_domains); }},
  };
  return rows;
}

Topology read_topology(YamlMap& map) {
  map.allow(keys_of(topology_rows()));
  map.finish();  // unknown keys first, with "did you mean"
  Topology t;
  read_keys(map, topology_rows(), t);
  return t;
}

}  // namespace

Topology parse_topology_yaml(const std::string& text, const std::string& source) {
  const YamlDocument doc = load_yaml_text(text, source);
  YamlMap map(doc.root, doc.source, "");
  return read_topology(map);
}

std::string topology_to_yaml(const Topology& t) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  write_keys(out, topology_rows(), t);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace fsdpsim
