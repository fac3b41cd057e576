// The PyTorch FSDP2 builder (torch.distributed.fsdp.fully_shard, docs/architecture.md §4.7): one
// FSDPParamGroup per fully_shard call — torchtitan's wrapping (embedding; each decoder layer; [final norm, output]
// kept unsharded after forward; the root left without parameters) or the plain two-level one (each layer, then the
// root with embedding, final norm and output); copy-in, all-gather and copy-out per unshard; one-unit implicit
// forward prefetch and one-unit backward prefetch; reduce-scatter per backward with one reduce-scatter input in
// flight; HSDP all-reduce.
#include "builders/build_fsdp2.h"

#include <algorithm>
#include <map>
#include <utility>

#include "builders/builder_common.h"
#include "builders/stage_plan.h"
#include "common/error.h"
#include "common/int_math.h"

namespace fsdpsim {
namespace {

// One shard group's slice of an FSDP2 group (dense over dp_shard, experts over edp).
struct Part {
  bool expert = false;
  int32_t shard = 1;
  int64_t padded_elems = 0;  // per-parameter dim-0 padding to the shard group (_get_dim0_padded_size)
  BufferId flat;             // the flat all-gather output
  BufferId unsharded;        // the per-parameter unsharded copy (copy-out)
  OpId ag_op;
  BufferId grad_shard;  // the sharded gradients (.grad of the sharded parameters)
  bool grad_shard_live = false;
};

// The id of a param group: its position in Fsdp2Builder::groups_, the order of the fully_shard calls.
struct ParamGroupTag;
using ParamGroupId = Id<ParamGroupTag>;

struct ParamGroup {
  std::string name;
  std::vector<int32_t> units;  // model units it covers, ascending (two-level root: embedding and output)
  bool reshard_after_forward = true;
  std::vector<Part> parts;
  OpId copy_out_op;             // the compute stream waits on the all-gather once, at copy-out
  bool unsharded = false;       // unsharded params are alive
  bool issued = false;          // an unshard (copy-in + AG) was issued and not yet copied out
  std::vector<BufferId> grads;  // this micro-batch's unsharded gradients
  BufferId accumulated;         // gradient_sync: last_micro_batch: the unsharded sum of earlier micro-batches
};

class Fsdp2Builder {
 public:
  Fsdp2Builder(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
               std::vector<UnitCost> units)
      : ctx_(model, config, layout, std::move(units)), range_{0, static_cast<int32_t>(ctx_.units.size()) - 1} {}

  Schedule build(const StagePlan& plan, std::vector<ActionOps>* actions) {
    setup();
    run_actions(
        ctx_, plan, range_, [&](int32_t mb, Activations& acts) { forward(mb, acts); },
        [&](int32_t mb, Activations& acts) { backward(mb, acts); },
        [&](int32_t mb, Activations& acts) { backward_input(mb, acts); },
        [&](int32_t mb, Activations& /*acts*/) { backward_weight(mb); }, actions);
    optimizer_step();
    return ctx_.w.finish();
  }

 private:
  [[nodiscard]] int64_t weight_bytes() const { return dtype_bytes(ctx_.config.param_dtype); }
  [[nodiscard]] int64_t shard_elem_bytes() const { return main_param_bytes(ctx_.config) > 0 ? 4 : 2; }
  [[nodiscard]] int64_t reduce_bytes() const { return dtype_bytes(grad_comm_dtype(ctx_.config)); }
  [[nodiscard]] ParamGroupId group_of_unit(int32_t unit) const { return unit_group_.at(static_cast<size_t>(unit)); }
  /// The unsharded parameters of param group `g`, which its units' compute ops read.
  [[nodiscard]] std::vector<BufferId> unsharded_params(ParamGroupId g) const;

