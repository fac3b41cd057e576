#include "common/units.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace fsdpsim {
namespace {

struct Scaled {
  std::string_view suffix;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "12.5 GB/s" into the number and the unit; false when no number leads.
bool split_number(std::string_view text, double* number, std::string_view* unit, std::string* why) {
  text = trim(text);
  if (text.empty()) {
    if (why) *why = "empty value";
    return false;
  }
  std::string buf(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(buf.c_str(), &end);
  if (end == buf.c_str()) {
    if (why) *why = "'" + buf + "' does not start with a number";
    return false;
  }
  if (errno == ERANGE || !std::isfinite(value)) {
    if (why) *why = "'" + buf + "' is out of range";
    return false;
  }
  *number = value;
  *unit = trim(text.substr(static_cast<size_t>(end - buf.c_str())));
  return true;
}

template <size_t N>
std::optional<double> scale(std::string_view text, const std::array<Scaled, N>& units, bool unit_required,
                            const char* kind, const char* examples, std::string* why) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, &number, &unit, why)) return std::nullopt;
  if (number < 0) {
    if (why) *why = "negative " + std::string(kind) + " '" + std::string(trim(text)) + "'";
    return std::nullopt;
  }
  if (unit.empty()) {
    if (!unit_required) return number;
    if (why) *why = std::string(kind) + " '" + std::string(trim(text)) + "' has no unit (write e.g. " + examples + ")";
    return std::nullopt;
  }
  for (const auto& u : units) {
    if (unit == u.suffix) return number * u.factor;
  }
  if (why) *why = "unknown " + std::string(kind) + " unit '" + std::string(unit) + "' (use e.g. " + examples + ")";
  return std::nullopt;
}

constexpr std::array<Scaled, 10> kSizeUnits{{{"B", 1.0},
                                             {"KB", 1e3},
                                             {"MB", 1e6},
                                             {"GB", 1e9},
                                             {"TB", 1e12},
                                             {"KiB", 1024.0},
                                             {"MiB", 1024.0 * 1024},
                                             {"GiB", 1024.0 * 1024 * 1024},
                                             {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                             {"kB", 1e3}}};

constexpr std::array<Scaled, 5> kTimeUnits{{{"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"µs", 1e3}}};

constexpr std::array<Scaled, 17> kBandwidthUnits{{{"B/s", 1.0},
                                                  {"KB/s", 1e3},
                                                  {"MB/s", 1e6},
                                                  {"GB/s", 1e9},
                                                  {"TB/s", 1e12},
                                                  {"GBps", 1e9},
                                                  {"KiB/s", 1024.0},
                                                  {"MiB/s", 1024.0 * 1024},
                                                  {"GiB/s", 1024.0 * 1024 * 1024},
                                                  {"b/s", 1.0 / 8},
                                                  {"Kb/s", 1e3 / 8},
                                                  {"Mb/s", 1e6 / 8},
                                                  {"Gb/s", 1e9 / 8},
                                                  {"Tb/s", 1e12 / 8},
                                                  {"Gbps", 1e9 / 8},
                                                  {"Mbps", 1e6 / 8},
                                                  {"Tbps", 1e12 / 8}}};

constexpr std::array<Scaled, 10> kFlopsUnits{{{"FLOPS", 1.0},
                                              {"GFLOPS", 1e9},
                                              {"TFLOPS", 1e12},
                                              {"PFLOPS", 1e15},
                                              {"FLOP/s", 1.0},
                                              {"GFLOP/s", 1e9},
                                              {"TFLOP/s", 1e12},
                                              {"PFLOP/s", 1e15},
                                              {"TF", 1e12},
                                              {"PF", 1e15}}};

}  // namespace

std::optional<int64_t> parse_bytes(std::string_view text, std::string* why) {
  const auto value = scale(text, kSizeUnits, /*unit_required=*/false, "size", "\"80GiB\", \"512MiB\", \"4096\"", why);
  if (!value) return std::nullopt;
  const double rounded = std::round(*value);
  if (std::fabs(rounded - *value) > 1e-6 * std::max(1.0, *value)) {
    if (why) *why = "size '" + std::string(trim(text)) + "' is not a whole number of bytes";
    return std::nullopt;
  }
  if (rounded > static_cast<double>(std::numeric_limits<int64_t>::max() / 2)) {
    if (why) *why = "size '" + std::string(trim(text)) + "' is absurdly large";
    return std::nullopt;
  }
  return static_cast<int64_t>(rounded);
}

std::optional<TimeNs> parse_time_ns(std::string_view text, std::string* why) {
  const auto value = scale(text, kTimeUnits, /*unit_required=*/true, "duration", "\"1.5us\", \"25ns\", \"2ms\"", why);
  if (!value) return std::nullopt;
  if (*value > 1e17) {
    if (why) *why = "duration '" + std::string(trim(text)) + "' is absurdly long";
    return std::nullopt;
  }
  return static_cast<TimeNs>(std::llround(*value));
}

std::optional<double> parse_bandwidth_bytes_per_s(std::string_view text, std::string* why) {
  return scale(text, kBandwidthUnits, /*unit_required=*/true, "bandwidth", "\"450GB/s\", \"400Gb/s\"", why);
}

std::optional<double> parse_flops_per_s(std::string_view text, std::string* why) {
  return scale(text, kFlopsUnits, /*unit_required=*/true, "compute rate", "\"989TFLOPS\"", why);
}

TimeNs ns_from_seconds(double seconds) {
  const double ns = seconds * 1e9;
  if (!(ns < static_cast<double>(kSaturatedNs))) return kSaturatedNs;  // also NaN
  if (ns <= 0) return 0;
  return static_cast<TimeNs>(std::llround(ns));
}

std::string format_count(int64_t count) {
  char text[32];
  const double v = static_cast<double>(count);
  if (count >= 1'000'000'000) {
    std::snprintf(text, sizeof text, "%.2fB", v / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.2fM", v / 1e6);
  } else if (count >= 1'000) {
    std::snprintf(text, sizeof text, "%.2fK", v / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(count));
  }
  return text;
}

std::string format_huge_count(long double count) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3Lg", count);
  return text;
}

std::string format_bytes(int64_t bytes) {
  static constexpr std::array<const char*, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (std::fabs(value) >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  char buf[64];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", value, kNames[unit]);
  }
  return buf;
}

std::string format_time_ns(TimeNs ns) {
  char buf[64];
  const double v = static_cast<double>(ns);
  if (std::llabs(ns) >= 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  } else if (std::llabs(ns) >= 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1e6);
  } else if (std::llabs(ns) >= 1'000) {
    std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  }
  return buf;
}

std::string format_bandwidth(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", bytes_per_s / 1e9);
  return buf;
}

}  // namespace fsdpsim
