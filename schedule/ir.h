#pragma once
/// The schedule IR: one optimizer step of one representative rank (with pipeline parallelism, one rank of each
/// stage, joined by send/recv pairs) — process groups, streams with CUDA stream semantics, buffers, and ops with
/// explicit cross-stream dependencies. It is the single contract between the
/// builders (schedule/), the simulator (sim/) and the executor (exec/). See docs/architecture.md §4.1–§4.2.
///
/// Execution semantics, shared by the simulator and the executor:
///  - ops on one stream run one at a time, in the order of their ids;
///  - an op starts when it heads its stream and every op in `deps` has finished;
///  - `allocs` are allocated when the op starts, `frees` are released when it ends (a `sync` op frees at once);
///  - persistent buffers exist for the whole step; every other buffer is allocated once and freed once per step;
///  - a step ends when every stream has drained; the next step starts after it (Megatron's optimizer and
///    start_param_sync run on the compute stream, which every stream waits on).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "schedule/dtype.h"
#include "schedule/ids.h"

namespace fsdpsim {

/// What an op does.
enum class OpKind : uint8_t {
  all_gather,      ///< NCCL all-gather over `group`: send_bytes per rank, recv_bytes = send_bytes × group size
  reduce_scatter,  ///< NCCL reduce-scatter: send_bytes = recv_bytes × group size
  all_reduce,      ///< NCCL all-reduce: send_bytes = recv_bytes
  all_to_all,      ///< NCCL all-to-all (expert-parallel token dispatch and combine)
  compute,         ///< GEMMs (`gemms`) plus memory-bound work (`bytes_touched`)
  optimizer,       ///< the optimizer update over this rank's shard (memory-bound)
  copy,            ///< a copy or cast: on device (`bytes_touched`), to host (`send_bytes`) or from host (`recv_bytes`)
  sync,            ///< no work: its stream waits for `deps`, then `frees` are released (an event wait + free)
  send,            ///< pipeline point-to-point send of `send_bytes` to the stage of its `peer` recv (ncclSend)
  recv,            ///< pipeline point-to-point receive of `recv_bytes` from the stage of its `peer` send (ncclRecv)
};
/// How many op kinds there are (arrays indexed by kind use it; recv stays last).
inline constexpr size_t kOpKindCount = static_cast<size_t>(OpKind::recv) + 1;

/// Which part of the step an op belongs to.
enum class Phase : uint8_t { fwd, bwd, recompute, optim };

/// What a buffer holds; the memory report breaks the peak down by these.
enum class BufferCategory : uint8_t {
  param_shard,      ///< this rank's shard of the compute weights
  main_weight,      ///< high-precision (FP32) master weights
  optimizer_state,  ///< Adam moments
  grad_shard,       ///< this rank's shard of the accumulated gradients
  unsharded_grad,   ///< a unit's full gradient bucket before its reduce-scatter (or a full grad buffer)
  weight_grad,      ///< autograd's param.grad of one weight, before the hook copies it into the gradient bucket
  gathered_param,   ///< a unit's all-gathered (unsharded) weights
  activation,       ///< activations saved for backward, and recomputed ones
  workspace,        ///< transient working memory of a compute op
  comm_staging,     ///< communication staging: FSDP2 copy-in/out, HSDP buffers, double-buffer pools
};
/// How many categories there are (arrays indexed by category use it; comm_staging stays last).
inline constexpr size_t kBufferCategoryCount = static_cast<size_t>(BufferCategory::comm_staging) + 1;

/// The reduction of a reducing collective. `avg` and `premul_sum` exclude NVLS, PAT and symmetric kernels in NCCL.
enum class ReduceOp : uint8_t { none, sum, avg, premul_sum };

/// What a process group is for, in Megatron's rank order tp-cp-ep-dp (dense parameters) and etp-ep-edp (experts);
/// HSDP splits the data-parallel ranks into an inner shard group and an outer replica group. A group the builders
/// make is named by its role (`to_string`); a schedule read from a file may name its groups freely.
/// `embd` is Megatron's embedding group: the first and the last pipeline stage, which both hold the word embedding
/// when it is tied to the output layer.
enum class GroupRole : uint8_t { tp, cp, ep, etp, dp_shard, dp_outer, edp, edp_outer, pp, embd };

/// A process group, by name (dp_shard, dp_outer, tp, cp, ep, edp, ...). Its members are ranks
/// r0, r0+stride, ..., r0+(size-1)·stride of Megatron's tp-cp-ep-dp order; the topology maps them onto nodes and
/// NVLink domains.
struct Group {
  std::string name;
  int32_t size = 1;
  int32_t stride = 1;
  bool operator==(const Group&) const = default;
};

/// A FIFO queue with CUDA stream semantics.
struct Stream {
  std::string name;
  int32_t priority = 0;  ///< CUDA stream priority: 0 normal, -1 high (FSDP2's communication streams)
  /// The pipeline stage (rank of the pp group) whose GPU runs it: a schedule with pipeline parallelism holds one
  /// rank of every stage, each its own GPU; 0 without pipeline parallelism.
  int32_t stage = 0;
  bool operator==(const Stream&) const = default;
};

/// A region of device memory the step uses.
struct Buffer {
  BufferId id{0};
  std::string name;
  BufferCategory category = BufferCategory::workspace;
  int64_t size_bytes = 0;
  bool persistent = false;       ///< exists for the whole step; otherwise allocated and freed by ops
  bool nccl_registered = false;  ///< registered with NCCL (nccl_ub): enables SM-light NVLS/SHARP kernels
  int32_t stage = 0;             ///< the pipeline stage whose GPU holds it (Stream::stage)
  bool operator==(const Buffer&) const = default;
};

/// One GEMM (or a batch of equal GEMMs) a compute op runs: FLOPs = 2·m·n·k·batch. The executor runs exactly these
/// shapes with cuBLAS; the simulator derives its efficiency from them.
struct Gemm {
  std::string name;  ///< "qkv", "attn_scores", "mlp_down.dgrad", ...
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  bool attention = false;  ///< part of the attention core (fused attention kernels run at their own efficiency)
  /// Runs in BF16 in an FP8 schedule too: a linear the FP8 recipe leaves out (the output layer, which Megatron builds
  /// as its own ColumnParallelLinear rather than a Transformer Engine module, and torchao's filter_fqns skips).
  bool bf16_in_fp8 = false;
  bool operator==(const Gemm&) const = default;
};

/// The part of an op's memory-bound bytes (`Op::bytes_touched`) that PyTorch's eager kernels cannot stream at the
/// GPU's elementwise rate. TensorIterator reads contiguous same-dtype operands with vector loads
/// (vectorized_elementwise_kernel); a broadcast or strided operand, or a dtype change other than its dedicated
/// float→bf16 copy, sends the kernel down the unvectorized path (elementwise_kernel, unrolled_elementwise_kernel),
/// and a row reduction (mean, softmax, log-softmax, a weight gradient's sum over tokens) runs reduce_kernel or a
/// softmax kernel that reads its row more than once. Each class runs at the profile's own fraction of HBM bandwidth;
/// what is in neither runs at `memory_efficiency`.
struct KernelClassBytes {
  int64_t unvectorized = 0;  ///< broadcast, strided or casting elementwise kernels
  int64_t reduction = 0;     ///< row reductions
  KernelClassBytes& operator+=(const KernelClassBytes& o) {
    unvectorized += o.unvectorized;
    reduction += o.reduction;
    return *this;
  }
  [[nodiscard]] int64_t total() const { return unvectorized + reduction; }
  bool operator==(const KernelClassBytes&) const = default;
};

/// One unit of work on one stream.
struct Op {
  OpId id{0};
  std::string name;
  OpKind kind = OpKind::compute;
  Phase phase = Phase::fwd;
  int32_t unit = -1;         ///< FSDP unit index into Schedule::units, -1 when none
  int32_t micro_batch = -1;  ///< -1 for step-level ops
  StreamId stream{0};        ///< the stream it runs on
  GroupId group;             ///< the process group of a collective; none otherwise
  ReduceOp reduce_op = ReduceOp::none;
  DType dtype = DType::bf16;
  int64_t send_bytes = 0;     ///< per rank: collective input, or bytes copied device→host
  int64_t recv_bytes = 0;     ///< per rank: collective output, or bytes copied host→device
  int64_t bytes_touched = 0;  ///< HBM bytes read + written by memory-bound work (norms, casts, optimizer, copies)
  KernelClassBytes class_bytes;  ///< of bytes_touched, those of unvectorized and reduction kernels
  /// GPU kernels the host launches for this op: what its CPU-side issue costs (sim/host_timeline.h). Builders count
  /// a unit's GEMMs and elementwise kernels (model/model_units_kernels.cpp); 0 in a hand-written schedule:
  /// default_kernels().
  int32_t kernels = 0;
  std::vector<Gemm> gemms;
  std::vector<BufferId> allocs;  ///< buffers allocated when the op starts
  std::vector<BufferId> frees;   ///< buffers released when the op ends
  std::vector<BufferId> reads;   ///< buffers the op reads
  std::vector<BufferId> writes;  ///< buffers the op writes
  std::vector<OpId> deps;        ///< ops (on any stream) that must finish before this one starts
  /// send/recv: the matching op on the other stage. The pair is a rendezvous: both start once both head their
  /// streams with their deps done, and both finish when the bytes have arrived.
  OpId peer;
  bool operator==(const Op&) const = default;

