#include "exec/host/host_memory.h"

#include <algorithm>

#include "common/error.h"

namespace fsdpsim {

// ---------------------------------------------------------------------------------------------------------------
void ProblemLog::add(const std::string& message) {
  const std::lock_guard lock(mutex_);
  if (messages_.size() < limit_) {
    messages_.push_back("rank " + std::to_string(rank_) + ": " + message);
  } else {
    ++dropped_;
  }
}

std::vector<std::string> ProblemLog::list() const {
  const std::lock_guard lock(mutex_);
  std::vector<std::string> out = messages_;
  if (dropped_ > 0) {
    out.push_back("rank " + std::to_string(rank_) + ": " + std::to_string(dropped_) + " more problems not listed");
  }
  return out;
}

size_t ProblemLog::count() const {
  const std::lock_guard lock(mutex_);
  return messages_.size() + dropped_;
}

// ---------------------------------------------------------------------------------------------------------------
struct RankMemory::Storage {
  explicit Storage(int64_t n) : words(std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(n))), count(n) {}
  void poison() {
    for (int64_t i = 0; i < count; ++i) words[static_cast<size_t>(i)].store(kPoisonWord, std::memory_order_relaxed);
  }
  std::unique_ptr<std::atomic<uint32_t>[]> words;
  int64_t count = 0;
  std::atomic<bool> released{false};
};

// What one read saw of one region, for the checks.
struct RankMemory::RegionRead {
  BufferId buffer;
  int32_t region = -1;
  int32_t generation = 0;
  const Storage* storage = nullptr;
};

RankMemory::RankMemory(const Schedule& schedule, const HostPlan& plan, int32_t rank, AllocatorConfig allocator,
                       ProblemLog& problems)
    : schedule_(schedule), plan_(plan), rank_(rank), problems_(problems) {
  for (int32_t stage = 0; stage < std::max(1, schedule.info.pipeline_stages); ++stage) {
    accounting_.emplace_back(schedule, allocator, /*record_timeline=*/false);
  }
  buffers_.resize(schedule.buffers.size());
  for (size_t b = 0; b < buffers_.size(); ++b) buffers_[b].records.resize(plan.buffers[b].regions.size());
}

RankMemory::~RankMemory() = default;

std::shared_ptr<RankMemory::Storage> RankMemory::new_storage(BufferId buffer) {
  auto storage = std::make_shared<Storage>(plan_.buffers[buffer].words);
  storage->poison();
  return storage;
}

void RankMemory::setup_persistent() {
  Op setup;  // the writer of the model's initial state
  setup.id = {};
  setup.name = "setup";
  for (const Buffer& b : schedule_.buffers) {
    if (!b.persistent) continue;
    {
      const std::lock_guard lock(mutex_);
      BufferState& st = buffers_[b.id.index()];
      st.storage = new_storage(b.id);
      st.generation = 1;
      st.live = true;
      account_allocate(b.id, OpId::none(), StreamId(std::max(0, schedule_.compute_stream(b.stage).value())));
    }
    std::vector<int32_t> all(plan_.buffers[b.id].regions.size());
    for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int32_t>(r);
    write_pattern(b.id, all, setup, -1);
  }
}

void RankMemory::begin_step(int32_t step) {
  const std::lock_guard lock(mutex_);
  step_ = step;
  for (MemoryTracker& stage : accounting_) stage.reset_peaks(0, step);
}

void RankMemory::end_step() {
  const std::lock_guard lock(mutex_);
  quarantine_.clear();
}

void RankMemory::allocate(BufferId buffer, const Op& op, StreamId stream) {
  auto storage = new_storage(buffer);  // poisoned outside the lock
  const std::lock_guard lock(mutex_);
  BufferState& st = buffers_[buffer.index()];
  if (st.live) {
    problems_.add("op " + who(op) + " allocated buffer " + what(buffer) + " while it was already allocated");
    return;
  }
  st.storage = std::move(storage);
  ++st.generation;
  st.live = true;
  account_allocate(buffer, op.id, stream);
}

void RankMemory::release(BufferId buffer, const Op& op) {
  std::shared_ptr<Storage> storage;
  {
    const std::lock_guard lock(mutex_);
    BufferState& st = buffers_[buffer.index()];
    if (st.failed) {  // its allocation failed and was reported: there is nothing to release
      st.failed = false;
      return;
    }
    if (!st.live) {
      problems_.add("op " + who(op) + " released buffer " + what(buffer) + " while it was not allocated");
      return;
    }
    st.live = false;
    storage = std::move(st.storage);
    storage->released.store(true, std::memory_order_relaxed);
    tracker(buffer).release(buffer, 0);
  }
  storage->poison();  // a late reader reads poison, never freed memory
  const std::lock_guard lock(mutex_);
  quarantine_.push_back(std::move(storage));
}

