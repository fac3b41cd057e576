#pragma once
/// The report's JSON keys as one table, the JSON twin of common/key_table.h: one row per top-level key says how the
/// key is written (report_json) and, for the keys `fsdpsim validate` compares, how it is read back and checked
/// (report_from_json). A key is named once, so the writer and the reader cannot drift apart.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/key_table.h"
#include "report/report.h"

namespace fsdpsim {

/// Reads the fields of a parsed report strictly: a missing or mistyped field throws a ConfigError at the line of its
/// key (or of the object that lacks it), naming the file and the key path ("ops[3].kind").
class JsonReportReader {
 public:
  JsonReportReader(std::string source, const std::string& text) : source_(std::move(source)), text_(text) {}

  [[noreturn]] void fail(const std::string& key, const std::string& problem, const std::string& fix) const;
  const nlohmann::json& field(const nlohmann::json& object, const std::string& key, const std::string& path) const;
  /// A finite number ≥ 0 (every number of a report is a time, a rate or a fraction).
  double number(const nlohmann::json& object, const std::string& key, const std::string& path = "") const;
  /// A whole number between 0 and 2^63 (every whole number of a report is an id, a count, bytes or nanoseconds).
  int64_t integer(const nlohmann::json& object, const std::string& key, const std::string& path = "") const;
  /// A true/false field that older reports lack (absent: false).
  bool optional_flag(const nlohmann::json& object, const std::string& key) const;
  std::string text(const nlohmann::json& object, const std::string& key, const std::string& path = "") const;

 private:
  std::string source_;
  const std::string& text_;
};

/// One top-level key of the JSON report.
struct ReportKey {
  std::string key;
  /// The value to write, or nothing to leave the key out (host offload when nothing is offloaded).
  std::function<std::optional<nlohmann::ordered_json>(const Report&)> write;
  /// Reads the key back from the whole report object; empty for a key validate does not compare. Optional keys are
  /// those older reports lack: read only when present.
  std::function<void(Report&, const nlohmann::json& report, const std::string& key, const JsonReportReader&)> read;
  KeyPresence presence = KeyPresence::required;
  /// The identity keys (source, model) are read first, so a file that is not a report says so before anything else.
  ReadPass pass = ReadPass::second;
};

/// Every key of the report, in the order report_json writes them (the headline figures first).
const std::vector<ReportKey>& report_keys();

}  // namespace fsdpsim
