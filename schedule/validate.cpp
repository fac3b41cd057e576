#include "schedule/validate.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/error.h"
#include "common/limits.h"
#include "schedule/schedule_graph.h"

namespace fsdpsim {
namespace {

class Checker {
 public:
  explicit Checker(const Schedule& s) : s_(s) {}

  std::vector<std::string> run() {
    check_ids();
    check_references();
    check_totals();
    if (!problems_.empty()) return problems_;  // later rules index by these references
    check_collective_bytes();
    check_pipeline_stages();
    if (!problems_.empty()) return problems_;  // the graph pairs sends with recvs by these peers
    const std::vector<OpId> order = issue_order(s_);
    if (order.size() != s_.ops.size()) {  // a cycle: find one to name it (the rarer, slower search)
      const std::vector<OpId> cycle = find_cycle(s_);
      FSDPSIM_CHECK(!cycle.empty(), "no issue order, yet no dependency cycle");
      std::string path;
      for (size_t i = 0; i < cycle.size(); ++i) path += (i ? " -> " : "") + describe_op(cycle[i]);
      report("acyclic",
             "dependency cycle through deps, stream order and send/recv rendezvous (a pipeline that "
             "deadlocks): " +
                 path);
      return problems_;
    }
    const HappensBefore hb(s_, order);
    check_buffer_lifetimes(hb);
    check_gradient_reductions(hb);
    return problems_;
  }

 private:
  std::string describe_op(OpId id) const { return "op " + std::to_string(id.value()) + " '" + s_.ops[id].name + "'"; }
  std::string describe_buffer(BufferId id) const {
    return "buffer " + std::to_string(id.value()) + " '" + s_.buffers[id].name + "'";
  }
  void report(const std::string& rule, const std::string& text) { problems_.push_back(rule + ": " + text); }

  void check_ids() {
    for (size_t i = 0; i < s_.ops.size(); ++i) {
      if (s_.ops[i].id.index() != i) {
        report("dense-ids", "op at position " + std::to_string(i) + " has id " + std::to_string(s_.ops[i].id.value()) +
                                " (ids must be 0, 1, 2, ... in order)");
      }
    }
    for (size_t i = 0; i < s_.buffers.size(); ++i) {
      if (s_.buffers[i].id.index() != i) {
        report("dense-ids", "buffer at position " + std::to_string(i) + " has id " +
                                std::to_string(s_.buffers[i].id.value()) + " (ids must be 0, 1, 2, ... in order)");
      }
      if (s_.buffers[i].size_bytes < 0) report("sizes", "buffer " + std::to_string(i) + " has a negative size");
    }
  }

  template <class IdT>
  void check_id_list(const Op& op, const std::vector<IdT>& ids, const char* field, size_t limit, const char* what) {
    for (const IdT id : ids) {
      if (!id.valid() || id.index() >= limit) {
        report("references", "op " + std::to_string(op.id.value()) + " '" + op.name + "' " + field + " names " + what +
                                 " " + std::to_string(id.value()) + ", which does not exist");
      }
    }
  }

  void check_references() {
    const size_t ops = s_.ops.size();
    const size_t buffers = s_.buffers.size();
    for (const Op& op : s_.ops) {
      const auto who = [&op] { return "op " + std::to_string(op.id.value()) + " '" + op.name + "'"; };
      if (!s_.streams.contains(op.stream)) report("references", who() + " is on no known stream");
      if (op.unit < -1 || op.unit >= static_cast<int32_t>(s_.units.size()))
        report("references", who() + " names unit " + std::to_string(op.unit) + ", which does not exist");
      if (is_collective(op.kind) && !s_.groups.contains(op.group)) {
        report("references", who() + " is a collective without a valid group");
      }
      if (is_p2p(op.kind) && !s_.groups.contains(op.group)) {
        report("references", who() + " is a " + std::string(to_string(op.kind)) +
                                 " without a valid group (name the pipeline group, e.g. 'pp')");
      }
      if (!is_collective(op.kind) && !is_p2p(op.kind) && op.group != GroupId::none())
        report("references", who() + " is not a collective but names a group");
      check_id_list(op, op.allocs, "allocs", buffers, "buffer");
      check_id_list(op, op.frees, "frees", buffers, "buffer");
      check_id_list(op, op.reads, "reads", buffers, "buffer");
      check_id_list(op, op.writes, "writes", buffers, "buffer");
      check_id_list(op, op.deps, "deps", ops, "op");
      for (const OpId d : op.deps) {
        if (d == op.id) report("references", who() + " depends on itself");
      }
      if (op.send_bytes < 0 || op.recv_bytes < 0 || op.bytes_touched < 0)
        report("sizes", who() + " has a negative byte count");
      else if (op.class_bytes.unvectorized < 0 || op.class_bytes.reduction < 0 ||
               op.class_bytes.unvectorized > op.bytes_touched - op.class_bytes.reduction) {
        report("sizes", who() + " has unvectorized_bytes + reduction_bytes (" +
                            std::to_string(op.class_bytes.unvectorized) + " + " +
                            std::to_string(op.class_bytes.reduction) + ") outside 0.." +
                            std::to_string(op.bytes_touched) + ", its bytes_touched (they are a part of it)");
      }
    }
  }

