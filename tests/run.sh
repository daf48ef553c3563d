#!/usr/bin/env bash
# The README's test command: the CPU backend, then the CUDA code generator under the simulator.
# Each run spreads its tests over LAZYCV_TEST_WORKERS processes (pytest-xdist; 2 by default, the
# CI machine's cores): most of the suite's time is Numba compiling kernels, one core each.
set -euo pipefail
cd "$(dirname "$0")/.."
export LAZYCV_CACHE_DIR="${LAZYCV_CACHE_DIR:-$(mktemp -d)/lazycv-kernels}"
workers=(-n "${LAZYCV_TEST_WORKERS:-2}")
[ "${LAZYCV_TEST_WORKERS:-2}" = 1 ] && workers=()
echo "== CPU backend =="
LAZYCV_BACKEND=cpu python3 -m pytest -q "${workers[@]}" tests "$@"
if python3 -c "import lazycv._hotpath" 2>/dev/null; then
  # the recording steps users without a C compiler run (lazycv/_hotpath.c's Python twins)
  echo "== CPU backend, recording in Python (LAZYCV_HOTPATH=0) =="
  LAZYCV_HOTPATH=0 LAZYCV_BACKEND=cpu python3 -m pytest -q "${workers[@]}" tests/test_recipes.py \
    tests/test_hotpath.py tests/test_laziness.py tests/test_plancache.py tests/test_threads.py "$@"
fi
echo "== CUDA simulator =="
NUMBA_ENABLE_CUDASIM=1 LAZYCV_BACKEND=cuda-sim python3 -m pytest -q "${workers[@]}" -m sim tests "$@"
