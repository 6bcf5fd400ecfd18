#!/usr/bin/env bash
# The pinned NVRTC of the CUDA compile checks: NVIDIA's pip wheels, pinned exactly (an
# unpinned install pulls newer parts whose PTX, a newer ISA, the R580 driver rejects),
# installed into a venv under target/ (reused by later runs, never committed). Prints the
# wheels' cu13 directory (include/: cuda.h, nvrtc.h; lib/: libnvrtc.so.13) on stdout.
# Used by scripts/check-cuda.sh and scripts/test-consumers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

PINNED='cuda-toolkit[nvrtc,cudart]==13.0.2'
VENV="${DEMANDTEX_CUDA_VENV:-target/cuda-venv}"
STAMP="$VENV/.demandtex-pinned"

if ! command -v python3 >/dev/null 2>&1; then
  echo "cuda-venv: python3 is required (for the NVRTC pip wheels)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/pip" ]; then
  echo "== creating $VENV" >&2
  if ! python3 -m venv "$VENV" >&2; then
    echo "cuda-venv: python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
  fi
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$PINNED" ]; then
  echo "== pip install $PINNED" >&2
  if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PINNED" >&2; then
    echo "cuda-venv: could not install $PINNED from the package index" >&2
    exit 1
  fi
  echo "$PINNED" > "$STAMP"
fi
CU13="$("$VENV/bin/python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
if [ ! -e "$CU13/lib/libnvrtc.so.13" ] || [ ! -e "$CU13/include/nvrtc.h" ]; then
  echo "cuda-venv: $CU13 lacks libnvrtc.so.13 or nvrtc.h after installing $PINNED" >&2
  exit 1
fi
realpath "$CU13"
