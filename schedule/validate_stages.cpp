// The rules of pipeline parallelism: streams, buffers and dependencies on their own stage, sends paired with recvs.
#include <string>

#include "schedule/validate_rules.h"

namespace fsdpsim::validation {
namespace {

void check_peer(const Schedule& s, const Op& op, Problems& problems) {
  if (!is_p2p(op.kind)) {
    if (op.peer.valid())
      problems.report("p2p-pairs", problems.describe_op(op.id) + " is no send or recv but names a peer");
    return;
  }
  if (!s.ops.contains(op.peer)) {
    problems.report("p2p-pairs", problems.describe_op(op.id) + " is a " + std::string(to_string(op.kind)) +
                                     " without its matching op (set 'peer' to the id of the " +
                                     (op.kind == OpKind::send ? "recv" : "send") + " on the other stage)");
    return;
  }
  const Op& peer = s.ops[op.peer];
  const OpKind expected = op.kind == OpKind::send ? OpKind::recv : OpKind::send;
  if (peer.kind != expected || peer.peer != op.id) {
    problems.report("p2p-pairs", problems.describe_op(op.id) + " names " + problems.describe_op(peer.id) +
                                     " as its peer, which is not a " + std::string(to_string(expected)) +
                                     " naming it back (every send has one recv)");
    return;
  }
  if (s.stage_of(peer) == s.stage_of(op))
    problems.report("p2p-pairs", problems.describe_op(op.id) + " and its peer " + problems.describe_op(peer.id) +
                                     " are on the same stage " + std::to_string(s.stage_of(op)));
  if (op.kind == OpKind::send && op.send_bytes != peer.recv_bytes)
    problems.report("p2p-pairs", problems.describe_op(op.id) + " sends " + std::to_string(op.send_bytes) + " B but " +
                                     problems.describe_op(peer.id) + " receives " + std::to_string(peer.recv_bytes) +
                                     " B");
}

}  // namespace

// Pipeline parallelism: every stream and buffer on a stage the schedule has, every send paired with one recv of the
// same size on another stage, and every op using only buffers of its own stage's GPU and waiting only for ops of
// its own stage (another GPU is reached through a send and its receive: an event of one GPU's stream cannot hold
// another GPU's stream in a separate process).
void check_pipeline_stages(const Schedule& s, Problems& problems) {
  const int32_t stages = s.info.pipeline_stages;
  const auto on_stage = [&](int32_t stage) { return stage >= 0 && stage < stages; };
  for (const Stream& st : s.streams) {
    if (!on_stage(st.stage))
      problems.report("stages", "stream '" + st.name + "' is on stage " + std::to_string(st.stage) +
                                    " of a schedule with " + std::to_string(stages) + " pipeline stage(s)");
  }
  for (const Buffer& b : s.buffers) {
    if (!on_stage(b.stage))
      problems.report("stages", problems.describe_buffer(b.id) + " is on stage " + std::to_string(b.stage) +
                                    " of a schedule with " + std::to_string(stages) + " pipeline stage(s)");
  }
  if (!problems.empty()) return;
  for (const Op& op : s.ops) {
    const int32_t stage = s.stage_of(op);
    for (const auto* list : {&op.allocs, &op.frees, &op.reads, &op.writes}) {
      for (const BufferId b : *list) {
        if (s.buffers[b].stage != stage)
          problems.report("stages", problems.describe_op(op.id) + " runs on stage " + std::to_string(stage) +
                                        " but uses " + problems.describe_buffer(b) + " of stage " +
                                        std::to_string(s.buffers[b].stage));
      }
    }
    for (const OpId dep : op.deps) {
      if (s.ops.contains(dep) && s.stage_of(s.ops[dep]) != stage)
        problems.report("stages", problems.describe_op(op.id) + " runs on stage " + std::to_string(stage) +
                                      " but waits for " + problems.describe_op(dep) + " of stage " +
                                      std::to_string(s.stage_of(s.ops[dep])) +
                                      " (depend on a recv whose send follows that op)");
    }
    check_peer(s, op, problems);
  }
}

}  // namespace fsdpsim::validation
