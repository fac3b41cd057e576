#include "exec/host/host_plan.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/error.h"
#include "common/int_math.h"

namespace fsdpsim {
namespace {

// SplitMix64's finaliser (Steele, Lea, Flood 2014): a cheap, well-mixed 64-bit hash for seeds and checksums.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The words one side of a collective moves, and the per-member chunk (see CollectivePlan).
struct SideWords {
  int64_t chunk = 0;
  int64_t in = 0;
  int64_t out = 0;
};

SideWords side_words(const Op& op, int32_t members, int64_t scale) {
  SideWords w;
  switch (op.kind) {
    case OpKind::all_gather:  // send per rank, recv = send × members
      w.chunk = scaled_words(op.send_bytes, scale);
      w.in = w.chunk;
      w.out = w.chunk * members;
      break;
    case OpKind::reduce_scatter:  // send = recv × members
      w.chunk = scaled_words(op.recv_bytes, scale);
      w.in = w.chunk * members;
      w.out = w.chunk;
      break;
    case OpKind::all_to_all:  // one block of send / members to every member
      w.chunk = scaled_words(ceil_div(op.send_bytes, std::max(1, members)), scale);
      w.in = w.out = w.chunk * members;
      break;
    default:  // all_reduce: send = recv
      w.chunk = scaled_words(std::max(op.send_bytes, op.recv_bytes), scale);
      w.in = w.out = w.chunk;
      break;
  }
  return w;
}

int64_t listed_bytes(const Schedule& s, const std::vector<BufferId>& buffers) {
  int64_t total = 0;
  for (const BufferId b : buffers) total += s.buffers[b].size_bytes;
  return total;
}

// A side that moves fewer bytes than its single buffer holds uses a region of it.
bool partial_side(const Schedule& s, const std::vector<BufferId>& buffers, int64_t bytes) {
  return buffers.size() == 1 && bytes < listed_bytes(s, buffers);
}

using RegionKey = std::pair<int32_t, int64_t>;  // (unit, words)

class PlanBuilder {
 public:
  PlanBuilder(const Schedule& s, int64_t scale) : s_(s), scale_(scale), keys_(s.buffers.size()) {}

  HostPlan build() {
    HostPlan plan;
    plan.bytes_scale = scale_;
    for (const Op& op : s_.ops) {
      if (!is_collective(op.kind)) continue;
      const SideWords w = words_of(op);
      if (partial_side(s_, op.reads, op.send_bytes)) key_of(op.reads[0], op, w.in);
      if (partial_side(s_, op.writes, op.recv_bytes)) key_of(op.writes[0], op, w.out);
    }
    for (const Buffer& b : s_.buffers) plan.buffers.push_back(layout(b));
    plan.collectives.resize(s_.ops.size());
    for (const Op& op : s_.ops) {
      if (!is_collective(op.kind)) continue;
      const SideWords w = words_of(op);
      CollectivePlan& c = plan.collectives[op.id.index()];
      c.chunk_words = w.chunk;
      c.in = side(plan, op, op.reads, op.send_bytes, w.in);
      c.out = side(plan, op, op.writes, op.recv_bytes, w.out);
    }
    return plan;
  }

 private:
  [[nodiscard]] SideWords words_of(const Op& op) const {
    FSDPSIM_CHECK(s_.groups.contains(op.group), "collective without a group");
    return side_words(op, s_.groups[op.group].size, scale_);
  }

  int32_t key_of(BufferId buffer, const Op& op, int64_t words) {
    auto& keys = keys_[buffer.index()];
    const RegionKey key{op.unit, words};
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it != keys.end()) return static_cast<int32_t>(it - keys.begin());
    keys.push_back(key);
    return static_cast<int32_t>(keys.size()) - 1;
  }

