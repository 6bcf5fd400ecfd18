#!/usr/bin/env bash
# The GPU test suite as prebuilt binaries, for a GPU machine that has the NVIDIA driver
# but no Rust toolchain.
#
#   scripts/gpu-suite.sh build OUT_DIR   (here) build the GPU test binaries (cuda/tests/
#                                        gpu_*.rs; the CLI's unit tests as gpu_cli, which
#                                        hold the CUDA loader and demo tests) and the
#                                        `demandtex` CLI, in release, into OUT_DIR with a
#                                        runner
#   OUT_DIR/run.sh                       (there) run every test binary, the CUDA demo
#                                        (--verify against the CPU render) and the GPU
#                                        benchmarks (`demandtex bench --backend cuda`:
#                                        figures only, their tables printed and their JSON
#                                        lines written to OUT_DIR/bench.jsonl, or to
#                                        $DEMANDTEX_BENCH_JSON); one line per test, a
#                                        summary, exit status non-zero on any failure (a
#                                        benchmark fails only if it cannot run)
#
# run.sh sets DEMANDTEX_REQUIRE_GPU=1, so a test that finds no usable GPU fails instead of
# skipping; DEMANDTEX_REQUIRE_GPU=0 OUT_DIR/run.sh lets them skip (a dry run anywhere).
# Every step runs under `timeout` (DEMANDTEX_STEP_TIMEOUT seconds, 240 by default), so one
# that hangs fails that step and the rest still run inside a short device lease.
set -euo pipefail

usage() {
  echo "usage: $0 build OUT_DIR" >&2
  exit 2
}
[ "${1:-}" = build ] && [ -n "${2:-}" ] || usage
OUT="$2"
cd "$(dirname "$0")/.."