  /// FLOPs of all GEMMs.
  [[nodiscard]] int64_t gemm_flops() const;
};

/// One FSDP unit (embedding, a decoder layer, the output layer) as the builder saw it.
struct UnitInfo {
  std::string name;
  int64_t params = 0;  ///< parameters of this unit held by this rank before FSDP sharding (after TP/EP)
  bool operator==(const UnitInfo&) const = default;
};

/// The kernel that computes the attention products (Gemm::attention). `flash`: the GPU's best fused attention
/// (FlashAttention-3 or cuDNN / Transformer Engine fused attention on Hopper and Blackwell, FlashAttention-2 on Ampere
/// and AMD), what a GPU profile's attention_efficiency (or its measured attention table) stands for. `triton_flash`:
/// the FlashAttention kernel written in Triton that flash-attn shipped as flash_attn_triton.py and MPT runs with
/// attn_impl: triton (llm-foundry's benchmarks); FlashAttention-2 is 1.3-1.5x faster than it in the forward pass and
/// about 2x in the backward (Dao 2023, arXiv 2307.08691, §4.1). `flash_attn2`: FlashAttention-2 (the flash-attn 2
/// package, PyTorch's flash SDPA backend) where a faster kernel exists: on Hopper and Blackwell it runs at the
/// published share of cuDNN's rate (sim/compute_model.cpp), elsewhere it is `flash`.
enum class AttentionKernel : uint8_t { flash, triton_flash, flash_attn2 };

/// The one table naming AttentionKernel values: the schedule's YAML and the configuration's `attention_kernel` key
/// both read and write through it.
inline constexpr EnumNames<AttentionKernel, 3> kAttentionKernelNames{{{{AttentionKernel::flash, "flash"},
                                                                       {AttentionKernel::triton_flash, "triton_flash"},
                                                                       {AttentionKernel::flash_attn2, "flash_attn2"}}}};

/// How FP8 GEMMs scale their operands, which sets the rate they run at. `tensorwise`: one scale per operand, cuBLAS's
/// FP8 GEMM (Transformer Engine's delayed and current scaling, and the rate blockwise and MXFP8 GEMMs are timed at);
/// `rowwise`: one scale per row of each operand (torchao's float8 rowwise recipe, a CUTLASS kernel on Hopper) for
/// all three GEMMs of a linear layer; `rowwise_with_gw_hp`: rowwise for the output and the input gradient, the
/// weight gradient in BF16 (torchao's rowwise_with_gw_hp).
enum class Fp8GemmScaling : uint8_t { tensorwise, rowwise, rowwise_with_gw_hp };

/// The one table naming Fp8GemmScaling values (the schedule's YAML key `fp8_gemm_scaling`).
inline constexpr EnumNames<Fp8GemmScaling, 3> kFp8GemmScalingNames{
    {{{Fp8GemmScaling::tensorwise, "tensorwise"},
      {Fp8GemmScaling::rowwise, "rowwise"},
      {Fp8GemmScaling::rowwise_with_gw_hp, "rowwise_with_gw_hp"}}}};

/// How the host issues the step's kernels, which sets the CPU time each one costs (sim/host_timeline.h).
/// `eager`: PyTorch eager mode, a Python call through the dispatcher and autograd per kernel (Transformer Engine's
/// modules too); `compiled`: torch.compile's generated wrapper, which calls the launch API per kernel; `cuda_graphs`:
/// captured once and replayed, so the host launches graphs, not kernels (Megatron-LM's --enable-cuda-graph).
enum class HostDispatch : uint8_t { eager, compiled, cuda_graphs };

/// The one table naming HostDispatch values (the schedule's YAML key and the configuration's `host_dispatch`).
inline constexpr EnumNames<HostDispatch, 3> kHostDispatchNames{{{{HostDispatch::eager, "eager"},
                                                                 {HostDispatch::compiled, "compiled"},
                                                                 {HostDispatch::cuda_graphs, "cuda_graphs"}}}};

/// What the schedule was built from, and the figures the reports need to turn time into per-GPU rates.
struct ScheduleInfo {
  std::string model;
  std::string implementation;  ///< megatron_fsdp | fsdp2
  std::string strategy;        ///< data_parallel_sharding_strategy
  int32_t world_size = 1;      ///< GPUs in the job
  int32_t micro_batches = 1;   ///< per optimizer step, per data-parallel rank
  int64_t global_tokens_per_step = 0;
  int64_t model_flops_per_gpu = 0;  ///< model FLOPs per GPU per step (forward + backward, no recompute), for MFU
  DType compute_dtype = DType::bf16;
  int32_t prefetch_depth = 0;       ///< units all-gathered ahead of the current one (the builder's setting)
  int64_t model_params = 0;         ///< the whole model's parameters (0: not known, e.g. an older schedule file)
  int64_t model_active_params = 0;  ///< parameters one token touches (top-k routed experts only)
  /// MoE: the schedule is the busiest expert-parallel rank's, whose experts receive this many times the mean
  /// token-expert pairs (1: balanced routing, every rank alike).
  double moe_routing_skew = 1.0;
  int32_t pipeline_stages = 1;  ///< pp: the schedule holds one rank of each stage
  int32_t virtual_stages = 1;   ///< model chunks per pipeline rank
  std::string
      pipeline_schedule;  ///< gpipe | 1f1b | interleaved_1f1b | zbv | dualpipev; empty without pipeline parallelism
  AttentionKernel attention_kernel = AttentionKernel::flash;
  /// Query heads per key/value head of the attention core: grouped-query attention's group size (Llama-3's 32 heads
  /// over 8 key/value heads: 4), 1 for multi-head attention and MLA. A measured attention table looks a call up by it.
  int32_t query_heads_per_kv_head = 1;
  Fp8GemmScaling fp8_gemm_scaling = Fp8GemmScaling::tensorwise;  ///< read only when compute_dtype is fp8
  HostDispatch host_dispatch = HostDispatch::eager;
  bool operator==(const ScheduleInfo&) const = default;
};

/// What a stream the builders make is for (its name is `to_string(role)`); a schedule read from a file may name its
/// streams freely, and only `compute` has a meaning to the simulator and the executor.
///   compute     the default stream: GEMMs, the optimizer, queue joins (Megatron-FSDP, FSDP2)
///   ag, rs      parameter all-gathers and gradient reduce-scatters (Megatron-FSDP's side streams; FSDP2's at
///               priority -1)
///   ag_copy_in  FSDP2's all-gather copy-in stream
///   outer_rs, outer_ag, outer_ar   the HSDP/HFSDP outer collectives
///   offload     activation offload and reload
///   tp_async    TP chunks overlapped with GEMMs over copy engines (async TP; Userbuffers' ring exchange): the
///               simulator gives their collectives no SMs
///   tp_overlap  TP collectives overlapped with GEMMs by Userbuffers' SM kernels (TE's pipeline and bulk overlaps):
///               the simulator gives each TE's 16 SMs
///   ep_fused    a MoE layer's dispatch and combine done by its expert GEMMs' own peer loads and stores (DistMoE,
///               ep_dispatch: fused): the simulator gives their collectives no SMs
enum class StreamRole : uint8_t {
  compute,
  ag,
  rs,
  ag_copy_in,
  outer_rs,
  outer_ag,
  outer_ar,
  offload,
  tp_async,
  tp_overlap,
  ep_fused
};

/// The name of the compute stream: the IR's one stream with a meaning of its own (CUDA's default stream in the
/// frameworks). Reports count the gaps on it as exposed communication; validation checks gradient reductions against
/// the backward computes on it.
inline constexpr std::string_view kComputeStream = "compute";

/// The whole IR.
struct Schedule {
  static constexpr int32_t kVersion = 1;
  int32_t version = kVersion;
  ScheduleInfo info;
  std::vector<UnitInfo> units;
  IdVector<GroupId, Group> groups;
  IdVector<StreamId, Stream> streams;
  IdVector<BufferId, Buffer> buffers;
  IdVector<OpId, Op> ops;
  bool operator==(const Schedule&) const = default;

