#pragma once
/// The NCCL side of one rank (internal to exec/cuda): one communicator per IR group instance, split from the world
/// communicator with colour = the instance and key = the world rank, and the nccl_registered buffers — allocated
/// with ncclMemAlloc and registered as symmetric windows (NCCL 2.27+, ncclCommWindowRegister) with every group
/// whose collectives touch them, or with ncclCommRegister where windows are unavailable. Registered memory is freed
/// only after the communicators.

#include <cstdint>
#include <vector>

#include <nccl.h>

#include "exec/cuda/collective_plan.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Communicators and registered buffers of one rank.
class NcclGroups {
 public:
  NcclGroups() = default;
  /// Aborts whatever release() did not free (an exception unwound past it).
  ~NcclGroups();
  NcclGroups(const NcclGroups&) = delete;
  NcclGroups& operator=(const NcclGroups&) = delete;

  /// Computes this rank's place in every group; with `world` (not null) also splits one communicator per group —
  /// collective over the world: every rank calls it with the same schedule, groups in index order.
  void setup(ncclComm_t world, const Schedule& schedule, int32_t rank, int32_t world_size);
  /// Allocates every nccl_registered buffer with ncclMemAlloc and, when communicators exist, registers it with the
  /// communicator of each group whose collectives read or write it (buffers in id order, groups in index order).
  void register_buffers(const Schedule& schedule);

  /// The communicator of group `group` (null when emulating).
  [[nodiscard]] ncclComm_t comm(int32_t group) const { return comms_[static_cast<size_t>(group)]; }
  /// This rank's place in group `group`.
  [[nodiscard]] const GroupMembership& membership(int32_t group) const { return members_[static_cast<size_t>(group)]; }
  /// The ncclMemAlloc memory of registered buffer `buffer`, or null when it is not registered.
  [[nodiscard]] void* registered(int32_t buffer) const;
  /// Bytes allocated for registered buffers.
  [[nodiscard]] int64_t registered_bytes() const { return registered_bytes_; }
  /// The first asynchronous error any communicator reports (ncclSuccess when none).
  [[nodiscard]] ncclResult_t async_error() const;

  /// Deregisters the buffers and destroys the communicators (every rank together), or after a failure aborts the
  /// communicators (local); then frees the registered memory. Never throws.
  void release(bool abort) noexcept;

 private:
  struct Registration {
    ncclComm_t comm = nullptr;
    ncclWindow_t window = nullptr;  // symmetric window (NCCL 2.27+)
    void* handle = nullptr;         // ncclCommRegister handle otherwise
  };
  std::vector<ncclComm_t> comms_;  // by group
  std::vector<GroupMembership> members_;
  std::vector<void*> memory_;  // by buffer; ncclMemAlloc'd or null
  std::vector<Registration> registrations_;
  int64_t registered_bytes_ = 0;
};

}  // namespace fsdpsim