  [[nodiscard]] BufferLayout layout(const Buffer& b) const {
    BufferLayout l;
    for (const auto& [unit, words] : keys_[b.id.index()]) {
      l.regions.push_back(WordRegion{l.words, words});
      l.region_units.push_back(unit);
      l.words += words;
    }
    const int64_t base = std::max(kMinBufferWords, scaled_words(b.size_bytes, scale_));
    if (base > l.words) {  // the rest of the buffer, which whole-buffer ops read and write
      l.regions.push_back(WordRegion{l.words, base - l.words});
      l.region_units.push_back(kAnyUnit);
      l.words = base;
    }
    return l;
  }

  CollectiveSide side(const HostPlan& plan, const Op& op, const std::vector<BufferId>& buffers, int64_t bytes,
                      int64_t words) {
    CollectiveSide side;
    side.words = words;
    if (buffers.empty()) {
      side.scratch = true;
      return side;
    }
    if (partial_side(s_, buffers, bytes)) {
      const int32_t region = key_of(buffers[0], op, words);
      side.pieces.push_back(Piece{buffers[0], region, 1, words});
      return side;
    }
    int64_t total = 0;
    for (const BufferId b : buffers) {
      const BufferLayout& l = plan.buffers[b];
      side.pieces.push_back(Piece{b, 0, static_cast<int32_t>(l.regions.size()), l.words});
      total += l.words;
    }
    if (total < words) side.pieces.push_back(Piece{BufferId::none(), 0, 0, words - total});  // bucket padding
    return side;
  }

  const Schedule& s_;
  int64_t scale_;
  std::vector<std::vector<RegionKey>> keys_;  // per buffer, in order of first use
};

}  // namespace

uint32_t buffer_tag(BufferId buffer, int32_t generation) {
  const uint64_t h =
      mix64((static_cast<uint64_t>(static_cast<uint32_t>(buffer.value())) << 32) ^ static_cast<uint32_t>(generation));
  return static_cast<uint32_t>(h % kPoisonTag);  // 0 … 0xFFE: never the poison tag
}

uint32_t pattern_value(uint64_t seed, int64_t index) {
  return static_cast<uint32_t>(mix64(seed ^ (static_cast<uint64_t>(index) * 0xD6E8FEB86659FD93ull))) & kValueMask;
}

uint64_t pattern_seed(int32_t rank, OpId op, int32_t step, BufferId buffer, int32_t region) {
  uint64_t h = mix64(static_cast<uint32_t>(rank));
  for (const int32_t part : {op.value(), step, buffer.value(), region}) h = mix64(h ^ static_cast<uint32_t>(part));
  return h;
}

uint64_t words_checksum(std::span<const uint32_t> words) {
  // FNV-1a over 32-bit words (one multiply per word: it runs over every word read or written), then one mix.
  uint64_t h = 0xCBF29CE484222325ull;
  for (const uint32_t w : words) h = (h ^ w) * 0x100000001B3ull;
  return mix64(h ^ words.size());
}

int64_t scaled_words(int64_t bytes, int64_t bytes_scale) {
  FSDPSIM_CHECK(bytes_scale > 0, "bytes_scale must be positive");
  const int64_t real_bytes = ceil_div(std::max<int64_t>(bytes, 0), bytes_scale);
  return std::max<int64_t>(1, ceil_div(real_bytes, 4));
}

HostPlan make_host_plan(const Schedule& schedule, int64_t bytes_scale) {
  return PlanBuilder(schedule, bytes_scale).build();
}

std::vector<int32_t> op_regions(const HostPlan& plan, const Op& op, BufferId buffer) {
  const BufferLayout& l = plan.buffers[buffer];
  std::vector<int32_t> mine, all;
  for (size_t r = 0; r < l.regions.size(); ++r) {
    all.push_back(static_cast<int32_t>(r));
    if (l.region_units[r] == op.unit) mine.push_back(static_cast<int32_t>(r));
  }
  return op.phase == Phase::optim || mine.empty() ? all : mine;
}

}  // namespace fsdpsim
