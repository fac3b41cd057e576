// Memory snapshots in PyTorch's format: the predicted step written as one reads back to the prediction's peaks and
// categories, PyTorch-shaped snapshots are reduced with the blocks held before the trace counted, and allocations are
// classified from their frames.
#include "report/memory_snapshot.h"

#include <gtest/gtest.h>

#include "common/pickle.h"
#include "schedule/build/builder.h"
#include "schedule/model/model.h"
#include "sim/engine.h"
#include "tests/support/error_of.h"
#include "topologies/hardware.h"

namespace fsdpsim {
namespace {

PickleValue frames(std::vector<std::pair<std::string, std::string>> named) {  // (filename, name), innermost first
  PickleList list;
  for (auto& [file, name] : named) {
    list.push_back(pickle_dict({{pickle_string("filename"), pickle_string(file)},
                                {pickle_string("line"), pickle_int(1)},
                                {pickle_string("name"), pickle_string(name)}}));
  }
  return pickle_list(std::move(list));
}

PickleValue event(const std::string& action, int64_t addr, int64_t size, int64_t time_us,
                  PickleValue f = pickle_list({})) {
  return pickle_dict({{pickle_string("action"), pickle_string(action)},
                      {pickle_string("addr"), pickle_int(addr)},
                      {pickle_string("size"), pickle_int(size)},
                      {pickle_string("time_us"), pickle_int(time_us)},
                      {pickle_string("frames"), std::move(f)}});
}

void expect_round_trip(const std::vector<std::string>& sets) {
  FsdpConfig config;
  for (const auto& s : sets) apply_override(config, s);
  const Topology t = topology_preset("dgx-h100-ndr");
  const Schedule s = build_schedule(model_preset("llama3-8b"), config, t.gpus_per_node);
  const RunRecord run = run_schedule(s, t, SimOptions{});
  const Report predicted = make_report(s, t, run);
  const std::string bytes = write_pickle(predicted_memory_snapshot(s, run));
  const SnapshotMemory m = read_memory_snapshot(read_pickle(bytes, "p.pickle"), "p.pickle");
  // Blocks are the allocator-rounded requests: the allocated peak is the prediction's less the bytes of blocks the
  // allocator hands out whole beyond the rounded request (the breakdown's allocator_rounding); reserved is the
  // predicted peak by construction.
  EXPECT_EQ(m.peak_allocated_bytes,
            predicted.peak_allocated_bytes - predicted.memory_breakdown.at("allocator_rounding"));
  EXPECT_EQ(m.peak_reserved_bytes, predicted.peak_reserved_bytes);
  for (const auto& [category, bytes_at_peak] : m.peak_categories) {
    const auto p = predicted.memory_breakdown.find(category);
    ASSERT_NE(p, predicted.memory_breakdown.end()) << category;
    EXPECT_EQ(bytes_at_peak, p->second) << category;
  }
  EXPECT_GT(m.trace_events, 100);
  EXPECT_EQ(m.allocated_before_trace_bytes, 0);  // the writer allocates what is live at the step's start first
}

TEST(MemorySnapshot, PredictedSnapshotReadsBackToThePrediction) {
  expect_round_trip({"global_batch_size=16"});
  expect_round_trip({"implementation=fsdp2", "global_batch_size=16"});
  expect_round_trip({"pp=2", "global_batch_size=16"});  // the fullest stage's memory
}

TEST(MemorySnapshot, BlocksHeldBeforeTheTraceCountFromItsStart) {
  // A PyTorch-shaped snapshot: a 100-byte block allocated before recording started and still held (only in the
  // segments), another 50 freed during the trace without its allocation in it; the trace allocates 30 then 70.
  PickleValue block = pickle_dict({{pickle_string("address"), pickle_int(1000)},
                                   {pickle_string("size"), pickle_int(100)},
                                   {pickle_string("requested_size"), pickle_int(100)},
                                   {pickle_string("state"), pickle_string("active_allocated")},
                                   {pickle_string("frames"), frames({{"torch/optim/adam.py", "_init_group"}})}});
  PickleValue segment = pickle_dict({{pickle_string("device"), pickle_int(0)},
                                     {pickle_string("address"), pickle_int(0)},
                                     {pickle_string("total_size"), pickle_int(2048)},
                                     {pickle_string("blocks"), pickle_list({block})}});
  PickleList trace{event("free_completed", 2000, 50, 10, frames({{"model.py", "forward"}})),
                   event("alloc", 3000, 30, 20, frames({{"model.py", "forward"}})),
                   event("segment_alloc", 4096, 1024, 25), event("alloc", 4000, 70, 30)};
  PickleValue snapshot = pickle_dict({{pickle_string("segments"), pickle_list({segment})},
                                      {pickle_string("device_traces"), pickle_list({pickle_list(std::move(trace))})}});
  const SnapshotMemory m = read_memory_snapshot(snapshot, "s.pickle");
  EXPECT_EQ(m.allocated_before_trace_bytes, 150);
  // 150 at the start, 100 after the free, 130, then 200 at t = 30 us (20 us after the first event).
  EXPECT_EQ(m.peak_allocated_bytes, 200);
  EXPECT_DOUBLE_EQ(m.peak_allocated_time_us, 20);
  EXPECT_EQ(m.peak_categories.at("optimizer_state"), 100);
  EXPECT_EQ(m.peak_categories.at("activation"), 30);
  EXPECT_EQ(m.peak_categories.at("unclassified"), 70);
  // 2048 reserved at the end, 1024 of them added during the trace: 1024 at its start, 2048 at the peak.
  EXPECT_EQ(m.peak_reserved_bytes, 2048);
}

TEST(MemorySnapshot, FramesClassifyByTheInnermostFunctionThatSaysWhatTheMemoryIsFor) {
  EXPECT_EQ(classify_frames(frames({{"fsdpsim", "fsdpsim.category=workspace"}})), "workspace");
  EXPECT_EQ(classify_frames(frames({{"torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py", "foreach_all_gather"},
                                    {"model.py", "forward"}})),
            "gathered_param");
  EXPECT_EQ(
      classify_frames(frames({{"_fsdp_collectives.py", "foreach_reduce"}, {"torch/autograd/graph.py", "backward"}})),
      "unsharded_grad");
  EXPECT_EQ(classify_frames(frames({{"torch/autograd/__init__.py", "backward"}})), "weight_grad");
  // Megatron-FSDP's fetch_bucket allocates weight and gradient buckets alike: its caller says which.
  const std::string buffer = "megatron_fsdp/param_and_grad_buffer.py";
  EXPECT_EQ(classify_frames(frames({{buffer, "fetch_bucket"}, {buffer, "all_gather_params"}})), "gathered_param");
  EXPECT_EQ(classify_frames(frames({{buffer, "fetch_bucket"}, {buffer, "_bucket_group_gradient_reduce"}})),
            "unsharded_grad");
  EXPECT_EQ(classify_frames(frames({{"torch/optim/adamw.py", "_init_group"}})), "optimizer_state");
  EXPECT_EQ(classify_frames(frames({{"train.py", "main"}})), "unclassified");
}

TEST(MemorySnapshot, APickleThatIsNotASnapshotSaysSo) {
  EXPECT_HAS(error_of([] { (void)read_memory_snapshot(pickle_list({}), "x.pickle"); }),
             "x.pickle: 'segments': the pickle is not a dict");
  EXPECT_HAS(error_of([] { (void)read_memory_snapshot(pickle_dict({}), "x.pickle"); }),
             "no 'segments' list: this is not a CUDA memory snapshot");
}

}  // namespace
}  // namespace fsdpsim
