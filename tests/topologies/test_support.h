#pragma once
/// Helpers shared by the topology tests.

#include <string>

#include "common/error.h"
#include "tests/support/error_of.h"

namespace fsdpsim::test {

/// `text` with the line that starts with "key:" replaced by `line` (line numbers stay the same when `line` is one
/// line), or removed when `line` is empty.
inline std::string with_line(const std::string& text, const std::string& key, const std::string& line) {
  std::string out;
  size_t start = 0;
  bool found = false;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string current = text.substr(start, end - start);
    if (!found && current.rfind(key + ":", 0) == 0) {
      found = true;
      if (!line.empty()) out += line + "\n";
    } else {
      out += current + "\n";
    }
    start = end + 1;
  }
  return found ? out : "<key " + key + " not in the test text>";
}

}  // namespace fsdpsim::test
