#!/usr/bin/env bash
# The trainer on 4 peers with COLLAB_TARGET_GROUP=2: world all-reduces run
# in 2 groups of 2 that change every collective (Moshpit-style).  Every
# peer finishes, the logs show averaging with 2 peers, and the final loss
# stays close to MPICH's (the peers' parameters agree within a group per
# collective, not across the swarm, so checksums may differ).
# With "join": rank 3 is SIGKILLed at step 30 and a new peer joins at step
# 60; it takes the state of one member (the admitter) and finishes too.
# Matchmaking closes the group at 2 members, so peers that start later
# are admitted at step boundaries and take their state the same way.
. "$(dirname "$0")/lib.sh"
variant=${1:-plain}
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
export COLLAB_TARGET_GROUP=2
chaos=()
if [ "$variant" = join ]; then
    chaos=(--chaos 'kill:3@line:0:step 30 ' --chaos 'start@line:0:step 60 ')
fi
collab run 180 -n 4 "${chaos[@]}" \
    -- "$E2E_TRAINER" --steps "$E2E_STEPS" --sleep-ms 20 --log-every 10
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err" # the library's log lines
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
grep -q 'all-reduces run in 2 groups, regrouped every collective' "$err" ||
    fail "no peer said that all-reduces run in 2 groups"
grep -q 'averaged [0-9]* tensors\? ([0-9.]* MB) with 2 peers' "$err" ||
    fail "no all-reduce ran with 2 peers"
if grep -q 'averaged [0-9]* tensors\? ([0-9.]* MB) with [34] peers' "$err" &&
    ! grep -q 'all-reduces run in one group again' "$err"; then
    fail "an all-reduce ran with more than COLLAB_TARGET_GROUP peers while the groups were split"
fi
if [ "$variant" = join ]; then
    # Peers that arrive after the group formed (at COLLAB_TARGET_GROUP
    # members) are admitted later, so only the newcomer is known to start
    # past step 60.
    late=$(start_steps "$log" | sort -n | tail -n 1)
    [ -n "$late" ] && [ "$late" -ge 60 ] ||
        fail "no peer started at step 60 or later: the joiner did not get the swarm's step"
    grep -q 'taking the state from rank [0-9]* alone' "$err" ||
        fail "no joiner took its state from a single member"
    [ "$(count_done "$log")" -eq 4 ] ||
        fail "$(count_done "$log") peers finished, expected 4 (3 survivors and the joiner)"
    done_lines "$log" | grep -q "done steps $late\.\." || fail "the joiner did not finish"
else
    [ "$(count_done "$log")" -eq 4 ] || fail "$(count_done "$log") peers finished, expected 4"
fi
expect_loss_near_reference "$log" 1.25
say "$(checksums "$log" | wc -l) distinct checksums among $(count_done "$log") peers"
pass
