#include "builders/builder_common.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "builders/stage_plan.h"
#include "common/error.h"
#include "common/int_math.h"
#include "common/limits.h"

namespace fsdpsim {
namespace {

// A unit's saved activation bytes under recompute setting `mode` (UnitCost keeps them per setting).
int64_t saved_under(const UnitCost& cost, Recompute mode) {
  return cost.saved_activation_bytes.at(static_cast<size_t>(mode));
}

// What re-running module `m` of a unit in its backward costs and re-creates.
const ModuleRecompute& module_rerun(const UnitCost& cost, RecomputeModule m) {
  return cost.module_recompute.at(static_cast<size_t>(m));
}

}  // namespace

BuildContext::BuildContext(const ModelSpec& model_spec, const FsdpConfig& cfg, const ParallelLayout& lay)
    : model(model_spec),
      config(cfg),
      layout(lay),
      units(derive_units(model_spec, lay.shape)),
      w(make_schedule_info(model_spec, cfg, lay, units)) {
  for (const auto& unit : units) w.unit(unit.name, unit.params());
  compute = w.stream(StreamRole::compute);
  w.reserve_ops(expected_ops());
}

BuildContext::BuildContext(const ModelSpec& model_spec, const FsdpConfig& cfg, const ParallelLayout& lay,
                           std::vector<UnitCost> stage_units)
    : model(model_spec),
      config(cfg),
      layout(lay),
      units(std::move(stage_units)),
      w(make_schedule_info(model_spec, cfg, lay, units)) {
  for (const auto& unit : units) w.unit(unit.name, unit.params());
  compute = w.stream(StreamRole::compute);
  w.reserve_ops(expected_ops());
}

int64_t BuildContext::expected_ops() const {
  // Per unit and micro-batch: forward, backward and a recompute with their TP/CP/EP collectives, two all-gathers, a
  // reduction with its accumulation and a few joins. An estimate: the ops vector then rarely grows, and growing moved
  // every op before (a step of 128 micro-batches has 186,000).
  int64_t per_micro_batch = 0;
  for (const UnitCost& unit : units) {
    per_micro_batch +=
        8 + 2 * static_cast<int64_t>(unit.fwd_collectives.size()) + static_cast<int64_t>(unit.bwd_collectives.size());
  }
  return per_micro_batch * std::max<int64_t>(1, layout.micro_batches) + 64;
}

StagePlan whole_model_plan(std::vector<UnitCost> units, int32_t micro_batches) {
  StagePlan plan;
  plan.chunks = {UnitRange{0, static_cast<int32_t>(units.size()) - 1}};
  plan.units = std::move(units);
  for (int32_t mb = 0; mb < micro_batches; ++mb) {
    plan.order.push_back({PipelineAction::Kind::forward, mb, 0});
    plan.order.push_back({PipelineAction::Kind::backward, mb, 0});
  }
  return plan;
}

void BuildContext::release_held_logits(Op& op) {
  if (!held_logits.valid()) return;
  op.frees.push_back(held_logits);
  held_logits = BufferId::none();
}

GroupId BuildContext::group(GroupRole role) {
  GroupId& known = role_groups_.at(static_cast<size_t>(role));
  if (!known.valid()) known = add_group(role);
  return known;
}

GroupId BuildContext::add_group(GroupRole role) {
  // Megatron's rank order is tp-cp-ep-dp (dense) and etp-ep-edp (experts); HSDP splits dp·cp into a contiguous
  // inner shard group and an outer replica group.
  const ParallelLayout& l = layout;
  const std::string name(to_string(role));
  switch (role) {
    case GroupRole::tp:
      return w.group(name, l.tp, 1);
    case GroupRole::cp:
      return w.group(name, l.cp, l.tp);
    case GroupRole::ep:
      return w.group(name, l.ep, l.etp);
    case GroupRole::etp:
      return w.group(name, l.etp, 1);
    case GroupRole::dp_shard:
      return w.group(name, l.dense_shard, l.tp);
    case GroupRole::dp_outer:
      return w.group(name, l.outer, l.tp * l.dense_shard);
    case GroupRole::edp:
      return w.group(name, l.expert_shard, l.ep * l.etp);
    case GroupRole::edp_outer:
      return w.group(name, l.outer, l.ep * l.etp * l.expert_shard);
    case GroupRole::pp:
      return w.group(name, l.pp, l.stage_ranks());
    case GroupRole::embd:
      return w.group(name, 2, (l.pp - 1) * l.stage_ranks());
  }
  FSDPSIM_CHECK(false, "unknown group role " + name);
}

int64_t adam_bytes_per_element(OptimizerImpl impl, int64_t weight, int64_t grad, int64_t exp_avg, int64_t exp_avg_sq) {
  if (impl == OptimizerImpl::fused) return 2 * weight + grad + 2 * exp_avg + 2 * exp_avg_sq;
  return 4 * weight + 2 * grad + 3 * exp_avg + 5 * exp_avg_sq + 6 * exp_avg_sq;
}

int32_t adam_kernels(OptimizerImpl impl, const std::vector<UnitCost>& units, int64_t elems) {
  int64_t tensors = 0;
  for (const UnitCost& u : units) {
    for (const UnitParam& p : u.param_tensors) tensors += p.copies;
  }
  const bool fused = impl == OptimizerImpl::fused;
  const int64_t tensors_per_launch = fused ? 36 : 48;  // four lists (fused) or three (foreach)
  const int64_t elems_per_launch = int64_t{320} * 65536;
  const int64_t per_call =
      std::max({int64_t{1}, ceil_div(tensors, tensors_per_launch), ceil_div(elems, elems_per_launch)});
  const int64_t calls = fused ? 1 : 8;
  return static_cast<int32_t>(std::min<int64_t>(per_call * calls, limits::kMaxKernelsPerOp));
}

std::string op_name(std::string_view what, std::string_view unit_name, int32_t micro_batch) {
  return op_name(what, {}, unit_name, micro_batch);
}

std::string op_name(std::string_view what, std::string_view what_suffix, std::string_view unit_name,
                    int32_t micro_batch) {
  std::array<char, 16> digits{};
  size_t digit_count = 0;
  if (micro_batch >= 0) {
    digit_count = static_cast<size_t>(std::to_chars(digits.data(), digits.data() + digits.size(), micro_batch).ptr -
                                      digits.data());
  }
  const size_t unit_part = unit_name.empty() ? 0 : 1 + unit_name.size();
  const size_t mb_part = micro_batch >= 0 ? 3 + digit_count : 0;
  std::string out(what.size() + what_suffix.size() + unit_part + mb_part, '.');
  char* at = out.data();
  const auto put = [&](std::string_view part) { at = std::copy(part.begin(), part.end(), at); };
  put(what);
  put(what_suffix);
  if (unit_part > 0) {
    ++at;  // the '.' already there
    put(unit_name);
  }
  if (mb_part > 0) {
    put(".mb");
    put(std::string_view(digits.data(), digit_count));
  }
  return out;
}

ScheduleInfo make_schedule_info(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                                const std::vector<UnitCost>& units) {
  ScheduleInfo info;
  info.model = model.name;
  info.implementation = std::string(to_string(config.implementation));
  info.strategy = std::string(to_string(config.data_parallel_sharding_strategy));
  info.world_size = layout.world_size;
  info.micro_batches = layout.micro_batches;
  info.global_tokens_per_step = layout.global_batch_size * config.seq_length;
  int64_t flops = 0;
  for (const auto& unit : units) flops += unit.model_flops;
  info.model_flops_per_gpu = flops * layout.micro_batches;
  info.compute_dtype = layout.shape.compute_dtype;
  info.attention_kernel = config.attention_kernel;
  // MLA gives every query head its own key and value (model_check.cpp); TP splits query and key/value heads alike.
  if (!model.mla.enabled() && model.num_kv_heads > 0) {
    info.query_heads_per_kv_head = model.num_attention_heads / model.num_kv_heads;
  }
  info.host_dispatch = resolve_host_dispatch(config);
  if (info.compute_dtype == DType::fp8 && config.fp8_recipe == Fp8Recipe::rowwise) {
    info.fp8_gemm_scaling = Fp8GemmScaling::rowwise;
  } else if (info.compute_dtype == DType::fp8 && config.fp8_recipe == Fp8Recipe::rowwise_with_gw_hp) {
    info.fp8_gemm_scaling = Fp8GemmScaling::rowwise_with_gw_hp;
  }
  const ParameterCount count = count_parameters(model);
  info.model_params = count.total;
  info.model_active_params = count.active_per_token;
  info.moe_routing_skew = layout.shape.moe_routing_skew;
  return info;
}

namespace {

// The op of a unit's TP/CP/EP collective `c` as it runs on the compute stream; `suffix` names a recompute's.
Op unit_collective_op(BuildContext& ctx, const UnitCollective& c, int32_t unit, Phase phase, int32_t micro_batch,
                      std::string_view suffix) {
  Op op;
  op.name = op_name(c.name, suffix, ctx.unit_cost(unit).name, micro_batch);
  op.kind = c.kind;
  op.phase = phase;
  op.unit = unit;
  op.micro_batch = micro_batch;
  op.stream = ctx.compute;
  op.group = ctx.group(c.group);
  op.dtype = DType::bf16;
  op.reduce_op = c.kind == OpKind::reduce_scatter || c.kind == OpKind::all_reduce ? ReduceOp::sum : ReduceOp::none;
  op.send_bytes = c.send_bytes;
  op.recv_bytes = c.recv_bytes;
  return op;
}

// DistMoE (ep_dispatch: fused; meta-pytorch/dist_moe docs/mxfp8_execution.md and bf16_execution.md): the first
// grouped GEMM's producer gathers its rows from the peers' symmetric HBM and the last one's epilogue scatters its
// outputs into theirs, forward and backward, so the exchange runs inside the expert GEMMs' own kernels: whole,
// with no SMs of its own, beside those GEMMs, which emit_fused_expert_gemms() then issues as their own op, and the
// layer's other work waits for it.
void emit_fused_ep_exchange(BuildContext& ctx, Op op, const UnitCollective& c, std::string_view suffix,
                            std::vector<OpId>& ids) {
  if (!ctx.ep_fused.valid()) ctx.ep_fused = ctx.w.stream(StreamRole::ep_fused);
  op.name = op_name(c.name, std::string(suffix) + ".fused", ctx.unit_cost(op.unit).name, op.micro_batch);
  op.stream = ctx.ep_fused;
  if (const OpId input = ctx.w.tail(ctx.compute); input.valid()) op.deps = {input};
  const OpId id = ctx.w.add(std::move(op));
  ids.push_back(id);
  ctx.overlapped_pending.push_back(id);
}

// Async TP (torch's micro-pipelined TP: torch/_inductor/fx_passes/micro_pipeline_tp.py and the
// _pipelined_all_gather_and_consume / _pipelined_produce_and_all2all loops of torch/distributed/_symmetric_memory)
// runs the forward graph's all-gather → matmul and matmul → reduce-scatter as tp chunks over copy engines: the
// all-gather's matmul starts on the local shard while the others are copied, so none of it waits; the
// reduce-scatter sends each chunk as the matmul produces the next, so only the last chunk's transfer is exposed.
// PyTorch's announcement ("[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism in PyTorch",
// dev-discuss 2024) reports up to ~20% forward but ~8% end-to-end speedup on Llama3 70B: the backward's
// collectives are not overlapped, and stay on the compute stream here.
//
// Transformer Engine's Userbuffers (tp_comm_overlap; TE transformer_engine/pytorch/module/base.py @ d0067d0d,
// initialize_ub's default methods) overlap a decoder layer's TE linears forward and backward: the all-gathers
// before qkv and fc1 and of the output gradient before proj's and fc2's data gradient by ring exchange over copy
// engines (whole, beside the GEMM, as async TP's); the reduce-scatters after proj and fc2 by its "pipeline"
// method, 4 splits on 16 SMs (the last split exposed); and in the backward the re-gather of qkv's and fc1's
// input and the reduce-scatter of their data gradient by its "bulk" method on 16 SMs, beside the data- and
// weight-gradient GEMMs. The embedding and the output layer are Megatron's own layers, not overlapped.
void emit_overlapped_tp(BuildContext& ctx, Op op, const UnitCollective& c, std::string_view suffix, bool async,
                        bool forward, std::vector<OpId>& ids) {
  const int32_t tp = ctx.layout.shape.tp;
  // Copy engines: async TP, and Userbuffers' ring exchanges (forward all-gathers, the backward's gradient gathers,
  // and with tp_comm_overlap_ring_exchange_rs the forward reduce-scatters, sent chunk by chunk as the GEMM makes
  // them, as async TP's are).
  const bool ring_exchange_rs = ctx.config.tp_comm_overlap_ring_exchange_rs && forward;
  const bool ring_exchange = async || (c.kind == OpKind::all_gather && (forward || c.name.ends_with("_grad"))) ||
                             (c.kind == OpKind::reduce_scatter && ring_exchange_rs);
  const bool split = c.kind == OpKind::reduce_scatter && forward;  // only its last split is exposed
  StreamId& side = ring_exchange ? ctx.tp_async : ctx.tp_overlap;
  if (!side.valid()) side = ctx.w.stream(ring_exchange ? StreamRole::tp_async : StreamRole::tp_overlap);
  Op rest = op;
  rest.name = op_name(c.name, std::string(suffix) + ".async", ctx.unit_cost(op.unit).name, op.micro_batch);
  rest.stream = side;
  if (!split) {
    // The whole collective beside the unit's compute, once the compute stream has produced its input.
    if (const OpId input = ctx.w.tail(ctx.compute); input.valid()) rest.deps = {input};
  } else {
    // The last chunk after the matmul (on the compute stream), the rest beside it: split by whole chunks of the
    // shard each rank receives, tp of them for async TP, Userbuffers' 4 for its pipeline method.
    constexpr int64_t kUserbuffersPipelineSplits = 4;
    const int64_t splits = async || ring_exchange_rs ? tp : kUserbuffersPipelineSplits;
    const int64_t exposed = c.recv_bytes / splits, hidden = c.recv_bytes - exposed;
    op.send_bytes = exposed * tp;
    op.recv_bytes = exposed;
    const OpId last_chunk = ctx.w.add(std::move(op));
    ids.push_back(last_chunk);
    if (hidden <= 0) return;
    rest.send_bytes = hidden * tp;
    rest.recv_bytes = hidden;
    rest.deps = {last_chunk};
  }
  const OpId id = ctx.w.add(std::move(rest));
  ids.push_back(id);
  ctx.overlapped_pending.push_back(id);
}

// One of a unit's collectives: whole on the compute stream, or beside the unit's compute as a fused EP exchange, an
// async TP or a Userbuffers one. `rerun`: a selective recompute's repeat of a forward collective.
void emit_unit_collective(BuildContext& ctx, const UnitCollective& c, int32_t unit, Phase phase, int32_t micro_batch,
                          bool rerun, std::vector<OpId>& ids) {
  const bool forward = phase == Phase::fwd || phase == Phase::recompute;
  const std::string_view suffix = phase == Phase::recompute || rerun ? ".recompute" : "";
  Op op = unit_collective_op(ctx, c, unit, phase, micro_batch, suffix);
  if (ctx.config.ep_dispatch == EpDispatch::fused && c.group == GroupRole::ep && c.kind == OpKind::all_to_all) {
    emit_fused_ep_exchange(ctx, std::move(op), c, suffix, ids);
    return;
  }
  const bool tp_gemm_collective = ctx.layout.shape.tp > 1 && c.group == GroupRole::tp &&
                                  (c.kind == OpKind::all_gather || c.kind == OpKind::reduce_scatter);
  const bool async = ctx.config.async_tp && forward && !rerun && tp_gemm_collective;
  const bool userbuffers = ctx.config.tp_comm_overlap && !rerun && tp_gemm_collective && ctx.is_layer(unit);
  if (!async && !userbuffers) {
    ids.push_back(ctx.w.add(std::move(op)));
    return;
  }
  emit_overlapped_tp(ctx, std::move(op), c, suffix, async, forward, ids);
}

}  // namespace

std::vector<OpId> emit_unit_collectives(BuildContext& ctx, int32_t unit, Phase phase, int32_t micro_batch) {
  const UnitCost& cost = ctx.unit_cost(unit);
  std::vector<OpId> ids;
  if (phase == Phase::bwd && ctx.config.recompute_granularity == Recompute::selective && ctx.is_layer(unit)) {
    // A recomputed MoE block dispatches and combines its tokens again before its backward (megatron moe_layer.py).
    for (const RecomputeModule m : applicable_modules(cost, ctx.config.recompute_modules)) {
      for (const std::string& name : module_rerun(cost, m).collectives) {
        for (const UnitCollective& c : cost.fwd_collectives) {
          if (c.name == name) emit_unit_collective(ctx, c, unit, phase, micro_batch, true, ids);
        }
      }
    }
  }
  const bool forward = phase == Phase::fwd || phase == Phase::recompute;
  for (const UnitCollective& c : forward ? cost.fwd_collectives : cost.bwd_collectives) {
    emit_unit_collective(ctx, c, unit, phase, micro_batch, false, ids);
  }
  return ids;
}

std::vector<Gemm> emit_fused_expert_gemms(BuildContext& ctx, int32_t unit, Phase phase, int32_t micro_batch,
                                          std::vector<Gemm> gemms, const std::vector<BufferId>& reads,
                                          const std::vector<OpId>& deps, int32_t& kernels) {
  if (ctx.config.ep_dispatch != EpDispatch::fused || !ctx.ep_fused.valid()) return gemms;
  std::vector<OpId> exchange, others;
  for (const OpId id : ctx.overlapped_pending) (ctx.w.op(id).stream == ctx.ep_fused ? exchange : others).push_back(id);
  // The routed experts' grouped GEMMs (model_units_gemms.cpp's "expert_*" blocks, forward or backward).
  const auto is_expert = [](const Gemm& g) { return g.name.starts_with("expert_"); };
  if (exchange.empty() || std::none_of(gemms.begin(), gemms.end(), is_expert)) return gemms;
  std::vector<Gemm> experts, rest;
  for (Gemm& g : gemms) (is_expert(g) ? experts : rest).push_back(std::move(g));
  const std::string& unit_name = ctx.unit_cost(unit).name;
  const auto count = static_cast<int32_t>(experts.size());
  ctx.w.add(ctx.unit_compute(std::string(to_string(phase)) + "_experts", unit, phase, micro_batch,
                             {.gemms = std::move(experts), .kernels = count}, reads, deps));
  ctx.add_sync(op_name("ep_fused_join", unit_name, micro_batch), phase, ctx.compute, std::move(exchange), {},
               micro_batch);
  ctx.overlapped_pending = std::move(others);
  kernels = std::max(1, kernels - count);
  return rest;
}

void join_overlapped(BuildContext& ctx, int32_t unit, Phase phase, int32_t micro_batch) {
  if (ctx.overlapped_pending.empty()) return;
  ctx.add_sync(op_name("overlap_join", ctx.unit_cost(unit).name, micro_batch), phase, ctx.compute,
               std::move(ctx.overlapped_pending), {}, micro_batch);
  ctx.overlapped_pending.clear();
}

// ---------------------------------------------------------------------------------------------------------------
Activations::Activations(BuildContext& ctx, int32_t micro_batch)
    : ctx_(ctx), mb_(micro_batch), slots_(ctx.units.size()) {}

int32_t Activations::chunk_start(int32_t layer_unit) const {
  const FsdpConfig& c = ctx_.config;
  if (c.recompute_granularity != Recompute::full || !ctx_.is_layer(layer_unit)) return -1;
  const int32_t layer = layer_unit - 1;
  if (c.recompute_method == RecomputeMethod::block) return layer < c.recompute_num_layers ? layer_unit : -1;
  return (layer / c.recompute_num_layers) * c.recompute_num_layers + 1;
}

bool Activations::chunk_end(int32_t layer_unit) const {
  if (chunk_start(layer_unit) < 0) return false;
  const FsdpConfig& c = ctx_.config;
  if (c.recompute_method == RecomputeMethod::block) return true;
  const int32_t layer = layer_unit - 1;
  return layer % c.recompute_num_layers == c.recompute_num_layers - 1 || layer_unit == ctx_.layers();
}

int64_t Activations::saved_bytes(int32_t unit) const {
  const UnitCost& cost = ctx_.unit_cost(unit);
  const auto mode = ctx_.config.recompute_granularity;
  if (!ctx_.is_layer(unit)) return saved_under(cost, Recompute::none);
  if (mode == Recompute::selective) return selective_saved_bytes(cost, ctx_.config.recompute_modules);
  if (mode != Recompute::full) return saved_under(cost, mode);
  const int32_t start = chunk_start(unit);
  if (start < 0) return saved_under(cost, Recompute::none);
  // Korthikanti et al. 2022 §4: a checkpointed chunk keeps only its input; the rest is recomputed in backward.
  return start == unit ? saved_under(cost, Recompute::full) : 0;
}

bool Activations::offloaded(int32_t unit) const {
  const FsdpConfig& c = ctx_.config;
  if (!c.cpu_offloading_activations || !ctx_.is_layer(unit)) return false;
  const int32_t count = c.cpu_offloading_num_layers == 0 ? ctx_.layers() - 1 : c.cpu_offloading_num_layers;
  return unit - 1 < count;
}

void Activations::add_transients(Op& op, const std::vector<int64_t>& tensors, std::string_view what,
                                 std::string_view unit_name) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    ctx_.add_scratch(op, op_name(what, std::to_string(i), unit_name, mb_), BufferCategory::workspace, tensors[i]);
  }
}

