#include "exec/host/host_backend.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <utility>

#include "common/error.h"

namespace fsdpsim {
namespace {

// How often a blocked worker looks at the world's abort flag (an abort elsewhere does not signal our condition).
constexpr auto kAbortPoll = std::chrono::milliseconds(10);

// The allocator model's capacity when none is given: larger than any schedule, so the host never reports OOM.
constexpr int64_t kUnlimitedBytes = std::numeric_limits<int64_t>::max() / 4;

}  // namespace

HostBackend::HostBackend(const Schedule& schedule, const HostPlan& plan, const HostOptions& options, HostWorld& world,
                         int32_t rank, HostRankFaults faults)
    : schedule_(schedule),
      plan_(plan),
      options_(options),
      world_(world),
      rank_(rank),
      faults_(std::move(faults)),
      log_(rank) {}

HostBackend::~HostBackend() {
  for (auto& w : workers_) {
    {
      const std::lock_guard lock(w->mutex);
      w->queue.push_back(Command{});  // stop, after whatever is still queued
    }
    w->cv.notify_one();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void HostBackend::setup(const Schedule& schedule) {
  FSDPSIM_CHECK(schedule.ops.size() == schedule_.ops.size(), "the backend runs the schedule it was made for");
  const int64_t capacity = options_.allocator_capacity_bytes > 0 ? options_.allocator_capacity_bytes : kUnlimitedBytes;
  memory_ = std::make_unique<RankMemory>(schedule_, plan_, rank_, AllocatorConfig{capacity, false, 0}, log_);
  // Like the simulator: persistent buffers first, on their stage's compute stream (sim/stage_memories.cpp, StageMemories::allocate_persistent).
  memory_->setup_persistent();
  done_steps_.assign(schedule_.ops.size(), 0);
  start_turn_.assign(schedule_.ops.size(), -1);
  end_turn_.assign(schedule_.ops.size(), -1);
  for (size_t i = 0; i < options_.memory_order.size(); ++i) {
    const MemoryEvent& e = options_.memory_order[i];
    (e.end ? end_turn_ : start_turn_)[e.op.index()] = static_cast<int32_t>(i);
  }
  start_ns_.assign(schedule_.ops.size(), -1);
  end_ns_.assign(schedule_.ops.size(), -1);
  // Every worker exists before any thread starts: the threads index workers_, which must not grow under them.
  for (size_t st = 0; st < schedule_.streams.size(); ++st) workers_.push_back(std::make_unique<Worker>());
  for (size_t st = 0; st < workers_.size(); ++st) {
    workers_[st]->thread = std::thread([this, st] { worker_loop(StreamId(static_cast<int32_t>(st))); });
  }
}

void HostBackend::begin_step(int32_t step) {
  const std::lock_guard lock(state_mutex_);  // every stream is idle: end_step() drained them
  step_ = step;
  turn_ = 0;
  memory_->begin_step(step);
  step_start_ = std::chrono::steady_clock::now();
}

void HostBackend::wait(StreamId stream, OpId op) {
  enqueue(stream, Command{.kind = CommandKind::wait, .op = op, .buffer = {}, .first = false, .last = false});
}

void HostBackend::mark(const Op& op, CommandKind kind) {
  Worker& w = *workers_[op.stream.index()];
  w.op = op.id;
  w.memory = 0;
  enqueue(op.stream, Command{.kind = kind, .op = op.id, .buffer = {}, .first = false, .last = false});
}

void HostBackend::enqueue_memory(BufferId buffer, StreamId stream, CommandKind kind, size_t count) {
  Worker& w = *workers_[stream.index()];
  const size_t index = w.memory++;
  enqueue(stream, Command{kind, w.op, buffer, index == 0, index + 1 == count});
}

void HostBackend::mark_start(const Op& op) {
  mark(op, CommandKind::start);
}

void HostBackend::allocate(BufferId buffer, StreamId stream) {
  const OpId op = workers_[stream.index()]->op;
  enqueue_memory(buffer, stream, CommandKind::allocate, schedule_.ops[op].allocs.size());
}

void HostBackend::run(const Op& op) {
  enqueue(op.stream, Command{.kind = CommandKind::work, .op = op.id, .buffer = {}, .first = false, .last = false});
}

void HostBackend::mark_end(const Op& op) {
  mark(op, CommandKind::end);
}

void HostBackend::release(BufferId buffer, StreamId stream) {
  const OpId op = workers_[stream.index()]->op;
  enqueue_memory(buffer, stream, CommandKind::release, schedule_.ops[op].frees.size());
}

StepMeasurement HostBackend::end_step() {
  {
    std::unique_lock lock(state_mutex_);
    state_cv_.wait(lock, [&] { return in_flight_ == 0; });  // every wait inside is bounded by the timeout
  }
  StepMeasurement m;
  m.start_ns = start_ns_;
  m.end_ns = end_ns_;
  for (const TimeNs end : end_ns_) m.step_ns = std::max(m.step_ns, end);
  // A pipeline's figures are the fullest stage's, as the simulator reports them (no caching allocator holds memory on
  // the host, so the reserved peak is the allocated one).
  if (memory_->stages() > 1) {
    for (int32_t stage = 0; stage < memory_->stages(); ++stage) {
      const MemoryPeak p = memory_->peak(stage);
      m.stage_peaks.push_back(StagePeaks{p, p});
      if (p.bytes > m.stage_peaks[static_cast<size_t>(m.memory_stage)].allocated.bytes) m.memory_stage = stage;
    }
  }
  const MemoryPeak peak = memory_->peak(m.memory_stage);
  m.peak_allocated_bytes = peak.bytes;
  m.peak_reserved_bytes = peak.bytes;  // no caching allocator holds memory on the host
  m.peak_op = peak.op;
  m.peak_breakdown = peak.breakdown;
  memory_->end_step();
  return m;
}

std::vector<std::string> HostBackend::problems() const {
  return log_.list();
}

void HostBackend::add_problem(const std::string& message) {
  log_.add(message);
}

// ---------------------------------------------------------------------------------------------------------------
void HostBackend::enqueue(StreamId stream, Command command) {
  {
    const std::lock_guard lock(state_mutex_);
    ++in_flight_;
  }
  Worker& w = *workers_[stream.index()];
  {
    const std::lock_guard lock(w.mutex);
    w.queue.push_back(command);
  }
  w.cv.notify_one();
}

void HostBackend::worker_loop(StreamId stream) {
  Worker& w = *workers_[stream.index()];
  for (;;) {
    Command c;
    {
      std::unique_lock lock(w.mutex);
      w.cv.wait(lock, [&] { return !w.queue.empty(); });
      c = w.queue.front();
      w.queue.pop_front();
    }
    if (c.kind == CommandKind::stop) return;
    try {
      execute(stream, c);
    } catch (const std::exception& e) {
      fail("internal error in op " + to_string(c.op) + ": " + e.what());
    }
    const std::lock_guard lock(state_mutex_);
    if (--in_flight_ == 0) state_cv_.notify_all();
  }
}

void HostBackend::execute(StreamId stream, const Command& c) {
  const Op& op = schedule_.ops[c.op];
  switch (c.kind) {
    case CommandKind::wait:
      await_op(stream, c.op);
      return;
    case CommandKind::start:
      start_ns_[c.op.index()] = now_ns();
      return;
    case CommandKind::allocate:
      if (c.first) take_turn(stream, op, false);
      // Once the run has stopped, memory is left as it is: what the other streams do then is no longer in order,
      // and reporting it would bury the fault under its consequences.
      if (injected(HostFaultKind::fail_alloc, op.id, c.buffer) != nullptr) {
        fail_allocation(op, c.buffer);
      } else if (!world_.aborted()) {
        memory_->allocate(c.buffer, op, stream);
      }
      if (c.last && start_turn_[c.op.index()] >= 0) pass_turn();
      return;
    case CommandKind::work: {
      std::atomic<int32_t>& working = workers_[stream.index()]->working;
      working.store(op.id.value());
      if (!world_.aborted()) do_work(op);
      working.store(-1);
      return;
    }
    case CommandKind::end: {
      end_ns_[c.op.index()] = now_ns();
      const std::lock_guard lock(state_mutex_);
      done_steps_[c.op.index()] = step_ + 1;
      state_cv_.notify_all();
      return;
    }
    case CommandKind::release:
      if (c.first) take_turn(stream, op, true);
      if (!world_.aborted()) memory_->release(c.buffer, op);
      if (c.last && end_turn_[c.op.index()] >= 0) pass_turn();
      return;
    case CommandKind::stop:
      return;
  }
}

void HostBackend::do_work(const Op& op) {
  const InjectedFault* stalled = injected(HostFaultKind::stall_rank, op.id, BufferId::none());
  if (stalled != nullptr && !stall(op, *stalled)) return;
  RankContext ctx{schedule_, plan_, options_, world_, *memory_, log_, host_, rank_};
  if (is_collective(op.kind)) {
    run_collective_op(op, step_, ctx);
  } else if (is_p2p(op.kind)) {
    run_p2p_op(op, step_, ctx);
  } else if (op.kind == OpKind::copy && (op.send_bytes > 0 || op.recv_bytes > 0)) {
    run_host_copy(op, step_, ctx);
  } else if (op.kind != OpKind::sync) {
    checksum_.fetch_xor(run_compute_op(op, step_, ctx), std::memory_order_relaxed);
  }
}

void HostBackend::await_op(StreamId stream, OpId op) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(dependency_timeout_ns());
  std::unique_lock lock(state_mutex_);
  while (done_steps_[op.index()] <= step_) {
    if (world_.aborted()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      const Op& o = schedule_.ops[op];
      lock.unlock();
      // What the awaited op's stream is busy with is usually the op to look at.
      const int32_t busy = workers_[o.stream.index()]->working.load();
      std::string in;
      if (busy >= 0 && busy != op.value()) {
        in = " (stream '" + schedule_.streams[o.stream].name + "' is still in " +
             describe_op(schedule_.ops[OpId(busy)]) + ")";
      }
      fail("stream '" + schedule_.streams[stream].name + "' waited " + format_time_ns(dependency_timeout_ns()) +
           " for op " + to_string(op) + " '" + o.name + "' to finish, and it did not" + in);
      return;
    }
    state_cv_.wait_for(lock, kAbortPoll);
  }
}

void HostBackend::take_turn(StreamId stream, const Op& op, bool end) {
  const int32_t position = (end ? end_turn_ : start_turn_)[op.id.index()];
  if (position < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(dependency_timeout_ns());
  std::unique_lock lock(state_mutex_);
  while (turn_ != static_cast<size_t>(position)) {
    if (world_.aborted()) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      const MemoryEvent& pending = options_.memory_order[turn_];
      const Op& blocker = schedule_.ops[pending.op];
      lock.unlock();
      fail("stream '" + schedule_.streams[stream].name + "' waited " + format_time_ns(dependency_timeout_ns()) +
           " for its turn in the memory order to " +
           (end ? "release the buffers of op " : "allocate the buffers of op ") + std::to_string(op.id.value()) + " '" +
           op.name + "' (event " + std::to_string(position) + "), but event " + std::to_string(turn_) + " (the " +
           (pending.end ? "end" : "start") + " of op " + std::to_string(blocker.id.value()) + " '" + blocker.name +
           "') never happened: the memory order contradicts the schedule's dependencies");
      return;
    }
    state_cv_.wait_for(lock, kAbortPoll);
  }
}

void HostBackend::pass_turn() {
  const std::lock_guard lock(state_mutex_);
  ++turn_;
  state_cv_.notify_all();
}

TimeNs HostBackend::dependency_timeout_ns() const {
  // A wait for another op (or a memory turn) is downstream of whatever that op waits for, typically a collective:
  // giving up later than a rendezvous lets the collective's report, which names who arrived and who did not, come
  // first instead of racing it.
  return 2 * options_.timeout_ns;
}

TimeNs HostBackend::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - step_start_).count();
}

void HostBackend::fail(const std::string& message) {
  log_.add(message);
  world_.abort();
}

}  // namespace fsdpsim
