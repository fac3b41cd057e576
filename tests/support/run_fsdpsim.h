#pragma once
/// Runs the fsdpsim program of this build, as a user would, for the end-to-end tests.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

/// What one run of the program left: its exit status (-1 when it did not exit normally) and stdout + stderr.
struct ProgramResult {
  int exit_code = -1;
  std::string output;
};

/// Runs a shell command line and waits for it.
inline ProgramResult run_program(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  ProgramResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.output += buffer.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs `build/fsdpsim ARGS` through the shell (ARGS may quote and redirect) and waits for it.
inline ProgramResult run_fsdpsim(const std::string& args) {
  return run_program(std::string(FSDPSIM_BINARY_DIR) + "/fsdpsim " + args);
}