void Activations::on_forward(Op& fwd, int32_t unit) {
  const UnitCost& cost = ctx_.unit_cost(unit);
  // Room for the saved activations, the workspace, the transients and the weights' release, allocated once.
  const size_t transients = cost.fwd_transient_tensors.size();
  fwd.allocs.reserve(fwd.allocs.size() + 2 + transients);
  fwd.frees.reserve(fwd.frees.size() + 2 + transients);
  const int64_t saved = saved_bytes(unit);
  if (saved > 0) {
    slot_of(unit).saved = ctx_.add_output(fwd, op_name("act", cost.name, mb_), BufferCategory::activation, saved);
  }
  if (cost.fwd_workspace_bytes > 0) {
    ctx_.add_scratch(fwd, op_name("ws.fwd", cost.name, mb_), BufferCategory::workspace, cost.fwd_workspace_bytes);
  }
  add_transients(fwd, cost.fwd_transient_tensors, "tmp.fwd", cost.name);
  if (cost.held_output_bytes > 0) {
    // `pred = model(x)` rebinds only once the new logits exist, so the old ones die at the end of this forward.
    if (ctx_.held_logits.valid()) fwd.frees.push_back(ctx_.held_logits);
    ctx_.held_logits = ctx_.add_output(fwd, op_name("logits_held", cost.name, mb_), BufferCategory::activation,
                                       cost.held_output_bytes);
  }
}

