// NCCL 2.28's tuning constants, read from NVIDIA/nccl src/graph/tuning.cc, search.cc and topo.h (tags v2.17.1 ...
// v2.30.7); docs/architecture.md §6.4-§6.6 lists them.
#include "sim/nccl/nccl_tables.h"

#include <bit>
#include <cstdint>

#include "common/error.h"

namespace fsdpsim::nccl {
namespace {

// Intra-node per-channel speeds the graph search tries, high to low (src/graph/search.cc; docs/architecture.md §6.5).
// Ampere uses the generic list; SM90 and SM100 have their own.
constexpr std::array<double, 13> kGenericSpeeds{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
constexpr std::array<double, 11> kSm90Speeds{60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
constexpr std::array<double, 12> kSm100Speeds{90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};

ArchTables make_ampere() {
  ArchTables t;
  // NCCL counts an SM80 NVLink at 20.0 GB/s (topo.h); the datasheet link is 25 GB/s per direction (A100: 12 links,
  // 300 GB/s), so NCCL sees 20/25 = 0.8 of the datasheet rate: 12 × 20 = 240 (docs/architecture.md §6.5).
  t.nccl_link_fraction = 20.0 / 25.0;
  t.search_speeds = kGenericSpeeds;
  t.ll_max_single_node_gbps = 87.7;      // llMaxBws Ampere, one node (docs/architecture.md §6.6)
  t.ring_ll128_per_channel_gbps = 20.0;  // perChMaxRingLL128Bws Ampere
  t.tree_ll128_per_channel_gbps = {20.0, 20.0, 20.0};
  t.tree_per_channel_gbps = {24.0, 23.6, 17.8};
  t.nvls_tree_per_channel_gbps = {0, 0, 0};  // no NVLS before SM90 (docs/architecture.md §6.7)
  t.nvls_efficiency = 0;
  return t;
}

ArchTables make_hopper() {
  ArchTables t;
  // SM90 NVLink counted at 20.6 GB/s (20.0 up to 2.19) against a 25 GB/s datasheet link (H100: 18 links, 450 GB/s per
  // direction): 18 × 20.6 = 370.8 (docs/architecture.md §6.5).
  t.nccl_link_fraction = 20.6 / 25.0;
  t.search_speeds = kSm90Speeds;
  t.ll_max_single_node_gbps = 141.0;     // llMaxBws Hopper, one node, 2.23+ (docs/architecture.md §6.6)
  t.ring_ll128_per_channel_gbps = 36.7;  // perChMaxRingLL128Bws Hopper
  t.tree_ll128_per_channel_gbps = {36.7, 36.7, 29.0};
  t.tree_per_channel_gbps = {38.7, 41.4, 36.0};
  t.nvls_tree_per_channel_gbps = {0, 57.7, 45.5};  // perChMaxNVLSTreeBws Hopper (2.28)
  t.nvls_efficiency = 0.85;                        // nvlsEff Hopper (2.28; docs/architecture.md §6.6)
  return t;
}

ArchTables make_blackwell() {
  ArchTables t;
  // SM100 NVLink counted at 40.1 GB/s (40.0 in 2.27) against a 50 GB/s datasheet link (B200: 18 links, 900 GB/s per
  // direction): 18 × 40.1 = 721.8 (docs/architecture.md §6.5).
  t.nccl_link_fraction = 40.1 / 50.0;
  t.search_speeds = kSm100Speeds;
  t.ll_max_single_node_gbps = 282.0;     // llMaxBws Blackwell, one node
  t.ring_ll128_per_channel_gbps = 73.4;  // perChMaxRingLL128Bws Blackwell in 2.27-2.28.9 (docs/architecture.md §6.6)
  t.tree_ll128_per_channel_gbps = {55.6, 31.67, 20.0};
  t.tree_per_channel_gbps = {70.0, 42.8, 24.0};
  t.nvls_tree_per_channel_gbps = {0, 96.0, 43.8};  // perChMaxNVLSTreeBws Blackwell, 2.28.9 (>= 3 nodes: 43.8)
  t.nvls_efficiency = 0.74;                        // nvlsEff Blackwell (2.28)
  return t;
}

// AMD CDNA (MI300X / MI325X gfx942, MI350X / MI355X gfx950) under RCCL (ROCm/rccl src/graph/topo.h, tuning.cc; RCCL
// moved to ROCm/rocm-systems projects/rccl, tuning.cc at a4cd4445). RCCL counts an xGMI link at 48 GB/s
// (GFX94X_XGMI_WIDTH and GFX95X_XGMI_WIDTH 48.0) against 64 GB/s per direction on MI300X's datasheet link (x16 at
// 32 Gb/s per lane, 128 GB/s both ways): 0.75; against MI355X's ~76.8 GB/s (a secondary figure): 0.625. Either way
// 7 links × 48 = 336 GB/s on an 8-GPU node. RCCL's own tables replace NVIDIA's per-channel caps with ratios of the ring
// graph's bandwidth (bwRatio: LL and LL128 rings 0.08, Simple 1.0; trees 0.06 / 0.06 / 0.11 on up to two nodes, 0.59
// for Simple beyond), written here as per-channel caps over the 64 channels a ring uses (336 GB/s on an 8-GPU node:
// 0.08 × 336 / 64 = 0.42). Trees with Simple are skipped on one gfx942 / gfx950 node (tuning.cc), so their one-node
// cap is 0.
ArchTables make_cdna(double datasheet_link_gbps) {
  ArchTables t;
  t.nccl_link_fraction = 48.0 / datasheet_link_gbps;
  t.search_speeds = kGenericSpeeds;  // unused: xGMI rings are RCCL's fixed "rome model" rings, not searched
  t.ll_max_single_node_gbps = 0.08 * 336.0;
  t.ring_ll128_per_channel_gbps = 0.08 * 336.0 / 64.0;
  t.tree_ll128_per_channel_gbps = {0.06 * 336.0 / 64.0, 0.06 * 336.0 / 64.0, 0.06 * 336.0 / 64.0};
  t.tree_per_channel_gbps = {0.0, 0.11 * 336.0 / 64.0, 0.59 * 336.0 / 64.0};
  t.nvls_tree_per_channel_gbps = {0, 0, 0};  // no NVLS on AMD
  t.nvls_efficiency = 0;
  return t;
}

// Latency tables of 2.23-2.30 (docs/architecture.md §6.4), one row per NcclAlgo in enum order:
// ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat, p2p. p2p (all-to-all) reuses the ring row.
constexpr std::array<ProtoTriple, 8> kBaseLatencyUs{{
    {6.6, 14.0, 8.4},  // ring
    {6.8, 14.0, 8.4},  // tree
    {0, 0, 0},         // nvls
    {0, 0, 0},         // nvls_tree
    {0, 0, 0},         // collnet_direct
    {0, 0, 0},         // collnet_chain
    {0, 0, 8.0},       // pat (Simple only)
    {6.6, 14.0, 8.4},  // p2p: as ring
}};
constexpr std::array<ProtoTriple, 8> kNvlinkHopUs{{
    {0.6, 1.9, 3.4},   // ring
    {0.6, 1.25, 4.0},  // tree (4.0 since 2.23; 28 before)
    {0, 0, 25.0},      // nvls (23 in 2.19/2.20)
    {0, 0, 25.0},      // nvls_tree
    {0, 0, 3.7},       // collnet_direct
    {0, 0, 2.8},       // collnet_chain
    {0, 0, 4.0},       // pat
    {0.6, 1.9, 3.4},   // p2p: as ring
}};
constexpr std::array<ProtoTriple, 8> kNetHopUs{{
    {2.7, 4.0, 14.0},  // ring
    {5.0, 8.5, 14.0},  // tree
    {0, 0, 18.0},      // nvls
    {0, 0, 20.9},      // nvls_tree (14 in 2.19-2.28.3, 20.9 from 2.28.9)
    {0, 0, 31.0},      // collnet_direct
    {0, 0, 30.0},      // collnet_chain
    {0, 0, 14.0},      // pat
    {2.7, 4.0, 14.0},  // p2p: as ring
}};

// RCCL's latency tables for gfx942 and gfx950 (tuning_model_5 and tuning_model_6 share them; ROCm/rocm-systems
// projects/rccl/src/graph/tuning.cc @ a4cd4445): baseLat 12 / 12 / 17 us for ring and tree, hwLat of an xGMI hop (RCCL
// files xGMI as NVLink) and of a network hop. One deviation: RCCL writes 320 us for a ring Simple network hop, a figure
// that steers its choice towards tree below its ring correction thresholds rather than a time: 4 nodes × 8 MI300X run a
// 64 MiB all-reduce, 6 network steps of the ring, in 661.7 us in all (ROCm docs, prerequisite-system-validation.rst, 32
// ranks), less than 6 × 320. The model uses the tree row's Simple network hop (25 us) for it.
constexpr std::array<ProtoTriple, 8> kRcclBaseLatencyUs{{
    {12.0, 12.0, 17.0},  // ring
    {12.0, 12.0, 17.0},  // tree
    {0, 0, 0},           // nvls: none on AMD
    {0, 0, 0},           // nvls_tree
    {12.0, 12.0, 17.0},  // collnet_direct
    {12.0, 12.0, 17.0},  // collnet_chain
    {0, 0, 0},           // pat
    {12.0, 12.0, 17.0},  // p2p: as ring
}};
constexpr std::array<ProtoTriple, 8> kRcclXgmiHopUs{{
    {0.8, 0.8, 2.1},  // ring
    {0.9, 0.9, 2.3},  // tree
    {0, 0, 0},        // nvls
    {0, 0, 0},        // nvls_tree
    {0, 0, 0.9},      // collnet_direct
    {0, 0, 0.9},      // collnet_chain
    {0, 0, 0},        // pat
    {0.8, 0.8, 2.1},  // p2p: as ring
}};
constexpr std::array<ProtoTriple, 8> kRcclNetHopUs{{
    {9.5, 9.5, 25.0},    // ring (RCCL: 320 for Simple; see above)
    {10.5, 10.5, 25.0},  // tree
    {0, 0, 0},           // nvls
    {0, 0, 0},           // nvls_tree
    {0, 0, 10.5},        // collnet_direct
    {0, 0, 10.5},        // collnet_chain
    {0, 0, 25.0},        // pat (RCCL: 320, as ring Simple)
    {9.5, 9.5, 25.0},    // p2p: as ring
}};

// Tree all-reduce correction per power-of-two size bucket from 64 B (log2(size / 64) = 0) upwards, per protocol
// (NVIDIA/nccl src/graph/tuning.cc, treeCorrectionFactor; docs/architecture.md §6.6: dips to 0.4-0.6 between 64 KB
// and 4 MB).
constexpr std::array<std::array<double, 22>, 3> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9},
}};

std::size_t algo_index(NcclAlgo algo) {
  return static_cast<std::size_t>(algo);
}

}  // namespace

