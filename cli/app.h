#pragma once
/// The fsdpsim program as a function: the command line (or the Python module, python/) gives it arguments, it runs
/// the chosen command. One definition of every command and option, whoever calls.

#include <string>
#include <vector>

#include "common/error.h"

namespace fsdpsim::cli {

/// A command-line mistake (unknown option, missing value, `--nodes 8` for `--set nodes=8`), with CLI11's message.
class CommandLineError : public Error {
 public:
  CommandLineError(const std::string& message, int exit_code) : Error(message), exit_code_(exit_code) {}
  [[nodiscard]] int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// Runs `fsdpsim ARGS` (without the program's name): prints to stdout as the program does; errors are thrown
/// (CommandLineError, ConfigError, ScheduleError, ...). `--help` and `--version` print and return.
void run(const std::vector<std::string>& args);

/// The program's main: run(), with each error printed as "fsdpsim: error: ..." and its exit status returned (2 bad
/// input, 3 an invalid schedule, 1 anything else).
int main_with_status(const std::vector<std::string>& args);

}  // namespace fsdpsim::cli
