#pragma once
/// The work of each op on one host rank: small real compute that reads and checks every input and writes every
/// output, host copies that move the bytes of offloaded activations, and collectives that read their input pieces,
/// meet the other members at the rendezvous, and write the checked result.

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "exec/host/host_memory.h"
#include "exec/host/host_plan.h"
#include "exec/host/host_runner.h"
#include "exec/host/host_world.h"
#include "schedule/ir.h"

namespace fsdpsim {

/// Host memory that holds offloaded activations between the device→host copy and the host→device reload.
class HostStore {
 public:
  /// What one device→host copy left in host memory.
  struct Entry {
    std::vector<uint32_t> values;
    int32_t step = -1;
    OpId writer;
  };
  /// Stores the values copied out for (unit, micro-batch).
  void put(int32_t unit, int32_t micro_batch, Entry entry);
  /// The values copied out for (unit, micro-batch), if any.
  [[nodiscard]] bool get(int32_t unit, int32_t micro_batch, Entry* out) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<int32_t, int32_t>, Entry> entries_;
};

/// What the op functions of one rank work with.
struct RankContext {
  const Schedule& schedule;
  const HostPlan& plan;
  const HostOptions& options;
  HostWorld& world;
  RankMemory& memory;
  ProblemLog& problems;
  HostStore& host;
  int32_t rank = 0;
};

/// A compute, optimizer or on-device copy op: reads every input buffer (checked), folds it into a checksum, and
/// writes every output buffer with a pattern derived from (rank, op, step). Returns the checksum.
uint64_t run_compute_op(const Op& op, int32_t step, RankContext& ctx);
/// A device↔host copy (activation offload): out to host memory, or back into the reload buffer.
void run_host_copy(const Op& op, int32_t step, RankContext& ctx);
/// A collective: waits options.collective_delay_ns, reads its input, meets the group (or, emulated, stands in for
/// every member), writes the checked output.
void run_collective_op(const Op& op, int32_t step, RankContext& ctx);
/// A pipeline send or receive between two stages of this rank's pipeline (host_p2p.cpp): the send posts a pattern
/// of its (rank, op, step) sized as its bytes, the pair meets at a rendezvous as NCCL's send and receive do, and the
/// receive checks that it got exactly its peer's message of this step before writing it into its buffer.
void run_p2p_op(const Op& op, int32_t step, RankContext& ctx);

}  // namespace fsdpsim
