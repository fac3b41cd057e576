// The HTML reports opened in headless Chromium: the page's own self-check, run after load, must report every chart
// drawn (non-zero rendered elements), the sweep's Pareto front exactly as derived by hand, and no JavaScript error.
// Chromium comes from scripts/setup (Debian's `chromium`); without it these tests fail and say so.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "builders/builder.h"
#include "model/model.h"
#include "plan/html_report.h"
#include "report/report.h"
#include "sim/engine.h"

namespace fsdpsim {
namespace {

namespace fs = std::filesystem;

// The first executable `name` on PATH, or "" when there is none.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct BrowserRun {
  int exit_code = -1;
  std::string dom;
  std::string log;  // stderr: Chromium's log, where console errors ("Uncaught ...") appear
};

// Chromium's wall-clock bound per attempt. Loading these pages takes 1–4 s here; the bound is wide because a loaded
// CI machine runs other tests beside it.
constexpr int kChromiumLimitSeconds = 60;

// True once `dom` holds the whole page: the DOM is written at the end of --dump-dom, after the page's scripts ran.
bool dom_is_complete(const std::string& dom) {
  return dom.find("</html>") != std::string::npos;
}

// One headless Chromium run that dumps the DOM of `page` to `dom` and its log to `log`. The flags keep Chromium off
// the network (this machine has none; without --disable-background-networking it keeps trying) and `timeout` bounds
// it; --no-zygote (allowed with --no-sandbox) leaves no zygote process whose shutdown can stall the browser's exit.
int run_chromium_once(const std::string& chromium, const fs::path& page, const fs::path& dom, const fs::path& log) {
  std::string profile_template = (fs::temp_directory_path() / "fsdpsim-chromium-XXXXXX").string();
  const char* profile = mkdtemp(profile_template.data());
  if (profile == nullptr) {
    ADD_FAILURE() << "cannot create a temporary Chromium profile directory";
    return -1;
  }
  const std::string command =
      "timeout -k 5 " + std::to_string(kChromiumLimitSeconds) + " " + quoted(chromium) +
      " --headless=new --no-sandbox --no-zygote --disable-gpu --disable-dev-shm-usage --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync --disable-extensions"
      " --user-data-dir=" +
      quoted(profile) + " --enable-logging=stderr --v=0 --dump-dom " + quoted("file://" + fs::absolute(page).string()) +
      " > " + quoted(dom.string()) + " 2> " + quoted(log.string());
  const int status = std::system(command.c_str());
  fs::remove_all(profile);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Writes `html` into the build tree and dumps its DOM with headless Chromium. Chromium has been seen (once, on a
// loaded CI machine) to write nothing further and never exit after a normal load; such a run is tried once more with
// a fresh profile. A run that timed out after writing the whole DOM counts as loaded: the assertions on the page's
// self-check still decide, and the stall was in the browser's shutdown, which is not what these tests are about.
BrowserRun open_in_chromium(const std::string& html, const std::string& stem) {
  const std::string chromium = find_on_path("chromium");
  BrowserRun run;
  if (chromium.empty()) {
    ADD_FAILURE() << "chromium is not installed: run scripts/setup (it installs Debian's `chromium`), or "
                     "`apt-get install -y chromium`";
    return run;
  }
  const fs::path dir = fs::path(FSDPSIM_BINARY_DIR) / "tests" / "plan" / "html";
  fs::create_directories(dir);
  const fs::path page = dir / (stem + ".html");
  std::ofstream(page, std::ios::binary) << html;
  const fs::path dom = dir / (stem + ".dom.html");
  const fs::path log = dir / (stem + ".stderr.txt");
  constexpr int kTimedOut = 124;  // timeout(1)'s status when the limit was reached
  for (int attempt = 1; attempt <= 2; ++attempt) {
    run.exit_code = run_chromium_once(chromium, page, dom, log);
    run.dom = read_text(dom);
    run.log = read_text(log);
    if (run.exit_code != kTimedOut) break;
    if (dom_is_complete(run.dom)) {
      std::printf("note: Chromium wrote the whole DOM but did not exit within %d s; using the DOM\n",
                  kChromiumLimitSeconds);
      run.exit_code = 0;
      break;
    }
    std::printf("note: Chromium attempt %d ran past %d s without writing the DOM\n", attempt, kChromiumLimitSeconds);
  }
  return run;
}

// "ok a=1 b=2 pareto-indices=0,3" → {"status": "ok", "a": "1", ...}; empty when the line is missing.
std::map<std::string, std::string> self_check(const std::string& dom) {
  std::smatch m;
  std::map<std::string, std::string> fields;
  if (!std::regex_search(dom, m, std::regex("<pre id=\"fsdpsim-selfcheck\">([^<]*)</pre>"))) return fields;
  std::stringstream words(m[1].str());
  std::string word;
  words >> word;
  fields["status"] = word;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) fields[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return fields;
}

int64_t count(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto it = fields.find(key);
  return it == fields.end() ? -1 : std::stoll(it->second);
}

void expect_no_script_errors(const BrowserRun& run) {
  for (const char* error : {"Uncaught", "SyntaxError", "ReferenceError", "TypeError"}) {
    EXPECT_EQ(run.log.find(error), std::string::npos) << error << " in Chromium's log:\n" << run.log;
  }
}

SweepResult point(const std::string& name, int64_t needed_gib, double tokens_per_s, bool fits) {
  SweepResult r;
  r.assignments = {"case=" + name};
  r.valid = true;
  r.memory.fit = fits ? MemoryFit::fits : MemoryFit::out_of_memory;
  r.gpus = 8;
  r.micro_batches = 4;
  r.needed_bytes = needed_gib * kGiB;
  r.gpu_memory_bytes = 80 * kGiB;
  r.tokens_per_s_per_gpu = tokens_per_s;
  r.step_time_s = 1.0;
  return r;
}

TEST(HtmlChromium, RunReportOfLlama8bDrawsEveryChart) {
  const Topology topology = topology_preset("dgx-h100-ndr");
  const Schedule schedule = build_schedule(model_preset("llama3-8b"), FsdpConfig{}, topology.gpus_per_node);
  const RunRecord run = run_schedule(schedule, topology, SimOptions{});
  const Report report = make_report(schedule, topology, run);
  // Two hand-made advice rows: the advice table must show both.
  AdviceItem a{"recompute_granularity=full",
               "recompute whole layers",
               {"recompute_granularity=full"},
               point("a", 40, 9000, true)};
  AdviceItem b{"micro_batch_size=2", "<more> tokens & \"memory\"", {"micro_batch_size=2"}, point("b", 90, 9500, false)};
  const BrowserRun browser = open_in_chromium(html_run_report(schedule, run, report, {a, b}), "run_report");
  ASSERT_EQ(browser.exit_code, 0) << "(124: Chromium ran past its limit twice)\n" << browser.log;
  const auto fields = self_check(browser.dom);
  ASSERT_FALSE(fields.empty()) << "no self-check line in the dumped DOM";
  EXPECT_EQ(fields.at("status"), "ok") << browser.dom.substr(0, 2000);
  // One lane per IR stream.
  EXPECT_EQ(count(fields, "timeline-lanes"), static_cast<int64_t>(schedule.streams.size()));
  // At least one bar, and never more bars than ops that took time (merging only ever joins ops).
  int64_t timed_ops = 0;
  for (const OpTiming& t : run.steps.back().ops) timed_ops += t.end_ns > t.start_ns ? 1 : 0;
  EXPECT_GT(count(fields, "timeline-bars"), 0);
  EXPECT_LE(count(fields, "timeline-bars"), timed_ops);
  // One area per buffer category with live bytes in some sample of the timeline.
  std::set<size_t> live;
  for (const MemorySample& s : run.timeline) {
    for (size_t k = 0; k < s.bytes.size(); ++k) {
      if (s.bytes[k] > 0) live.insert(k);
    }
  }
  EXPECT_EQ(count(fields, "memory-areas"), static_cast<int64_t>(live.size()));
  EXPECT_EQ(count(fields, "memory-peak"), 1);
  EXPECT_EQ(count(fields, "capacity-line"), 1);
  // One segment per non-zero entry of the breakdown.
  int64_t segments = 0;
  for (const auto& [name, bytes] : report.memory_breakdown) segments += bytes > 0 ? 1 : 0;
  EXPECT_EQ(count(fields, "breakdown-segments"), segments);
  EXPECT_EQ(count(fields, "advice-rows"), 2);
  expect_no_script_errors(browser);
}

TEST(HtmlChromium, SweepReportMarksExactlyTheParetoFront) {
  // (needed GiB, tokens/s per GPU); only fitting points make the front, and a fitting point is dominated by another
  // that needs no more memory and gives no fewer tokens/s:
  //   0 ( 30, 1000) fits  dominated by 4 (20 GiB < 30, 1200 > 1000)
  //   1 ( 50, 2000) fits  front: the points needing ≤ 50 GiB (0, 4) give at most 1200 < 2000
  //   2 ( 60, 2500) fits  front: the points needing ≤ 60 GiB give at most 2000 < 2500
  //   3 ( 70, 2400) fits  dominated by 2 (60 GiB, 2500)
  //   4 ( 20, 1200) fits  front: it needs the least memory
  //   5 ( 95, 3000) OOM   not on the front although the fastest: it does not fit
  //   6 (100, 2900) OOM   not on the front
  //   7 invalid           not drawn
  // Front: 1, 2, 4 (the self-check lists them by index); drawn: 7 valid points, 5 fitting, 2 OOM.
  std::vector<SweepResult> results = {
      point("0", 30, 1000, true), point("1", 50, 2000, true),  point("2", 60, 2500, true),   point("3", 70, 2400, true),
      point("4", 20, 1200, true), point("5", 95, 3000, false), point("6", 100, 2900, false), SweepResult{}};
  results[7].assignments = {"case=<invalid>"};
  results[7].invalid_reason = "tp=3 does not divide 32 heads";
  const std::vector<size_t> order = {2, 1, 4, 3, 0, 5, 6, 7};
  const BrowserRun browser = open_in_chromium(html_sweep_report(results, order, "sweep <test>"), "sweep_report");
  ASSERT_EQ(browser.exit_code, 0) << "(124: Chromium ran past its limit twice)\n" << browser.log;
  const auto fields = self_check(browser.dom);
  ASSERT_FALSE(fields.empty()) << "no self-check line in the dumped DOM";
  EXPECT_EQ(fields.at("status"), "ok");
  EXPECT_EQ(fields.at("pareto-indices"), "1,2,4");
  EXPECT_EQ(count(fields, "points"), 7);
  EXPECT_EQ(count(fields, "fitting"), 5);
  EXPECT_EQ(count(fields, "oom"), 2);
  EXPECT_EQ(count(fields, "pareto"), 3);
  EXPECT_EQ(count(fields, "pareto-line"), 1);
  EXPECT_EQ(count(fields, "gpu-memory-lines"), 1);  // every point has 80 GiB GPUs
  EXPECT_EQ(count(fields, "table-rows"), 8);
  expect_no_script_errors(browser);
}

}  // namespace
}  // namespace fsdpsim
