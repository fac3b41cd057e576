// The reference pages of docs/reference/ are what the program prints (cli/reference_markdown.h): a key, command or
// flag added, renamed or re-described without writing the pages again fails here, naming the command that fixes it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/run_fsdpsim.h"

namespace {

std::string committed(const std::string& relative_path) {
  std::ifstream in(std::string(FSDPSIM_SOURCE_DIR) + "/" + relative_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first line where the two texts differ, for a readable failure.
std::string first_difference(const std::string& want, const std::string& have) {
  std::istringstream a(want), b(have);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "none";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(line) + ":\n  committed: " + (more_a ? la : "<end>") +
             "\n  program:   " + (more_b ? lb : "<end>");
    }
  }
}

void expect_current(const std::string& page, const std::string& path) {
  const ProgramResult printed = run_fsdpsim("reference " + page);
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  ASSERT_GT(printed.output.size(), 1000u) << printed.output;  // a real page, not an error line
  const std::string on_disk = committed(path);
  EXPECT_TRUE(on_disk == printed.output)  // not EXPECT_EQ: two whole pages would bury the line that differs
      << path << " is stale; run scripts/update_reference. First difference at "
      << first_difference(on_disk, printed.output);
}

TEST(ReferenceDocs, TheConfigurationKeysPageIsCurrent) {
  expect_current("config", "docs/reference/configuration.md");
}

TEST(ReferenceDocs, TheCommandsAndFlagsPageIsCurrent) {
  expect_current("cli", "docs/reference/cli.md");
}

TEST(ReferenceDocs, EveryKeyAndCommandIsOnItsPage) {
  // The pages are generated from the same tables the program reads: each key of --print-config has a row, and each
  // command of --help a heading.
  const std::string config = run_fsdpsim("reference config").output;
  const std::string keys = run_fsdpsim("simulate --model llama3-8b --print-config").output;
  std::istringstream lines(keys);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string::npos || line.find(' ') < colon) continue;
    ++rows;
    EXPECT_NE(config.find("| `" + line.substr(0, colon) + "` |"), std::string::npos) << line;
  }
  EXPECT_GT(rows, 60);
  const std::string cli = run_fsdpsim("reference cli").output;
  for (const char* command : {"presets", "schedule", "simulate", "exec", "validate", "calibrate", "sweep", "merge",
                              "fit", "fidelity", "reference"}) {
    EXPECT_NE(cli.find(std::string("## `fsdpsim ") + command + "`"), std::string::npos) << command;
  }
}

}  // namespace
