# Run with `cmake -P` after cargo has built demandtex-capi: lays the libraries out in the
# install shape in a staging directory of the build tree, so that `cmake --install` copies
# them as they are (symlinks included).
#
#   DEMANDTEX_CARGO_OUT    cargo's output directory (<target dir>/release or /debug)
#   DEMANDTEX_STAGE_DIR    where to put them
#   DEMANDTEX_VERSION      package version, e.g. 0.1.0 (the real file's suffix)
#   DEMANDTEX_ABI_VERSION  SONAME number, e.g. 0
#   DEMANDTEX_READELF      readelf, to check the SONAME (optional: skipped when empty)
#
# Result: libdemandtex.so.<version> (a copy), libdemandtex.so.<abi> -> it,
#         libdemandtex.so -> libdemandtex.so.<abi>, libdemandtex.a (a copy).
cmake_minimum_required(VERSION 3.20)

foreach(var IN ITEMS DEMANDTEX_CARGO_OUT DEMANDTEX_STAGE_DIR DEMANDTEX_VERSION DEMANDTEX_ABI_VERSION)
  if("${${var}}" STREQUAL "")
    message(FATAL_ERROR "DemandTexStage.cmake: ${var} is not set")
  endif()
endforeach()

set(shared "${DEMANDTEX_CARGO_OUT}/libdemandtex.so")
set(static "${DEMANDTEX_CARGO_OUT}/libdemandtex.a")
foreach(lib IN ITEMS "${shared}" "${static}")
  if(NOT EXISTS "${lib}")
    message(FATAL_ERROR
      "demandtex: cargo finished but ${lib} does not exist. The crate demandtex-capi must "
      "build a cdylib and a staticlib named `demandtex` (capi/Cargo.toml [lib]).")
  endif()
endforeach()

set(soname "libdemandtex.so.${DEMANDTEX_ABI_VERSION}")
if(NOT "${DEMANDTEX_READELF}" STREQUAL "")
  execute_process(COMMAND "${DEMANDTEX_READELF}" -d "${shared}"
    OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "demandtex: `${DEMANDTEX_READELF} -d ${shared}` failed: ${err}")
  endif()
  if(NOT dynamic MATCHES "\\(SONAME\\)[^\n]*\\[([^]\n]+)\\]")
    message(FATAL_ERROR
      "demandtex: ${shared} has no SONAME; consumers would record its absolute path. "
      "capi/build.rs must pass -Wl,-soname,${soname}.")
  endif()
  if(NOT CMAKE_MATCH_1 STREQUAL soname)
    message(FATAL_ERROR
      "demandtex: ${shared} has SONAME ${CMAKE_MATCH_1} but include/demandtex.h says "
      "DTEX_ABI_VERSION ${DEMANDTEX_ABI_VERSION} (expected ${soname}). Bump both together.")
  endif()
endif()

file(MAKE_DIRECTORY "${DEMANDTEX_STAGE_DIR}")
set(real "libdemandtex.so.${DEMANDTEX_VERSION}")
# configure_file(COPYONLY) rewrites only when the content changed, so an unchanged library
# keeps its timestamp and consumers do not relink.
configure_file("${shared}" "${DEMANDTEX_STAGE_DIR}/${real}" COPYONLY)
configure_file("${static}" "${DEMANDTEX_STAGE_DIR}/libdemandtex.a" COPYONLY)

function(stage_link target link)
  set(path "${DEMANDTEX_STAGE_DIR}/${link}")
  if(IS_SYMLINK "${path}")
    file(READ_SYMLINK "${path}" current)
    if(current STREQUAL target)
      return()
    endif()
  endif()
  file(REMOVE "${path}")
  file(CREATE_LINK "${target}" "${path}" SYMBOLIC)
endfunction()

if(NOT soname STREQUAL real)
  stage_link("${real}" "${soname}")
endif()
stage_link("${soname}" "libdemandtex.so")
