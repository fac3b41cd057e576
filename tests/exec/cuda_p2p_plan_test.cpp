// The CUDA backend's plan of a pipeline's sends and receives (p2p_plan.h), which needs no GPU: one two-rank
// communicator per direction between two stages, pairs that NCCL matches in stream order, each rank's place in each
// channel, and the schedules the executor refuses because NCCL would pair their calls wrongly.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "exec/cuda/nccl/p2p_plan.h"
#include "tests/support/shaped_schedule.h"

namespace fsdpsim {
namespace {

struct PipelineCase {
  std::string name;
  std::vector<std::string> sets;
  bool tied_embeddings = false;
  size_t channels = 0;  // derived in the comment of each case
};

void PrintTo(const PipelineCase& c, std::ostream* out) {
  *out << c.name;
}

Schedule build(const PipelineCase& c) {
  return build_shaped_schedule(c.sets, llama_shaped_yaml(32, c.tied_embeddings));
}

std::vector<PipelineCase> cases() {
  return {
      // Activations 0 -> 1, gradients 1 -> 0.
      {"megatron_1f1b_pp2", {"pp=2"}, false, 2},
      // Chunk c of rank 1 sends on to chunk c + 1 on rank 0: both directions carry activations and gradients.
      {"megatron_interleaved_pp2x2",
       {"pp=2", "virtual_pipeline_stages=2", "pipeline_schedule=interleaved_1f1b"},
       false,
       4},
      // Three neighbours, both directions.
      {"megatron_gpipe_pp4", {"pp=4", "pipeline_schedule=gpipe"}, false, 6},
      // The same six, and the embedding gradient between stages 0 and 3 both ways.
      {"megatron_1f1b_pp4_tied", {"pp=4"}, true, 8},
      // The V on two ranks: virtual stages 0, 1, 2, 3 on ranks 0, 1, 1, 0; 1 -> 2 stays on rank 1, so activations go
      // 0 -> 1 and 1 -> 0 (2 -> 3), gradients the reverse, each on its own stream.
      {"fsdp2_zbv_pp2", {"implementation=fsdp2", "pp=2", "pipeline_schedule=zbv", "global_batch_size=8"}, false, 4},
      {"fsdp2_dualpipev_pp2",
       {"implementation=fsdp2", "pp=2", "pipeline_schedule=dualpipev", "global_batch_size=16"},
       false,
       4},
  };
}

class CudaP2pPlanOfEveryPipeline : public ::testing::TestWithParam<PipelineCase> {};

TEST_P(CudaP2pPlanOfEveryPipeline, EachDirectionIsOneChannelWhoseCallsPairInStreamOrder) {
  const Schedule s = build(GetParam());
  const P2pPlan plan = plan_p2p(s);
  EXPECT_EQ(plan.channels.size(), GetParam().channels);
  std::set<StreamId> senders, receivers;
  for (const P2pChannel& c : plan.channels) {
    EXPECT_NE(c.send_stage, c.recv_stage);
    EXPECT_EQ(s.streams[c.send_stream].stage, c.send_stage);
    EXPECT_EQ(s.streams[c.recv_stream].stage, c.recv_stage);
    EXPECT_TRUE(senders.insert(c.send_stream).second) << "a stream sends on one channel";
    EXPECT_TRUE(receivers.insert(c.recv_stream).second) << "a stream receives on one channel";
  }
  // Walk each channel's two streams in op order: the k-th send's peer is the k-th receive, as NCCL pairs them.
  std::vector<std::vector<OpId>> sends(plan.channels.size()), recvs(plan.channels.size());
  int64_t scratch = 0;
  for (const Op& op : s.ops) {
    const P2pOpPlan& p = plan.ops[op.id];
    if (!is_p2p(op.kind)) {
      EXPECT_EQ(p.channel, -1);
      continue;
    }
    ASSERT_GE(p.channel, 0);
    const P2pChannel& c = plan.channels[static_cast<size_t>(p.channel)];
    const bool sending = op.kind == OpKind::send;
    EXPECT_EQ(op.stream, sending ? c.send_stream : c.recv_stream);
    EXPECT_EQ(p.peer, sending ? 1 : 0);
    EXPECT_EQ(p.bytes, sending ? op.send_bytes : op.recv_bytes);
    if (sending) {
      EXPECT_FALSE(p.buffer.valid());
      scratch = std::max(scratch, p.bytes);
      EXPECT_GE(plan.send_scratch_bytes[op.stream.index()], p.bytes);
    } else {
      ASSERT_TRUE(p.buffer.valid());
      EXPECT_EQ(p.buffer, op.allocs.front());  // the received tensor the receive allocates
    }
    (sending ? sends : recvs)[static_cast<size_t>(p.channel)].push_back(op.id);
  }
  EXPECT_GT(scratch, 0);
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    ASSERT_EQ(sends[c].size(), recvs[c].size());
    for (size_t k = 0; k < sends[c].size(); ++k) EXPECT_EQ(s.ops[sends[c][k]].peer, recvs[c][k]);
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, CudaP2pPlanOfEveryPipeline, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PipelineCase>& p) { return p.param.name; });

TEST(CudaP2pPlan, EachRankJoinsTheChannelsOfItsStageAtItsPlaceInTheStage) {
  const Schedule s = build({"gpipe_pp4", {"pp=4", "pipeline_schedule=gpipe"}});
  ASSERT_EQ(s.info.pipeline_stages, 4);
  ASSERT_EQ(s.info.world_size, 8);  // two GPUs per stage: stage k holds ranks 2k and 2k + 1
  const P2pPlan plan = plan_p2p(s);
  const auto one_to_two = std::find_if(plan.channels.begin(), plan.channels.end(),
                                       [](const P2pChannel& ch) { return ch.send_stage == 1 && ch.recv_stage == 2; });
  ASSERT_NE(one_to_two, plan.channels.end());
  EXPECT_EQ(channel_membership(s, *one_to_two, 2), (ChannelMembership{0, 0}));   // stage 1, first GPU: the sender
  EXPECT_EQ(channel_membership(s, *one_to_two, 3), (ChannelMembership{1, 0}));   // stage 1, second GPU
  EXPECT_EQ(channel_membership(s, *one_to_two, 5), (ChannelMembership{1, 1}));   // stage 2, second GPU: a receiver
  EXPECT_EQ(channel_membership(s, *one_to_two, 0), (ChannelMembership{-1, 0}));  // stage 0: neither end
  EXPECT_EQ(channel_membership(s, *one_to_two, 7), (ChannelMembership{-1, 0}));  // stage 3
}

TEST(CudaP2pPlan, PairsThatNcclWouldMatchOutOfOrderAreRefused) {
  Schedule s = build({"1f1b_pp2", {"pp=2"}});
  // The first two activation sends of stage 0 trade receives: NCCL would hand micro-batch 1's receive the bytes of
  // micro-batch 0.
  std::vector<OpId> fwd_sends;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::send && op.phase == Phase::fwd) fwd_sends.push_back(op.id);
  }
  ASSERT_GE(fwd_sends.size(), 2u);
  Op& a = s.ops[fwd_sends[0]];
  Op& b = s.ops[fwd_sends[1]];
  const OpId a_recv = a.peer, b_recv = b.peer;
  a.peer = b_recv;
  b.peer = a_recv;
  s.ops[a_recv].peer = b.id;
  s.ops[b_recv].peer = a.id;
  try {
    (void)plan_p2p(s);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("'" + a.name + "'"), std::string::npos) << text;
    EXPECT_NE(text.find("NCCL pairs a channel's sends and receives in stream order"), std::string::npos) << text;
  }
}

