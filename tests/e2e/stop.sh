#!/usr/bin/env bash
# One of 4 peers is stopped (SIGSTOP) for 15 s: the others go on training
# while it is stopped, and once continued it catches up and finishes with
# parameters bitwise equal to theirs.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
collab run 150 -n 4 \
    --chaos 'stop:3@line:0:step 20 +15' \
    -- "$E2E_TRAINER" --steps "$E2E_STEPS" --sleep-ms 150 --log-every 5
log="$E2E_LOG/run.out"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
expect_agreement "$log" 4
# Rank 0's progress while rank 3 was stopped: between 2 s after the stop
# (COLLAB_TIMEOUT) plus a margin and its end.
t20=$(grep -h 'trainer: rank 0 step 20 ' "$log" | sed -n 's/.* wall \([0-9.]*\).*/\1/p' | head -n 1)
[ -n "$t20" ] || fail "rank 0 never logged step 20"
during=$(grep -h 'trainer: rank 0 step ' "$log" | sed -n 's/.* wall \([0-9.]*\).*/\1/p' |
    awk -v s="$t20" '$1 > s + 4 && $1 < s + 14.5' | wc -l)
[ "$during" -ge 2 ] || fail "rank 0 logged $during steps while rank 3 was stopped: the swarm waited"
expect_loss_near_reference "$log" 1.25
pass "rank 0 logged $during times while rank 3 was stopped"
