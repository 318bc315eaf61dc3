# Stages the public headers as they are installed: STAGE_DIR/lumen/<dir>/<name>.h, with their
# includes of each other rewritten from "core/tensor.h" to "lumen/core/tensor.h", so that an
# installed lumen adds only include/ to a program's include path and a program's own
# core/error.h cannot shadow lumen's. The kernel internals (*_kernels.h, *_math.h, the strided
# views, the CPU and CUDA kernel folders, the strict JSON reader that needs nlohmann/json) are
# not part of the API and are not staged; a public
# header that includes one is an error. Files whose staged text is unchanged are not rewritten.
# Usage: cmake -DSOURCE_DIR=<repo> -DSTAGE_DIR=<build>/include -P cmake/stage_headers.cmake
cmake_minimum_required(VERSION 3.25)
set(dirs core ops nn models train datasets)
set(internal "(_kernels|_math)\\.h$|^core/(strided|strided_impl|json_strict)\\.h$|/(cpu|cuda|cli)/")

set(headers)
foreach(dir IN LISTS dirs)
  file(GLOB_RECURSE found RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${dir}/*.h")
  list(APPEND headers ${found})
endforeach()
list(FILTER headers EXCLUDE REGEX "${internal}")

set(include_pattern "#include \"((core|ops|nn|models|train|datasets)/[^\"]+)\"")
foreach(header IN LISTS headers ITEMS lumen.h)
  if(header STREQUAL "lumen.h")
    set(source "${SOURCE_DIR}/include/lumen/lumen.h")
  else()
    set(source "${SOURCE_DIR}/${header}")
  endif()
  file(READ "${source}" text)
  string(REGEX MATCHALL "${include_pattern}" includes "${text}")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "${include_pattern}" "\\1" included "${line}")
    if(NOT included IN_LIST headers)
      message(FATAL_ERROR "stage_headers: the public header ${header} includes ${included}, "
                          "which is internal or missing (see the list in this script)")
    endif()
  endforeach()
  string(REGEX REPLACE "${include_pattern}" "#include \"lumen/\\1\"" text "${text}")
  set(target "${STAGE_DIR}/lumen/${header}")
  set(old "")
  if(EXISTS "${target}")
    file(READ "${target}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${target}" "${text}")
  endif()
endforeach()
# Headers removed from the source since the last run.
file(GLOB_RECURSE staged RELATIVE "${STAGE_DIR}/lumen" "${STAGE_DIR}/lumen/*.h")
foreach(header IN LISTS staged)
  if(NOT header IN_LIST headers AND NOT header STREQUAL "lumen.h")
    file(REMOVE "${STAGE_DIR}/lumen/${header}")
  endif()
endforeach()
