#!/usr/bin/env bash
# Build the reference-Ptex replayer of `.dtxp` query traces (bench/ptex-replay/replay.cpp) into
# target/ptex-replay/ptex-replay, and the writer of random files with the reference's own
# writer (bench/ptex-replay/random-files.cpp, for scripts/crosscheck-ptex.sh) into
# target/ptex-replay/ptex-random-files, against an existing install of the reference Ptex
# library (wdas/ptex) given by PTEX_ROOT. Fetches and builds nothing but these two programs.
#
#   PTEX_ROOT=/path/to/ptex/install scripts/build-ptex-replay.sh   (only if the source is newer)
#   CXX=clang++ PTEX_ROOT=... scripts/build-ptex-replay.sh
#
# PTEX_ROOT must hold include/Ptexture.h and lib/libPtex.* (or lib64/). The library is built
# by hand, outside this repository, e.g. (CMake, a C++ compiler and zlib's development files,
# Debian/Ubuntu: apt-get install cmake g++ zlib1g-dev):
#   git clone https://github.com/wdas/ptex ptex && git -C ptex checkout v2.4.3
#   cmake -S ptex -B ptex-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$PWD/ptex-install \
#         -DPTEX_BUILD_STATIC_LIBS=OFF -DPTEX_BUILD_DOCS=OFF -DBUILD_TESTING=OFF
#   cmake --build ptex-build -j2 && cmake --install ptex-build
#   export PTEX_ROOT=$PWD/ptex-install
set -euo pipefail
cd "$(dirname "$0")/.."

src=bench/ptex-replay/replay.cpp
gen_src=bench/ptex-replay/random-files.cpp
out_dir=target/ptex-replay
out=$out_dir/ptex-replay
gen=$out_dir/ptex-random-files
cxx=${CXX:-g++}

how_to_build() {
  cat >&2 <<'EOF'
The reference Ptex library is not fetched or built by this repository; build it by hand
outside it and point PTEX_ROOT at the install (the directory with include/Ptexture.h):
  git clone https://github.com/wdas/ptex ptex && git -C ptex checkout v2.4.3
  cmake -S ptex -B ptex-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$PWD/ptex-install \
        -DPTEX_BUILD_STATIC_LIBS=OFF -DPTEX_BUILD_DOCS=OFF -DBUILD_TESTING=OFF
  cmake --build ptex-build -j2 && cmake --install ptex-build
  PTEX_ROOT=$PWD/ptex-install scripts/build-ptex-replay.sh
(needs cmake, a C++ compiler and zlib's development files: apt-get install cmake g++ zlib1g-dev)
EOF
}

if [[ -z ${PTEX_ROOT:-} ]]; then
  echo "build-ptex-replay: PTEX_ROOT is not set (an install of the reference Ptex library)" >&2
  how_to_build
  exit 1
fi
if [[ ! -f $PTEX_ROOT/include/Ptexture.h ]]; then
  echo "build-ptex-replay: $PTEX_ROOT/include/Ptexture.h not found (PTEX_ROOT=$PTEX_ROOT)" >&2
  how_to_build
  exit 1
fi
lib_dir=
for d in "$PTEX_ROOT/lib" "$PTEX_ROOT/lib64"; do
  if compgen -G "$d/libPtex.*" >/dev/null; then
    lib_dir=$d
    break
  fi
done
if [[ -z $lib_dir ]]; then
  echo "build-ptex-replay: no libPtex in $PTEX_ROOT/lib or $PTEX_ROOT/lib64" >&2
  how_to_build
  exit 1
fi
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "build-ptex-replay: no C++ compiler ($cxx); install g++ or set CXX" >&2
  exit 1
fi

mkdir -p "$out_dir"
# Rebuild when the source or this script is newer, or the library install changed.
stamp=$out_dir/ptex-root
if [[ -x $out && $out -nt $src && $out -nt "$0" && -x $gen && $gen -nt $gen_src \
      && $gen -nt "$0" && -f $stamp && $(cat "$stamp") == "$PTEX_ROOT" ]]; then
  exit 0
fi
for pair in "$src:$out" "$gen_src:$gen"; do
  "$cxx" -O2 -std=c++17 -Wall -Wextra -pthread -o "${pair#*:}.tmp" "${pair%%:*}" \
    -I"$PTEX_ROOT/include" -L"$lib_dir" -Wl,-rpath,"$lib_dir" -lPtex -lz
  mv "${pair#*:}.tmp" "${pair#*:}"
done
printf '%s\n' "$PTEX_ROOT" >"$stamp"
echo "built $out and $gen (Ptex in $PTEX_ROOT)" >&2