AllocationFailure RankMemory::fail_allocation(BufferId buffer, const Op& op, int32_t step) {
  const std::lock_guard lock(mutex_);
  buffers_[buffer.index()].failed = true;
  const MemoryTracker& stage = tracker(buffer);
  return AllocationFailure{buffer, op.id, step, stage.allocated_bytes(), stage.live_bytes()};
}

// ---------------------------------------------------------------------------------------------------------------
void RankMemory::account_allocate(BufferId buffer, OpId op, StreamId stream) {
  MemoryTracker& stage = tracker(buffer);
  const bool had_failed = stage.oom().has_value();
  stage.allocate(buffer, op, stream, 0, step_);
  if (!had_failed && stage.oom()) {
    problems_.add("the caching-allocator model has no room for buffer " + what(buffer) + " (" +
                  std::to_string(schedule_.buffers[buffer].size_bytes) + " B) allocated by op " + to_string(op) +
                  ": the rank would run out of memory (HostOptions::allocator_capacity_bytes)");
  }
}

MemoryTracker& RankMemory::tracker(BufferId buffer) {
  const auto stage = static_cast<size_t>(std::max(0, schedule_.buffers[buffer].stage));
  return accounting_[std::min(stage, accounting_.size() - 1)];
}

int64_t RankMemory::allocated_bytes() const {
  const std::lock_guard lock(mutex_);
  int64_t total = 0;
  for (const MemoryTracker& stage : accounting_) total += stage.allocated_bytes();
  return total;
}

int64_t RankMemory::live_rounded_bytes() const {
  const std::lock_guard lock(mutex_);
  int64_t total = 0;
  for (const MemoryTracker& stage : accounting_) {
    for (const int64_t bytes : stage.live_bytes()) total += bytes;
  }
  return total;
}

MemoryPeak RankMemory::peak(int32_t stage) const {
  const std::lock_guard lock(mutex_);
  return accounting_[static_cast<size_t>(std::clamp(stage, 0, static_cast<int32_t>(accounting_.size()) - 1))]
      .peak_allocated();
}

// ---------------------------------------------------------------------------------------------------------------
RankMemory::LiveStorage RankMemory::live_storage_or_report(BufferId buffer, const Op& op, const char* verb) {
  const std::lock_guard lock(mutex_);
  const BufferState& st = buffers_[buffer.index()];
  if (!st.live) {
    problems_.add("op " + who(op) + " " + verb + " buffer " + what(buffer) +
                  " while it was not allocated (before its allocation or after its release): a missing dependency");
    return {};
  }
  return {st.storage, st.generation};
}

int64_t RankMemory::region_words(BufferId buffer, int32_t first, int32_t count) const {
  const auto& regions = plan_.buffers[buffer].regions;
  FSDPSIM_CHECK(first >= 0 && count >= 1 && first + count <= static_cast<int32_t>(regions.size()), "region range");
  const WordRegion& last = regions[static_cast<size_t>(first + count - 1)];
  return last.offset + last.words - regions[static_cast<size_t>(first)].offset;
}

bool RankMemory::read(BufferId buffer, int32_t first, int32_t count, const Op& reader, std::vector<uint32_t>& values) {
  const auto [storage, generation] = live_storage_or_report(buffer, reader, "read");
  if (storage == nullptr) {
    values.resize(values.size() + static_cast<size_t>(region_words(buffer, first, count)), 0);
    return false;
  }
  const auto& regions = plan_.buffers[buffer].regions;
  bool ok = true;
  std::vector<uint32_t> words;
  for (int32_t r = first; r < first + count; ++r) {
    const WordRegion& region = regions[static_cast<size_t>(r)];
    words.resize(static_cast<size_t>(region.words));
    for (int64_t i = 0; i < region.words; ++i) {
      words[static_cast<size_t>(i)] =
          storage->words[static_cast<size_t>(region.offset + i)].load(std::memory_order_relaxed);
    }
    ok = check_region(RegionRead{buffer, r, generation, storage.get()}, reader, words) && ok;
    for (const uint32_t w : words) values.push_back(w & kValueMask);
  }
  return ok;
}

