#!/usr/bin/env bash
# A peer stopped during the start-up broadcast (soak seed 1, round 20):
# rank 3 is held back (SIGSTOP from the start, 8 s) so the group forms
# only after COLLAB_MATCHMAKING_TIME (5 s); rank 2 is stopped for 12 s
# as soon as it logs that it posted its first world collective (the
# broadcast) before the group formed, not at a fixed time: on a loaded
# machine a fixed time could come after the group formed with it, and
# the run would take the straggler's path instead.  The group forms with
# it, finishes the broadcast without it and trains; rank 3 joins late.
# Rank 2, back, never was in the group and its first broadcast still
# waits in its queue: it must hand it on as a joiner's (adopt_queued,
# cl_engine_elastic.c), be admitted, get the swarm's state and finish
# with the others' parameters (it used to wait for an admission nobody
# asked for, then train alone from its own initial state once the others
# left).
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
unset COLLAB_TIMEOUT
posted='posted its first world collective before the group formed'
collab run 200 -n 4 \
    --chaos 'stop:3@0s+8' \
    --chaos "stop:2@line:2:$posted+12" \
    -- "$E2E_TRAINER" --steps 300 --sleep-ms 60 --log-every 50
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
grep -q "^\[2\] .*$posted" "$err" || fail "rank 2 never posted a collective before the group formed"
grep -q '^collab-run: chaos: SIGSTOP rank 2 ' "$err" || fail "rank 2 was never stopped"
grep -q '^\[2\] .*this peer was stopped for' "$err" || fail "rank 2 never saw its own stop"
! grep -q '^\[2\] .*the group went on without this peer' "$err" ||
    fail "rank 2 took the straggler's path (it saw the group form before its stop)"
grep -q '^\[2\] .*waits to be admitted with its [0-9]* queued world collectives* as a joiner' "$err" ||
    fail "rank 2 did not hand its queued collectives on as a joiner's (adopt_queued)"
grep -q '^\[2\] .*admitted at collective' "$err" || fail "rank 2 was never admitted"
! grep -q '^\[2\] .*formed the group: 1 of' "$err" || fail "rank 2 formed a group of its own"
expect_agreement "$log" 4
pass