void Activations::after_forward(int32_t unit, OpId fwd_op) {
  ActivationSlot& slot = slot_of(unit);
  if (!offloaded(unit) || !slot.saved.valid()) return;
  if (!ctx_.offload.valid()) ctx_.offload = ctx_.w.stream(StreamRole::offload);
  const UnitCost& cost = ctx_.unit_cost(unit);
  Op op = make_memory_op(OpKind::copy, op_name("offload_d2h", cost.name, mb_), Phase::fwd, ctx_.offload, 0);
  op.unit = unit;
  op.micro_batch = mb_;
  op.send_bytes = ctx_.w.buffer_at(slot.saved).size_bytes;
  op.deps = {fwd_op};
  op.reads = {slot.saved};
  op.frees = {slot.saved};
  slot.offload_op = ctx_.w.add(std::move(op));
}

void Activations::reload(int32_t unit, OpId after_op) {
  if (unit < 0 || unit >= static_cast<int32_t>(slots_.size())) return;
  ActivationSlot& slot = slot_of(unit);
  if (!slot.offload_op.valid()) return;
  const UnitCost& cost = ctx_.unit_cost(unit);
  const int64_t bytes = ctx_.w.buffer_at(slot.saved).size_bytes;
  const BufferId back = ctx_.w.buffer(op_name("act.reload", cost.name, mb_), BufferCategory::activation, bytes, false);
  Op op = make_memory_op(OpKind::copy, op_name("offload_h2d", cost.name, mb_), Phase::bwd, ctx_.offload, 0);
  op.unit = unit;
  op.micro_batch = mb_;
  op.recv_bytes = bytes;
  if (after_op.valid()) op.deps = {after_op};
  op.allocs = {back};
  op.writes = {back};
  slot.saved = back;
  slot.offload_op = OpId::none();
  slot.reload_op = ctx_.w.add(std::move(op));
}

