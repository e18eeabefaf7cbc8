#!/usr/bin/env bash
# A peer is killed inside an all-reduce of large tensors (H=512: a 1 MiB
# layer, cut into parts that every member reduces and sends back):
#   leader   rank 0, the coordinator, killed as it enters the all-reduces
#   reducer  rank 2, owner of a part, killed as it enters them
#   sender   rank 3, killed when rank 1 enters them (rank 3 is then
#            sending its parts or receiving results)
# The survivors finish with bit-identical parameters.
. "$(dirname "$0")/lib.sh"
role=${1:?usage: kill_in_allreduce.sh leader|reducer|sender}
case $role in
leader) spec='kill:0@line:0:entering allreduce of step 15' ;;
reducer) spec='kill:2@line:2:entering allreduce of step 15' ;;
sender) spec='kill:3@line:1:entering allreduce of step 15' ;;
*) fail "unknown role $role" ;;
esac
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
collab run 120 -n 4 --chaos "$spec" \
    -- "$E2E_TRAINER" --steps 40 --hidden 512 --batch 4 --mark-step 15 --log-every 5
log="$E2E_LOG/run.out"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
grep -q 'entering allreduce of step 15' "$log" || fail "no peer reached the marked step"
expect_agreement "$log" 3
[ "$(count_done "$log")" -eq 3 ] || fail "expected the 3 survivors to finish"
pass
