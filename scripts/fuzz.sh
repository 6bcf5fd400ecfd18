#!/usr/bin/env bash
# Coverage-guided fuzzing of demandtex's readers and C ABI with afl.rs (stable toolchain).
#
#   scripts/fuzz.sh TARGET SECONDS [JOBS]    # one target: exr, ptex, tiff, dds, image or capi
#   scripts/fuzz.sh all SECONDS              # every target, SECONDS each
#
# Installs cargo-afl (pinned) and builds AFL++ on first use, builds the targets in
# fuzz/ (their own workspace) into target/fuzz, and runs afl-fuzz with the target's seed
# corpus (fuzz/seeds/TARGET), its regression inputs (fuzz/regressions/TARGET: every crash,
# hang or out-of-memory found, kept after the fix) and its dictionary (fuzz/dict). A seed or
# regression input that crashes fails the run at once (afl's dry run). JOBS > 1 runs one
# main and JOBS-1 secondary instances. Findings stay in target/fuzz-out/TARGET until the
# next run of that target (copy them to fuzz/regressions/TARGET once fixed).
#
# Prints one line per target: executions, executions/s, edges covered (afl's bitmap
# coverage), corpus size, crashes and hangs found. Exit 1 when any crash or hang was found.
#
# Environment:
#   EXECS     stop each target after about this many executions (afl-fuzz -E), SECONDS
#             still caps the time: a campaign is `EXECS=10000000 scripts/fuzz.sh exr 86400`
#   FUZZ_OUT  where findings and statistics go (default target/fuzz-out; a campaign keeps
#             its own so that the test command's short runs do not wipe it)
#   RESUME    non-empty: go on with the campaign already in FUZZ_OUT (its corpus, and its
#             execution count for EXECS) instead of starting again from the seeds
# Each run fuzzes a copy of the target binary kept beside its output folder, so a rebuild of
# the targets (another run, the test command) does not disturb a campaign under way.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_AFL_VERSION=0.18.2
target=${1:?usage: scripts/fuzz.sh TARGET|all SECONDS [JOBS]}
seconds=${2:?usage: scripts/fuzz.sh TARGET|all SECONDS [JOBS]}
jobs=${3:-1}
targets=(exr ptex tiff dds image capi)
if [ "$target" = all ]; then
  set -- "${targets[@]}"
else
  case " ${targets[*]} " in *" $target "*) ;; *) echo "unknown target $target (${targets[*]})" >&2; exit 2 ;; esac
  set -- "$target"
fi

if ! cargo afl --version 2>/dev/null | grep -q "$CARGO_AFL_VERSION"; then
  echo "== installing cargo-afl $CARGO_AFL_VERSION"
  cargo install cargo-afl --locked --version "$CARGO_AFL_VERSION"
fi
# Builds AFL++ and its runtime once per toolchain; says so (and fails) when already built.
cargo afl config --build >/dev/null 2>&1 || true

echo "== building the fuzz targets (cargo afl build --release)"
export CARGO_TARGET_DIR=$PWD/target/fuzz
(cd fuzz && cargo afl build --release --locked -q)

export AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_NO_AFFINITY=1 AFL_SKIP_CRASHES=0 AFL_QUIET=1
status=0
for t in "$@"; do
  out=${FUZZ_OUT:-target/fuzz-out}/$t
  input=$out.in
  # -t: a run past 10 s is a hang (a ticket that never ends, an unbounded loop).
  common=(-o "$out" -x fuzz/dict/"$t".dict -t 10000 -m none -V "$seconds")
  if [ -n "${RESUME:-}" ] && [ -d "$out/main/queue" ]; then
    # Go on from the corpus (and the execution count) of an earlier campaign.
    args=(-i - "${common[@]}")
  else
    rm -rf "$input" "$out" && mkdir -p "$input" "$out"
    cp fuzz/seeds/"$t"/* "$input"/
    if [ -d fuzz/regressions/"$t" ]; then
      for f in fuzz/regressions/"$t"/*; do cp "$f" "$input/regression-$(basename "$f")"; done
    fi
    args=(-i "$input" "${common[@]}")
  fi
  if [ -n "${EXECS:-}" ]; then args+=(-E "$EXECS"); fi
  bin=$out.bin
  cp "$CARGO_TARGET_DIR/release/$t" "$bin"
  pids=()
  for ((j = 1; j < jobs; j++)); do
    cargo afl fuzz "${args[@]}" -S "s$j" "$bin" >"$out/s$j.log" 2>&1 &
    pids+=($!)
  done
  if ! cargo afl fuzz "${args[@]}" -M main "$bin" >"$out/main.log" 2>&1; then
    echo "afl-fuzz failed on $t (a seed or regression input crashes or hangs?):" >&2
    tail -20 "$out/main.log" >&2
    status=1
  fi
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" || true; done
  rm -f "$bin" # (~50 MB each; the build in target/fuzz reproduces a finding)
  execs=0 crashes=0 hangs=0 corpus=0 cvg=? speed=0 ran=?
  for stats in "$out"/*/fuzzer_stats; do
    [ -f "$stats" ] || continue
    v() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
    execs=$((execs + $(v execs_done)))
    crashes=$((crashes + $(v saved_crashes)))
    hangs=$((hangs + $(v saved_hangs)))
    corpus=$((corpus + $(v corpus_count)))
    speed=$(awk -v a="$speed" -v b="$(v execs_per_sec)" 'BEGIN { printf "%.0f", a + b }')
    if [ "$(basename "$(dirname "$stats")")" = main ]; then cvg=$(v bitmap_cvg) ran=$(v run_time); fi
  done
  printf 'fuzz %-5s %6ss x%s: %10d execs  %7s execs/s  coverage %-7s corpus %5d  crashes %d  hangs %d\n' \
    "$t" "$ran" "$jobs" "$execs" "$speed" "$cvg" "$corpus" "$crashes" "$hangs"
  if [ "$crashes" -gt 0 ] || [ "$hangs" -gt 0 ]; then
    # (not ls: a glob that matches nothing would fail the pipeline and, under set -e,
    # end the script before the remaining targets)
    for f in "$out"/*/crashes/id* "$out"/*/hangs/id*; do
      if [ -e "$f" ]; then echo "  finding: $f" >&2; fi
    done
    status=1
  fi
done
exit $status
