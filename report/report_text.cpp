// The human-readable report of `fsdpsim simulate` (and of `fsdpsim exec`).
#include <cstdio>
#include <sstream>

#include "common/text.h"
#include "report/report.h"

namespace fsdpsim {
namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void memory_section(const Report& r, std::ostringstream& out) {
  out << "\nmemory per GPU\n";
  if (r.pipeline_stages > 1) {
    out << "  per stage       peak reserved";
    for (size_t k = 0; k < r.stage_peak_reserved_bytes.size(); ++k)
      out << (k ? ", " : " ") << "s" << k << " " << format_bytes(r.stage_peak_reserved_bytes[k]);
    out << "\n                  the figures below are stage " << r.memory_stage << "'s, the fullest\n";
  }
  out << "  persistent      " << format_bytes(r.persistent_total_bytes) << " (";
  bool first = true;
  for (const auto& [category, bytes] : r.persistent_bytes) {
    out << (first ? "" : ", ") << category << " " << format_bytes(bytes);
    first = false;
  }
  out << ")\n";
  out << "  peak allocated  " << format_bytes(r.peak_allocated_bytes) << " at " << fixed(r.peak_time_s, 3)
      << " s into the step";
  if (!r.peak_op.empty()) out << ", during " << r.peak_op << " (" << r.peak_phase << ")";
  out << "\n";
  const int64_t needed = r.peak_reserved_bytes + r.overheads.total();
  out << "  peak reserved   " << format_bytes(r.peak_reserved_bytes)
      << (r.overheads_measured ? " + measured overheads " : " + overheads ") << format_bytes(r.overheads.total())
      << " (CUDA context " << format_bytes(r.overheads.cuda_context_bytes) << ", cuBLAS "
      << format_bytes(r.overheads.cublas_workspace_bytes) << ", NCCL "
      << format_bytes(r.overheads.nccl_bytes + r.overheads.nccl_registration_bytes) << " over "
      << r.overheads.communicators << " communicators";
  if (r.overheads.p2p_peers > 0) {
    out << ", of which pipeline P2P " << format_bytes(r.overheads.nccl_p2p_bytes) << " to " << r.overheads.p2p_peers
        << (r.overheads.p2p_peers == 1 ? " peer × " : " peers × ") << r.overheads.p2p_channels_per_peer << " channels";
  }
  out << ") = " << format_bytes(needed) << " of " << format_bytes(r.gpu_memory_bytes) << "\n";
  if (r.executor_scratch_bytes > 0) {
    out << "  executor        " << format_bytes(r.executor_scratch_bytes)
        << " of scratch beyond that (GEMM operands and collective staging the IR does not hold; not counted above)\n";
  }
  out << "  verdict         " << verdict_text(r.memory) << "\n";
  if (r.oom) out << "                  " << r.oom_reason << "\n";
  if (r.host_offload_bytes_per_gpu > 0) {
    out << "  host offload    " << format_bytes(r.host_offload_bytes_per_gpu) << " per GPU at once, "
        << format_bytes(r.host_offload_bytes_per_node) << " per node of "
        << (r.host_memory_bytes > 0 ? format_bytes(r.host_memory_bytes) + " host memory"
                                    : std::string("host memory the topology does not state (not checked)"))
        << "; " << fixed(r.host_bw_per_gpu_bytes_per_s / 1e9, 0) << " GB/s per GPU each way (" << r.gpus_per_host_link
        << " GPU" << (r.gpus_per_host_link == 1 ? "" : "s") << " per host link)\n";
  }
  out << "  at the peak (allocated, and the overheads outside the allocator):\n";
  int64_t total = 0;
  for (const auto& [category, bytes] : r.memory_breakdown) {
    total += bytes;
    if (bytes == 0) continue;
    char line[128];
    std::snprintf(line, sizeof line, "    %-18s %12s\n", category.c_str(), format_bytes(bytes).c_str());
    out << line;
  }
  // The breakdown adds up to the figure it explains: allocated at the peak + overheads, and with the allocator's
  // reserve beyond the allocated peak, the needed memory of the verdict.
  char sum[160];
  std::snprintf(sum, sizeof sum, "    %-18s %12s = %s allocated + %s overheads\n", "sum", format_bytes(total).c_str(),
                format_bytes(total - r.overheads.total()).c_str(), format_bytes(r.overheads.total()).c_str());
  out << sum;
  out << "  allocator: " << r.cuda_malloc_calls_first_step << " cudaMalloc calls in the first step; "
      << format_bytes(r.fragmentation_bytes) << " reserved beyond the allocated peak (rounding, per-stream pools, "
      << "split blocks): sum + that = " << format_bytes(total + r.fragmentation_bytes) << " needed\n";
}

}  // namespace

