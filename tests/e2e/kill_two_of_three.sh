#!/usr/bin/env bash
# Two of 3 peers are killed one after the other: the last one finishes the
# training alone (a group of one), with status 0.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
collab run 150 -n 3 \
    --chaos 'kill:1@line:0:step 30 ' \
    --chaos 'kill:2@line:0:step 50 ' \
    -- "$E2E_TRAINER" --steps "$E2E_STEPS" --sleep-ms 100 --log-every 10
log="$E2E_LOG/run.out"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
[ "$(count_done "$log")" -eq 1 ] || fail "expected exactly one peer to finish, got $(count_done "$log")"
done_lines "$log" | grep -q "rank 0 pid [0-9]* done steps 0\.\.$E2E_STEPS" || fail "rank 0 did not finish"
expect_loss_near_reference "$log" 1.5
pass
