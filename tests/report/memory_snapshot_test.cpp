// Memory snapshots in PyTorch's format: the predicted step written as one reads back to the prediction's peaks and
// categories, PyTorch-shaped snapshots are reduced with the blocks held before the trace counted, and allocations are
// classified from their frames.
#include "report/memory_snapshot.h"

#include <gtest/gtest.h>

#include "builders/builder.h"
#include "common/pickle.h"
#include "model/model.h"
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
  const PickleValue written = predicted_memory_snapshot(s, run);
  // PyTorch's _memory_viz.py `stats` lays each segment's blocks end to end and asserts that they sum to its
  // total_size (it refused fsdpsim's snapshot when they did not: PyTorch 2.11 on an H100 machine,
  // bench/results/2026-11-26-h100-frameworks.md).
  for (const PickleValue& segment : *written.find("segments")->list()) {
    int64_t sum = 0;
    for (const PickleValue& block : *segment.find("blocks")->list()) sum += *block.find("size")->integer();
    EXPECT_EQ(sum, *segment.find("total_size")->integer());
  }
  const std::string bytes = write_pickle(written);
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
  // A PyTorch-shaped snapshot: a 1024-byte block allocated before recording started and still held (only in the
  // segments), another of 512 freed during the trace (free_requested, then free_completed) without its allocation
  // in it; the trace allocates 1536 bytes and then asks for 2000, which the allocator's counters count as the
  // 2048-byte block it gets (the trace records requests).
  PickleValue block = pickle_dict({{pickle_string("address"), pickle_int(100000)},
                                   {pickle_string("size"), pickle_int(1024)},
                                   {pickle_string("requested_size"), pickle_int(1024)},
                                   {pickle_string("state"), pickle_string("active_allocated")},
                                   {pickle_string("frames"), frames({{"torch/optim/adam.py", "_init_group"}})}});
  PickleValue segment = pickle_dict({{pickle_string("device"), pickle_int(0)},
                                     {pickle_string("address"), pickle_int(0)},
                                     {pickle_string("total_size"), pickle_int(8192)},
                                     {pickle_string("blocks"), pickle_list({block})}});
  PickleList trace{event("free_requested", 200000, 512, 10, frames({{"model.py", "forward"}})),
                   event("free_completed", 200000, 512, 15, frames({{"model.py", "forward"}})),
                   event("alloc", 300000, 1536, 20, frames({{"model.py", "forward"}})),
                   event("segment_alloc", 409600, 4096, 25), event("alloc", 400000, 2000, 30)};
  PickleValue snapshot = pickle_dict({{pickle_string("segments"), pickle_list({segment})},
                                      {pickle_string("device_traces"), pickle_list({pickle_list(std::move(trace))})}});
  const SnapshotMemory m = read_memory_snapshot(snapshot, "s.pickle");
  EXPECT_EQ(m.allocated_before_trace_bytes, 1536);
  // 1536 at the start, 1024 after the free (its completion changes nothing), 2560, then 4608 at t = 30 us (20 us
  // after the first event).
  EXPECT_EQ(m.peak_allocated_bytes, 4608);
  EXPECT_DOUBLE_EQ(m.peak_allocated_time_us, 20);
  EXPECT_EQ(m.peak_categories.at("optimizer_state"), 1024);
  EXPECT_EQ(m.peak_categories.at("activation"), 1536);
  EXPECT_EQ(m.peak_categories.at("workspace"), 2048);  // no frame at all: the autograd engine's thread
  // 8192 reserved at the end, 4096 of them added during the trace: 4096 at its start, 8192 at the peak.
  EXPECT_EQ(m.peak_reserved_bytes, 8192);
}

