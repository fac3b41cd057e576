#pragma once
/// The hardware a job runs on (docs/architecture.md §2.1, §6): a GPU's profile (peaks, memory, and the constants of
/// the compute, memory-overhead, SM-contention and NCCL models), a cluster topology of identical nodes, where a process
/// group's members sit on it (place_group, topologies/placement.cpp), and the built-in presets and their YAML form.
/// Every constant of a shipped profile or preset cites its public source in its YAML file (topologies/profiles/,
/// topologies/presets/).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/units.h"

namespace fsdpsim {

/// GPU architecture generation; selects NCCL's (or, for AMD's CDNA, RCCL's) per-architecture tables.
enum class GpuArch : uint8_t { ampere, hopper, blackwell, cdna3, cdna4 };
/// The architectures' names in profile YAML files and reports.
inline constexpr EnumNames<GpuArch, 5> kGpuArchNames{{{{GpuArch::ampere, "ampere"},
                                                       {GpuArch::hopper, "hopper"},
                                                       {GpuArch::blackwell, "blackwell"},
                                                       {GpuArch::cdna3, "cdna3"},
                                                       {GpuArch::cdna4, "cdna4"}}}};
/// AMD Instinct (CDNA): RCCL instead of NCCL, Infinity Fabric instead of NVLink, no NVLS.
constexpr bool is_amd(GpuArch arch) {
  return arch == GpuArch::cdna3 || arch == GpuArch::cdna4;
}

struct GemmTable;       // topologies/gemm_table.h
struct AttentionTable;  // topologies/attention_table.h

/// What the host CPU spends issuing a rank's work (sim/host_timeline.h): it walks the ops in program order, and an
/// op's kernels cannot start before it has issued them. Per kernel by HostDispatch, plus FSDP2's Python hooks.
struct HostCosts {
  TimeNs eager_kernel_ns = 0;     ///< PyTorch eager: module call, dispatcher, autograd and launch, per kernel
  TimeNs compiled_kernel_ns = 0;  ///< torch.compile's generated wrapper: the launch call per kernel
  TimeNs graph_kernel_ns = 0;     ///< a replayed CUDA graph, per kernel it holds
  /// FSDP2's pre-forward, pre-backward and post-backward hooks (copy-in and -out bookkeeping, DTensor and autograd
  /// work on the CPU), per parameter all-gather or gradient reduce-scatter they issue.
  TimeNs fsdp2_collective_ns = 0;
  /// The optimizer step over FSDP2's DTensor parameters, per FSDP unit: DTensor dispatch of each foreach call over
  /// the unit's parameters, once per step.
  TimeNs fsdp2_optimizer_unit_ns = 0;
  [[nodiscard]] bool any() const {
    return eager_kernel_ns > 0 || compiled_kernel_ns > 0 || graph_kernel_ns > 0 || fsdp2_collective_ns > 0 ||
           fsdp2_optimizer_unit_ns > 0;
  }
  bool operator==(const HostCosts&) const = default;
};

/// One GPU model.
struct GpuProfile {
  std::string name;  ///< "h100-sxm"
  GpuArch arch = GpuArch::hopper;
  int32_t sm_count = 0;
  double dense_bf16_flops_per_s = 0;
  double dense_fp8_flops_per_s = 0;  ///< 0 where FP8 is not supported (A100)
  int64_t hbm_bytes = 0;             ///< device memory as the driver reports it (cudaMemGetInfo total)
  double hbm_bw_bytes_per_s = 0;

  // Compute model (sim/compute_model): time = flops / (peak × efficiency(shape)) + bytes / (hbm_bw × memory_eff).
  double gemm_max_efficiency = 0.8;      ///< best-shape achieved/peak for BF16 GEMMs (MAMF)
  double fp8_gemm_max_efficiency = 0.7;  ///< the same for FP8
  /// Rate of an FP8 GEMM with one scale per row of each operand (Fp8GemmScaling::rowwise) as a fraction of the
  /// per-tensor-scaled one of the same shape; 1 where not measured.
  double fp8_rowwise_gemm_rate_fraction = 1.0;
  int64_t gemm_tile_m = 128;  ///< the largest CTA tile, for wave quantisation (smaller ones are chosen per shape)
  int64_t gemm_tile_n = 256;
  int64_t gemm_k_half = 256;          ///< k at which the k-loop efficiency is half its maximum
  double attention_efficiency = 0.5;  ///< fused attention (flash/cuDNN) achieved/peak
  double memory_efficiency = 0.8;     ///< achieved/peak HBM bandwidth for elementwise kernels
  /// Achieved/peak HBM bandwidth of the kernel classes of KernelClassBytes (schedule/ir.h): PyTorch's unvectorized
  /// elementwise kernels and its row reductions. 0: `memory_efficiency` (no measurement for this GPU).
  double unvectorized_memory_efficiency = 0;
  double reduction_memory_efficiency = 0;
  /// Fraction of the clock at which the MAMF figures were measured that the SMs hold through a training step
  /// (power and thermal limits, other kernels' power draw). Scales every FLOP-bound rate, not HBM bandwidth. Fitted
  /// by `fsdpsim fidelity --fit` on the calibration rows of tests/fidelity; 1 = the idle-GPU measurements hold.
  double sustained_clock_fraction = 1.0;
  TimeNs kernel_overhead_ns = 0;  ///< launch and tail per kernel
  /// Measured GEMM times by shape (`simulate --gemm-table`): where set, a GEMM's time comes from it, with no
  /// efficiency factors and no sustained-clock fraction (the table is what the GPU did); attention does not.
  std::shared_ptr<const GemmTable> gemm_table;
  /// Measured fused-attention times by shape (`simulate --attention-table`): where set, the attention core's time
  /// comes from it, with no attention efficiency and no sustained-clock fraction.
  std::shared_ptr<const AttentionTable> attention_table;

