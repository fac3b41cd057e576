// Fuzz target: sweep part files given to `fsdpsim merge` (parse_sweep_part). A part that reads must write back to a
// text that reads to the same part, and merge as a one-part sweep when it is the only shard.
#include "fuzz/fuzz_target.h"
#include "plan/sweep_parts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz.part.json", [&] {
    const fsdpsim::SweepPart part = fsdpsim::parse_sweep_part(text, "fuzz.part.json");
    const std::string written = fsdpsim::sweep_part_json(part);
    if (fsdpsim::sweep_part_json(fsdpsim::parse_sweep_part(written, "written.json")) != written) {
      fsdpsim::fuzz::finding("a sweep part does not read back to itself");
    }
    if (part.shards == 1) {
      const auto results = fsdpsim::merge_sweep_parts({part}, {"fuzz.part.json"});
      (void)fsdpsim::sweep_table(results, fsdpsim::rank_results(results, fsdpsim::RankBy::cost), 5);
      (void)fsdpsim::sweep_csv(results, fsdpsim::rank_results(results, fsdpsim::RankBy::time));
    }
  });
}
