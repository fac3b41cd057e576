#include "common/error.h"

#include <sstream>

namespace fsdpsim {

std::string SourceLocation::str() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  return out;
}

namespace {
std::string compose(const SourceLocation& where, const std::string& key, const std::string& problem,
                    const std::string& fix) {
  std::ostringstream out;
  out << where.str() << ": ";
  if (!key.empty()) out << "'" << key << "': ";
  out << problem;
  if (!fix.empty()) out << " (" << fix << ")";
  return out.str();
}

std::string compose(const std::string& context, const std::vector<std::string>& violations) {
  std::ostringstream out;
  out << context << ": " << violations.size() << " problem" << (violations.size() == 1 ? "" : "s");
  for (const auto& v : violations) out << "\n  - " << v;
  return out.str();
}
}  // namespace

ConfigError::ConfigError(const SourceLocation& where, const std::string& key, const std::string& problem,
                         const std::string& fix)
    : Error(compose(where, key, problem, fix)), where_(where), key_(key), problem_(problem), fix_(fix) {}

ConfigError::ConfigError(const std::string& message) : Error(message), problem_(message) {}

ScheduleError::ScheduleError(const std::string& context, std::vector<std::string> violations)
    : Error(compose(context, violations)), violations_(std::move(violations)) {}

void fail_check(const char* condition, const char* file, int line, const std::string& message) {
  std::ostringstream out;
  out << "internal error: " << message << " [check '" << condition << "' failed at " << file << ":" << line << "]";
  throw InternalError(out.str());
}

}  // namespace fsdpsim
