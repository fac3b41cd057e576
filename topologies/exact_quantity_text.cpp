// Formats quantities for the YAML writers so that the strict readers get back exactly the same value: a writer
// that rounds would break the exact round trip that `fsdpsim calibrate` → `simulate --profile` relies on.
#include <array>
#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "common/error.h"
#include "topologies/hardware_yaml.h"

namespace fsdpsim::hardware_yaml {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// The shortest decimal text that strtod reads back as `value` (std::to_chars' round-trip guarantee).
std::string shortest(double value) {
  std::array<char, 64> buf{};
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  FSDPSIM_CHECK(result.ec == std::errc(), "to_chars failed on a finite double");
  return std::string(buf.data(), result.ptr);
}

// Among `units`, the text "<number><unit>" that `parse` maps back to exactly `value`, preferring a number of at
// least 1 ("900GB/s" over "0.9TB/s"), then the shortest, then the unit listed first. nullopt when none is exact.
template <size_t N, typename Parse>
std::optional<std::string> best_exact(double value, const std::array<Unit, N>& units, Parse parse) {
  std::optional<std::string> best;
  std::pair<bool, size_t> best_rank{true, 0};
  for (const auto& unit : units) {
    const double number = value / unit.factor;
    const std::string text = shortest(number) + std::string(unit.suffix);
    const auto back = parse(text, nullptr);
    if (!back || *back != value) continue;
    const std::pair<bool, size_t> rank{number < 1.0, text.size()};
    if (!best || rank < best_rank) {
      best = text;
      best_rank = rank;
    }
  }
  return best;
}

// Units are tried in this order; the last one (factor 1) is always exact, so a text always exists.
constexpr std::array<Unit, 4> kFlopsUnits{{{"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"GFLOPS", 1e9}, {"FLOPS", 1.0}}};
constexpr std::array<Unit, 2> kBitRateUnits{{{"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8}}};
constexpr std::array<Unit, 4> kByteRateUnits{{{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"B/s", 1.0}}};

}  // namespace

std::string exact_flops_text(double flops_per_s) {
  const auto text = best_exact(flops_per_s, kFlopsUnits, parse_flops_per_s);
  FSDPSIM_CHECK(text.has_value(), "no exact text for a compute rate");
  return *text;
}

std::string exact_bandwidth_text(double bytes_per_s, bool prefer_bits) {
  if (prefer_bits) {
    if (auto bits = best_exact(bytes_per_s, kBitRateUnits, parse_bandwidth_bytes_per_s)) return *bits;
  }
  const auto text = best_exact(bytes_per_s, kByteRateUnits, parse_bandwidth_bytes_per_s);
  FSDPSIM_CHECK(text.has_value(), "no exact text for a bandwidth");
  return *text;
}

std::string exact_bytes_text(int64_t bytes) {
  // Binary units when they divide exactly (how memory is reported), else plain bytes.
  constexpr std::array<std::pair<int64_t, std::string_view>, 3> kUnits{{{kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}}};
  for (const auto& [factor, suffix] : kUnits) {
    if (bytes != 0 && bytes % factor == 0) return std::to_string(bytes / factor) + std::string(suffix);
  }
  return std::to_string(bytes);
}

std::string exact_time_text(TimeNs ns) {
  if (ns != 0 && ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns != 0 && ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

std::string exact_number_text(double value) {
  return shortest(value);
}

}  // namespace fsdpsim::hardware_yaml
