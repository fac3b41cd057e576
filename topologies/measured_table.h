#pragma once
/// What the readers of measured kernel tables share (topologies/gemm_table.cpp, topologies/attention_table.cpp): CSV
/// cells, positive numbers with the file, line and column in the error, and the log-space position of a value on a
/// sorted axis.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fsdpsim::measured_table {

/// Measured tables are CSV files of a few thousand rows; anything beyond this is not one.
inline constexpr int64_t kMaxTableBytes = int64_t{64} << 20;

/// ConfigError at `source`:`line` naming `field`.
[[noreturn]] void fail(const std::string& source, int line, const std::string& field, const std::string& problem,
                       const std::string& fix);

/// The cells of one CSV line (no quoting: the measure script writes plain numbers and names).
std::vector<std::string> split_csv(const std::string& line);

/// The header's columns by name; ConfigError naming `source` and the first of `needed` it lacks, with `fix`.
std::map<std::string, size_t> header_columns(const std::string& header_line, const std::vector<std::string>& needed,
                                             const std::string& source, const std::string& fix);

/// `text` as a finite, positive number; ConfigError naming `source`, `line` and `field` otherwise.
double parse_positive(const std::string& text, const std::string& source, int line, const std::string& field);

/// `text` as a whole positive number up to `max`; ConfigError naming `what` it should be otherwise.
int64_t parse_whole(const std::string& text, const std::string& source, int line, const std::string& field, int64_t max,
                    const std::string& what);

/// The index of `v` on a sorted axis of distinct values and the fraction toward the next point, in log space, clamped
/// to the ends (a value beyond the axis takes the end's value: fraction 0 at the first point, 1 at the last).
std::pair<size_t, double> locate_log(const std::vector<int64_t>& axis, int64_t v);

}  // namespace fsdpsim::measured_table