  // The step's totals within common/limits.h, so that the simulator's and the reports' 64-bit sums cannot
  // overflow (a file can hold any counts; a built schedule is within them by check_job_limits()).
  void check_totals() {
    if (static_cast<int64_t>(s_.ops.size()) > limits::kMaxScheduleOps ||
        static_cast<int64_t>(s_.streams.size()) > limits::kMaxStreams) {
      report("limits", std::to_string(s_.ops.size()) + " ops on " + std::to_string(s_.streams.size()) +
                           " streams is beyond what fsdpsim models (at most " +
                           std::to_string(limits::kMaxScheduleOps) + " ops and " + std::to_string(limits::kMaxStreams) +
                           " streams)");
    }
    long double buffer_bytes = 0, op_bytes = 0, flops = 0, outputs = 0;
    // FLOPs are one GPU's work: a pipeline's schedule holds one rank of every stage, each its own GPU.
    std::map<int32_t, long double> stage_flops, stage_outputs;
    for (const Buffer& b : s_.buffers) buffer_bytes += static_cast<long double>(b.size_bytes);
    for (const Op& op : s_.ops) {
      op_bytes += static_cast<long double>(op.send_bytes) + static_cast<long double>(op.recv_bytes) +
                  static_cast<long double>(op.bytes_touched);
      const int32_t stage = op.stream.valid() && op.stream.index() < s_.streams.size() ? s_.stage_of(op) : 0;
      for (const Gemm& g : op.gemms) {
        const long double out = static_cast<long double>(g.m) * static_cast<long double>(g.n) *
                                static_cast<long double>(g.batch);  // the simulator tiles these (even when k = 0)
        outputs += out;
        flops += 2.0L * out * static_cast<long double>(g.k);
        stage_outputs[stage] += out;
        stage_flops[stage] += 2.0L * out * static_cast<long double>(g.k);
      }
    }
    const auto over = [&](const char* what, long double total, int64_t limit) {
      if (total <= static_cast<long double>(limit)) return;
      std::ostringstream text;
      text << what << " add up to " << static_cast<double>(total) << ", beyond what fsdpsim models (at most " << limit
           << " per step)";
      report("limits", text.str());
    };
    over("the buffers' sizes", buffer_bytes, limits::kMaxStepBytes);
    over("the ops' byte counts", op_bytes, limits::kMaxStepBytes);
    const auto busiest = [](const std::map<int32_t, long double>& per_stage) {
      long double most = 0;
      for (const auto& [stage, total] : per_stage) most = std::max(most, total);
      return most;
    };
    over("the GEMMs' FLOPs of one stage", busiest(stage_flops), limits::kMaxStepFlopsPerGpu);
    over("the GEMMs' output elements of one stage", busiest(stage_outputs), limits::kMaxStepFlopsPerGpu);
    over("the GEMMs' FLOPs", flops, limits::kMaxScheduleFlops);
    over("the GEMMs' output elements", outputs, limits::kMaxScheduleFlops);
  }

  void check_collective_bytes() {
    for (const Op& op : s_.ops) {
      if (!is_collective(op.kind)) continue;
      const int64_t n = s_.groups[op.group].size;
      bool ok = true;
      // recv == send × n without the product, which overflows for a file's absurd byte counts.
      if (op.kind == OpKind::all_gather) ok = op.recv_bytes % n == 0 && op.recv_bytes / n == op.send_bytes;
      if (op.kind == OpKind::reduce_scatter) ok = op.send_bytes % n == 0 && op.send_bytes / n == op.recv_bytes;
      if (op.kind == OpKind::all_reduce) ok = op.send_bytes == op.recv_bytes;
      if (!ok) {
        report("collective-bytes", describe_op(op.id) + ": " + std::string(to_string(op.kind)) + " over a group of " +
                                       std::to_string(n) + " sends " + std::to_string(op.send_bytes) +
                                       " B and receives " + std::to_string(op.recv_bytes) +
                                       " B per rank, which do not match");
      }
    }
  }

