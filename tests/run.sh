#!/usr/bin/env bash
# The README's test command: the CPU backend, then the CUDA code generator under the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
export LAZYCV_CACHE_DIR="${LAZYCV_CACHE_DIR:-$(mktemp -d)/lazycv-kernels}"
echo "== CPU backend =="
LAZYCV_BACKEND=cpu python3 -m pytest -q tests "$@"
echo "== CUDA simulator =="
NUMBA_ENABLE_CUDASIM=1 LAZYCV_BACKEND=cuda-sim python3 -m pytest -q -m sim tests "$@"
