#pragma once
/// What each op of a schedule costs when it runs alone on the topology: compute time, or a transfer (latency, bytes,
/// standalone rate, link loads), and the SMs a communication kernel occupies. Computed once per schedule; the
/// engine then only shares links and SMs among what runs at the same time.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/units.h"
#include "schedule/ir.h"
#include "sim/flow_solver.h"
#include "sim/nccl/collective_model.h"
#include "topologies/hardware.h"

namespace fsdpsim {

/// The links the engine shares among concurrent transfers of the simulated rank (of each pipeline stage's rank).
enum class LinkId : int32_t { nvlink = 0, network = 1, host = 2 };
inline constexpr int32_t kLinkCount = 3;

/// The links one transfer loads, with its wire bytes per byte on each: at most one entry per link, kept inline (every
/// op has its cost, and a heap vector each made a simulation's set-up allocate per op).
class LinkLoads {
 public:
  LinkLoads() = default;
  LinkLoads(std::initializer_list<LinkLoad> loads) {
    for (const LinkLoad& l : loads) add(LinkId{l.first}, l.second);
  }
  void add(LinkId link, double wire_bytes_per_byte) { add(static_cast<int32_t>(link), wire_bytes_per_byte); }
  /// A link of any stage's GPU (LinkId + stage · kLinkCount).
  void add(int32_t link, double wire_bytes_per_byte) {
    FSDPSIM_CHECK(count_ < kMaxLoads, "a transfer loads at most two GPUs' links of each kind");
    items_[count_++] = {link, wire_bytes_per_byte};
  }
  [[nodiscard]] std::span<const LinkLoad> view() const { return {items_.data(), count_}; }
  /// The same loads on another pipeline stage's GPU, whose links follow the first stage's kLinkCount.
  [[nodiscard]] LinkLoads on_stage(int32_t stage) const {
    LinkLoads out = *this;
    for (size_t i = 0; i < count_; ++i) out.items_[i].first += stage * kLinkCount;
    return out;
  }
  [[nodiscard]] bool empty() const { return count_ == 0; }

 private:
  // A collective loads its own GPU's links; a pipeline send loads the same link of the sending and receiving GPU.
  static constexpr size_t kMaxLoads = kLinkCount;
  std::array<LinkLoad, kMaxLoads> items_{};
  size_t count_ = 0;
};

/// How an op takes time.
enum class CostModel : uint8_t {
  instant,   ///< sync ops, empty ops
  compute,   ///< SM work: `compute_ns` at full speed, slowed while communication kernels hold SMs
  transfer,  ///< a collective or host copy: `latency_ns`, then `bytes` at up to `cap_bytes_per_s` over shared links
};

/// One op's standalone cost.
struct OpCost {
  CostModel model = CostModel::instant;
  TimeNs compute_ns = 0;
  TimeNs latency_ns = 0;
  double bytes = 0;  ///< bus bytes (collectives) or bytes copied (host copies)
  double cap_bytes_per_s = 0;
  LinkLoads loads;  ///< (LinkId, wire bytes per byte)
  int32_t sms = 0;  ///< SMs a communication kernel holds while it runs
  bool collective = false;
  CollectiveCost nccl;       ///< the chosen NCCL algorithm and protocol (collectives)
  TimeNs standalone_ns = 0;  ///< the op's duration alone
  /// Collectives: a number shared by exactly the ops whose transfers are alike (same cap and link loads on the same
  /// stage's links), so the engine can remember flow rates by it; -1 for others (compared by value instead).
  int32_t flow_class = -1;
};

/// A distinct cost's entry in an OpCostTable (and in FlatOps::costs): ops with equal entries have equal costs.
using CostId = Id<struct CostTag>;

/// Every op's standalone cost, each distinct cost stored once. A step's ops repeat few costs (a layer's ops in every
/// layer and micro-batch): a 16-micro-batch step of Llama-3-405B has 36,565 ops and under a hundred
/// distinct costs, so the table is an index per op into a short list that stays in cache, not 7 MB of copies.
class OpCostTable {
 public:
  OpCostTable() = default;
  /// One entry per op, indexed by op id (hand-made costs: tests and what-if studies).
  explicit OpCostTable(std::vector<OpCost> per_op);

  /// The cost of op `op`.
  [[nodiscard]] const OpCost& operator[](OpId op) const { return distinct_[of_op_[op]]; }
  [[nodiscard]] size_t size() const { return of_op_.size(); }
  /// Op `op`'s entry among distinct(): ops with equal entries have equal costs (the converse need not hold).
  [[nodiscard]] CostId entry_of(OpId op) const { return of_op_[op]; }
  [[nodiscard]] std::span<const OpCost> distinct() const { return distinct_; }
  /// Every op's cost, one copy each (for callers that change single ops).
  [[nodiscard]] std::vector<OpCost> per_op() const;

  /// Building: a new entry, and which entry an op has.
  CostId add(const OpCost& cost);
  void reset(size_t ops) { of_op_.assign(ops, CostId::none()); }  // `ops` ops, none costed yet
  void set(OpId op, CostId entry) { of_op_[op] = entry; }

 private:
  IdVector<CostId, OpCost> distinct_;
  IdVector<OpId, CostId> of_op_;
};

/// Costs a schedule's ops one at a time, each distinct cost computed and entered once: a caller that walks the ops
/// for its own reasons (the engine flattens them) costs each on the same walk.
class OpCostBuilder {
 public:
  /// The schedule's world size must match the topology's nodes (checked by the caller); groups are placed with
  /// place_group.
  OpCostBuilder(const Schedule& schedule, const Topology& topology);
  OpCostBuilder(OpCostBuilder&&) noexcept;
  OpCostBuilder& operator=(OpCostBuilder&&) noexcept;
  ~OpCostBuilder();

  /// Costs `op` of the schedule (each op once).
  void add(const Op& op);
  /// The table once every op is costed. Throws ConfigError when the step's ops alone would take longer than fsdpsim
  /// models.
  [[nodiscard]] OpCostTable finish() &&;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Capacities of the shared links of `stages` GPUs (one per pipeline stage), indexed by LinkId + stage · kLinkCount.
std::vector<double> link_capacities(const Topology& topology, int32_t stages = 1);

/// Costs of every op of `schedule` (indexed by op id). The schedule's world size must match the topology's nodes
/// (checked by the caller); groups are placed with place_group.
OpCostTable compute_op_costs(const Schedule& schedule, const Topology& topology);

}  // namespace fsdpsim
