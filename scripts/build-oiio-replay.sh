#!/usr/bin/env bash
# Build the OpenImageIO programs the comparisons run, into target/oiio-replay/: the replayer
# of `.dtxq` query traces (bench/oiio-replay/replay.cpp -> oiio-replay) and the lat-long
# environment lookups (bench/oiio-replay/environment.cpp -> oiio-environment). Needs a C++17
# compiler and OpenImageIO's development files (Debian/Ubuntu: `apt-get install
# libopenimageio-dev`); installs nothing itself.
#
#   scripts/build-oiio-replay.sh            build (each only if its source is newer)
#   CXX=clang++ scripts/build-oiio-replay.sh
set -euo pipefail
cd "$(dirname "$0")/.."

out_dir=target/oiio-replay
cxx=${CXX:-g++}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "build-oiio-replay: no C++ compiler ($cxx); install g++ or set CXX" >&2
  exit 1
fi
if ! command -v pkg-config >/dev/null 2>&1; then
  echo "build-oiio-replay: pkg-config is required to find OpenImageIO" >&2
  exit 1
fi
if ! pkg-config --exists OpenImageIO; then
  echo "build-oiio-replay: OpenImageIO development files not found (pkg-config OpenImageIO);" \
       "on Debian/Ubuntu: apt-get install libopenimageio-dev" >&2
  exit 1
fi

mkdir -p "$out_dir"
for name in replay environment; do
  src=bench/oiio-replay/$name.cpp
  out=$out_dir/oiio-$name
  if [[ -x $out && $out -nt $src && $out -nt "$0" ]]; then
    continue
  fi
  # shellcheck disable=SC2046  # pkg-config output is a list of flags
  "$cxx" -O2 -std=c++17 -Wall -Wextra -pthread -o "$out.tmp" "$src" \
    $(pkg-config --cflags --libs OpenImageIO)
  mv "$out.tmp" "$out"
  echo "built $out (OpenImageIO $(pkg-config --modversion OpenImageIO))" >&2
done
