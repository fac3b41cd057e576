#include "sim/op_costs.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/limits.h"
#include "sim/compute_model.h"
#include "sim/id_range.h"

namespace fsdpsim {
namespace {

bool buffers_registered(const Schedule& s, const Op& op) {
  bool any = false;
  for (const auto* list : {&op.reads, &op.writes}) {
    for (const BufferId b : *list) {
      if (!s.buffers[b].nccl_registered) return false;
      any = true;
    }
  }
  return any;
}

OpCost collective_op_cost(const Schedule& s, const Op& op, const Topology& topology,
                          const std::vector<GroupPlacement>& placements) {
  CollectiveRequest request;
  request.kind = op.kind;
  request.size_bytes = collective_size_bytes(op);
  request.dtype = op.dtype;
  request.reduce_op = op.reduce_op == ReduceOp::none ? ReduceOp::sum : op.reduce_op;
  request.placement = placements[op.group.index()];
  request.registered = buffers_registered(s, op);
  OpCost cost;
  cost.collective = true;
  cost.nccl = collective_cost(request, topology);
  cost.sms = cost.nccl.sms;
  cost.latency_ns = cost.nccl.latency_ns;
  cost.standalone_ns = cost.nccl.time_ns;
  if (cost.nccl.bus_bytes <= 0 || cost.nccl.bus_bw_bytes_per_s <= 0) {
    cost.model = cost.latency_ns > 0 ? CostModel::transfer : CostModel::instant;
    return cost;
  }
  cost.model = CostModel::transfer;
  cost.bytes = static_cast<double>(cost.nccl.bus_bytes);
  cost.cap_bytes_per_s = cost.nccl.bus_bw_bytes_per_s;
  if (cost.nccl.nvlink_load > 0) cost.loads.add(LinkId::nvlink, cost.nccl.nvlink_load);
  if (cost.nccl.network_load > 0) cost.loads.add(LinkId::network, cost.nccl.network_load);
  return cost;
}

OpCost host_copy_cost(const Op& op, const Topology& topology) {
  // Activation offload: device↔host over the GPU's host link (PCIe or NVLink-C2C), shared by this GPU's concurrent
  // copies and, as every GPU of the node offloads at the same moment of the step, by the GPUs behind the same link.
  OpCost cost;
  cost.model = CostModel::transfer;
  cost.bytes = static_cast<double>(op.send_bytes + op.recv_bytes);
  cost.cap_bytes_per_s = topology.host_bw_per_gpu_bytes_per_s();
  cost.loads.add(LinkId::host, 1.0);
  cost.latency_ns = topology.gpu.kernel_overhead_ns;
  cost.standalone_ns = cost.latency_ns + ns_from_seconds(cost.bytes / cost.cap_bytes_per_s);
  return cost;
}

// A pipeline send/recv pair, costed on the send: the bytes cross the link between the two stages' ranks — NVLink
// when those two GPUs share an NVLink domain, else the network — and load that link on both GPUs. The ranks are those
// of the pipeline that holds rank 0 (stage k at k × the pp group's stride, as every group is placed from rank 0): on
// 72-GPU racks a 16-stage pipeline over 256 GPUs crosses a rack at 3 of its 15 hops, not at all of them. NCCL runs a
// point-to-point transfer near the link's rate on a few channels (its p2p protocol, NCCL_NCHANNELS_PER_NET_PEER = 2 by
// default), so the transfer is capped by the slower GPU's share of the link and holds two SMs.
OpCost p2p_cost(const Schedule& s, const Op& op, const Topology& topology) {
  OpCost cost;
  if (op.kind == OpKind::recv) return cost;  // instant here; the engine ends it with its send
  const int64_t stride = s.groups[op.group.index()].stride;
  const int64_t from_rank = s.stage_of(op) * stride, to_rank = s.stage_of(s.ops[op.peer]) * stride;
  const bool network = from_rank / topology.nvlink_domain_gpus != to_rank / topology.nvlink_domain_gpus;
  const std::vector<double> caps = link_capacities(topology);
  const LinkId link = network ? LinkId::network : LinkId::nvlink;
  cost.model = CostModel::transfer;
  cost.bytes = static_cast<double>(op.send_bytes);
  cost.cap_bytes_per_s = caps[static_cast<size_t>(link)];
  cost.latency_ns = topology.gpu.kernel_overhead_ns + (network ? topology.nic_latency_ns : 0);
  cost.sms = 2;
  cost.loads.add(static_cast<int32_t>(link) + s.stage_of(op) * kLinkCount, 1.0);
  cost.loads.add(static_cast<int32_t>(link) + s.stage_of(s.ops[op.peer]) * kLinkCount, 1.0);
  cost.standalone_ns = cost.latency_ns + ns_from_seconds(cost.bytes / cost.cap_bytes_per_s);
  return cost;
}

// A compute op's time depends only on its GEMM shapes and its memory-bound bytes, and a layer's ops repeat those in
// every layer and micro-batch: each distinct list is timed once (the same function on the same inputs, so the same
// nanoseconds) and its cost entered once in the table.
class ComputeEntries {
 public:
  ComputeEntries(const GpuProfile& gpu, DType dtype, AttentionKernel kernel, Fp8GemmScaling scaling,
                 int64_t query_heads_per_kv_head)
      : gpu_(gpu),
        dtype_(dtype),
        kernel_(kernel),
        scaling_(scaling),
        query_heads_per_kv_head_(query_heads_per_kv_head),
        by_name_(gpu.gemm_table != nullptr || gpu.attention_table != nullptr || kernel != AttentionKernel::flash ||
                 (dtype == DType::fp8 && scaling == Fp8GemmScaling::rowwise_with_gw_hp)) {}

