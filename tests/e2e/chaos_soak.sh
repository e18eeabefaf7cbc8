#!/usr/bin/env bash
# A short, bounded chaos run with a fixed schedule: kills (the leader
# included), a stop, and two joiners.  No hang, no crash, and every peer
# that finishes holds the same parameters.  bench/soak.sh is the long,
# randomised version.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
collab run 180 -n 4 \
    --chaos kill:1@4s \
    --chaos start@7s \
    --chaos stop:3@9s+6 \
    --chaos kill:0@14s \
    --chaos start@16s \
    -- "$E2E_TRAINER" --steps 300 --sleep-ms 80 --log-every 25 --log-all
log="$E2E_LOG/run.out"
[ "$status" -ne 124 ] || fail "the run hung (collab-run timed out)"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status (a peer crashed or failed)"
expect_agreement "$log" 4
pass
