// Fuzz target: a measured attention table (parse_attention_table_csv), as `simulate --attention-table` reads it; a
// table that parses must then answer lookups on and off its grid with a finite, positive rate.
#include <cmath>
#include <cstdlib>

#include "fuzz/fuzz_target.h"
#include "topologies/attention_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-attention.csv", [&] {
    const fsdpsim::AttentionTable table = fsdpsim::parse_attention_table_csv(text, "fuzz-attention.csv", "");
    for (const bool backward : {false, true}) {
      for (const int64_t seq : {int64_t{1}, int64_t{3000}, int64_t{1} << 20}) {
        for (const int64_t heads : {int64_t{1}, int64_t{40}, int64_t{4096}}) {
          for (const int64_t group : {int64_t{1}, int64_t{6}, int64_t{64}}) {
            const double rate = table.flops_per_s(backward, seq, heads, 96, group);
            if (!(std::isfinite(rate) && rate > 0)) std::abort();  // a lookup must give a real rate
          }
        }
      }
    }
  });
}
