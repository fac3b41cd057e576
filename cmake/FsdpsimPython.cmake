# FSDPSIM_PYTHON=AUTO|ON|OFF: the Python module (python/). Off in sanitizer and fuzz builds: an instrumented extension
# would need the sanitizer runtime preloaded into the Python interpreter. Sets FSDPSIM_HAVE_PYTHON.
set(FSDPSIM_HAVE_PYTHON OFF)
if(NOT FSDPSIM_PYTHON STREQUAL "OFF" AND NOT FSDPSIM_SANITIZE AND NOT FSDPSIM_FUZZ)
  # Debian's interpreter, whose python3-dev and python3-pytest scripts/setup installs, unless one is named (the
  # build backend of `pip install .` names the interpreter pip runs).
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  find_package(pybind11 CONFIG QUIET)
  if(Python3_FOUND AND pybind11_FOUND)
    set(FSDPSIM_HAVE_PYTHON ON)
  endif()
endif()
if(FSDPSIM_PYTHON STREQUAL "ON" AND NOT FSDPSIM_HAVE_PYTHON)
  message(FATAL_ERROR "FSDPSIM_PYTHON=ON but the module cannot be built (python3-dev and pybind11-dev, and no "
                      "sanitizer or fuzz build): install them or configure -DFSDPSIM_PYTHON=OFF")
endif()
