#include "exec/cuda/nccl/nccl_groups.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <set>

#include "exec/cuda/runtime/cuda_check.h"

namespace fsdpsim {
namespace {

// Symmetric window registration exists from NCCL 2.27 (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC); the
// library loaded at run time must be that new too, not only the header.
bool windows_available() {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  int version = 0;
  FSDPSIM_NCCL(ncclGetVersion(&version));
  return version >= NCCL_VERSION(2, 27, 0);
#else
  return false;
#endif
}

// Groups of the collectives that read or write `buffer`, in index order.
std::set<GroupId> groups_touching(const Schedule& s, BufferId buffer) {
  std::set<GroupId> groups;
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind) || !op.group.valid()) continue;
    for (const auto* list : {&op.reads, &op.writes}) {
      for (const BufferId b : *list) {
        if (b == buffer) groups.insert(op.group);
      }
    }
  }
  return groups;
}

[[noreturn]] void aborted_error(const std::string& what) {
  throw CudaError(what + ": the communicators were aborted", CudaFault::peer_failed);
}

}  // namespace

NcclGroups::~NcclGroups() {
  release(true, NcclWait{});
}

void NcclGroups::release(bool abort, const NcclWait& wait) noexcept {
  const std::lock_guard lock(mutex_);  // the watchdog has stopped: nothing else waits for the lock now
  if (!abort && !aborted_) {
    try {
      finalize_locked(wait);
    } catch (const std::exception&) {
      abort_locked();  // a peer that does not finalize must not hang the teardown
    }
  }
  if (!aborted_ &&
      (world_ != nullptr || std::any_of(comms_.begin(), comms_.end(), [](ncclComm_t c) { return c != nullptr; }))) {
    abort_locked();
  }
  for (void*& p : memory_) {
    if (p != nullptr) (void)ncclMemFree(p);
    p = nullptr;
  }
  registered_bytes_ = 0;
  // A split whose wait failed may still complete in NCCL's background thread and write its slot: leave the slots
  // (a few bytes) to it rather than free memory NCCL may write.
  if (splits_pending_) {
    (void)split_slots_.release();
  } else {
    split_slots_.reset();
  }
}

void NcclGroups::finalize_locked(const NcclWait& wait) {
  NcclWait w = wait;
  w.what = "deregistering the NCCL buffers";
  for (const Registration& r : registrations_) {
    ncclComm_t comm = comm_locked(r.group);
    if (comm == nullptr) continue;
    ncclResult_t result = ncclSuccess;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    if (r.window != nullptr) result = ncclCommWindowDeregister(comm, r.window);
#endif
    if (r.handle != nullptr) result = ncclCommDeregister(comm, r.handle);
    FSDPSIM_NCCL_NB(result);
    if (result == ncclInProgress) wait_ready(comm, w);
  }
  registrations_.clear();
  // ncclCommFinalize flushes a communicator's work and turns its state to ncclSuccess once every rank is quiescent;
  // ncclCommDestroy then frees it locally without blocking (nccl.h). Finalize all first so every rank progresses.
  w.what = "finalizing the NCCL communicators";
  std::vector<ncclComm_t*> all;
  for (ncclComm_t& c : comms_) all.push_back(&c);
  all.push_back(&world_);
  for (ncclComm_t* c : all) {
    if (*c != nullptr) FSDPSIM_NCCL_NB(ncclCommFinalize(*c));
  }
  for (ncclComm_t* c : all) {
    if (*c != nullptr) wait_ready(*c, w);
  }
  for (ncclComm_t* c : all) {
    if (*c == nullptr) continue;
    const ncclResult_t destroyed = ncclCommDestroy(*c);
    *c = nullptr;  // freed (or being freed) whatever it returned: never touched again
    FSDPSIM_NCCL_NB(destroyed);
  }
}

void NcclGroups::adopt_world(ncclComm_t world) {
  const std::lock_guard lock(mutex_);
  world_ = world;
}