mkdir -p "$OUT/bin"
rm -f "$OUT"/bin/*

echo "== building the GPU tests (release)"
tests=()
for f in cuda/tests/gpu_*.rs; do
  tests+=(--test "$(basename "$f" .rs)")
done
# The JSON lines name each test executable: the gpu_* targets of demandtex-cuda, and the
# CLI's unit tests (its `demandtex` bin target under test), kept as gpu_cli.
{
  cargo test -p demandtex-cuda --release --no-run --message-format=json "${tests[@]}"
  cargo test -p demandtex-cli --release --no-run --message-format=json --bin demandtex
} | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    name = m["target"]["name"]
    if name.startswith("gpu_"):
        print(name, m["executable"])
    elif name == "demandtex" and m.get("profile", {}).get("test"):
        print("gpu_cli", m["executable"])
' | while read -r name exe; do
  cp "$exe" "$OUT/bin/$name"
done

echo "== building the demandtex CLI (release)"
cargo build -p demandtex-cli --release
cp target/release/demandtex "$OUT/bin/demandtex"

# The Ptex fixtures gpu_ptex samples (run.sh points DEMANDTEX_PTEX_FIXTURES at them).
mkdir -p "$OUT/fixtures/ptex"
cp tests/fixtures/ptex/*.ptx "$OUT/fixtures/ptex/"

# Debug info is for local profiling; the bundle travels.
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "$OUT"/bin/*
fi

cat > "$OUT/run.sh" <<'RUN'
#!/usr/bin/env bash
# Run the demandtex GPU suite (built by scripts/gpu-suite.sh): every bin/gpu_* test
# binary, one line per test, then a summary. Exit status 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")"
export DEMANDTEX_REQUIRE_GPU="${DEMANDTEX_REQUIRE_GPU:-1}"
export DEMANDTEX_PTEX_FIXTURES="$PWD/fixtures/ptex"
# One step's limit in seconds: a hung step fails (exit 124) and the suite goes on.
step_timeout="${DEMANDTEX_STEP_TIMEOUT:-240}"
step() { timeout --kill-after=10 "$step_timeout" "$@"; }
echo "== bin/demandtex cuda-info"
step bin/demandtex cuda-info || echo "(cuda-info failed: exit $?)"
passed=0
failed=0
failures=()
for t in bin/gpu_*; do
  name="$(basename "$t")"
  echo "== $name"
  log="$(mktemp)"
  # The CLI's unit tests: only its demo module's (the CUDA loader and demo tests; the rest
  # are CPU tests that CI runs).
  filter=()
  [ "$name" = gpu_cli ] && filter=(demo::)
  step "$t" --test-threads=1 --show-output ${filter[@]+"${filter[@]}"} >"$log" 2>&1
  rc=$?
  # The harness's per-test lines, the skips and the figures the tests print.
  grep -E '^test .* \.\.\. |^skipped: |^sparse properties|^allocation granularity|samples as|^largest mipmapped|past the byte cap|^CUDA loader: one view|^CPU/GPU agreement' "$log" | sed 's/^/  /'
  ok=$(grep -cE '^test .* \.\.\. ok$' "$log")
  bad=$(grep -cE '^test .* \.\.\. FAILED$' "$log")
  passed=$((passed + ok))
  failed=$((failed + bad))
  if [ "$rc" -ne 0 ]; then
    [ "$bad" -eq 0 ] && failed=$((failed + 1))
    failures+=("$name")
    echo "  -- $name failed (exit $rc); its output:"
    sed 's/^/  | /' "$log"
  fi
  rm -f "$log"
done
# The CUDA demo, verified against the CPU render (pass/fail); it prints its launches, time
# and device counters. (The 1 TiB scene through a 2 GiB pool is the benchmarks' converge
# section.)
demo() {
  local name="$1"; shift
  local log dir
  log="$(mktemp)"; dir="$(mktemp -d)"
  echo "== demo: $name"
  step bin/demandtex demo --backend cuda --out "$dir" "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^(CUDA|verify|virtual texture|converged|stopped)|(launches|tiles_uploaded|device_restores|evictions|peak_resident_bytes|pool_peak_bytes|verify_psnr_db) ' "$log" | sed 's/^/  /'
  if [ "$rc" -ne 0 ]; then
    echo "  -- demo $name failed (exit $rc); its output:"
    sed 's/^/  | /' "$log"
  fi
  rm -rf "$log" "$dir"
  return "$rc"
}
if demo "verify (960x540, 256 MiB)" --verify; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  failures+=("demo --verify")
fi
# The interactive camera path on the GPU (docs/INTERACTIVE.md): frame times of the streaming
# run against the same frames resident and untextured. Figures; it fails only if it cannot
# run (a reference frame that does not converge, a driver error).
# Paced to 60 frames a second at 1920x1080 with 8 fill threads: unpaced, a GPU frame of
# well under a millisecond leaves the fills no time between frames. Run twice: tiles
# published while the kernel runs (the interactive default), and before the launch.
# DEMANDTEX_SUITE_KEEP=DIR keeps each run's frames.csv and interactive.json under DIR.
interactive() {
  local name="$1"; shift
  local ilog idir
  ilog="$(mktemp)"
  if [ -n "${DEMANDTEX_SUITE_KEEP:-}" ]; then
    idir="$DEMANDTEX_SUITE_KEEP/interactive-$name"; mkdir -p "$idir"
  else
    idir="$(mktemp -d)"
  fi
  echo "== demo: interactive, tiles published $name (1920x1080 at 60 fps, 240 frames, 256 MiB, 8 fill threads)"
  if step bin/demandtex demo --backend cuda --interactive --threads 8 --budget-mb 256 --frames 240 \
      --fps 60 --width 1920 --height 1080 --out "$idir" "$@" >"$ilog" 2>&1; then
    passed=$((passed + 1))
    grep -E '^(device|median|max frame|stalled|frames to full|final full|last frame|requests rejected|tile publication) ' "$ilog" | sed 's/^/  /'
  else
    failed=$((failed + 1))
    failures+=("demo --interactive ($name)")
    sed 's/^/  | /' "$ilog"
  fi
  rm -f "$ilog" "$idir/interactive.png"
  [ -n "${DEMANDTEX_SUITE_KEEP:-}" ] || rm -rf "$idir"
}
interactive during-launch
interactive before-launch --publish-before-launch
# The GPU benchmarks: demand-path fetch vs hardware tex2DGrad, requests/s through pull ->
# fill -> push, tile upload GB/s and map ops/s, launches to converge (demo scene in 256 MiB,
# 1 TiB virtual set through a 2 GiB pool). Figures only: a non-zero exit means it could
# not run, which counts as a failure.
bench_json="${DEMANDTEX_BENCH_JSON:-$PWD/bench.jsonl}"
echo "== bench: demandtex bench --backend cuda --reps ${DEMANDTEX_BENCH_REPS:-7} (medians; JSON lines: $bench_json)"
log="$(mktemp)"
step bin/demandtex bench --backend cuda --reps "${DEMANDTEX_BENCH_REPS:-7}" --json >"$log" 2>&1
rc=$?
grep '^{' "$log" >"$bench_json" || true
grep -v '^{' "$log" | sed 's/^/  /'
if [ "$rc" -ne 0 ]; then
  echo "  -- bench failed (exit $rc)"
  failed=$((failed + 1))
  failures+=("bench")
fi
rm -f "$log"
echo "== summary: $passed passed, $failed failed"
if [ "${#failures[@]}" -gt 0 ]; then
  echo "failed binaries: ${failures[*]}"
  exit 1
fi
RUN
chmod +x "$OUT/run.sh"

size=$(du -sb "$OUT" | cut -f1)
echo "== $OUT: $(ls "$OUT/bin" | wc -l) binaries, $size bytes"
if [ "$size" -ge $((64 << 20)) ]; then
  echo "gpu-suite: the bundle is $size bytes, over the 64 MiB a device run can carry" >&2
  exit 1
fi