// The stacks below are those of real recordings (bench/results/2026-11-26-h100-frameworks, PyTorch 2.11), innermost
// first, shortened to the frames that decide.
TEST(MemorySnapshot, FramesClassifyByTheInnermostFunctionThatSaysWhatTheMemoryIsFor) {
  EXPECT_EQ(classify_frames(frames({{"fsdpsim", "fsdpsim.category=workspace"}})), "workspace");
  const std::string fsdp = "torch/distributed/fsdp/_fully_shard/";
  // FSDP2's all-gather: the flat output is staging, the per-parameter storages are the gathered weights.
  EXPECT_EQ(classify_frames(frames({{fsdp + "_fsdp_collectives.py", "allocate"},
                                    {fsdp + "_fsdp_collectives.py", "foreach_all_gather"},
                                    {fsdp + "_fsdp_param_group.py", "unshard"}})),
            "comm_staging");
  EXPECT_EQ(classify_frames(frames({{fsdp + "_fsdp_param.py", "alloc_storage"},
                                    {fsdp + "_fsdp_param.py", "alloc_all_gather_outputs"},
                                    {fsdp + "_fsdp_collectives.py", "foreach_all_gather_copy_out"}})),
            "gathered_param");
  // foreach_reduce allocates its input (line 522 in PyTorch 2.11) before its output (line 537).
  const SnapshotFrameContext context{522};
  const auto reduce_at = [&](int64_t line) {
    PickleValue f = frames({{fsdp + "_fsdp_collectives.py", "allocate"}, {fsdp + "_fsdp_collectives.py", "x"}});
    PickleDict& reduce = std::get<PickleDict>(std::get<PickleList>(f.value)[1].value);
    for (PickleEntry& e : reduce) {
      if (*e.first.string() == "name") e.second = pickle_string("foreach_reduce");
      if (*e.first.string() == "line") e.second = pickle_int(line);
    }
    return classify_frames(f, context);
  };
  EXPECT_EQ(reduce_at(522), "unsharded_grad");
  EXPECT_EQ(reduce_at(537), "grad_shard");
  EXPECT_EQ(
      classify_frames(frames({{"torch/nn/modules/module.py", "_apply"}, {"torch/nn/modules/module.py", "to_empty"}})),
      "main_weight");
  // Megatron-FSDP's fetch_bucket allocates weight and gradient buckets alike: its caller says which.
  const std::string buffer = "megatron_fsdp/param_and_grad_buffer.py";
  EXPECT_EQ(classify_frames(frames({{buffer, "fetch_bucket"}, {buffer, "async_bucket_gather"}})), "gathered_param");
  EXPECT_EQ(classify_frames(frames({{buffer, "fetch_bucket"}, {buffer, "main_grad_getter"}})), "unsharded_grad");
  EXPECT_EQ(classify_frames(frames({{buffer, "_init_each_parameter_group_buffers"}})), "param_shard");
  // torch.optim: the moments once, in _init_group; the rest of step() is temporaries.
  EXPECT_EQ(classify_frames(frames({{"torch/optim/adam.py", "_init_group"}})), "optimizer_state");
  EXPECT_EQ(classify_frames(frames({{"torch/optim/adam.py", "_multi_tensor_adam"}})), "workspace");
  EXPECT_EQ(classify_frames(frames({{"torch/nn/modules/linear.py", "forward"}})), "activation");
  // Autograd: no Python frame; with C++ frames, the weight's half of a matmul backward is its gradient.
  EXPECT_EQ(classify_frames(pickle_list({})), "workspace");
  EXPECT_EQ(classify_frames(frames({{"??", "torch::autograd::VariableType::(anonymous namespace)::mm(...)"},
                                    {"??", "torch::autograd::generated::details::mm_mat2_backward(...)"}})),
            "weight_grad");
  EXPECT_EQ(classify_frames(frames({{"??", "torch::autograd::generated::details::mm_mat1_backward(...)"}})),
            "workspace");
  EXPECT_EQ(classify_frames(frames({{"train.py", "main"}})), "unclassified");
}

TEST(MemorySnapshot, APickleThatIsNotASnapshotSaysSo) {
  EXPECT_HAS(error_of([] { (void)read_memory_snapshot(pickle_list({}), "x.pickle"); }),
             "x.pickle: 'segments': the pickle is not a dict");
  EXPECT_HAS(error_of([] { (void)read_memory_snapshot(pickle_dict({}), "x.pickle"); }),
             "no 'segments' list: this is not a CUDA memory snapshot");
}

// Sizes are byte counts a device can hold: a negative one, or one past the caching allocator's 2^60 limit (what the
// fuzzer found: an alloc event of 2^62 bytes), is named, as is a sum of sizes past int64.
TEST(MemorySnapshot, SizesNoDeviceHoldsAreRefused) {
  const auto with_trace = [](PickleList trace) {
    PickleValue segment = pickle_dict({{pickle_string("device"), pickle_int(0)},
                                       {pickle_string("total_size"), pickle_int(8192)},
                                       {pickle_string("blocks"), pickle_list({})}});
    return pickle_dict({{pickle_string("segments"), pickle_list({segment})},
                        {pickle_string("device_traces"), pickle_list({pickle_list(std::move(trace))})}});
  };
  EXPECT_HAS(error_of([&] {
               (void)read_memory_snapshot(with_trace({event("alloc", 100, int64_t{1} << 62, 10)}), "s.pickle");
             }),
             "s.pickle: 'size': an alloc event has 'size' = 4611686018427387904, which is no size in bytes");
  EXPECT_HAS(
      error_of([&] { (void)read_memory_snapshot(with_trace({event("segment_free", 100, -4096, 10)}), "s.pickle"); }),
      "a segment event has 'size' = -4096, which is no size in bytes");
  PickleList many;
  for (int i = 0; i < 9; ++i) many.push_back(event("segment_alloc", 100 + i, (int64_t{1} << 60) - 1, 10 + i));
  EXPECT_HAS(error_of([&] { (void)read_memory_snapshot(with_trace(std::move(many)), "s.pickle"); }),
             "its sizes add up past 2^63 bytes");
}

}  // namespace
}  // namespace fsdpsim
