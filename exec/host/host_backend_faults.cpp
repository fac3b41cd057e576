// HostBackend: the injected faults (host_faults.h) — a rank that stalls at an op and an allocation that fails — and
// their reports.
#include <algorithm>
#include <chrono>
#include <thread>

#include "exec/host/host_backend.h"

namespace fsdpsim {
namespace {

// How often a stalled worker looks at the world's abort flag: the stall ends within this long of the run stopping.
constexpr auto kStallPoll = std::chrono::milliseconds(5);

}  // namespace

const InjectedFault* HostBackend::injected(HostFaultKind kind, OpId op, BufferId buffer) const {
  for (const InjectedFault& f : faults_.faults) {
    if (f.kind == kind && f.op == op && f.step == step_ && (!buffer.valid() || f.buffer == buffer)) return &f;
  }
  return nullptr;
}

bool HostBackend::stall(const Op& op, const InjectedFault& fault) {
  // A rank that never arrives: the peers waiting for it at a rendezvous give up after timeout_ns and stop the run.
  // When no peer waits for it (a stall after the rank's last collective), it gives up itself after three times the
  // timeout — later than any rendezvous (1×) or dependency wait (2×) of a peer, so that their reports, which name
  // who arrived, come first — and the run still ends.
  const TimeNs limit_ns = fault.stall_ns > 0 ? fault.stall_ns : 3 * options_.timeout_ns;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(limit_ns);
  while (!world_.aborted()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(kStallPoll, deadline - now));
  }
  const TimeNs stalled_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  const std::string where = describe_op(op) + " (step " + std::to_string(step_) + ")";
  if (world_.aborted()) {
    log_.add("injected fault: stalled at " + where + " for " + format_time_ns(stalled_ns) + ", until the run stopped");
    return false;
  }
  if (fault.stall_ns > 0) return true;  // a slow rank, not a hung one: it carries on
  fail(where + " did not finish within " + format_time_ns(limit_ns) +
       ": an injected stall that no other rank was waiting for; the run stops");
  return false;
}

void HostBackend::fail_allocation(const Op& op, BufferId buffer) {
  const AllocationFailure failure = memory_->fail_allocation(buffer, op, step_);
  const std::optional<MemoryPeak> predicted =
      faults_.predicted != nullptr ? faults_.predicted->get() : std::optional<MemoryPeak>{};
  fail("out of memory (an injected fault): " + describe_allocation_failure(schedule_, failure) +
       describe_predicted_peak(schedule_, predicted));
}

}  // namespace fsdpsim
