#!/usr/bin/env bash
# One device call: install the carried wheels, check the CUDA path with the test suite's small
# cases on the real GPU, run the demo, then the W1 benchmark with its peers. Logs go to $OUT.
set -uo pipefail
OUT="${OUT:-bench/out}"; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 LAZYCV_CACHE_DIR=/tmp/lazycv-kernels
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import numpy, numba, cv2, numba_cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__, 'cv2', cv2.__version__)" | tee -a "$OUT/gpu.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  LAZYCV_BACKEND=cuda timeout 300 python3 -m pytest -q -m sim ${TEST_FILES:-tests} -p no:cacheprovider 2>&1 | tail -25 | tee "$OUT/tests_cuda.txt"
fi
timeout 200 python3 -m lazycv demo 2>&1 | tail -8 | tee "$OUT/demo.txt"
timeout 300 python3 bench/w1.py "$@" 2>&1 | tee "$OUT/w1.txt"
timeout 300 python3 bench/w34.py --repeats 15 2>&1 | tee "$OUT/w34.txt"
timeout 200 python3 bench/w7.py --backend cuda 2>&1 | tee "$OUT/w7.txt"
