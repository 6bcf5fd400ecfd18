#!/usr/bin/env bash
# demandtex against OpenImageIO's TextureSystem on the same query traces and files.
#
# For each trace (coherent, incoherent) and cache size (fits: 2 × the working set; quarter:
# a quarter of it) it replays the trace RUNS times with `demandtex bench replay` (blocking)
# and `oiio-replay`, back to back in each run (the order alternates), and prints a table:
# median lookups/s of each, the ratio of the medians and the median of the per-run ratios,
# bytes and tiles read, peak memory, and the PSNR between the two systems' results. The
# multi-pass replay is measured too where it is cheap (MULTIPASS=1, fits cells).
#
#   scripts/compare-oiio.sh                      # everything, 5 runs per cell
#   RUNS=3 CELLS="coherent:fits coherent:quarter" scripts/compare-oiio.sh
#
# Environment:
#   DIR        traces and textures (default target/bench-traces; made with
#              `demandtex bench make-trace` if missing)
#   TILE       tile size of the textures make-trace writes: page (default: one demandtex
#              page, 128x64 for half RGBA) or 64 (OIIO maketx's layout)
#   TEXTURES, SIZE, QUERIES  make-trace's --textures, --size, --queries (defaults 8, 4096,
#              8000000) when it writes DIR
#   SET        exr (default): replay make-trace's OpenEXR files; tx: the same textures made
#              into .tx files by OIIO's maketx (64x64 tiles, ZIP; from half OpenEXR
#              its default writes float), in TXDIR with the traces' paths renamed
#   MAKETX_ARGS more maketx arguments for SET=tx (e.g. "-d uint8", the common 8-bit .tx)
#   TXDIR      where SET=tx puts the .tx files (default DIR-tx)
#   RUNS       runs per cell (default 5)
#   THREADS    lookup threads (default 2)
#   CELLS      trace:cache pairs (default: coherent and incoherent × fits and quarter)
#   FITS_MB    the cache of the fits cells in MiB (default: 2 × the working set)
#   MULTIPASS  1 (default) to also time the multi-pass replay in the fits cells, 0 not to
#   LOD        oiio-replay's --lod: exact (default: OIIO filters at QUERIES.md's level of
#              detail) or native (OIIO's own level choice from the raw derivatives)
#   OUT        where the JSON lines and result files go (default target/compare-oiio)
#   DTX_ARGS   more arguments for `demandtex bench replay` (e.g. --whole-pages)
# Needs: cargo, a C++ compiler, OpenImageIO's development files (libopenimageio-dev), and
# for SET=tx its maketx (openimageio-tools), python3.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${DIR:-target/bench-traces}
RUNS=${RUNS:-5}
THREADS=${THREADS:-2}
CELLS=${CELLS:-"coherent:fits coherent:quarter incoherent:fits incoherent:quarter"}
MULTIPASS=${MULTIPASS:-1}
LOD=${LOD:-exact}
OUT=${OUT:-target/compare-oiio}
TILE=${TILE:-page}
SET=${SET:-exr}
DTX=target/release/demandtex
OIIO=target/oiio-replay/oiio-replay

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

mkdir -p "$OUT"
run cargo build --release -q -p demandtex-cli
run scripts/build-oiio-replay.sh

for kind in coherent incoherent; do
  if [[ " $CELLS " == *" $kind:"* && ! -f $DIR/$kind.dtxq ]]; then
    run "$DTX" bench make-trace --out "$DIR" --kind "$kind" --tile "$TILE" \
      --textures "${TEXTURES:-8}" --size "${SIZE:-4096}" --queries "${QUERIES:-8000000}"
  fi
done

