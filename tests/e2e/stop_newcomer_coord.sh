#!/usr/bin/env bash
# Two swarms after a stopped coordinator (the case of soak seed 6, round
# 1; docs/benchmarks.md, "Two swarms after a stopped coordinator").
# Rank 2 is killed at 3 s and a new peer (+1) takes its rank at 10 s;
# rank 0, the coordinator, is stopped at 12 s for 9 s while a second new
# peer (+2) starts; rank 3 is stopped at 12 s for 2 s (its own stop is
# taken off its clock, so it notices rank 0's silence later).  Rank 1
# notices first, takes over and sends a view without rank 0, which a
# member that has not noticed yet refuses (+1 in every run so far: rank
# 0 is still its coordinator); rank 1 admits +2, which takes the only
# free rank, 0, and so coordinates.  Rank 1, whose tenure that ended,
# answers the refusing member's heartbeats with its view, which it takes
# once it suspects rank 0: every peer that finishes holds the same
# parameters.  On the code before, +2 removed that member as silent (it
# had never heard of +2), and it trained on without the others: two
# checksums (4 of 4 runs of this schedule with bench/soak.sh
# --schedule).  Rank 0, back, ends as a standby or with the pause error:
# not asserted, so the run's own status is not either.
# Default COLLAB_TIMEOUT (5 s).
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
unset COLLAB_TIMEOUT
collab run 200 -n 4 \
    --chaos 'kill:2@3s' \
    --chaos 'start@10s' \
    --chaos 'stop:0@12s+9' \
    --chaos 'start@12s' \
    --chaos 'stop:3@12s+2' \
    -- "$E2E_TRAINER" --steps 300 --sleep-ms 60 --log-every 50
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err"
if grep -q "dropped a message of type VIEW .*its sender is not this peer's coordinator" "$err"; then
    say "a member refused the view of the member that took over (the case under test)"
else
    say "no member refused the view of the member that took over (the case did not arise)"
fi
expect_exit0 "$err" 'rank 1' 'rank 3' 'peer +1'
expect_agreement "$log" 3
pass
