#include "cli/output.h"

#include <fstream>

#include "common/error.h"

namespace fsdpsim::cli {

void write_text_file(const std::string& path, const std::string& text, const std::string& option) {
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw ConfigError(SourceLocation{path, 0, 0}, option, "cannot write the file", "check that the directory exists");
  out << text;
  out.close();
  if (!out) throw ConfigError(SourceLocation{path, 0, 0}, option, "writing failed", "check the free disk space");
}

}  // namespace fsdpsim::cli
