#include "topologies/measured_table.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"

namespace fsdpsim::measured_table {

void fail(const std::string& source, int line, const std::string& field, const std::string& problem,
          const std::string& fix) {
  throw ConfigError(SourceLocation{source, line, 0}, field, problem, fix);
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

std::map<std::string, size_t> header_columns(const std::string& header_line, const std::vector<std::string>& needed,
                                             const std::string& source, const std::string& fix) {
  const std::vector<std::string> header = split_csv(header_line);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const std::string& name : needed) {
    if (!column.count(name)) {
      throw ConfigError(SourceLocation{source, 1, 0}, name, "the header has no '" + name + "' column", fix);
    }
  }
  return column;
}

double parse_positive(const std::string& text, const std::string& source, int line, const std::string& field) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v) || v <= 0) {
    throw ConfigError(SourceLocation{source, line, 0}, field, "'" + text + "' is not a positive number",
                      "write the value the measurement gave");
  }
  return v;
}

int64_t parse_whole(const std::string& text, const std::string& source, int line, const std::string& field, int64_t max,
                    const std::string& what) {
  const double v = parse_positive(text, source, line, field);
  if (v != std::floor(v) || v > static_cast<double>(max)) {
    throw ConfigError(SourceLocation{source, line, 0}, field,
                      "'" + text + "' is not a whole " + what + " up to " + std::to_string(max),
                      "write the " + what + " the kernel ran with");
  }
  return static_cast<int64_t>(v);
}

std::pair<size_t, double> locate_log(const std::vector<int64_t>& axis, int64_t v) {
  if (axis.size() == 1 || v <= axis.front()) return {0, 0.0};
  if (v >= axis.back()) return {axis.size() - 2, 1.0};
  const auto hi = static_cast<size_t>(std::upper_bound(axis.begin(), axis.end(), v) - axis.begin());
  const size_t lo = hi - 1;
  const double t = std::log(static_cast<double>(v) / static_cast<double>(axis[lo])) /
                   std::log(static_cast<double>(axis[hi]) / static_cast<double>(axis[lo]));
  return {lo, t};
}

}  // namespace fsdpsim::measured_table
