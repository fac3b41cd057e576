// Fuzz target: executor and simulator reports given to `fsdpsim validate` (report_from_json), then compared with
// themselves: every error must be 0 and the tables must render.
#include "fuzz/fuzz_target.h"
#include "report/report_compare.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz.report.json", [&] {
    const fsdpsim::Report report = fsdpsim::report_from_json(text, "fuzz.report.json");
    const fsdpsim::Comparison same = fsdpsim::compare_reports(report, report);
    if (same.step.relative_error() != 0) fsdpsim::fuzz::finding("a report differs from itself");
    (void)fsdpsim::comparison_text(same);
    (void)fsdpsim::comparison_json(same);
  });
}
