#!/usr/bin/env bash
# One device call: install the carried wheels, check the CUDA path with the test suite's small
# cases on the real GPU, run the demo, the kernel-variant sweep, then W1 (with its peers and the
# compose row; drawn as $OUT/w1.png), W3/W4, W2, the record cost, W7 and C1 (the CPU backend
# on this host's CPU).
# The console log goes to $OUT/log.txt, each benchmark's JSON to $OUT (the device tool returns
# few files).
#   TEST_FILES=...  test files for the GPU check (default: all of tests/, -m sim selects)
#   SKIP_TESTS=1, SKIP_VARIANTS=1, SKIP_W7=1, SKIP_C1=1  leave those parts out
set -uo pipefail
OUT="${OUT:-bench/out}"; mkdir -p "$OUT"
LOG="$OUT/log.txt"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
  # CV-CUDA, when bench/cvcuda_parts.sh's two parts were carried to /tmp/cvc in earlier calls
  if ls /tmp/cvc/part00 /tmp/cvc/part01 >/dev/null 2>&1; then
    cat /tmp/cvc/part00 /tmp/cvc/part01 | xz -d | tar xf - -C /tmp/site || exit 1
  fi
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 LAZYCV_CACHE_DIR=/tmp/lazycv-kernels
quiet() { grep -v -e "NumbaPerformanceWarning" -e "warn(errors" -e "^$" ; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c "import numpy, numba, cv2, numba_cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'cv2', cv2.__version__)"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  LAZYCV_BACKEND=cuda timeout 300 python3 -m pytest -q -m sim ${TEST_FILES:-tests} -p no:cacheprovider -W ignore 2>&1 | tail -15
fi
timeout 200 python3 -m lazycv demo 2>&1 | tail -6
if [ "${SKIP_VARIANTS:-0}" != 1 ]; then
  timeout 200 python3 bench/kernel_variants.py 2>&1 | quiet
fi
timeout 300 python3 bench/w1.py --compose "$@" 2>&1 | quiet
python3 bench/plot.py "$OUT/w1.json" --out "$OUT/w1.png" 2>&1 | tail -1
timeout 300 python3 bench/w34.py --repeats 15 2>&1 | quiet
timeout 300 python3 bench/w2.py 2>&1 | quiet
timeout 120 python3 bench/record_cost.py 2>&1 | quiet
timeout 120 python3 bench/host_flush.py 2>&1 | quiet
if [ "${SKIP_W7:-0}" != 1 ]; then
  timeout 200 python3 bench/w7.py --backend cuda 2>&1 | quiet
fi
if [ "${SKIP_C1:-0}" != 1 ]; then
  timeout 200 python3 bench/c1.py 2>&1 | quiet
fi
} 2>&1 | tee "$LOG"
