// CPU offload as the node allows it: the GPUs behind one host link share it, and a node's host memory bounds what
// its GPUs can offload at once.
#include <gtest/gtest.h>

#include "builders/builder.h"
#include "model/model.h"
#include "report/report.h"
#include "sim/engine.h"

namespace fsdpsim {
namespace {

struct Offloaded {
  Schedule schedule;
  Report report;
  TimeNs first_offload_ns = 0;  // duration of the first offload copy of the steady step
};

Offloaded run(const Topology& topology) {
  FsdpConfig config;
  apply_override(config, "cpu_offloading_activations=true");
  apply_override(config, "seq_length=8192");
  Offloaded o;
  o.schedule = build_schedule(model_preset("llama3-8b"), config, topology.gpus_per_node);
  const RunRecord run = run_schedule(o.schedule, topology, SimOptions{});
  o.report = make_report(o.schedule, topology, run);
  for (const Op& op : o.schedule.ops) {
    if (op.name.rfind("offload_d2h", 0) != 0) continue;
    const OpTiming& t = run.steps.back().ops[op.id];
    o.first_offload_ns = t.end_ns - t.start_ns;
    break;
  }
  return o;
}

TEST(HostOffload, TheGpusBehindOneHostLinkShareIt) {
  Topology alone = topology_preset("dgx-h100-ndr");
  alone.gpus_per_host_link = 1;
  Topology shared = alone;
  shared.gpus_per_host_link = 2;  // DGX H100: two GPUs behind each PCIe Gen5 switch uplink
  EXPECT_DOUBLE_EQ(shared.host_bw_per_gpu_bytes_per_s(), 32e9);
  const Offloaded a = run(alone), s = run(shared);
  ASSERT_GT(a.first_offload_ns, 0);
  // The same bytes at half the bandwidth: the copy takes about twice as long (its launch latency is not halved).
  EXPECT_NEAR(static_cast<double>(s.first_offload_ns) / static_cast<double>(a.first_offload_ns), 2.0, 0.05);
  EXPECT_EQ(s.report.gpus_per_host_link, 2);
}

TEST(HostOffload, AllTheNodesGpusOffloadIntoItsHostMemory) {
  Topology t = topology_preset("dgx-h100-ndr");
  const Offloaded fits = run(t);
  // One micro-batch's offloaded activations per GPU, times the node's 8 GPUs.
  int64_t offloaded = 0;
  for (const Op& op : fits.schedule.ops) {
    if (op.name.rfind("offload_d2h", 0) == 0 && op.micro_batch == 0) offloaded += op.send_bytes;
  }
  ASSERT_GT(offloaded, 0);
  EXPECT_EQ(fits.report.host_offload_bytes_per_gpu, offloaded);
  EXPECT_EQ(fits.report.host_offload_bytes_per_node, 8 * offloaded);
  EXPECT_EQ(fits.report.host_memory_bytes, int64_t{2'000'000'000'000});  // DGX H100: 2 TB
  EXPECT_NE(fits.report.memory.fit, MemoryFit::out_of_memory);
  // A node with less host memory than its GPUs offload: out of memory, and the report says why.
  t.host_memory_bytes = 8 * offloaded - 1;
  const Offloaded short_of_host = run(t);
  EXPECT_EQ(short_of_host.report.memory.fit, MemoryFit::out_of_memory);
  EXPECT_TRUE(short_of_host.report.oom);
  EXPECT_NE(short_of_host.report.oom_reason.find("host memory"), std::string::npos) << short_of_host.report.oom_reason;
  EXPECT_NE(verdict_text(short_of_host.report.memory).find("host memory per node"), std::string::npos);
  // Unstated host memory is not checked.
  t.host_memory_bytes = 0;
  EXPECT_NE(run(t).report.memory.fit, MemoryFit::out_of_memory);
}

}  // namespace
}  // namespace fsdpsim