TEST(CudaP2pPlan, AStreamThatSendsToTwoStreamsIsRefused) {
  Schedule s = build({"gpipe_pp4", {"pp=4", "pipeline_schedule=gpipe"}});
  // Move one of stage 1's activation sends onto stage 0's sending stream: that stream would then feed stage 1 and
  // stage 2, and one communicator cannot pair it with both.
  const auto stage_send = [&](int32_t stage) {
    return std::find_if(s.ops.begin(), s.ops.end(), [&](const Op& op) {
      return op.kind == OpKind::send && op.phase == Phase::fwd && s.stage_of(op) == stage;
    });
  };
  const auto first = stage_send(0);
  const auto moved = stage_send(1);
  ASSERT_NE(first, s.ops.end());
  ASSERT_NE(moved, s.ops.end());
  moved->stream = first->stream;
  try {
    (void)plan_p2p(s);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("'" + moved->name + "'"), std::string::npos) << text;
    EXPECT_NE(text.find("each direction between two stages needs its own pair of streams"), std::string::npos) << text;
  }
}

TEST(CudaP2pPlan, ASendWhoseReceiveTakesOtherBytesIsRefused) {
  Schedule s = build({"1f1b_pp2", {"pp=2"}});
  const auto send = std::find_if(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.kind == OpKind::send; });
  ASSERT_NE(send, s.ops.end());
  s.ops[send->peer].recv_bytes += 2;
  EXPECT_THROW((void)plan_p2p(s), ScheduleError);
}

}  // namespace
}  // namespace fsdpsim
