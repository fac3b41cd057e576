#include "exec/cuda/runtime/cuda_faults.h"

#include "exec/fault_report.h"

namespace fsdpsim {
namespace {

// Groups up to this many members are listed whole; larger ones by their first members and the last.
constexpr size_t kListedMembers = 8;

std::string site_text(const FaultSite& site) {
  return "rank " + std::to_string(site.rank) + " (GPU " + std::to_string(site.device) + ")";
}

std::string op_text(const Schedule& s, OpId op, int32_t step, bool with_group, const FaultSite& site) {
  const Op& o = s.ops[op];
  std::string text = describe_op(o) + " (" + std::string(to_string(o.kind));
  if (with_group && o.group.valid()) text += " over " + describe_group_instance(s, o.group, site.rank, site.world_size);
  return text + ", step " + std::to_string(step) + ")";
}

}  // namespace

std::string describe_group_instance(const Schedule& schedule, GroupId group, int32_t rank, int32_t world_size) {
  std::vector<int32_t> members;
  std::string name = "world";
  if (group.valid()) {
    const Group& g = schedule.groups[group];
    name = g.name;
    members = group_members(g, rank);
  } else {
    for (int32_t r = 0; r < world_size; ++r) members.push_back(r);
  }
  if (members.size() <= kListedMembers) return describe_members(name, members);
  std::string text = "'" + name + "' [";
  for (size_t i = 0; i < 3; ++i) text += std::to_string(members[i]) + ", ";
  return text + "..., " + std::to_string(members.back()) + "] (" + std::to_string(members.size()) + " ranks)";
}

std::string describe_collective_timeout(const Schedule& schedule, const FaultSite& site,
                                        const CollectiveTimeout& timeout) {
  std::string text =
      "collective timed out on " + site_text(site) + ": " + op_text(schedule, timeout.op, timeout.step, true, site) +
      (timeout.enqueueing ? " was still being enqueued by NCCL (ncclInProgress) after " : " had run for ") +
      format_time_ns(timeout.ran_ns) + " without finishing (timeout " + format_time_ns(timeout.timeout_ns) + ")";
  if (!timeout.not_issued.empty()) {
    text += "; " + describe_ranks(timeout.issued) + (timeout.issued.size() == 1 ? " has" : " have") + " issued it, " +
            describe_ranks(timeout.not_issued) + (timeout.not_issued.size() == 1 ? " has" : " have") +
            " not: look at what " + (timeout.not_issued.size() == 1 ? "that rank" : "those ranks") + " did last";
  } else if (!timeout.issued.empty()) {
    text += "; all " + std::to_string(timeout.issued.size()) +
            " members have issued it: a hung GPU or a broken link rather than a missing peer";
  }
  return text + "; " + kAbortedEveryCommunicator;
}

std::string describe_nccl_async_error(const Schedule& schedule, const FaultSite& site, const NcclAsyncError& error) {
  std::string text = "NCCL error on " + site_text(site) + " in the communicator of " +
                     (error.group.valid() ? "group " : "") +
                     describe_group_instance(schedule, error.group, site.rank, site.world_size) + ": " +
                     error.result_name + " (" + error.result_text + ")";
  if (!error.last_error.empty()) text += ": " + error.last_error;
  if (error.last_op.valid()) {
    text += "; the last op issued on it was " + op_text(schedule, error.last_op, error.last_step, false, site);
  } else {
    text += "; no op had been issued on it yet";
  }
  return text + "; " + kAbortedEveryCommunicator;
}

std::string describe_device_oom(const Schedule& schedule, const FaultSite& site, const DeviceOutOfMemory& oom,
                                const std::optional<MemoryPeak>& predicted) {
  return "out of GPU memory on " + site_text(site) + ": " + describe_allocation_failure(schedule, oom.failure) + " [" +
         oom.allocator + "]; the pool reserves " + format_bytes(oom.pool_reserved_bytes) +
         ", registered buffers hold " + format_bytes(oom.registered_bytes) + ", executor scratch " +
         format_bytes(oom.executor_bytes) + "; the device has " + format_bytes(oom.device_free_bytes) + " free of " +
         format_bytes(oom.device_total_bytes) + describe_predicted_peak(schedule, predicted) +
         (oom.same_memory_prediction.empty() ? "" : "; " + oom.same_memory_prediction);
}

}  // namespace fsdpsim
