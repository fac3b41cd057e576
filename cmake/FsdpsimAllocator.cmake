# The programs — the fsdpsim command and the benchmarks — allocate with mimalloc (Debian's libmimalloc-dev) where it is
# installed. A sweep point builds a schedule of ~10^4 ops, each with a name and a few small vectors, simulates it and
# frees it all; with two threads glibc's malloc spent a quarter of the time on that (callgrind: _int_malloc, _int_free,
# malloc_consolidate), and the 10,000-point sweep benchmark ran in 42.4-42.7 s with mimalloc against 60.5-63.9 s
# without, with byte-identical results (bench_sweep, 2026-11-26, this 2-core machine). Not under sanitizers or
# libFuzzer (they replace malloc themselves), not in the Python module (the interpreter owns its process's allocator)
# and not in the libraries (a program that links them chooses its own).
option(FSDPSIM_MIMALLOC "Link the fsdpsim program and the benchmarks with mimalloc when it is installed" ON)
set(FSDPSIM_HAVE_MIMALLOC OFF)
if(FSDPSIM_MIMALLOC AND NOT FSDPSIM_SANITIZE AND NOT FSDPSIM_FUZZ)
  find_package(mimalloc 2 CONFIG QUIET)
  if(TARGET mimalloc)
    set(FSDPSIM_HAVE_MIMALLOC ON)
  endif()
endif()

# Links `target` (an executable) with the program allocator: mimalloc's shared library replaces malloc and free for the
# whole process, the libraries' allocations included.
function(fsdpsim_use_program_allocator target)
  if(FSDPSIM_HAVE_MIMALLOC)
    target_link_libraries(${target} PRIVATE mimalloc)
    # An arena reserved before main, so that freed schedules stay mapped for the next sweep point.
    target_sources(${target} PRIVATE "${PROJECT_SOURCE_DIR}/common/program_allocator_arena.cpp")
  endif()
endfunction()
