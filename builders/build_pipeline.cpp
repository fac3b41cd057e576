// The pipeline-parallel builder: per pipeline rank a stage plan (its layers, its order of forwards and backwards),
// the FSDP builder run over it, the stages merged into one schedule, and the sends and receives between them.
#include "builders/build_pipeline.h"

#include <array>
#include <map>
#include <string_view>
#include <tuple>

#include "builders/build_fsdp2.h"
#include "builders/builder_common.h"
#include "builders/megatron_builder.h"
#include "builders/pipeline_order.h"
#include "builders/stage_plan.h"
#include "common/error.h"

namespace fsdpsim {
namespace {

// Where the embedding or the output unit would be on a rank that does not hold it: no parameters, no work, no
// activations — the point where the stage's input arrives (stage_input) or its output leaves (stage_output). Its ops
// belong to no model unit.
UnitCost empty_unit(const UnitCost& unit) {
  UnitCost empty;
  empty.name = unit.kind == UnitKind::embedding ? "stage_input" : "stage_output";
  empty.kind = unit.kind;
  return empty;
}

// Pipeline rank `rank`'s units and chunks. Its chunk c is virtual stage k = virtual_stage_of(c, rank), which holds
// split.first_layer[k] onwards. Either way the rank's chunks come in model order (chunk·pp + rank, or r then
// 2pp-1-r in a V), so its units do too.
StagePlan stage_plan(const std::vector<UnitCost>& all, const LayerSplit& split, PipelineSchedule schedule, int32_t pp,
                     int32_t virtual_stages, int32_t rank, PipelineOrder order) {
  StagePlan plan;
  const int32_t last_virtual = pp * virtual_stages - 1;
  const bool first = rank_of_virtual_stage(schedule, pp, 0) == rank;
  const bool last = rank_of_virtual_stage(schedule, pp, last_virtual) == rank;
  plan.units.push_back(first ? all.front() : empty_unit(all.front()));
  for (int32_t chunk = 0; chunk < virtual_stages; ++chunk) {
    const auto k = static_cast<size_t>(virtual_stage_of(schedule, pp, chunk, rank));
    const auto begin = static_cast<int32_t>(plan.units.size());
    for (int32_t l = 0; l < split.layers_per_virtual_stage[k]; ++l) {
      plan.units.push_back(all.at(static_cast<size_t>(split.first_layer[k] + l + 1)));
    }
    plan.chunks.push_back(UnitRange{begin, static_cast<int32_t>(plan.units.size()) - 1});
  }
  plan.units.push_back(last ? all.back() : empty_unit(all.back()));
  // The embedding runs in the first chunk, the output in the last.
  plan.chunks.front().first = 0;
  plan.chunks.back().last = static_cast<int32_t>(plan.units.size()) - 1;
  plan.order = std::move(order);
  return plan;
}

// The global unit index (Schedule::units of the whole model) of each of a stage's units.
std::vector<int32_t> global_units(const StagePlan& plan, const std::vector<UnitCost>& all) {
  std::vector<int32_t> out;
  for (const UnitCost& u : plan.units) {
    if (u.kind == UnitKind::decoder_layer) {
      out.push_back(u.layer + 1);
    } else if (u.name != all.front().name && u.name != all.back().name) {
      out.push_back(-1);  // stage_input, stage_output
    } else {
      out.push_back(u.kind == UnitKind::embedding ? 0 : static_cast<int32_t>(all.size()) - 1);
    }
  }
  return out;
}

// Appends one stage's schedule to the merged one: its streams renamed for the stage, groups shared by name, ids
// shifted. Returns the op id offset.
int32_t append_stage(Schedule& merged, const Schedule& stage, int32_t rank, int32_t pp,
                     const std::vector<int32_t>& unit_map) {
  const auto op_offset = static_cast<int32_t>(merged.ops.size());
  const auto buffer_offset = static_cast<int32_t>(merged.buffers.size());
  std::vector<StreamId> streams;
  for (const Stream& st : stage.streams) {
    streams.push_back(merged.streams.next_id());
    merged.streams.push_back(Stream{stage_stream_name(st.name, rank, pp), st.priority, rank});
  }
  std::vector<GroupId> groups;
  for (const Group& g : stage.groups) {
    GroupId id = merged.group_index(g.name);
    if (!id.valid()) {
      id = merged.groups.next_id();
      merged.groups.push_back(g);
    }
    FSDPSIM_CHECK(merged.groups[id] == g, "every stage's group '" + g.name + "' has the same size and stride");
    groups.push_back(id);
  }
  for (Buffer b : stage.buffers) {
    b.id = BufferId(b.id.value() + buffer_offset);
    b.stage = rank;
    merged.buffers.push_back(std::move(b));
  }
  const auto shift_buffers = [&](std::vector<BufferId>& ids) {
    for (BufferId& b : ids) b = BufferId(b.value() + buffer_offset);
  };
  for (Op op : stage.ops) {
    op.id = OpId(op.id.value() + op_offset);
    op.stream = streams[op.stream.index()];
    if (op.group.valid()) op.group = groups[op.group.index()];
    if (op.unit >= 0) op.unit = unit_map[static_cast<size_t>(op.unit)];  // -1 for stage_input / stage_output
    shift_buffers(op.allocs);
    shift_buffers(op.frees);
    shift_buffers(op.reads);
    shift_buffers(op.writes);
    for (OpId& d : op.deps) d = OpId(d.value() + op_offset);
    merged.ops.push_back(std::move(op));
  }
  return op_offset;
}

// One stage's actions as the merged schedule numbers them.
struct StageActions {
  std::vector<ActionOps> ops;
  StreamId compute;
};

// The first and last op on the stage's compute stream among an action's ops (none when the action has none, e.g.
// a chunk without layers).
std::pair<OpId, OpId> compute_span(const Schedule& s, const ActionOps& a, StreamId compute) {
  OpId first, last;
  for (int32_t id = a.begin.value(); id < a.end.value(); ++id) {
    if (s.ops[OpId(id)].stream != compute) continue;
    if (!first.valid()) first = OpId(id);
    last = OpId(id);
  }
  return {first, last};
}

// Stage `stage`'s stream `role` (stage<k>.<role>), made the first time it is asked for.
StreamId stage_stream(Schedule& s, std::string_view role, int32_t stage, int32_t pp) {
  const std::string name = stage_stream_name(role, stage, pp);
  const StreamId id = s.stream_index(name);
  if (id.valid()) return id;
  s.streams.push_back(Stream{name, 0, stage});
  return StreamId(static_cast<int32_t>(s.streams.size()) - 1);
}

// Appends `op` (a send or a receive of `bytes`, its kind, name, phase, stream, group and deps set) with its id; a
// receive allocates and writes the tensor it receives, a `received` buffer on its stage.
OpId append_p2p(Schedule& s, Op op, int64_t bytes, BufferCategory received) {
  op.id = s.ops.next_id();
  if (op.kind == OpKind::send) {
    op.send_bytes = bytes;
  } else {
    op.recv_bytes = bytes;
    const BufferId b = s.buffers.next_id();
    s.buffers.push_back(Buffer{.id = b,
                               .name = op.name,
                               .category = received,
                               .size_bytes = bytes,
                               .persistent = false,
                               .nccl_registered = false,
                               .stage = s.streams[op.stream].stage});
    op.allocs.push_back(b);
    op.writes.push_back(b);
  }
  const OpId id = op.id;
  s.ops.push_back(std::move(op));
  return id;
}

// Adds the sends and receives. An action's first op waits for its own receive, and a send leaves once the action's
// compute is done. Blocking exchanges (Megatron-core's batched isend/irecv without overlap, p2p_communication.py;
// torch.distributed.pipelining's 1F1B) also hold that first op until the previous action's send is done; overlapped
// ones (p2p_overlaps_compute) do not. Each direction between two ranks has its own stream, so its pairs run in order.
//
// A weight-gradient action (zbv, dualpipev) exchanges nothing. In a V the middle two stages share rank pp-1 (and
// the ends rank 0): what passes between them stays on the GPU, and a rank's sends go to both neighbours, so each
// (direction, peer) pair gets its own stream.
class P2pWriter {
 public:
  P2pWriter(Schedule& s, PipelineSchedule schedule, int32_t pp, int32_t virtual_stages, int64_t bytes, GroupId group,
            bool overlap)
      : s_(s), schedule_(schedule), pp_(pp), chunks_(virtual_stages), bytes_(bytes), group_(group), overlap_(overlap) {}

