# Shared build conventions: warnings as errors for our code, sanitizers, explicit source lists, embedded data files.
include(GNUInstallDirs)

add_library(fsdpsim_warnings INTERFACE)
target_compile_options(fsdpsim_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough -Wmissing-declarations -Werror
  # GCC 12's std::string inlining trips false -Wrestrict reports at -O2/-O3 (GCC bug 105329).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>>)

add_library(fsdpsim_sanitizers INTERFACE)
# FSDPSIM_FUZZ: libFuzzer needs clang; every library gets its coverage instrumentation (fuzzer-no-link) and, unless
# told otherwise, ASan and UBSan so that the fuzzers catch memory errors and undefined behaviour, not just crashes.
if(FSDPSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "FSDPSIM_FUZZ=ON needs clang++ (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(NOT FSDPSIM_SANITIZE)
    set(FSDPSIM_SANITIZE "address,undefined")
  endif()
  target_compile_options(fsdpsim_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
if(FSDPSIM_SANITIZE)
  string(REPLACE "," ";" _fsdpsim_sanitizers "${FSDPSIM_SANITIZE}")
  foreach(_s IN LISTS _fsdpsim_sanitizers)
    target_compile_options(fsdpsim_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${_s}>)
    target_link_options(fsdpsim_sanitizers INTERFACE -fsanitize=${_s})
  endforeach()
  # GCC's flow analysis sees through ASan's instrumentation badly and reports false -Wmaybe-uninitialized inside
  # libstdc++ (std::regex, std::function); the normal build keeps the warning.
  target_compile_options(fsdpsim_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer
    -fno-sanitize-recover=all $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>>)
endif()

# fsdpsim_library(NAME SOURCES ... DEPS ...): one static library per folder, includes rooted at the repository.
function(fsdpsim_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  # Headers are included from the repository root ("sim/engine.h"); installed, that root is include/fsdpsim.
  target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>"
                                            "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/fsdpsim>")
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS} fsdpsim_warnings fsdpsim_sanitizers)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

# fsdpsim_no_unity(FILE ...): keeps these sources out of the unity build's batches (FSDPSIM_UNITY_BUILD): each
# defines a file-local name (a helper in an anonymous namespace, a type alias) that one of its batch mates defines too.
function(fsdpsim_no_unity)
  set_source_files_properties(${ARGN} DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# fsdpsim_embed(OUTPUT file.cpp NAMESPACE ns FUNCTION fn FILES a.yaml b.yaml): compiles data files into a table
# `std::span<const EmbeddedFile> fn()` so presets ship inside the binary and stay editable as YAML.
function(fsdpsim_embed)
  cmake_parse_arguments(ARG "" "OUTPUT;FUNCTION" "FILES" ${ARGN})
  set(_inputs "")
  foreach(_f IN LISTS ARG_FILES)
    list(APPEND _inputs "${CMAKE_CURRENT_SOURCE_DIR}/${_f}")
  endforeach()
  string(REPLACE ";" "|" _joined "${_inputs}")
  add_custom_command(
    OUTPUT "${ARG_OUTPUT}"
    COMMAND ${CMAKE_COMMAND} "-DOUTPUT=${ARG_OUTPUT}" "-DFUNCTION=${ARG_FUNCTION}" "-DINPUTS=${_joined}"
            -P "${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake"
    DEPENDS ${_inputs} "${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake"
    COMMENT "Embedding ${ARG_FUNCTION} data files"
    VERBATIM)
endfunction()

# fsdpsim_test(name [LABELS unit|integration|gpu] SOURCES ... DEPS ... [TIMEOUT seconds] [RESOURCE_LOCK name]):
# a GoogleTest program, each test registered with ctest. TIMEOUT bounds each test, for tests whose failure could be a hang (the executor's
# fault handling); tests that share a RESOURCE_LOCK never run at the same time.
function(fsdpsim_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;RESOURCE_LOCK" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main fsdpsim_warnings
                        fsdpsim_sanitizers)
  target_compile_definitions(${name} PRIVATE FSDPSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             FSDPSIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}")  # tests/support/, also without a library
  # The test code itself at -O1 in Release builds: the libraries it checks keep -O3, and a fresh build spends 40% of
  # its compile time on the test files.
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-O1>)
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  # gtest_discover_tests flattens PROPERTIES into one list, so a test carries exactly one label.
  list(LENGTH ARG_LABELS _label_count)
  if(NOT _label_count EQUAL 1)
    message(FATAL_ERROR "fsdpsim_test(${name}): give exactly one label (unit, integration or gpu), not '${ARG_LABELS}'")
  endif()
  set(_properties)
  if(ARG_TIMEOUT)
    set(_properties TIMEOUT ${ARG_TIMEOUT})
  endif()
  if(ARG_RESOURCE_LOCK)
    list(APPEND _properties RESOURCE_LOCK ${ARG_RESOURCE_LOCK})
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS ${ARG_LABELS} ${_properties} DISCOVERY_TIMEOUT 60)
endfunction()
