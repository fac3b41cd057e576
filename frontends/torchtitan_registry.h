#pragma once
/// The torchtitan config-registry functions fsdpsim knows (`--module llama3 --config llama3_70b`), each as the
/// settings it returns, in the job-TOML and command-line names torchtitan_args.cpp translates.

#include <string>
#include <utility>
#include <vector>

namespace fsdpsim::torchtitan {

/// One registry function: its module and name, the function it starts from, and what it sets over that.
struct RegistryConfig {
  std::string module;
  std::string config;
  /// The function it starts from, as torchtitan's variants call their base (`config = llama3_8b()`), or "".
  std::string base;
  std::vector<std::pair<std::string, std::vector<std::string>>> settings;  ///< over the base's
};

/// Every function fsdpsim knows, by module (llama3, deepseek_v3, qwen3) in the order messages list them.
const std::vector<RegistryConfig>& registry();

}  // namespace fsdpsim::torchtitan
