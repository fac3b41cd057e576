// Topologies: the built-in presets against their cited figures, exact round trips, and every error path.
#include <gtest/gtest.h>

#include <string>

#include "common/units.h"
#include "tests/topologies/test_support.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

using test::with_line;

// A valid topology; the error tests change one line of it (line numbers in the comments).
const std::string kTopology =
    "name: test-cluster\n"           // 1
    "gpu: h100-sxm\n"                // 2
    "gpus_per_node: 8\n"             // 3
    "nvlink_domain_gpus: 8\n"        // 4
    "nvlink_bw: 450GB/s\n"           // 5
    "nvls: true\n"                   // 6
    "nics_per_node: 8\n"             // 7
    "nic_bw: 400Gb/s\n"              // 8
    "ib_sharp: false\n"              // 9
    "host_bw: 64GB/s\n"              // 10
    "nic_latency: 0ns\n"             // 11
    "max_nics_between_domains: 0\n"  // 12
    "description: a test\n";         // 13

std::string parse_error(const std::string& text) {
  return error_of([&] { (void)parse_topology_yaml(text, "topo.yaml"); });
}

TEST(TopologyYaml, ParsesEveryKey) {
  const Topology t = parse_topology_yaml(kTopology, "topo.yaml");
  EXPECT_EQ(t.name, "test-cluster");
  EXPECT_EQ(t.description, "a test");
  EXPECT_EQ(t.gpu, gpu_profile("h100-sxm"));
  EXPECT_EQ(t.gpus_per_node, 8);
  EXPECT_EQ(t.nvlink_domain_gpus, 8);
  EXPECT_DOUBLE_EQ(t.nvlink_bw_bytes_per_s, 450e9);
  EXPECT_TRUE(t.nvls);
  EXPECT_EQ(t.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(t.nic_bw_bytes_per_s, 50e9);  // 400 Gb/s / 8 bits = 50e9 B/s
  EXPECT_FALSE(t.ib_sharp);
  EXPECT_DOUBLE_EQ(t.host_bw_bytes_per_s, 64e9);
  EXPECT_EQ(t.nic_latency_ns, 0);
  EXPECT_EQ(t.max_nics_between_domains, 0);
}

TEST(TopologyYaml, OptionalKeysTakeTheirDefaults) {
  std::string text = with_line(kTopology, "description", "");
  for (const char* key : {"nvls", "ib_sharp", "nic_latency", "max_nics_between_domains"}) {
    text = with_line(text, key, "");
  }
  const Topology t = parse_topology_yaml(text, "topo.yaml");
  EXPECT_EQ(t.description, "");
  EXPECT_FALSE(t.nvls);
  EXPECT_FALSE(t.ib_sharp);
  EXPECT_EQ(t.nic_latency_ns, 0);
  EXPECT_EQ(t.max_nics_between_domains, 0);
}

TEST(TopologyYaml, InlineGpuProfile) {
  const std::string text = with_line(
      kTopology, "gpu", "gpu:\n" + [] {
        // The h100-sxm profile, indented under gpu:, with one value changed.
        std::string profile = gpu_profile_to_yaml(gpu_profile("h100-sxm"));
        std::string indented;
        size_t start = 0;
        while (start < profile.size()) {
          const size_t end = profile.find('\n', start);
          indented += "  " + profile.substr(start, end - start) + "\n";
          start = end + 1;
        }
        return with_line(indented, "  ring_sms", "  ring_sms: 20");
      }());
  const Topology t = parse_topology_yaml(text, "topo.yaml");
  GpuProfile expected = gpu_profile("h100-sxm");
  expected.ring_sms = 20;
  EXPECT_EQ(t.gpu, expected);
}

// ---- presets against the figures their YAML cites ---------------------------------------------------------------
TEST(TopologyPresets, DgxH100Ndr) {
  const Topology t = topology_preset("dgx-h100-ndr");
  EXPECT_EQ(t.gpu, gpu_profile("h100-sxm"));
  EXPECT_EQ(t.gpus_per_node, 8);
  EXPECT_EQ(t.nvlink_domain_gpus, 8);
  EXPECT_DOUBLE_EQ(t.nvlink_bw_bytes_per_s, 450e9);  // NVLink4: 900 GB/s total / 2 directions
  EXPECT_TRUE(t.nvls);                               // NVSwitch gen3
  EXPECT_FALSE(t.ib_sharp);
  EXPECT_EQ(t.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(t.nic_bw_bytes_per_s, 50e9);  // NDR: 400 Gb/s / 8 = 50e9 B/s
  // Per node: 8 NICs × 50e9 = 400e9 B/s, close to one GPU's 450e9 NVLink rate (why multi-node rings keep busbw).
  EXPECT_DOUBLE_EQ(t.nics_per_node * t.nic_bw_bytes_per_s, 400e9);
  EXPECT_DOUBLE_EQ(t.host_bw_bytes_per_s, 64e9);  // PCIe Gen5 x16 per direction
  EXPECT_EQ(t.max_nics_between_domains, 0);
}

TEST(TopologyPresets, SharpVariantDiffersOnlyInIbSharp) {
  Topology expected = topology_preset("dgx-h100-ndr");
  const Topology sharp = topology_preset("dgx-h100-ndr-sharp");
  EXPECT_TRUE(sharp.ib_sharp);
  expected.name = sharp.name;
  expected.description = sharp.description;
  expected.ib_sharp = true;
  EXPECT_EQ(sharp, expected);
}

TEST(TopologyPresets, DgxA100Hdr) {
  const Topology t = topology_preset("dgx-a100-hdr");
  EXPECT_EQ(t.gpu.arch, GpuArch::ampere);
  EXPECT_DOUBLE_EQ(t.nvlink_bw_bytes_per_s, 300e9);  // NVLink3: 12 links × 25 GB/s
  EXPECT_FALSE(t.nvls);                              // no NVLS before Hopper
  EXPECT_EQ(t.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(t.nic_bw_bytes_per_s, 25e9);   // HDR: 200 Gb/s / 8 = 25e9 B/s
  EXPECT_DOUBLE_EQ(t.host_bw_bytes_per_s, 32e9);  // PCIe Gen4 x16 per direction
}

TEST(TopologyPresets, H200AndB200) {
  const Topology h200 = topology_preset("hgx-h200-ndr");
  EXPECT_EQ(h200.gpu, gpu_profile("h200-sxm"));
  EXPECT_DOUBLE_EQ(h200.nvlink_bw_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(h200.nic_bw_bytes_per_s, 50e9);
  const Topology b200 = topology_preset("hgx-b200-ndr");
  EXPECT_EQ(b200.gpu, gpu_profile("b200"));
  EXPECT_DOUBLE_EQ(b200.nvlink_bw_bytes_per_s, 900e9);  // NVLink5: 1800 GB/s total / 2
  EXPECT_TRUE(b200.nvls);
  EXPECT_EQ(b200.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(b200.nic_bw_bytes_per_s, 50e9);  // 400 Gb/s / 8
}

TEST(TopologyPresets, Gb200Nvl72) {
  const Topology t = topology_preset("gb200-nvl72");
  EXPECT_EQ(t.gpu, gpu_profile("gb200"));
  EXPECT_EQ(t.gpus_per_node, 4);                          // one compute tray
  EXPECT_EQ(t.nvlink_domain_gpus, 72);                    // one rack
  EXPECT_EQ(t.nvlink_domain_gpus / t.gpus_per_node, 18);  // 72 / 4 = 18 trays per rack
  EXPECT_DOUBLE_EQ(t.nvlink_bw_bytes_per_s, 900e9);
  EXPECT_TRUE(t.nvls);
  EXPECT_EQ(t.nics_per_node, 4);                   // one NIC per GPU
  EXPECT_DOUBLE_EQ(t.nic_bw_bytes_per_s, 50e9);    // 400 Gb/s / 8
  EXPECT_DOUBLE_EQ(t.host_bw_bytes_per_s, 450e9);  // NVLink-C2C 900 GB/s total / 2
  EXPECT_EQ(t.max_nics_between_domains, 16);       // NCCL 2.27+
}

// ---- exact round trips -------------------------------------------------------------------------------------------
TEST(TopologyYaml, EveryPresetRoundTripsExactly) {
  for (const std::string& name : topology_preset_names()) {
    const Topology original = topology_preset(name);
    const std::string text = topology_to_yaml(original);
    const Topology back = parse_topology_yaml(text, "<round trip " + name + ">");
    EXPECT_EQ(back, original) << name << "\n" << text;
    EXPECT_EQ(topology_to_yaml(back), text) << name;
    // A built-in profile is written by name.
    EXPECT_NE(text.find("gpu: " + original.gpu.name + "\n"), std::string::npos) << text;
  }
}

TEST(TopologyYaml, EditedProfileIsWrittenInlineAndRoundTrips) {
  Topology t = topology_preset("gb200-nvl72");
  t.gpu.gemm_max_efficiency = 0.7777;
  t.nic_bw_bytes_per_s = 46.3e9;  // a measured NIC rate: not a whole number of Gb/s
  t.nic_latency_ns = 2500;
  t.description = "tricky: a colon, # a hash and 'quotes'";
  const std::string text = topology_to_yaml(t);
  EXPECT_EQ(text.find("gpu: gb200\n"), std::string::npos) << text;
  EXPECT_EQ(parse_topology_yaml(text, "edited.yaml"), t) << text;
}

TEST(TopologyYaml, NicRatesAreWrittenInBits) {
  const std::string text = topology_to_yaml(topology_preset("dgx-h100-ndr"));
  EXPECT_NE(text.find("nic_bw: 400Gb/s\n"), std::string::npos) << text;  // 50e9 B/s × 8 = 400 Gb/s
  EXPECT_NE(text.find("nvlink_bw: 450GB/s\n"), std::string::npos) << text;
}

// ---- errors: each names file:line and key and says what would be valid ----------------------------------------
TEST(TopologyErrors, UnknownKeySuggestsTheClosest) {
  const std::string message = parse_error(with_line(kTopology, "nvlink_bw", "nvlnk_bw: 450GB/s"));
  EXPECT_NE(message.find("topo.yaml:5:1: 'nvlnk_bw': unknown key (did you mean 'nvlink_bw'?)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("valid keys here:"), std::string::npos) << message;
}

TEST(TopologyErrors, MissingUnit) {
  const std::string message = parse_error(with_line(kTopology, "nic_bw", "nic_bw: 400"));
  EXPECT_NE(message.find("topo.yaml:8:9: 'nic_bw': bandwidth '400' has no unit"), std::string::npos) << message;
  EXPECT_NE(message.find("400Gb/s"), std::string::npos) << message;
}

TEST(TopologyErrors, UnknownUnit) {
  const std::string message = parse_error(with_line(kTopology, "host_bw", "host_bw: 64GBps/s"));
  EXPECT_NE(message.find("topo.yaml:10:10: 'host_bw': unknown bandwidth unit 'GBps/s'"), std::string::npos) << message;
}

TEST(TopologyErrors, NegativeBandwidth) {
  const std::string message = parse_error(with_line(kTopology, "nvlink_bw", "nvlink_bw: -450GB/s"));
  EXPECT_NE(message.find("topo.yaml:5:12: 'nvlink_bw': negative bandwidth '-450GB/s'"), std::string::npos) << message;
}

TEST(TopologyErrors, ZeroGpusPerNode) {
  const std::string message = parse_error(with_line(kTopology, "gpus_per_node", "gpus_per_node: 0"));
  EXPECT_NE(message.find("topo.yaml:3:16: 'gpus_per_node': value 0 is out of range (it must be between 1 and"),
            std::string::npos)
      << message;
}

TEST(TopologyErrors, DomainNotAMultipleOfTheNode) {
  std::string message = parse_error(with_line(kTopology, "nvlink_domain_gpus", "nvlink_domain_gpus: 12"));
  EXPECT_NE(message.find("topo.yaml:4:21: 'nvlink_domain_gpus': an NVLink domain of 12 GPUs is not a whole number "
                         "of 8-GPU nodes (use gpus_per_node (8) or a multiple of it)"),
            std::string::npos)
      << message;
  // Smaller than a node: 4 % 8 = 4 ≠ 0, the same rule.
  message = parse_error(with_line(kTopology, "nvlink_domain_gpus", "nvlink_domain_gpus: 4"));
  EXPECT_NE(message.find("topo.yaml:4:21: 'nvlink_domain_gpus': an NVLink domain of 4 GPUs"), std::string::npos)
      << message;
}

TEST(TopologyErrors, UnknownProfile) {
  const std::string message = parse_error(with_line(kTopology, "gpu", "gpu: h100-sx"));
  EXPECT_NE(message.find("topo.yaml:2:6: 'gpu': unknown GPU profile 'h100-sx' (did you mean 'h100-sxm'?)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("valid profiles: a100-sxm-40gb, a100-sxm-80gb, b200, b200-power-limited, gb200, gb300, "
                         "h100-96gb, h100-sxm, h200-sxm"),
            std::string::npos)
      << message;
}

TEST(TopologyErrors, ErrorInsideAnInlineProfileNamesTheKeyPath) {
  const std::string message = parse_error(with_line(kTopology, "gpu", "gpu: {name: x, arch: hopper, sm_count: 0}"));
  EXPECT_NE(message.find("topo.yaml:2:"), std::string::npos) << message;
  EXPECT_NE(message.find("'gpu.sm_count': value 0 is out of range"), std::string::npos) << message;
}

TEST(TopologyErrors, GpuMustBeANameOrAMapping) {
  const std::string message = parse_error(with_line(kTopology, "gpu", "gpu: [h100-sxm]"));
  EXPECT_NE(message.find("topo.yaml:2:6: 'gpu': expected a GPU profile name or a profile mapping"), std::string::npos)
      << message;
}

TEST(TopologyErrors, NvlsNeedsHopperOrNewer) {
  const std::string message = parse_error(with_line(kTopology, "gpu", "gpu: a100-sxm-80gb"));
  EXPECT_NE(message.find("topo.yaml:6:7: 'nvls': NVLS needs an NVIDIA Hopper or newer GPU, but 'a100-sxm-80gb' is "
                         "ampere (set nvls: false)"),
            std::string::npos)
      << message;
  const std::string amd = parse_error(with_line(kTopology, "gpu", "gpu: mi300x"));
  EXPECT_NE(amd.find("'nvls': NVLS needs an NVIDIA Hopper or newer GPU, but 'mi300x' is cdna3"), std::string::npos)
      << amd;
}

TEST(TopologyErrors, MoreInterDomainNicsThanTheDomainHas) {
  // One 8-GPU domain holds 8 NICs × (8 / 8) nodes = 8 NICs; 9 cannot be used.
  const std::string message =
      parse_error(with_line(kTopology, "max_nics_between_domains", "max_nics_between_domains: 9"));
  EXPECT_NE(message.find("topo.yaml:12:27: 'max_nics_between_domains': value 9 is out of range (it must be "
                         "between 0 and 8)"),
            std::string::npos)
      << message;
}

TEST(TopologyErrors, WrongTypes) {
  std::string message = parse_error(with_line(kTopology, "nvls", "nvls: yes"));
  EXPECT_NE(message.find("topo.yaml:6:7: 'nvls': expected true or false, got 'yes'"), std::string::npos) << message;
  message = parse_error(with_line(kTopology, "nics_per_node", "nics_per_node: 8.5"));
  EXPECT_NE(message.find("topo.yaml:7:16: 'nics_per_node': expected a whole number, got '8.5'"), std::string::npos)
      << message;
  message = parse_error(with_line(kTopology, "nic_latency", "nic_latency: 5"));
  EXPECT_NE(message.find("topo.yaml:11:14: 'nic_latency': duration '5' has no unit"), std::string::npos) << message;
}

TEST(TopologyErrors, MissingRequiredKey) {
  const std::string message = parse_error(with_line(kTopology, "host_bw", ""));
  EXPECT_NE(message.find("topo.yaml:1:1: missing required key 'host_bw'"), std::string::npos) << message;
}

TEST(TopologyErrors, MalformedYaml) {
  const std::string message = parse_error(with_line(kTopology, "nvlink_bw", "nvlink_bw: [450GB/s"));
  EXPECT_NE(message.find("topo.yaml:"), std::string::npos) << message;
  EXPECT_NE(message.find("malformed YAML"), std::string::npos) << message;
}

TEST(TopologyErrors, NotAMapping) {
  const std::string message = parse_error("- a\n- b\n");
  EXPECT_NE(message.find("topo.yaml:1:1: '<top>': expected a mapping"), std::string::npos) << message;
}

}  // namespace
}  // namespace fsdpsim
