// Fuzz target: a measured GEMM table (parse_gemm_table_csv), as `simulate --gemm-table` reads it; a table that
// parses must then answer lookups on and off its grid with a finite, positive time.
#include <cmath>
#include <cstdlib>

#include "fuzz/fuzz_target.h"
#include "topologies/gemm_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz-gemm.csv", [&] {
    const fsdpsim::GemmTable table = fsdpsim::parse_gemm_table_csv(text, "fuzz-gemm.csv");
    for (const auto role : {fsdpsim::GemmRole::forward, fsdpsim::GemmRole::dgrad, fsdpsim::GemmRole::wgrad}) {
      for (const auto precision :
           {fsdpsim::GemmPrecision::bf16, fsdpsim::GemmPrecision::fp8, fsdpsim::GemmPrecision::fp8_rowwise}) {
        for (const int64_t m : {int64_t{1}, int64_t{777}, int64_t{1} << 20}) {
          const std::optional<double> t = table.time_s(role, precision, m, 4096, 3000);
          if (t && !(std::isfinite(*t) && *t > 0)) std::abort();  // a lookup must give a real time
        }
      }
    }
  });
}