if [[ $SET == tx ]]; then
  # The same textures as maketx .tx files, and the traces with their paths renamed.
  txdir=${TXDIR:-$DIR-tx}
  mkdir -p "$txdir"
  for f in "$DIR"/*.exr; do
    t=$txdir/$(basename "${f%.exr}").tx
    # shellcheck disable=SC2086
    [[ -f $t ]] || run maketx "$f" ${MAKETX_ARGS:-} -o "$t" >&2
  done
  for kind in coherent incoherent; do
    [[ -f $DIR/$kind.dtxq ]] || continue
    python3 - "$DIR/$kind.dtxq" "$txdir/$kind.dtxq" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
magic, version, n = struct.unpack_from("<4sII", data, 0)
assert magic == b"DTXQ" and version == 1, "not a version-1 .dtxq"
at, out = 12, [data[:12]]
for _ in range(n):
    (length,) = struct.unpack_from("<I", data, at)
    path = data[at + 4:at + 4 + length].decode()
    at += 4 + length
    if path.endswith(".exr"):
        path = path[:-4] + ".tx"
    out.append(struct.pack("<I", len(path.encode())) + path.encode())
out.append(data[at:])
open(sys.argv[2], "wb").write(b"".join(out))
PY
  done
  DIR=$txdir
fi

declare -A WS_MB
table_rows=()
for cell in $CELLS; do
  kind=${cell%%:*}
  size=${cell##*:}
  trace=$DIR/$kind.dtxq
  if [[ -z ${WS_MB[$kind]:-} ]]; then
    # The working set: demandtex's peak memory with a cache that never evicts. This run
    # also brings the files into the OS page cache for both systems.
    line=$(run "$DTX" bench replay "$trace" --textures "$DIR" --threads "$THREADS" \
      --cache-mb 65536 --json)
    peak=$(json_get peak_resident_bytes "$line")
    WS_MB[$kind]=$(( (peak + (1 << 20) - 1) >> 20 ))
    echo "working set of $kind: ${WS_MB[$kind]} MiB (demandtex peak_resident_bytes $peak)" >&2
  fi
  ws=${WS_MB[$kind]}
  case $size in
    fits) mb=${FITS_MB:-$(( 2 * ws ))} ;;
    quarter) mb=$(( ws / 4 > 0 ? ws / 4 : 1 )) ;;
    *) echo "compare-oiio: unknown cache size '$size' in CELLS (fits or quarter)" >&2; exit 2 ;;
  esac
  base=$OUT/$kind-$size
  : >"$base-demandtex.jsonl"
  : >"$base-oiio.jsonl"
  : >"$base-multipass.jsonl"
  : >"$base-ratios.txt"
  for ((r = 1; r <= RUNS; r++)); do
    # shellcheck disable=SC2086
    dtx_cmd=("$DTX" bench replay "$trace" --textures "$DIR" --threads "$THREADS" \
      --cache-mb "$mb" --json --out "$base-demandtex.f32" ${DTX_ARGS:-})
    oiio_cmd=("$OIIO" "$trace" --textures "$DIR" --threads "$THREADS" --cache-mb "$mb" \
      --lod "$LOD" --json --out "$base-oiio.f32")
    if (( r % 2 )); then
      d=$(run "${dtx_cmd[@]}")
      o=$(run "${oiio_cmd[@]}")
    else
      o=$(run "${oiio_cmd[@]}")
      d=$(run "${dtx_cmd[@]}")
    fi
    echo "$d" >>"$base-demandtex.jsonl"
    echo "$o" >>"$base-oiio.jsonl"
    awk -v a="$(json_get lookups_per_s "$d")" -v b="$(json_get lookups_per_s "$o")" \
      'BEGIN { printf "%.4f\n", a / b }' >>"$base-ratios.txt"
    if [[ $MULTIPASS == 1 && $size == fits ]]; then
      run "$DTX" bench replay "$trace" --textures "$DIR" --threads "$THREADS" \
        --cache-mb "$mb" --mode multipass --json >>"$base-multipass.jsonl"
    fi
  done
  psnr_line=$(run "$DTX" bench compare "$base-demandtex.f32" "$base-oiio.f32" --json)
  psnr=$(json_get psnr_rgb "$psnr_line")
  [[ $psnr == null ]] && psnr=inf
  col() { while read -r l; do json_get "$1" "$l"; done <"$2" | median; }
  dtx_rate=$(col lookups_per_s "$base-demandtex.jsonl")
  oiio_rate=$(col lookups_per_s "$base-oiio.jsonl")
  mp_rate=$(col lookups_per_s "$base-multipass.jsonl")
  ratio_of_medians=$(awk -v a="$dtx_rate" -v b="$oiio_rate" 'BEGIN { printf "%.2f", a / b }')
  median_ratio=$(median <"$base-ratios.txt")
  ratios=$(paste -sd' ' "$base-ratios.txt")
  dtx_bytes=$(col bytes_read "$base-demandtex.jsonl")
  oiio_bytes=$(col bytes_read "$base-oiio.jsonl")
  dtx_tiles=$(col tiles_read "$base-demandtex.jsonl")
  oiio_tiles=$(col tiles_read "$base-oiio.jsonl")
  dtx_peak=$(col peak_resident_bytes "$base-demandtex.jsonl")
  oiio_peak=$(col peak_resident_bytes "$base-oiio.jsonl")
  table_rows+=("$(printf '%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s' \
    "$kind" "$size" "$mb" "$dtx_rate" "$oiio_rate" "$ratio_of_medians" "$median_ratio" \
    "$mp_rate" "$dtx_bytes" "$oiio_bytes" "$dtx_tiles" "$oiio_tiles" "$dtx_peak" \
    "$oiio_peak" "$psnr")")
  echo "$kind $size: per-run ratios $ratios" >&2
done

echo
echo "demandtex (blocking) vs OpenImageIO $(pkg-config --modversion OpenImageIO) TextureSystem:" \
  "$THREADS threads, median of $RUNS runs, lod $LOD, files: $SET in $DIR"
printf '%s\n' "${table_rows[@]}" | awk -F'|' '
  function m(v) { return v == "nan" || v == "" ? "-" : sprintf("%.2f", v / 1e6) }
  function mib(v) { return sprintf("%.1f", v / 1048576) }
  BEGIN {
    printf "%-10s %-7s %6s | %8s %8s %6s %6s | %9s | %10s %11s | %8s %8s | %8s %8s | %7s\n",
      "trace", "cache", "MiB", "dtx M/s", "oiio M/s", "ratio", "r/run", "mpass M/s",
      "dtx MiB rd", "oiio MiB rd", "dtx tl", "oiio tl", "dtx pk", "oiio pk", "PSNR dB"
  }
  {
    printf "%-10s %-7s %6d | %8s %8s %6s %6.2f | %9s | %10s %11s | %8d %8d | %8s %8s | %7s\n",
      $1, $2, $3, m($4), m($5), $6, $7, m($8), mib($9), mib($10), $11, $12, mib($13),
      mib($14), ($15 == "inf" ? "inf" : sprintf("%.1f", $15))
  }'
echo "(ratio: of the medians; r/run: median of the per-run ratios; MiB rd: bytes read from"
echo " files, decoded; tl: tiles read (demandtex pages: 64 KiB, or the files' tiles where smaller;"
echo " OIIO the files' tiles); pk: peak texture memory; JSON lines and results in $OUT)"
