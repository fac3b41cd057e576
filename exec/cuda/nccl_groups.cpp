#include "exec/cuda/nccl_groups.h"

#include <set>

#include "exec/cuda/cuda_check.h"

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
std::set<int32_t> groups_touching(const Schedule& s, int32_t buffer) {
  std::set<int32_t> groups;
  for (const Op& op : s.ops) {
    if (!is_collective(op.kind) || op.group < 0) continue;
    for (const auto* list : {&op.reads, &op.writes}) {
      for (const int32_t b : *list) {
        if (b == buffer) groups.insert(op.group);
      }
    }
  }
  return groups;
}

}  // namespace

NcclGroups::~NcclGroups() {
  release(true);
}

void NcclGroups::setup(ncclComm_t world, const Schedule& schedule, int32_t rank, int32_t world_size) {
  members_.clear();
  comms_.assign(schedule.groups.size(), nullptr);
  for (const Group& g : schedule.groups) members_.push_back(group_membership(g, rank, world_size));
  if (world == nullptr) return;
  for (size_t g = 0; g < schedule.groups.size(); ++g) {
    ncclComm_t comm = nullptr;
    FSDPSIM_NCCL(ncclCommSplit(world, members_[g].color, rank, &comm, nullptr));
    comms_[g] = comm;
    int count = 0, user_rank = 0;
    FSDPSIM_NCCL(ncclCommCount(comm, &count));
    FSDPSIM_NCCL(ncclCommUserRank(comm, &user_rank));
    if (count != members_[g].size || user_rank != members_[g].rank) {
      throw CudaError("ncclCommSplit for group '" + schedule.groups[g].name + "' gave rank " +
                          std::to_string(user_rank) + " of " + std::to_string(count) + ", expected rank " +
                          std::to_string(members_[g].rank) + " of " + std::to_string(members_[g].size),
                      false);
    }
  }
}

void NcclGroups::register_buffers(const Schedule& schedule) {
  memory_.assign(schedule.buffers.size(), nullptr);
  const bool windows = windows_available();
  for (size_t b = 0; b < schedule.buffers.size(); ++b) {
    const Buffer& buffer = schedule.buffers[b];
    if (!buffer.nccl_registered || buffer.size_bytes <= 0) continue;
    const size_t bytes = static_cast<size_t>(buffer.size_bytes);
    FSDPSIM_NCCL(ncclMemAlloc(&memory_[b], bytes));
    registered_bytes_ += buffer.size_bytes;
    for (const int32_t g : groups_touching(schedule, static_cast<int32_t>(b))) {
      ncclComm_t comm = comms_[static_cast<size_t>(g)];
      if (comm == nullptr) continue;  // emulation: no communicators
      Registration r{comm, nullptr, nullptr};
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
      if (windows) {
        FSDPSIM_NCCL(ncclCommWindowRegister(comm, memory_[b], bytes, &r.window, NCCL_WIN_COLL_SYMMETRIC));
      }
#endif
      if (!windows) FSDPSIM_NCCL(ncclCommRegister(comm, memory_[b], bytes, &r.handle));
      registrations_.push_back(r);
    }
  }
}

void* NcclGroups::registered(int32_t buffer) const {
  if (buffer < 0 || static_cast<size_t>(buffer) >= memory_.size()) return nullptr;
  return memory_[static_cast<size_t>(buffer)];
}

ncclResult_t NcclGroups::async_error() const {
  for (ncclComm_t comm : comms_) {
    if (comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclSuccess && state != ncclInProgress) return state;
  }
  return ncclSuccess;
}

void NcclGroups::release(bool abort) noexcept {
  if (!abort) {
    for (const Registration& r : registrations_) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
      if (r.window != nullptr) (void)ncclCommWindowDeregister(r.comm, r.window);
#endif
      if (r.handle != nullptr) (void)ncclCommDeregister(r.comm, r.handle);
    }
  }
  registrations_.clear();
  for (ncclComm_t& comm : comms_) {
    if (comm != nullptr) (void)(abort ? ncclCommAbort(comm) : ncclCommDestroy(comm));
    comm = nullptr;
  }
  for (void*& p : memory_) {
    if (p != nullptr) (void)ncclMemFree(p);
    p = nullptr;
  }
  registered_bytes_ = 0;
}

}  // namespace fsdpsim
