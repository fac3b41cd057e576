// `fsdpsim reference config|cli`: prints a generated reference page (cli/reference_markdown.h).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/reference_markdown.h"

namespace fsdpsim::cli {

void register_reference(CLI::App& app) {
  auto page = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "reference", "print the Markdown reference of every configuration key (config) or every command and flag (cli)");
  sub->add_option("page", *page, "config or cli")->required()->check(CLI::IsMember({"config", "cli"}));
  const CLI::App* root = &app;
  sub->callback([page, root] {
    std::cout << (*page == "config" ? configuration_reference_markdown() : cli_reference_markdown(*root));
  });
}

}  // namespace fsdpsim::cli
