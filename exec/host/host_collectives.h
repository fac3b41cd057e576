#pragma once
/// The data movement of the host backend's collectives, as pure functions over the members' contributions: what
/// one member's output of an all-gather, reduce-scatter, all-reduce or all-to-all is, and the check of it in the
/// manner of nccl-tests' #wrong column — every output word compared with the value an independent per-word formula
/// gives, after the contributions themselves were checked (right members in group order, right op and step, the
/// right length, and unchanged since they were posted).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schedule/ir.h"

namespace fsdpsim {

/// One member's input to a collective, as posted at the rendezvous (values only: the low 20 bits of each word).
struct Contribution {
  int32_t rank = -1;
  OpId op;
  int32_t step = -1;
  std::vector<uint32_t> values;
  /// Checksums of consecutive blocks of `values` when they were posted (catches corruption in shared memory); each
  /// member checks the blocks it reads, so no member reads every member's whole input.
  std::vector<uint64_t> block_checksums;
  int64_t block_words = 0;  ///< words per block; the last block may be shorter
};

/// Makes a contribution with the checksums of its blocks of `block_words` words (0: one block of all the values).
std::shared_ptr<const Contribution> make_contribution(int32_t rank, OpId op, int32_t step, std::vector<uint32_t> values,
                                                      int64_t block_words = 0);

/// What one member computes.
struct CollectiveCall {
  const Op* op = nullptr;
  std::string group_name;
  std::vector<int32_t> members;  ///< the group instance, in group order
  int32_t rank = -1;             ///< the member computing its output
  int32_t step = 0;
  int64_t chunk_words = 0;  ///< see CollectivePlan::chunk_words
  int64_t in_words = 0;     ///< every contribution's length
  bool emulated = false;    ///< one contribution (ours) stands for every member's (emulate mode)
};

/// One member's output and what was wrong.
struct CollectiveOutcome {
  std::vector<uint32_t> values;       ///< the member's output (zeros where the inputs were unusable)
  int64_t wrong = 0;                  ///< output words that differ from the expected ones (#wrong)
  std::vector<std::string> problems;  ///< each names the op, the group instance and the fault
};

/// Input length of `kind` for one member: the chunk (all_gather, all_reduce) or one chunk per member.
int64_t collective_in_words(OpKind kind, int64_t chunk_words, int32_t members);
/// Output length of `kind` for one member: one chunk per member (all_gather, all_to_all) or the chunk.
int64_t collective_out_words(OpKind kind, int64_t chunk_words, int32_t members);

/// Checks the contributions (one per member, in group order; one in total when emulated) and computes `call.rank`'s
/// output: all_gather concatenates the members' inputs in group order, reduce_scatter sums them and keeps this
/// member's chunk, all_reduce sums them, all_to_all puts member m's block number `me` at position m. Sums are modulo
/// 2^20 (the value bits), hence exact.
CollectiveOutcome run_collective(const CollectiveCall& call,
                                 const std::vector<std::shared_ptr<const Contribution>>& contributions);

/// The output as an independent per-word formula gives it (the #wrong reference). Exposed for tests.
uint32_t expected_output_word(const CollectiveCall& call,
                              const std::vector<std::shared_ptr<const Contribution>>& contributions, int64_t index);

}  // namespace fsdpsim
