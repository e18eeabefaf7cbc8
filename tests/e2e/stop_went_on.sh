#!/usr/bin/env bash
# A peer back from a stop whose swarm did not go on without it
# (docs/security.md §4, rule 5; the case of soak seed 2, round 28: a
# refused newer view that still listed the paused peer was taken for
# "the swarm went on without it").  Rank 2 is stopped (SIGSTOP) for
# 6.2 s with COLLAB_TIMEOUT=8: long enough to ask the others (a gap of
# more than COLLAB_TIMEOUT less a heartbeat period, 6 s; the gap the
# peer sees is never shorter than the stop), and 1.8 s short of the
# others' taking it out as silent (8 s after its last message).  With
# the default 5 s that margin was 0.5 s, and a loaded machine (CI, -j2)
# once ran rank 2 late enough after its SIGCONT for rank 1 to remove it,
# which is another case (the swarm did go on without it).  Rank 0, the
# coordinator, is killed meanwhile: rank 1 takes over and sends a newer
# view without rank 0 that still lists rank 2.  Rank 2, back, asks the
# members; rank 1 is not its coordinator yet and no majority of its last
# view can answer (rank 0 is dead), so that view does not count at once,
# but it says the swarm counts on rank 2: rank 2 must not hold its
# collectives for it (it used to, for the round's 20 s, and stop with
# "the swarm went on without this peer" when nobody took it back).
# Rank 1 is killed at 14 s; ranks 2 and 3 finish with bit-identical
# parameters.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=8
collab run 200 -n 4 \
    --chaos 'stop:2@4s+6.2' \
    --chaos 'kill:0@5s' \
    --chaos 'kill:1@14s' \
    -- "$E2E_TRAINER" --steps 300 --sleep-ms 60 --log-every 50
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err"
grep -q '^\[2\] .*this peer was stopped for' "$err" || fail "rank 2 never saw its own stop"
# The case under test: a probed member's newer view refused (no majority).
grep -q '^\[2\] .*dropped a message of type VIEW .*after a pause a view of a member' "$err" ||
    fail "rank 2 refused no newer view after its stop (the case was not reached)"
! grep -q '^\[2\] .*no collective starts until that is decided' "$err" ||
    fail "rank 2 held its collectives for a newer view that lists it"
! grep -q '^\[2\] .*the swarm went on without this peer' "$err" ||
    fail "rank 2 stopped as if the swarm went on without it"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
expect_agreement "$log" 2
pass