  CostId of(const Op& op, OpCostTable& table) {
    key_.clear();
    key_.insert(key_.end(), {op.bytes_touched, op.class_bytes.unvectorized, op.class_bytes.reduction});
    for (const Gemm& g : op.gemms) key_.insert(key_.end(), {g.m, g.n, g.k, g.batch, int64_t{g.attention}});
    // A measured table times a product by its role too (forward, input or weight gradient; the attention call's
    // direction), which its name says, and so do an attention kernel slower backward than forward and a recipe that
    // keeps weight gradients in BF16: equal shapes of different roles are different keys then.
    if (by_name_) {
      for (const Gemm& g : op.gemms) key_.push_back(static_cast<int64_t>(std::hash<std::string>{}(g.name)));
    }
    const auto [it, added] = memo_.try_emplace(key_, CostId());
    if (added) {
      OpCost cost;
      cost.compute_ns = compute_time_ns(op, gpu_, dtype_, kernel_, scaling_, query_heads_per_kv_head_);
      cost.standalone_ns = cost.compute_ns;
      cost.model = cost.compute_ns > 0 ? CostModel::compute : CostModel::instant;
      it->second = table.add(cost);
    }
    return it->second;
  }

 private:
  struct KeyHash {
    size_t operator()(const std::vector<int64_t>& key) const {
      uint64_t h = 1469598103934665603ULL;  // FNV-1a over 64-bit words
      for (const int64_t word : key) h = (h ^ static_cast<uint64_t>(word)) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  const GpuProfile& gpu_;
  DType dtype_;
  AttentionKernel kernel_;
  Fp8GemmScaling scaling_;
  int64_t query_heads_per_kv_head_;  // the schedule's one group size: not part of the key
  bool by_name_;
  std::vector<int64_t> key_;
  std::unordered_map<std::vector<int64_t>, CostId, KeyHash> memo_;
};

// The engine adds op times in int64 nanoseconds over up to 100 steps: refuse a step whose ops alone would take more
// than limits::kMaxStepTimeNs (rates and efficiencies so low that times saturate land here too).
void check_step_time(const Schedule& s, const Topology& topology, const OpCostTable& costs) {
  long double total_ns = 0;
  for (const Op& op : s.ops) {
    const OpCost& cost = costs[op.id];
    total_ns += static_cast<long double>(cost.standalone_ns);
    if (total_ns <= static_cast<long double>(limits::kMaxStepTimeNs)) continue;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3g", static_cast<double>(cost.standalone_ns) / 1e9);
    throw ConfigError("op " + std::to_string(op.id.value()) + " '" + op.name + "' would take " + seconds + " s on " +
                      topology.gpu.name + " in " + topology.name + ", and the step more than " +
                      std::to_string(limits::kMaxStepTimeNs / 1'000'000'000 / 86'400) +
                      " days, which is beyond what fsdpsim models (check the peaks, bandwidths and efficiencies of "
                      "the GPU profile and the topology: a unit may be missing, e.g. \"989TFLOPS\" or \"450GB/s\")");
  }
}

}  // namespace

std::vector<double> link_capacities(const Topology& topology, int32_t stages) {
  std::vector<double> caps;
  for (int32_t stage = 0; stage < stages; ++stage) {
    caps.push_back(nvlink_capacity_bytes_per_s(topology));
    caps.push_back(network_capacity_bytes_per_s(topology));
    caps.push_back(topology.host_bw_per_gpu_bytes_per_s());
  }
  return caps;
}

OpCostTable::OpCostTable(std::vector<OpCost> per_op) : of_op_(per_op.size()) {
  distinct_ = std::move(per_op);
  for (const OpId op : ids_of(of_op_)) of_op_[op] = CostId(op.value());
}

std::vector<OpCost> OpCostTable::per_op() const {
  std::vector<OpCost> out;
  out.reserve(of_op_.size());
  for (const OpId op : ids_of(of_op_)) out.push_back((*this)[op]);
  return out;
}

CostId OpCostTable::add(const OpCost& cost) {
  const CostId entry = distinct_.next_id();
  distinct_.push_back(cost);
  return entry;
}

struct OpCostBuilder::State {
  // Identical collectives (same kind, size, dtype, reduction, group, registration, engine) cost the same: computed
  // once, then entered once per pipeline stage (each stage's rank has its own links).
  struct CollectiveKey {
    int64_t size_bytes = 0;
    GroupId group;
    int32_t stage = 0;  // 0 in collective_class's keys
    OpKind kind = OpKind::compute;
    DType dtype = DType::bf16;
    ReduceOp reduce_op = ReduceOp::none;
    bool registered = false;
    int8_t side_sms = -1;  // SMs of a TP overlap stream's kernels (0: copy engines); -1: the collective model's
    bool operator==(const CollectiveKey&) const = default;
  };
  struct CollectiveKeyHash {
    size_t operator()(const CollectiveKey& k) const {
      const uint64_t small = static_cast<uint64_t>(k.kind) | static_cast<uint64_t>(k.dtype) << 8 |
                             static_cast<uint64_t>(k.reduce_op) << 16 | uint64_t{k.registered} << 24 |
                             static_cast<uint64_t>(static_cast<uint8_t>(k.side_sms)) << 25 |
                             static_cast<uint64_t>(static_cast<uint32_t>(k.stage)) << 32;
      uint64_t h = static_cast<uint64_t>(k.size_bytes) * 0x9E3779B97F4A7C15ULL;
      h ^= (small + static_cast<uint64_t>(static_cast<uint32_t>(k.group.value()))) * 0xC2B2AE3D27D4EB4FULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

  State(const Schedule& schedule, const Topology& t)
      : s(schedule),
        topology(t),
        compute_entries(t.gpu, schedule.info.compute_dtype, schedule.info.attention_kernel,
                        schedule.info.fp8_gemm_scaling, schedule.info.query_heads_per_kv_head),
        stages(std::max(1, schedule.info.pipeline_stages)) {
    for (const Group& g : s.groups) placements.push_back(place_group(topology, s.info.world_size, g.size, g.stride));
    costs.reset(s.ops.size());
    instant = costs.add(OpCost{});
    // Async TP's overlapped chunks, and Userbuffers' ring exchanges, move over copy engines (peer copies), not NCCL
    // kernels on SMs: they take no SMs from compute (the bandwidth is NVLink's either way). Userbuffers' pipeline and
    // bulk overlaps run kernels on TE's default num_sm of 16 SMs (transformer_engine/pytorch/module/base.py @
    // d0067d0d, initialize_ub). A pipeline names each stage's stream after its stage (stage_stream_name).
    constexpr int8_t kUserbuffersSms = 16;
    side_sms_of_stream.assign(s.streams.size(), -1);
    const int32_t stages_named = std::max(1, s.info.pipeline_stages);
    // A fused EP exchange (DistMoE) is the expert GEMMs' own loads and stores: no SMs of its own either.
    const std::string copy_engines(to_string(StreamRole::tp_async)), sm_overlap(to_string(StreamRole::tp_overlap));
    const std::string ep_fused(to_string(StreamRole::ep_fused));
    fused_ep_stream.assign(s.streams.size(), false);
    for (size_t st = 0; st < s.streams.size(); ++st) {
      const Stream& stream = s.streams[st];
      if (stream.name == stage_stream_name(copy_engines, stream.stage, stages_named)) side_sms_of_stream[st] = 0;
      if (stream.name == stage_stream_name(sm_overlap, stream.stage, stages_named)) {
        side_sms_of_stream[st] = kUserbuffersSms;
      }
      if (stream.name == stage_stream_name(ep_fused, stream.stage, stages_named)) {
        side_sms_of_stream[st] = 0;
        fused_ep_stream[st] = true;
      }
    }
  }

  // DistMoE's kernels address their peers' HBM directly (symmetric memory over NVLink, SM100 and newer:
  // torchtitan/components/dist_moe/README.md): a fused exchange needs its whole group in one NVLink domain of such
  // GPUs. Checked once per collective entry.
  void check_fused_ep(const Op& op) const {
    const char* const fix =
        "set ep_dispatch=all_to_all, or choose a Blackwell topology whose NVLink domain holds the "
        "expert-parallel group";
    if (topology.gpu.arch != GpuArch::blackwell) {
      throw ConfigError(SourceLocation{"topology " + topology.name, 0, 0}, "ep_dispatch",
                        "fused: DistMoE's kernels need NVLink peer memory on SM100 or newer, and " + topology.gpu.name +
                            " is " + std::string(to_string(topology.gpu.arch)),
                        fix);
    }
    const GroupPlacement& p = placements[op.group.index()];
    if (p.domains > 1) {
      throw ConfigError(SourceLocation{"topology " + topology.name, 0, 0}, "ep_dispatch",
                        "fused: op '" + op.name + "' exchanges over " + std::to_string(p.domains) +
                            " NVLink domains of " + topology.name +
                            ", but DistMoE's kernels reach only peers in "
                            "their own domain",
                        fix);
    }
  }

  CostId entry_of(const Op& op) {
    const int32_t stage = s.stage_of(op);
    if (is_collective(op.kind)) {
      const int8_t side_sms = side_sms_of_stream[op.stream.index()];
      CollectiveKey key{.size_bytes = collective_size_bytes(op),
                        .group = op.group,
                        .stage = stage,
                        .kind = op.kind,
                        .dtype = op.dtype,
                        .reduce_op = op.reduce_op,
                        .registered = buffers_registered(s, op),
                        .side_sms = side_sms};
      const auto [it, added] = collective_entry.try_emplace(key, CostId());
      if (added) {
        if (fused_ep_stream[op.stream.index()]) check_fused_ep(op);
        OpCost cost = collective_op_cost(s, op, topology, placements);
        if (side_sms >= 0) cost.sms = side_sms;
        // A number per distinct collective, then per stage's links (none for a stage the schedule's info does not
        // count).
        key.stage = 0;
        const auto cls = collective_class.try_emplace(key, static_cast<int32_t>(collective_class.size()) * stages);
        cost.flow_class = stage >= 0 && stage < stages ? cls.first->second + stage : -1;
        if (stage > 0) cost.loads = cost.loads.on_stage(stage);
        it->second = costs.add(cost);
      }
      return it->second;
    }
    if (op.kind == OpKind::send) {  // its loads name both stages' links; the receive is costed here
      const auto [it, added] =
          p2p_entry.try_emplace({op.send_bytes, op.group, stage, s.stage_of(s.ops[op.peer])}, CostId());
      if (added) it->second = costs.add(p2p_cost(s, op, topology));
      return it->second;
    }
    if (op.kind == OpKind::copy && (op.send_bytes > 0 || op.recv_bytes > 0)) {
      const auto [it, added] = host_copy_entry.try_emplace({op.send_bytes + op.recv_bytes, stage}, CostId());
      if (added) {
        OpCost cost = host_copy_cost(op, topology);
        if (stage > 0) cost.loads = cost.loads.on_stage(stage);
        it->second = costs.add(cost);
      }
      return it->second;
    }
    if (op.kind == OpKind::sync || op.kind == OpKind::recv) return instant;
    return compute_entries.of(op, costs);
  }

  const Schedule& s;
  const Topology& topology;
  ComputeEntries compute_entries;
  int32_t stages;
  std::vector<GroupPlacement> placements;
  std::vector<int8_t> side_sms_of_stream;
  std::vector<bool> fused_ep_stream;  // by stream: DistMoE's exchanges (ep_fused)
  OpCostTable costs;
  CostId instant{0};                                                               // sync ops, receives, empty ops
  std::unordered_map<CollectiveKey, int32_t, CollectiveKeyHash> collective_class;  // its flow class on stage 0
  std::unordered_map<CollectiveKey, CostId, CollectiveKeyHash> collective_entry;   // by stage
  std::map<std::tuple<int64_t, GroupId, int32_t, int32_t>, CostId> p2p_entry;      // sends, by both stages
  std::map<std::pair<int64_t, int32_t>, CostId> host_copy_entry;                   // by bytes, stage
};

OpCostBuilder::OpCostBuilder(const Schedule& schedule, const Topology& topology)
    : state_(std::make_unique<State>(schedule, topology)) {}
OpCostBuilder::OpCostBuilder(OpCostBuilder&&) noexcept = default;
OpCostBuilder& OpCostBuilder::operator=(OpCostBuilder&&) noexcept = default;
OpCostBuilder::~OpCostBuilder() = default;

void OpCostBuilder::add(const Op& op) {
  state_->costs.set(op.id, state_->entry_of(op));
}

OpCostTable OpCostBuilder::finish() && {
  check_step_time(state_->s, state_->topology, state_->costs);
  return std::move(state_->costs);
}

OpCostTable compute_op_costs(const Schedule& s, const Topology& topology) {
  OpCostBuilder builder(s, topology);
  for (const Op& op : s.ops) builder.add(op);
  return std::move(builder).finish();
}

}  // namespace fsdpsim
