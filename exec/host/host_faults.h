#pragma once
/// Faults injected into a host run, so that CI exercises what the executor does when a GPU cluster misbehaves: a rank
/// that stalls at an op (it never arrives at its collective's rendezvous, or arrives late) and an allocation that
/// fails. `fsdpsim exec --inject` gives them as text ("stall:rank=3,op=ag.layer.2.mb0"); run_host() resolves them
/// against the schedule before any thread starts, so a fault that names no op or no buffer is a ConfigError.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/units.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// What an injected fault does.
enum class HostFaultKind : uint8_t {
  stall_rank,  ///< the rank stops at the op: it never arrives at its rendezvous (or arrives `stall_ns` late)
  fail_alloc,  ///< one of the op's allocations fails on the rank, as cudaMallocAsync fails when the GPU is full
};

/// One fault, as given.
struct HostFault {
  HostFaultKind kind = HostFaultKind::stall_rank;
  int32_t rank = 0;
  std::string op;       ///< the op, by name ("ag.layer.2.mb0") or by id ("12")
  int32_t step = 0;     ///< the step in which it strikes (0: the first)
  std::string buffer;   ///< fail_alloc: the buffer whose allocation fails, by name; empty: the op's first allocation
  TimeNs stall_ns = 0;  ///< stall_rank: how long the rank stalls; 0: until the run stops (it never arrives)
  std::string origin;   ///< where the fault was given, for errors ("--inject stall:rank=3,op=x"); empty: options
};

/// Parses `--inject` text: "stall:rank=R,op=OP[,step=S][,for=DURATION]" or "oom:rank=R,op=OP[,step=S][,buffer=B]".
/// Strict: an unknown kind or key, a key given twice, a missing rank or op, or a value that does not parse is a
/// ConfigError naming the field and showing a valid spec.
HostFault parse_host_fault(std::string_view spec);

/// A fault resolved against a schedule: ids instead of names.
struct InjectedFault {
  HostFaultKind kind = HostFaultKind::stall_rank;
  OpId op;
  int32_t step = 0;
  BufferId buffer;  ///< fail_alloc: the buffer whose allocation fails
  TimeNs stall_ns = 0;
};

/// Resolves `faults` against `schedule` for a run of `ranks` ranks and `steps` steps; the result is indexed by rank.
/// Throws ConfigError naming the fault's field when a rank, op, step or buffer does not exist, when a fail_alloc op
/// allocates nothing, or when its buffer is not one the op allocates.
std::vector<std::vector<InjectedFault>> resolve_host_faults(const Schedule& schedule,
                                                            const std::vector<HostFault>& faults, int32_t ranks,
                                                            int32_t steps);

/// "stall_rank" or "fail_alloc".
std::string_view to_string(HostFaultKind kind);

}  // namespace fsdpsim
