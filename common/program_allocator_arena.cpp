// Not part of the common library: linked into the programs that allocate with mimalloc (cmake/FsdpsimAllocator.cmake):
// reserves address space for mimalloc's arena before main. A sweep builds and frees schedules of up to ~10^5 ops at
// every point; without an arena, mimalloc returns their multi-megabyte segments to the OS and the next point faults
// them in again page by page (a 16-point Llama-3-70B sweep: 245k page faults, 75k with the arena, and a quarter less
// CPU time). The arena is committed (mapped read-write) but pages only become resident as they are touched; freed
// segments stay mapped in it, which is the point.
#include <cstddef>

#include <mimalloc.h>

namespace {

constexpr size_t kArenaBytes = size_t{4} << 30;

[[maybe_unused]] const bool kArenaReserved = [] {
  // Not fatal when it fails (a small address-space limit): mimalloc then allocates from the OS as before.
  return mi_reserve_os_memory(kArenaBytes, /*commit=*/true, /*allow_large=*/false) == 0;
}();

}  // namespace
