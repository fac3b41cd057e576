// How an NVLS or NVLSTree kernel moves a call in chunks: the part of a medium-size call's time that NCCL's tuning
// model (latency + bytes / bandwidth) leaves out (docs/architecture.md §6.9).
//
// NCCL's enqueue (computeColl in src/enqueue.cc, 2.19 to 2.28) splits an NVLS call over ops = channels × heads
// concurrent (channel, head) pieces and moves each in chunks of at most nvlsChunkSize (128 KiB); for smaller calls it
// shrinks the chunk: 64 KiB when S < 64·ops·128 KiB, 32 KiB when S < 8·ops·64 KiB, 16 KiB when S < 2·ops·32 KiB
// (and at most 32 KiB across domains when the NVLS all-reduce bandwidth is below 150 GB/s). NVLSTree starts from
// 128 KiB (64 KiB at >= 4 domains) and takes 64 KiB when S < 4·ops·C, 32 KiB when S < ops·C. On 8×B200 (24 channels
// × 8 heads) that is 64 KiB chunks from 96 MiB to 1.5 GiB and 32 KiB from 12 MiB to 96 MiB.
//
// Each chunk step costs its bytes plus a fixed handshake (the multimem loads and stores of a step are fenced and
// flagged across all GPUs of the domain), and the scatter → reduce-broadcast → gather pipeline takes a few chunk times
// to fill. NCCL's bandwidth tables describe large calls, whose chunks are the largest (128 KiB; 64 KiB for NVLSTree at
// >= 4 domains); smaller chunks pay the handshake on fewer bytes, and a call of few chunks pays the fill on little
// work. That is why measured NVLS busbw keeps rising up to several GiB (8×B200 AR: 255 GB/s at 16 MiB, 568 at
// 128 MiB, 723 at 1 GiB, 846 at 16 GiB; docs/architecture.md §6.9) where the tuning model is at 92 % of its peak by
// 128 MiB (763 GB/s).
#include <algorithm>
#include <cstdint>

#include "common/units.h"
#include "sim/nccl/nccl_model.h"

namespace fsdpsim::nccl {
namespace {

// nvlsChunkSize: NCCL_NVLS_CHUNKSIZE's default, 128 KiB (src/init.cc).
constexpr double kNvlsChunkBytes = 128.0 * kKiB;
// The pipeline's two constants are the GPU profile's (nvls_chunk_handshake_ns, nvls_pipeline_fill_chunks), fitted per
// architecture with the test data held apart (tests/sim/nvls_pipeline_test.cpp, collective_reference_test.cpp):
// - Hopper 4.15 us and 1.15 chunk steps, on one 8xH100 all_reduce_perf sweep from 4 MiB to 16 GiB (NVIDIA's
//   dgxc-benchmarking sample); ml-engineering's 8xH200 sweep is held out.
// - Blackwell 5.55 us and 2.6 chunk steps, on two 8xB200 rows only (1 GiB and 128 MiB, ml-engineering;
//   docs/architecture.md §6.9); 8xB200 16 MiB, NVL72 and GB200 2 racks are held out.
// Read physically: a few microseconds of cross-GPU flag handshake per chunk step, and a fill of one to three steps
// of the scatter → reduce-broadcast → gather pipeline. One shared pair fits neither sweep to 10 %: Blackwell's 1 GiB
// call runs at 85 % of its peak, Hopper's at 97 %.

// NCCL's largest chunk for this algorithm and placement: what its largest calls use, and so what its bandwidth
// tables describe.
double max_chunk_bytes(const Call& call, const Candidate& c) {
  if (c.algo == NcclAlgo::nvls_tree) {
    return call.group.domains >= 4 ? 64 * kKiB : kNvlsChunkBytes;  // NCCL_NVLSTREE_MAX_CHUNKSIZE default (-2)
  }
  return call.group.domains > 1 && c.bus_bw_gbps < 150 ? 32 * kKiB : kNvlsChunkBytes;
}

// NCCL's chunk for this call's size (computeColl).
double chunk_bytes(const Call& call, const Candidate& c, double ops, double chunk) {
  const double size = static_cast<double>(call.request.size_bytes);
  if (c.algo == NcclAlgo::nvls_tree) {
    if (size < 4 * ops * chunk && chunk > 64 * kKiB) chunk = 64 * kKiB;
    if (size < ops * chunk && chunk > 32 * kKiB) chunk = 32 * kKiB;
    return chunk;
  }
  if (size < 64 * ops * chunk && chunk > 64 * kKiB) chunk = 64 * kKiB;
  if (size < 8 * ops * chunk && chunk > 32 * kKiB) chunk = 32 * kKiB;
  if (size < 2 * ops * chunk && chunk > 16 * kKiB) chunk = 16 * kKiB;
  return chunk;
}

}  // namespace

ChunkPipeline chunk_pipeline(const Call& call, const Candidate& c) {
  const CollectiveRequest& r = call.request;
  const bool nvls_family = c.algo == NcclAlgo::nvls || c.algo == NcclAlgo::nvls_tree;
  // Registered NVLS all-gather / reduce-scatter move 512 KiB staging steps (buffSize / NCCL_STEPS) instead, for which
  // no measurement exists to check a pipeline against: they keep the table's rate.
  const bool staged = r.registered && (r.kind == OpKind::all_gather || r.kind == OpKind::reduce_scatter);
  const GpuProfile& gpu = call.topology->gpu;
  const double handshake_us = static_cast<double>(gpu.nvls_chunk_handshake_ns) / 1000.0;
  const double fill_steps = gpu.nvls_pipeline_fill_chunks;
  if (handshake_us == 0 && fill_steps == 0) return {};  // the profile models NCCL's tuning alone
  if (!nvls_family || staged || r.size_bytes <= 0 || c.bus_bw_gbps <= 0 || call.bus_bytes <= 0) return {};
  const double size = static_cast<double>(r.size_bytes);
  const double heads = std::min(call.group.ranks_per_domain, kNvlsHeads);
  const double ops = std::max(1, c.sms) * heads;
  const double largest = max_chunk_bytes(call, c);
  const double chunk = chunk_bytes(call, c, ops, largest);
  // The table's rate per piece, in bytes of S per microsecond, and the raw rate at which the largest chunks reach it
  // handshakes included (at most twice the table's rate, should the handshake exceed half a chunk's time).
  const double table_us = call.bus_bytes / (c.bus_bw_gbps * 1e3);  // the whole call at the table's busbw
  const double piece_rate = size / table_us / ops;
  const double largest_us = largest / piece_rate;
  const double raw_rate = largest / std::max(largest_us - handshake_us, largest_us / 2);
  // Chunk steps per piece (a call smaller than one chunk per piece still takes one, with fewer bytes).
  const double steps = std::max(1.0, size / (ops * chunk));
  const double step_us = size / (ops * steps) / raw_rate + handshake_us;
  ChunkPipeline p;
  p.chunk_bytes = static_cast<int64_t>(chunk);
  p.fill_us = fill_steps * step_us;
  p.bandwidth_factor = table_us / (steps * step_us);
  return p;
}

}  // namespace fsdpsim::nccl
