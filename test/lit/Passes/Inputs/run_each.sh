#!/usr/bin/env bash
# run_each.sh FUSEC_RUN PIPELINE: fusec-run --verify-pipeline on each graph
# of $FUSEC_EXAMPLE_GRAPHS (every function of it); fails on the first that
# does not pass.
set -u
run=$1 pipeline=$2
count=0
for graph in $FUSEC_EXAMPLE_GRAPHS; do
  count=$((count + 1))
  for fn in $(grep -oE 'func.func @[A-Za-z0-9_]+' "$graph" | sed 's/func.func @//'); do
    out=$("$run" --verify-pipeline="$pipeline" --function="$fn" --trials=2 "$graph" 2>&1)
    if ! grep -q '^PASS' <<<"$out"; then
      echo "FAIL: $pipeline on $graph @$fn"
      echo "$out" | tail -5
      exit 1
    fi
  done
done
echo "PASS: $pipeline on $count graphs"
