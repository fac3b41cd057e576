// The Megatron-FSDP builder: backward, gradient reduction (GradReducePipeline) and the optimizer step.
#include <algorithm>

#include "builders/megatron_builder.h"
#include "common/error.h"

namespace fsdpsim {
namespace {

// autograd's param.grad has the compute weight's dtype: BF16 (TE hands FP8 parameters BF16 weight gradients).
constexpr int64_t kParamGradBytes = 2;

// gradient_reduce_preprocessing(): per-token loss sums; average_in_collective uses ncclAvg; otherwise non-BF16 grads
// use NCCL PreMulSum(1/N) and BF16 grads get an explicit mul_ over the bucket before a plain sum
// (docs/architecture.md §4.6.4).
ReduceOp grad_reduce_op(const FsdpConfig& c, bool* needs_scale_pass) {
  *needs_scale_pass = false;
  if (c.calculate_per_token_loss) return ReduceOp::sum;
  if (c.average_in_collective) return ReduceOp::avg;
  if (grad_comm_dtype(c) != DType::bf16) return ReduceOp::premul_sum;
  *needs_scale_pass = true;
  return ReduceOp::sum;
}

}  // namespace

void MegatronBuilder::backward(int32_t mb, Activations& acts) {
  // Root pre-backward (docs/architecture.md §4.6.3): every unit bucket still gathered becomes lazily releasable.
  // Non-unit buckets and buckets that are not distributed are never released inside the step.
  if (zero3()) {
    for (size_t g = 0; g < ag_.size(); ++g) {
      const BucketGroup& bg = plan_.groups[g];
      if (ag_[g].status != AgStatus::empty && !bg.non_unit && bg.distributed) ag_[g].releasable = true;
    }
  }
  for (int32_t u = range_.last; u >= range_.first; --u) {
    if (acts.chunk_end(u)) recompute_chunk(acts.chunk_start(u), u, acts, mb);
    backward_unit(u, acts, mb);
    // Bucket groups whose gradients are complete after this unit: those whose first unit it is (the single non-unit
    // group completes with the embedding's gradient).
    std::vector<BucketGroupId> done;
    for (const BucketGroupId g : plan_.groups_of(u)) {
      if (plan_.groups[g].units.front() == u) done.push_back(g);
    }
    for (const BucketGroupId g : done) {
      if (shards_grads()) {
        reduce_group(g, mb);
      } else if (mb == ctx_.layout.micro_batches - 1) {
        if (ctx_.config.overlap_grad_reduce) {
          reduce_group(g, mb);
        } else {
          deferred_reductions_.push_back(g);
        }
      }
    }
  }
  // Root post-backward: grad_reduce_pipeline.reset() joins every outstanding reduce-scatter and frees its bucket.
  if (shards_grads()) pop_reduce_queue(0, mb);
}

void MegatronBuilder::recompute_chunk(int32_t first_unit, int32_t last_unit, Activations& acts, int32_t mb) {
  // Full recompute: the checkpointed chunk re-runs its forward inside backward. The pre-forward hook in PRE_BACKWARD
  // re-gathers each layer without prefetch (docs/architecture.md §4.6.3). Each layer's post-forward marks its bucket
  // lazily releasable (megatron_fsdp.py _post_forward), so the next layer's all-gather recycles it: only the chunk's
  // last layer stays gathered for its backward, the others are gathered again at their pre-backward.
  for (int32_t u = first_unit; u <= last_unit; ++u) {
    const std::vector<BucketGroupId>& groups = plan_.groups_of(u);
    gather(groups, Prefetch::none, Phase::recompute, mb);
    emit_unit_collectives(ctx_, u, Phase::recompute, mb);
    std::vector<BufferId> reads = gathered_buffers(groups);
    Op op = ctx_.unit_pass("recompute", u, Phase::recompute, mb, unit_work(ctx_.unit_cost(u), Phase::recompute),
                           std::move(reads), wait_for(groups));
    acts.on_recompute(op, u);
    ctx_.w.add(std::move(op));
    join_overlapped(ctx_, u, Phase::recompute, mb);
    if (zero3() && u < last_unit) {
      for (const BucketGroupId g : groups) {
        AgState& state = ag_[g];
        if (state.status != AgStatus::empty && plan_.groups[g].distributed) {
          state.releasable = true;
        }
      }
    }
  }
}

void MegatronBuilder::backward_unit(int32_t u, Activations& acts, int32_t mb) {
  const UnitCost& cost = ctx_.unit_cost(u);
  const std::vector<BucketGroupId>& groups = plan_.groups_of(u);
  // Pre-backward hook (units): gather + backward prefetch (docs/architecture.md §4.6.2). Non-unit weights stay
  // gathered.
  if (zero3() && ctx_.is_layer(u)) gather(groups, Prefetch::backward, Phase::bwd, mb);
  acts.reload(u, ctx_.w.tail(ctx_.compute));      // an offloaded unit that was not prefetched
  acts.reload(u - 1, ctx_.w.tail(ctx_.compute));  // prefetch the next unit's activations one layer ahead
  emit_unit_collectives(ctx_, u, Phase::bwd, mb);
  // Without TE's wgrad fusion (the recommended --no-gradient-accumulation-fusion), autograd writes each param.grad in
  // the parameter dtype and the post-accumulate-grad hook copies it into the gradient bucket and deletes it
  // (megatron_fsdp.py _grad_acc): read 2 B + write b_c per parameter, and one param.grad alive at a time. With the
  // fusion, TE's wgrad GEMMs write into main_grad; only parameters outside TE linears (embedding, norms, router)
  // still go through param.grad.
  const bool fusion = ctx_.config.gradient_accumulation_fusion;
  int64_t grad_copy_elems = 0;
  for (const UnitParam& p : cost.param_tensors) {
    if (!(fusion && p.linear_weight)) grad_copy_elems += p.elems * p.copies;
  }
  const int64_t grad_copy_bytes = grad_copy_elems * (kParamGradBytes + dtype_bytes(grad_comm_dtype(ctx_.config)));
  // Hopper FP8 recipes: after the backward all-gather each FP8 weight gets its transpose (column-wise) copy for the
  // data-gradient GEMM (mixed_precision.py fp8_create_transpose_cache), dropped when the unit is released.
  const int64_t fp8_transpose_bytes = fp8_transpose_cache() && ctx_.is_layer(u)
                                          ? linear_weight_elems(cost, false) + linear_weight_elems(cost, true)
                                          : 0;
  ComputeWork work = unit_work(cost, Phase::bwd);
  work.bytes_touched += grad_copy_bytes + 2 * fp8_transpose_bytes;
  std::vector<BufferId> reads = gathered_buffers(groups);
  Op bwd = ctx_.unit_pass("bwd", u, Phase::bwd, mb, std::move(work), std::move(reads), wait_for(groups));
  // Room for what the activations, the weight gradients and the gradient buckets add, allocated once.
  const size_t added = 6 + cost.bwd_transient_tensors.size() + groups.size();
  bwd.allocs.reserve(added);
  bwd.frees.reserve(added);
  acts.on_backward(bwd, u);
  if (fp8_transpose_bytes > 0) {
    ctx_.add_scratch(bwd, op_name("fp8_transpose", cost.name, mb), BufferCategory::gathered_param, fp8_transpose_bytes);
  }
  const int64_t param_grad_elems = cost.largest_param_elems(!fusion);
  if (param_grad_elems > 0) {
    ctx_.add_scratch(bwd, op_name("param_grad", cost.name, mb), BufferCategory::weight_grad,
                     param_grad_elems * kParamGradBytes);
  }
  grad_buckets_for(u, bwd, mb);
  // Post-backward (RegisterFSDPBackwardFunction): release the unit's gathered weights.
  if (zero3() && ctx_.is_layer(u)) release(groups, bwd);
  ctx_.w.add(std::move(bwd));
  join_overlapped(ctx_, u, Phase::bwd, mb);
}

void MegatronBuilder::grad_buckets_for(int32_t u, Op& bwd, int32_t mb) {
  const std::vector<BucketGroupId>& groups = plan_.groups_of(u);
  if (!shards_grads()) {
    // ZeRO-0/1: gradients accumulate into the persistent full buffer (main_grad.add_).
    for (const BucketGroupId g : groups) bwd.writes.push_back(full_grads_[g]);
    return;
  }
  const int64_t comm_bytes = dtype_bytes(grad_comm_dtype(ctx_.config));
  for (const BucketGroupId g : groups) {
    const BucketGroup& bg = plan_.groups[g];
    std::vector<BufferId>& held = grad_buffers_[g];
    if (!bg.distributed) {
      // Not distributed: main_grad is the persistent full buffer (main_grad.add_(param.grad)).
      bwd.writes.push_back(bg.expert ? grad_shard_expert_ : grad_shard_);
      continue;
    }
    if (held.empty()) {
      if (uses_pool(g)) {
        // The double buffer's slot u % 2. Megatron waits for old reductions of the pool on the RS stream only
        // (_enforce_double_buffer_limit); the compute stream is held back by the queue capacity alone.
        held.push_back(grad_pool_[pool_slot(u)]);
      } else {
        // main_grad_getter allocates the whole unsharded bucket at the group's first gradient: for a single
        // non-unit group that is the output layer's, early in backward (docs/architecture.md §4.6.4).
        held.push_back(ctx_.w.buffer(op_name("grads", bg.name, mb), BufferCategory::unsharded_grad,
                                     bg.padded_elems * comm_bytes, false));
        bwd.allocs.push_back(held.back());
      }
    }
    bwd.writes.push_back(held.back());
  }
}

void MegatronBuilder::pop_reduce_queue(int64_t budget_elems, int32_t mb) {
  // wait_for_previous_grad_reduce(capacity): while the queued unsharded sizes exceed the capacity, the compute
  // stream waits on the oldest reduce-scatter's event and its bucket is freed.
  int64_t queued = 0;
  for (const auto& q : rs_queue_) queued += q.elems;
  std::vector<OpId> deps;
  std::vector<BufferId> frees;
  while (!rs_queue_.empty() && (budget_elems == 0 || budget_range_.queue_above(queued, budget_elems))) {
    const QueuedReduce& q = rs_queue_.front();
    deps.push_back(q.last_op);
    for (const BufferId b : q.buffers) {
      if (!ctx_.w.buffer_at(b).persistent) frees.push_back(b);
    }
    queued -= q.elems;
    rs_queue_.pop_front();
  }
  if (deps.empty()) return;
  ctx_.add_sync(op_name(budget_elems == 0 ? "rs_join" : "rs_queue_pop", "", mb), Phase::bwd, ctx_.compute, deps, frees,
                mb);
}

void MegatronBuilder::reduce_group(BucketGroupId group, int32_t mb) {
  const FsdpConfig& c = ctx_.config;
  const BucketGroup& g = plan_.groups[group];
  const int32_t unit = g.non_unit ? -1 : g.units.front();
  const BufferId grads_out = g.expert ? grad_shard_expert_ : grad_shard_;
  if (g.group_ranks == 1) {
    // Nothing to reduce over one rank; HSDP's outer reduction of the full buffer still runs.
    reduce_outer(group, mb, OpId::none(), shards_grads() ? grads_out : full_grads_[group]);
    return;
  }
  if (shards_grads()) {
    // A zero budget joins the whole queue at every reduction, as the final reset does: no other budget does that.
    if (plan_.communication_budget_elems == 0) budget_range_.pin(0);
    pop_reduce_queue(plan_.communication_budget_elems, mb);
  }
  bool scale_pass = false;
  const ReduceOp reduce_op = grad_reduce_op(c, &scale_pass);
  const DType comm = grad_comm_dtype(c);
  const std::vector<BufferId> buffers =
      shards_grads() ? grad_buffers_[group] : std::vector<BufferId>{full_grads_[group]};
  const std::vector<OpId> deps = ctx_.w.tails({ctx_.compute});  // rs_stream.wait_stream(current_stream)
  if (scale_pass) {
    Op scale = make_compute(op_name("grad_scale", g.name, mb), Phase::bwd, rs_stream_, {}, 2 * grad_bytes(g));
    scale.unit = unit;
    scale.micro_batch = mb;
    scale.deps = deps;
    scale.reads = buffers;
    scale.writes = buffers;
    ctx_.w.add(std::move(scale));
  }
  const bool all_reduce = c.data_parallel_sharding_strategy == ShardingStrategy::no_shard;
  Op op = make_collective({.kind = all_reduce ? OpKind::all_reduce : OpKind::reduce_scatter,
                           .name = op_name(all_reduce ? "ar" : "rs", g.name, mb),
                           .phase = Phase::bwd,
                           .stream = rs_stream_,
                           .group = shard_group(g),
                           .group_size = g.group_ranks,
                           .payload_bytes = all_reduce ? grad_bytes(g) : grad_bytes(g) / g.shard_size,
                           .dtype = comm,
                           .reduce_op = reduce_op});
  op.unit = unit;
  op.micro_batch = mb;
  op.deps = deps;
  op.reads = buffers;
  op.writes = shards_grads() ? std::vector<BufferId>{grads_out} : buffers;
  OpId last = add_on_communicator(std::move(op));
  if (shards_grads()) {
    // On the RS stream: main_grad_shard += reduced (read the reduced shard and the accumulator, write it back).
    const int64_t shard_elems = g.shard_elems();
    Op acc = make_compute(op_name("grad_accum", g.name, mb), Phase::bwd, rs_stream_, {},
                          shard_elems * (dtype_bytes(comm) + 2 * dtype_bytes(main_grad_dtype(c))));
    acc.unit = unit;
    acc.micro_batch = mb;
    acc.reads = {grads_out};
    acc.writes = {grads_out};
    last = ctx_.w.add(std::move(acc));
  }
  // On the last micro-batch of HSDP the outer collective's event replaces the RS event in the queue
  // (param_and_grad_buffer.py _bucket_group_gradient_reduce): queue pops and the final join wait for it too.
  const OpId outer = reduce_outer(group, mb, last, grads_out.valid() ? grads_out : buffers.front());
  if (outer.valid()) last = outer;
  if (shards_grads()) {
    rs_queue_.push_back(QueuedReduce{last, grad_buffers_[group], g.padded_elems});
    grad_buffers_[group].clear();
  }
}

OpId MegatronBuilder::reduce_outer(BucketGroupId group, int32_t mb, OpId after, BufferId accumulated) {
  const FsdpConfig& c = ctx_.config;
  const BucketGroup& g = plan_.groups[group];
  if (!hsdp() || mb != ctx_.layout.micro_batches - 1) return OpId::none();
  // docs/architecture.md §4.6.5: after the inner reduction of the last micro-batch, the outer group all-reduces
  // (HSDP) or reduce-scatters (HFSDP) the accumulated shard, on the outer stream that waits on the RS stream.
  const GroupId outer = ctx_.group(g.expert ? GroupRole::edp_outer : GroupRole::dp_outer);
  const int64_t shard_grad_bytes = g.shard_elems() * dtype_bytes(main_grad_dtype(c));
  Op o = make_collective({.kind = hfsdp() ? OpKind::reduce_scatter : OpKind::all_reduce,
                          .name = op_name(hfsdp() ? "outer_rs" : "outer_ar", g.name, mb),
                          .phase = Phase::bwd,
                          .stream = outer_rs_stream_,
                          .group = outer,
                          .group_size = ctx_.layout.outer,
                          .payload_bytes = hfsdp() ? shard_grad_bytes / ctx_.layout.outer : shard_grad_bytes,
                          .dtype = main_grad_dtype(c),
                          .reduce_op = c.average_in_collective ? ReduceOp::avg : ReduceOp::sum});
  o.unit = g.non_unit ? -1 : g.units.front();
  o.micro_batch = mb;
  if (after.valid()) {
    o.deps = {after};
  } else {
    o.deps = ctx_.w.tails({ctx_.compute});
  }
  o.reads = {accumulated};
  o.writes = o.reads;
  return ctx_.w.add(std::move(o));
}

void MegatronBuilder::finalize() {
  const FsdpConfig& c = ctx_.config;
  for (const BucketGroupId g : deferred_reductions_) reduce_group(g, ctx_.layout.micro_batches - 1);
  // finish_grad_sync(): wait for every reduction, including the outer ones.
  ctx_.add_sync("grad_sync", Phase::optim, ctx_.compute,
                ctx_.w.tails({rs_stream_, outer_rs_stream_, outer_ag_stream_, ctx_.offload}), {});
  std::vector<BufferId> grads = shards_grads() ? std::vector<BufferId>{grad_shard_} : full_grads_;
  if (grad_shard_expert_.valid()) grads.push_back(grad_shard_expert_);
  const int64_t elems = optimizer_elems_;
  const int64_t grad_elem = dtype_bytes(main_grad_dtype(c));
  const int64_t main_elem = main_param_bytes(c);
  BufferId optimizer_grads;
  if (main_elem > 0 && grad_elem != main_elem && !c.use_precision_aware_optimizer) {
    // update_main_grads(): each grad shard becomes a new copy in the main-param dtype, alive through the step
    // (docs/architecture.md §4.6.7). --use-precision-aware-optimizer sets megatron_fsdp_use_decoupled_grad
    // (megatron/training/training.py @ d98e8a64ddf3): the optimizer reads the shard as it is, with no copy.
    optimizer_grads = ctx_.w.buffer("optimizer_grads", BufferCategory::grad_shard, main_elem * elems, false);
    Op cast =
        make_memory_op(OpKind::copy, "update_main_grads", Phase::optim, ctx_.compute, elems * (grad_elem + main_elem));
    cast.reads = grads;
    cast.allocs = {optimizer_grads};
    cast.writes = {optimizer_grads};
    ctx_.w.add(std::move(cast));
  }
  // Adam: read and write the weights and both moments, read the gradient (adam_bytes_per_element).
  const int64_t weight_elem = main_elem > 0 ? main_elem : dtype_bytes(c.param_dtype);
  Op adam =
      make_memory_op(OpKind::optimizer, "optimizer", Phase::optim, ctx_.compute,
                     elems * adam_bytes_per_element(c.optimizer_implementation, weight_elem,
                                                    optimizer_grads.valid() ? main_elem : grad_elem,
                                                    dtype_bytes(c.exp_avg_dtype), dtype_bytes(c.exp_avg_sq_dtype)));
  if (c.optimizer_implementation == OptimizerImpl::foreach) {
    // A torch.optim optimizer given to Megatron-FSDP's fully_shard: _multi_tensor_adam's exp_avg_sq_sqrt.
    ctx_.add_scratch(adam, "optimizer.foreach_tmp", BufferCategory::workspace, elems * dtype_bytes(c.exp_avg_sq_dtype));
  }
  adam.kernels = adam_kernels(c.optimizer_implementation, ctx_.units, elems);
  adam.reads = {optimizer_state_};
  if (main_weights_.valid()) adam.reads.push_back(main_weights_);
  if (optimizer_grads.valid())
    adam.reads.push_back(optimizer_grads);
  else
    adam.reads.insert(adam.reads.end(), grads.begin(), grads.end());
  adam.writes = {optimizer_state_};
  if (main_weights_.valid()) adam.writes.push_back(main_weights_);
  ctx_.release_held_logits(adam);
  if (optimizer_grads.valid()) adam.frees.push_back(optimizer_grads);
  ctx_.w.add(std::move(adam));
  if (!main_weights_.valid()) return;
  // copy_main_weights_to_model_weights(): cast (or FP8-quantize) the main shard into the compute shard.
  Op copy = make_memory_op(OpKind::copy, "copy_main_to_model", Phase::optim, ctx_.compute,
                           elems * (main_elem + dtype_bytes(c.param_dtype)));
  copy.reads = {main_weights_};
  if (param_shard_.valid()) copy.writes.push_back(param_shard_);
  if (param_shard_expert_.valid()) copy.writes.push_back(param_shard_expert_);
  for (size_t g = 0; g < plan_.groups.size() && !param_shard_.valid(); ++g) copy.writes.push_back(ag_[g].buffer);
  ctx_.w.add(std::move(copy));
  if (c.param_dtype == DType::fp8) {
    // Tensor-scaling FP8 parameters: a global amax all-reduce of one FP32 value per weight tensor.
    const int64_t tensors = 8 * static_cast<int64_t>(ctx_.layers());
    Op amax = make_collective({.kind = OpKind::all_reduce,
                               .name = "fp8_amax",
                               .phase = Phase::optim,
                               .stream = ctx_.compute,
                               .group = ctx_.group(GroupRole::dp_shard),
                               .group_size = ctx_.layout.dense_shard,
                               .payload_bytes = tensors * 4,  // one fp32 amax per FP8 tensor
                               .dtype = DType::fp32,
                               .reduce_op = ReduceOp::sum});
    ctx_.w.add(std::move(amax));
  }
}

}  // namespace fsdpsim
