#include "sim/micro_batch_translation.h"

#include <algorithm>

#include "sim/id_range.h"

namespace fsdpsim {
namespace {

bool same_buffer_shape(const Buffer& a, const Buffer& b) {
  return a.size_bytes == b.size_bytes && a.category == b.category && a.stage == b.stage && a.persistent == b.persistent;
}

}  // namespace

MicroBatchTranslation::MicroBatchTranslation(const Schedule& schedule, const FlatOps& flat, const OpCostTable& costs)
    : schedule_(&schedule), flat_(&flat), costs_(&costs) {
  int32_t micro_batches = 0;
  for (const FlatOp& op : flat.ops) micro_batches = std::max(micro_batches, op.micro_batch + 1);
  first_op_.assign(static_cast<size_t>(micro_batches), OpId::none());
  std::vector<int32_t> count(static_cast<size_t>(micro_batches), 0);
  for (const OpId op : ids_of(flat.ops)) {
    const int32_t m = flat.ops[op].micro_batch;
    if (m < 0) continue;
    OpId& first = first_op_[static_cast<size_t>(m)];
    if (!first.valid()) first = op;
    ++count[static_cast<size_t>(m)];
  }
  repeats_.assign(static_cast<size_t>(micro_batches), 0);
  // The offset most consecutive micro-batches keep (the first often differs: it also fetches what every later one
  // reuses).
  std::vector<int32_t> offsets;
  for (size_t m = 0; m + 1 < first_op_.size(); ++m) {
    if (first_op_[m].valid() && first_op_[m + 1] > first_op_[m]) {
      offsets.push_back(first_op_[m + 1].value() - first_op_[m].value());
    }
  }
  int32_t best_count = 0;
  for (const int32_t offset : offsets) {
    const auto c = static_cast<int32_t>(std::count(offsets.begin(), offsets.end(), offset));
    if (c > best_count) {
      best_count = c;
      op_offset_ = offset;
    }
  }
  if (op_offset_ <= 0) return;
  for (int32_t m = 0; m + 1 < micro_batches; ++m) {
    const auto mi = static_cast<size_t>(m);
    if (count[mi] != count[mi + 1] || first_op_[mi + 1].value() - first_op_[mi].value() != op_offset_) continue;
    bool ok = true;
    int32_t left = count[mi];
    for (OpId op = first_op_[mi]; ok && left > 0 && op < flat.ops.next_id(); op = id_after(op, 1)) {
      if (flat.ops[op].micro_batch != m) continue;
      ok = alike(op, id_after(op, op_offset_));
      --left;
    }
    repeats_[mi] = ok ? 1 : 0;
  }
}

bool MicroBatchTranslation::repeats_all(int32_t first, int32_t count) const {
  for (int32_t m = first; m < first + count; ++m) {
    if (!repeats(m)) return false;
  }
  return true;
}

OpId MicroBatchTranslation::first_op(int32_t micro_batch) const {
  if (micro_batch < 0 || static_cast<size_t>(micro_batch) >= first_op_.size()) return OpId::none();
  return first_op_[static_cast<size_t>(micro_batch)];
}

BufferId MicroBatchTranslation::buffer_after(BufferId buffer, int32_t times) const {
  const OpId by = flat_->allocated_by[buffer];
  if (!by.valid() || micro_batch_of(by) < 0) return buffer;
  const OpId moved = id_after(by, times * op_offset_);
  if (!flat_->ops.contains(moved)) return BufferId::none();
  const FlatOp& m = flat_->ops[moved];
  const int32_t at = m.allocs_begin + flat_->alloc_index[buffer];
  return at < m.allocs_end ? flat_->buffer_at(at) : BufferId::none();
}

bool MicroBatchTranslation::alike(OpId op, OpId moved) const {
  if (!flat_->ops.contains(moved)) return false;
  const FlatOp& a = flat_->ops[op];
  const FlatOp& b = flat_->ops[moved];
  if (b.micro_batch != a.micro_batch + 1 || a.kind != b.kind || a.stream != b.stream) return false;
  // One cost entry is one cost; different entries (hand-made tables have one per op) are compared by what the event
  // loop reads.
  if (a.cost != b.cost) {
    const FlatCost& ca = flat_->cost_of(op);
    if (ca != flat_->cost_of(moved)) return false;
    if (ca.model == CostModel::transfer) {
      const auto la = (*costs_)[op].loads.view();
      const auto lb = (*costs_)[moved].loads.view();
      if (!std::equal(la.begin(), la.end(), lb.begin(), lb.end())) return false;
    }
  }
  const auto moves_to = [&](OpId from, OpId to) { return !from.valid() ? !to.valid() : to == op_after(from, 1); };
  if (!moves_to(a.peer, b.peer) || !moves_to(a.next_on_stream, b.next_on_stream)) return false;
  const auto same_list = [&](int32_t a_begin, int32_t a_end, int32_t b_begin, int32_t b_end) {
    if (a_end - a_begin != b_end - b_begin) return false;
    for (int32_t i = 0; i < a_end - a_begin; ++i) {
      if (!moves_to(flat_->op_at(a_begin + i), flat_->op_at(b_begin + i))) return false;
    }
    return true;
  };
  if (!same_list(a.deps_begin, a.deps_end, b.deps_begin, b.deps_end) ||
      !same_list(a.dependents_begin, a.dependents_end, b.dependents_begin, b.dependents_end)) {
    return false;
  }
  if (a.allocs_end - a.allocs_begin != b.allocs_end - b.allocs_begin ||
      a.frees_end - a.frees_begin != b.frees_end - b.frees_begin) {
    return false;
  }
  const auto& buffers = schedule_->buffers;
  for (int32_t i = 0; i < a.allocs_end - a.allocs_begin; ++i) {
    if (!same_buffer_shape(buffers[flat_->buffer_at(a.allocs_begin + i)],
                           buffers[flat_->buffer_at(b.allocs_begin + i)])) {
      return false;
    }
  }
  for (int32_t i = 0; i < a.frees_end - a.frees_begin; ++i) {
    const BufferId f = flat_->buffer_at(a.frees_begin + i);
    const BufferId moved_f = buffer_after(f, 1);
    if (moved_f != flat_->buffer_at(b.frees_begin + i) || !moved_f.valid() ||
        !same_buffer_shape(buffers[f], buffers[moved_f])) {
      return false;
    }
  }
  return true;
}

}  // namespace fsdpsim