  // Pipeline parallelism: every stream and buffer on a stage the schedule has, every send paired with one recv of the
  // same size on another stage, and every op using only buffers of its own stage's GPU and waiting only for ops of
  // its own stage (another GPU is reached through a send and its receive: an event of one GPU's stream cannot hold
  // another GPU's stream in a separate process).
  void check_pipeline_stages() {
    const int32_t stages = s_.info.pipeline_stages;
    const auto on_stage = [&](int32_t stage) { return stage >= 0 && stage < stages; };
    for (const Stream& st : s_.streams) {
      if (!on_stage(st.stage))
        report("stages", "stream '" + st.name + "' is on stage " + std::to_string(st.stage) + " of a schedule with " +
                             std::to_string(stages) + " pipeline stage(s)");
    }
    for (const Buffer& b : s_.buffers) {
      if (!on_stage(b.stage))
        report("stages", describe_buffer(b.id) + " is on stage " + std::to_string(b.stage) + " of a schedule with " +
                             std::to_string(stages) + " pipeline stage(s)");
    }
    if (!problems_.empty()) return;
    for (const Op& op : s_.ops) {
      const int32_t stage = s_.stage_of(op);
      for (const auto* list : {&op.allocs, &op.frees, &op.reads, &op.writes}) {
        for (const BufferId b : *list) {
          if (s_.buffers[b].stage != stage)
            report("stages", describe_op(op.id) + " runs on stage " + std::to_string(stage) + " but uses " +
                                 describe_buffer(b) + " of stage " + std::to_string(s_.buffers[b].stage));
        }
      }
      for (const OpId dep : op.deps) {
        if (s_.ops.contains(dep) && s_.stage_of(s_.ops[dep]) != stage)
          report("stages", describe_op(op.id) + " runs on stage " + std::to_string(stage) + " but waits for " +
                               describe_op(dep) + " of stage " + std::to_string(s_.stage_of(s_.ops[dep])) +
                               " (depend on a recv whose send follows that op)");
      }
      check_peer(op);
    }
  }

  void check_peer(const Op& op) {
    if (!is_p2p(op.kind)) {
      if (op.peer.valid()) report("p2p-pairs", describe_op(op.id) + " is no send or recv but names a peer");
      return;
    }
    if (!s_.ops.contains(op.peer)) {
      report("p2p-pairs", describe_op(op.id) + " is a " + std::string(to_string(op.kind)) +
                              " without its matching op (set 'peer' to the id of the " +
                              (op.kind == OpKind::send ? "recv" : "send") + " on the other stage)");
      return;
    }
    const Op& peer = s_.ops[op.peer];
    const OpKind expected = op.kind == OpKind::send ? OpKind::recv : OpKind::send;
    if (peer.kind != expected || peer.peer != op.id) {
      report("p2p-pairs", describe_op(op.id) + " names " + describe_op(peer.id) + " as its peer, which is not a " +
                              std::string(to_string(expected)) + " naming it back (every send has one recv)");
      return;
    }
    if (s_.stage_of(peer) == s_.stage_of(op))
      report("p2p-pairs", describe_op(op.id) + " and its peer " + describe_op(peer.id) + " are on the same stage " +
                              std::to_string(s_.stage_of(op)));
    if (op.kind == OpKind::send && op.send_bytes != peer.recv_bytes)
      report("p2p-pairs", describe_op(op.id) + " sends " + std::to_string(op.send_bytes) + " B but " +
                              describe_op(peer.id) + " receives " + std::to_string(peer.recv_bytes) + " B");
  }

