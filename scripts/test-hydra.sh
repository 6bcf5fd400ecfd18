#!/usr/bin/env bash
# The Hydra render delegate test: build hydra-delegate/ against an OpenUSD install and
# demandtex's installed CMake package (as an outside integrator would), then render the
# checked-in scenes of tests/hydra/scenes headlessly through HdEngine, with both scene
# front ends (UsdImagingDelegate = Hydra 1.0, UsdImagingStageSceneIndex = Hydra 2.0), and
# check: convergence, texel-for-texel equality with an unlimited-budget render, the budget
# never exceeded (and tiles evicted when it is small), UDIM tiles across tile boundaries,
# UDIM sets beyond tile 1100 (starting at 1101, <UVTILE> past u10/v10) found by demandtex's
# own rule, missing and unreadable textures rendering their fallback colours with warnings,
# grey-and-alpha textures read as UsdUVTexture reads them, and the id AOVs picking reads
# (instanceId, elementId).
#
# OpenUSD (24.08 or newer, built with imaging; no GL or Python needed) is found from
#   DEMANDTEX_USD_ROOT=<OpenUSD install prefix>   (the directory holding pxrConfig.cmake)
# or, failing that, /usr/local or /opt/OpenUSD. Without one the test says so and is skipped
# (exit 0) — unless --require is given. No registry ships OpenUSD with Hydra.
#
# Usage: scripts/test-hydra.sh [--require] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REQUIRE=0
KEEP=0
for a in "$@"; do
  case "$a" in
    --require) REQUIRE=1 ;;
    --keep) KEEP=1 ;;
    *) echo "usage: $0 [--require] [--keep]" >&2; exit 2 ;;
  esac
done
say() { printf '== %s\n' "$*"; }
fail() {
  printf 'test-hydra: FAIL: %s\n' "$*" >&2
  exit 1
}

# --- OpenUSD -------------------------------------------------------------------------------
USD_ROOT=""
for candidate in "${DEMANDTEX_USD_ROOT:-}" /usr/local /opt/OpenUSD; do
  if [ -n "$candidate" ] && [ -f "$candidate/pxrConfig.cmake" ]; then
    USD_ROOT=$candidate
    break
  fi
done
if [ -z "$USD_ROOT" ]; then
  msg="no OpenUSD install found (set DEMANDTEX_USD_ROOT to an OpenUSD 24.08+ prefix built with imaging)"
  [ $REQUIRE = 1 ] && fail "$msg"
  echo "test-hydra: SKIPPED: $msg"
  exit 0
fi
say "OpenUSD: $USD_ROOT"

# --- tools ---------------------------------------------------------------------------------
need_apt=()
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
dpkg -s libembree-dev >/dev/null 2>&1 || need_apt+=(libembree-dev)
# The TBB and OpenSubdiv development files OpenUSD's package config asks for.
dpkg -s libtbb-dev >/dev/null 2>&1 || need_apt+=(libtbb-dev)
dpkg -s libosd-dev >/dev/null 2>&1 || need_apt+=(libosd-dev)
scripts/apt-install.sh ${need_apt[@]+"${need_apt[@]}"}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/demandtex-hydra.XXXXXX")
if [ $KEEP = 1 ]; then
  trap 'echo "kept $WORK"' EXIT
else
  trap 'rm -rf "$WORK"' EXIT
fi
JOBS=$(nproc 2>/dev/null || echo 2)

# --- demandtex's package and CLI -----------------------------------------------------------
say "demandtex: CMake package into a temporary prefix, and the CLI"
cmake -S . -B target/cmake-package -DCMAKE_BUILD_TYPE=Release -DDEMANDTEX_CARGO_TARGET_DIR="$ROOT/target" \
  >"$WORK/package.log" 2>&1 || { cat "$WORK/package.log"; fail "demandtex package configure"; }
