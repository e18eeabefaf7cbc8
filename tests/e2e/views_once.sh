#!/usr/bin/env bash
# Each view goes out once: 4 peers with debug logs, rank 2 SIGKILLed at
# step 10, a new peer at step 30.  Every view a peer publishes
# ("view N (group generation G) published") has an epoch above the one
# before from that peer, so none goes out twice.  The join that completes
# the world, which forms the group from within its own commit, used to
# send the group's view twice.  The four that finish agree.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2 COLLAB_LOG=debug
collab run 120 -n 4 \
    --chaos 'kill:2@line:0:step 10 ' \
    --chaos 'start@line:0:step 30 ' \
    -- "$E2E_TRAINER" --steps 60 --sleep-ms 100 --log-every 10
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
expect_agreement "$E2E_LOG/run.out" 4
# "[tag] [collab] rank R: debug: view N (...) published: ..." -> "tag N"
pub=$(sed -n 's/^\[\([^]]*\)\] .*debug: view \([0-9]*\) (group generation [0-9]*) published.*/\1 \2/p' \
    "$E2E_LOG/run.err")
n=$(printf '%s\n' "$pub" | grep -c .)
# The founder publishes the views of the start, the kill and the join.
[ "$n" -ge 4 ] || fail "only $n published views in the log: $(printf '%s; ' "$pub")"
bad=$(printf '%s\n' "$pub" | awk '$1 in last && $2 <= last[$1] { print "peer [" $1 "] published view " $2 " after view " last[$1] } { last[$1] = $2 }')
[ -z "$bad" ] || fail "a view went out more than once: $bad"
pass "$n views published, each once"
