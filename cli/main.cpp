// fsdpsim: plan, predict and check FSDP training before launch. The program only wires the libraries together.
#include <algorithm>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "schedule/config/fsdp_config.h"

int main(int argc, char** argv) {
  CLI::App app{"fsdpsim: plan, predict and check Fully Sharded Data Parallel training of LLMs before launch"};
  app.require_subcommand(1);
  // Which build produced a report matters when two reports disagree: the version, whether GPUs can be driven, and
  // whether a sweep can spread over MPI ranks.
#ifdef FSDPSIM_HAVE_CUDA
  const std::string backends = "host and CUDA/NCCL backends";
#else
  const std::string backends = "host backend only";
#endif
#ifdef FSDPSIM_HAVE_MPI
  const std::string mpi = "MPI sweeps";
#else
  const std::string mpi = "without MPI";
#endif
  app.set_version_flag("--version", std::string("fsdpsim ") + FSDPSIM_VERSION + " (" + backends + ", " + mpi + ")");
  fsdpsim::cli::register_presets(app);
  fsdpsim::cli::register_schedule(app);
  fsdpsim::cli::register_simulate(app);
  fsdpsim::cli::register_exec(app);
  fsdpsim::cli::register_validate(app);
  fsdpsim::cli::register_calibrate(app);
  fsdpsim::cli::register_sweep(app);
  fsdpsim::cli::register_merge(app);
  fsdpsim::cli::register_fit(app);
  fsdpsim::cli::register_fidelity(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // `--nodes 8`: a configuration key written as an option. Point at --set and exit like any input error.
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (word.rfind("--", 0) != 0) continue;
      std::string key = word.substr(2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
      std::replace(key.begin(), key.end(), '-', '_');
      const auto& keys = fsdpsim::config_keys();
      if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.name == key; })) continue;
      const std::string value = word.find('=') != std::string::npos ? word.substr(word.find('=') + 1)
                                : i + 1 < argc                      ? std::string(argv[i + 1])
                                                                    : "VALUE";
      std::cerr << "fsdpsim: error: " << word << " is not an option; configuration keys are set with --set " << key
                << "=" << value << "\n";
      return 2;
    }
    return app.exit(e);
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
