// The bad-input catalogue (catalogue.yaml): malformed or impossible inputs, each run through the fsdpsim program with
// the exit status it must give and the text its message must contain (the file, the line and the key where that
// applies, and what would be valid). Every entry is one test; none may crash, hang or print an internal error.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tests/support/run_fsdpsim.h"

namespace {

const std::string kDir = std::string(FSDPSIM_SOURCE_DIR) + "/tests/bad_inputs";

/// One catalogue entry.
struct Entry {
  std::string name;
  std::string args;  ///< fsdpsim arguments; {dir} is this folder, {out} a scratch folder
  int exit_code = 2;
  std::vector<std::string> expect;  ///< texts the output must contain
};

// GoogleTest prints a parameter with this: the entry's name, not its bytes.
void PrintTo(const Entry& e, std::ostream* out) {
  *out << e.name;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::vector<Entry> load_catalogue() {
  std::vector<Entry> entries;
  const YAML::Node root = YAML::LoadFile(kDir + "/catalogue.yaml");
  for (const YAML::Node& node : root) {
    Entry e;
    e.name = node["name"].as<std::string>();
    e.args = node["args"].as<std::string>();
    e.exit_code = node["exit"].as<int>();
    for (const YAML::Node& text : node["expect"]) e.expect.push_back(text.as<std::string>());
    entries.push_back(e);
  }
  return entries;
}

using Result = ProgramResult;

Result run(const std::string& args) {
  return run_fsdpsim(args);
}

class Catalogue : public ::testing::TestWithParam<Entry> {};

TEST_P(Catalogue, FailsWithTheExpectedMessage) {
  const Entry& e = GetParam();
  const std::string out_dir = std::string(FSDPSIM_BINARY_DIR) + "/tests/bad_inputs";
  const Result r = run(replaced(replaced(e.args, "{dir}", kDir), "{out}", out_dir));
  EXPECT_EQ(r.exit_code, e.exit_code) << r.output;
  EXPECT_NE(r.output.find("fsdpsim: error: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  for (const std::string& text : e.expect) {
    EXPECT_NE(r.output.find(replaced(text, "{dir}", kDir)), std::string::npos) << "missing: " << text << "\n"
                                                                               << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(BadInputs, Catalogue, ::testing::ValuesIn(load_catalogue()),
                         [](const ::testing::TestParamInfo<Entry>& entry) {
                           return replaced(entry.param.name, "-", "_");
                         });

// The catalogue must stay what the hardening task asked for: at least 50 inputs, each with a message to check.
TEST(CatalogueSize, AtLeastFiftyEntriesEachWithExpectedText) {
  const std::vector<Entry> entries = load_catalogue();
  EXPECT_GE(entries.size(), 50u);
  for (const Entry& e : entries) EXPECT_FALSE(e.expect.empty()) << e.name;
}

}  // namespace
