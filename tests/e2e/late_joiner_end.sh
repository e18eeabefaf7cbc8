#!/usr/bin/env bash
# A joiner whose swarm ends before its group takes it in (soak seed 2,
# round 5): rank 2 is killed, a new peer takes its rank and waits for the
# next step boundary (steps of 5 s), and the two other members are killed
# as soon as it logs that it waits.  Every other member of its view is
# then gone and it never held the swarm's state, so it cannot go on
# alone: it must stop at once with a clear error, not wait for the
# admission's 60 s limit ("gave up waiting to be admitted").
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
waits='waits to be admitted at its next step boundary'
collab run 150 -n 3 \
    --chaos 'kill:2@2s' \
    --chaos 'start@3s' \
    --chaos "kill:0@line:+1:$waits" \
    --chaos "kill:1@line:+1:$waits" \
    -- "$E2E_TRAINER" --steps 8 --sleep-ms 5000 --log-every 1
err="$E2E_LOG/run.err"
grep -q "^\[+1\] .*$waits" "$err" || fail "the new peer never waited to be admitted (the case was not reached)"
grep -q '^collab-run: chaos: SIGKILL rank 0 ' "$err" || fail "rank 0 was never killed"
grep -q '^collab-run: chaos: SIGKILL rank 1 ' "$err" || fail "rank 1 was never killed"
grep -q '^\[+1\] .*every other member of the swarm left or failed before this peer was admitted' "$err" ||
    fail "the new peer did not say that its swarm ended before it was admitted"
! grep -q '^\[+1\] .*gave up waiting to be admitted' "$err" ||
    fail "the new peer waited for the admission's limit instead"
line=$(grep '^collab-run: summary: peer +1 ' "$err") || fail "no summary of the new peer"
case $line in *'exited with status 0 '*) fail "the new peer exited with status 0: $line" ;; esac
took=$(echo "$line" | sed -n 's/.* after \([0-9.]*\)s.*/\1/p')
[ -n "$took" ] || fail "no run time in: $line"
# Started at 3 s; the others are killed about a second later, and a dead
# member is noticed within COLLAB_TIMEOUT: well under the 60 s limit.
awk -v t="$took" 'BEGIN {exit !(t < 40)}' || fail "the new peer took ${took} s to stop"
pass
