// One verdict everywhere: for 50 configurations drawn at random (a fixed seed), `simulate`, `sweep` and `fit` print
// the same memory figure and the same verdict (issue 15). Each command runs as a user runs it.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "tests/support/run_fsdpsim.h"

namespace fsdpsim {
namespace {

using Json = nlohmann::json;

std::string temp_path(const std::string& name) {
  return std::string(FSDPSIM_BINARY_DIR) + "/tests/cli/" + name;
}

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

// A small linear congruential generator (Knuth's MMIX constants): the same draws on every platform.
struct Draw {
  uint64_t state = 20261125;
  size_t below(size_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>((state >> 33) % n);
  }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
};

struct Configuration {
  std::string model;
  std::vector<std::string> sets;  // without nodes
  int32_t nodes = 1;
  [[nodiscard]] std::string args() const {
    std::string out = "--model " + model + " --topology dgx-h100-ndr";
    for (const auto& s : sets) out += " --set " + s;
    return out;
  }
};

Configuration draw(Draw& d) {
  Configuration c;
  c.model = d.pick<std::string>({"llama3-8b", "llama3-8b", "llama3-70b", "mixtral-8x7b"});
  c.nodes = static_cast<int32_t>(1 + d.below(4));
  c.sets.push_back("implementation=" + d.pick<std::string>({"megatron_fsdp", "fsdp2"}));
  c.sets.push_back("micro_batch_size=" + d.pick<std::string>({"1", "2", "4"}));
  c.sets.push_back("seq_length=" + d.pick<std::string>({"2048", "4096", "8192"}));
  c.sets.push_back("recompute_granularity=" + d.pick<std::string>({"none", "selective", "full"}));
  c.sets.push_back("tp=" + d.pick<std::string>({"1", "1", "2"}));
  return c;
}

// fit's search lines: "  nodes=3   fits     24 GPUs, needs   45.3 GiB of ..." → assignment → (label, memory text).
// A label's "*" (an allocation failed below the GPU's memory) is a note on the OOM verdict, not another verdict.
std::map<std::string, std::pair<std::string, std::string>> fit_lines(const std::string& output) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string assignment, label, gpus, gpus_word, needs, number, unit;
    if (!(words >> assignment >> label >> gpus >> gpus_word >> needs >> number >> unit) || needs != "needs") continue;
    if (!label.empty() && label.back() == '*') label.pop_back();
    out[assignment] = {label, number + " " + unit};
  }
  return out;
}

std::string label_of(const std::string& fit) {
  return fit == "fits" ? "fits" : fit == "at_risk" ? "risk" : "OOM";
}

TEST(OneVerdict, SimulateSweepAndFitAgreeOnFiftyRandomConfigurations) {
  Draw d;
  int32_t compared = 0, fit_compared = 0;
  for (int i = 0; i < 50; ++i) {
    const Configuration c = draw(d);
    SCOPED_TRACE(c.args() + " --set nodes=" + std::to_string(c.nodes));
    // sweep over nodes 1..N: the figure and verdict of every node count, as sweep prints them.
    std::string grid = "nodes=";
    for (int32_t n = 1; n <= c.nodes; ++n) grid += (n > 1 ? "," : "") + std::to_string(n);
    const std::string sweep_json = temp_path("verdict-sweep.json");
    const ProgramResult sweep = run_fsdpsim("sweep " + c.args() + " --grid " + grid + " --json " + sweep_json);
    ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
    std::map<std::string, Json> by_nodes;
    for (const Json& point : read_json(sweep_json)) by_nodes[point["configuration"][0]] = point;
    const Json& point = by_nodes.at("nodes=" + std::to_string(c.nodes));

    const std::string simulate_json = temp_path("verdict-simulate.json");
    const ProgramResult simulate = run_fsdpsim("simulate --no-advice " + c.args() +
                                               " --set nodes=" + std::to_string(c.nodes) + " --json " + simulate_json);
    if (!point["valid"].get<bool>()) {
      EXPECT_NE(simulate.exit_code, 0) << "sweep: " << point["invalid_reason"] << "\n" << simulate.output;
      continue;
    }
    ASSERT_EQ(simulate.exit_code, 0) << simulate.output;
    const Json verdict = read_json(simulate_json)["memory_verdict"];
    EXPECT_EQ(verdict["needed_bytes"], point["needed_bytes"]);
    EXPECT_EQ(verdict["fit"], point["verdict"]);
    EXPECT_EQ(verdict["band"]["high_bytes"], point["band_high_bytes"]);
    ++compared;

    // fit over the same node counts: every configuration it tried prints the sweep's figure and verdict.
    const ProgramResult fit = run_fsdpsim("fit " + c.args() + " --max-nodes " + std::to_string(c.nodes));
    ASSERT_EQ(fit.exit_code, 0) << fit.output;
    for (const auto& [assignment, shown] : fit_lines(fit.output)) {
      const Json& p = by_nodes.at(assignment);
      EXPECT_EQ(shown.second, format_bytes(p["needed_bytes"].get<int64_t>())) << assignment;
      EXPECT_EQ(shown.first, label_of(p["verdict"])) << assignment;
      ++fit_compared;
    }
  }
  // Most draws can be built (TP=2 of a MoE or an odd layout may not): the comparison is not vacuous.
  EXPECT_GE(compared, 40);
  EXPECT_GE(fit_compared, 40);
}

}  // namespace
}  // namespace fsdpsim
