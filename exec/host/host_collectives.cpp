#include "exec/host/host_collectives.h"

#include <algorithm>
#include <span>

#include "common/error.h"
#include "exec/host/host_plan.h"

namespace fsdpsim {
namespace {

using Contributions = std::vector<std::shared_ptr<const Contribution>>;

std::string op_label(const CollectiveCall& call) {
  return "op " + to_string(call.op->id) + " '" + call.op->name + "' (" + std::string(to_string(call.op->kind)) +
         " over " + describe_members(call.group_name, call.members) + ", step " + std::to_string(call.step) + ")";
}

// The contribution that stands for member m.
const Contribution& input_of(const CollectiveCall& call, const Contributions& c, size_t m) {
  return *c[call.emulated ? 0 : m];
}

// The block of a contribution this member reads: its own chunk of a reduce-scatter or all-to-all input (when the
// contribution is split in chunks), else the whole input.
size_t consumed_block(const CollectiveCall& call, const Contribution& x) {
  const bool chunked = call.op->kind == OpKind::reduce_scatter || call.op->kind == OpKind::all_to_all;
  if (!chunked || x.block_checksums.size() <= 1) return 0;
  return static_cast<size_t>(std::find(call.members.begin(), call.members.end(), call.rank) - call.members.begin());
}

// True when the block's data still match the checksum taken when the contribution was posted (a contribution split
// in fewer blocks than that is checked whole).
bool block_intact(const Contribution& x, size_t block) {
  if (block >= x.block_checksums.size()) return false;
  const auto n = static_cast<int64_t>(x.values.size());
  const int64_t at = x.block_checksums.size() == 1 ? 0 : static_cast<int64_t>(block) * x.block_words;
  const int64_t len = x.block_checksums.size() == 1 ? n : std::min(x.block_words, n - at);
  if (at > n || len < 0) return false;
  const auto words = std::span<const uint32_t>(x.values).subspan(static_cast<size_t>(at), static_cast<size_t>(len));
  return words_checksum(words) == x.block_checksums[block];
}

// Checks that every member posted exactly one usable contribution for this op and step.
std::vector<std::string> check_contributions(const CollectiveCall& call, const Contributions& c) {
  std::vector<std::string> problems;
  const std::string label = op_label(call);
  if (std::find(call.members.begin(), call.members.end(), call.rank) == call.members.end()) {
    problems.push_back(label + ": rank " + std::to_string(call.rank) + " is not a member of the group instance");
  }
  const size_t expected = call.emulated ? 1 : call.members.size();
  if (c.size() != expected) {
    problems.push_back(label + ": " + std::to_string(c.size()) + " contributions arrived for " +
                       std::to_string(expected) + " members");
    return problems;
  }
  for (size_t m = 0; m < c.size(); ++m) {
    if (!c[m]) {
      problems.push_back(label + ": member " + std::to_string(call.members[m]) + " posted nothing");
      continue;
    }
    const Contribution& x = *c[m];
    if (!call.emulated && x.rank != call.members[m]) {
      problems.push_back(label + ": rank " + std::to_string(x.rank) + " contributed in the place of member " +
                         std::to_string(call.members[m]) + ": a wrong rendezvous group");
    }
    if (x.op != call.op->id || x.step != call.step) {
      problems.push_back(label + ": rank " + std::to_string(x.rank) + " contributed op " + to_string(x.op) +
                         " of step " + std::to_string(x.step) + ": a mismatched collective");
    }
    if (static_cast<int64_t>(x.values.size()) != call.in_words) {
      problems.push_back(label + ": rank " + std::to_string(x.rank) + " contributed " +
                         std::to_string(x.values.size()) + " words where " + std::to_string(call.in_words) +
                         " were expected");
    } else if (!block_intact(x, consumed_block(call, x))) {
      problems.push_back(label + ": the data rank " + std::to_string(x.rank) +
                         " contributed changed after it was posted: corrupted data");
    }
  }
  return problems;
}

// The bulk data movement (what a transport does); checked word by word against expected_output_word.
std::vector<uint32_t> move_data(const CollectiveCall& call, const Contributions& c, size_t me) {
  const auto n = call.members.size();
  const auto chunk = static_cast<size_t>(call.chunk_words);
  std::vector<uint32_t> out(
      static_cast<size_t>(collective_out_words(call.op->kind, call.chunk_words, static_cast<int32_t>(n))), 0);
  for (size_t m = 0; m < n; ++m) {
    const std::vector<uint32_t>& in = input_of(call, c, m).values;
    switch (call.op->kind) {
      case OpKind::all_gather:
        std::copy_n(in.begin(), chunk, out.begin() + static_cast<std::ptrdiff_t>(m * chunk));
        break;
      case OpKind::reduce_scatter:
        for (size_t i = 0; i < chunk; ++i) out[i] = (out[i] + in[me * chunk + i]) & kValueMask;
        break;
      case OpKind::all_to_all:
        std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(me * chunk), chunk,
                    out.begin() + static_cast<std::ptrdiff_t>(m * chunk));
        break;
      default:  // all_reduce
        for (size_t i = 0; i < chunk; ++i) out[i] = (out[i] + in[i]) & kValueMask;
        break;
    }
  }
  return out;
}

// The position of call.rank among the members (members.size() when it is not one).
int64_t member_index(const CollectiveCall& call) {
  return static_cast<int64_t>(std::find(call.members.begin(), call.members.end(), call.rank) - call.members.begin());
}

// The reference: output word `index` of member `me` by the definition of each collective, one word at a time.
uint32_t expected_word(const CollectiveCall& call, const Contributions& c, int64_t me, int64_t index) {
  const auto chunk = call.chunk_words;
  const auto n = static_cast<int64_t>(call.members.size());
  const auto word = [&](int64_t member, int64_t at) {
    return input_of(call, c, static_cast<size_t>(member)).values[static_cast<size_t>(at)];
  };
  switch (call.op->kind) {
    case OpKind::all_gather:  // word k comes from member k / chunk, at k % chunk
      return word(index / chunk, index % chunk);
    case OpKind::all_to_all:  // word k comes from member k / chunk, from its block `me`
      return word(index / chunk, me * chunk + index % chunk);
    case OpKind::reduce_scatter: {  // word k is the sum over members of their word me·chunk + k
      uint64_t sum = 0;
      for (int64_t m = 0; m < n; ++m) sum += word(m, me * chunk + index);
      return static_cast<uint32_t>(sum) & kValueMask;
    }
    default: {  // all_reduce: word k is the sum over members of their word k
      uint64_t sum = 0;
      for (int64_t m = 0; m < n; ++m) sum += word(m, index);
      return static_cast<uint32_t>(sum) & kValueMask;
    }
  }
}

}  // namespace

