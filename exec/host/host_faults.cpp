#include "exec/host/host_faults.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "common/text.h"

namespace fsdpsim {
namespace {

// ---------------------------------------------------------------------------------------------------------------
// Parsing "--inject" text.

const char* const kStallExample = "stall:rank=3,op=ag.layer.2.mb0";
const char* const kOomExample = "oom:rank=0,op=fwd.layer.5.mb0";

[[noreturn]] void bad_spec(std::string_view spec, const std::string& field, const std::string& problem,
                           const std::string& fix) {
  throw ConfigError(SourceLocation{"--inject " + std::string(spec), 0, 0}, field, problem, fix);
}

HostFaultKind parse_kind(std::string_view spec, const std::string& kind) {
  if (kind == "stall") return HostFaultKind::stall_rank;
  if (kind == "oom") return HostFaultKind::fail_alloc;
  bad_spec(spec, "kind", "is '" + kind + "'" + did_you_mean(kind, {"stall", "oom"}),
           std::string("use stall (a rank that never arrives, e.g. ") + kStallExample +
               ") or oom (an allocation that fails, e.g. " + kOomExample + ")");
}

int32_t parse_index(std::string_view spec, const std::string& field, const std::string& value, const char* what) {
  long long n = 0;
  if (!parse_int64(value, &n) || n < 0 || n > 1'000'000'000) {
    bad_spec(spec, field, "is '" + value + "', not " + what,
             "give a whole number from 0, e.g. " + field + (field == "rank" ? "=3" : "=1"));
  }
  return static_cast<int32_t>(n);
}

// Applies one key=value field to `fault`.
void apply_field(std::string_view spec, const std::string& key, const std::string& value, HostFault& fault) {
  const bool stall = fault.kind == HostFaultKind::stall_rank;
  if (key == "rank") {
    fault.rank = parse_index(spec, key, value, "a rank");
  } else if (key == "step") {
    fault.step = parse_index(spec, key, value, "a step");
  } else if (key == "op") {
    fault.op = value;
  } else if (key == "for" && stall) {
    std::string why;
    const auto ns = parse_time_ns(value, &why);
    if (!ns || *ns <= 0) {
      bad_spec(spec, key, ns ? "is not a positive duration" : why,
               "give how long the rank stalls with a unit, e.g. for=2s, or leave 'for' out to stall until the run "
               "stops");
    }
    fault.stall_ns = *ns;
  } else if (key == "buffer" && !stall) {
    fault.buffer = value;
  } else {
    const std::vector<std::string> keys = stall ? std::vector<std::string>{"rank", "op", "step", "for"}
                                                : std::vector<std::string>{"rank", "op", "step", "buffer"};
    bad_spec(spec, key,
             std::string("is not a field of ") + (stall ? "a stall" : "an oom") + " fault" + did_you_mean(key, keys),
             "the fields are " + join(keys) + ", e.g. " + (stall ? kStallExample : kOomExample));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Resolving against a schedule.

[[noreturn]] void bad_fault(const HostFault& f, size_t index, const std::string& field, const std::string& problem,
                            const std::string& fix) {
  if (!f.origin.empty()) throw ConfigError(SourceLocation{f.origin, 0, 0}, field, problem, fix);
  throw ConfigError(SourceLocation{"<host options>", 0, 0}, "faults[" + std::to_string(index) + "]." + field, problem,
                    fix);
}

OpId find_op(const Schedule& s, const HostFault& f, size_t index) {
  long long id = 0;
  if (parse_int64(f.op, &id) && id >= 0 && id < static_cast<long long>(s.ops.size()))
    return OpId(static_cast<int32_t>(id));
  std::vector<std::string> names;
  for (const Op& op : s.ops) {
    if (op.name == f.op) return op.id;
    names.push_back(op.name);
  }
  bad_fault(f, index, "op", "'" + f.op + "' names no op of the schedule" + did_you_mean(f.op, names),
            "give an op name of the schedule ('fsdpsim schedule -o FILE' lists them) or an id from 0 to " +
                std::to_string(s.ops.size() - 1));
}

BufferId find_alloc(const Schedule& s, const HostFault& f, size_t index, const Op& op) {
  if (op.allocs.empty()) {
    std::string example;  // the next op that allocates, wrapping around to the first
    for (size_t k = 1; k < s.ops.size() && example.empty(); ++k) {
      const Op& next = s.ops[(op.id.index() + k) % s.ops.size()];
      if (!next.allocs.empty()) example = ", e.g. '" + next.name + "'";
    }
    bad_fault(f, index, "op", "op '" + op.name + "' allocates no buffer, so no allocation of it can fail",
              "name an op that allocates one" + example);
  }
  if (f.buffer.empty()) return op.allocs.front();
  std::vector<std::string> names;
  for (const BufferId b : op.allocs) {
    const Buffer& buffer = s.buffers[b];
    if (buffer.name == f.buffer) return b;
    names.push_back(buffer.name);
  }
  bad_fault(f, index, "buffer",
            "'" + f.buffer + "' is not a buffer op '" + op.name + "' allocates" + did_you_mean(f.buffer, names),
            "name one of " + join(names) + ", or leave 'buffer' out to fail the first");
}

}  // namespace

std::string_view to_string(HostFaultKind kind) {
  return kind == HostFaultKind::stall_rank ? "stall_rank" : "fail_alloc";
}

HostFault parse_host_fault(std::string_view spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    bad_spec(spec, "kind", "has no kind",
             std::string("write KIND:rank=R,op=OP with KIND stall or oom, e.g. ") + kStallExample);
  }
  HostFault fault;
  fault.kind = parse_kind(spec, trim_copy(spec.substr(0, colon)));
  fault.origin = "--inject " + std::string(spec);
  std::map<std::string, bool> seen;
  for (const std::string& field : split(spec.substr(colon + 1), ',')) {
    const size_t eq = field.find('=');
    const std::string key = trim_copy(field.substr(0, eq));
    const std::string value = eq == std::string::npos ? "" : trim_copy(field.substr(eq + 1));
    if (eq == std::string::npos || key.empty() || value.empty()) {
      bad_spec(spec, key.empty() ? field : key, "is not key=value",
               std::string("write the fields as key=value separated by commas, e.g. ") +
                   (fault.kind == HostFaultKind::stall_rank ? kStallExample : kOomExample));
    }
    if (seen[key]) bad_spec(spec, key, "is given twice", "give each field once");
    seen[key] = true;
    apply_field(spec, key, value, fault);
  }
  for (const char* required : {"rank", "op"}) {
    if (!seen[required]) {
      bad_spec(spec, required, "is missing",
               std::string("give the rank and the op, e.g. ") +
                   (fault.kind == HostFaultKind::stall_rank ? kStallExample : kOomExample));
    }
  }
  return fault;
}

std::vector<std::vector<InjectedFault>> resolve_host_faults(const Schedule& schedule,
                                                            const std::vector<HostFault>& faults, int32_t ranks,
                                                            int32_t steps) {
  std::vector<std::vector<InjectedFault>> by_rank(static_cast<size_t>(std::max(ranks, 1)));
  for (size_t i = 0; i < faults.size(); ++i) {
    const HostFault& f = faults[i];
    if (f.rank < 0 || f.rank >= ranks) {
      bad_fault(f, i, "rank",
                "is " + std::to_string(f.rank) + " but the run has " + std::to_string(ranks) + " rank" +
                    (ranks == 1 ? "" : "s"),
                "use a rank from 0 to " + std::to_string(ranks - 1));
    }
    if (f.step < 0 || f.step >= steps) {
      bad_fault(f, i, "step",
                "is " + std::to_string(f.step) + " but the run has " + std::to_string(steps) + " step" +
                    (steps == 1 ? "" : "s"),
                "use a step from 0 to " + std::to_string(steps - 1) + ", or run more steps");
    }
    if (f.stall_ns < 0) bad_fault(f, i, "for", "is negative", "give a positive duration, or 0 to stall until the end");
    const OpId op = find_op(schedule, f, i);
    InjectedFault injected{f.kind, op, f.step, BufferId::none(), f.stall_ns};
    if (f.kind == HostFaultKind::fail_alloc) {
      injected.buffer = find_alloc(schedule, f, i, schedule.ops[op]);
    }
    by_rank[static_cast<size_t>(f.rank)].push_back(injected);
  }
  return by_rank;
}

}  // namespace fsdpsim
