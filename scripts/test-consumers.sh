#!/usr/bin/env bash
# The C/C++ packaging test: build demandtex's C library through the top-level CMake project,
# install it into a temporary prefix, and build and run the consumer projects against the
# installed package, as a renderer's build would:
#   - the installed layout, the SONAME, and the exported symbols against capi/abi/symbols.txt;
#   - tests/c-consumer via find_package (shared and static), under valgrind and under
#     ASan/UBSan/LSan; once via pkg-config (shared, under valgrind; static, run once);
#   - tests/cpp-consumer the same way (find_package: shared under valgrind, static under
#     ASan/UBSan/LSan), if it exists - loudly reported when it does not;
#   - find_package from a copy of the prefix moved elsewhere (the package is relocatable).
# cargo reuses the workspace's target/ directory. Exits non-zero on any failure.
#
# Usage: scripts/test-consumers.sh [--keep]   (--keep: leave the temporary prefix behind)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$SECONDS
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1

say() { printf '== %s\n' "$*"; }
fail() {
  printf 'test-consumers: FAIL: %s\n' "$*" >&2
  exit 1
}

# --- tools ----------------------------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
  fail "cargo is required (https://rustup.rs)"
fi
need_apt=()
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v readelf >/dev/null 2>&1 && command -v nm >/dev/null 2>&1 || need_apt+=(binutils)
command -v cc >/dev/null 2>&1 || need_apt+=(gcc)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
scripts/apt-install.sh ${need_apt[@]+"${need_apt[@]}"}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/demandtex-consumers.XXXXXX")
if [ $KEEP = 1 ]; then
  trap 'echo "kept $WORK"' EXIT
else
  trap 'rm -rf "$WORK"' EXIT
fi
PREFIX=$WORK/prefix
JOBS=$(nproc 2>/dev/null || echo 2)
SUMMARY=()
note() { SUMMARY+=("$*"); }

# --- build and install the package -------------------------------------------------------------
PKG_BUILD=$ROOT/target/cmake-package
say "cmake configure/build/install (cargo target dir: target/)"
cmake -S . -B "$PKG_BUILD" -DCMAKE_BUILD_TYPE=Release -DDEMANDTEX_CARGO_TARGET_DIR="$ROOT/target" >"$WORK/configure.log" ||
  { cat "$WORK/configure.log"; fail "configuring the top-level CMake project"; }
cmake --build "$PKG_BUILD" -j "$JOBS" || fail "cmake --build (cargo build -p demandtex-capi)"
cmake --install "$PKG_BUILD" --prefix "$PREFIX" >"$WORK/install.log" ||
  { cat "$WORK/install.log"; fail "cmake --install"; }
note "package: built with cmake, installed into a temporary prefix"

# --- the installed layout ----------------------------------------------------------------------
abi=$(sed -n 's/^#define DTEX_ABI_VERSION \([0-9][0-9]*\).*/\1/p' include/demandtex.h)
[ -n "$abi" ] || fail "include/demandtex.h defines no DTEX_ABI_VERSION"
lib=$PREFIX/lib
real=$(basename "$(readlink -f "$lib/libdemandtex.so")")
for f in include/demandtex.h lib/libdemandtex.a lib/cmake/DemandTex/DemandTexConfig.cmake \
  lib/cmake/DemandTex/DemandTexConfigVersion.cmake lib/pkgconfig/demandtex.pc; do
  [ -f "$PREFIX/$f" ] || fail "not installed: $f"
done
[ -f include/demandtex.hpp ] && { [ -f "$PREFIX/include/demandtex.hpp" ] || fail "not installed: include/demandtex.hpp"; }
[ -d include/demandtex ] && { [ -d "$PREFIX/include/demandtex" ] || fail "not installed: include/demandtex/"; }
[ "$(readlink "$lib/libdemandtex.so")" = "libdemandtex.so.$abi" ] || fail "lib/libdemandtex.so should link to libdemandtex.so.$abi"
[ -L "$lib/libdemandtex.so.$abi" ] && [ -f "$lib/$real" ] && [ ! -L "$lib/$real" ] ||
  fail "lib/libdemandtex.so.$abi should be a symlink to the real file"
