// fsdpsim: plan, predict and check FSDP training before launch. The program only wires the libraries together.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/error.h"

int main(int argc, char** argv) {
  CLI::App app{"fsdpsim: plan, predict and check Fully Sharded Data Parallel training of LLMs before launch"};
  app.require_subcommand(1);
  // Which build produced a report matters when two reports disagree: the version and whether GPUs can be driven.
#ifdef FSDPSIM_HAVE_CUDA
  app.set_version_flag("--version", std::string("fsdpsim ") + FSDPSIM_VERSION + " (host and CUDA/NCCL backends)");
#else
  app.set_version_flag("--version", std::string("fsdpsim ") + FSDPSIM_VERSION + " (host backend only)");
#endif
  fsdpsim::cli::register_presets(app);
  fsdpsim::cli::register_schedule(app);
  fsdpsim::cli::register_simulate(app);
  fsdpsim::cli::register_exec(app);
  fsdpsim::cli::register_validate(app);
  fsdpsim::cli::register_calibrate(app);
  fsdpsim::cli::register_sweep(app);
  fsdpsim::cli::register_fit(app);
  fsdpsim::cli::register_fidelity(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fsdpsim::ConfigError& e) {
    std::cerr << "fsdpsim: error: " << e.what() << "\n";
    return 2;
  } catch (const fsdpsim::ScheduleError& e) {
    std::cerr << "fsdpsim: error: " << e.what() << "\n";
    return 3;
  } catch (const fsdpsim::Error& e) {
    std::cerr << "fsdpsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
