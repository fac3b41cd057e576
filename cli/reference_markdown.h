#pragma once
/// The reference pages generated from the program itself, so that they cannot drift from it: every configuration key
/// (docs/reference/configuration.md, from config/fsdp_config.h's key table) and every command and flag
/// (docs/reference/cli.md, from the CLI11 app). `fsdpsim reference config|cli` prints them; a test fails when the
/// committed pages differ from what the program prints.

#include <string>

#include <CLI/CLI.hpp>

namespace fsdpsim::cli {

/// Markdown: one table per section of the configuration, each key with its type, default and meaning.
[[nodiscard]] std::string configuration_reference_markdown();

/// Markdown: each command of `app` with its description and a table of its options (names, value, default, meaning).
[[nodiscard]] std::string cli_reference_markdown(const CLI::App& app);

}  // namespace fsdpsim::cli
