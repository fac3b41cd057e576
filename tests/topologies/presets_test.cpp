// The built-in presets: names, lookups by name or path, errors for unknown names, and the rule that every constant
// in a preset file cites its source.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/topologies/test_support.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

// The files listed in topologies/CMakeLists.txt, sorted.
const std::vector<std::string> kTopologyNames{"dgx-a100-hdr",   "dgx-h100-ndr", "dgx-h100-ndr-sharp", "gb200-nvl72",
                                              "gb200-nvl72-64", "gb300-nvl72",  "gb300-nvl72-64",     "hgx-b200-ndr",
                                              "hgx-h200-ndr",   "mi300x-roce",  "mi355x-roce"};
const std::vector<std::string> kProfileNames{"a100-sxm-40gb", "a100-sxm-80gb", "b200",      "b200-power-limited",
                                             "gb200",         "gb300",         "h100-96gb", "h100-sxm",
                                             "h200-sxm",      "mi300x",        "mi325x",    "mi355x"};

std::string temp_file(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(Presets, NamesAreSortedAndComplete) {
  EXPECT_EQ(topology_preset_names(), kTopologyNames);
  EXPECT_EQ(gpu_profile_names(), kProfileNames);
}

TEST(Presets, EachPresetCarriesItsOwnName) {
  for (const auto& name : kTopologyNames) EXPECT_EQ(topology_preset(name).name, name);
  for (const auto& name : kProfileNames) EXPECT_EQ(gpu_profile(name).name, name);
}

TEST(Presets, ArchNames) {
  EXPECT_EQ(to_string(GpuArch::ampere), "ampere");
  EXPECT_EQ(to_string(GpuArch::hopper), "hopper");
  EXPECT_EQ(to_string(GpuArch::blackwell), "blackwell");
  EXPECT_EQ(to_string(GpuArch::cdna3), "cdna3");
  EXPECT_EQ(to_string(GpuArch::cdna4), "cdna4");
  EXPECT_TRUE(is_amd(GpuArch::cdna3));
  EXPECT_FALSE(is_amd(GpuArch::hopper));
}

TEST(Presets, UnknownTopologyPresetListsTheValidOnes) {
  const std::string message = error_of([] { (void)topology_preset("dgx-h100-nd"); });
  EXPECT_NE(message.find("unknown topology preset 'dgx-h100-nd' (did you mean 'dgx-h100-ndr'?)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("dgx-a100-hdr, dgx-h100-ndr, dgx-h100-ndr-sharp, gb200-nvl72, gb200-nvl72-64, gb300-nvl72, "
                         "gb300-nvl72-64, hgx-b200-ndr, hgx-h200-ndr"),
            std::string::npos)
      << message;
}

TEST(Presets, UnknownGpuProfileListsTheValidOnes) {
  const std::string message = error_of([] { (void)gpu_profile("b300"); });
  EXPECT_NE(message.find("unknown GPU profile 'b300' (did you mean 'b200'?)"), std::string::npos) << message;
  EXPECT_NE(message.find(
                "a100-sxm-40gb, a100-sxm-80gb, b200, b200-power-limited, gb200, gb300, h100-96gb, h100-sxm, h200-sxm"),
            std::string::npos)
      << message;
}

TEST(Presets, LoadByNameOrByPath) {
  EXPECT_EQ(load_topology("gb200-nvl72"), topology_preset("gb200-nvl72"));
  EXPECT_EQ(load_gpu_profile("b200"), gpu_profile("b200"));
  Topology edited = topology_preset("dgx-h100-ndr");
  edited.name = "my-cluster";
  edited.nics_per_node = 4;
  EXPECT_EQ(load_topology(temp_file("my-cluster.yaml", topology_to_yaml(edited))), edited);
  GpuProfile calibrated = gpu_profile("h100-sxm");
  calibrated.name = "h100-measured";
  calibrated.gemm_max_efficiency = 0.74;
  EXPECT_EQ(load_gpu_profile(temp_file("h100-measured.yaml", gpu_profile_to_yaml(calibrated))), calibrated);
}

TEST(Presets, MissingFileThatIsNoPresetSaysBoth) {
  const std::string path = (std::filesystem::path(testing::TempDir()) / "no-such-dir" / "dgx-h100-ndr.yaml").string();
  std::string message = error_of([&] { (void)load_topology(path); });
  EXPECT_NE(message.find(path + ": no such file, and not a topology preset either"), std::string::npos) << message;
  EXPECT_NE(message.find("one of the presets: dgx-a100-hdr,"), std::string::npos) << message;
  message = error_of([] { (void)load_topology("dgx-h100-nd"); });
  EXPECT_NE(message.find("dgx-h100-nd: no such file, and not a topology preset either (did you mean 'dgx-h100-ndr'?)"),
            std::string::npos)
      << message;
  message = error_of([] { (void)load_gpu_profile("h100"); });
  EXPECT_NE(message.find("h100: no such file, and not a GPU profile preset either"), std::string::npos) << message;
}

TEST(Presets, ErrorsInAFileNameThePath) {
  const std::string path = temp_file("bad-topology.yaml", "name: bad\ngpu: h100-sxm\ngpus_per_nod: 8\n");
  const std::string message = error_of([&] { (void)load_topology(path); });
  EXPECT_NE(message.find(path + ":3:1: 'gpus_per_nod': unknown key (did you mean 'gpus_per_node'?)"), std::string::npos)
      << message;
}

// Every value line of a preset file (a "key: value" line other than name, description and a named gpu) carries a
// '#' comment citing its source.
std::vector<std::string> uncited_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> uncited;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == ' ') continue;
    const std::string key = line.substr(0, line.find(':'));
    if (key == "name" || key == "description" || key == "gpu") continue;
    if (line.find('#') == std::string::npos) uncited.push_back(path.filename().string() + ": " + line);
  }
  return uncited;
}

TEST(Presets, EveryConstantCitesItsSource) {
  const std::filesystem::path root = std::filesystem::path(FSDPSIM_SOURCE_DIR) / "topologies";
  std::vector<std::string> uncited;
  size_t files = 0;
  for (const auto& name : kTopologyNames) {
    const auto lines = uncited_lines(root / "presets" / (name + ".yaml"));
    uncited.insert(uncited.end(), lines.begin(), lines.end());
    ++files;
  }
  for (const auto& name : kProfileNames) {
    const auto lines = uncited_lines(root / "profiles" / (name + ".yaml"));
    uncited.insert(uncited.end(), lines.begin(), lines.end());
    ++files;
  }
  EXPECT_EQ(files, kTopologyNames.size() + kProfileNames.size());
  std::ostringstream list;
  for (const auto& line : uncited) list << "\n  " << line;
  EXPECT_TRUE(uncited.empty()) << "lines without a source comment:" << list.str();
}

}  // namespace
}  // namespace fsdpsim
