#!/usr/bin/env bash
# One device call comparing two trees of lazycv (run from the repository root on the device):
# .snap (new) and .snap_old (old), each `git archive <rev> | tar -x -C <dir>`, carried with .whl
# (a numpy 2.4 wheel). The GPU tests on the new tree (SKIP_TESTS=1: none), then GPU_ROUNDS (2)
# alternations of record_cost.py, profile_w2.py, w2.py, w1.py at 64 frames and w34.py's W3, then
# C1_ROUNDS (1) alternations of c1.py (the host's CPU), then NEW_ONLY (a command) in the new tree.
# Log to $OUT/log.txt, JSON into $OUT/json.tgz. Runs 103-104, 109-111 and 115- in bench/RESULTS.md.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1 LAZYCV_CACHE_DIR=/tmp/lk
INC=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
SO=$(python3 -c "import sysconfig;print('_hotpath'+sysconfig.get_config_var('EXT_SUFFIX'))")
BSO=$(python3 -c "import sysconfig;print('_bands'+sysconfig.get_config_var('EXT_SUFFIX'))")
for d in .snap .snap_old; do
  gcc -O2 -shared -fPIC -I$INC $d/lazycv/_hotpath.c -o $d/lazycv/$SO || exit 1
  [ ! -f $d/lazycv/backends/_bands.c ] || gcc -O2 -shared -fPIC -pthread -I$INC $d/lazycv/backends/_bands.c -o $d/lazycv/backends/$BSO || exit 1
done
LOG=$OUT/log.txt
quiet() { grep -v -e "NumbaPerformanceWarning" -e "warn(errors" -e "^$" ; }
in_tree() { (cd $1 && export PYTHONPATH=/tmp/site:$PWD OUT=$OUT/$2 && mkdir -p $OUT && eval "$3"); }
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -n "${SKIP_TESTS:-}" ] || (cd .snap && PYTHONPATH=/tmp/site:$PWD LAZYCV_BACKEND=cuda timeout 240 python3 -m pytest -q -m sim tests -p no:cacheprovider -W ignore -rf -n 12 --ignore=tests/test_ray.py 2>&1 | tail -6)
for round in $(seq 1 ${GPU_ROUNDS:-2}); do
  for tree in .snap_old .snap; do
    echo "=== $tree round $round"
    in_tree $tree $tree$round '
      timeout 90 python3 bench/record_cost.py 2>&1 | quiet | tail -10;
      timeout 90 python3 bench/profile_w2.py --frames 3000 2>&1 | grep -E "^W2|^launch pieces";
      timeout 150 python3 bench/w2.py --peers torch_eager 2>&1 | quiet | tail -5;
      timeout 150 python3 bench/w1.py --batches 64 --no-eager --peers torch_eager 2>&1 | quiet | tail -5;
      timeout 150 python3 bench/w34.py --repeats 15 2>&1 | quiet | grep -E "^W3 +(lazycv fused|torch loop) "'
  done
done
for round in $(seq 1 ${C1_ROUNDS:-1}); do
  for tree in .snap_old .snap; do
    echo "=== $tree: c1 (CPU backend) round $round"
    in_tree $tree ${tree}c$round 'LAZYCV_BACKEND=cpu timeout 120 python3 bench/c1.py --repeats 30 2>&1 | quiet | tail -9'
  done
done
[ -z "${NEW_ONLY:-}" ] || { echo "=== .snap: $NEW_ONLY"; in_tree .snap .snapx "$NEW_ONLY"; }
} 2>&1 | tee $LOG
cd $OUT && find . -name "*.json" | tar czf json.tgz -T - && find . -name "*.json" -delete
