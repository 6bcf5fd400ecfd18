# Version numbers of the demandtex C library, read from their single sources of truth:
#   - the package version from the workspace Cargo.toml ([workspace.package] version),
#     or capi/Cargo.toml when that crate sets its own version;
#   - the ABI version (the SONAME number) from DTEX_ABI_VERSION in include/demandtex.h,
#     which cbindgen generates from the Rust constant.
# Nothing here is written by hand: bump the version in Cargo.toml and regenerate the header.

# demandtex_read_cargo_version(<source dir> <out var>): the version string, e.g. "0.1.0".
function(demandtex_read_cargo_version source_dir out_var)
  set(version "")
  set(capi_toml "${source_dir}/capi/Cargo.toml")
  if(EXISTS "${capi_toml}")
    file(STRINGS "${capi_toml}" capi_lines)
    foreach(line IN LISTS capi_lines)
      if(line MATCHES "^\\[" AND NOT line STREQUAL "[package]")
        break()  # only the [package] table (the first one) can hold the crate version
      endif()
      if(line MATCHES "^[ \t]*version[ \t]*=[ \t]*\"([^\"]+)\"")
        set(version "${CMAKE_MATCH_1}")
        break()
      endif()
    endforeach()
  endif()
  if(version STREQUAL "")
    # The crate inherits `version.workspace = true`: read [workspace.package].
    file(STRINGS "${source_dir}/Cargo.toml" lines)
    set(in_table FALSE)
    foreach(line IN LISTS lines)
      if(line MATCHES "^[ \t]*\\[")
        if(line MATCHES "^[ \t]*\\[workspace\\.package\\][ \t]*$")
          set(in_table TRUE)
        else()
          set(in_table FALSE)
        endif()
      elseif(in_table AND line MATCHES "^[ \t]*version[ \t]*=[ \t]*\"([^\"]+)\"")
        set(version "${CMAKE_MATCH_1}")
        break()
      endif()
    endforeach()
  endif()
  if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+")
    message(FATAL_ERROR
      "demandtex: could not read the package version from ${source_dir}/Cargo.toml "
      "([workspace.package] version = \"X.Y.Z\") or ${capi_toml} (got '${version}').")
  endif()
  set(${out_var} "${version}" PARENT_SCOPE)
endfunction()

# demandtex_read_header_define(<header> <macro> <out var>): the integer value of
# `#define <macro> <N>` in the header, or "" when the header has no such line.
function(demandtex_read_header_define header macro out_var)
  set(value "")
  file(STRINGS "${header}" lines REGEX "^[ \t]*#[ \t]*define[ \t]+${macro}[ \t]")
  foreach(line IN LISTS lines)
    if(line MATCHES "define[ \t]+${macro}[ \t]+\\(?[ \t]*(\\([a-z0-9_]+\\))?[ \t]*([0-9]+)[uU]?")
      set(value "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()
