#include "report/memory_verdict.h"

#include <cmath>
#include <cstdio>

#include "common/units.h"

namespace fsdpsim {

std::string to_string(MemoryFit fit) {
  switch (fit) {
    case MemoryFit::fits:
      return "fits";
    case MemoryFit::at_risk:
      return "at_risk";
    case MemoryFit::out_of_memory:
      return "out_of_memory";
  }
  return "?";
}

std::string verdict_label(MemoryFit fit) {
  switch (fit) {
    case MemoryFit::fits:
      return "fits";
    case MemoryFit::at_risk:
      return "risk";
    case MemoryFit::out_of_memory:
      return "OOM";
  }
  return "?";
}

MemoryVerdict memory_verdict(int64_t needed_bytes, int64_t gpu_memory_bytes, bool allocator_failed, double margin,
                             const ErrorBand& band) {
  MemoryVerdict v;
  v.needed_bytes = needed_bytes;
  v.gpu_memory_bytes = gpu_memory_bytes;
  v.margin = margin;
  v.band = band;
  v.allocator_failed = allocator_failed;
  const auto scaled = [&](double ratio) {
    return band.runs > 0 ? static_cast<int64_t>(std::llround(static_cast<double>(needed_bytes) * ratio)) : needed_bytes;
  };
  v.band_low_bytes = scaled(band.low_ratio);
  v.band_high_bytes = scaled(band.high_ratio);
  const double usable = (1.0 - margin) * static_cast<double>(gpu_memory_bytes);
  if (allocator_failed || needed_bytes > gpu_memory_bytes) {
    v.fit = MemoryFit::out_of_memory;
  } else if (static_cast<double>(needed_bytes) > usable || v.band_high_bytes > gpu_memory_bytes) {
    v.fit = MemoryFit::at_risk;
  } else {
    v.fit = MemoryFit::fits;
  }
  return v;
}

MemoryVerdict with_host_memory(MemoryVerdict v, int64_t host_offload_bytes_per_node, int64_t host_memory_bytes) {
  v.host_offload_bytes_per_node = host_offload_bytes_per_node;
  v.host_memory_bytes = host_memory_bytes;
  if (host_memory_bytes > 0 && host_offload_bytes_per_node > host_memory_bytes) v.fit = MemoryFit::out_of_memory;
  return v;
}

std::string band_range(const MemoryVerdict& v) {
  return v.band.runs == 0 ? "-" : format_bytes(v.band_low_bytes) + "-" + format_bytes(v.band_high_bytes);
}

std::string band_text(const MemoryVerdict& v) {
  if (v.band.runs == 0) return "";
  char line[160];
  std::snprintf(line, sizeof line, "%.0f%% band %s over %d published runs", 100 * v.band.coverage,
                band_range(v).c_str(), v.band.runs);
  return line;
}

std::string verdict_text(const MemoryVerdict& v) {
  std::string head;
  switch (v.fit) {
    case MemoryFit::fits:
      head = "fits, " + format_bytes(v.spare_bytes()) + " to spare";
      break;
    case MemoryFit::at_risk: {
      char margin[16];
      std::snprintf(margin, sizeof margin, "%.0f%%", 100 * v.margin);
      head =
          v.band_high_bytes > v.gpu_memory_bytes && v.band.runs > 0
              ? "AT RISK: fits with " + format_bytes(v.spare_bytes()) + " to spare, but the band reaches past the GPU"
              : "AT RISK: fits with " + format_bytes(v.spare_bytes()) + " to spare, inside the " + margin +
                    " safety margin";
      break;
    }
    case MemoryFit::out_of_memory:
      head = "OUT OF MEMORY";
      break;
  }
  if (!v.rank.empty()) head += " on " + v.rank;
  std::string out = head + ": needs " + format_bytes(v.needed_bytes) + " of " + format_bytes(v.gpu_memory_bytes);
  const std::string band = band_text(v);
  if (!band.empty()) out += " (" + band + ")";
  if (v.host_memory_bytes > 0 && v.host_offload_bytes_per_node > v.host_memory_bytes) {
    out += "; offloaded activations need " + format_bytes(v.host_offload_bytes_per_node) +
           " of host memory per node, " + "more than its " + format_bytes(v.host_memory_bytes);
  }
  return out;
}

}  // namespace fsdpsim
