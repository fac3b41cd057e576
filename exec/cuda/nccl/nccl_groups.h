#pragma once
/// The NCCL side of one rank (internal to exec/cuda): the world communicator, one nonblocking communicator per IR
/// group instance, split from the world with colour = the instance and key = the world rank, one two-rank
/// communicator per pipeline channel this rank's stage sends or receives on (p2p_plan.h), and the nccl_registered
/// buffers — allocated with ncclMemAlloc and registered as symmetric windows (NCCL 2.27+, ncclCommWindowRegister)
/// with every group whose collectives touch them, or with ncclCommRegister where windows are unavailable. Registered
/// memory is freed only after the communicators.
///
/// Every NCCL call on a communicator goes through this class under one lock, so that the watchdog thread can poll
/// the communicators' states and abort them (ncclCommAbort frees a communicator: no call may use it afterwards)
/// while the rank's thread issues collectives. A call that returns ncclInProgress is waited for (the lock released
/// between polls) before the next call on the rank or any CUDA work on its streams (nccl_nonblocking.h).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nccl.h>

#include "exec/cuda/nccl/collective_plan.h"
#include "exec/cuda/nccl/nccl_nonblocking.h"
#include "exec/cuda/nccl/p2p_plan.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// The op a call on a communicator was made for (reports name the last one).
struct IssuedOp {
  OpId op;  ///< none yet
  int32_t step = -1;
};

/// A communicator whose asynchronous state is an error.
struct CommFailure {
  GroupId group;  ///< the IR group, or none for the world communicator
  ncclResult_t result = ncclSuccess;
  std::string detail;  ///< ncclGetLastError
  IssuedOp last;       ///< the last op issued on it
};

/// Communicators and registered buffers of one rank.
class NcclGroups {
 public:
  NcclGroups() = default;
  /// Aborts whatever release() did not free (an exception unwound past it).
  ~NcclGroups();
  NcclGroups(const NcclGroups&) = delete;
  NcclGroups& operator=(const NcclGroups&) = delete;

  /// Takes over the world communicator (null when emulating): it is aborted or destroyed with the others.
  void adopt_world(ncclComm_t world);
  /// Computes this rank's place in every group; with a world communicator also splits one nonblocking communicator
  /// per group — collective over the world: every rank calls it with the same schedule, groups in index order — and
  /// waits for each (at most `wait.timeout_ns`).
  void setup(const Schedule& schedule, int32_t rank, int32_t world_size, const NcclWait& wait);
  /// With a world communicator, splits one communicator per pipeline channel (colour and key from
  /// channel_membership(); ranks on neither end pass NCCL_SPLIT_NOCOLOR and get none) — collective over the world,
  /// channels in plan order — and waits for each. Without one (emulating), only remembers how many channels there are.
  void setup_channels(const Schedule& schedule, const std::vector<P2pChannel>& channels, int32_t rank,
                      const NcclWait& wait);
  /// Allocates every nccl_registered buffer of `stage` (-1: of every stage) with ncclMemAlloc and, when communicators
  /// exist, registers it with the communicator of each group whose collectives read or write it (buffers in id order,
  /// groups in index order). When ncclMemAlloc fails, calls `alloc_failed(buffer, result)`, which must throw.
  void register_buffers(const Schedule& schedule, int32_t stage, const NcclWait& wait,
                        const std::function<void(BufferId, ncclResult_t)>& alloc_failed);

  /// Makes `call` (NCCL calls on the communicator of `group`) for `issued` under the lock, then waits while NCCL
  /// reports ncclInProgress (at most `wait.timeout_ns`). Throws CudaError when a call fails, when the wait ends
  /// (nccl_nonblocking.h: error state, timeout, `wait.stop`) or when the communicators were aborted
  /// (CudaFault::peer_failed: the caller reports the cause).
  void enqueue(GroupId group, IssuedOp issued, const std::function<ncclResult_t(ncclComm_t)>& call,
               const NcclWait& wait);

  /// As enqueue(), on the communicator of pipeline channel `channel` (this rank must be one of its ends).
  void enqueue_channel(int32_t channel, IssuedOp issued, const std::function<ncclResult_t(ncclComm_t)>& call,
                       const NcclWait& wait);

  /// This rank's place in group `group`.
  [[nodiscard]] const GroupMembership& membership(GroupId group) const { return members_[group.index()]; }
  /// The ncclMemAlloc memory of registered buffer `buffer`, or null when it is not registered.
  [[nodiscard]] void* registered(BufferId buffer) const;
  /// Bytes allocated for registered buffers.
  [[nodiscard]] int64_t registered_bytes() const { return registered_bytes_; }
  /// True when there are communicators (not emulating, not released or aborted).
  [[nodiscard]] bool has_communicators() const;
  /// How many communicators there are: the world, one per group and one per channel of this rank (0 when emulating).
  [[nodiscard]] int32_t communicator_count() const;

  /// The first communicator — the world, then the groups in index order — whose state is an error, if any.
  [[nodiscard]] std::optional<CommFailure> async_failure() const;
  /// Aborts every communicator now (ncclCommAbort), from any thread; calls on them afterwards throw. Returns false
  /// when they were already aborted or released. Never throws.
  bool abort_all() noexcept;

  /// Deregisters the buffers and finalizes and destroys the communicators (every rank together, each wait bounded by
  /// `wait`), or after a failure — or when that clean teardown fails — aborts them (local); then frees the registered
  /// memory. Never throws.
  void release(bool abort, const NcclWait& wait) noexcept;

 private:
  struct Registration {
    GroupId group;
    ncclWindow_t window = nullptr;  // symmetric window (NCCL 2.27+)
    void* handle = nullptr;         // ncclCommRegister handle otherwise
  };
  void split(const Schedule& schedule, size_t group, int32_t rank, const NcclWait& wait);
  ncclComm_t split_from_world(ncclComm_t* slot, int32_t color, int32_t key, const GroupMembership& expected,
                              const NcclWait& wait);
  void split_channel(const Schedule& schedule, const P2pChannel& channel, size_t index, int32_t rank,
                     const NcclWait& wait);
  void wait_until_ready(size_t slot, const NcclWait& wait);
  void enqueue_at(size_t slot, IssuedOp issued, const std::function<ncclResult_t(ncclComm_t)>& call,
                  const NcclWait& wait);
  [[nodiscard]] std::vector<ncclComm_t*> all_locked();
  void abort_locked() noexcept;
  void finalize_locked(const NcclWait& wait);
  [[nodiscard]] ncclComm_t comm_locked(GroupId group) const;
  [[nodiscard]] ncclComm_t slot_locked(size_t slot) const;  // 0: the world, then the groups, then the channels

  mutable std::mutex mutex_;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> comms_;        // by group
  std::vector<ncclComm_t> channels_;     // by pipeline channel; null where this rank is on neither end
  std::vector<GroupId> channel_groups_;  // by pipeline channel: the IR group its ops name, for reports
  std::vector<IssuedOp> last_;           // by slot: the world, then the groups, then the channels
  bool aborted_ = false;
  std::vector<GroupMembership> members_;
  std::unique_ptr<ncclComm_t[]> split_slots_;    // where nonblocking splits write their communicators (by group)
  std::unique_ptr<ncclComm_t[]> channel_slots_;  // the same for the channels' splits
  bool splits_pending_ = false;                // a split was started and not seen to complete
  std::vector<void*> memory_;                  // by buffer; ncclMemAlloc'd or null
  std::deque<Registration> registrations_;     // a deque: NCCL may write a handle after a nonblocking call returned
  int64_t registered_bytes_ = 0;
};

}  // namespace fsdpsim
