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
  const std::vector<ncclComm_t*> all = all_locked();
  if (!aborted_ && std::any_of(all.begin(), all.end(), [](ncclComm_t* c) { return *c != nullptr; })) abort_locked();
  for (void*& p : memory_) {
    if (p != nullptr) (void)ncclMemFree(p);
    p = nullptr;
  }
  registered_bytes_ = 0;
  // A split whose wait failed may still complete in NCCL's background thread and write its slot: leave the slots
  // (a few bytes) to it rather than free memory NCCL may write.
  if (splits_pending_) {
    (void)split_slots_.release();
    (void)channel_slots_.release();
  } else {
    split_slots_.reset();
    channel_slots_.reset();
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
  std::vector<ncclComm_t*> all = all_locked();
  std::rotate(all.begin(), all.begin() + 1, all.end());  // the world last, after every communicator split from it
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
    channels_.clear();
    channel_groups_.clear();
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
  ncclComm_t comm = split_from_world(&split_slots_[g], members_[g].color, rank, members_[g], w);
  const std::lock_guard lock(mutex_);
  comms_[g] = comm;
}

ncclComm_t NcclGroups::split_from_world(ncclComm_t* slot, int32_t color, int32_t key, const GroupMembership& expected,
                                        const NcclWait& w) {
  ncclConfig_t config = nonblocking_config();  // the child of a nonblocking world is nonblocking too; say so anyway
  {
    const std::lock_guard lock(mutex_);
    if (aborted_) aborted_error(w.what);
    splits_pending_ = true;
    FSDPSIM_NCCL_NB(ncclCommSplit(world_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, slot, &config));
  }
  if (color < 0) {
    // A rank outside every new communicator gets none; its part of the split (exchanging colours over the world)
    // runs as a job of the world communicator, whose state is ncclInProgress until it ends (PyTorch's
    // NCCLComm::split waits for the parent the same way, torch/csrc/distributed/c10d/NCCLUtils.cpp).
    wait_ready(world_, w);
    splits_pending_ = false;
    return nullptr;
  }
  ncclComm_t comm = wait_new_comm(slot, world_, w);
  // NCCL writes the new communicator at the end of the split's job but resets the parent's state from ncclInProgress
  // only after that job returns (group.cc, groupLaunch): the next split of the world would find it still in progress
  // and refuse it (ncclInvalidArgument, "use communicator before the previous operation returned ncclSuccess").
  wait_ready(world_, w);
  splits_pending_ = false;
  int count = 0, user_rank = 0;
  FSDPSIM_NCCL(ncclCommCount(comm, &count));
  FSDPSIM_NCCL(ncclCommUserRank(comm, &user_rank));
  if (count != expected.size || user_rank != expected.rank) {
    (void)ncclCommAbort(comm);
    throw CudaError(w.what + " gave rank " + std::to_string(user_rank) + " of " + std::to_string(count) +
                        ", expected rank " + std::to_string(expected.rank) + " of " + std::to_string(expected.size),
                    false);
  }
  return comm;
}

void NcclGroups::setup_channels(const Schedule& schedule, const std::vector<P2pChannel>& channels, int32_t rank,
                                const NcclWait& wait) {
  {
    const std::lock_guard lock(mutex_);
    channels_.assign(channels.size(), nullptr);
    channel_groups_.clear();
    for (const P2pChannel& c : channels) channel_groups_.push_back(c.group);
    last_.assign(1 + comms_.size() + channels.size(), IssuedOp{});
    if (world_ == nullptr || channels.empty()) return;
  }
  channel_slots_ = std::make_unique<ncclComm_t[]>(channels.size());
  for (size_t c = 0; c < channels.size(); ++c) split_channel(schedule, channels[c], c, rank, wait);
}

void NcclGroups::split_channel(const Schedule& schedule, const P2pChannel& channel, size_t index, int32_t rank,
                               const NcclWait& wait) {
  const ChannelMembership m = channel_membership(schedule, channel, rank);
  NcclWait w = wait;
  w.what = "ncclCommSplit for the pipeline channel from stream '" + schedule.streams[channel.send_stream].name +
           "' to stream '" + schedule.streams[channel.recv_stream].name + "'";
  ncclComm_t comm = split_from_world(&channel_slots_[index], m.color, m.rank, GroupMembership{m.color, m.rank, 2}, w);
  const std::lock_guard lock(mutex_);
  channels_[index] = comm;
}

