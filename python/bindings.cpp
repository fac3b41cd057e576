// The fsdpsim program as a Python extension (`fsdpsim._fsdpsim`): the module's functions run the very commands the
// CLI runs (cli/app.h), so inputs, outputs and error messages are the program's own. fsdpsim/__init__.py turns
// Python arguments into a command line and reads back the JSON the command writes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"

namespace py = pybind11;

namespace {

// Sends std::cout to a string while a command runs, so that the Python caller decides what to print.
class CapturedStdout {
 public:
  CapturedStdout() : previous_(std::cout.rdbuf(text_.rdbuf())) {}
  ~CapturedStdout() { std::cout.rdbuf(previous_); }
  CapturedStdout(const CapturedStdout&) = delete;
  CapturedStdout& operator=(const CapturedStdout&) = delete;
  [[nodiscard]] std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* previous_;
};

}  // namespace

PYBIND11_MODULE(_fsdpsim, m) {
  m.doc() = "fsdpsim's commands, run in this process (use the functions of the fsdpsim package)";
  // One exception per kind of failure, with the program's message: bad input (a file, a key, a value: what to fix),
  // a schedule that breaks the IR's invariants, a command-line mistake, anything else.
  static py::exception<fsdpsim::ConfigError> config_error(m, "ConfigError", PyExc_ValueError);
  static py::exception<fsdpsim::ScheduleError> schedule_error(m, "ScheduleError", PyExc_ValueError);
  static py::exception<fsdpsim::cli::CommandLineError> command_line_error(m, "CommandLineError", PyExc_ValueError);
  static py::exception<fsdpsim::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fsdpsim::ConfigError& e) {
      config_error(e.what());
    } catch (const fsdpsim::ScheduleError& e) {
      schedule_error(e.what());
    } catch (const fsdpsim::cli::CommandLineError& e) {
      command_line_error(e.what());
    } catch (const fsdpsim::Error& e) {
      error(e.what());
    }
  });
  m.def(
      "run",
      [](const std::vector<std::string>& args) {
        std::string printed;
        {
          // The simulator runs without the GIL, so other Python threads go on; its own threads never call Python.
          const py::gil_scoped_release release;
          // std::cout is the process's: one command at a time captures it.
          static std::mutex one_at_a_time;
          const std::lock_guard<std::mutex> lock(one_at_a_time);
          const CapturedStdout captured;
          fsdpsim::cli::run(args);
          printed = captured.text();
        }
        return printed;
      },
      py::arg("args"),
      "Runs `fsdpsim ARGS` and returns what it printed; errors raise ConfigError, ScheduleError, CommandLineError or "
      "Error with the program's message.");
  m.def(
      "main",
      [](const std::vector<std::string>& args) {
        const py::gil_scoped_release release;
        std::cout.flush();
        const int status = fsdpsim::cli::main_with_status(args);
        std::cout.flush();
        return status;
      },
      py::arg("args"),
      "Runs `fsdpsim ARGS` as the program does (printing, errors on stderr); returns the exit status.");
}