const ArchTables& arch_tables(GpuArch arch) {
  static const ArchTables ampere = make_ampere();
  static const ArchTables hopper = make_hopper();
  static const ArchTables blackwell = make_blackwell();
  static const ArchTables cdna3 = make_cdna(64.0);
  static const ArchTables cdna4 = make_cdna(76.8);
  switch (arch) {
    case GpuArch::cdna3:
      return cdna3;
    case GpuArch::cdna4:
      return cdna4;
    case GpuArch::ampere:
      return ampere;
    case GpuArch::hopper:
      return hopper;
    case GpuArch::blackwell:
      return blackwell;
  }
  FSDPSIM_CHECK(false, "unknown GPU architecture");
  return hopper;
}

double ll_max_multi_node_gbps(GpuArch arch, int32_t domains) {
  if (is_amd(arch)) return arch_tables(arch).ll_max_single_node_gbps;
  // llMaxBws rows chosen by CPU vendor across nodes: Intel/other 39.0 (2 nodes), 20.4 (>= 3);
  // docs/architecture.md §6.6.
  return domains == 2 ? 39.0 : 20.4;
}

const ProtoTriple& base_latency_us(GpuArch arch, NcclAlgo algo) {
  return (is_amd(arch) ? kRcclBaseLatencyUs : kBaseLatencyUs).at(algo_index(algo));
}
const ProtoTriple& nvlink_hop_latency_us(GpuArch arch, NcclAlgo algo) {
  return (is_amd(arch) ? kRcclXgmiHopUs : kNvlinkHopUs).at(algo_index(algo));
}
const ProtoTriple& net_hop_latency_us(GpuArch arch, NcclAlgo algo) {
  return (is_amd(arch) ? kRcclNetHopUs : kNetHopUs).at(algo_index(algo));
}

double net_overhead_us(NcclProto proto) {
  // getNetOverhead: 1.0 us on Intel x86 and ARM (2.0 on AMD), × 3 for Simple (docs/architecture.md §6.4).
  return proto == NcclProto::simple ? 3.0 : 1.0;
}

double tree_correction_factor(GpuArch arch, NcclProto proto, int64_t size_bytes) {
  // RCCL's correction tables (tree and, across nodes, ring) steer its choice: ring Simple across nodes is scaled by 0.1
  // up to 128 MiB, yet 4 × 8 MI300X reach 190 GB/s with it at 64 MiB (ROCm docs, 32 ranks). The model picks by time and
  // applies none of them on AMD.
  if (is_amd(arch)) return 1.0;
  if (size_bytes < 64) return kTreeCorrection[proto_index(proto)][0];
  const int bucket = std::bit_width(static_cast<uint64_t>(size_bytes >> 6)) - 1;  // log2i(size / 64)
  if (bucket >= static_cast<int>(kTreeCorrection[0].size())) return 1.0;
  return kTreeCorrection[proto_index(proto)][static_cast<std::size_t>(bucket)];
}

}  // namespace fsdpsim::nccl
