#pragma once
/// Data files (presets) compiled into the binary by cmake/EmbedFiles.cmake.

#include <string_view>

namespace fsdpsim {

/// One embedded file: its name without extension, and its text.
struct EmbeddedFile {
  std::string_view name;
  std::string_view text;
};

}  // namespace fsdpsim
