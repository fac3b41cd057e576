#include "cli/app.h"

#include <algorithm>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "config/fsdp_config.h"

namespace fsdpsim::cli {
namespace {

void register_commands(CLI::App& app) {
  app.name("fsdpsim");
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
  register_presets(app);
  register_schedule(app);
  register_simulate(app);
  register_exec(app);
  register_validate(app);
  register_calibrate(app);
  register_sweep(app);
  register_merge(app);
  register_fit(app);
  register_fidelity(app);
  register_reference(app);
}

// `--nodes 8`: a configuration key written as an option. The message points at --set; empty for other extras.
std::string option_that_is_a_key(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.rfind("--", 0) != 0) continue;
    const size_t eq = word.find('=');
    std::string key = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::replace(key.begin(), key.end(), '-', '_');
    const auto& keys = config_keys();
    if (std::none_of(keys.begin(), keys.end(), [&](const auto& k) { return k.name == key; })) continue;
    const std::string value = eq != std::string::npos ? word.substr(eq + 1)
                              : i + 1 < args.size()   ? args[i + 1]
                                                      : "VALUE";
    return word + " is not an option; configuration keys are set with --set " + key + "=" + value;
  }
  return "";
}

}  // namespace

void run(const std::vector<std::string>& args) {
  CLI::App app{"fsdpsim: plan, predict and check Fully Sharded Data Parallel training of LLMs before launch"};
  register_commands(app);
  // CLI11 reads the arguments back to front.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << "\n";
  } catch (const CLI::ExtrasError& e) {
    const std::string key_hint = option_that_is_a_key(args);
    if (!key_hint.empty()) throw CommandLineError(key_hint, 2);
    throw CommandLineError(std::string(e.what()) + "\nRun with --help for more information.", e.get_exit_code());
  } catch (const CLI::ParseError& e) {
    // Help for the subcommand the user was in, as CLI11's own exit() would print it.
    throw CommandLineError(std::string(e.what()) + "\nRun with --help for more information.", e.get_exit_code());
  }
}

int main_with_status(const std::vector<std::string>& args) {
  try {
    run(args);
  } catch (const CommandLineError& e) {
    std::cerr << (e.exit_code() == 2 ? "fsdpsim: error: " : "") << e.what() << "\n";
    return e.exit_code();
  } catch (const ConfigError& e) {
    std::cerr << "fsdpsim: error: " << e.what() << "\n";
    return 2;
  } catch (const ScheduleError& e) {
    std::cerr << "fsdpsim: error: " << e.what() << "\n";
    return 3;
  } catch (const Error& e) {
    std::cerr << "fsdpsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace fsdpsim::cli
