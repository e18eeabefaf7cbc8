#!/usr/bin/env bash
# p_join.sh COLLAB_RUN P_JOIN: tests/coll/p_join.c on 3 peers, rank 1
# SIGKILLed at step 40 and a new peer started for rank 1 at step 80.
# Passes when the survivors and the joiner end with exact parameters and
# the joiner started at the swarm's step (state sync), not at 0.
set -u
run=$1 prog=$2
out=$("$run" -n 3 --abi mpich --mode preload --timeout 100 \
    --chaos 'kill:1@line:0:^p_join: step 40$' --chaos 'start:1@line:0:^p_join: step 80$' \
    -- "$prog" 240 20 2>&1)
st=$?
echo "$out" | grep -E 'p_join: rank|killed|FAIL|error'
[ "$st" -eq 0 ] || { echo "p_join.sh: collab-run exited with $st"; exit 1; }
n=$(echo "$out" | grep -c 'p_join: rank [0-9] ran steps .*, ok$')
[ "$n" -eq 3 ] || { echo "p_join.sh: $n of 3 peers ended with exact parameters"; exit 1; }
echo "$out" | grep -Eq 'p_join: rank 1 ran steps [1-9][0-9]*\.\.240, ok' ||
    { echo "p_join.sh: the joiner did not start at the swarm's step"; exit 1; }
echo "p_join.sh: passed"