  void add_stage(int32_t rank, const PipelineOrder& order, const StageActions& actions) {
    const int32_t last_virtual = pp_ * chunks_ - 1;
    // A virtual stage this action exchanges with: one on another rank.
    const auto exchanges_with = [&](int32_t k) {
      return k >= 0 && k <= last_virtual && rank_of_virtual_stage(schedule_, pp_, k) != rank;
    };
    OpId previous_anchor, previous_send;
    for (size_t i = 0; i < order.size(); ++i) {
      const PipelineAction& a = order[i];
      const int32_t k = virtual_stage_of(schedule_, pp_, a.chunk, rank);
      const bool fwd = a.kind == PipelineAction::Kind::forward;
      const auto [first, last] = compute_span(s_, actions.ops[i], actions.compute);
      // Forward receives from k-1 and sends to k+1; backward receives from k+1 and sends to k-1; the weight half of a
      // split backward neither.
      const bool exchanges = a.kind != PipelineAction::Kind::backward_weight;
      const int32_t from = !exchanges ? -1 : fwd ? k - 1 : k + 1, to = !exchanges ? -1 : fwd ? k + 1 : k - 1;
      // The receive is ready as soon as the previous one on its channel is done: it takes the bytes the moment the
      // sender sends them. Megatron posts it one action ahead, inside the batched exchange after the previous action;
      // receiving eagerly keeps every channel deadlock-free under the blocking exchanges modelled here, at the price
      // of holding a received tensor up to a few actions early on a stage that is behind.
      OpId recv;
      if (exchanges_with(from)) recv = add_p2p(OpKind::recv, rank, a, from, k, OpId::none());
      if (first.valid()) {
        Op& head = s_.ops[first];
        if (recv.valid()) {
          head.deps.push_back(recv);
          head.frees.push_back(s_.ops[recv].allocs.front());  // the received tensor is consumed by the first op
        }
        // Blocking exchanges hold the compute until the previous action's send is done; overlapped ones do not.
        if (previous_send.valid() && !overlap_) head.deps.push_back(previous_send);
      } else if (recv.valid()) {
        // Nothing computes the received tensor: it is released as the action passes it on.
        pending_free_ = s_.ops[recv].allocs.front();
      }
      const OpId anchor = last.valid() ? last : (recv.valid() ? recv : previous_anchor);
      previous_send = OpId::none();
      if (exchanges_with(to)) previous_send = add_p2p(OpKind::send, rank, a, k, to, anchor);
      if (pending_free_.valid() && previous_send.valid()) {
        s_.ops[previous_send].frees.push_back(pending_free_);
        pending_free_ = BufferId::none();
      }
      previous_anchor = anchor;
    }
    FSDPSIM_CHECK(!pending_free_.valid(), "a received tensor is passed on");
  }

