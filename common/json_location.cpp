#include "common/json_location.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace fsdpsim {
namespace {

struct Segment {
  bool index = false;
  std::string key;
  size_t position = 0;
};

// "ops[3].duration_ns" → ops, [3], duration_ns.
std::vector<Segment> segments_of(const std::string& path) {
  std::vector<Segment> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
    } else if (path[i] == '[') {
      const size_t end = path.find(']', i);
      if (end == std::string::npos) return {};
      out.push_back(Segment{true, "", std::strtoull(path.substr(i + 1, end - i - 1).c_str(), nullptr, 10)});
      i = end + 1;
    } else {
      const size_t end = path.find_first_of(".[", i);
      out.push_back(Segment{false, path.substr(i, end == std::string::npos ? std::string::npos : end - i), 0});
      i = end == std::string::npos ? path.size() : end;
    }
  }
  return out;
}

// A forward-only scanner over well-formed JSON; every step checks the bounds, so any text is safe to scan.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : t_(text) {}

  [[nodiscard]] size_t at() const { return i_; }
  void spaces() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool take(char c) {
    spaces();
    if (i_ < t_.size() && t_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  // A string's raw contents (escapes left as written: keys that matter have none).
  bool string(std::string* out) {
    spaces();
    if (i_ >= t_.size() || t_[i_] != '"') return false;
    const size_t start = ++i_;
    while (i_ < t_.size() && t_[i_] != '"') i_ += t_[i_] == '\\' ? 2 : 1;
    if (i_ >= t_.size()) return false;
    if (out) *out = std::string(t_.substr(start, i_ - start));
    ++i_;
    return true;
  }
  // Skips one value of any kind, without recursion (nesting depth is unbounded in a hostile file).
  bool value() {
    spaces();
    if (i_ >= t_.size()) return false;
    if (t_[i_] == '"') return string(nullptr);
    if (t_[i_] != '{' && t_[i_] != '[') {
      while (i_ < t_.size() && t_.substr(i_, 1).find_first_of(",}] \t\r\n") == std::string_view::npos) ++i_;
      return true;
    }
    size_t depth = 0;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (c == '"') {
        if (!string(nullptr)) return false;
        continue;
      }
      ++i_;
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return true;
    }
    return false;
  }
  // Moves to the value of member `key` of the object here.
  bool member(const std::string& key) {
    if (!take('{')) return false;
    for (std::string name; string(&name);) {
      if (!take(':')) return false;
      if (name == key) {
        spaces();
        return true;
      }
      if (!value() || !take(',')) return false;
    }
    return false;
  }
  // Moves to element `n` of the array here.
  bool element(size_t n) {
    if (!take('[')) return false;
    for (size_t k = 0; k < n; ++k) {
      if (!value() || !take(',')) return false;
    }
    spaces();
    return true;
  }

 private:
  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace

SourceLocation json_path_location(std::string_view text, const std::string& path, const std::string& source) {
  Scanner scan(text);
  for (const Segment& s : segments_of(path)) {
    if (!(s.index ? scan.element(s.position) : scan.member(s.key))) return SourceLocation{source, 0, 0};
  }
  SourceLocation where{source, 1, 1};
  for (size_t i = 0; i < scan.at() && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++where.line;
      where.column = 1;
    } else {
      ++where.column;
    }
  }
  return where;
}

SourceLocation json_parse_error_location(std::string_view text, size_t bytes_read, const std::string& source) {
  const size_t offset = std::min(bytes_read == 0 ? 0 : bytes_read - 1, text.size());
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  const size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const auto column = static_cast<int>(offset - (line_start == std::string_view::npos ? 0 : line_start + 1)) + 1;
  return SourceLocation{source, static_cast<int>(line), column};
}

}  // namespace fsdpsim