cmake --build target/cmake-package -j "$JOBS" >>"$WORK/package.log" 2>&1 || { tail -40 "$WORK/package.log"; fail "demandtex package build"; }
cmake --install target/cmake-package --prefix "$WORK/prefix" >>"$WORK/package.log" 2>&1 || fail "demandtex package install"
cargo build --release -q -p demandtex-cli
DEMANDTEX=$ROOT/target/release/demandtex

# --- the delegate --------------------------------------------------------------------------
say "hydra-delegate: configure and build against $USD_ROOT"
BUILD=$ROOT/target/hydra-delegate
# Name this run's package explicitly: a DemandTex_DIR cached by an earlier configure of
# $BUILD (another run's prefix, perhaps kept with --keep) would win over the prefix path,
# and the delegate would build against stale headers.
PACKAGE_DIR=$(dirname "$(find "$WORK/prefix" -name DemandTexConfig.cmake -print -quit)")
cmake -S hydra-delegate -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DDemandTex_DIR="$PACKAGE_DIR" \
  -DCMAKE_PREFIX_PATH="$USD_ROOT;$WORK/prefix" >"$WORK/configure.log" 2>&1 ||
  { cat "$WORK/configure.log"; fail "configure hydra-delegate"; }
grep -q 'hdDemandTex: OpenUSD with imaging' "$WORK/configure.log" && { cat "$WORK/configure.log"; fail "OpenUSD at $USD_ROOT has no imaging"; }
cmake --build "$BUILD" -j "$JOBS" >"$WORK/build.log" 2>&1 || { tail -60 "$WORK/build.log"; fail "build hydra-delegate"; }
cmake --install "$BUILD" --prefix "$WORK/plugin-prefix" >/dev/null || fail "install hydra-delegate"
test -f "$WORK/plugin-prefix/plugin/usd/hdDemandTex.so" || fail "installed plugin library missing"
test -f "$WORK/plugin-prefix/plugin/usd/hdDemandTex/resources/plugInfo.json" || fail "installed plugInfo.json missing"
DRIVER=$BUILD/hdDemandTexHeadless
# Run against the installed plugin, found the way a host finds it.
export PXR_PLUGINPATH_NAME=$WORK/plugin-prefix/plugin/usd/hdDemandTex/resources
export LD_LIBRARY_PATH=$USD_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# --- scenes and textures ------------------------------------------------------------------
say "test textures (written by the driver, the over-budget set converted with demandtex convert)"
cp tests/hydra/scenes/*.usda "$WORK/"
"$DRIVER" make-textures "$WORK/textures"
# PNGs (RGB and grey gradients) for the colour-space scenes.
python3 - "$WORK/textures" <<'PNG'
import struct, sys, zlib
def png(path, width, height, channels, texel, bits=8):
    sample = (lambda v: bytes((v,))) if bits == 8 else (lambda v: struct.pack(">H", v))
    rows = b"".join(b"\0" + b"".join(sample(v) for x in range(width) for v in texel(x, y)) for y in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    colour = {1: 0, 2: 4, 3: 2}[channels]
    ihdr = struct.pack(">IIBBBBB", width, height, bits, colour, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
png(sys.argv[1] + "/color8.png", 64, 64, 3, lambda x, y: (4 * x, 4 * y, 128))
png(sys.argv[1] + "/grey8.png", 64, 64, 1, lambda x, y: (2 * (x + y),))
# Grey and alpha (two channels), and its associated grey (c · a / 255, PNG alpha as demandtex
# serves it) and its alpha as one-channel PNGs, for grey_alpha(_baked).usda.
grey = lambda x, y: 2 * (x + y)
alpha = lambda x, y: 255 - 3 * x
png(sys.argv[1] + "/greyalpha8.png", 64, 64, 2, lambda x, y: (grey(x, y), alpha(x, y)))
png(sys.argv[1] + "/greyalpha_grey8.png", 64, 64, 1, lambda x, y: (grey(x, y) * alpha(x, y) // 255,))
png(sys.argv[1] + "/greyalpha_alpha8.png", 64, 64, 1, lambda x, y: (alpha(x, y),))
# A UDIM set of two formats: tile 1001 8-bit colour (sRGB under auto), 1002 16-bit (as stored).
png(sys.argv[1] + "/mixed.1001.png", 64, 64, 3, lambda x, y: (200, 4 * x, 4 * y))
png(sys.argv[1] + "/mixed.1002.png", 64, 64, 3, lambda x, y: (1000 * x, 50000, 1000 * y), bits=16)
PNG
# Targa, BMP and Radiance HDR files other tools wrote, and the same texels as PNG and
# OpenEXR, for formats(_baked).usda.
cp tests/fixtures/img/oiio_rgb.tga tests/fixtures/img/im_rgb.bmp tests/fixtures/img/oiio.hdr \
  tests/fixtures/img/oiio_rgb_as.png tests/fixtures/img/oiio_hdr_as.exr "$WORK/textures/"
for i in $(seq 0 15); do
  "$DEMANDTEX" convert "$WORK/textures/grid$i.src.exr" -o "$WORK/textures/grid$i.exr" >/dev/null
  rm "$WORK/textures/grid$i.src.exr"
done

PASSED=()
run() {  # name, then driver arguments; stderr is kept for the checks
  local name=$1
  shift
  say "$name"
  if ! "$DRIVER" render "$@" 2>"$WORK/$name.err"; then
    cat "$WORK/$name.err" >&2
    fail "$name"
  fi
  PASSED+=("$name")
}

run quad-hydra1 "$WORK/quad_angled.usda" "$WORK/quad-h1.ppm" --budget-mib 8 --compare-unlimited \
  --compare-formats
run quad-hydra2 "$WORK/quad_angled.usda" "$WORK/quad-h2.ppm" --budget-mib 8 --compare-unlimited --hydra2
run quad-interactive "$WORK/quad_angled.usda" "$WORK/quad-int.ppm" --budget-mib 8 --interactive --compare-unlimited
cmp "$WORK/quad-h1.ppm" "$WORK/quad-h2.ppm" || fail "Hydra 1.0 and 2.0 renders of quad_angled differ"
run transform2d-hydra1 "$WORK/transform2d.usda" "$WORK/xf-h1.ppm" --budget-mib 8 \
  --compare-scene "$WORK/transform2d_baked.usda"
run transform2d-hydra2 "$WORK/transform2d.usda" "$WORK/xf-h2.ppm" --budget-mib 8 --hydra2 \
  --compare-scene "$WORK/transform2d_baked.usda"
# Picking's id AOVs: the five cards (three point instances, two native instances) apart by
# (primId, instanceId); a two-face mesh's faces apart by elementId; plain meshes no instances.
run instanced-hydra1 "$WORK/instanced.usda" "$WORK/inst-h1.ppm" --budget-mib 8 --expect-instanced 5 \
  --compare-scene "$WORK/instanced_baked.usda"
run instanced-hydra2 "$WORK/instanced.usda" "$WORK/inst-h2.ppm" --budget-mib 8 --hydra2 --expect-instanced 5 \
  --compare-scene "$WORK/instanced_baked.usda"
# (Hydra 2.0 leaves the relative UDIM path unresolved: anchored on the search path.)
run srgb-auto-hydra1 "$WORK/srgb_auto.usda" "$WORK/srgb-h1.ppm" --budget-mib 8 \
  --compare-scene "$WORK/srgb_explicit.usda"
run srgb-auto-hydra2 "$WORK/srgb_auto.usda" "$WORK/srgb-h2.ppm" --budget-mib 8 --hydra2 \
  --search-path "$WORK" --compare-scene "$WORK/srgb_explicit.usda"
run grey-alpha-hydra1 "$WORK/grey_alpha.usda" "$WORK/ga-h1.ppm" --budget-mib 8 \
  --compare-scene "$WORK/grey_alpha_baked.usda"
run grey-alpha-hydra2 "$WORK/grey_alpha.usda" "$WORK/ga-h2.ppm" --budget-mib 8 --hydra2 \
  --compare-scene "$WORK/grey_alpha_baked.usda"
run formats-hydra1 "$WORK/formats.usda" "$WORK/fmt-h1.ppm" --budget-mib 8 \
  --compare-scene "$WORK/formats_baked.usda"
run formats-hydra2 "$WORK/formats.usda" "$WORK/fmt-h2.ppm" --budget-mib 8 --hydra2 \
  --compare-scene "$WORK/formats_baked.usda"
run display-color-hydra1 "$WORK/display_color.usda" "$WORK/dc-h1.ppm" --budget-mib 8 \
  --expect-instanced 0 --expect-elements /World/Pair 2 \
  --compare-scene "$WORK/display_color_materials.usda"
run display-color-hydra2 "$WORK/display_color.usda" "$WORK/dc-h2.ppm" --budget-mib 8 --hydra2 \
  --expect-instanced 0 --expect-elements /World/Pair 2 \
  --compare-scene "$WORK/display_color_materials.usda"

run udim-hydra1 "$WORK/udim_plane.usda" "$WORK/udim-h1.ppm" --expect-distinct-blue 6 \
  --expect-prim-color /World/Missing 1 0 1 --expect-prim-color /World/Corrupt 0 1 1 --compare-unlimited
grep -q "missing.exr' not found" "$WORK/udim-hydra1.err" || { cat "$WORK/udim-hydra1.err"; fail "no warning for the missing texture"; }
grep -q -E "(cannot register texture|texture) '[^']*corrupt.exr'.*fallback colour" "$WORK/udim-hydra1.err" || { cat "$WORK/udim-hydra1.err"; fail "no warning for the unreadable texture"; }
# Hydra 2.0 (24.08) leaves UDIM paths unresolved: they are found through the search path.
run udim-hydra2 "$WORK/udim_plane.usda" "$WORK/udim-h2.ppm" --hydra2 --search-path "$WORK" \
  --expect-distinct-blue 6 --expect-prim-color /World/Missing 1 0 1 --expect-prim-color /World/Corrupt 0 1 1
cmp "$WORK/udim-h1.ppm" "$WORK/udim-h2.ppm" || fail "Hydra 1.0 and 2.0 renders of udim_plane differ"

# UDIM sets OpenUSD's resolver does not find (it looks at tiles 1001-1100 only, and knows no
# <UVTILE>): both front ends leave them unresolved and the delegate finds them through the
# search path, by demandtex's rule (dtex_udim_expand_pattern). Every tile must show its code.
run udim-high-hydra1 "$WORK/udim_high.usda" "$WORK/udim-high-h1.ppm" --search-path "$WORK" \
  --expect-distinct-blue 9 --compare-unlimited
run udim-high-hydra2 "$WORK/udim_high.usda" "$WORK/udim-high-h2.ppm" --hydra2 --search-path "$WORK" \
  --expect-distinct-blue 9
for name in udim-high-hydra1 udim-high-hydra2; do
  if grep -q "not found" "$WORK/$name.err"; then
    cat "$WORK/$name.err" >&2
    fail "$name: a UDIM set was reported missing"
  fi
done
cmp "$WORK/udim-high-h1.ppm" "$WORK/udim-high-h2.ppm" || fail "Hydra 1.0 and 2.0 renders of udim_high differ"

run over-budget "$WORK/over_budget.usda" "$WORK/over.ppm" --width 384 --height 384 --budget-mib 3 \
  --expect-evictions --compare-unlimited --max-launches 400
run over-budget-interactive "$WORK/over_budget.usda" "$WORK/over-int.ppm" --width 384 --height 384 \
  --budget-mib 3 --interactive --expect-preview --expect-evictions --max-launches 400
cmp "$WORK/over.ppm" "$WORK/over-int.ppm" || fail "interactive and final renders of over_budget differ"

say "test-hydra: ${#PASSED[@]} renders passed (${PASSED[*]})"
