#pragma once
/// The pipeline's sends and receives on GPUs, decided once before the first step (pure C++, no CUDA: unit-tested
/// without a GPU). Each stage runs on its own GPU, so a send and its receive are an ncclSend and an ncclRecv on two
/// GPUs. NCCL runs the calls of one communicator in the order they were issued, whatever stream they are on; were all
/// of a pipeline's sends and receives on one communicator (the IR's pp group), a stage issuing its forward send before
/// its backward receive while its neighbour issues them the other way round would deadlock — which is why Megatron
/// batches each step's exchanges into one batch_isend_irecv. The IR instead gives every direction between two stages
/// its own pair of streams (builders/build_pipeline.cpp), and the simulator runs those streams independently;
/// so the executor gives each such pair — a channel — its own two-rank communicator. The k-th send of a channel's
/// sending stream then meets the k-th receive of its receiving stream, exactly the pairs the IR names, and nothing
/// orders one channel's calls behind another's.

#include <cstdint>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// One direction of traffic between two stages: the stream that sends on one and the stream that receives on the
/// other. Its communicators pair the two stages' GPUs that sit at the same place within their stage.
struct P2pChannel {
  StreamId send_stream;
  StreamId recv_stream;
  int32_t send_stage = 0;
  int32_t recv_stage = 0;
  GroupId group;  ///< the IR group its ops name (pp, or embd for the embedding-gradient exchange), for reports
  bool operator==(const P2pChannel&) const = default;
};

/// One send or receive on this rank.
struct P2pOpPlan {
  int32_t channel = -1;  ///< index into P2pPlan::channels; -1 for ops that are no send or receive
  int32_t peer = 0;      ///< the other end's rank in the channel's communicator (the sender is 0, the receiver 1)
  int64_t bytes = 0;     ///< what the send sends and its receive gets (sent as bytes: ncclInt8)
  BufferId buffer;       ///< the receive's buffer (the IR's received tensor), or none: the stream's scratch
  bool operator==(const P2pOpPlan&) const = default;
};

/// Every channel, every op's plan (by op id) and, by stream, the scratch a send reads (the IR does not say which
/// buffer holds the activation or gradient it sends; its bytes are what the simulator times).
struct P2pPlan {
  std::vector<P2pChannel> channels;
  IdVector<OpId, P2pOpPlan> ops;
  std::vector<int64_t> send_scratch_bytes;  ///< by stream
};

/// Plans the sends and receives. Throws ScheduleError, naming the ops, where a stream sends to (or receives from)
/// more than one stream, where a channel's k-th send is not the peer of its k-th receive (NCCL would pair them
/// anyway, with the wrong sizes or in a deadlock), or where a send's and its receive's sizes differ.
P2pPlan plan_p2p(const Schedule& schedule);

/// This rank's place in one channel: the ncclCommSplit colour (its place within its stage; -1, NCCL_SPLIT_NOCOLOR,
/// when its stage is neither end) and key (0 on the sending stage, 1 on the receiving one).
struct ChannelMembership {
  int32_t color = -1;
  int32_t rank = 0;
  bool operator==(const ChannelMembership&) const = default;
};
ChannelMembership channel_membership(const Schedule& schedule, const P2pChannel& channel, int32_t world_rank);

}  // namespace fsdpsim
