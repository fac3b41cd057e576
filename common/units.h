#pragma once
/// Quantities with units, parsed in one place: "80GiB", "450GB/s", "400Gb/s", "1.5us", "989TFLOPS".
/// Sizes are integer bytes, times integer nanoseconds; rates are doubles whose names carry the unit.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fsdpsim {

/// Nanoseconds: the simulator's integer time.
using TimeNs = int64_t;

/// Parses a size: a plain integer (bytes) or a number with B, KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB.
/// Returns nullopt, with `why` set, for anything else, for a negative size and for a fractional byte count.
std::optional<int64_t> parse_bytes(std::string_view text, std::string* why = nullptr);

/// Parses a duration with a unit: ns, us, ms, s. Returns nullopt (and `why`) on a missing or unknown unit.
std::optional<TimeNs> parse_time_ns(std::string_view text, std::string* why = nullptr);

/// Parses a bandwidth: B/s, KB/s, MB/s, GB/s, TB/s (bytes) or Kb/s, Mb/s, Gb/s, Tb/s (bits; also Gbps), and the
/// binary forms GiB/s, MiB/s.
std::optional<double> parse_bandwidth_bytes_per_s(std::string_view text, std::string* why = nullptr);

/// Parses a compute rate: FLOPS, GFLOPS, TFLOPS, PFLOPS (also written FLOP/s, TFLOP/s).
std::optional<double> parse_flops_per_s(std::string_view text, std::string* why = nullptr);

/// Where ns_from_seconds() saturates: 2^56 ns, about 2.3 years (sums of a few such values still fit in int64).
inline constexpr TimeNs kSaturatedNs = TimeNs{1} << 56;
/// Seconds to integer nanoseconds, rounded. A time beyond kSaturatedNs (or NaN, from an absurd rate) saturates there
/// instead of overflowing; the simulator then refuses the step (sim/op_costs.cpp).
TimeNs ns_from_seconds(double seconds);

/// "80.0 GiB", "512 MiB", "4 KiB", "12 B": binary units, one decimal (for reports).
std::string format_bytes(int64_t bytes);
/// A count with a K/M/B suffix: "8.03B", "128.26K", "512".
std::string format_count(int64_t count);
/// A count that may not fit in int64, for messages: "2.3e+18".
std::string format_huge_count(long double count);
/// "1.234 s", "12.5 ms", "3.2 us", "15 ns".
std::string format_time_ns(TimeNs ns);
/// "450 GB/s" (decimal, as NCCL and vendors quote bandwidth).
std::string format_bandwidth(double bytes_per_s);

/// Bytes in one GiB; for tests and reports.
inline constexpr int64_t kGiB = int64_t{1} << 30;
inline constexpr int64_t kMiB = int64_t{1} << 20;
inline constexpr int64_t kKiB = int64_t{1} << 10;

}  // namespace fsdpsim