void NcclGroups::setup(const Schedule& schedule, int32_t rank, int32_t world_size, const NcclWait& wait) {
  members_.clear();
  for (const Group& g : schedule.groups) members_.push_back(group_membership(g, rank, world_size));
  {
    const std::lock_guard lock(mutex_);
    comms_.assign(schedule.groups.size(), nullptr);
    last_.assign(schedule.groups.size() + 1, IssuedOp{});
    if (world_ == nullptr) return;
  }
  // NCCL writes a nonblocking split's communicator when its background job ends: the slots must outlive any job
  // that a failed wait abandoned, so they are freed only once every split has completed (see release()).
  split_slots_ = std::make_unique<ncclComm_t[]>(schedule.groups.size());
  for (size_t g = 0; g < schedule.groups.size(); ++g) split(schedule, g, rank, wait);
}

void NcclGroups::split(const Schedule& schedule, size_t g, int32_t rank, const NcclWait& wait) {
  NcclWait w = wait;
  w.what = "ncclCommSplit for group '" + schedule.groups[g].name + "'";
  ncclConfig_t config = nonblocking_config();  // the child of a nonblocking world is nonblocking too; say so anyway
  ncclComm_t* slot = &split_slots_[g];
  {
    const std::lock_guard lock(mutex_);
    if (aborted_) aborted_error(w.what);
    splits_pending_ = true;
    FSDPSIM_NCCL_NB(ncclCommSplit(world_, members_[g].color, rank, slot, &config));
  }
  ncclComm_t comm = wait_new_comm(slot, world_, w);
  splits_pending_ = false;
  {
    const std::lock_guard lock(mutex_);
    comms_[g] = comm;
  }
  int count = 0, user_rank = 0;
  FSDPSIM_NCCL(ncclCommCount(comm, &count));
  FSDPSIM_NCCL(ncclCommUserRank(comm, &user_rank));
  if (count != members_[g].size || user_rank != members_[g].rank) {
    throw CudaError("ncclCommSplit for group '" + schedule.groups[g].name + "' gave rank " + std::to_string(user_rank) +
                        " of " + std::to_string(count) + ", expected rank " + std::to_string(members_[g].rank) +
                        " of " + std::to_string(members_[g].size),
                    false);
  }
}

void NcclGroups::register_buffers(const Schedule& schedule, const NcclWait& wait,
                                  const std::function<void(BufferId, ncclResult_t)>& alloc_failed) {
  memory_.assign(schedule.buffers.size(), nullptr);
  const bool windows = windows_available();
  (void)windows;  // unused where NCCL is older than 2.27
  for (size_t b = 0; b < schedule.buffers.size(); ++b) {
    const Buffer& buffer = schedule.buffers[b];
    if (!buffer.nccl_registered || buffer.size_bytes <= 0) continue;
    const size_t bytes = static_cast<size_t>(buffer.size_bytes);
    const ncclResult_t allocated = ncclMemAlloc(&memory_[b], bytes);
    if (allocated != ncclSuccess) {
      memory_[b] = nullptr;
      alloc_failed(buffer.id, allocated);
    }
    registered_bytes_ += buffer.size_bytes;
    for (const GroupId g : groups_touching(schedule, buffer.id)) {
      if (comms_[g.index()] == nullptr) continue;  // emulation: no communicators
      // A deque keeps each registration where NCCL may write its handle until the (nonblocking) call completes.
      Registration& r = registrations_.emplace_back(Registration{g, nullptr, nullptr});
      NcclWait w = wait;
      w.what = "registering buffer '" + buffer.name + "' with group '" + schedule.groups[g].name + "'";
      enqueue(
          g, IssuedOp{},
          [&](ncclComm_t comm) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
            if (windows) return ncclCommWindowRegister(comm, memory_[b], bytes, &r.window, NCCL_WIN_COLL_SYMMETRIC);
#endif
            return ncclCommRegister(comm, memory_[b], bytes, &r.handle);
          },
          w);
    }
  }
}

