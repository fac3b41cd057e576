// Fuzz target: CUDA memory snapshots given to `fsdpsim validate --measured-memory` (read_pickle, then
// read_memory_snapshot), and our own writer's output read back.
#include "common/pickle.h"
#include "fuzz/fuzz_target.h"
#include "report/memory_snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = fsdpsim::fuzz::text_of(data, size);
  return fsdpsim::fuzz::run_guarded("fuzz.snapshot.pickle", [&] {
    // Fewer values than a real snapshot may hold, so that shared references that expand are refused within the
    // fuzzer's memory limit.
    fsdpsim::PickleLimits limits;
    limits.max_items = int64_t{1} << 20;
    const fsdpsim::PickleValue value = fsdpsim::read_pickle(bytes, "fuzz.snapshot.pickle", limits);
    // Whatever was read writes and reads back to the same bytes.
    const std::string again = fsdpsim::write_pickle(value);
    if (fsdpsim::write_pickle(fsdpsim::read_pickle(again, "fuzz.again.pickle")) != again) {
      fsdpsim::fuzz::finding("a pickle does not round-trip through the writer");
    }
    const fsdpsim::SnapshotMemory m = fsdpsim::read_memory_snapshot(value, "fuzz.snapshot.pickle");
    (void)m;
  });
}