void Activations::on_recompute(Op& op, int32_t unit) {
  const UnitCost& cost = ctx_.unit_cost(unit);
  if (cost.recomputed_activation_bytes <= 0) return;
  slot_of(unit).recomputed = ctx_.add_output(op, op_name("act.recomputed", cost.name, mb_), BufferCategory::activation,
                                             cost.recomputed_activation_bytes);
  if (slot_of(unit).saved.valid()) op.reads.push_back(slot_of(unit).saved);
}

void Activations::on_backward(Op& bwd, int32_t unit) {
  ActivationSlot& slot = slot_of(unit);
  if (slot.reload_op.valid()) bwd.deps.push_back(slot.reload_op);
  for (BufferId* b : {&slot.saved, &slot.recomputed}) {
    if (!b->valid()) continue;
    bwd.reads.push_back(*b);
    bwd.frees.push_back(*b);
    *b = BufferId::none();
  }
  const UnitCost& cost = ctx_.unit_cost(unit);
  if (ctx_.config.recompute_granularity == Recompute::selective && ctx_.is_layer(unit)) {
    // Megatron's selective recompute: the checkpointed modules re-run their forward at the start of the layer's
    // backward, and what they re-create lives until the layer's backward ends.
    int64_t recreated = 0;
    for (const RecomputeModule m : applicable_modules(cost, ctx_.config.recompute_modules)) {
      const ModuleRecompute& r = module_rerun(cost, m);
      bwd.gemms.insert(bwd.gemms.begin(), r.gemms.begin(), r.gemms.end());
      bwd.bytes_touched += r.bytes_touched;
      bwd.kernels += r.kernels;
      if (m != RecomputeModule::core_attn) recreated += r.freed_bytes;
    }
    if (recreated > 0) {
      ctx_.add_scratch(bwd, op_name("act.module_recomputed", cost.name, mb_), BufferCategory::activation, recreated);
    }
  }
  if (ctx_.config.recompute_granularity == Recompute::selective_op && ctx_.is_layer(unit)) {
    // torchtitan's op-level SAC re-runs the unsaved matmuls and every elementwise op first, then the backward; the
    // re-created tensors live until the block's backward ends.
    bwd.gemms.insert(bwd.gemms.begin(), cost.op_sac_recompute_gemms.begin(), cost.op_sac_recompute_gemms.end());
    bwd.bytes_touched += cost.op_sac_recompute_bytes;
    bwd.class_bytes += cost.op_sac_recompute_class_bytes;
    bwd.kernels += cost.op_sac_recompute_kernels;
    const int64_t recreated = saved_under(cost, Recompute::none) - saved_under(cost, Recompute::selective_op);
    if (recreated > 0) {
      ctx_.add_scratch(bwd, op_name("act.sac_recomputed", cost.name, mb_), BufferCategory::activation, recreated);
    }
  }
  if (cost.bwd_workspace_bytes > 0) {
    ctx_.add_scratch(bwd, op_name("ws.bwd", cost.name, mb_), BufferCategory::workspace, cost.bwd_workspace_bytes);
  }
  add_transients(bwd, cost.bwd_transient_tensors, "tmp.bwd", cost.name);
}

}  // namespace fsdpsim
