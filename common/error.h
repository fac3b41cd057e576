#pragma once
/// Errors: one typed exception per boundary, each message naming the entity, the value and the rule.

#include <stdexcept>
#include <string>
#include <vector>

namespace fsdpsim {

/// Where a value came from: a file (or "<preset NAME>", "<--set>", "<megatron-args>") and a 1-based line/column.
struct SourceLocation {
  std::string file;
  int line = 0;    ///< 1-based; 0 when unknown
  int column = 0;  ///< 1-based; 0 when unknown

  /// "file:line:col" with the unknown parts left out.
  [[nodiscard]] std::string str() const;
};

/// Base of every error fsdpsim throws on purpose; the CLI prints what() and exits non-zero.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input: a malformed file, an unknown key, a wrong type, a value out of range, an impossible configuration.
class ConfigError : public Error {
 public:
  /// `key` is the dotted key path ("parallel.tp"); `fix` says what would be valid.
  ConfigError(const SourceLocation& where, const std::string& key, const std::string& problem, const std::string& fix);
  /// An error that is not tied to one place in a file (e.g. two keys that disagree).
  explicit ConfigError(const std::string& message);

  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] const std::string& key() const { return key_; }
  /// The problem and the fix without the location (to re-raise the error at another place).
  [[nodiscard]] const std::string& problem() const { return problem_; }
  [[nodiscard]] const std::string& fix() const { return fix_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string problem_;
  std::string fix_;
};

/// A schedule that breaks one or more IR invariants; every violation is listed.
class ScheduleError : public Error {
 public:
  ScheduleError(const std::string& context, std::vector<std::string> violations);
  [[nodiscard]] const std::vector<std::string>& violations() const { return violations_; }

 private:
  std::vector<std::string> violations_;
};

/// An internal invariant that should never break; thrown by FSDPSIM_CHECK (always on, also in Release builds).
class InternalError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void fail_check(const char* condition, const char* file, int line, const std::string& message);

}  // namespace fsdpsim

/// Always-on invariant check: throws InternalError naming the condition and file:line. Not for input validation.
#define FSDPSIM_CHECK(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) ::fsdpsim::fail_check(#cond, __FILE__, __LINE__, (msg)); \
  } while (false)
