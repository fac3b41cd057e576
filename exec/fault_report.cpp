#include "exec/fault_report.h"

#include <algorithm>
#include <exception>

#include "common/units.h"

namespace fsdpsim {

std::optional<MemoryPeak> PredictedPeak::get() {
  std::call_once(once_, [this] {
    if (!predict_) return;
    try {
      value_ = predict_();
    } catch (const std::exception&) {
      value_.reset();  // a report about one fault must not fail because the prediction could not be made
    }
  });
  return value_;
}

namespace {

// "activation 2.0 GiB, gathered_param 1.0 GiB": the categories holding bytes, largest first ("" when none).
std::string describe_categories(const CategoryBytes& by_category) {
  std::vector<size_t> order;
  for (size_t c = 0; c < by_category.size(); ++c) {
    if (by_category[c] != 0) order.push_back(c);
  }
  // Largest first (what to cut first); stable, so equal amounts keep the category order and the text is determined.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return by_category[a] > by_category[b]; });
  std::string text;
  for (size_t i = 0; i < order.size(); ++i) {
    text += (i ? ", " : "") + std::string(to_string(static_cast<BufferCategory>(order[i]))) + " " +
            format_bytes(by_category[order[i]]);
  }
  return text;
}

}  // namespace

std::string describe_memory_in_use(int64_t total_bytes, const CategoryBytes& by_category) {
  const std::string categories = describe_categories(by_category);
  return format_bytes(total_bytes) + " in use" + (categories.empty() ? "" : " (" + categories + ")");
}

std::string describe_op(const Op& op) {
  return "op " + std::to_string(op.id.value()) + " '" + op.name + "'";
}

std::string describe_allocation_failure(const Schedule& schedule, const AllocationFailure& failure) {
  const Buffer& b = schedule.buffers[failure.buffer];
  std::string where = "in the setup (persistent and registered buffers)";
  if (failure.op.valid()) {
    where = "in " + describe_op(schedule.ops[failure.op]) + " (step " + std::to_string(failure.step) + ")";
  }
  return "allocating " + format_bytes(b.size_bytes) + " for buffer " + std::to_string(b.id.value()) + " '" + b.name +
         "' (" + std::string(to_string(b.category)) + ") " + where + " failed with " +
         describe_memory_in_use(failure.in_use_bytes, failure.in_use_by_category);
}

std::string describe_predicted_peak(const Schedule& schedule, const std::optional<MemoryPeak>& predicted) {
  if (!predicted) return "; no simulator prediction was available";
  std::string text = "; the simulator predicted a peak of " + format_bytes(predicted->bytes) + " for this schedule";
  const std::string categories = describe_categories(predicted->breakdown);
  if (schedule.ops.contains(predicted->op)) {
    text += " (reached at op '" + schedule.ops[predicted->op].name + "'" +
            (categories.empty() ? "" : ": " + categories) + ")";
  } else if (!categories.empty()) {
    text += " (" + categories + ")";
  }
  return text;
}

std::string describe_ranks(const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return "no rank";
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::vector<int32_t> group_members(const Group& group, int32_t rank) {
  const int32_t stride = std::max(1, group.stride);
  const int32_t size = std::max(1, group.size);
  const int32_t position = (rank / stride) % size;
  const int32_t first = rank - position * stride;
  std::vector<int32_t> members;
  for (int32_t k = 0; k < size; ++k) members.push_back(first + k * stride);
  return members;
}

std::string describe_members(const std::string& group_name, const std::vector<int32_t>& members) {
  std::string text = "'" + group_name + "' [";
  for (size_t i = 0; i < members.size(); ++i) text += (i ? ", " : "") + std::to_string(members[i]);
  return text + "]";
}

}  // namespace fsdpsim
