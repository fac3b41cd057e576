#pragma once
/// Measured fused-attention times: the `attention.csv` that `bench/kernel_tables/measure_kernel_tables.py` writes
/// (kernel, batch, seq, heads, head_dim, causal, forward_us, backward_us, and optionally kv_heads; one row per shape
/// and kernel, timed through PyTorch's scaled_dot_product_attention), read for one kernel and looked up by the shape
/// of an attention call, so that the compute model takes attention's time from what the GPU's kernel did instead of
/// one efficiency.
///
/// `heads` counts query heads. `kv_heads` (absent or empty: `heads`, multi-head attention) gives grouped-query
/// attention: each key/value head serves heads / kv_heads query heads, the call's group size. The FLOPs do not
/// change with it (every query head still scores every key); what a kernel does with a shared key/value head does:
/// fewer K and V bytes to load, and in the backward the dK and dV of a group summed (in the kernel, or by
/// FlashAttention-2's expand-then-reduce).
///
/// A row's achieved rates: forward FLOPs 4·batch·heads·seq²·head_dim (half of it under a causal mask, the count the
/// script writes) over forward_us; backward FLOPs 2.5 × the forward's (FlashAttention-2's backward recomputes the
/// scores and runs four more products, Dao 2023, Algorithm 2) over backward_us. Only causal rows are read: every
/// model fsdpsim builds masks causally. A causal row may leave backward_us empty where a publication gives the
/// backward only without the mask (FlashAttention-3's paper, arXiv 2407.08608, Figure 6); its backward rate is then
/// the unmasked row's backward rate of the same shape times the causal forward rate over the unmasked forward rate
/// (masking costs the backward what it costs the forward). On NVIDIA's published tables, which give both, that rule
/// gives each causal backward back within 8.0%, median 2.6%, and FlashAttention-3's own H100 causal backward (pytorch
/// PR #137036) within 0.9% (AttentionTable.TheDerivedMaskedBackwardMatches...).
///
/// Lookup, in log space of the rate as the GEMM table does: between the two measured group sizes that bracket the
/// call's (a table of one group size answers every call with it); for each, between the two measured head dims that
/// bracket the call's; for each, between the two measured sequence lengths that bracket it; for each, between the two
/// measured batch × heads products that bracket it at that sequence length (rows with the same product, such as batch 1
/// × 32 heads and batch 4 × 8 heads, are averaged). Values beyond the measured range take the nearest edge's rate.

#include <cstdint>
#include <string>
#include <vector>

namespace fsdpsim {

/// The rates measured at one (head dim, sequence length, batch × heads).
struct AttentionPoint {
  int64_t batch_heads = 0;
  double forward_log_rate = 0;   ///< ln(FLOP/s)
  double backward_log_rate = 0;  ///< ln(FLOP/s)
};

/// The points of one sequence length, ascending in batch × heads.
struct AttentionSeqRow {
  int64_t seq = 0;
  std::vector<AttentionPoint> points;
};

/// The rows of one head dim, ascending in sequence length.
struct AttentionHeadDim {
  int64_t head_dim = 0;
  std::vector<AttentionSeqRow> seqs;
};

/// The rows of one group size (query heads per key/value head; 1: multi-head attention).
struct AttentionGroup {
  int64_t query_heads_per_kv_head = 1;
  std::vector<AttentionHeadDim> head_dims;  ///< ascending
};

struct AttentionTable {
  std::string source;                  ///< the file it was read from
  std::string kernel;                  ///< the kernel whose rows were read ("cudnn", "flash")
  std::vector<AttentionGroup> groups;  ///< ascending in group size

  /// The achieved FLOP rate of a causal attention call of this shape, forward or backward; `batch_heads` counts
  /// query heads, each key/value head serving `query_heads_per_kv_head` of them.
  [[nodiscard]] double flops_per_s(bool backward, int64_t seq, int64_t batch_heads, int64_t head_dim,
                                   int64_t query_heads_per_kv_head = 1) const;
};

/// Reads the CSV's causal rows of `kernel` (empty: the table's only kernel; several kernels then need a name).
/// ConfigError naming `source`, the line and the field for anything else: a missing column, a non-positive size or
/// time, a kv_heads that does not divide heads, an unknown kernel, no causal rows.
AttentionTable parse_attention_table_csv(const std::string& text, const std::string& source, const std::string& kernel);
/// Reads the file at `path` (at most 64 MiB).
AttentionTable load_attention_table(const std::string& path, const std::string& kernel);

}  // namespace fsdpsim
