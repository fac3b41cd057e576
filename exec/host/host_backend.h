#pragma once
/// One host rank as a Backend: a worker thread per IR stream consumes that stream's FIFO of commands (wait for an
/// op, start mark, allocate, work, end mark, release), so streams really run concurrently and an op waits only for
/// what the IR says. With a memory order, a worker about to perform an op's allocations or releases first waits for
/// its turn (every earlier event of the order done). Every wait is bounded: a rendezvous by the run's timeout, a
/// wait for another op or a memory turn by twice that (so that a collective's report comes first), an injected
/// stall by three times that.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/backend.h"
#include "exec/fault_report.h"
#include "exec/host/host_faults.h"
#include "exec/host/host_memory.h"
#include "exec/host/host_ops.h"
#include "exec/host/host_plan.h"
#include "exec/host/host_runner.h"
#include "exec/host/host_world.h"

namespace fsdpsim {

/// The faults injected into one rank, and the prediction its fault reports compare with.
struct HostRankFaults {
  std::vector<InjectedFault> faults;
  PredictedPeak* predicted = nullptr;  ///< shared by the ranks; may be null (no prediction)
};

/// One rank of a host run.
class HostBackend final : public Backend {
 public:
  /// `schedule`, `plan`, `options`, `world` and `faults.predicted` must outlive the backend.
  HostBackend(const Schedule& schedule, const HostPlan& plan, const HostOptions& options, HostWorld& world,
              int32_t rank, HostRankFaults faults = {});
  ~HostBackend() override;
  HostBackend(const HostBackend&) = delete;
  HostBackend& operator=(const HostBackend&) = delete;

  void setup(const Schedule& schedule) override;
  void begin_step(int32_t step) override;
  void wait(StreamId stream, OpId op) override;
  void mark_start(const Op& op) override;
  void allocate(BufferId buffer, StreamId stream) override;
  void run(const Op& op) override;
  void mark_end(const Op& op) override;
  void release(BufferId buffer, StreamId stream) override;
  StepMeasurement end_step() override;
  [[nodiscard]] std::vector<std::string> problems() const override;

  /// Records a problem found outside the backend (the runner's exceptions), under this rank's name.
  void add_problem(const std::string& message);

 private:
  enum class CommandKind : uint8_t { wait, start, allocate, work, end, release, stop };
  struct Command {
    CommandKind kind = CommandKind::stop;
    OpId op;
    BufferId buffer;
    bool first = false;  // the op's first allocation (or release): take the memory-order turn
    bool last = false;   // its last one: pass the turn on
  };
  struct Worker {
    std::thread thread;
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<Command> queue;
    OpId op;                           // enqueue side: the op whose allocations or releases are being enqueued
    size_t memory = 0;                 // enqueue side: how many of them were enqueued
    std::atomic<int32_t> working{-1};  // worker side: the op whose work runs now (-1: none), for timeout reports
  };

  void enqueue(StreamId stream, Command command);
  /// Starts (or ends) `op` on its stream's queue; its allocations or releases are enqueued next.
  void mark(const Op& op, CommandKind kind);
  /// Enqueues one of the `count` allocations (or releases) of the stream's current op, flagging the first and last.
  void enqueue_memory(BufferId buffer, StreamId stream, CommandKind kind, size_t count);
  void worker_loop(StreamId stream);
  void execute(StreamId stream, const Command& c);
  void do_work(const Op& op);
  [[nodiscard]] const InjectedFault* injected(HostFaultKind kind, OpId op, BufferId buffer) const;
  bool stall(const Op& op, const InjectedFault& fault);
  void fail_allocation(const Op& op, BufferId buffer);
  void await_op(StreamId stream, OpId op);
  void take_turn(StreamId stream, const Op& op, bool end);
  void pass_turn();
  [[nodiscard]] TimeNs now_ns() const;
  [[nodiscard]] TimeNs dependency_timeout_ns() const;
  void fail(const std::string& message);

  const Schedule& schedule_;
  const HostPlan& plan_;
  const HostOptions& options_;
  HostWorld& world_;
  int32_t rank_;
  HostRankFaults faults_;
  ProblemLog log_;
  HostStore host_;
  std::unique_ptr<RankMemory> memory_;
  std::vector<std::unique_ptr<Worker>> workers_;

  // Shared by the workers, under state_mutex_: op completion, the memory-order turn, and the commands in flight.
  mutable std::mutex state_mutex_;
  std::condition_variable state_cv_;
  std::vector<int32_t> done_steps_;             // per op: 1 + the last step in which it finished
  size_t turn_ = 0;                             // the next event of options_.memory_order
  std::vector<int32_t> start_turn_, end_turn_;  // per op: its events' positions in the order, or -1
  int64_t in_flight_ = 0;

  int32_t step_ = 0;
  std::chrono::steady_clock::time_point step_start_;
  std::vector<TimeNs> start_ns_, end_ns_;  // per op; each written by its stream's worker only
  std::atomic<uint64_t> checksum_{0};      // folded compute checksums (keeps the reads from being optimized away)
};

}  // namespace fsdpsim
