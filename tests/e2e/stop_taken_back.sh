#!/usr/bin/env bash
# A peer back from a stop whom the swarm took out and then took back at
# once (docs/security.md §4, rule 5; the case of soak seed 4, round 5).
# Rank 0 is stopped at 2 s for 9 s and a new peer starts; rank 3 is
# killed at 5 s; rank 1 is stopped at 8 s for 6 s.  Rank 2, alone,
# takes rank 1 out and goes on.  Rank 1, back, asks the members of its
# last view: rank 2 answers with a newer view without it (the swarm went
# on without it: the pause holds its collectives), then re-adds it and
# sends a view that lists it.  That view, from the very member whose
# answer said the swarm went on, takes rank 1 back (it used to drop the
# view and stop at the rejoin window's end with "none of its members
# took it back", exit 101), but as a straggler: it leaves the group and
# is resynced from rank 2's state, so what rank 2 did alone is kept
# (taken back at its own stale sequence, it became the admitter, took
# rank 2 out as "fallen behind", resynced rank 2 from its own stale
# model, and the newcomer was never admitted).  Rank 1, rank 2 and the
# newcomer finish with status 0 and one checksum (rank 1 must not admit
# the newcomer itself while in doubt: rank 2, merging that view, put
# rank 1 back into its group at its stale sequence).  Rank 0, stopped
# 9 s, may still stop with the error above (its window may outlast the
# others' training, or its members took it out as silent): not
# asserted, so the run's own status is not either.
# Default COLLAB_TIMEOUT (5 s).
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
unset COLLAB_TIMEOUT
collab run 200 -n 4 \
    --chaos 'stop:0@2s+9' \
    --chaos 'start@2s' \
    --chaos 'kill:3@5s' \
    --chaos 'stop:1@8s+6' \
    -- "$E2E_TRAINER" --steps 300 --sleep-ms 60 --log-every 50
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err"
grep -q '^\[1\] .*this peer was stopped for' "$err" || fail "rank 1 never saw its own stop"
! grep -q '^\[1\] .*the swarm went on without this peer and none' "$err" ||
    fail "rank 1 stopped as if nobody took it back"
expect_exit0 "$err" 'rank 1' 'rank 2' 'peer +1'
# The progress rank 2 made alone is kept: rank 1 is resynced from it,
# rank 2 is never taken out nor resynced.
grep -q '^\[1\] .*resynced with the group' "$err" || fail "rank 1 was not resynced"
! grep -q '^\[2\] .*resynced with the group' "$err" || fail "rank 2 was resynced (its progress lost)"
! grep -q '^\[1\] .*rank 2 .* left the group' "$err" || fail "rank 1 took rank 2 out of the group"
grep -q '^\[+1\] .*trainer: rank [0-9]* .* done steps' "$log" || fail "the newcomer did not finish"
sum1=$(sed -n 's/^\[1\] .*trainer: rank 1 .* done steps .* checksum \([0-9a-f]*\).*/\1/p' "$log")
sum2=$(sed -n 's/^\[2\] .*trainer: rank 2 .* done steps .* checksum \([0-9a-f]*\).*/\1/p' "$log")
[ -n "$sum1" ] && [ "$sum1" = "$sum2" ] || fail "ranks 1 and 2 disagree: '$sum1' '$sum2'"
expect_agreement "$log" 3
pass
