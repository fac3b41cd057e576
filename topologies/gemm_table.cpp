#include "topologies/gemm_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/yaml_reader.h"
#include "topologies/measured_table.h"

namespace fsdpsim {
namespace {

using measured_table::fail;
using measured_table::locate_log;

constexpr std::array<const char*, 3> kRoleNames{"forward", "dgrad", "wgrad"};
constexpr std::array<const char*, 3> kPrecisionNames{"bf16", "fp8", "fp8_rowwise"};

}  // namespace

GemmRole gemm_role_of(const std::string& gemm_name) {
  const auto ends_with = [&](const char* s) {
    const std::string suffix(s);
    return gemm_name.size() >= suffix.size() &&
           gemm_name.compare(gemm_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".dgrad")) return GemmRole::dgrad;
  if (ends_with(".wgrad")) return GemmRole::wgrad;
  return GemmRole::forward;
}

const GemmGrid* GemmTable::grid_for(GemmRole role, GemmPrecision precision) const {
  const auto p = static_cast<size_t>(precision);
  const GemmGrid* grid = &grids[static_cast<size_t>(role)][p];
  if (grid->flops_per_s.empty() && precision != GemmPrecision::bf16 && role == GemmRole::dgrad) grid = &grids[0][p];
  return grid->flops_per_s.empty() ? nullptr : grid;
}

std::optional<double> GemmTable::time_s(GemmRole role, GemmPrecision precision, int64_t m, int64_t n, int64_t k) const {
  const GemmGrid* grid = grid_for(role, precision);
  if (grid == nullptr || m <= 0 || n <= 0 || k <= 0) return std::nullopt;
  const auto [im, tm] = locate_log(grid->m, m);
  const auto [in, tn] = locate_log(grid->n, n);
  const auto [ik, tk] = locate_log(grid->k, k);
  const auto rate_at = [&](size_t a, size_t b, size_t c) {
    const size_t ia = std::min(a, grid->m.size() - 1), ib = std::min(b, grid->n.size() - 1),
                 ic = std::min(c, grid->k.size() - 1);
    return std::log(grid->flops_per_s[(ic * grid->n.size() + ib) * grid->m.size() + ia]);
  };
  double log_rate = 0;
  for (int corner = 0; corner < 8; ++corner) {
    const bool up_m = (corner & 1) != 0, up_n = (corner & 2) != 0, up_k = (corner & 4) != 0;
    const double w = (up_m ? tm : 1 - tm) * (up_n ? tn : 1 - tn) * (up_k ? tk : 1 - tk);
    if (w == 0) continue;
    log_rate += w * rate_at(im + (up_m ? 1 : 0), in + (up_n ? 1 : 0), ik + (up_k ? 1 : 0));
  }
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return flops / std::exp(log_rate);
}

namespace {

// One (role, precision)'s measured rates by (m, n, k), and the file they came from.
struct MeasuredRates {
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> by_shape;
  std::string source;
  int last_line = 0;  ///< the file's last line, where an error points
};
using TablePoints = std::map<std::pair<size_t, size_t>, MeasuredRates>;

// The position of `text` among `names`, or names.size() when it is not one of them.
size_t index_of(const std::array<const char*, 3>& names, const std::string& text) {
  return static_cast<size_t>(std::find(names.begin(), names.end(), text) - names.begin());
}

void read_rows(const std::string& text, const std::string& source, TablePoints& table_points) {
  std::stringstream in(text);
  std::string line;
  int line_no = 0;
  if (!std::getline(in, line)) fail(source, 1, "header", "the file is empty", "write the measure script's CSV");
  ++line_no;
  const size_t header_cells = measured_table::split_csv(line).size();
  std::map<std::string, size_t> column = measured_table::header_columns(
      line, {"role", "dtype", "m", "n", "k", "time_us"}, source,
      "write the CSV bench/kernel_tables/measure_kernel_tables.py writes (role,layout,dtype,m,n,k,time_us,...)");
  std::map<std::pair<size_t, size_t>, std::map<std::tuple<int64_t, int64_t, int64_t>, double>> points;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    if (line.back() == '\r') line.pop_back();
    const std::vector<std::string> cells = measured_table::split_csv(line);
    if (cells.size() != header_cells) {
      fail(source, line_no, "row",
           "has " + std::to_string(cells.size()) + " cells, the header " + std::to_string(header_cells),
           "write one value per column");
    }
    const std::string& role_text = cells[column["role"]];
    const size_t role = index_of(kRoleNames, role_text);
    if (role == kRoleNames.size())
      fail(source, line_no, "role", "unknown role '" + role_text + "'", "use forward, dgrad or wgrad");
    const std::string& dtype_text = cells[column["dtype"]];
    const size_t precision = index_of(kPrecisionNames, dtype_text);
    if (precision == kPrecisionNames.size()) {
      fail(source, line_no, "dtype", "unknown dtype '" + dtype_text + "'", "use bf16, fp8 or fp8_rowwise");
    }
    const auto size_of = [&](const char* field) {
      return measured_table::parse_whole(cells[column[field]], source, line_no, field, 1'000'000'000, "GEMM dimension");
    };
    const int64_t m = size_of("m"), n = size_of("n"), k = size_of("k");
    const double us = measured_table::parse_positive(cells[column["time_us"]], source, line_no, "time_us");
    const double rate = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / (us * 1e-6);
    // No GPU runs a GEMM for days, nor at an exaFLOP/s: such a row is a unit mistake, not a measurement.
    if (us > 1e12 || !(rate <= 1e18)) {
      fail(source, line_no, "time_us",
           cells[column["time_us"]] + " us gives " + std::to_string(rate) + " FLOP/s for this shape, which no GPU runs",
           "write the time in microseconds");
    }
    points[{role, precision}][{m, n, k}] = rate;
  }
  if (points.empty()) fail(source, line_no, "rows", "the table has no rows", "measure some GEMMs first");
  for (auto& [key, by_shape] : points) {
    const auto [it, added] = table_points.try_emplace(key, MeasuredRates{std::move(by_shape), source, line_no});
    if (!added) {
      fail(source, line_no, "rows",
           "holds " + std::string(kRoleNames[key.first]) + " " + kPrecisionNames[key.second] + " rows, and so does " +
               it->second.source,
           "give each role and dtype's rows in one file only");
    }
  }
}

GemmTable build_table(const TablePoints& table_points, const std::string& source) {
  GemmTable table;
  table.source = source;
  for (const auto& [key, measured] : table_points) {
    const auto& by_shape = measured.by_shape;
    GemmGrid grid;
    for (const auto& [shape, rate] : by_shape) {
      grid.m.push_back(std::get<0>(shape));
      grid.n.push_back(std::get<1>(shape));
      grid.k.push_back(std::get<2>(shape));
    }
    for (auto* axis : {&grid.m, &grid.n, &grid.k}) {
      std::sort(axis->begin(), axis->end());
      axis->erase(std::unique(axis->begin(), axis->end()), axis->end());
    }
    // A full grid has exactly one row per combination; checked before the grid is allocated (a file of a few
    // rows with distinct sizes on every axis would otherwise ask for their product).
    const double points_in_grid =
        static_cast<double>(grid.m.size()) * static_cast<double>(grid.n.size()) * static_cast<double>(grid.k.size());
    if (points_in_grid != static_cast<double>(by_shape.size())) {
      fail(measured.source, measured.last_line, "rows",
           "the " + std::string(kRoleNames[key.first]) + " " + std::string(kPrecisionNames[key.second]) +
               " rows do not fill a grid (" + std::to_string(by_shape.size()) + " shapes over " +
               std::to_string(grid.m.size()) + " × " + std::to_string(grid.n.size()) + " × " +
               std::to_string(grid.k.size()) + " axis values)",
           "measure every combination of the m, n and k values, as the measure script does");
    }
    grid.flops_per_s.assign(by_shape.size(), 0);
    for (const auto& [shape, rate] : by_shape) {
      const auto at = [](const std::vector<int64_t>& axis, int64_t v) {
        return static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), v) - axis.begin());
      };
      const size_t im = at(grid.m, std::get<0>(shape)), in_ = at(grid.n, std::get<1>(shape)),
                   ik = at(grid.k, std::get<2>(shape));
      grid.flops_per_s[(ik * grid.n.size() + in_) * grid.m.size() + im] = rate;
    }
    table.grids[key.first][key.second] = std::move(grid);
  }
  return table;
}

}  // namespace

GemmTable parse_gemm_table_csv(const std::string& text, const std::string& source) {
  TablePoints points;
  read_rows(text, source, points);
  return build_table(points, source);
}

GemmTable load_gemm_table(const std::string& path) {
  return parse_gemm_table_csv(read_file_bytes(path, measured_table::kMaxTableBytes), path);
}

GemmTable load_gemm_tables(const std::vector<std::string>& paths) {
  TablePoints points;
  std::string source;
  for (const std::string& path : paths) {
    read_rows(read_file_bytes(path, measured_table::kMaxTableBytes), path, points);
    source += (source.empty() ? "" : " + ") + path;
  }
  return build_table(points, source);
}

}  // namespace fsdpsim
