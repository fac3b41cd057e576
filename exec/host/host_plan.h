#pragma once
/// How the host backend lays a schedule out in real memory (shared by every rank, read-only once built): the data
/// words, the real size of each buffer, the regions inside a buffer that collectives read or write separately, and
/// for every collective the pieces of buffers (or padding, or private scratch) its input and output consist of.
///
/// Data are 32-bit words: the top 12 bits tag the buffer and the allocation that holds them, the low 20 bits are
/// the value. Collectives add values modulo 2^20 (exact: no rounding, no overflow ambiguity), and any word read can
/// be checked on its own: poison, another buffer's data, or data of an earlier allocation.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exec/fault_report.h"
#include "schedule/ir.h"

namespace fsdpsim {

inline constexpr uint32_t kValueBits = 20;
inline constexpr uint32_t kValueMask = (uint32_t{1} << kValueBits) - 1;
/// The tag of poison; no buffer's tag takes this value.
inline constexpr uint32_t kPoisonTag = 0xFFF;
/// What a buffer holds when allocated and again when released.
inline constexpr uint32_t kPoisonWord = (kPoisonTag << kValueBits) | 0x0DEAD;
/// The fewest words a buffer gets, so that even a 0-byte or tiny buffer can be written and checked.
inline constexpr int64_t kMinBufferWords = 4;

/// The tag of buffer `buffer`'s data in its allocation number `generation` (in [0, 0xFFE]).
uint32_t buffer_tag(BufferId buffer, int32_t generation);
/// A data word: `tag` in the top bits, `value` (reduced modulo 2^20) in the low bits.
inline uint32_t make_word(uint32_t tag, uint32_t value) {
  return (tag << kValueBits) | (value & kValueMask);
}
/// The tag of a data word.
inline uint32_t word_tag(uint32_t word) {
  return word >> kValueBits;
}
/// Value `index` of the pattern `seed` (what compute ops and setup write).
uint32_t pattern_value(uint64_t seed, int64_t index);
/// A seed from the parts that identify one write (rank, op, step, buffer, region).
uint64_t pattern_seed(int32_t rank, OpId op, int32_t step, BufferId buffer, int32_t region);
/// An order-sensitive 64-bit checksum of words.
uint64_t words_checksum(std::span<const uint32_t> words);

/// Words that stand for `bytes` real bytes: ceil(bytes / bytes_scale) bytes, rounded up to whole words, at least 1.
int64_t scaled_words(int64_t bytes, int64_t bytes_scale);

/// A contiguous run of words inside a buffer.
struct WordRegion {
  int64_t offset = 0;
  int64_t words = 0;
};

/// The unit of a region that no collective uses on its own (the rest of a buffer, or a whole buffer).
inline constexpr int32_t kAnyUnit = -1000;

/// One buffer in real memory: its words, tiled by regions (one region unless collectives access parts of it).
struct BufferLayout {
  int64_t words = 0;
  std::vector<WordRegion> regions;
  std::vector<int32_t> region_units;  ///< per region: the unit whose collectives use it, or kAnyUnit
};

/// A run of a collective's input or output: regions [first_region, first_region + regions) of `buffer`, or
/// `words` zero words of padding when `buffer` is -1 (bucket padding the IR counts but no buffer holds).
struct Piece {
  BufferId buffer;
  int32_t first_region = 0;
  int32_t regions = 0;
  int64_t words = 0;
};

/// One side (input or output) of a collective on one rank.
struct CollectiveSide {
  std::vector<Piece> pieces;  ///< in order; their words add up to at least `words` unless `scratch`
  int64_t words = 0;          ///< the side's length: what the collective sends or receives
  bool scratch = false;       ///< no buffer holds it (TP/EP collectives inside a unit): private memory
};

/// A collective's layout on each rank.
struct CollectivePlan {
  CollectiveSide in;
  CollectiveSide out;
  int64_t chunk_words = 0;  ///< per member: the shard (AG, RS), the whole buffer (AR), one block (A2A)
};

/// The real-memory layout of a schedule.
struct HostPlan {
  int64_t bytes_scale = 1;
  IdVector<BufferId, BufferLayout> buffers;    ///< by buffer id
  IdVector<OpId, CollectivePlan> collectives;  ///< by op id; empty sides for ops that are not collectives
};

/// Lays out `schedule` with one real byte per `bytes_scale` IR bytes. A collective that moves fewer bytes of a single
/// buffer than the buffer holds gets its own region of it, keyed by the op's unit and length (e.g. one unit's slice of
/// the whole-model parameter shard); the regions of a buffer follow each other in the order the ops first use them.
HostPlan make_host_plan(const Schedule& schedule, int64_t bytes_scale);

/// The regions of `buffer` that the non-collective op `op` reads or writes. The IR lists whole buffers; where a
/// buffer is split among units' collectives (the whole-model gradient shard), a forward or backward op of unit u
/// touches only u's regions (e.g. the gradient accumulation of one layer, on the reduce-scatter stream, must not
/// race with the outer all-reduce of another layer's slice); optimizer-phase ops and ops of units with no region
/// of their own touch every region.
std::vector<int32_t> op_regions(const HostPlan& plan, const Op& op, BufferId buffer);

// group_members() and describe_members() live in exec/fault_report.h (the CUDA backend's reports use them too).

}  // namespace fsdpsim
