#!/usr/bin/env bash
# Stops around COLLAB_TIMEOUT, where a stopped peer and the others may see
# each other as silent at the same time.  With the default COLLAB_TIMEOUT
# (5 s): rank 2 is stopped for 5.5 s and, while it is stopped, the
# coordinator (rank 0) for 3 s.  A peer that was not running must never
# blame the others for its own silence: no peer may take the others out
# and go on as a swarm of its own (two swarms would end with different
# parameters).  All 4 must finish with bit-identical parameters.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
unset COLLAB_TIMEOUT
collab run 150 -n 4 \
    --chaos 'stop:2@line:0:step 30 +5.5' \
    --chaos 'stop:0@line:0:step 40 +3' \
    -- "$E2E_TRAINER" --steps "$E2E_STEPS" --sleep-ms 60 --log-every 10
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
expect_agreement "$log" 4
for r in 0 1 3; do
    ! grep -q "^\[2\] .*rank $r (.*) failed: it went silent" "$err" ||
        fail "rank 2 took rank $r out for a silence its own stop explains"
done
expect_loss_near_reference "$log" 1.25
pass
