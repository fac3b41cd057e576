#pragma once
/// Where a value sits in a JSON text, for error messages: JSON parsers give no positions for parsed values, so the
/// readers of config.json and of reports find the line of a key path ("ops[3].duration_ns") by scanning the text.

#include <string>
#include <string_view>

#include "common/error.h"

namespace fsdpsim {

/// The line and column of the value at `path` (keys joined by '.', array indices as "[i]") in `text`, which must be
/// well-formed JSON; the line is 0 when the path is not found.
SourceLocation json_path_location(std::string_view text, const std::string& path, const std::string& source);

/// The line and column (1-based) of a JSON syntax error: nlohmann's parse_error counts the bytes it read, so the
/// error is at byte `bytes_read` − 1 (one past the text's end when the text ended too early).
SourceLocation json_parse_error_location(std::string_view text, size_t bytes_read, const std::string& source);

}  // namespace fsdpsim
