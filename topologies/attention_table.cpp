#include "topologies/attention_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "common/error.h"
#include "common/text.h"
#include "common/yaml_reader.h"
#include "topologies/measured_table.h"

namespace fsdpsim {
namespace {

// FlashAttention-2's backward: the scores recomputed, then dV, dP, dQ, dK: five products of the forward's two
// (Dao 2023, Algorithm 2), with equal query/key and value head dims as the measured rows have.
constexpr double kBackwardFlopsPerForward = 2.5;

constexpr int64_t kMaxDimension = 1'000'000'000;

using measured_table::fail;

// Interpolates `value_at(i)` (a log rate) over a sorted axis at `v`, in log v.
template <typename ValueAt>
double interpolate(const std::vector<int64_t>& axis, int64_t v, const ValueAt& value_at) {
  const auto [i, t] = measured_table::locate_log(axis, v);
  if (t == 0) return value_at(i);
  if (t == 1) return value_at(i + 1);
  return (1 - t) * value_at(i) + t * value_at(i + 1);
}

struct Row {
  int line = 0;
  std::string kernel;
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  int64_t kv_heads = 0;  ///< = heads without grouped-query attention
  bool causal = false;
  double forward_us = 0;
  double backward_us = 0;  ///< 0: not published (a causal row whose backward is derived, see the header)
};

const char* const kFix =
    "write the CSV bench/kernel_tables/measure_kernel_tables.py writes "
    "(kernel,batch,seq,heads,head_dim,causal,forward_us,backward_us, optionally kv_heads)";

std::vector<Row> read_rows(const std::string& text, const std::string& source) {
  std::stringstream in(text);
  std::string line;
  if (!std::getline(in, line)) fail(source, 1, "header", "the file is empty", kFix);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t header_cells = measured_table::split_csv(line).size();
  std::map<std::string, size_t> column = measured_table::header_columns(
      line, {"kernel", "batch", "seq", "heads", "head_dim", "causal", "forward_us", "backward_us"}, source, kFix);
  const auto kv_column = column.find("kv_heads");
  std::vector<Row> rows;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> cells = measured_table::split_csv(line);
    if (cells.size() != header_cells) {
      fail(source, line_no, "row",
           "has " + std::to_string(cells.size()) + " cells, the header " + std::to_string(header_cells),
           "write one value per column");
    }
    Row r;
    r.line = line_no;
    r.kernel = cells[column["kernel"]];
    if (r.kernel.empty()) fail(source, line_no, "kernel", "the kernel is not named", "name the attention kernel");
    const auto whole = [&](const char* field) {
      return measured_table::parse_whole(cells[column[field]], source, line_no, field, kMaxDimension,
                                         "attention dimension");
    };
    r.batch = whole("batch");
    r.seq = whole("seq");
    r.heads = whole("heads");
    r.head_dim = whole("head_dim");
    r.kv_heads = r.heads;
    if (kv_column != column.end() && !cells[kv_column->second].empty()) {
      r.kv_heads = whole("kv_heads");
      if (r.kv_heads > r.heads || r.heads % r.kv_heads != 0) {
        fail(source, line_no, "kv_heads",
             std::to_string(r.kv_heads) + " key/value heads do not divide the row's " + std::to_string(r.heads) +
                 " query heads into equal groups",
             "write the key/value head count the call ran with (heads for multi-head attention, a divisor of heads "
             "for grouped-query attention)");
      }
    }
    const std::string& causal = cells[column["causal"]];
    if (causal != "0" && causal != "1") {
      fail(source, line_no, "causal", "'" + causal + "' is not 0 or 1", "write 1 for a causal mask, 0 for none");
    }
    r.causal = causal == "1";
    r.forward_us = measured_table::parse_positive(cells[column["forward_us"]], source, line_no, "forward_us");
    const std::string& backward = cells[column["backward_us"]];
    if (backward.empty() && !r.causal) {
      fail(source, line_no, "backward_us", "a row without a causal mask has no backward time",
           "write the measured backward time (only a causal row may leave it empty, to derive it from this shape's "
           "row without the mask)");
    }
    r.backward_us = backward.empty() ? 0 : measured_table::parse_positive(backward, source, line_no, "backward_us");
    rows.push_back(r);
  }
  if (rows.empty()) fail(source, line_no, "rows", "the table has no rows", "measure some attention calls first");
  return rows;
}

}  // namespace

