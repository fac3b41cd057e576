#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/error.h"
#include "report/report_compare.h"

namespace fsdpsim::cli {
namespace {

struct ValidateOptions {
  std::string predicted;
  std::string measured;
  std::string json;
  size_t worst = 15;
};

}  // namespace

void register_validate(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "compare a predicted report with a measured one, op by op");
  cmd->add_option("--predicted,-p", options->predicted, "report written by 'fsdpsim simulate --json'")->required();
  cmd->add_option("--measured,-m", options->measured, "report written by 'fsdpsim exec --json'")->required();
  cmd->add_option("--json", options->json, "write the comparison as JSON to this file");
  cmd->add_option("--worst", options->worst, "how many ops with the largest error to list")->capture_default_str();
  cmd->callback([options] {
    const Report predicted = load_report(options->predicted);
    const Report measured = load_report(options->measured);
    Comparison c;
    try {
      c = compare_reports(predicted, measured);
    } catch (const ConfigError& e) {
      // compare_reports sees two reports, not their files: name both here.
      throw ConfigError(SourceLocation{options->measured, 0, 0}, "ops",
                        e.problem() + " (predicted: " + options->predicted + ")", "");
    }
    std::cout << comparison_text(c, options->worst);
    if (!options->json.empty()) write_text_file(options->json, comparison_json(c), "--json");
  });
}

}  // namespace fsdpsim::cli
