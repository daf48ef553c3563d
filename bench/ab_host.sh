#!/usr/bin/env bash
# Host cost of two versions of lazycv on one machine, alternated (old, new, old, new): W1 as a
# Python loop and through compose at 1 and 64 frames, no peers. OLD is a tree of the older
# version (e.g. `git archive <commit> lazycv bench | tar -x -C ab_old`); JSON under $OUT/ab/.
#   bash bench/ab_host.sh ab_old
set -uo pipefail
OLD="$1"; OUT="${OUT:-bench/out}"
BASE="${PYTHONPATH:-}"
for round in 1 2; do
  for tree in "$OLD" .; do
    name=$([ "$tree" = . ] && echo new || echo old)
    echo "== $name (round $round)"
    (cd "$tree" && OUT="$OUT/ab/$name$round" PYTHONPATH="$PWD${BASE:+:$BASE}" \
      timeout 200 python3 bench/w1.py --batches 1,64 --no-eager --peers "" --compose --repeats 15 2>&1 \
      | grep -E "^\s+(1|64)\s+lazycv")
  done
done