double AttentionTable::flops_per_s(bool backward, int64_t seq, int64_t batch_heads, int64_t head_dim,
                                   int64_t query_heads_per_kv_head) const {
  std::vector<int64_t> group_sizes;
  for (const AttentionGroup& g : groups) group_sizes.push_back(g.query_heads_per_kv_head);
  const double log_rate = interpolate(group_sizes, query_heads_per_kv_head, [&](size_t gi) {
    const std::vector<AttentionHeadDim>& head_dims = groups[gi].head_dims;
    std::vector<int64_t> dims;
    for (const AttentionHeadDim& d : head_dims) dims.push_back(d.head_dim);
    return interpolate(dims, head_dim, [&](size_t i) {
      const AttentionHeadDim& d = head_dims[i];
      std::vector<int64_t> seqs;
      for (const AttentionSeqRow& s : d.seqs) seqs.push_back(s.seq);
      return interpolate(seqs, seq, [&](size_t j) {
        const AttentionSeqRow& s = d.seqs[j];
        std::vector<int64_t> products;
        for (const AttentionPoint& p : s.points) products.push_back(p.batch_heads);
        return interpolate(products, batch_heads, [&](size_t k) {
          return backward ? s.points[k].backward_log_rate : s.points[k].forward_log_rate;
        });
      });
    });
  });
  return std::exp(log_rate);
}