  /// The stream or group with this name, or none.
  [[nodiscard]] StreamId stream_index(std::string_view name) const;
  [[nodiscard]] GroupId group_index(std::string_view name) const;
  /// The group playing `role`, or none.
  [[nodiscard]] GroupId group_index(GroupRole role) const;
  /// The stream named kComputeStream (GEMMs, the optimizer; the stream every other waits on at the step's end), or
  /// none.
  [[nodiscard]] StreamId compute_stream() const { return compute_stream(0); }
  /// The compute stream of one pipeline stage (named kComputeStream, or `stage<k>.compute` with several stages).
  [[nodiscard]] StreamId compute_stream(int32_t stage) const;
  /// The pipeline stage an op runs on (its stream's).
  [[nodiscard]] int32_t stage_of(const Op& op) const { return streams[op.stream].stage; }
  /// Sum of the persistent buffers' sizes.
  [[nodiscard]] int64_t persistent_bytes() const;
};

/// Renumbers the ops so that op `order[i]` becomes op i, its dependencies and peer renumbered with it (a stream runs
/// its ops in id order: a builder that appends ops out of program order puts them back with this). Throws
/// InternalError unless `order` lists every op once.
void reorder_ops(Schedule& schedule, const std::vector<OpId>& order);

/// The size nccl-tests prints for a collective: the total gathered/scattered buffer for AG/RS, the buffer for AR.
int64_t collective_size_bytes(const Op& op);
/// The kernels an op launches when its builder counted none (Op::kernels = 0): one per collective, copy, optimizer
/// call, send and receive; a compute op one per GEMM plus one for its memory-bound work; a sync none.
int32_t default_kernels(const Op& op);
/// True for all_gather, reduce_scatter, all_reduce, all_to_all.
bool is_collective(OpKind kind);
/// True for send and recv.
inline bool is_p2p(OpKind kind) {
  return kind == OpKind::send || kind == OpKind::recv;
}
/// The name a builder gives the stream of `role` on pipeline stage `stage` of `stages`: the role's name alone
/// without pipeline parallelism, `stage<k>.<role>` with it.
std::string stage_stream_name(std::string_view role, int32_t stage, int32_t stages);

std::string_view to_string(OpKind v);
std::string_view to_string(Phase v);
std::string_view to_string(BufferCategory v);
std::string_view to_string(ReduceOp v);
std::string_view to_string(GroupRole v);
std::string_view to_string(StreamRole v);
std::string_view to_string(AttentionKernel v);
std::string_view to_string(Fp8GemmScaling v);
std::string_view to_string(HostDispatch v);
std::optional<OpKind> parse_op_kind(std::string_view text);
std::optional<Phase> parse_phase(std::string_view text);
std::optional<BufferCategory> parse_buffer_category(std::string_view text);
std::optional<ReduceOp> parse_reduce_op(std::string_view text);
std::optional<GroupRole> parse_group_role(std::string_view text);

/// Every value of each enum, in declaration order (for reports and error messages).
const std::vector<OpKind>& all_op_kinds();
const std::vector<Phase>& all_phases();
const std::vector<BufferCategory>& all_buffer_categories();
const std::vector<ReduceOp>& all_reduce_ops();

}  // namespace fsdpsim
