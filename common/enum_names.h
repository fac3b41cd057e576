#pragma once
/// The one mechanism that names enum values wherever they are read or written (YAML keys, flags, reports): a table of
/// (value, name) pairs per enum, declared once next to the code that owns the enum. Reading goes through `parse`,
/// writing through `name`, and the list of valid names for an error message through `names`.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fsdpsim {

template <class E, size_t N>
struct EnumNames {
  std::array<std::pair<E, std::string_view>, N> entries;

  /// The value's name; "?" for a value the table does not list (a caller bug, never a user's input).
  [[nodiscard]] constexpr std::string_view name(E value) const {
    for (const auto& [e, text] : entries) {
      if (e == value) return text;
    }
    return "?";
  }
  /// The value named `text`, or nullopt.
  [[nodiscard]] constexpr std::optional<E> parse(std::string_view text) const {
    for (const auto& [e, name_text] : entries) {
      if (name_text == text) return e;
    }
    return std::nullopt;
  }
  /// Every name, in table order (what an error lists as valid).
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : entries) out.emplace_back(entry.second);
    return out;
  }
  /// Every value, in table order.
  [[nodiscard]] std::vector<E> values() const {
    std::vector<E> out;
    for (const auto& entry : entries) out.push_back(entry.first);
    return out;
  }
};

template <class E, class... Rest>
EnumNames(std::pair<E, std::string_view>, Rest...) -> EnumNames<E, 1 + sizeof...(Rest)>;

}  // namespace fsdpsim