void NcclGroups::enqueue(GroupId group, IssuedOp issued, const std::function<ncclResult_t(ncclComm_t)>& call,
                         const NcclWait& wait) {
  ncclResult_t result = ncclSuccess;
  {
    const std::lock_guard lock(mutex_);
    if (aborted_) aborted_error(wait.what);
    ncclComm_t comm = comm_locked(group);
    FSDPSIM_CHECK(comm != nullptr, "an NCCL call needs the communicator of its group (none when emulating)");
    if (issued.op.valid()) last_[static_cast<size_t>(group.value() + 1)] = issued;
    result = call(comm);
  }
  if (result == ncclSuccess) return;
  if (result != ncclInProgress) throw_nccl_error(result, wait.what.c_str(), __FILE__, __LINE__);
  wait_until_ready(group, wait);
}

void NcclGroups::wait_until_ready(GroupId group, const NcclWait& wait) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    std::string detail;
    {
      // Each poll takes the lock, so the watchdog may abort the communicators between two polls.
      const std::lock_guard lock(mutex_);
      if (aborted_) aborted_error(wait.what);
      ncclComm_t comm = comm_locked(group);
      FSDPSIM_NCCL(ncclCommGetAsyncError(comm, &state));
      if (state != ncclSuccess && state != ncclInProgress) {
        const char* text = ncclGetLastError(comm);
        detail = text != nullptr ? text : "";
      }
    }
    if (state == ncclSuccess) return;
    check_wait(state, detail, wait, start);
    wait_pause(polls);
  }
}

void* NcclGroups::registered(BufferId buffer) const {
  if (!buffer.valid() || buffer.index() >= memory_.size()) return nullptr;
  return memory_[buffer.index()];
}

bool NcclGroups::has_communicators() const {
  return communicator_count() > 0;
}

int32_t NcclGroups::communicator_count() const {
  const std::lock_guard lock(mutex_);
  int32_t count = world_ != nullptr ? 1 : 0;
  for (ncclComm_t c : comms_) count += c != nullptr ? 1 : 0;
  return count;
}

std::optional<CommFailure> NcclGroups::async_failure() const {
  const std::lock_guard lock(mutex_);
  if (aborted_) return std::nullopt;
  for (int32_t g = -1; g < static_cast<int32_t>(comms_.size()); ++g) {
    ncclComm_t comm = comm_locked(GroupId(g));
    if (comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
    if (queried != ncclSuccess) state = queried;
    if (state == ncclSuccess || state == ncclInProgress) continue;
    const char* detail = ncclGetLastError(comm);
    return CommFailure{GroupId(g), state, detail != nullptr ? detail : "", last_[static_cast<size_t>(g + 1)]};
  }
  return std::nullopt;
}

bool NcclGroups::abort_all() noexcept {
  const std::lock_guard lock(mutex_);
  if (aborted_) return false;
  bool any = world_ != nullptr;
  for (ncclComm_t c : comms_) any = any || c != nullptr;
  if (!any) return false;
  abort_locked();
  return true;
}

void NcclGroups::abort_locked() noexcept {
  // ncclCommAbort stops the device work of the communicator and frees it (it returns ncclSuccess, or ncclInProgress
  // while it finishes in the background for a nonblocking one): the handle must never be used again.
  for (ncclComm_t& comm : comms_) {
    if (comm != nullptr) (void)ncclCommAbort(comm);
    comm = nullptr;
  }
  if (world_ != nullptr) (void)ncclCommAbort(world_);
  world_ = nullptr;
  registrations_.clear();  // the registrations went with their communicators
  aborted_ = true;
}

ncclComm_t NcclGroups::comm_locked(GroupId group) const {
  if (!group.valid()) return world_;
  return comms_[group.index()];
}

}  // namespace fsdpsim