std::string report_text(const Report& r) {
  std::ostringstream out;
  out << r.source << ": " << r.model << " on " << r.topology << ", " << r.nodes << " nodes, " << r.world_size
      << " GPUs (" << r.gpu << ")\n";
  out << "  " << r.implementation << " " << r.strategy;
  // The layout line counts the micro-batches with their size; a schedule read from a file has only the count.
  if (r.layout.empty()) {
    out << ", " << r.micro_batches << " micro-batch" << (r.micro_batches == 1 ? "" : "es") << " per step\n";
  } else {
    out << "\n  layout: " << r.layout << "\n";
  }
  for (const std::string& warning : r.warnings) out << "  warning: " << warning << "\n";
  if (const std::string size = model_size_text(r.model_size); !size.empty()) out << "  model: " << size << "\n";
  if (!r.read_not_modelled.empty()) {
    out << "  read, not modelled (" << r.read_not_modelled.size() << "): " << join(r.read_not_modelled, " ") << "\n";
  }
  if (!r.measured_tables.empty()) out << "  timed by measured tables: " << join(r.measured_tables, "; ") << "\n";
  if (!r.simulated_rank.empty()) out << "  ranks differ: the figures are for " << r.simulated_rank << "\n";
  out << "\n";
  out << "step time       " << fixed(r.step_time_s, 3) << " s steady state (first step "
      << fixed(r.first_step_time_s, 3) << " s)\n";
  if (r.straggler_cost_s > 0 && r.step_time_s > 0) {
    out << "                the straggler costs every rank " << fixed(r.straggler_cost_s, 3) << " s per step ("
        << fixed(100 * r.straggler_cost_s / r.step_time_s, 1) << "% of it)\n";
  }
  out << "throughput      " << fixed(r.tokens_per_s_per_gpu, 0) << " tokens/s per GPU, " << fixed(r.tflops_per_gpu, 1)
      << " TFLOP/s per GPU, MFU " << fixed(100 * r.mfu, 1) << "% of dense BF16 peak\n";
  if (r.memory.band.runs > 0) {
    const ErrorBand& b = published_error_bands().throughput;
    out << "                " << fixed(100 * b.coverage, 0) << "% band " << fixed(r.tokens_per_s_band_low, 0) << "-"
        << fixed(r.tokens_per_s_band_high, 0) << " tokens/s per GPU over " << b.runs << " published runs";
    if (r.oom) out << "; not meaningful: the step does not fit in memory";
    out << "\n";
  } else if (r.oom) {
    out << "                not meaningful: the step does not fit in memory\n";
  }
  if (r.pipeline_stages > 1) {
    out << "pipeline        " << r.pipeline_schedule << ", " << r.pipeline_stages << " stages";
    if (r.virtual_stages > 1) out << " × " << r.virtual_stages << " model chunks";
    out << "; bubble " << fixed(r.pipeline_bubble_s, 3) << " s on stage 0 ("
        << fixed(100 * r.pipeline_bubble_s / std::max(1e-12, r.step_time_s), 1)
        << "% of the step: waits for other stages' activations and gradients)\n";
    out << "                bubble per stage";
    for (size_t k = 0; k < r.pipeline_stage_bubble_s.size(); ++k) {
      out << (k ? ", " : " ") << "s" << k << " "
          << fixed(100 * r.pipeline_stage_bubble_s[k] / std::max(1e-12, r.step_time_s), 1) << "%";
    }
    out << "\n";
  }
  if (r.host_walk_s > 0) {
    out << "host            " << fixed(r.host_walk_s, 3) << " s to issue the step's " << r.host_kernels_per_step
        << " kernels (" << r.host_dispatch << ")";
    if (r.host_bound_s > 0) {
      out << "; the compute stream waited " << fixed(r.host_bound_s, 3) << " s for it ("
          << fixed(100 * r.host_bound_s / std::max(1e-12, r.step_time_s), 1) << "% of the step)";
    }
    out << "\n";
  }
  out << "exposed comm    " << fixed(r.exposed_comm_s, 3) << " s ("
      << fixed(r.step_time_s > 0 ? 100 * r.exposed_comm_s / r.step_time_s : 0, 1) << "% of the step) by phase:";
  for (const auto& [phase, s] : r.exposed_comm_by_phase_s) out << " " << phase << " " << fixed(s, 3) << " s";
  out << "\n                by cause:";
  for (const auto& [kind, s] : r.exposed_comm_by_kind_s) out << " " << kind << " " << fixed(s, 3) << " s;";
  out << "\n";
  memory_section(r, out);
  out << "\ncollectives per step\n";
  for (const auto& c : r.collectives) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "  %-15s %-10s %5d ranks %4d domains %6lld× up to %10s  %-14s busbw %6.1f GB/s  busy %s\n",
                  std::string(to_string(c.kind)).c_str(), c.group.c_str(), c.ranks, c.domains,
                  static_cast<long long>(c.count), format_bytes(c.size_bytes).c_str(), c.algorithm.c_str(),
                  c.busbw_bytes_per_s / 1e9, format_time_ns(c.busy_ns).c_str());
    out << line;
  }
  out << "\nlongest waits of the compute stream\n";
  for (const auto& line : r.longest_wait_lines) out << "  " << line << "\n";
  return out.str();
}

}  // namespace fsdpsim
