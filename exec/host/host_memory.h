#pragma once
/// One rank's buffers in host memory: real words for every live buffer, poison on allocation and release, tagged
/// data, a record of who wrote each region last (and the checksum of what it wrote), and the memory accounting
/// the simulator does (the same MemoryTracker, memory/memory_tracker.h, driven by the same allocation calls, so the
/// allocated bytes — which count a whole block where PyTorch does not split it — are the simulator's). A pipeline
/// schedule holds one GPU of every stage: each stage's buffers are counted by that stage's own tracker, as the
/// simulator counts them.
///
/// Thread safety: every stream worker of the rank calls in concurrently. Metadata sit behind one mutex; the words
/// are accessed through relaxed atomics, so a missing dependency is a detectable logical race, never undefined
/// behaviour. Released memory stays poisoned in quarantine until end_step(): a late reader reads poison.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "exec/fault_report.h"
#include "exec/host/host_plan.h"
#include "memory/memory_tracker.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Where problems found on one rank go (bounded; thread-safe).
class ProblemLog {
 public:
  /// `rank` prefixes every message ("rank 3: ...").
  explicit ProblemLog(int32_t rank, size_t limit = 64) : rank_(rank), limit_(limit) {}
  /// Records one problem; past the limit only counts it.
  void add(const std::string& message);
  /// The problems, plus one line counting those past the limit.
  [[nodiscard]] std::vector<std::string> list() const;
  [[nodiscard]] size_t count() const;

 private:
  int32_t rank_;
  size_t limit_;
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
  size_t dropped_ = 0;
};

/// One rank's memory.
class RankMemory {
 public:
  /// `allocator` drives the byte accounting; `compute_stream` is where persistent buffers are allocated.
  RankMemory(const Schedule& schedule, const HostPlan& plan, int32_t rank, AllocatorConfig allocator,
             ProblemLog& problems);
  ~RankMemory();
  RankMemory(const RankMemory&) = delete;
  RankMemory& operator=(const RankMemory&) = delete;

  /// Allocates every persistent buffer on its stage's compute stream, as the simulator does, and fills it with valid
  /// data (the model's state).
  void setup_persistent();
  /// Starts a step: the peak restarts from what is live now.
  void begin_step(int32_t step);
  /// Frees the memory released during the step (no reader can still run).
  void end_step();
  /// Allocates `buffer` for `op` on `stream`: fresh poisoned words, a new generation, and the accounting.
  void allocate(BufferId buffer, const Op& op, StreamId stream);
  /// Releases `buffer` after `op`: poisons it and keeps it in quarantine.
  void release(BufferId buffer, const Op& op);
  /// Records that allocating `buffer` for `op` in `step` failed (an injected fault): the buffer stays unallocated,
  /// its release later is a no-op, and what was in use at that moment comes back for the report.
  AllocationFailure fail_allocation(BufferId buffer, const Op& op, int32_t step);

  /// Reads regions [first, first + count) of `buffer` for `reader`, checks every word (poison, tag) and each region
  /// against its writer's checksum, and appends the values (low 20 bits) to `values`. False when a problem was
  /// reported.
  bool read(BufferId buffer, int32_t first, int32_t count, const Op& reader, std::vector<uint32_t>& values);
  /// Writes `values` into regions [first, first + count) of `buffer` for `writer` (tagged with the buffer's current
  /// allocation) and records each region's checksum. `values` must cover the regions exactly.
  void write(BufferId buffer, int32_t first, int32_t count, const Op& writer, std::span<const uint32_t> values);
  /// Writes each of `regions` of `buffer` with the pattern of (rank, writer, step, buffer, region).
  void write_pattern(BufferId buffer, const std::vector<int32_t>& regions, const Op& writer, int32_t step);
  /// Words of regions [first, first + count) of `buffer`.
  [[nodiscard]] int64_t region_words(BufferId buffer, int32_t first, int32_t count) const;

  /// The allocated peak of the current step on pipeline stage `stage` (its time is not kept: host times are not the
  /// GPU's).
  [[nodiscard]] MemoryPeak peak(int32_t stage = 0) const;
  /// Pipeline stages counted separately (1 without pipeline parallelism).
  [[nodiscard]] int32_t stages() const { return static_cast<int32_t>(accounting_.size()); }
  /// Allocated bytes now (the allocator model's), over every stage.
  [[nodiscard]] int64_t allocated_bytes() const;
  /// Live buffer bytes now, each rounded as the allocator rounds a request (what a Σ over live buffers gives), over
  /// every stage.
  [[nodiscard]] int64_t live_rounded_bytes() const;

  /// Overwrites word `index` of `buffer`'s live memory (tests: simulate corruption).
  void corrupt_word_for_test(BufferId buffer, int64_t index, uint32_t word);

 private:
  struct Storage;
  struct RegionRecord {
    int32_t generation = -1;
    OpId writer;  // none for setup
    uint64_t checksum = 0;
  };
  struct BufferState {
    std::shared_ptr<Storage> storage;
    int32_t generation = 0;
    bool live = false;
    bool failed = false;  // its allocation failed (fail_allocation): its release is a no-op
    std::vector<RegionRecord> records;
  };
  struct RegionRead;
  /// A live buffer's storage and generation, taken under the lock so that the words can be touched outside it.
  struct LiveStorage {
    std::shared_ptr<Storage> storage;  // null: the buffer was not allocated
    int32_t generation = 0;
  };

  std::shared_ptr<Storage> new_storage(BufferId buffer);
  /// The buffer's storage while it is allocated; otherwise reports that `op` `verb` (read, wrote) it while it was not
  /// allocated, a missing dependency, and returns null storage.
  LiveStorage live_storage_or_report(BufferId buffer, const Op& op, const char* verb);
  void account_allocate(BufferId buffer, OpId op, StreamId stream);
  /// The tracker of the stage that holds `buffer` (under mutex_).
  MemoryTracker& tracker(BufferId buffer);
  bool check_region(const RegionRead& r, const Op& reader, std::span<const uint32_t> words);
  [[nodiscard]] std::string who(const Op& op) const;
  [[nodiscard]] std::string what(BufferId buffer) const;
  [[nodiscard]] std::string writer_name(OpId writer) const;

  const Schedule& schedule_;
  const HostPlan& plan_;
  int32_t rank_;
  ProblemLog& problems_;
  mutable std::mutex mutex_;
  std::vector<BufferState> buffers_;
  std::vector<std::shared_ptr<Storage>> quarantine_;
  // The simulator's, one per pipeline stage: allocator model, bytes per category, peak, first failure.
  std::deque<MemoryTracker> accounting_;
  int32_t step_ = 0;
};

}  // namespace fsdpsim