  void check_buffer_lifetimes(const HappensBefore& hb) {
    const size_t nb = s_.buffers.size();
    IdVector<BufferId, std::vector<OpId>> allocs(nb), frees(nb), readers(nb), writers(nb);
    for (const Op& op : s_.ops) {
      for (const BufferId b : op.allocs) allocs[b].push_back(op.id);
      for (const BufferId b : op.frees) frees[b].push_back(op.id);
      for (const BufferId b : op.reads) readers[b].push_back(op.id);
      for (const BufferId b : op.writes) writers[b].push_back(op.id);
    }
    for (size_t i = 0; i < nb; ++i) {
      const BufferId b(static_cast<int32_t>(i));
      if (s_.buffers[i].persistent) {
        if (!allocs[i].empty() || !frees[i].empty()) {
          report("buffer-lifetime", describe_buffer(b) + " is persistent but an op allocates or frees it");
        }
        continue;
      }
      if (allocs[i].size() != 1 || frees[i].size() != 1) {
        report("buffer-lifetime", describe_buffer(b) + " is allocated " + std::to_string(allocs[i].size()) +
                                      " times and freed " + std::to_string(frees[i].size()) +
                                      " times (a transient buffer is allocated once and freed once per step, "
                                      "so memory at the end equals memory at the start)");
        continue;
      }
      check_uses(hb, b, allocs[i].front(), frees[i].front(), readers[i], writers[i]);
    }
  }

  void check_uses(const HappensBefore& hb, BufferId b, OpId alloc, OpId free, const std::vector<OpId>& readers,
                  const std::vector<OpId>& writers) {
    if (alloc != free && !hb.before(alloc, free)) {
      report("buffer-lifetime", describe_buffer(b) + " may be freed by " + describe_op(free) + " before " +
                                    describe_op(alloc) + " allocates it");
    }
    const auto in_lifetime = [&](OpId op) {
      return (op == alloc || hb.before(alloc, op)) && (op == free || hb.before(op, free));
    };
    for (const auto* users : {&readers, &writers}) {
      for (const OpId op : *users) {
        if (!in_lifetime(op)) {
          report("use-after-free", describe_op(op) + " uses " + describe_buffer(b) + " outside its lifetime (" +
                                       describe_op(alloc) + " allocates it, " + describe_op(free) +
                                       " frees it; add a dependency)");
        }
      }
    }
    for (const OpId r : readers) {
      bool written = false;
      for (const OpId w : writers) written = written || (w != r && hb.before(w, r));
      if (!written) {
        report("read-before-write", describe_op(r) + " reads " + describe_buffer(b) +
                                        " but no op that writes it is guaranteed to finish first (missing dependency "
                                        "on the op that fills it, e.g. its all-gather)");
      }
    }
  }

  void check_gradient_reductions(const HappensBefore& hb) {
    // Per pipeline stage: a unit's ops live on the stage that holds it.
    std::vector<StreamId> compute_of_stage;
    for (int32_t stage = 0; stage < s_.info.pipeline_stages; ++stage)
      compute_of_stage.push_back(s_.compute_stream(stage));
    const auto is_compute = [&](const Op& op) {
      return op.stream == compute_of_stage[static_cast<size_t>(s_.stage_of(op))];
    };
    std::map<std::pair<int32_t, int32_t>, std::vector<OpId>> backward_ops;  // (unit, micro-batch) → bwd computes
    for (const Op& op : s_.ops) {
      if (op.kind == OpKind::compute && op.phase == Phase::bwd && op.unit >= 0 && is_compute(op)) {
        backward_ops[{op.unit, op.micro_batch}].push_back(op.id);
      }
    }
    // Over the tensor-parallel group a backward reduce-scatter reduces an activation gradient, not the unit's weight
    // gradients: Userbuffers (tp_comm_overlap) runs it beside the unit's backward.
    const std::string tp_group(to_string(GroupRole::tp));
    for (const Op& op : s_.ops) {
      const bool activation_gradient = op.group.valid() && s_.groups[op.group].name == tp_group;
      const bool grad_reduction = (op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_reduce) &&
                                  op.phase == Phase::bwd && op.unit >= 0 && !is_compute(op) && !activation_gradient;
      if (!grad_reduction) continue;
      const auto it = backward_ops.find({op.unit, op.micro_batch});
      if (it == backward_ops.end()) continue;
      for (const OpId b : it->second) {
        if (!hb.before(b, op.id)) {
          report("reduce-after-backward", describe_op(op.id) + " reduces unit " + std::to_string(op.unit) +
                                              "'s gradients but may start before " + describe_op(b) + " finishes");
        }
      }
    }
  }

  const Schedule& s_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> validate(const Schedule& schedule) {
  return Checker(schedule).run();
}

void validate_or_throw(const Schedule& schedule, const std::string& context) {
  std::vector<std::string> problems = validate(schedule);
  if (!problems.empty()) throw ScheduleError(context + " breaks the schedule IR's invariants", std::move(problems));
}

}  // namespace fsdpsim
