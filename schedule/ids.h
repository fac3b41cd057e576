#pragma once
/// Typed ids of the schedule IR: an op, a buffer, a stream and a process group are each numbered densely from 0 in
/// their own list, and each kind of id is its own type, so that passing a buffer where an op is meant, or indexing the
/// ops with a stream, does not compile. `IdVector` is a std::vector indexed by one kind of id.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace fsdpsim {

/// The id of one element of one IR list. -1 (`none()`, also the default) names nothing: an op that is no collective
/// has no group, a peak reached before any op has no op.
template <class Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(int32_t value) : value_(value) {}
  [[nodiscard]] static constexpr Id none() { return Id(); }

  /// The number as the YAML file and the reports write it.
  [[nodiscard]] constexpr int32_t value() const { return value_; }
  /// The position in the list it names; only for an id that names something.
  [[nodiscard]] constexpr size_t index() const { return static_cast<size_t>(value_); }
  [[nodiscard]] constexpr bool valid() const { return value_ >= 0; }

  friend constexpr auto operator<=>(Id, Id) = default;
  friend constexpr bool operator==(Id, Id) = default;

 private:
  int32_t value_ = -1;
};

/// Writes the id's number (test failure messages and logs).
template <class Tag>
std::ostream& operator<<(std::ostream& out, Id<Tag> id) {
  return out << id.value();
}

/// The id's number as text, for messages and names.
template <class Tag>
std::string to_string(Id<Tag> id) {
  return std::to_string(id.value());
}

struct OpTag;
struct BufferTag;
struct StreamTag;
struct GroupTag;
using OpId = Id<OpTag>;          ///< an op of Schedule::ops
using BufferId = Id<BufferTag>;  ///< a buffer of Schedule::buffers
using StreamId = Id<StreamTag>;  ///< a stream of Schedule::streams
using GroupId = Id<GroupTag>;    ///< a process group of Schedule::groups

/// A std::vector whose elements are named by one kind of id: `ops[op.id]` reads as it means.
template <class IdT, class T>
class IdVector : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  using std::vector<T>::operator=;
  using std::vector<T>::operator[];
  T& operator[](IdT id) { return std::vector<T>::operator[](id.index()); }
  const T& operator[](IdT id) const { return std::vector<T>::operator[](id.index()); }
  /// True when `id` names an element of this list.
  [[nodiscard]] bool contains(IdT id) const { return id.valid() && id.index() < this->size(); }
  /// The id the next element appended will have.
  [[nodiscard]] IdT next_id() const { return IdT(static_cast<int32_t>(this->size())); }
};

}  // namespace fsdpsim

template <class Tag>
struct std::hash<fsdpsim::Id<Tag>> {
  size_t operator()(fsdpsim::Id<Tag> id) const noexcept { return std::hash<int32_t>{}(id.value()); }
};
