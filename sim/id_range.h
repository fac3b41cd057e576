#pragma once
/// The ids of an IdVector's elements as a range, so that the engine walks its per-op and per-stream tables by typed id
/// (`for (const OpId op : ids_of(flat.ops))`) rather than by a plain index it then has to cast back.

#include <cstddef>
#include <cstdint>

#include "schedule/ids.h"

namespace fsdpsim {

/// The ids [first, end) of one kind, in ascending order.
template <class IdT>
class IdRange {
 public:
  /// Yields each id in turn; as cheap as the int32_t counter it holds.
  class iterator {
   public:
    constexpr explicit iterator(int32_t value) : value_(value) {}
    constexpr IdT operator*() const { return IdT(value_); }
    constexpr iterator& operator++() {
      ++value_;
      return *this;
    }
    constexpr bool operator==(const iterator&) const = default;

   private:
    int32_t value_;
  };

  constexpr IdRange(IdT first, IdT end) : first_(first.value()), end_(end.value()) {}
  [[nodiscard]] constexpr iterator begin() const { return iterator(first_); }
  [[nodiscard]] constexpr iterator end() const { return iterator(end_); }

 private:
  int32_t first_;
  int32_t end_;
};

/// Every id of `list`: 0 up to its size.
template <class IdT, class T>
[[nodiscard]] constexpr IdRange<IdT> ids_of(const IdVector<IdT, T>& list) {
  return IdRange<IdT>(IdT(0), list.next_id());
}

/// The id `count` places after `id` (the same op a number of micro-batches on, the next op on a stream).
template <class IdT>
[[nodiscard]] constexpr IdT id_after(IdT id, int32_t count) {
  return IdT(id.value() + count);
}

}  // namespace fsdpsim
