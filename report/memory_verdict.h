#pragma once
/// The one memory verdict that `simulate`, `fit`, `sweep`, `exec`, `validate` and the HTML reports print: three
/// states, one memory figure, and the band that the public fidelity suite's held-out rows put around it.
///
///   out of memory  the allocator failed, or the peak reserved + overheads exceed the GPU's memory
///   at risk        it fits, but inside the safety margin, or the band's upper end crosses the GPU's memory
///   fits           otherwise
///
/// The figure is always `needed_bytes` = the peak the caching allocator reserved over all simulated steps + the
/// memory outside it (CUDA context, cuBLAS workspace, NCCL), the same number in every command for the same
/// configuration.

#include <cstdint>
#include <string>

namespace fsdpsim {

enum class MemoryFit : uint8_t { fits, at_risk, out_of_memory };

/// "fits" | "at_risk" | "out_of_memory".
std::string to_string(MemoryFit fit);

/// The memory kept free: a configuration whose needed memory is within this fraction of the GPU's is at risk.
inline constexpr double kDefaultMemoryMargin = 0.05;

/// How far measured runs fell from fsdpsim's prediction: measured / predicted at the band's two quantiles, over the
/// fidelity suite's held-out rows (report/error_band.cpp holds the committed figures).
struct ErrorBand {
  double low_ratio = 1;   ///< measured / predicted at the lower quantile
  double high_ratio = 1;  ///< measured / predicted at the upper quantile
  double coverage = 0.9;  ///< the share of runs between the two quantiles
  int32_t runs = 0;       ///< held-out rows the band is drawn from; 0: no band
  bool operator==(const ErrorBand&) const = default;
};

/// The committed bands of peak memory and of throughput (report/error_band.cpp).
struct ErrorBands {
  ErrorBand memory;
  ErrorBand throughput;  ///< measured / predicted tokens per second
  bool operator==(const ErrorBands&) const = default;
};
const ErrorBands& published_error_bands();

/// The verdict and the figures behind it.
struct MemoryVerdict {
  MemoryFit fit = MemoryFit::fits;
  int64_t needed_bytes = 0;      ///< peak reserved over all steps + overheads (+ a GPU run's executor scratch)
  int64_t gpu_memory_bytes = 0;  ///< the GPU's memory (as measured, for a GPU run)
  double margin = kDefaultMemoryMargin;
  int64_t band_low_bytes = 0;  ///< needed × the band's ratios; equal to needed when there is no band
  int64_t band_high_bytes = 0;
  ErrorBand band;
  bool allocator_failed = false;  ///< the simulated allocator could not satisfy a request
  /// CPU offload: the activations a node holds in host memory at once (its GPUs' offloaded bytes of one
  /// micro-batch), and the node's host memory (0: not stated, not checked). More than the node has is out of memory.
  int64_t host_offload_bytes_per_node = 0;
  int64_t host_memory_bytes = 0;
  /// Which rank the verdict is for where ranks differ ("the busiest expert-parallel rank ..."); empty: every rank
  /// alike.
  std::string rank;

  [[nodiscard]] int64_t spare_bytes() const { return gpu_memory_bytes - needed_bytes; }
};

/// The verdict for `needed_bytes` on a GPU of `gpu_memory_bytes`.
MemoryVerdict memory_verdict(int64_t needed_bytes, int64_t gpu_memory_bytes, bool allocator_failed, double margin,
                             const ErrorBand& band);
/// The same verdict, out of memory also when offloaded activations exceed the node's host memory.
MemoryVerdict with_host_memory(MemoryVerdict verdict, int64_t host_offload_bytes_per_node, int64_t host_memory_bytes);

/// One line: "fits, 3.1 GiB to spare: needs 76.1 GiB of 79.2 GiB (90% band 70.0-82.3 GiB over 24 published runs)".
std::string verdict_text(const MemoryVerdict& v);
/// Only the band: "90% band 70.0 GiB-82.3 GiB over 24 published runs" (empty without a band).
std::string band_text(const MemoryVerdict& v);
/// The band's two ends, "70.0 GiB-82.3 GiB" ("-" without a band), for tables.
std::string band_range(const MemoryVerdict& v);
/// The short state a table shows: "fits", "risk", "OOM".
std::string verdict_label(MemoryFit fit);

}  // namespace fsdpsim