  // After every stage: each send names its receive and back.
  void pair() {
    for (const auto& [key, ends] : pairs_) {
      FSDPSIM_CHECK(ends.first.valid() && ends.second.valid(), "every pipeline send has its receive");
      s_.ops[ends.first].peer = ends.second;
      s_.ops[ends.second].peer = ends.first;
    }
  }

 private:
  OpId add_p2p(OpKind kind, int32_t rank, const PipelineAction& a, int32_t from, int32_t to, OpId after) {
    const bool fwd = a.kind == PipelineAction::Kind::forward;
    const std::string dir = fwd ? "fwd" : "bwd";
    const bool send = kind == OpKind::send;
    std::string role = std::string("pp_") + dir + (send ? "_send" : "_recv");
    if (is_v_shaped(schedule_)) role += ".r" + std::to_string(rank_of_virtual_stage(schedule_, pp_, send ? to : from));
    Op op;
    op.kind = kind;
    op.name = (send ? "send_" : "recv_") + std::string(fwd ? "act" : "grad") + ".vs" + std::to_string(from) + "to" +
              std::to_string(to) + ".mb" + std::to_string(a.micro_batch);
    op.phase = fwd ? Phase::fwd : Phase::bwd;
    op.micro_batch = a.micro_batch;
    op.stream = stage_stream(s_, role, rank, pp_);
    op.group = group_;
    if (after.valid()) op.deps.push_back(after);
    const OpId id =
        append_p2p(s_, std::move(op), bytes_, fwd ? BufferCategory::activation : BufferCategory::workspace);
    auto& ends = pairs_[{fwd, a.micro_batch, from, to}];
    (send ? ends.first : ends.second) = id;
    return id;
  }