  // Memory overheads outside the PyTorch caching allocator (sim/memory_overhead_model.cpp; docs/architecture.md §7.4).
  int64_t cuda_context_bytes = 0;               ///< CUDA context + kernels loaded
  int64_t cublas_workspace_bytes = 0;           ///< per stream that runs GEMMs
  int64_t nccl_buffer_bytes = 0;                ///< NCCL_BUFFSIZE: per channel and communicator, Simple and LL128 each
  int64_t allocator_segment_reserve_bytes = 0;  ///< estimated fragmentation floor; only checked against hbm_bytes

  // Interference: SMs a communication kernel occupies while it runs (docs/architecture.md §6.11), taken from compute
  // (sim/rate_assignment.h, §5.4).
  int32_t ring_sms = 24;       ///< ring/tree kernels (NCCL channels = CTAs)
  int32_t nvls_sms = 16;       ///< NVLS kernels without registered buffers (0: the GPU has no NVLS, e.g. Ampere)
  int32_t registered_sms = 6;  ///< NVLS / IB SHARP / symmetric kernels with registered buffers (nccl_ub); 0: none
  /// The chunk pipeline of NVLS / NVLSTree kernels (sim/nccl/nccl_pipeline.cpp), which NCCL's tuning model leaves out:
  /// the fixed cost of one chunk step of a (channel, head) piece, and the chunk steps the pipeline takes to fill.
  /// Fitted per architecture on measured all-reduce size sweeps; both 0: NCCL's tuning model alone.
  TimeNs nvls_chunk_handshake_ns = 0;
  double nvls_pipeline_fill_chunks = 0;
  double overlap_slowdown = 0;  ///< extra fractional compute slowdown while collectives run (docs/architecture.md §5.4)
  /// The fraction of its own speed at which a memory-bound kernel on a side stream (FSDP2's copy-in, a gradient
  /// accumulation on the reduce-scatter stream) runs while the compute stream runs a kernel: the two share the SMs and
  /// HBM. 1: no contention modelled.
  double side_stream_memory_speed = 1.0;
  TimeNs cuda_malloc_ns = 0;    ///< cost of one cudaMalloc of a new allocator segment (first step)
  /// What the host CPU spends issuing work (sim/host_timeline.h); all 0: the host is not modelled.
  HostCosts host;

  // Calibration (`fsdpsim calibrate`): measured/predicted bus bandwidth of large collectives on this machine; the
  // collective model multiplies its bandwidth by these. 1 = NCCL's own model unchanged.
  double busbw_scale_all_gather = 1.0;
  double busbw_scale_reduce_scatter = 1.0;
  double busbw_scale_all_reduce = 1.0;
  std::string calibration;  ///< where calibrated values came from ("fsdpsim calibrate, <device>, <date>"); "" if none

  /// What one GPU-hour of this hardware costs the user (any currency; `sweep --price` overrides it). 0: not stated.
  /// Shipped profiles state none: prices differ by provider, contract and month, so the user gives theirs.
  double price_per_gpu_hour = 0;

  /// Field-by-field equality (YAML round trips are exact).
  bool operator==(const GpuProfile&) const = default;
};

/// The bandwidth fractions of the two kernel classes, `memory_efficiency` where the profile has no measurement.
inline double unvectorized_memory_efficiency(const GpuProfile& gpu) {
  return gpu.unvectorized_memory_efficiency > 0 ? gpu.unvectorized_memory_efficiency : gpu.memory_efficiency;
}
inline double reduction_memory_efficiency(const GpuProfile& gpu) {
  return gpu.reduction_memory_efficiency > 0 ? gpu.reduction_memory_efficiency : gpu.memory_efficiency;
}

/// A cluster built from identical nodes.
struct Topology {
  /// What one GPU's activation offload gets of its host link when every GPU of the node copies at once.
  [[nodiscard]] double host_bw_per_gpu_bytes_per_s() const { return host_bw_bytes_per_s / gpus_per_host_link; }

