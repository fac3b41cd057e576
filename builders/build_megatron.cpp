// The Megatron-FSDP builder: setup, the all-gather pipeline and the forward pass. The backward pass, the gradient
// reduction and the optimizer step are in megatron_backward.cpp.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "builders/megatron_builder.h"
#include "common/error.h"

namespace fsdpsim {

MegatronBuilder::MegatronBuilder(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout)
    : MegatronBuilder(model, config, layout, derive_units(model, layout.shape)) {}

MegatronBuilder::MegatronBuilder(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                                 std::vector<UnitCost> units)
    : ctx_(model, config, layout, std::move(units)),
      range_{0, static_cast<int32_t>(ctx_.units.size()) - 1},
      plan_(plan_megatron_buckets(ctx_.units, config, layout)) {
  ctx_.w.info().prefetch_depth = plan_.prefetch_depth;
  ag_.resize(plan_.groups.size());
  grad_buffers_.resize(plan_.groups.size());
  full_grads_.assign(plan_.groups.size(), BufferId::none());
}

bool MegatronBuilder::zero3() const {
  return ctx_.config.data_parallel_sharding_strategy == ShardingStrategy::optim_grads_params;
}

bool MegatronBuilder::shards_grads() const {
  return fsdpsim::shards_grads(ctx_.config.data_parallel_sharding_strategy);
}

bool MegatronBuilder::hfsdp() const {
  return hsdp() && ctx_.config.outer_dp_sharding_strategy == OuterStrategy::optim;
}

bool MegatronBuilder::fp8_transpose_buffer() const {
  return zero3() && ctx_.config.param_dtype == DType::fp8 &&
         resolve_fp8_recipe(ctx_.config.fp8_recipe, false) == Fp8Recipe::mxfp8;
}

bool MegatronBuilder::fp8_transpose_cache() const {
  return zero3() && ctx_.config.param_dtype == DType::fp8 && !fp8_transpose_buffer();
}

int64_t MegatronBuilder::grad_bytes(const BucketGroup& g) const {
  return g.padded_elems * dtype_bytes(grad_comm_dtype(ctx_.config));
}

GroupId MegatronBuilder::shard_group(const BucketGroup& g) {
  return ctx_.group(g.expert ? GroupRole::edp : GroupRole::dp_shard);
}

bool MegatronBuilder::uses_pool(BucketGroupId group) const {
  const BucketGroup& g = plan_.groups[group];
  if (param_pool_.empty() || g.non_unit || !g.distributed) return false;
  int64_t unit_bytes = 0;
  for (const BucketGroupId other : plan_.groups_of(g.units.front())) {
    unit_bytes += plan_.groups[other].gathered_bytes;
  }
  return unit_bytes == modal_unit_bytes_;
}

Schedule MegatronBuilder::build() {
  std::vector<ActionOps> actions;
  return build(whole_model_plan(ctx_.units, ctx_.layout.micro_batches), &actions);
}

Schedule MegatronBuilder::build(const StagePlan& plan, std::vector<ActionOps>* actions) {
  setup_streams();
  add_persistent_buffers();
  start_param_sync();
  run_actions(
      ctx_, plan, range_, [&](int32_t mb, Activations& acts) { forward(mb, acts); },
      [&](int32_t mb, Activations& acts) { backward(mb, acts); }, actions);
  range_ = UnitRange{0, static_cast<int32_t>(ctx_.units.size()) - 1};
  finalize();
  return ctx_.w.finish();
}

// ---- setup ------------------------------------------------------------------------------------------------------
void MegatronBuilder::setup_streams() {
  // docs/architecture.md §4.6.3: the AG stream (side_stream_for_param_gather), the RS stream
  // (side_stream_for_buffer_copy_and_grad_accum), and the HSDP outer streams.
  if (ctx_.config.data_parallel_sharding_strategy != ShardingStrategy::no_shard) {
    ag_stream_ = ctx_.w.stream(StreamRole::ag);
  }
  rs_stream_ = ctx_.w.stream(StreamRole::rs);
  if (hsdp()) outer_rs_stream_ = ctx_.w.stream(StreamRole::outer_rs);
  if (hfsdp()) outer_ag_stream_ = ctx_.w.stream(StreamRole::outer_ag);
}

void MegatronBuilder::add_persistent_buffers() {
  // docs/architecture.md §4.6.5: which buffers are sharded by strategy; HFSDP shards main weights, grads' optimizer
  // view and Adam state over inner × outer.
  const FsdpConfig& c = ctx_.config;
  std::array<int64_t, 2> shard_bytes{}, shard_elems{};  // dense, expert
  int64_t full_elems = 0;
  for (const auto& g : plan_.groups) {
    shard_bytes[g.expert] += g.shard_bytes();
    shard_elems[g.expert] += g.shard_elems();
    full_elems += g.padded_elems;
  }
  if (zero3()) {
    add_param_shards(shard_bytes);
  } else {
    add_full_params();
  }
  add_optimizer_buffers(shard_elems, full_elems);
  add_grad_buffers(shard_elems);
  if (c.fsdp_double_buffer && shards_grads()) add_double_buffer_pools();
  if (c.tp_comm_overlap && ctx_.layout.shape.tp > 1) add_userbuffers();
}

BufferId MegatronBuilder::registered_if_ub(BufferId buffer) {
  if (ctx_.config.nccl_ub) ctx_.w.mark_registered(buffer);
  return buffer;
}

void MegatronBuilder::add_param_shards(const std::array<int64_t, 2>& shard_bytes) {
  param_shard_ = registered_if_ub(ctx_.w.buffer("param_shard", BufferCategory::param_shard, shard_bytes[0], true));
  if (shard_bytes[1] > 0) {
    param_shard_expert_ =
        registered_if_ub(ctx_.w.buffer("param_shard.experts", BufferCategory::param_shard, shard_bytes[1], true));
  }
  if (fp8_transpose_buffer()) {
    // MXFP8 (DataParallelBuffer is_transpose_buffer): a column-wise copy of every FP8 weight shard, all-gathered in
    // backward instead of the row-wise data.
    int64_t transpose_bytes = 0;
    for (const auto& g : plan_.groups) transpose_bytes += g.fp8_padded_elems / g.shard_size;
    param_shard_transpose_ =
        registered_if_ub(ctx_.w.buffer("param_shard.transpose", BufferCategory::param_shard, transpose_bytes, true));
  }
  // docs/architecture.md §4.6.3: non-unit buckets are gathered once per step and stay unsharded (PRESERVED). They
  // come from the plain caching allocator, not the NCCL pool (param_and_grad_buffer.py, fetch_bucket fallback).
  for (const BucketGroupId g : plan_.non_unit_groups) {
    ag_[g].buffer = ctx_.w.buffer("params." + plan_.groups[g].name, BufferCategory::gathered_param,
                                  plan_.groups[g].gathered_bytes, true);
  }
  // A unit group that is not distributed (an expert shard group of one rank) computes from its full, persistent
  // weight buffer (DataParallelBuffer.fetch_bucket returns it): always ready, never gathered or released.
  for (size_t g = 0; g < plan_.groups.size(); ++g) {
    if (plan_.groups[g].non_unit || plan_.groups[g].distributed) continue;
    ag_[g].buffer = plan_.groups[g].expert ? param_shard_expert_ : param_shard_;
    ag_[g].status = AgStatus::ready;
  }
}

void MegatronBuilder::add_full_params() {
  for (size_t g = 0; g < plan_.groups.size(); ++g) {
    ag_[g].buffer = registered_if_ub(ctx_.w.buffer("params." + plan_.groups[g].name, BufferCategory::gathered_param,
                                                   plan_.groups[g].gathered_bytes, true));
    if (!plan_.groups[g].distributed) ag_[g].status = AgStatus::ready;
  }
}

void MegatronBuilder::add_optimizer_buffers(const std::array<int64_t, 2>& shard_elems, int64_t full_elems) {
  const FsdpConfig& c = ctx_.config;
  const int64_t outer_shards = hfsdp() ? ctx_.layout.outer : 1;
  optimizer_elems_ = c.data_parallel_sharding_strategy == ShardingStrategy::no_shard
                         ? full_elems
                         : (shard_elems[0] + shard_elems[1]) / outer_shards;
  if (main_param_bytes(c) > 0) {
    // Main weights are not allocated in the NCCL memory pool (param_and_grad_buffer.py, main weight buffer init).
    main_weights_ =
        ctx_.w.buffer("main_weights", BufferCategory::main_weight, main_param_bytes(c) * optimizer_elems_, true);
  }
  const int64_t adam_bytes = dtype_bytes(c.exp_avg_dtype) + dtype_bytes(c.exp_avg_sq_dtype);
  optimizer_state_ =
      ctx_.w.buffer("optimizer_state", BufferCategory::optimizer_state, adam_bytes * optimizer_elems_, true);
}

void MegatronBuilder::add_grad_buffers(const std::array<int64_t, 2>& shard_elems) {
  const int64_t grad_elem_bytes = dtype_bytes(main_grad_dtype(ctx_.config));
  if (shards_grads()) {
    grad_shard_ = registered_if_ub(
        ctx_.w.buffer("grad_shard", BufferCategory::grad_shard, grad_elem_bytes * shard_elems[0], true));
    if (shard_elems[1] > 0) {
      grad_shard_expert_ = registered_if_ub(
          ctx_.w.buffer("grad_shard.experts", BufferCategory::grad_shard, grad_elem_bytes * shard_elems[1], true));
    }
    return;
  }
  for (size_t g = 0; g < plan_.groups.size(); ++g) {
    full_grads_[g] = registered_if_ub(ctx_.w.buffer("grads." + plan_.groups[g].name, BufferCategory::unsharded_grad,
                                                    grad_elem_bytes * plan_.groups[g].padded_elems, true));
  }
}

void MegatronBuilder::add_userbuffers() {
  // Userbuffers: TE's initialize_ub registers one buffer per overlapped GEMM of a layer (12: qkv, proj, fc1, fc2
  // × fprop, dgrad, wgrad), each (sequence × micro-batch / cp) × hidden, uint8 for the 8 that all-gather FP8
  // inputs under FP8 and bf16 otherwise (transformer_engine/pytorch/module/base.py @ d0067d0d; Megatron's
  // _initialize_tp_communicators passes that shape). TE registers them outside PyTorch's caching allocator, once;
  // one persistent buffer here counts the same bytes toward every peak.
  const FsdpConfig& c = ctx_.config;
  const int64_t elems = c.micro_batch_size * c.seq_length / ctx_.layout.shape.cp * ctx_.model.hidden_size;
  const int64_t gather_bytes = ctx_.layout.shape.compute_dtype == DType::fp8 ? 1 : 2;
  ctx_.w.buffer("userbuffers", BufferCategory::comm_staging, elems * (8 * gather_bytes + 4 * 2), true);
}

void MegatronBuilder::add_double_buffer_pools() {
  // FixedPoolAllocator (docs/architecture.md §4.6.6): the most common unit signature gets 2 persistent slots per buffer
  // kind; other units fall back to dynamic allocation.
  std::map<int64_t, int32_t> count;
  std::map<int64_t, int64_t> grad_bytes_of;
  for (int32_t u = 1; u <= ctx_.layers(); ++u) {
    int64_t bytes = 0, grads = 0;
    for (const BucketGroupId g : plan_.groups_of(u)) {
      bytes += plan_.groups[g].gathered_bytes;
      grads += grad_bytes(plan_.groups[g]);
    }
    ++count[bytes];
    grad_bytes_of[bytes] = grads;
  }
  int32_t best = 0;
  for (const auto& [bytes, n] : count) {
    if (n > best) {
      best = n;
      modal_unit_bytes_ = bytes;
    }
  }
  for (int32_t slot = 0; slot < 2; ++slot) {
    const std::string suffix = ".slot" + std::to_string(slot);
    if (zero3()) {
      param_pool_.push_back(
          ctx_.w.buffer("pool.params" + suffix, BufferCategory::comm_staging, modal_unit_bytes_, true));
    }
    grad_pool_.push_back(
        ctx_.w.buffer("pool.grads" + suffix, BufferCategory::comm_staging, grad_bytes_of[modal_unit_bytes_], true));
    if (ctx_.config.nccl_ub) {
      if (zero3()) ctx_.w.mark_registered(param_pool_.back());
      ctx_.w.mark_registered(grad_pool_.back());
    }
  }
  if (!zero3()) modal_unit_bytes_ = -1;  // ZeRO-2 keeps full weights; only grads use the pool
}

// ---- all-gather pipeline ----------------------------------------------------------------------------------------
std::vector<BucketGroupId> MegatronBuilder::prefetch_list(const std::vector<BucketGroupId>& requested,
                                                          Prefetch direction) {
  const bool forward = direction == Prefetch::forward;
  // AllGatherPipeline.all_gather_params: append the next bucket group (upwards in forward, downwards in backward)
  // while the prefetched elements (listed minus requested) are below suggested_AG_prefetch_size, checked before
  // each addition. The double buffer also stops once more than 2 distinct units (non-units count as one) would be
  // listed, and never prefetches non-unit buckets.
  std::vector<BucketGroupId> list = requested;
  // Under the double buffer a request made only of non-unit buckets skips prefetch entirely, so that non-unit modules
  // running inside a unit do not take pool slots (AllGatherPipeline.all_gather_params).
  const bool only_non_units =
      std::all_of(requested.begin(), requested.end(), [&](BucketGroupId g) { return plan_.groups[g].non_unit; });
  if (ctx_.config.fsdp_double_buffer && only_non_units) return list;
  std::set<int32_t> units;
  for (const BucketGroupId g : requested) units.insert(plan_.groups[g].non_unit ? -1 : plan_.groups[g].units.front());
  int64_t prefetched = 0;
  const auto count = static_cast<int32_t>(plan_.groups.size());
  int32_t next = forward ? std::max_element(requested.begin(), requested.end())->value() + 1
                         : std::min_element(requested.begin(), requested.end())->value() - 1;
  while (next >= 0 && next < count && budget_range_.prefetch_below(prefetched, plan_.communication_budget_elems)) {
    const BucketGroup& g = plan_.groups[BucketGroupId(next)];
    // Each model chunk is its own MegatronFSDP module: prefetch stops at the chunk's edge.
    if (!g.non_unit && (g.units.front() < range_.first || g.units.front() > range_.last)) break;
    if (ctx_.config.fsdp_double_buffer) {
      if (g.non_unit) break;
      std::set<int32_t> with = units;
      with.insert(g.units.front());
      if (with.size() > 2) break;
      units = with;
    }
    list.push_back(BucketGroupId(next));
    prefetched += g.padded_elems;
    next += forward ? 1 : -1;
  }
  return list;
}

void MegatronBuilder::gather(const std::vector<BucketGroupId>& requested, Prefetch prefetch, Phase phase, int32_t mb) {
  if (ctx_.config.data_parallel_sharding_strategy == ShardingStrategy::no_shard) return;
  std::vector<BucketGroupId> list = prefetch == Prefetch::none ? requested : prefetch_list(requested, prefetch);
  std::sort(list.begin(), list.end());
  // Only EMPTY buckets are gathered, in ascending bucket-ID order even in backward (docs/architecture.md §4.6.3).
  std::vector<BucketGroupId> to_issue;
  for (const BucketGroupId g : list) {
    if (ag_[g].status == AgStatus::empty && plan_.groups[g].distributed) {
      to_issue.push_back(g);
    }
    ag_[g].releasable = false;  // what is about to be used is not recycled
  }
  if (to_issue.empty()) return;
  recycle_releasable(mb);
  for (const BucketGroupId g : to_issue) issue_all_gather(g, phase, mb);
}

void MegatronBuilder::recycle_releasable(int32_t mb) {
  // recycle_unused_buckets(), run at each all-gather allocation: lazily released buckets are freed now.
  std::vector<BufferId> frees;
  for (auto& state : ag_) {
    if (!state.releasable || state.status == AgStatus::empty) continue;
    if (!ctx_.w.buffer_at(state.buffer).persistent) frees.push_back(state.buffer);
    state = AgState{};
  }
  if (frees.empty()) return;
  ctx_.add_sync(op_name("ag_recycle", "", mb), Phase::bwd, ag_stream_, ctx_.w.tails({ctx_.compute}), frees, mb);
}

void MegatronBuilder::issue_all_gather(BucketGroupId group, Phase phase, int32_t mb) {
  const BucketGroup& g = plan_.groups[group];
  AgState& state = ag_[group];
  const int32_t unit = g.non_unit ? -1 : g.units.front();
  const std::string what = phase == Phase::fwd ? "ag" : "ag." + std::string(to_string(phase));
  BufferId buffer = state.buffer;
  bool transient = false;
  if (zero3() && !g.non_unit) {
    if (uses_pool(group)) {
      buffer = param_pool_[pool_slot(unit)];
    } else {
      buffer = ctx_.w.buffer(op_name("params.", to_string(phase), g.name, mb), BufferCategory::gathered_param,
                             g.gathered_bytes, false);
      transient = true;
    }
  }
  std::vector<OpId> deps = ctx_.w.tails({ctx_.compute});  // ag_stream.wait_stream(current_stream)
  const BufferId source = g.expert ? param_shard_expert_ : param_shard_;
  if (hfsdp() && mb == 0) {
    // HFSDP (docs/architecture.md §4.6.5): on the first micro-batch every unit AG is preceded by an outer AG of the
    // P/(N_in·M) slice.
    const GroupId outer = ctx_.group(g.expert ? GroupRole::edp_outer : GroupRole::dp_outer);
    Op op = make_collective({.kind = OpKind::all_gather,
                             .name = op_name("outer_", what, g.name, mb),
                             .phase = phase,
                             .stream = outer_ag_stream_,
                             .group = outer,
                             .group_size = ctx_.layout.outer,
                             .payload_bytes = g.shard_bytes() / ctx_.layout.outer,
                             .dtype = DType::bf16,
                             .reduce_op = ReduceOp::none});
    op.unit = unit;
    op.micro_batch = mb;
    op.deps = deps;
    op.reads = {source};
    op.writes = {source};
    deps = {ctx_.w.add(std::move(op))};
  }
  Op op = make_collective({.kind = OpKind::all_gather,
                           .name = op_name(what, g.name, mb),
                           .phase = phase,
                           .stream = ag_stream_,
                           .group = shard_group(g),
                           .group_size = g.shard_size,
                           .payload_bytes = g.shard_bytes(),
                           .dtype = ctx_.config.param_dtype == DType::fp8 && !g.non_unit && g.fp8_padded_elems > 0
                                        ? DType::fp8
                                        : DType::bf16,
                           .reduce_op = ReduceOp::none});
  op.unit = unit;
  op.micro_batch = mb;
  op.deps = deps;
  if (source.valid()) op.reads = {source};
  // MXFP8: backward gathers the column-wise copy of the FP8 weights (get_bucket_key(bucket, bwd=True)).
  if (phase == Phase::bwd && g.fp8_padded_elems > 0 && param_shard_transpose_.valid()) {
    op.reads.push_back(param_shard_transpose_);
  }
  if (transient) op.allocs = {buffer};
  op.writes = {buffer};
  state.status = AgStatus::in_flight;
  state.buffer = buffer;
  state.ag_op = add_on_communicator(std::move(op));
  state.releasable = false;
}

std::vector<BufferId> MegatronBuilder::gathered_buffers(const std::vector<BucketGroupId>& groups) const {
  std::vector<BufferId> buffers;
  for (const BucketGroupId g : groups) buffers.push_back(ag_[g].buffer);
  return buffers;
}

std::vector<OpId> MegatronBuilder::wait_for(const std::vector<BucketGroupId>& groups) {
  // wait_bucket_ready(): the compute stream waits for the current unit's all-gathers only.
  std::vector<OpId> deps;
  for (const BucketGroupId g : groups) {
    AgState& state = ag_[g];
    if (state.status == AgStatus::in_flight) {
      deps.push_back(state.ag_op);
      state.status = AgStatus::ready;
    }
  }
  return deps;
}

void MegatronBuilder::release(const std::vector<BucketGroupId>& groups, Op& op) {
  // release_bucket(): a storage resize to 0 after the op that used the weights.
  for (const BucketGroupId g : groups) {
    AgState& state = ag_[g];
    if (state.status == AgStatus::empty || !plan_.groups[g].distributed) continue;
    if (!ctx_.w.buffer_at(state.buffer).persistent) op.frees.push_back(state.buffer);
    state = AgState{};
  }
}

OpId MegatronBuilder::add_on_communicator(Op op) {
  // All-gathers and reduce-scatters of one data-parallel group share its NCCL communicator unless
  // --create-all-gather-group gives the all-gathers their own; ProcessGroupNCCL runs one communicator's collectives
  // on one internal stream in the order the host issued them (Megatron-FSDP's docs/runtime_schedule.md @
  // d98e8a64ddf3), so each one also waits for the previous one on that communicator.
  const bool own_ag_communicator = ctx_.config.create_all_gather_group && op.kind == OpKind::all_gather;
  const int32_t communicator = op.group.value() * 2 + (own_ag_communicator ? 1 : 0);
  return ctx_.w.add_on_communicator(std::move(op), communicator);
}

// ---- forward ----------------------------------------------------------------------------------------------------
void MegatronBuilder::start_param_sync() {
  // DistributedOptimizer.start_param_sync(): with overlap, all-gather bucket 0 (the non-unit group) with prefetch;
  // without, gather every bucket synchronously before the first forward.
  const auto strategy = ctx_.config.data_parallel_sharding_strategy;
  if (strategy == ShardingStrategy::no_shard) return;
  if (ctx_.config.overlap_param_gather) {
    gather({plan_.unit_groups.front().front()}, Prefetch::forward, Phase::fwd, 0);
    return;
  }
  std::vector<BucketGroupId> all;
  for (BucketGroupId g{0}; g < plan_.groups.next_id(); g = BucketGroupId(g.value() + 1)) all.push_back(g);
  gather(all, Prefetch::none, Phase::fwd, 0);
  ctx_.add_sync("param_sync", Phase::fwd, ctx_.compute, wait_for(all), {}, 0);
}

void MegatronBuilder::forward(int32_t mb, Activations& acts) {
  for (int32_t u = range_.first; u <= range_.last; ++u) {
    const std::vector<BucketGroupId>& groups = plan_.groups_of(u);
    // Pre-forward hook (every unit and every non-unit module with parameters): gather + forward prefetch.
    gather(groups, ctx_.config.overlap_param_gather ? Prefetch::forward : Prefetch::none, Phase::fwd, mb);
    emit_unit_collectives(ctx_, u, Phase::fwd, mb);
    std::vector<BufferId> reads = gathered_buffers(groups);
    Op fwd = ctx_.unit_pass("fwd", u, Phase::fwd, mb, unit_work(ctx_.unit_cost(u), Phase::fwd), std::move(reads),
                            wait_for(groups));
    acts.on_forward(fwd, u);
    // Post-forward hook (units only, optim_grads_params): release the gathered weights at once.
    if (zero3() && ctx_.is_layer(u)) release(groups, fwd);
    const OpId id = ctx_.w.add(std::move(fwd));
    acts.after_forward(u, id);
    join_overlapped(ctx_, u, Phase::fwd, mb);
  }
}

}  // namespace fsdpsim