  Schedule& s_;
  PipelineSchedule schedule_;
  int32_t pp_;
  int32_t chunks_;
  int64_t bytes_;
  GroupId group_;
  bool overlap_;
  BufferId pending_free_;
  // (forward?, micro-batch, from virtual stage, to virtual stage) → (send, recv)
  std::map<std::tuple<bool, int32_t, int32_t, int32_t>, std::pair<OpId, OpId>> pairs_;
};

// The configured split; when it does not divide and nothing chose the split, a default that runs: for FSDP2,
// torchtitan's (pipeline_module_split → generate_llm_fqn_per_model_part: the embedding and the output count as one
// layer each and the first stages take the remainder, so 61-layer DeepSeek-V3 splits over 2 × 8 stages); for
// Megatron-FSDP, the split with --account-for-embedding/loss-in-pipeline-split when that divides. Either way
// 126-layer Llama-3.1-405B splits evenly over 8 × 2 stages.
LayerSplit split_or_count_ends(int32_t layers, const FsdpConfig& config) {
  try {
    return split_layers(layers, config);
  } catch (const ConfigError&) {
    const bool chosen = !config.pipeline_layout.empty() || config.first_stage_layers > 0 ||
                        config.last_stage_layers > 0 || config.account_for_embedding_in_pipeline_split ||
                        config.account_for_loss_in_pipeline_split;
    if (chosen) throw;
    try {
      if (config.implementation == Implementation::fsdp2) return torchtitan_split_layers(layers, config);
      FsdpConfig ends = config;
      ends.account_for_embedding_in_pipeline_split = true;
      ends.account_for_loss_in_pipeline_split = true;
      return split_layers(layers, ends);
    } catch (const ConfigError&) {
    }
    throw;
  }
}

// Tied word embeddings under Megatron's pipeline (LanguageModule.setup_embeddings_and_output_layer, megatron/core/
// models/common/language_module/language_module.py at d98e8a64dd): the last stage, which does not hold the
// embedding, gets its own `output_layer.weight`, a copy of the word embedding — a parameter like any other, so
// Megatron-FSDP shards it, gathers it for the logits and keeps its gradient and optimizer state. The output unit of
// the untied model is exactly that unit.
UnitCost output_with_embedding_copy(const ModelSpec& model, const RankShape& shape) {
  ModelSpec untied = model;
  untied.tied_embeddings = false;
  return derive_units(untied, shape).back();
}

// The two copies stay equal because their gradients are summed before the optimizer step:
// _allreduce_word_embedding_grads (megatron/core/distributed/finalize_model_grads.py at d98e8a64dd) all-reduces the
// word embedding's main grad over the embedding group — the first and the last pipeline stage — after
// finish_grad_sync; under Megatron-FSDP it reduces the rank's local shard (`main_grad._local_tensor`). NCCL runs an
// all-reduce of two ranks as each sending its buffer to the other, so it is written as a send and a receive per end,
// after that stage's grad_sync, and the op after grad_sync (the main-grad cast or the optimizer) waits for both and
// adds the received shard (the receive's workspace is freed there).
class EmbeddingGradExchange {
 public:
  EmbeddingGradExchange(Schedule& s, int64_t bytes, GroupId group) : s_(s), bytes_(bytes), group_(group) {}

