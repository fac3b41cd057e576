#include "exec/host/host_world.h"

#include <chrono>

#include "common/error.h"

namespace fsdpsim {

RendezvousResult HostWorld::exchange(const RendezvousKey& key, const std::vector<int32_t>& members, size_t position,
                                     std::shared_ptr<const Contribution> mine) {
  FSDPSIM_CHECK(position < members.size(), "rendezvous position inside the group");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns_);
  std::unique_lock lock(mutex_);
  RendezvousResult result;
  if (aborted_.load()) return result;
  std::shared_ptr<Slot>& entry = slots_[key];
  if (!entry) {
    entry = std::make_shared<Slot>();
    entry->posted.resize(members.size());
  }
  const std::shared_ptr<Slot> slot = entry;  // the map entry may go while we wait
  FSDPSIM_CHECK(!slot->posted[position], "a member posted twice to one rendezvous");
  slot->posted[position] = std::move(mine);
  if (++slot->arrived == members.size()) slot->cv.notify_all();
  const bool done =
      slot->cv.wait_until(lock, deadline, [&] { return slot->arrived == members.size() || aborted_.load(); });
  if (slot->arrived == members.size()) {
    result.status = RendezvousStatus::complete;
    result.contributions = slot->posted;
    if (++slot->left == members.size()) slots_.erase(key);
    return result;
  }
  if (!done) {
    result.status = RendezvousStatus::timed_out;
    for (size_t m = 0; m < members.size(); ++m) {
      (slot->posted[m] ? result.arrived : result.missing).push_back(members[m]);
    }
    result.first_report = !slot->reported;
    slot->reported = true;
  }
  return result;
}

void HostWorld::abort() {
  const std::lock_guard lock(mutex_);
  aborted_.store(true);
  for (auto& [key, slot] : slots_) slot->cv.notify_all();
}

bool HostWorld::aborted() const {
  return aborted_.load();
}

}  // namespace fsdpsim
