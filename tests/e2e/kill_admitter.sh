#!/usr/bin/env bash
# The admitter dies during an admission: in a swarm of 8, rank 2 is
# SIGKILLed at step 10, a new peer joins at step 20 (it takes rank 2), and
# rank 0 (the coordinator, which admits it) is SIGKILLed as soon as the
# joiner logs that it was admitted, before or while the view that puts it
# into the group reaches the others (the ADMIT and that view go to the
# members in rank order, so the later ranks are the likelier to miss the
# view; in about one run in six the new coordinator, rank 1, misses it).
# The joiner is admitted (again, by the new coordinator, when the first
# admission was lost), and it and the 6 survivors finish with
# bit-identical parameters; no call gives up waiting.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
collab run 150 -n 8 \
    --chaos 'kill:2@line:0:step 10 ' \
    --chaos 'start@line:0:step 20 ' \
    --chaos 'kill:0@line:+1:admitted at collective #' \
    -- "$E2E_TRAINER" --steps 150 --sleep-ms 60 --log-every 10 --log-all
log="$E2E_LOG/run.out"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
grep -q "collab-run: chaos: SIGKILL rank 0 " "$E2E_LOG/run.err" || fail "rank 0 was not killed"
! grep -q "gave up waiting" "$log" "$E2E_LOG/run.err" || fail "a peer gave up waiting"
expect_agreement "$log" 7
late=$(start_steps "$log" | awk '$1 > 0' | head -n 1)
[ -n "$late" ] || fail "no peer started past step 0: the joiner was not admitted"
done_lines "$log" | grep -q "done steps $late\.\." || fail "the joiner did not finish"
[ "$(done_lines "$log" | grep -c 'done steps 0\.\.150 ')" -eq 6 ] ||
    fail "expected the 6 survivors to finish steps 0..150"
pass "the joiner started at step $late after its admitter was killed; 7 peers agree after $elapsed s"