bool RankMemory::check_region(const RegionRead& r, const Op& reader, std::span<const uint32_t> words) {
  const uint32_t tag = buffer_tag(r.buffer, r.generation);
  int64_t poison = 0, foreign = 0;
  for (const uint32_t w : words) {
    poison += w == kPoisonWord;
    foreign += w != kPoisonWord && word_tag(w) != tag;
  }
  const std::string head = "op " + who(reader) + " read buffer " + what(r.buffer);
  const std::string counts = " (" + std::to_string(poison + foreign) + " of " + std::to_string(words.size()) + " words";
  if (poison > 0 && r.storage->released.load(std::memory_order_relaxed)) {
    problems_.add(head + " after it was released: a missing dependency" + counts + " were poison)");
    return false;
  }
  if (poison > 0) {
    problems_.add(head + " before it was written: a missing dependency" + counts + " were poison)");
    return false;
  }
  if (foreign > 0) {
    problems_.add(head + " holding stale data of another buffer or an earlier allocation: a missing dependency" +
                  counts + " had a foreign tag)");
    return false;
  }
  const uint64_t sum = words_checksum(words);
  const std::lock_guard lock(mutex_);
  const RegionRecord& rec = buffers_[r.buffer.index()].records[static_cast<size_t>(r.region)];
  if (rec.generation != r.generation || rec.checksum != sum) {
    problems_.add(head + " whose data do not match what " + writer_name(rec.writer) +
                  " wrote (corrupted, or overwritten while it was read: a missing dependency)");
    return false;
  }
  return true;
}

void RankMemory::write(BufferId buffer, int32_t first, int32_t count, const Op& writer,
                       std::span<const uint32_t> values) {
  FSDPSIM_CHECK(static_cast<int64_t>(values.size()) == region_words(buffer, first, count), "write covers regions");
  const auto [storage, generation] = live_storage_or_report(buffer, writer, "wrote");
  if (storage == nullptr) return;
  const uint32_t tag = buffer_tag(buffer, generation);
  const auto& regions = plan_.buffers[buffer].regions;
  const int64_t base = regions[static_cast<size_t>(first)].offset;
  std::vector<uint64_t> sums;
  std::vector<uint32_t> words;
  for (int32_t r = first; r < first + count; ++r) {
    const WordRegion& region = regions[static_cast<size_t>(r)];
    words.resize(static_cast<size_t>(region.words));
    for (int64_t i = 0; i < region.words; ++i) {
      words[static_cast<size_t>(i)] = make_word(tag, values[static_cast<size_t>(region.offset - base + i)]);
      storage->words[static_cast<size_t>(region.offset + i)].store(words[static_cast<size_t>(i)],
                                                                   std::memory_order_relaxed);
    }
    sums.push_back(words_checksum(words));
  }
  const std::lock_guard lock(mutex_);
  if (storage->released.load(std::memory_order_relaxed)) {
    problems_.add("op " + who(writer) + " wrote buffer " + what(buffer) +
                  " while it was being released: a missing dependency");
    return;
  }
  auto& records = buffers_[buffer.index()].records;
  for (int32_t r = first; r < first + count; ++r) {
    records[static_cast<size_t>(r)] = RegionRecord{generation, writer.id, sums[static_cast<size_t>(r - first)]};
  }
}

void RankMemory::write_pattern(BufferId buffer, const std::vector<int32_t>& regions, const Op& writer, int32_t step) {
  const auto& layout = plan_.buffers[buffer].regions;
  std::vector<uint32_t> values;
  for (const int32_t r : regions) {
    const uint64_t seed = pattern_seed(rank_, writer.id, step, buffer, r);
    values.clear();
    for (int64_t i = 0; i < layout[static_cast<size_t>(r)].words; ++i) values.push_back(pattern_value(seed, i));
    write(buffer, r, 1, writer, values);
  }
}

void RankMemory::corrupt_word_for_test(BufferId buffer, int64_t index, uint32_t word) {
  const std::lock_guard lock(mutex_);
  const BufferState& st = buffers_[buffer.index()];
  FSDPSIM_CHECK(st.live && index >= 0 && index < st.storage->count, "corrupt a live word");
  st.storage->words[static_cast<size_t>(index)].store(word, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------------------------
std::string RankMemory::who(const Op& op) const {
  return std::to_string(op.id.value()) + " '" + op.name + "'";
}

std::string RankMemory::what(BufferId buffer) const {
  return to_string(buffer) + " '" + schedule_.buffers[buffer].name + "'";
}

std::string RankMemory::writer_name(OpId writer) const {
  if (!writer.valid()) return "the setup";
  return "op " + who(schedule_.ops[writer]);
}

}  // namespace fsdpsim