[[ $real =~ ^libdemandtex\.so\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "unexpected real file name $real"
soname=$(readelf -d "$lib/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libdemandtex.so.$abi" ] || fail "SONAME of $real is '$soname', expected libdemandtex.so.$abi"
note "layout: $real, SONAME $soname, .a, headers, CMake config + version, demandtex.pc"

# --- exported symbols --------------------------------------------------------------------------
symbols_file=capi/abi/symbols.txt
[ -f "$symbols_file" ] || fail "$symbols_file is missing (the checked-in list of exported symbols)"
nm -D --defined-only "$lib/$real" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$WORK/exported.txt"
sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$symbols_file" | sort -u >"$WORK/expected.txt"
if grep -v '^dtex_' "$WORK/exported.txt" >"$WORK/foreign.txt"; then
  fail "libdemandtex.so exports symbols other than dtex_*: $(tr '\n' ' ' <"$WORK/foreign.txt")"
fi
if ! diff -u "$WORK/expected.txt" "$WORK/exported.txt" >"$WORK/symbols.diff"; then
  cat "$WORK/symbols.diff" >&2
  fail "exported symbols differ from $symbols_file (- listed only, + exported only)"
fi
note "symbols: $(wc -l <"$WORK/exported.txt") exported, all dtex_*, equal to $symbols_file"

# --- running tests -----------------------------------------------------------------------------
VALGRIND=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
  --show-leak-kinds=definite,indirect --track-origins=no)
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ASAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

# run_logged LABEL LOG CWD CMD...: run, keep the output in LOG, show it on failure.
run_logged() {
  local label=$1 log=$2 cwd=$3
  shift 3
  if ! (cd "$cwd" && "$@") >"$log" 2>&1 </dev/null; then
    cat "$log" >&2
    fail "$label"
  fi
}

# under_valgrind LABEL CWD CMD...: run under valgrind, require zero errors, zero definite or
# indirect leaks, and at most VALGRIND_MAX_IN_USE bytes still allocated at exit. The last one
# catches leaked dtex handles: the library's handle registry keeps a handle that was never
# destroyed reachable, so valgrind counts its loader's megabytes as "still reachable", not
# as lost. What remains after a clean run is a few KiB of library globals (the handle
# registries' slot vectors, rayon/crossbeam and parking_lot globals).
VALGRIND_MAX_IN_USE=$((256 * 1024))
under_valgrind() {
  local label=$1 cwd=$2
  shift 2
  local log=$WORK/valgrind-${label//[^A-Za-z0-9_.-]/_}.log
  if ! (cd "$cwd" && "${VALGRIND[@]}" --log-file="$log.vg" "$@") >"$log" 2>&1 </dev/null; then
    cat "$log" "$log.vg" >&2
    fail "$label under valgrind"
  fi
  local errors in_use definite indirect
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$log.vg" | tail -1 | tr -d ,)
  in_use=$(sed -n 's/.*in use at exit: \([0-9,]*\) bytes.*/\1/p' "$log.vg" | tail -1 | tr -d ,)
  definite=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log.vg" | tail -1 | tr -d ,)
  indirect=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$log.vg" | tail -1 | tr -d ,)
  [ "$errors" = 0 ] || { cat "$log.vg" >&2; fail "$label: valgrind reported '$errors' errors"; }
  [ "${definite:-0}" = 0 ] && [ "${indirect:-0}" = 0 ] ||
    { cat "$log.vg" >&2; fail "$label: valgrind found leaks"; }
  [ -n "$in_use" ] || { cat "$log.vg" >&2; fail "$label: no valgrind heap summary"; }
  if [ "$in_use" -gt "$VALGRIND_MAX_IN_USE" ]; then
    cat "$log.vg" >&2
    fail "$label: $in_use bytes still allocated at exit (limit $VALGRIND_MAX_IN_USE): a dtex handle (loader, launch, ticket, cache) or a texture source was not destroyed"
  fi
  note "valgrind $label: 0 errors, 0 bytes definitely/indirectly lost, $in_use bytes in use at exit"
}

# list_tests BUILD_DIR: write BUILD_DIR/tests.txt, the tests of a consumer build, one
# "name TAB cwd TAB command TAB args..." per line.
list_tests() {
  (cd "$1" && ctest --show-only=json-v1) >"$1/tests.json" || fail "ctest --show-only in $1"
  cmake -DJSON="$1/tests.json" -DOUT="$1/tests.txt" -P "$ROOT/cmake/ListTests.cmake" ||
    fail "listing the tests of $1"
  [ -s "$1/tests.txt" ] || fail "$1 registers no tests (add_test)"
}

# consumer NAME SOURCE_DIR [CMAKE_ARG...]: configure against the installed prefix, build, run
# every test under valgrind; then an ASan/UBSan/LSan build of the same project configured with
# the extra CMAKE_ARGs, every test run once.
consumer() {
  local name=$1 src=$2 b=$WORK/build-$1
  local asan_args=("${@:3}")
  say "$name: find_package build, valgrind"
  run_logged "$name: configure" "$WORK/$name-configure.log" . \
    cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$PREFIX"
  run_logged "$name: build" "$WORK/$name-build.log" . cmake --build "$b" -j "$JOBS"
  local tname cwd cmd
  list_tests "$b"
  while IFS=$'\t' read -r -a fields; do
    tname=${fields[0]} cwd=${fields[1]} cmd=("${fields[@]:2}")
    under_valgrind "$name/$tname" "$cwd" "${cmd[@]}"
  done <"$b/tests.txt"

  say "$name: ASan/UBSan/LSan build"
  local a=$WORK/build-$1-asan
  run_logged "$name: configure (ASan)" "$WORK/$name-asan-configure.log" . \
    cmake -S "$src" -B "$a" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH="$PREFIX" \
    "-DCMAKE_C_FLAGS=$ASAN_FLAGS" "-DCMAKE_CXX_FLAGS=$ASAN_FLAGS" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" "${asan_args[@]}"
  run_logged "$name: build (ASan)" "$WORK/$name-asan-build.log" . cmake --build "$a" -j "$JOBS"
  list_tests "$a"
  while IFS=$'\t' read -r -a fields; do
    tname=${fields[0]} cwd=${fields[1]} cmd=("${fields[@]:2}")
    run_logged "$name/$tname under ASan/UBSan/LSan" "$WORK/$name-$tname-asan.log" "$cwd" "${cmd[@]}"
    note "asan $name/$tname${asan_args:+ (${asan_args[*]})}: clean"
  done <"$a/tests.txt"
}

# --- the C consumer ------------------------------------------------------------------------
consumer c-consumer "$ROOT/tests/c-consumer"
for exe in c_consumer c_consumer_static; do
  needed=$(readelf -d "$WORK/build-c-consumer/$exe" | sed -n 's/.*(NEEDED).*\[\(libdemandtex[^]]*\)\].*/\1/p')
  want=""
  [ $exe = c_consumer ] && want=libdemandtex.so.$abi
  [ "$needed" = "$want" ] || fail "$exe records NEEDED '$needed', expected '${want:-nothing}'"
done
note "linkage: c_consumer NEEDs libdemandtex.so.$abi; c_consumer_static needs no libdemandtex"

say "c-consumer: pkg-config build"
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pc_libdir=$(pkg-config --variable=libdir demandtex)
[ "$(pkg-config --modversion demandtex)" = "$(sed -n 's/^#define DTEX_VERSION_MAJOR \([0-9]*\).*/\1/p' include/demandtex.h).$(sed -n 's/^#define DTEX_VERSION_MINOR \([0-9]*\).*/\1/p' include/demandtex.h).$(sed -n 's/^#define DTEX_VERSION_PATCH \([0-9]*\).*/\1/p' include/demandtex.h)" ] ||
  fail "pkg-config --modversion demandtex ($(pkg-config --modversion demandtex)) differs from the header's version"
mkdir -p "$WORK/pc"
CFLAGS_STRICT=(-std=c11 -Wall -Wextra -Werror -pedantic -O1 -g "-DDTEX_PTEX_FIXTURES=\"$ROOT/tests/fixtures/ptex\"" "-DDTEX_FIXTURES=\"$ROOT/tests/fixtures\"")
# shellcheck disable=SC2046 # pkg-config output is meant to be split into words
run_logged "pkg-config build (shared)" "$WORK/pc-build.log" . \
  cc "${CFLAGS_STRICT[@]}" tests/c-consumer/main.c tests/c-consumer/ptex.c tests/c-consumer/files.c -o "$WORK/pc/c_consumer" \
  $(pkg-config --cflags --libs demandtex) -lm -Wl,-rpath,"$pc_libdir"
under_valgrind "pkg-config/c_consumer" "$WORK/pc" "$WORK/pc/c_consumer"
# Static through pkg-config: the archive plus Libs.private (pkg-config --static).
static_libs=$(pkg-config --libs --static demandtex | sed "s|-ldemandtex\\b|$pc_libdir/libdemandtex.a|")
# shellcheck disable=SC2046,SC2086
run_logged "pkg-config build (static)" "$WORK/pc-build-static.log" . \
  cc "${CFLAGS_STRICT[@]}" tests/c-consumer/main.c tests/c-consumer/ptex.c tests/c-consumer/files.c -o "$WORK/pc/c_consumer_static" \
  $(pkg-config --cflags demandtex) $static_libs -lm
run_logged "pkg-config/c_consumer_static" "$WORK/pc-static.log" "$WORK/pc" "$WORK/pc/c_consumer_static"
note "pkg-config: shared build under valgrind, static build (Libs.private) ran"

# --- the C++ consumer ----------------------------------------------------------------------------
if [ -f tests/cpp-consumer/CMakeLists.txt ]; then
  # valgrind on the shared build; the ASan build links the static library (its option).
  consumer cpp-consumer "$ROOT/tests/cpp-consumer" -DDEMANDTEX_CONSUMER_STATIC=ON
else
  printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
  printf '!!! tests/cpp-consumer/CMakeLists.txt does not exist: the C++ consumer was NOT tested !!!\n' >&2
  printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
  note "cpp-consumer: MISSING (tests/cpp-consumer does not exist) - NOT TESTED"
fi

# --- the C++ CUDA consumer ------------------------------------------------------------------------
# Its kernel is compiled at run time by the pinned NVRTC against the installed headers; with a
# GPU it also runs through demandtex::CudaLoader and is compared with the CPU loader. Not
# under valgrind or ASan: NVRTC is a large closed library, and the CUDA path is only reached
# with a GPU (the GPU suite runs it under compute-sanitizer there).
say "cuda-consumer: NVRTC compile of a device-API kernel against the installed package"
CU13=$(scripts/cuda-venv.sh) || fail "the pinned NVRTC wheels (scripts/cuda-venv.sh)"
run_logged "cuda-consumer: configure" "$WORK/cuda-consumer-configure.log" . \
  cmake -S "$ROOT/tests/cuda-consumer" -B "$WORK/build-cuda-consumer" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DDEMANDTEX_CUDA_INCLUDE_DIR="$CU13/include" \
  -DDEMANDTEX_NVRTC_LIBRARY="$CU13/lib/libnvrtc.so.13"
run_logged "cuda-consumer: build" "$WORK/cuda-consumer-build.log" . cmake --build "$WORK/build-cuda-consumer" -j "$JOBS"
LD_LIBRARY_PATH="$CU13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  run_logged "cuda-consumer: run" "$WORK/cuda-consumer-run.log" "$WORK/build-cuda-consumer" \
  "$WORK/build-cuda-consumer/cuda_consumer"
cat "$WORK/cuda-consumer-run.log"
if grep -q "no GPU here" "$WORK/cuda-consumer-run.log"; then
  note "cuda-consumer: kernel compiled by NVRTC against the installed headers; NO GPU here, so it was not run (the CPU consumers ran)"
else
  note "cuda-consumer: kernel compiled against the installed headers and run on the GPU, agreeing with the CPU loader"
fi

# --- relocatability --------------------------------------------------------------------------
say "relocated prefix: find_package from a copy"
cp -a "$PREFIX" "$WORK/moved"
run_logged "relocated: configure" "$WORK/moved-configure.log" . \
  cmake -S tests/c-consumer -B "$WORK/build-moved" -DCMAKE_PREFIX_PATH="$WORK/moved"
grep -q "from $WORK/moved/lib/cmake/DemandTex" "$WORK/moved-configure.log" ||
  fail "the consumer did not find the moved package"
run_logged "relocated: build" "$WORK/moved-build.log" . cmake --build "$WORK/build-moved" -j "$JOBS" --target c_consumer
resolved=$(ldd "$WORK/build-moved/c_consumer" | sed -n 's/.*libdemandtex\.so[^ ]* => \([^ ]*\).*/\1/p')
[[ $resolved == "$WORK/moved/"* ]] || fail "the relocated consumer loads '$resolved', not the moved copy"
run_logged "relocated: run" "$WORK/moved-run.log" "$WORK/build-moved" "$WORK/build-moved/c_consumer"
note "relocated: find_package and the built program use the moved copy"

echo
echo "test-consumers: all passed in $((SECONDS - START)) s"
for line in "${SUMMARY[@]}"; do
  echo "  - $line"
done