  void setup();
  void add_group(std::string name, std::vector<int32_t> units, bool reshard_after_forward);
  void unshard(ParamGroupId g, Phase phase, int32_t mb, bool after_compute = false);
  void copy_out(ParamGroupId g, Phase phase, int32_t mb, bool free_flat_now);
  void forward(int32_t mb, Activations& acts);
  void backward(int32_t mb, Activations& acts);
  /// The input-gradient half of a split backward (zbv, dualpipev): everything backward does up to the data
  /// gradients, which the previous stage waits for.
  void backward_input(int32_t mb, Activations& acts);
  /// The weight-gradient half: the weight-gradient GEMMs, the unsharded gradients and what follows them.
  void backward_weight(int32_t mb);
  /// Recomputes `u`'s recompute chunk when `u` ends it, then unshards `u`'s group and prefetches the next ones, as
  /// the pre-backward hooks do.
  void pre_backward(int32_t u, int32_t mb, Activations& acts);
  /// After a unit's backward (or weight-gradient half): reshards the group on its last unit when the step allows, and
  /// starts its gradient reduction.
  void finish_unit_backward(int32_t u, int32_t mb, Op& op);
  /// Autograd's unsharded gradients of unit `u`, written by `op`.
  void add_unsharded_grads(int32_t u, int32_t mb, Op& op);
  void join_reductions(int32_t mb);
  /// Composer's training metrics (train_metric_cross_entropies) once the micro-batch's backward has returned.
  void train_metrics(int32_t mb);
  /// After a group's backward: reduce-scatters its gradients (with HSDP's all-reduce) into the sharded gradients, or
  /// under gradient_sync: last_micro_batch before the last micro-batch, only sums them.
  void post_backward(ParamGroupId g, int32_t mb, Phase phase = Phase::bwd);
  /// gradient_sync: last_micro_batch: sums the group's unsharded gradients over the micro-batches instead.
  void accumulate_unreduced(ParamGroup& pg, int64_t elems, int32_t mb, Phase phase);
  /// The copy of the group's gradients (and their sum so far) into a new reduce-scatter input: the op and the input.
  std::pair<OpId, BufferId> copy_into_rs_input(ParamGroup& pg, int64_t elems, int32_t mb, Phase phase);
  /// One part's reduce-scatter of `input` after `copy_in`, its HSDP all-reduce and its accumulation; returns the
  /// reduce-scatter.
  OpId reduce_part(const ParamGroup& pg, Part& part, int32_t mb, Phase phase, OpId copy_in, BufferId input);
  /// The reduced shard `reduced` cast and added to the part's sharded gradients after `after`.
  void accumulate_grad_shard(const ParamGroup& pg, Part& part, const std::string& name, int32_t mb, Phase phase,
                             BufferId reduced, OpId after);
  void optimizer_step();
  /// Adds an all-gather or reduce-scatter of the data-parallel mesh behind the previous one: FSDP2 issues both on
  /// the same process group, whose collectives ProcessGroupNCCL runs in host order on one internal stream.
  OpId add_on_communicator(Op op);

