#include "exec/cuda/nccl/p2p_plan.h"

#include <algorithm>
#include <map>
#include <string>

#include "common/error.h"
#include "exec/stage_runs.h"

namespace fsdpsim {
namespace {

std::string named(const Op& op) {
  return std::string(to_string(op.kind)) + " '" + op.name + "' (op " + std::to_string(op.id.value()) + ")";
}

[[noreturn]] void reject(const std::string& why) {
  throw ScheduleError("the CUDA executor cannot run the pipeline's sends and receives", {why});
}

// The channel of a send and its receive, added on first sight; every stream belongs to at most one channel.
class ChannelTable {
 public:
  explicit ChannelTable(const Schedule& s) : s_(s) {}

  int32_t channel_of(const Op& send, const Op& recv) {
    const P2pChannel wanted{send.stream, recv.stream, s_.stage_of(send), s_.stage_of(recv), send.group};
    if (wanted.send_stage == wanted.recv_stage) {
      reject(named(send) + " and its receive " + named(recv) + " are both on stage " +
             std::to_string(wanted.send_stage) + ": a stage's GPU passes nothing to itself (rebuild the schedule)");
    }
    const auto sending = by_send_.find(send.stream);
    const auto receiving = by_recv_.find(recv.stream);
    if (sending != by_send_.end() && channels_[static_cast<size_t>(sending->second)] == wanted) return sending->second;
    if (sending != by_send_.end() || receiving != by_recv_.end()) {
      const P2pChannel& other =
          channels_[static_cast<size_t>(sending != by_send_.end() ? sending->second : receiving->second)];
      reject(named(send) + " on stream '" + s_.streams[send.stream].name + "' sends to stream '" +
             s_.streams[recv.stream].name + "', but stream '" + s_.streams[other.send_stream].name +
             "' already sends to stream '" + s_.streams[other.recv_stream].name +
             "': each direction between two stages needs its own pair of streams, so that NCCL pairs its calls "
             "in stream order");
    }
    const auto index = static_cast<int32_t>(channels_.size());
    channels_.push_back(wanted);
    by_send_[send.stream] = index;
    by_recv_[recv.stream] = index;
    return index;
  }

  [[nodiscard]] std::vector<P2pChannel> take() { return std::move(channels_); }

 private:
  const Schedule& s_;
  std::vector<P2pChannel> channels_;
  std::map<StreamId, int32_t> by_send_, by_recv_;
};

}  // namespace

P2pPlan plan_p2p(const Schedule& schedule) {
  P2pPlan plan;
  plan.ops.resize(schedule.ops.size());
  plan.send_scratch_bytes.assign(schedule.streams.size(), 0);
  ChannelTable table(schedule);
  // Ops run on a stream in id order: each channel's sends and receives, in that order, must pair one to one.
  std::vector<std::vector<OpId>> sends, recvs;
  for (const Op& op : schedule.ops) {
    if (!is_p2p(op.kind)) continue;
    if (!schedule.ops.contains(op.peer) || schedule.ops[op.peer].kind == op.kind ||
        !is_p2p(schedule.ops[op.peer].kind) || schedule.ops[op.peer].peer != op.id) {
      reject(named(op) + " names no matching " + (op.kind == OpKind::send ? "receive" : "send") +
             " as its peer (run validation)");
    }
    const bool sending = op.kind == OpKind::send;
    const Op& send = sending ? op : schedule.ops[op.peer];
    const Op& recv = sending ? schedule.ops[op.peer] : op;
    if (send.send_bytes != recv.recv_bytes || send.send_bytes <= 0) {
      reject(named(send) + " sends " + std::to_string(send.send_bytes) + " bytes but its receive " + named(recv) +
             " takes " + std::to_string(recv.recv_bytes) + " (rebuild the schedule)");
    }
    const int32_t channel = table.channel_of(send, recv);
    const auto c = static_cast<size_t>(channel);
    if (sends.size() <= c) {
      sends.resize(c + 1);
      recvs.resize(c + 1);
    }
    (sending ? sends : recvs)[c].push_back(op.id);
    P2pOpPlan& p = plan.ops[op.id];
    p.channel = channel;
    p.peer = sending ? 1 : 0;
    p.bytes = send.send_bytes;
    if (sending) {
      int64_t& scratch = plan.send_scratch_bytes[op.stream.index()];
      scratch = std::max(scratch, p.bytes);
    } else {
      const auto fits = std::find_if(op.writes.begin(), op.writes.end(), [&](BufferId b) {
        return schedule.buffers.contains(b) && schedule.buffers[b].size_bytes >= p.bytes;
      });
      if (fits == op.writes.end()) {
        reject(named(op) + " writes no buffer of " + std::to_string(p.bytes) + " bytes to receive into");
      }
      p.buffer = *fits;
    }
  }
  for (size_t c = 0; c < sends.size(); ++c) {
    for (size_t k = 0; k < std::max(sends[c].size(), recvs[c].size()); ++k) {
      const bool paired = k < sends[c].size() && k < recvs[c].size() && schedule.ops[sends[c][k]].peer == recvs[c][k];
      if (paired) continue;
      const Op& at = schedule.ops[k < sends[c].size() ? sends[c][k] : recvs[c][k]];
      reject(named(at) + " is call " + std::to_string(k + 1) + " on its channel, but the other end's call " +
             std::to_string(k + 1) +
             " is not its peer: NCCL pairs a channel's sends and receives in stream order (list each "
             "direction's sends in the order their receives are listed)");
    }
  }
  plan.channels = table.take();
  return plan;
}

ChannelMembership channel_membership(const Schedule& schedule, const P2pChannel& channel, int32_t world_rank) {
  const int32_t stage = stage_of_rank(schedule, world_rank);
  const int32_t place = world_rank % ranks_per_stage(schedule);
  if (stage == channel.send_stage) return ChannelMembership{place, 0};
  if (stage == channel.recv_stage) return ChannelMembership{place, 1};
  return ChannelMembership{};
}

}  // namespace fsdpsim
