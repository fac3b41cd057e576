#include "exec/stage_runs.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace fsdpsim {
namespace {

// Integers per packed peak: bytes, time, step, op, then the breakdown.
constexpr size_t kPeakWords = 4 + kCategoryCount;

MemoryPeak shifted(MemoryPeak peak, TimeNs by_ns) {
  peak.time_ns += by_ns;
  return peak;
}

void pack_peak(const MemoryPeak& p, std::vector<int64_t>& out) {
  out.insert(out.end(), {p.bytes, p.time_ns, p.step, p.op.value()});
  out.insert(out.end(), p.breakdown.begin(), p.breakdown.end());
}

MemoryPeak unpack_peak(std::span<const int64_t> in) {
  MemoryPeak p;
  p.bytes = in[0];
  p.time_ns = in[1];
  p.step = static_cast<int32_t>(in[2]);
  p.op = OpId(static_cast<int32_t>(in[3]));
  std::copy_n(in.begin() + 4, kCategoryCount, p.breakdown.begin());
  return p;
}

}  // namespace

int32_t ranks_per_stage(const Schedule& schedule) {
  return std::max(1, schedule.info.world_size / std::max(1, schedule.info.pipeline_stages));
}

int32_t stage_of_rank(const Schedule& schedule, int32_t rank) {
  return rank / ranks_per_stage(schedule);
}

int32_t rank_in_stage(const Schedule& schedule, int32_t rank, int32_t stage) {
  const int32_t per_stage = ranks_per_stage(schedule);
  return rank % per_stage + stage * per_stage;
}

RunRecord merge_stage_runs(const Schedule& schedule, const std::vector<RunRecord>& by_stage) {
  const auto stages = static_cast<size_t>(std::max(1, schedule.info.pipeline_stages));
  FSDPSIM_CHECK(by_stage.size() == stages, "one measured run per pipeline stage");
  const size_t steps = by_stage.front().steps.size();
  for (const RunRecord& r : by_stage) {
    FSDPSIM_CHECK(r.steps.size() == steps, "every stage measured the same number of steps");
    for (const StepRun& step : r.steps) FSDPSIM_CHECK(step.ops.size() == schedule.ops.size(), "a time slot per op");
  }
  // The fullest stage: the highest reserved peak of the last step (the steady state), the first of equals.
  size_t fullest = 0;
  if (steps > 0) {
    for (size_t s = 1; s < stages; ++s) {
      if (by_stage[s].steps.back().peak_reserved.bytes > by_stage[fullest].steps.back().peak_reserved.bytes) {
        fullest = s;
      }
    }
  }
  RunRecord merged = by_stage[fullest];  // origin, allocator, timeline and OOM of the fullest stage
  merged.memory_stage = static_cast<int32_t>(fullest);
  TimeNs clock = 0;
  for (size_t k = 0; k < steps; ++k) {
    TimeNs duration = 0;
    for (const RunRecord& r : by_stage) duration = std::max(duration, r.steps[k].end_ns - r.steps[k].start_ns);
    StepRun& step = merged.steps[k];
    step.start_ns = clock;
    step.end_ns = clock + duration;
    step.stage_peaks.clear();
    for (size_t s = 0; s < stages; ++s) {
      const StepRun& mine = by_stage[s].steps[k];
      const TimeNs shift = clock - mine.start_ns;
      step.stage_peaks.push_back(StagePeaks{shifted(mine.peak_allocated, shift), shifted(mine.peak_reserved, shift)});
    }
    for (const Op& op : schedule.ops) {
      const StepRun& mine = by_stage[static_cast<size_t>(schedule.stage_of(op))].steps[k];
      const OpTiming t = mine.ops[op.id];
      const TimeNs shift = clock - mine.start_ns;
      step.ops[op.id] = t.start_ns < 0 ? t : OpTiming{t.start_ns + shift, t.end_ns + shift};
    }
    step.peak_allocated = step.stage_peaks[fullest].allocated;
    step.peak_reserved = step.stage_peaks[fullest].reserved;
    clock += duration;
  }
  return merged;
}

std::vector<int64_t> pack_steps(const RunRecord& run) {
  std::vector<int64_t> out{static_cast<int64_t>(run.steps.size())};
  for (const StepRun& step : run.steps) {
    out.insert(out.end(), {step.start_ns, step.end_ns, step.cuda_malloc_calls, static_cast<int64_t>(step.ops.size())});
    for (const OpTiming& t : step.ops) out.insert(out.end(), {t.start_ns, t.end_ns});
    pack_peak(step.peak_allocated, out);
    pack_peak(step.peak_reserved, out);
  }
  return out;
}

RunRecord unpack_steps(std::span<const int64_t> packed, size_t ops) {
  const size_t step_words = 4 + 2 * ops + 2 * kPeakWords;
  if (packed.empty() || packed[0] < 0 || packed.size() != 1 + static_cast<size_t>(packed[0]) * step_words) {
    throw Error("a stage's measured run arrived as " + std::to_string(packed.size()) +
                " integers, not whole steps of " + std::to_string(ops) + " ops (a rank ran another schedule?)");
  }
  RunRecord run;
  run.origin = Measurement{};
  for (size_t at = 1; at < packed.size(); at += step_words) {
    const std::span<const int64_t> words = packed.subspan(at, step_words);
    if (words[3] != static_cast<int64_t>(ops)) {
      throw Error("a stage's measured step has " + std::to_string(words[3]) + " ops, the schedule " +
                  std::to_string(ops));
    }
    StepRun step;
    step.start_ns = words[0];
    step.end_ns = words[1];
    step.cuda_malloc_calls = words[2];
    step.ops.resize(ops);
    for (size_t i = 0; i < ops; ++i) step.ops[OpId(static_cast<int32_t>(i))] = {words[4 + 2 * i], words[5 + 2 * i]};
    step.peak_allocated = unpack_peak(words.subspan(4 + 2 * ops, kPeakWords));
    step.peak_reserved = unpack_peak(words.subspan(4 + 2 * ops + kPeakWords, kPeakWords));
    run.steps.push_back(std::move(step));
  }
  return run;
}

}  // namespace fsdpsim