  BuildContext ctx_;
  UnitRange range_;  ///< the model chunk the current action walks (each is its own fully_shard root under PP)
  IdVector<ParamGroupId, ParamGroup> groups_;
  std::vector<ParamGroupId> unit_group_;  // model unit → its FSDP param group
  StreamId copy_in_stream_, ag_stream_, rs_stream_, ar_stream_;
  BufferId shard_params_, optimizer_state_;
  int64_t shard_elems_ = 0;
  OpId last_copy_out_;          // copy-in waits on the previous copy-out (all_gather_state)
  BufferId pending_flat_free_;  // forward: the previous group's flat output, freed at the next copy-out
  OpId rs_in_flight_op_;        // the last reduce-scatter's final op
  BufferId rs_in_flight_input_;
  /// Split backwards: per (micro-batch, unit), what the input-gradient half kept for the weight-gradient half.
  std::map<std::pair<int32_t, int32_t>, BufferId> kept_for_weights_;
};

// A split backward's weight gradients dW = dYᵀ·X need each linear's input X and output gradient dY from the
// input-gradient half until they run: the wgrad GEMM [n, k] reduces over m, so dY is m×n and X is m×k elements
// (model_units_gemms.cpp: Gemm{name.wgrad, n, k, m}), held in the activation dtype.
bool is_weight_gradient(const Gemm& g) {
  return g.name.ends_with(".wgrad");
}
// The weight-gradient GEMMs of a backward (`weight` true), or the others.
std::vector<Gemm> backward_half(const std::vector<Gemm>& gemms, bool weight) {
  std::vector<Gemm> out;
  for (const Gemm& g : gemms) {
    if (is_weight_gradient(g) == weight) out.push_back(g);
  }
  return out;
}
int64_t weight_gradient_inputs_bytes(const std::vector<Gemm>& gemms, DType activation_dtype) {
  int64_t elems = 0;
  for (const Gemm& g : backward_half(gemms, true)) elems += (g.m + g.n) * g.k * g.batch;
  return elems * dtype_bytes(activation_dtype);
}

std::vector<BufferId> Fsdp2Builder::unsharded_params(ParamGroupId g) const {
  std::vector<BufferId> reads;
  for (const Part& part : groups_[g].parts) reads.push_back(part.unsharded);
  return reads;
}

void Fsdp2Builder::add_group(std::string name, std::vector<int32_t> units, bool reshard_after_forward) {
  const ParallelLayout& l = ctx_.layout;
  ParamGroup pg;
  pg.name = std::move(name);
  pg.units = std::move(units);
  pg.reshard_after_forward = reshard_after_forward;
  int64_t dense = 0, expert = 0, dense_row = 1, expert_row = 1;
  for (const int32_t u : pg.units) {
    const UnitCost& c = ctx_.unit_cost(u);
    dense += c.dense_params;
    expert += c.expert_params;
    dense_row = std::max(dense_row, c.dense_row_elems);
    expert_row = std::max(expert_row, c.expert_row_elems);
    unit_group_.at(static_cast<size_t>(u)) = groups_.next_id();
  }
  for (const bool is_expert : {false, true}) {
    const int64_t elems = is_expert ? expert : dense;
    if (elems == 0) continue;
    Part part;
    part.expert = is_expert;
    part.shard = is_expert ? l.expert_shard : l.dense_shard;
    // Each parameter is padded to ceil(dim0 / N)·N rows; the unit's largest row stands in for the rows.
    const int64_t row = is_expert ? expert_row : dense_row;
    part.padded_elems = round_up(elems, part.shard * row);
    shard_elems_ += part.padded_elems / part.shard;
    pg.parts.push_back(part);
  }
  groups_.push_back(std::move(pg));
}

void Fsdp2Builder::setup() {
  const ParallelLayout& l = ctx_.layout;
  // FSDPCommContext.lazy_init: copy-in, all-gather and reduce-scatter streams at high priority, the HSDP
  // all-reduce stream at normal priority.
  ctx_.w.info().prefetch_depth = ctx_.config.forward_prefetch;
  copy_in_stream_ = ctx_.w.stream(StreamRole::ag_copy_in, -1);
  ag_stream_ = ctx_.w.stream(StreamRole::ag, -1);
  rs_stream_ = ctx_.w.stream(StreamRole::rs, -1);
  if (l.outer > 1) ar_stream_ = ctx_.w.stream(StreamRole::outer_ar);
  const int32_t output = ctx_.layers() + 1;
  const bool reshard = ctx_.config.reshard_after_forward;
  unit_group_.assign(ctx_.units.size(), ParamGroupId(0));
  if (ctx_.config.fsdp2_wrap == Fsdp2Wrap::torchtitan) {
    // torchtitan/distributed/fsdp.py @ b5bcd76c: the embedding alone (resharded as the blocks are), [norm, lm_head]
    // not resharded after forward ("FSDP would prefetch them immediately"), each block, then the parameter-less root.
    add_group("embedding", {0}, reshard);
    for (int32_t layer = 1; layer <= ctx_.layers(); ++layer) add_group(ctx_.unit_cost(layer).name, {layer}, reshard);
    add_group("output", {output}, false);
  } else {
    // The root's parameters stay unsharded from forward to backward (FSDPState._lazy_init).
    add_group("root", {0, output}, false);
    for (int32_t layer = 1; layer <= ctx_.layers(); ++layer) add_group(ctx_.unit_cost(layer).name, {layer}, reshard);
  }
  // Memory (docs/architecture.md §4.7): sharded parameters in their original dtype (FP32 master copy), sharded FP32
  // gradients, Adam. The gradient shards are not held through the step: optimizer.zero_grad() (set_to_none, its
  // default) frees them after the optimizer step, and each group's foreach_reduce makes its shards again at its
  // first reduce-scatter of the step, so they grow over backward (seen in real FSDP2 memory snapshots,
  // bench/results/2026-11-26-h100-frameworks.md).
  shard_params_ = ctx_.w.buffer("param_shard", BufferCategory::main_weight, shard_elem_bytes() * shard_elems_, true);
  for (ParamGroup& pg : groups_) {
    for (Part& part : pg.parts) {
      part.grad_shard =
          ctx_.w.buffer("grad_shard." + pg.name + (part.expert ? ".experts" : ""), BufferCategory::grad_shard,
                        shard_elem_bytes() * (part.padded_elems / part.shard), false);
    }
  }
  const int64_t adam = dtype_bytes(ctx_.config.exp_avg_dtype) + dtype_bytes(ctx_.config.exp_avg_sq_dtype);
  optimizer_state_ = ctx_.w.buffer("optimizer_state", BufferCategory::optimizer_state, adam * shard_elems_, true);
}

void Fsdp2Builder::unshard(ParamGroupId g, Phase phase, int32_t mb, bool after_compute) {
  // foreach_all_gather: copy-in (cast the shard into its slot of the flat output) on the copy-in stream, then
  // all_gather_into_tensor on the AG stream. The AG streams wait only on the previous copy-out, and at the root's
  // pre-forward on everything issued to the compute stream so far (FSDPState._root_pre_forward).
  ParamGroup& pg = groups_[g];
  if (pg.unsharded || pg.issued) return;
  const std::string phase_name = phase == Phase::fwd ? "" : "." + std::string(to_string(phase));
  for (Part& part : pg.parts) {
    const std::string name = pg.name + (part.expert ? ".experts" : "");
    const int64_t bytes = part.padded_elems * weight_bytes();
    part.flat = ctx_.w.buffer(op_name("ag_out", phase_name, name, mb), BufferCategory::comm_staging, bytes, false);
    // With a different all-gather dtype (MixedPrecisionPolicy's param_dtype, or float8's fsdp_pre_all_gather) the
    // copy-in is two passes (_fsdp_collectives.py, _get_param_all_gather_inputs then all_gather_copy_in): the shard
    // is cast into a temporary of the shard's size in the gathered dtype, then copied into its slot of the flat
    // output; in the shard's own dtype it is copied once.
    const int64_t shard_elems = part.padded_elems / part.shard;
    const bool cast = shard_elem_bytes() != weight_bytes();
    Op copy_in = make_memory_op(OpKind::copy, op_name("ag_copy_in", phase_name, name, mb), phase, copy_in_stream_,
                                shard_elems * (shard_elem_bytes() + weight_bytes() + (cast ? 2 * weight_bytes() : 0)));
    copy_in.unit = pg.units.front();
    copy_in.micro_batch = mb;
    if (last_copy_out_.valid()) copy_in.deps = {last_copy_out_};
    const bool wait_compute = after_compute || !last_copy_out_.valid();
    if (wait_compute && ctx_.w.tail(ctx_.compute).valid()) copy_in.deps.push_back(ctx_.w.tail(ctx_.compute));
    copy_in.reads = {shard_params_};
    copy_in.allocs = {part.flat};
    copy_in.writes = {part.flat};
    if (cast) {
      ctx_.add_scratch(copy_in, op_name("ag_cast", phase_name, name, mb), BufferCategory::comm_staging,
                       shard_elems * weight_bytes());
    }
    const OpId copy_in_id = ctx_.w.add(std::move(copy_in));
    Op ag = make_collective({.kind = OpKind::all_gather,
                             .name = op_name("ag", phase_name, name, mb),
                             .phase = phase,
                             .stream = ag_stream_,
                             .group = ctx_.group(part.expert ? GroupRole::edp : GroupRole::dp_shard),
                             .group_size = part.shard,
                             .payload_bytes = bytes / part.shard,
                             .dtype = ctx_.config.param_dtype,
                             .reduce_op = ReduceOp::none});
    ag.unit = pg.units.front();
    ag.micro_batch = mb;
    ag.deps = {copy_in_id};
    ag.reads = {part.flat};
    ag.writes = {part.flat};
    part.ag_op = add_on_communicator(std::move(ag));
  }
  pg.issued = true;
}

void Fsdp2Builder::copy_out(ParamGroupId g, Phase phase, int32_t mb, bool free_flat_now) {
  // wait_for_unshard: the compute stream waits on the AG, then split_with_sizes_copy into per-parameter tensors.
  ParamGroup& pg = groups_[g];
  if (pg.unsharded) return;
  FSDPSIM_CHECK(pg.issued, "copy-out before unshard of " + pg.name);
  const std::string phase_name = phase == Phase::fwd ? "" : "." + std::string(to_string(phase));
  for (Part& part : pg.parts) {
    const std::string name = pg.name + (part.expert ? ".experts" : "");
    const int64_t bytes = part.padded_elems * weight_bytes();
    part.unsharded =
        ctx_.w.buffer(op_name("params", phase_name, name, mb), BufferCategory::gathered_param, bytes, false);
    Op op = make_memory_op(OpKind::copy, op_name("ag_copy_out", phase_name, name, mb), phase, ctx_.compute, 2 * bytes);
    op.unit = pg.units.front();
    op.micro_batch = mb;
    op.deps = {part.ag_op};
    op.reads = {part.flat};
    op.allocs = {part.unsharded};
    op.writes = {part.unsharded};
    if (free_flat_now) {
      op.frees.push_back(part.flat);  // backward: the AG result is freed right after its copy-out
    } else {
      // forward: all_gather_state keeps this output until the next group's copy-out.
      if (pending_flat_free_.valid()) op.frees.push_back(pending_flat_free_);
      pending_flat_free_ = part.flat;
    }
    last_copy_out_ = pg.copy_out_op = ctx_.w.add(std::move(op));
  }
  pg.unsharded = true;
  pg.issued = false;
}

void Fsdp2Builder::forward(int32_t mb, Activations& acts) {
  const int32_t units = range_.last + 1;
  const int32_t ahead = std::max(1, ctx_.config.forward_prefetch);
  unshard(group_of_unit(range_.first), Phase::fwd, mb, true);  // the root's pre-forward
  for (int32_t u = range_.first; u < units; ++u) {
    const ParamGroupId g = group_of_unit(u);
    unshard(g, Phase::fwd, mb);
    copy_out(g, Phase::fwd, mb, false);
    // Implicit prefetch: the CPU reaches the next pre-forwards while the GPU computes this unit (explicit
    // set_modules_to_forward_prefetch issues `forward_prefetch` groups ahead).
    for (int32_t next = u + 1; next <= std::min(units - 1, u + ahead) && ctx_.config.forward_prefetch > 0; ++next) {
      if (group_of_unit(next) != g) unshard(group_of_unit(next), Phase::fwd, mb);
    }
    emit_unit_collectives(ctx_, u, Phase::fwd, mb);
    const UnitCost& cost = ctx_.unit_cost(u);
    ParamGroup& pg = groups_[g];
    Op fwd = ctx_.unit_pass("fwd", u, Phase::fwd, mb, unit_work(cost, Phase::fwd), unsharded_params(g), {});
    acts.on_forward(fwd, u);
    const bool grads_now = cost.weight_grads_in_forward && cost.params() > 0;
    if (grads_now) add_unsharded_grads(u, mb, fwd);
    // reshard_after_forward: free the group's unsharded parameters after its last unit's forward. torchtitan's
    // chunked loss reshards the [norm, lm_head] group after its loop (ChunkedLossWrapper: lm_head.reshard()).
    if ((pg.reshard_after_forward || grads_now) && u == pg.units.back()) {
      for (const Part& part : pg.parts) fwd.frees.push_back(part.unsharded);
      pg.unsharded = false;
    }
    acts.after_forward(u, ctx_.w.add(std::move(fwd)));
    // The last chunk re-enables gradient sync: the projection's gradient is reduce-scattered inside the forward.
    if (grads_now && u == pg.units.front()) post_backward(g, mb, Phase::fwd);
    join_overlapped(ctx_, u, Phase::fwd, mb);
  }
  // The root's post-forward frees the last flat all-gather output.
  if (pending_flat_free_.valid()) {
    ctx_.add_sync(op_name("ag_out_release", "", mb), Phase::fwd, ctx_.compute, {}, {pending_flat_free_}, mb);
    pending_flat_free_ = {};
  }
}

void Fsdp2Builder::pre_backward(int32_t u, int32_t mb, Activations& acts) {
  const ParamGroupId g = group_of_unit(u);
  if (acts.chunk_end(u)) {
    for (int32_t r = acts.chunk_start(u); r <= u; ++r) {
      unshard(group_of_unit(r), Phase::recompute, mb);
      copy_out(group_of_unit(r), Phase::recompute, mb, true);
      Op op = ctx_.unit_compute("recompute", r, Phase::recompute, mb, unit_work(ctx_.unit_cost(r), Phase::recompute),
                                unsharded_params(group_of_unit(r)));
      acts.on_recompute(op, r);
      ctx_.w.add(std::move(op));
    }
  }
  // Pre-backward: unshard this group, then prefetch the next `backward_prefetch` groups in reverse order.
  unshard(g, Phase::bwd, mb);
  copy_out(g, Phase::bwd, mb, true);
  for (int32_t k = 1; k <= ctx_.config.backward_prefetch && u - k >= range_.first; ++k) {
    if (group_of_unit(u - k) != g) unshard(group_of_unit(u - k), Phase::bwd, mb);
  }
  acts.reload(u, ctx_.w.tail(ctx_.compute));
  if (u > range_.first) acts.reload(u - 1, ctx_.w.tail(ctx_.compute));
  emit_unit_collectives(ctx_, u, Phase::bwd, mb);
}

void Fsdp2Builder::finish_unit_backward(int32_t u, int32_t mb, Op& op) {
  const ParamGroupId g = group_of_unit(u);
  const UnitCost& cost = ctx_.unit_cost(u);
  ParamGroup& pg = groups_[g];
  // Autograd writes the unsharded gradients in the parameter dtype (none for a pipeline stage's empty
  // stage_input / stage_output, none left for a unit whose weight gradients the forward made).
  const bool grads_here = cost.params() > 0 && !cost.weight_grads_in_forward;
  if (grads_here) add_unsharded_grads(u, mb, op);
  const bool group_done = u == pg.units.front();  // a two-level root's backward ends with the embedding
  // Under pipeline parallelism torch.distributed.pipelining runs every backward but the last with
  // set_reshard_after_backward(False) (_PipelineStageBase.backward_maybe_with_nosync): the group stays unsharded
  // until the last micro-batch's backward.
  const bool reshard = ctx_.layout.pp == 1 || mb == ctx_.layout.micro_batches - 1;
  if (group_done && reshard) {
    for (const Part& part : pg.parts) op.frees.push_back(part.unsharded);  // reshard
    pg.unsharded = false;
  }
  ctx_.w.add(std::move(op));
  // The final norm's few gradients, which torchtitan's chunked loss leaves to the backward, are not reduced again.
  if (group_done && !pg.parts.empty() && !pg.grads.empty()) post_backward(g, mb);
}

void Fsdp2Builder::add_unsharded_grads(int32_t u, int32_t mb, Op& op) {
  const UnitCost& cost = ctx_.unit_cost(u);
  const BufferId grads = ctx_.add_output(op, op_name("grads", cost.name, mb), BufferCategory::unsharded_grad,
                                         cost.params() * weight_bytes());
  groups_[group_of_unit(u)].grads.push_back(grads);
}

// Root post-backward (is_last_backward): the compute stream waits on every group's post-reduce event and the last
// reduce-scatter, and frees its input.
void Fsdp2Builder::join_reductions(int32_t mb) {
  ctx_.add_sync(op_name("rs_join", "", mb), Phase::bwd, ctx_.compute, ctx_.w.tails({rs_stream_, ar_stream_}),
                rs_in_flight_input_.valid() ? std::vector<BufferId>{rs_in_flight_input_} : std::vector<BufferId>{}, mb);
  rs_in_flight_op_ = OpId::none();
  rs_in_flight_input_ = BufferId::none();
}

void Fsdp2Builder::backward(int32_t mb, Activations& acts) {
  for (int32_t u = range_.last; u >= range_.first; --u) {
    pre_backward(u, mb, acts);
    Op bwd = ctx_.unit_pass("bwd", u, Phase::bwd, mb, unit_work(ctx_.unit_cost(u), Phase::bwd),
                            unsharded_params(group_of_unit(u)), {});
    acts.on_backward(bwd, u);
    finish_unit_backward(u, mb, bwd);
    join_overlapped(ctx_, u, Phase::bwd, mb);  // a fused EP exchange of this layer's backward
  }
  join_reductions(mb);
  train_metrics(mb);
}

// Composer's _train_microbatch updates the training metrics right after `loss.backward()` returns, from the outputs
// it kept (composer/trainer/trainer.py, v0.16: _eval_train_metrics): one op on the compute stream that reads the held
// logits and allocates each cross-entropy's fp32 temporaries; the metrics run one after another, so the op holds one
// metric's temporaries at a time.
void Fsdp2Builder::train_metrics(int32_t mb) {
  const UnitCost& cost = ctx_.units.back();
  if (cost.metric_kernels == 0 || !ctx_.held_logits.valid()) return;
  Op op = make_compute(op_name("train_metrics", cost.name, mb), Phase::bwd, ctx_.compute, {}, cost.metric_bytes_touched,
                       cost.metric_class_bytes);
  op.kernels = cost.metric_kernels;
  op.micro_batch = mb;  // no unit: it computes no gradient of the output unit
  op.reads = {ctx_.held_logits};
  for (size_t i = 0; i < cost.metric_transient_tensors.size(); ++i) {
    ctx_.add_scratch(op, op_name("tmp.metric", std::to_string(i), cost.name, mb), BufferCategory::workspace,
                     cost.metric_transient_tensors[i]);
  }
  ctx_.w.add(std::move(op));
}

// torch.distributed.pipelining's stage_backward_input / stage_backward_weight: the first computes the data
// gradients and keeps what the weight gradients need; the second runs later, where the schedule has a gap. Here the
// input half frees the unit's saved activations as a whole backward does and holds, until the weight half, each
// linear's input and output gradient (weight_gradient_inputs_bytes); the weight half runs the wgrad GEMMs and
// produces the gradients.
void Fsdp2Builder::backward_input(int32_t mb, Activations& acts) {
  for (int32_t u = range_.last; u >= range_.first; --u) {
    pre_backward(u, mb, acts);
    const UnitCost& cost = ctx_.unit_cost(u);
    // The weight half launches the weight-gradient GEMMs; the input half the rest.
    const ComputeWork work{
        .gemms = backward_half(cost.bwd_gemms, false),
        .bytes_touched = cost.bwd_bytes_touched,
        .class_bytes = cost.bwd_class_bytes,
        .kernels = std::max(1, cost.bwd_kernels - static_cast<int32_t>(backward_half(cost.bwd_gemms, true).size()))};
    Op input = ctx_.unit_pass("bwd_input", u, Phase::bwd, mb, work, unsharded_params(group_of_unit(u)), {});
    acts.on_backward(input, u);
    if (const int64_t kept = weight_gradient_inputs_bytes(cost.bwd_gemms, ctx_.layout.shape.activation_dtype);
        kept > 0) {
      kept_for_weights_[{mb, u}] =
          ctx_.add_output(input, op_name("act.wgrad_inputs", cost.name, mb), BufferCategory::activation, kept);
    }
    ctx_.w.add(std::move(input));
    join_overlapped(ctx_, u, Phase::bwd, mb);
  }
}

void Fsdp2Builder::backward_weight(int32_t mb) {
  for (int32_t u = range_.last; u >= range_.first; --u) {
    Op weight =
        ctx_.unit_compute("bwd_weight", u, Phase::bwd, mb, {.gemms = backward_half(ctx_.unit_cost(u).bwd_gemms, true)});
    if (const auto kept = kept_for_weights_.find({mb, u}); kept != kept_for_weights_.end()) {
      weight.reads.push_back(kept->second);
      weight.frees.push_back(kept->second);
      kept_for_weights_.erase(kept);
    }
    finish_unit_backward(u, mb, weight);
  }
  join_reductions(mb);
}

void Fsdp2Builder::post_backward(ParamGroupId g, int32_t mb, Phase phase) {
  ParamGroup& pg = groups_[g];
  int64_t elems = 0;
  for (const Part& part : pg.parts) elems += part.padded_elems;
  const bool last_mb = mb == ctx_.layout.micro_batches - 1;
  if (ctx_.config.gradient_sync == GradSync::last_micro_batch && !last_mb) {
    accumulate_unreduced(pg, elems, mb, phase);
    return;
  }
  // The compute stream waits on the previous reduce-scatter and drops its input (one RS input in flight).
  if (rs_in_flight_op_.valid()) {
    ctx_.add_sync(op_name("rs_wait", pg.name, mb), phase, ctx_.compute, {rs_in_flight_op_}, {rs_in_flight_input_}, mb);
  }
  const auto [copy_in, input] = copy_into_rs_input(pg, elems, mb, phase);
  OpId rs_event;  // the reduce-scatter event the next group's post-backward waits on
  for (Part& part : pg.parts) rs_event = reduce_part(pg, part, mb, phase, copy_in, input);
  rs_in_flight_op_ = rs_event;
  rs_in_flight_input_ = input;
}

void Fsdp2Builder::accumulate_unreduced(ParamGroup& pg, int64_t elems, int32_t mb, Phase phase) {
  // set_requires_gradient_sync(False): no reduce-scatter; the unsharded gradient is kept, in the reduce dtype when
  // it differs from the parameter's (FSDPParam.to_accumulated_grad_if_needed), and summed over micro-batches.
  Op acc = make_memory_op(OpKind::copy, op_name("grad_accumulate", pg.name, mb), phase, ctx_.compute,
                          elems * (weight_bytes() + 2 * reduce_bytes()));
  acc.unit = pg.units.front();
  acc.micro_batch = mb;
  acc.reads = pg.grads;
  acc.frees = pg.grads;
  if (!pg.accumulated.valid()) {
    pg.accumulated =
        ctx_.w.buffer("grads.accumulated." + pg.name, BufferCategory::unsharded_grad, elems * reduce_bytes(), false);
    acc.allocs = {pg.accumulated};
  } else {
    acc.reads.push_back(pg.accumulated);
  }
  acc.writes = {pg.accumulated};
  ctx_.w.add(std::move(acc));
  pg.grads.clear();
}

std::pair<OpId, BufferId> Fsdp2Builder::copy_into_rs_input(ParamGroup& pg, int64_t elems, int32_t mb, Phase phase) {
  // chunk_cat the gradients into the RS input (cast to the reduce dtype) on the compute stream.
  const BufferId input =
      ctx_.w.buffer(op_name("rs_in", pg.name, mb), BufferCategory::unsharded_grad, elems * reduce_bytes(), false);
  Op copy = make_memory_op(OpKind::copy, op_name("rs_copy_in", pg.name, mb), phase, ctx_.compute,
                           elems * (weight_bytes() + reduce_bytes()));
  copy.unit = pg.units.front();
  copy.micro_batch = mb;
  copy.reads = pg.grads;
  copy.frees = pg.grads;
  if (pg.accumulated.valid()) {
    // The last micro-batch's gradients join the accumulated sum on their way into the reduce-scatter input.
    copy.bytes_touched += elems * reduce_bytes();
    copy.reads.push_back(pg.accumulated);
    copy.frees.push_back(pg.accumulated);
    pg.accumulated = BufferId::none();
  }
  copy.allocs = {input};
  copy.writes = {input};
  const OpId copy_id = ctx_.w.add(std::move(copy));
  pg.grads.clear();
  return {copy_id, input};
}

OpId Fsdp2Builder::reduce_part(const ParamGroup& pg, Part& part, int32_t mb, Phase phase, OpId copy_in,
                               BufferId input) {
  const std::string name = pg.name + (part.expert ? ".experts" : "");
  const int64_t out_bytes = part.padded_elems / part.shard * reduce_bytes();
  const BufferId output = ctx_.w.buffer(op_name("rs_out", name, mb), BufferCategory::comm_staging, out_bytes, false);
  // FSDP2 reduces with ncclAvg for FP32/BF16 (which rules out NVLS, PAT and symmetric kernels).
  Op rs = make_collective({.kind = OpKind::reduce_scatter,
                           .name = op_name("rs", name, mb),
                           .phase = phase,
                           .stream = rs_stream_,
                           .group = ctx_.group(part.expert ? GroupRole::edp : GroupRole::dp_shard),
                           .group_size = part.shard,
                           .payload_bytes = out_bytes,
                           .dtype = grad_comm_dtype(ctx_.config),
                           .reduce_op = ctx_.config.calculate_per_token_loss ? ReduceOp::sum : ReduceOp::avg});
  rs.unit = pg.units.front();
  rs.micro_batch = mb;
  rs.deps = {copy_in};
  rs.reads = {input};
  rs.allocs = {output};
  rs.writes = {output};
  const OpId rs_id = add_on_communicator(std::move(rs));
  OpId last = rs_id;
  if (ar_stream_.valid()) {
    Op ar = make_collective({.kind = OpKind::all_reduce,
                             .name = op_name("outer_ar", name, mb),
                             .phase = phase,
                             .stream = ar_stream_,
                             .group = ctx_.group(part.expert ? GroupRole::edp_outer : GroupRole::dp_outer),
                             .group_size = ctx_.layout.outer,
                             .payload_bytes = out_bytes,
                             .dtype = grad_comm_dtype(ctx_.config),
                             .reduce_op = ReduceOp::avg});
    ar.unit = pg.units.front();
    ar.micro_batch = mb;
    ar.deps = {last};
    ar.reads = {output};
    ar.writes = {output};
    last = ctx_.w.add(std::move(ar));
  }
  accumulate_grad_shard(pg, part, name, mb, phase, output, last);
  return rs_id;
}

void Fsdp2Builder::accumulate_grad_shard(const ParamGroup& pg, Part& part, const std::string& name, int32_t mb,
                                         Phase phase, BufferId reduced, OpId after) {
  // Cast to the original dtype and accumulate into the sharded .grad: on the all-reduce stream under HSDP
  // (foreach_reduce), so the next reduce-scatter does not queue behind this group's all-reduce.
  // foreach_reduce: _to_dtype_if_needed is a cast kernel only when the reduce dtype differs from the shard's; the
  // group's first reduction of the step makes .grad a view of the output (no kernel), a later one adds to it
  // (read both, write one).
  const int64_t shard_elems = part.padded_elems / part.shard;
  int64_t acc_bytes = reduce_bytes() != shard_elem_bytes() ? shard_elems * (reduce_bytes() + shard_elem_bytes()) : 0;
  if (part.grad_shard_live) acc_bytes += shard_elems * 3 * shard_elem_bytes();
  Op acc =
      make_compute(op_name("grad_accum", name, mb), phase, ar_stream_.valid() ? ar_stream_ : rs_stream_, {}, acc_bytes);
  acc.unit = pg.units.front();
  acc.micro_batch = mb;
  acc.deps = {after};
  acc.reads = {reduced, part.grad_shard};
  acc.writes = {part.grad_shard};
  acc.frees = {reduced};
  if (!part.grad_shard_live) {  // the group's first reduction of the step makes .grad rather than adding to it
    acc.allocs.push_back(part.grad_shard);
    acc.reads = {reduced};
    part.grad_shard_live = true;
  }
  ctx_.w.add(std::move(acc));
}

OpId Fsdp2Builder::add_on_communicator(Op op) {
  // FSDP2 issues a group's all-gathers and reduce-scatters on its one process group.
  const int32_t communicator = op.group.value();
  return ctx_.w.add_on_communicator(std::move(op), communicator);
}

void Fsdp2Builder::optimizer_step() {
  ctx_.add_sync("grad_sync", Phase::optim, ctx_.compute, ctx_.w.tails({rs_stream_, ar_stream_, ctx_.offload}), {});
  // Adam over the sharded parameters in their original dtype; the next unshard's copy-in casts them.
  const FsdpConfig& c = ctx_.config;
  Op adam = make_memory_op(
      OpKind::optimizer, "optimizer", Phase::optim, ctx_.compute,
      shard_elems_ * adam_bytes_per_element(c.optimizer_implementation, shard_elem_bytes(), shard_elem_bytes(),
                                            dtype_bytes(c.exp_avg_dtype), dtype_bytes(c.exp_avg_sq_dtype)));
  adam.kernels = adam_kernels(c.optimizer_implementation, ctx_.units, shard_elems_);
  adam.reads = {shard_params_, optimizer_state_};
  adam.writes = {shard_params_, optimizer_state_};
  if (c.optimizer_implementation == OptimizerImpl::foreach) {
    // _multi_tensor_adam's exp_avg_sq_sqrt: one temporary per parameter, all alive through the step.
    ctx_.add_scratch(adam, "optimizer.foreach_tmp", BufferCategory::workspace,
                     shard_elems_ * dtype_bytes(c.exp_avg_sq_dtype));
  }
  for (const ParamGroup& pg : groups_) {
    for (const Part& part : pg.parts) {
      if (!part.grad_shard_live) continue;
      adam.reads.push_back(part.grad_shard);
      adam.frees.push_back(part.grad_shard);  // zero_grad(set_to_none=True) right after the step
    }
  }
  ctx_.release_held_logits(adam);
  ctx_.w.add(std::move(adam));
}

}  // namespace

Schedule build_fsdp2_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout) {
  std::vector<ActionOps> actions;
  std::vector<UnitCost> units = derive_units(model, layout.shape);
  const StagePlan plan = whole_model_plan(units, layout.micro_batches);
  return Fsdp2Builder(model, config, layout, std::move(units)).build(plan, &actions);
}

Schedule build_fsdp2_stage(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                           const StagePlan& plan, std::vector<ActionOps>* actions) {
  return Fsdp2Builder(model, config, layout, plan.units).build(plan, actions);
}

}  // namespace fsdpsim
