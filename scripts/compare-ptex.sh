#!/usr/bin/env bash
# demandtex against the reference Ptex library (wdas/ptex: PtexCache + PtexFilter) on the same
# `.dtxp` query traces and .ptx files.
#
# For each trace (coherent, incoherent) × filter (point, bilinear) × cache size (fits: 2 × the
# working set; quarter: a quarter of it) × thread count (1, 2) it replays the trace RUNS times
# with `demandtex bench replay`, with `ptex-replay` (bench/ptex-replay/replay.cpp) and with
# demandtex again with a cache that never evicts (--cache-mb 65536: the resident baseline), in
# an order that rotates from run to run, and prints a markdown table: median lookups/s of each,
# the ratios of the medians, tiles and bytes read, peak memory, and the largest difference and
# the PSNR between demandtex's and the reference's results.
#
# The working set of a trace and filter is demandtex's peak_resident_bytes with a cache that
# never evicts, rounded up to MiB (that run also brings the files into the OS page cache).
#
#   PTEX_ROOT=/path/to/ptex/install scripts/compare-ptex.sh      # everything, 3 runs per cell
#   PTEX_ROOT=... RUNS=5 THREADS=2 FILTERS=bilinear CELLS="incoherent:quarter" \
#     scripts/compare-ptex.sh
#
# Environment:
#   PTEX_ROOT  required: an install of the reference Ptex library (include/Ptexture.h,
#              lib/libPtex.*), built by hand; see scripts/build-ptex-replay.sh for how
#   DIR        traces and textures (default target/ptex-traces; if $DIR/coherent.dtxp is
#              missing the set is made with `demandtex ptex gen` and `demandtex bench
#              make-trace --ptex`)
#   RUNS       runs per cell (default 3)
#   THREADS    lookup thread counts (default "1 2")
#   FILTERS    filters (default "point bilinear"; box works too)
#   CELLS      trace:cache pairs (default: coherent and incoherent × fits and quarter)
#   OUT        where the JSON lines and result files go (default target/compare-ptex)
# Needs: cargo, a C++ compiler, python3 (standard library only), the reference Ptex install.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${DIR:-target/ptex-traces}
RUNS=${RUNS:-3}
THREADS=${THREADS:-"1 2"}
FILTERS=${FILTERS:-"point bilinear"}
CELLS=${CELLS:-"coherent:fits coherent:quarter incoherent:fits incoherent:quarter"}
OUT=${OUT:-target/compare-ptex}
RESIDENT_MB=65536
DTX=target/release/demandtex
REF=target/ptex-replay/ptex-replay

if [[ -z ${PTEX_ROOT:-} ]]; then
  echo "compare-ptex: set PTEX_ROOT to an install of the reference Ptex library" \
       "(scripts/build-ptex-replay.sh says how to build one)" >&2
  exit 1
fi
export PTEX_ROOT
if ! command -v python3 >/dev/null 2>&1; then
  echo "compare-ptex: python3 is required (to compare the result files)" >&2
  exit 1
fi

# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh

# The median of a key over the JSON lines of a file.
col() {
  local l
  while read -r l; do json_get "$1" "$l"; done <"$2" | median
}

# Largest absolute difference and PSNR (peak 1, over R, G, B and A) between two result files of
# 4 × f32 (little-endian) per query: prints "MAXDIFF PSNR" (PSNR "inf" when they are equal; a
# NaN on one side only counts as an infinite difference, on both sides as none).
result_diff() {
  python3 - "$1" "$2" <<'EOF'
import array, math, sys
def load(path):
    a = array.array('f')
    with open(path, 'rb') as f:
        a.frombytes(f.read())
    if sys.byteorder != 'little':
        a.byteswap()
    return a
a, b = load(sys.argv[1]), load(sys.argv[2])
if len(a) != len(b) or len(a) % 4:
    sys.exit('compare-ptex: %s and %s hold %d and %d floats' % (sys.argv[1], sys.argv[2], len(a), len(b)))
worst, sq = 0.0, 0.0
for x, y in zip(a, b):
    d = abs(x - y)
    if d != d:  # a NaN
        if (x != x) != (y != y):
            worst = sq = math.inf
        continue
    if d > worst:
        worst = d
    sq += d * d
mse = sq / len(a) if a else 0.0
psnr = 'inf' if mse == 0.0 else '%.2f' % (10.0 * math.log10(1.0 / mse)) if math.isfinite(mse) else '-inf'
print('%.3g %s' % (worst, psnr))
EOF
}

mkdir -p "$OUT"
run cargo build --release -q -p demandtex-cli
run scripts/build-ptex-replay.sh

if [[ ! -f $DIR/coherent.dtxp ]]; then
  run "$DTX" ptex gen "$DIR" --files 16 --faces 2000 --seed 1
  run "$DTX" bench make-trace --ptex "$DIR" --kind coherent
  run "$DTX" bench make-trace --ptex "$DIR" --kind incoherent
fi
for kind in coherent incoherent; do
  if [[ " $CELLS " == *" $kind:"* && ! -f $DIR/$kind.dtxp ]]; then
    run "$DTX" bench make-trace --ptex "$DIR" --kind "$kind"
  fi
done

