#pragma once
/// Writing the files commands produce.

#include <string>

namespace fsdpsim::cli {

/// Writes `text` to `path`; a ConfigError naming the option when the file cannot be written.
void write_text_file(const std::string& path, const std::string& text, const std::string& option);

}  // namespace fsdpsim::cli