  void add(int32_t first_stage, int32_t last_stage, int32_t pp) {
    const std::array<int32_t, 2> stages{first_stage, last_stage};
    std::array<OpId, 2> sync{}, sends{}, recvs{};
    for (size_t i = 0; i < 2; ++i) sync[i] = grad_sync_of(stages[i]);
    for (size_t i = 0; i < 2; ++i) {
      sends[i] = add_op(OpKind::send, stages[i], stages[1 - i], pp, sync[i]);
      recvs[i] = add_op(OpKind::recv, stages[i], stages[1 - i], pp, sync[i]);
    }
    for (size_t i = 0; i < 2; ++i) {
      s_.ops[sends[i]].peer = recvs[1 - i];
      s_.ops[recvs[1 - i]].peer = sends[i];
      Op& next = s_.ops[after(sync[i])];
      next.deps.push_back(sends[i]);
      next.deps.push_back(recvs[i]);
      next.frees.push_back(s_.ops[recvs[i]].allocs.front());
    }
  }

 private:
  OpId grad_sync_of(int32_t stage) const {
    for (const Op& op : s_.ops) {
      if (op.kind == OpKind::sync && op.name == "grad_sync" && s_.stage_of(op) == stage) return op.id;
    }
    FSDPSIM_CHECK(false, "every Megatron-FSDP stage ends its backward with grad_sync");
    return OpId::none();
  }

  // The op that follows `op` on its stream (the optimizer step always follows grad_sync).
  OpId after(OpId op) const {
    for (int32_t id = op.value() + 1; id < static_cast<int32_t>(s_.ops.size()); ++id) {
      if (s_.ops[OpId(id)].stream == s_.ops[op].stream) return OpId(id);
    }
    FSDPSIM_CHECK(false, "grad_sync is followed by the optimizer step");
    return OpId::none();
  }

  OpId add_op(OpKind kind, int32_t stage, int32_t other, int32_t pp, OpId after_op) {
    const bool send = kind == OpKind::send;
    Op op;
    op.kind = kind;
    op.name = std::string(send ? "send" : "recv") + "_embedding_grad.s" + std::to_string(send ? stage : other) + "to" +
              std::to_string(send ? other : stage);
    op.phase = Phase::optim;
    op.stream = stage_stream(s_, send ? "embd_grad_send" : "embd_grad_recv", stage, pp);
    op.group = group_;
    op.deps = {after_op};
    return append_p2p(s_, std::move(op), bytes_, BufferCategory::workspace);
  }

  Schedule& s_;
  int64_t bytes_;
  GroupId group_;
};

// The ops in the order each stage's host reaches them. The writers above append a stage's sends and receives after
// its computes; the frameworks post a receive just before the first op that reads it and a send just after the op it
// waits on (Megatron-core's p2p_communication and torch.distributed.pipelining post both around each action, the
// embedding-gradient exchange follows grad_sync), so each receive moves to just before its first dependent and each
// send to just after its latest dependency. A send or receive with neither keeps its place.
std::vector<OpId> program_order(const Schedule& s) {
  const size_t n = s.ops.size();
  std::vector<std::vector<OpId>> before(n), after(n);
  std::vector<char> moved(n, 0);
  for (const Op& op : s.ops) {
    if (is_p2p(op.kind)) continue;
    for (const OpId d : op.deps) {
      if (s.ops[d].kind == OpKind::recv && !moved[d.index()]) {
        before[op.id.index()].push_back(d);
        moved[d.index()] = 1;
      }
    }
  }
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::send) continue;
    OpId latest;
    for (const OpId d : op.deps) {
      if (!is_p2p(s.ops[d].kind) && (!latest.valid() || d > latest)) latest = d;
    }
    if (!latest.valid()) continue;
    after[latest.index()].push_back(op.id);
    moved[op.id.index()] = 1;
  }
  std::vector<OpId> order;
  order.reserve(n);
  for (const Op& op : s.ops) {
    if (moved[op.id.index()]) continue;
    const size_t i = op.id.index();
    order.insert(order.end(), before[i].begin(), before[i].end());
    order.push_back(op.id);
    order.insert(order.end(), after[i].begin(), after[i].end());
  }
  return order;
}