std::shared_ptr<const Contribution> make_contribution(int32_t rank, OpId op, int32_t step, std::vector<uint32_t> values,
                                                      int64_t block_words) {
  auto c = std::make_shared<Contribution>();
  c->rank = rank;
  c->op = op;
  c->step = step;
  const auto n = static_cast<int64_t>(values.size());
  c->block_words = block_words > 0 ? block_words : std::max<int64_t>(n, 1);
  for (int64_t at = 0; at < n || (at == 0 && n == 0); at += c->block_words) {
    const auto len = static_cast<size_t>(std::min(c->block_words, n - at));
    c->block_checksums.push_back(
        words_checksum(std::span<const uint32_t>(values).subspan(static_cast<size_t>(at), len)));
  }
  c->values = std::move(values);
  return c;
}

int64_t collective_in_words(OpKind kind, int64_t chunk_words, int32_t members) {
  return kind == OpKind::all_gather || kind == OpKind::all_reduce ? chunk_words : chunk_words * members;
}

int64_t collective_out_words(OpKind kind, int64_t chunk_words, int32_t members) {
  return kind == OpKind::all_gather || kind == OpKind::all_to_all ? chunk_words * members : chunk_words;
}

uint32_t expected_output_word(const CollectiveCall& call, const Contributions& c, int64_t index) {
  return expected_word(call, c, member_index(call), index);
}

CollectiveOutcome run_collective(const CollectiveCall& call, const Contributions& contributions) {
  FSDPSIM_CHECK(call.op != nullptr && is_collective(call.op->kind), "run_collective needs a collective op");
  CollectiveOutcome outcome;
  const auto n = static_cast<int32_t>(call.members.size());
  const int64_t out_words = collective_out_words(call.op->kind, call.chunk_words, n);
  FSDPSIM_CHECK(call.in_words == collective_in_words(call.op->kind, call.chunk_words, n),
                "in_words agrees with the kind and chunk");
  outcome.problems = check_contributions(call, contributions);
  if (!outcome.problems.empty()) {
    outcome.values.assign(static_cast<size_t>(out_words), 0);
    return outcome;
  }
  const auto me =
      static_cast<size_t>(std::find(call.members.begin(), call.members.end(), call.rank) - call.members.begin());
  outcome.values = move_data(call, contributions, me);
  int64_t first_wrong = -1;
  for (int64_t k = 0; k < out_words; ++k) {
    if (outcome.values[static_cast<size_t>(k)] == expected_word(call, contributions, me, k)) continue;
    if (first_wrong < 0) first_wrong = k;
    ++outcome.wrong;
  }
  if (outcome.wrong > 0) {
    outcome.problems.push_back(op_label(call) + ": " + std::to_string(outcome.wrong) + " of " +
                               std::to_string(out_words) + " output words are wrong (#wrong), the first at word " +
                               std::to_string(first_wrong));
  }
  return outcome;
}

}  // namespace fsdpsim