read -r -a thread_list <<<"$THREADS"
declare -A WS_MB
table_rows=()
for cell in $CELLS; do
  kind=${cell%%:*}
  size=${cell##*:}
  case $size in
    fits | quarter) ;;
    *) echo "compare-ptex: unknown cache size '$size' in CELLS (fits or quarter)" >&2; exit 2 ;;
  esac
  trace=$DIR/$kind.dtxp
  for filter in $FILTERS; do
    key=$kind-$filter
    if [[ -z ${WS_MB[$key]:-} ]]; then
      line=$(run "$DTX" bench replay "$trace" --textures "$DIR" --threads "${thread_list[0]}" \
        --cache-mb "$RESIDENT_MB" --filter "$filter" --json)
      peak=$(json_get peak_resident_bytes "$line")
      if [[ -z $peak ]]; then
        echo "compare-ptex: no peak_resident_bytes in demandtex's report: $line" >&2
        exit 1
      fi
      WS_MB[$key]=$(( (peak + (1 << 20) - 1) >> 20 ))
      echo "working set of $kind/$filter: ${WS_MB[$key]} MiB (demandtex peak $peak)" >&2
    fi
    ws=${WS_MB[$key]}
    case $size in
      fits) mb=$(( 2 * ws )) ;;
      quarter) mb=$(( ws / 4 > 0 ? ws / 4 : 1 )) ;;
    esac
    for threads in "${thread_list[@]}"; do
      base=$OUT/$kind-$filter-$size-t$threads
      : >"$base-demandtex.jsonl"
      : >"$base-ptex.jsonl"
      : >"$base-resident.jsonl"
      common=(--textures "$DIR" --threads "$threads" --filter "$filter" --json)
      dtx_cmd=("$DTX" bench replay "$trace" "${common[@]}" --cache-mb "$mb" \
        --out "$base-demandtex.f32")
      ref_cmd=("$REF" "$trace" "${common[@]}" --cache-mb "$mb" --out "$base-ptex.f32")
      res_cmd=("$DTX" bench replay "$trace" "${common[@]}" --cache-mb "$RESIDENT_MB" \
        --out "$base-resident.f32")
      for ((r = 1; r <= RUNS; r++)); do
        for ((k = 0; k < 3; k++)); do
          case $(( (r - 1 + k) % 3 )) in
            0) run "${dtx_cmd[@]}" >>"$base-demandtex.jsonl" ;;
            1) run "${ref_cmd[@]}" >>"$base-ptex.jsonl" ;;
            2) run "${res_cmd[@]}" >>"$base-resident.jsonl" ;;
          esac
        done
      done
      diff_line=$(result_diff "$base-demandtex.f32" "$base-ptex.f32")
      read -r maxdiff psnr <<<"$diff_line"
      same=no
      cmp -s "$base-demandtex.f32" "$base-resident.f32" && same=yes
      dtx_rate=$(col lookups_per_s "$base-demandtex.jsonl")
      ref_rate=$(col lookups_per_s "$base-ptex.jsonl")
      res_rate=$(col lookups_per_s "$base-resident.jsonl")
      table_rows+=("$(printf '%s|' "$kind" "$filter" "$size" "$mb" "$threads" \
        "$dtx_rate" "$ref_rate" "$res_rate" \
        "$(col tiles_read "$base-demandtex.jsonl")" "$(col tiles_read "$base-ptex.jsonl")" \
        "$(col bytes_read "$base-demandtex.jsonl")" "$(col bytes_read "$base-ptex.jsonl")" \
        "$(col peak_resident_bytes "$base-demandtex.jsonl")" \
        "$(col peak_resident_bytes "$base-ptex.jsonl")" "$maxdiff" "$psnr" "$same")")
      ref_version=$(json_get ptex_version "$(head -n 1 "$base-ptex.jsonl")")
      echo "$kind $filter $size ($mb MiB) T=$threads: demandtex $dtx_rate, reference" \
           "$ref_rate, resident $res_rate lookups/s; max diff $maxdiff, PSNR $psnr dB" >&2
    done
  done
done

echo
echo "demandtex vs the reference Ptex ${ref_version:-?} (PtexCache + PtexFilter, $PTEX_ROOT):" \
  "median of $RUNS runs; traces and textures in $DIR"
echo
printf '%s\n' "${table_rows[@]}" | awk -F'|' '
  function m(v) { return v == "nan" || v == "" ? "-" : sprintf("%.2f", v / 1e6) }
  function mib(v) { return v == "nan" || v == "" ? "-" : sprintf("%.1f", v / 1048576) }
  function ratio(a, b) { return a == "nan" || b == "nan" || b + 0 == 0 ? "-" : sprintf("%.2f", a / b) }
  BEGIN {
    print "| trace | filter | cache | MiB | T | dtx M/s | ref M/s | dtx/ref | dtx resident M/s | dtx/resident | dtx tiles | ref blocks | dtx MiB rd | ref MiB rd | dtx peak MiB | ref peak MiB | max diff | PSNR dB | dtx = resident |"
    print "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
  }
  {
    printf "| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n",
      $1, $2, $3, $4, $5, m($6), m($7), ratio($6, $7), m($8), ratio($6, $8), $9, $10,
      mib($11), mib($12), mib($13), mib($14), $15, $16, $17
  }'
echo
echo "(dtx/ref and dtx/resident: ratios of the medians; dtx resident: demandtex with"
echo " --cache-mb $RESIDENT_MB, never evicting, in the same runs; tiles: demandtex's tile reads;"
echo " ref blocks: PtexCache's blockReads (one per face block, tile or header read from a file);"
echo " dtx MiB rd: decoded texel bytes read; ref MiB rd: compressed file bytes read; peak: each"
echo " system's own figure of its peak texture memory; max diff and PSNR (peak 1, RGBA): demandtex"
echo " against the reference, query by query, last run; dtx = resident: demandtex's results are"
echo " bit-identical with and without eviction. JSON lines and results in $OUT)"
