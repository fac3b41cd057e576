#pragma once
/// Internals of validate() (not part of the public API): the list the rules report into and the rules themselves,
/// one file per concern (validate_references.cpp, validate_totals.cpp, validate_stages.cpp, validate_lifetimes.cpp).

#include <string>
#include <vector>

#include "schedule/ir.h"
#include "schedule/schedule_graph.h"

namespace fsdpsim::validation {

/// The problems found so far, one line each ("rule: text"), and the words every rule names ops and buffers with.
class Problems {
 public:
  explicit Problems(const Schedule& schedule) : s_(schedule) {}

  /// "op 12 'fwd.layer.3.mb0'".
  [[nodiscard]] std::string describe_op(OpId id) const;
  /// "buffer 4 'layer.3.params'".
  [[nodiscard]] std::string describe_buffer(BufferId id) const;
  void report(const std::string& rule, const std::string& text);
  [[nodiscard]] bool empty() const { return lines_.empty(); }
  [[nodiscard]] const std::vector<std::string>& lines() const { return lines_; }

 private:
  const Schedule& s_;
  std::vector<std::string> lines_;
};

/// dense-ids, and buffers' sizes.
void check_ids(const Schedule& s, Problems& problems);
/// references: every stream, unit, group, buffer and op an op names exists; byte counts are not negative.
void check_references(const Schedule& s, Problems& problems);
/// limits: the step's totals within common/limits.h.
void check_totals(const Schedule& s, Problems& problems);
/// collective-bytes: each collective's send and receive sizes agree with its group's size.
void check_collective_bytes(const Schedule& s, Problems& problems);
/// stages and p2p-pairs: pipeline stages' streams, buffers, dependencies and send/recv pairs.
void check_pipeline_stages(const Schedule& s, Problems& problems);
/// buffer-lifetime, use-after-free and read-before-write, by the happens-before order of an acyclic schedule.
void check_buffer_lifetimes(const Schedule& s, const HappensBefore& hb, Problems& problems);
/// reduce-after-backward: each unit's gradient reduction after that unit's backward of the same micro-batch.
void check_gradient_reductions(const Schedule& s, const HappensBefore& hb, Problems& problems);

}  // namespace fsdpsim::validation