namespace {

// The kernel whose rows are read: the one asked for, or the table's only kernel when none was.
std::string chosen_kernel(const std::vector<Row>& rows, const std::string& kernel, const std::string& source) {
  std::vector<std::string> kernels;
  for (const Row& r : rows) {
    if (std::find(kernels.begin(), kernels.end(), r.kernel) == kernels.end()) kernels.push_back(r.kernel);
  }
  if (kernel.empty()) {
    if (kernels.size() > 1) {
      fail(source, 1, "kernel",
           "the table holds " + std::to_string(kernels.size()) + " kernels (" + join(kernels, ", ") +
               ") and none was chosen",
           "name the one the job runs with --attention-kernel (PyTorch's default on Hopper is cuDNN's)");
    }
    return kernels.front();
  }
  if (std::find(kernels.begin(), kernels.end(), kernel) == kernels.end()) {
    fail(source, 1, "kernel", "the table has no rows of kernel '" + kernel + "' (it has " + join(kernels, ", ") + ")",
         "choose one of those with --attention-kernel, or measure this kernel");
  }
  return kernel;
}

// A row's shape: batch, seq, heads, kv_heads, head_dim.
using Shape = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;

Shape shape_of(const Row& r) {
  return {r.batch, r.seq, r.heads, r.kv_heads, r.head_dim};
}

// The achieved forward and backward rates (FLOP/s) of one causal row of kernel `chosen`; a row without a backward
// time derives it from the row of its shape without the mask, found in `unmasked`.
std::pair<double, double> causal_rates(const Row& r, const std::map<Shape, const Row*>& unmasked,
                                       const std::string& chosen, const std::string& source) {
  const double forward_flops = 4.0 * static_cast<double>(r.batch) * static_cast<double>(r.heads) *
                               static_cast<double>(r.seq) * static_cast<double>(r.seq) *
                               static_cast<double>(r.head_dim) * 0.5;
  const double forward_rate = forward_flops / (r.forward_us * 1e-6);
  double backward_rate = 0;
  if (r.backward_us > 0) {
    backward_rate = kBackwardFlopsPerForward * forward_flops / (r.backward_us * 1e-6);
  } else {
    const auto found = unmasked.find(shape_of(r));
    if (found == unmasked.end()) {
      fail(source, r.line, "backward_us",
           "the causal row has no backward time and the table has no row of kernel '" + chosen +
               "' without the mask at the same batch, seq, heads, kv_heads and head_dim to derive it from",
           "write the measured backward time, or add the unmasked row of this shape");
    }
    // Masking costs the backward what it costs the forward: the unmasked backward rate times the causal forward's
    // share of the unmasked forward rate (the unmasked call has twice the causal FLOPs).
    const Row& full = *found->second;
    const double unmasked_forward_rate = 2 * forward_flops / (full.forward_us * 1e-6);
    const double unmasked_backward_rate = kBackwardFlopsPerForward * 2 * forward_flops / (full.backward_us * 1e-6);
    backward_rate = unmasked_backward_rate * forward_rate / unmasked_forward_rate;
  }
  // No GPU reaches an exaFLOP/s: such a row is a unit mistake, not a measurement.
  if (!(forward_rate <= 1e18) || !(backward_rate <= 1e18) || !(forward_rate >= 1) || !(backward_rate >= 1)) {
    fail(source, r.line, "forward_us", "the row's times give a rate no GPU runs at", "write the times in microseconds");
  }
  return {forward_rate, backward_rate};
}

// group size → head dim → seq → batch·heads → (Σ ln forward rate, Σ ln backward rate, rows)
using LogRateSums =
    std::map<int64_t, std::map<int64_t, std::map<int64_t, std::map<int64_t, std::tuple<double, double, int>>>>>;

// The table's nested axes from the sums, each point the mean log rate of the rows that share it.
AttentionTable table_of(const LogRateSums& points, const std::string& source, const std::string& kernel) {
  AttentionTable table;
  table.source = source;
  table.kernel = kernel;
  for (const auto& [group_size, by_head_dim] : points) {
    AttentionGroup g{.query_heads_per_kv_head = group_size, .head_dims = {}};
    for (const auto& [head_dim, by_seq] : by_head_dim) {
      AttentionHeadDim d{.head_dim = head_dim, .seqs = {}};
      for (const auto& [seq, by_product] : by_seq) {
        AttentionSeqRow s{.seq = seq, .points = {}};
        for (const auto& [product, sums] : by_product) {
          const auto& [fwd, bwd, count] = sums;
          s.points.push_back(AttentionPoint{
              .batch_heads = product, .forward_log_rate = fwd / count, .backward_log_rate = bwd / count});
        }
        d.seqs.push_back(std::move(s));
      }
      g.head_dims.push_back(std::move(d));
    }
    table.groups.push_back(std::move(g));
  }
  return table;
}

}  // namespace

AttentionTable parse_attention_table_csv(const std::string& text, const std::string& source,
                                         const std::string& kernel) {
  const std::vector<Row> rows = read_rows(text, source);
  const std::string chosen = chosen_kernel(rows, kernel, source);
  // The kernel's rows without a mask, by shape: a causal row without a backward time derives it from its shape's.
  std::map<Shape, const Row*> unmasked;
  for (const Row& r : rows) {
    if (r.kernel == chosen && !r.causal) unmasked[shape_of(r)] = &r;
  }
  LogRateSums points;
  for (const Row& r : rows) {
    if (r.kernel != chosen || !r.causal) continue;
    const auto [forward_rate, backward_rate] = causal_rates(r, unmasked, chosen, source);
    auto& [fwd, bwd, count] = points[r.heads / r.kv_heads][r.head_dim][r.seq][r.batch * r.heads];
    fwd += std::log(forward_rate);
    bwd += std::log(backward_rate);
    ++count;
  }
  if (points.empty()) {
    fail(source, 1, "causal", "the table has no causal rows of kernel '" + chosen + "'",
         "measure the kernel with a causal mask (every model fsdpsim builds is causal)");
  }
  return table_of(points, source, chosen);
}

AttentionTable load_attention_table(const std::string& path, const std::string& kernel) {
  return parse_attention_table_csv(read_file_bytes(path, measured_table::kMaxTableBytes), path, kernel);
}

}  // namespace fsdpsim