// Every pipeline rank must hold a decoder layer: a rank without one has nothing to run between its receives and sends.
void check_every_rank_holds_a_layer(const LayerSplit& split, const FsdpConfig& config, int32_t pp, int32_t chunks,
                                    size_t layers) {
  for (int32_t rank = 0; rank < pp; ++rank) {
    int32_t held = 0;
    for (int32_t chunk = 0; chunk < chunks; ++chunk)
      held += split.layers_per_virtual_stage[static_cast<size_t>(
          virtual_stage_of(config.pipeline_schedule, pp, chunk, rank))];
    if (held > 0) continue;
    std::string counts;
    for (const int32_t n : split.layers_per_virtual_stage) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
    throw ConfigError(config.where("pp"), "pp",
                      "pipeline stage " + std::to_string(rank) + " of " + std::to_string(pp) +
                          " would hold no decoder layer (" + std::to_string(layers) + " layers, split as " + counts +
                          ")",
                      "use fewer stages: pp × virtual_pipeline_stages at most the " + std::to_string(layers) +
                          " layers, e.g. pp=" + std::to_string(layers / static_cast<size_t>(chunks)));
  }
}

// torchtitan refuses any pipeline degree above 1 with tied embeddings, even a V whose rank 0 holds both ends.
void refuse_tied_embeddings_under_torchtitan(const ModelSpec& model, const FsdpConfig& config, int32_t pp) {
  if (!model.tied_embeddings || config.implementation != Implementation::fsdp2) return;
  throw ConfigError(config.where("pp"), "pp",
                    "is " + std::to_string(pp) +
                        " with tied word embeddings (tied_embeddings: true), which "
                        "torchtitan refuses ('Weight tying is not supported with Pipeline Parallel.')",
                    "untie the embeddings (tied_embeddings: false), run pp=1, or use Megatron-FSDP, which keeps a "
                    "copy of the embedding on the last stage");
}

// The merged schedule before any stage is appended: the job's info and the whole model's units.
Schedule merged_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                         const std::vector<UnitCost>& all) {
  Schedule merged;
  merged.info = make_schedule_info(model, config, layout, all);
  merged.info.model_flops_per_gpu /= layout.pp;  // each GPU computes its stage's share; the mean over the job's GPUs
  merged.info.pipeline_stages = layout.pp;
  merged.info.virtual_stages = layout.virtual_stages;
  merged.info.pipeline_schedule = std::string(to_string(config.pipeline_schedule));
  for (const UnitCost& u : all) merged.units.push_back(UnitInfo{u.name, u.params()});
  return merged;
}

// One stage's schedule from the configured builder; a Megatron-FSDP stage narrows `budgets` to its own range.
Schedule build_stage(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                     const StagePlan& plan, std::vector<ActionOps>* actions, BudgetRange* budgets) {
  if (config.implementation == Implementation::fsdp2) return build_fsdp2_stage(model, config, layout, plan, actions);
  MegatronBuilder builder(model, config, layout, plan.units);
  Schedule stage = builder.build(plan, actions);
  if (budgets) budgets->intersect(builder.budget_range());
  return stage;
}

