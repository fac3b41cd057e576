#pragma once
/// What the threads-as-ranks share: the rendezvous of collectives (the members of one group instance meet per op
/// and step, post their contributions in shared memory and read each other's), bounded by a timeout, and a world
/// abort that releases every waiter once a rank has failed, so that no run hangs.

#include <atomic>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/units.h"
#include "exec/host/host_collectives.h"

namespace fsdpsim {

/// Identifies one collective call across ranks: the group, its instance (by first member), the op and the step.
struct RendezvousKey {
  GroupId group;
  int32_t first_rank = -1;
  OpId op;
  int32_t step = -1;
  auto operator<=>(const RendezvousKey&) const = default;
};

/// How a rendezvous ended for one member.
enum class RendezvousStatus : uint8_t { complete, timed_out, aborted };

/// What a member gets back from the rendezvous.
struct RendezvousResult {
  RendezvousStatus status = RendezvousStatus::aborted;
  std::vector<std::shared_ptr<const Contribution>> contributions;  ///< in group order (complete)
  std::vector<int32_t> arrived;                                    ///< members that posted (timed_out)
  std::vector<int32_t> missing;                                    ///< members that never arrived (timed_out)
  bool first_report = false;  ///< this member is the first to see the timeout (reports it once)
};

/// The shared state of one run.
class HostWorld {
 public:
  /// Every blocking wait gives up after `timeout_ns`.
  explicit HostWorld(TimeNs timeout_ns) : timeout_ns_(timeout_ns) {}

  /// Posts `mine` as member `position` of `members` and waits for the others (at most the timeout).
  RendezvousResult exchange(const RendezvousKey& key, const std::vector<int32_t>& members, size_t position,
                            std::shared_ptr<const Contribution> mine);
  /// Releases every waiter; later rendezvous return `aborted` at once.
  void abort();
  /// True after abort().
  [[nodiscard]] bool aborted() const;
  /// The timeout of every blocking wait.
  [[nodiscard]] TimeNs timeout_ns() const { return timeout_ns_; }

 private:
  struct Slot {
    std::vector<std::shared_ptr<const Contribution>> posted;
    size_t arrived = 0;
    size_t left = 0;
    bool reported = false;
    std::condition_variable cv;
  };
  TimeNs timeout_ns_;
  mutable std::mutex mutex_;
  std::map<RendezvousKey, std::shared_ptr<Slot>> slots_;
  std::atomic<bool> aborted_{false};  // read without the lock by every worker before each op
};

}  // namespace fsdpsim