  std::string name;
  std::string description;
  GpuProfile gpu;
  /// A mixed pool: the GPUs of the other nodes (H100 nodes beside H200 ones), each kind with the same node and
  /// network shape. Every rank runs the same schedule, so the slowest kind paces the step and each kind's own memory
  /// decides whether it fits. Empty: every node carries `gpu`.
  std::vector<GpuProfile> mixed_gpus;
  int32_t gpus_per_node = 8;
  int32_t nvlink_domain_gpus = 8;    ///< GPUs in one NVLink domain (72 for GB200 NVL72)
  double nvlink_bw_bytes_per_s = 0;  ///< per GPU, per direction
  bool nvls = false;                 ///< NVLink SHARP (NVSwitch multicast/reduction)
  int32_t nics_per_node = 8;
  double nic_bw_bytes_per_s = 0;   ///< per NIC, per direction (line rate)
  bool ib_sharp = false;           ///< InfiniBand SHARP (NCCL CollNet) available
  double host_bw_bytes_per_s = 0;  ///< one host link per direction (PCIe, NVLink-C2C), for CPU offload
  /// GPUs that share one host link: their offload copies run at the same time, so each gets 1/N of host_bw.
  int32_t gpus_per_host_link = 1;
  int64_t host_memory_bytes = 0;         ///< CPU memory per node; 0: not stated (offload is not checked against it)
  TimeNs nic_latency_ns = 0;             ///< extra per-hop network latency (NCCL graph latencyInter)
  int32_t max_nics_between_domains = 0;  ///< NICs NCCL uses between NVLink domains (MNNVL); 0 = all
  /// The GPUs of a node are joined point to point (AMD Infinity Fabric / xGMI: a link per GPU pair), not through a
  /// switch: nvlink_bw is then one GPU's sum over its gpus_per_node − 1 links, and a group of k GPUs in a node reaches
  /// only its k − 1 links to the other members.
  bool xgmi_mesh = false;

  /// Field-by-field equality (YAML round trips are exact).
  bool operator==(const Topology&) const = default;
};

/// Where a process group's members sit.
struct GroupPlacement {
  int32_t size = 1;
  int32_t ranks_per_domain = 1;  ///< members in the fullest NVLink domain (NCCL's "local ranks")
  int32_t domains = 1;           ///< NVLink domains spanned (NCCL's "nodes")
  int32_t ranks_per_node = 1;    ///< members in the fullest physical node (they share its NICs)
  int32_t nodes = 1;             ///< physical nodes spanned
  /// Members in the emptiest occupied domain and node: equal to the fullest ones for a group that fills the domains
  /// it touches evenly; fewer for 128 GPUs on 72-GPU racks (72 + 56) or a partial last node.
  int32_t fewest_ranks_per_domain = 1;
  int32_t fewest_ranks_per_node = 1;

  /// Field-by-field equality.
  bool operator==(const GroupPlacement&) const = default;
};

/// Places a group of `size` ranks with rank distance `stride` (first member: rank 0) in a job of `world_size`
/// GPUs laid out node by node (Megatron's rank order). Throws ConfigError when the group does not fit the world.
/// Members may fill the domains unevenly (128 GPUs on 72-GPU racks); the cost model then sizes NVLink by the fullest
/// domain and the scale-out hop by the emptiest, whose share of the NICs is the ring's slowest hop
/// (docs/architecture.md §6.1).
GroupPlacement place_group(const Topology& topology, int32_t world_size, int32_t size, int32_t stride);

/// The same platform with nodes of `gpus` GPUs (1 … gpus_per_node): a smaller host of that platform, or the part of
/// one node a small job uses. A node keeps its NVLink (a domain spanning nodes stays as it is), its share of the NICs
/// (at least one) and host links, and on an xGMI mesh k − 1 of its links.
Topology with_gpus_per_node(const Topology& topology, int32_t gpus);

std::string_view to_string(GpuArch arch);

/// Names of the built-in topology presets and GPU profiles.
std::vector<std::string> topology_preset_names();
std::vector<std::string> gpu_profile_names();
/// A preset by name; ConfigError listing the presets when unknown.
Topology topology_preset(const std::string& name);
GpuProfile gpu_profile(const std::string& name);
/// Loads a topology: a preset name or a YAML file path.
Topology load_topology(const std::string& name_or_path);
/// Parses a topology YAML document; `gpu:` names a profile or gives one inline.
Topology parse_topology_yaml(const std::string& text, const std::string& source);
/// Parses a GPU profile YAML document (what `fsdpsim calibrate` writes and `simulate --profile` reads).
GpuProfile parse_gpu_profile_yaml(const std::string& text, const std::string& source);
/// Loads a GPU profile: a preset name or a YAML file path.
GpuProfile load_gpu_profile(const std::string& name_or_path);
/// YAML in the schema the parsers read.
std::string gpu_profile_to_yaml(const GpuProfile& profile);
std::string topology_to_yaml(const Topology& topology);

}  // namespace fsdpsim