// Tied embeddings under Megatron: the word-embedding gradient exchange between the first stage and the last one
// (`output_rank`), which holds a copy of `word_embedding_elems` elements.
void add_embedding_grad_exchange(Schedule& merged, const FsdpConfig& config, const ParallelLayout& layout,
                                 int64_t word_embedding_elems, int32_t output_rank) {
  const int32_t pp = layout.pp;
  const GroupId embd = merged.groups.next_id();  // the first and the last stage
  merged.groups.push_back(Group{std::string(to_string(GroupRole::embd)), 2, (pp - 1) * layout.stage_ranks()});
  const int64_t local_elems = shards_grads(config.data_parallel_sharding_strategy)
                                  ? (word_embedding_elems + layout.dense_shard - 1) / layout.dense_shard
                                  : word_embedding_elems;
  EmbeddingGradExchange(merged, local_elems * dtype_bytes(main_grad_dtype(config)), embd).add(0, output_rank, pp);
}

}  // namespace

int64_t pipeline_message_bytes(const ModelSpec& model, const ParallelLayout& layout) {
  const int64_t tokens = layout.shape.micro_batch_size * layout.shape.seq_length / (int64_t{layout.cp} * layout.tp);
  return tokens * model.hidden_size * 2;
}

Schedule build_pipeline_schedule(const ModelSpec& model, const FsdpConfig& config, const ParallelLayout& layout,
                                 BudgetRange* budgets) {
  const int32_t pp = layout.pp;
  const int32_t chunks = layout.virtual_stages;
  const std::vector<UnitCost> all = derive_units(model, layout.shape);
  const LayerSplit split = split_or_count_ends(static_cast<int32_t>(all.size()) - 2, config);
  check_every_rank_holds_a_layer(split, config, pp, chunks, all.size() - 2);
  FsdpConfig resolved = config;  // the layout's chunk count (interleaving defaults to two chunks per rank)
  resolved.virtual_pipeline_stages = chunks;
  const std::vector<PipelineOrder> orders = pipeline_orders(resolved, layout.micro_batches);
  Schedule merged = merged_schedule(model, config, layout, all);
  std::vector<StageActions> actions(static_cast<size_t>(pp));
  // Tied embeddings: torchtitan refuses them with a pipeline; Megatron gives the last stage its own copy.
  const int32_t output_rank = rank_of_virtual_stage(config.pipeline_schedule, pp, pp * chunks - 1);
  const bool embedding_copy = model.tied_embeddings && output_rank != 0;
  refuse_tied_embeddings_under_torchtitan(model, config, pp);
  std::vector<UnitCost> last_stage_units = all;
  if (embedding_copy) last_stage_units.back() = output_with_embedding_copy(model, layout.shape);
  for (int32_t rank = 0; rank < pp; ++rank) {
    const StagePlan plan = stage_plan(rank == output_rank ? last_stage_units : all, split, config.pipeline_schedule,
                                      pp, chunks, rank, orders[static_cast<size_t>(rank)]);
    std::vector<ActionOps> stage_actions;
    const Schedule stage = build_stage(model, config, layout, plan, &stage_actions, budgets);
    if (rank == 0) merged.info.prefetch_depth = stage.info.prefetch_depth;
    const int32_t offset = append_stage(merged, stage, rank, pp, global_units(plan, all));
    for (ActionOps& a : stage_actions) a = {OpId(a.begin.value() + offset), OpId(a.end.value() + offset)};
    actions[static_cast<size_t>(rank)] = {std::move(stage_actions), merged.compute_stream(rank)};
  }
  const GroupId pp_group = merged.groups.next_id();
  merged.groups.push_back(Group{std::string(to_string(GroupRole::pp)), pp, layout.stage_ranks()});
  P2pWriter p2p(merged, config.pipeline_schedule, pp, chunks, pipeline_message_bytes(model, layout), pp_group,
                p2p_overlaps_compute(config));
  for (int32_t rank = 0; rank < pp; ++rank) {
    p2p.add_stage(rank, orders[static_cast<size_t>(rank)], actions[static_cast<size_t>(rank)]);
  }
  p2p.pair();
  if (embedding_copy) {
    const int64_t word_embedding_elems = last_stage_units.back().dense_params - all.back().dense_params;
    add_embedding_grad_exchange(merged, config, layout, word_embedding_elems, output_rank);
  }
  reorder_ops(merged, program_order(merged));
  return merged;
}

}  // namespace fsdpsim