void NcclGroups::register_buffers(const Schedule& schedule, int32_t stage, const NcclWait& wait,
                                  const std::function<void(BufferId, ncclResult_t)>& alloc_failed) {
  memory_.assign(schedule.buffers.size(), nullptr);
  const bool windows = windows_available();
  (void)windows;  // unused where NCCL is older than 2.27
  for (size_t b = 0; b < schedule.buffers.size(); ++b) {
    const Buffer& buffer = schedule.buffers[b];
    if (!buffer.nccl_registered || buffer.size_bytes <= 0 || (stage >= 0 && buffer.stage != stage)) continue;
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
  enqueue_at(group.valid() ? group.index() + 1 : 0, issued, call, wait);
}

void NcclGroups::enqueue_channel(int32_t channel, IssuedOp issued, const std::function<ncclResult_t(ncclComm_t)>& call,
                                 const NcclWait& wait) {
  enqueue_at(1 + comms_.size() + static_cast<size_t>(channel), issued, call, wait);
}

void NcclGroups::enqueue_at(size_t slot, IssuedOp issued, const std::function<ncclResult_t(ncclComm_t)>& call,
                            const NcclWait& wait) {
  ncclResult_t result = ncclSuccess;
  {
    const std::lock_guard lock(mutex_);
    if (aborted_) aborted_error(wait.what);
    ncclComm_t comm = slot_locked(slot);
    FSDPSIM_CHECK(comm != nullptr,
                  "an NCCL call needs the communicator of its group or channel (none when emulating or off its ends)");
    if (issued.op.valid()) last_[slot] = issued;
    result = call(comm);
  }
  if (result == ncclSuccess) return;
  if (result != ncclInProgress) throw_nccl_error(result, wait.what.c_str(), __FILE__, __LINE__);
  wait_until_ready(slot, wait);
}

void NcclGroups::wait_until_ready(size_t slot, const NcclWait& wait) {
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    std::string detail;
    {
      // Each poll takes the lock, so the watchdog may abort the communicators between two polls.
      const std::lock_guard lock(mutex_);
      if (aborted_) aborted_error(wait.what);
      ncclComm_t comm = slot_locked(slot);
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
  for (const auto* list : {&comms_, &channels_}) {
    for (ncclComm_t c : *list) count += c != nullptr ? 1 : 0;
  }
  return count;
}

std::optional<CommFailure> NcclGroups::async_failure() const {
  const std::lock_guard lock(mutex_);
  if (aborted_) return std::nullopt;
  for (size_t slot = 0; slot < 1 + comms_.size() + channels_.size(); ++slot) {
    ncclComm_t comm = slot_locked(slot);
    if (comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
    if (queried != ncclSuccess) state = queried;
    if (state == ncclSuccess || state == ncclInProgress) continue;
    const char* detail = ncclGetLastError(comm);
    // A channel's failure is reported against the IR group its sends and receives name.
    const GroupId group = slot == 0               ? GroupId::none()
                          : slot <= comms_.size() ? GroupId(static_cast<int32_t>(slot - 1))
                                                  : channel_groups_[slot - 1 - comms_.size()];
    return CommFailure{group, state, detail != nullptr ? detail : "", last_[slot]};
  }
  return std::nullopt;
}

bool NcclGroups::abort_all() noexcept {
  const std::lock_guard lock(mutex_);
  if (aborted_) return false;
  const std::vector<ncclComm_t*> all = all_locked();
  if (std::none_of(all.begin(), all.end(), [](ncclComm_t* c) { return *c != nullptr; })) return false;
  abort_locked();
  return true;
}

void NcclGroups::abort_locked() noexcept {
  // ncclCommAbort stops the device work of the communicator and frees it (it returns ncclSuccess, or ncclInProgress
  // while it finishes in the background for a nonblocking one): the handle must never be used again.
  std::vector<ncclComm_t*> all = all_locked();
  std::rotate(all.begin(), all.begin() + 1, all.end());  // the world last
  for (ncclComm_t* comm : all) {
    if (*comm != nullptr) (void)ncclCommAbort(*comm);
    *comm = nullptr;
  }
  registrations_.clear();  // the registrations went with their communicators
  aborted_ = true;
}

ncclComm_t NcclGroups::comm_locked(GroupId group) const {
  return slot_locked(group.valid() ? group.index() + 1 : 0);
}

ncclComm_t NcclGroups::slot_locked(size_t slot) const {
  if (slot == 0) return world_;
  if (slot <= comms_.size()) return comms_[slot - 1];
  return channels_[slot - 1 - comms_.size()];
}

std::vector<ncclComm_t*> NcclGroups::all_locked() {
  std::vector<ncclComm_t*> all{&world_};
  for (ncclComm_t& c : comms_) all.push_back(&c);
  for (ncclComm_t& c : channels_) all.push_back(&c);
  return all;
}

}  // namespace fsdpsim
