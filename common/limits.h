#pragma once
/// Limits on inputs. fsdpsim refuses up front what would need absurd time or memory, or would overflow the 64-bit
/// integers that hold bytes, FLOPs and nanoseconds, with a ConfigError that names the key, says the value is
/// "beyond what fsdpsim models" and gives the limit. Each limit is far above any real job (the largest published
/// models and clusters are quoted next to it); docs/hardening.md ("Limits") lists them with the same reasons.

#include <cstdint>

namespace fsdpsim::limits {

// ---- files ---------------------------------------------------------------------------------------------------------
/// Any input file (YAML, JSON, nccl-tests log). The largest real input, a Llama-3-405B schedule with 16 micro-batches,
/// is 11.3 MiB; yaml-cpp holds about 60 bytes of memory per byte of YAML text, so 64 MiB already needs ~4 GiB.
inline constexpr int64_t kMaxInputFileBytes = int64_t{64} << 20;
/// A CUDA memory snapshot (a pickle): its allocation history can run to hundreds of MiB; parsed, it takes several
/// times its size.
inline constexpr int64_t kMaxSnapshotBytes = int64_t{512} << 20;
/// A PyTorch profiler trace (Chrome-trace JSON): a few steps of a large job run to a few hundred MiB; parsed JSON
/// takes about ten times its size.
inline constexpr int64_t kMaxTraceBytes = int64_t{256} << 20;

// ---- model ---------------------------------------------------------------------------------------------------------
/// Decoder layers (Llama-3-405B has 126, GPT-3 96).
inline constexpr int64_t kMaxLayers = 16384;
/// hidden_size (Llama-3-405B: 16,384).
inline constexpr int64_t kMaxHiddenSize = int64_t{1} << 20;
/// ffn_hidden_size and the expert FFN widths (Llama-3-405B: 53,248).
inline constexpr int64_t kMaxFfnHiddenSize = int64_t{1} << 22;
/// Attention heads and KV heads (Llama-3-405B: 128).
inline constexpr int64_t kMaxHeads = int64_t{1} << 16;
/// head_dim and the MLA head widths (real: 64 to 256).
inline constexpr int64_t kMaxHeadDim = int64_t{1} << 16;
/// MLA's q_lora_rank and kv_lora_rank (DeepSeek-V3: 1,536 and 512).
inline constexpr int64_t kMaxLoraRank = int64_t{1} << 20;
/// vocab_size (Gemma: 262,144).
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 24;
/// max_position_embeddings, and seq_length below (GPT-3: 2,048; long-context models: 10^6).
inline constexpr int64_t kMaxSequence = int64_t{1} << 24;
/// Routed experts per MoE layer, and shared experts (DeepSeek-V3: 256 routed).
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;
/// Parameters of the whole model, about 1.1e15 (the largest published models have ~2e12). At 16 bytes per parameter
/// (BF16 weights and grads, FP32 main weights and Adam) their state stays far inside a signed 64-bit byte count.
inline constexpr int64_t kMaxParameters = int64_t{1} << 50;

// ---- job -----------------------------------------------------------------------------------------------------------
/// Nodes of a topology in a job (--set nodes), and GPUs in the job (the largest clusters have ~10^5).
inline constexpr int64_t kMaxNodes = int64_t{1} << 20;
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 22;
/// Sequences per micro-batch (real: 1 to 64).
inline constexpr int64_t kMaxMicroBatchSize = int64_t{1} << 20;
/// Gradient-accumulation steps per optimizer step (real: up to a few thousand).
inline constexpr int64_t kMaxMicroBatches = 100000;
/// Tokens per optimizer step over the job, global_batch_size × seq_length (Llama-3-405B trained at 16M).
inline constexpr int64_t kMaxTokensPerStep = int64_t{1} << 50;
/// Work of one GPU in one step, forward + backward + recompute: 2^61 ≈ 2.3e18 FLOPs, ~39 minutes of an H100 at its
/// dense BF16 peak (Llama-3-405B on 512 GPUs, 16M tokens per step, is ~8e16). int64 FLOP counts overflow at 9.2e18;
/// the estimate this is compared with is within a factor of two of the builder's count.
inline constexpr int64_t kMaxStepFlopsPerGpu = int64_t{1} << 61;
/// Work of a whole schedule, one rank of every pipeline stage together, as the builder counts it (the model's FLOPs
/// per data-parallel rank, before its share per stage): 2^62 ≈ 4.6e18, half of what int64 holds. Llama-3.1-405B at
/// PP 16 with 384 micro-batches of 8,192 tokens (Megatron-Bridge's GB200 recipe) is ~2e18.
inline constexpr int64_t kMaxScheduleFlops = int64_t{1} << 62;

// ---- schedule IR ---------------------------------------------------------------------------------------------------
/// Ops of one step (built, or read with --schedule). Llama-3-405B with 16 micro-batches has 36,565; a million ops take
/// about 2 GiB to build and ~0.3 s to simulate per step.
inline constexpr int64_t kMaxScheduleOps = int64_t{1} << 20;
/// Buffers of one step (each op allocates at most a few).
inline constexpr int64_t kMaxScheduleBuffers = int64_t{1} << 20;
/// Pipeline-parallel stages (the pp group size): a schedule holds one rank of each stage.
inline constexpr int64_t kMaxPipelineStages = 64;
/// Streams: the builders use at most 8 per pipeline stage; validation keeps a vector clock of this many entries per op.
inline constexpr int64_t kMaxStreams = 8 * kMaxPipelineStages;
/// Process groups: the builders use at most 9 (tp, cp, ep, etp, dp_shard, dp_outer, edp, edp_outer, pp).
inline constexpr int64_t kMaxGroups = 64;
/// Bytes: one buffer or one op's byte count (64 PiB: the FP32 state of a kMaxParameters model on one GPU fits), and
/// the sum over a step of the buffers' sizes and of the ops' byte counts (2 EiB), so that the simulator's 64-bit sums
/// cannot overflow.
inline constexpr int64_t kMaxBytes = int64_t{1} << 56;
inline constexpr int64_t kMaxStepBytes = int64_t{1} << 61;

/// The ops of one simulated step, added end to end: 2^55 ns, about 417 days (2^56 ns is where a single op's time
/// saturates; 100 steps of this still fit in int64 nanoseconds).
inline constexpr int64_t kMaxStepTimeNs = int64_t{1} << 55;
/// GEMMs of one op (the builders emit at most about 20 per fused layer op).
inline constexpr int64_t kMaxGemmsPerOp = 64;
/// Kernels one op launches (Op::kernels): an optimizer step over 2^50 parameters in foreach chunks stays far below.
inline constexpr int64_t kMaxKernelsPerOp = int64_t{1} << 24;

// ---- hardware (topology and GPU profile) ----------------------------------------------------------------------------
/// A bandwidth between 1 MB/s and 1 PB/s (NVLink 5: 900 GB/s per direction; HBM3e: 8 TB/s), a compute rate between
/// 1 GFLOPS and 10 EFLOPS (B200: 2.25 PFLOPS dense BF16), a latency of at most 1 s (real ones are microseconds). A
/// missing unit ("450" for "450GB/s") is already an error; these catch a wrong one ("450B/s").
inline constexpr double kMinBandwidthBytesPerS = 1e6;
inline constexpr double kMaxBandwidthBytesPerS = 1e15;
inline constexpr double kMinFlopsPerS = 1e9;
inline constexpr double kMaxFlopsPerS = 1e19;
inline constexpr int64_t kMaxLatencyNs = 1'000'000'000;

// ---- planning ------------------------------------------------------------------------------------------------------
/// Points of one sweep: 10,000 take 44 s on 2 cores, a million about 75 minutes.
inline constexpr int64_t kMaxGridPoints = 1000000;

}  // namespace fsdpsim::limits
