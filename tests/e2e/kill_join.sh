#!/usr/bin/env bash
# One of 4 peers is SIGKILLed midway and a new peer joins later: the three
# survivors and the joiner finish with bit-identical parameters, the
# joiner's first step is the swarm's step at admission (not 0), and the
# loss stays close to a fault-free run on MPICH.
#   kill_join.sh [persistent]: with "persistent" the trainer reduces its
#   gradients with persistent all-reduces that odd ranks start in reverse
#   order (they match by initialisation order; the world stream, which
#   admission follows, keeps one order).
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
extra=()
[ "${1:-}" = persistent ] && extra=(--persistent)
collab run 150 -n 4 \
    --chaos 'kill:2@line:0:step 30 ' \
    --chaos 'start@line:0:step 60 ' \
    -- "$E2E_TRAINER" --steps "$E2E_STEPS" --sleep-ms 100 --log-every 10 "${extra[@]}"
log="$E2E_LOG/run.out"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
expect_agreement "$log" 4
grep -q 'rank 2 pid [0-9]* starts at step 0' "$log" || fail "rank 2 did not start"
late=$(start_steps "$log" | awk '$1 > 0' | head -n 1)
[ -n "$late" ] || fail "no peer started past step 0: the joiner did not get the swarm's step"
# The killed peer must not be among those that finished: 3 originals + 1.
[ "$(done_lines "$log" | grep -c 'done steps 0\.\.')" -eq 3 ] || fail "expected 3 peers to finish from step 0"
done_lines "$log" | grep -q "done steps $late\.\." || fail "the joiner did not finish"
expect_loss_near_reference "$log" 1.25
pass "joiner started at step $late"
