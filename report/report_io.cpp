// Reading a JSON report back (for `fsdpsim validate`): strict, with errors that name the file, the line and the key.
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_location.h"
#include "common/yaml_reader.h"
#include "report/report_compare.h"
#include "report/report_keys.h"

namespace fsdpsim {

using Json = nlohmann::json;

Report report_from_json(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw ConfigError(json_parse_error_location(text, e.byte, source), "", "malformed JSON report",
                      "the file is truncated or not JSON; write it again with --json");
  } catch (const Json::exception& e) {
    // nlohmann throws out_of_range, not parse_error, for a number beyond a double (0.0013e7673): a fuzzer find.
    throw ConfigError(SourceLocation{source, 0, 0}, "", std::string("unreadable JSON report: ") + e.what(),
                      "write it again with --json");
  }
  if (!j.is_object()) {
    throw ConfigError(SourceLocation{source, 1, 1}, "", "a report is a JSON object, not " + std::string(j.type_name()),
                      "write it again with 'fsdpsim simulate --json' or 'fsdpsim exec --json'");
  }
  const JsonReportReader in(source, text);
  Report report;
  for (const ReadPass pass : {ReadPass::first, ReadPass::second}) {
    for (const ReportKey& row : report_keys()) {
      if (row.pass != pass || !row.read || (row.presence == KeyPresence::optional && !j.contains(row.key))) continue;
      row.read(report, j, row.key, in);
    }
  }
  return report;
}

Report load_report(const std::string& path) {
  return report_from_json(read_text_file(path), path);
}

}  // namespace fsdpsim
