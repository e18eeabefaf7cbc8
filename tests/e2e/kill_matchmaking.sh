#!/usr/bin/env bash
# A peer is SIGKILLed during matchmaking, before the first collective (the
# broadcast of the initial parameters) completes:
#   member  rank 3, killed as soon as it prints its join line (the others
#           may already count it in the group they form)
#   leader  rank 0, the founder and coordinator, killed as it closes the
#           group; the others take over without its parameters
# The three others still form a group, train and finish with bit-identical
# parameters; nothing hangs.
. "$(dirname "$0")/lib.sh"
role=${1:?usage: kill_matchmaking.sh member|leader}
case $role in
member) victim=3 spec='kill:3@line:3:rank 3/4 listening; other peers can join' ;;
leader) victim=0 spec='kill:0@line:0:formed the group' ;;
*) fail "unknown role $role" ;;
esac
need E2E_RUN E2E_TRAINER
export COLLAB_TIMEOUT=2
# A long matchmaking window: the group must close without waiting for it
# to pass in vain, or for the dead peer.
export COLLAB_MATCHMAKING_TIME=4
collab run 120 -n 4 --chaos "$spec" \
    -- "$E2E_TRAINER" --steps 60 --sleep-ms 20 --log-every 10 --log-all
log="$E2E_LOG/run.out"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
grep -q "collab-run: chaos: SIGKILL rank $victim " "$E2E_LOG/run.err" ||
    fail "rank $victim was not killed"
! grep -q "trainer: rank $victim pid [0-9]* starts at step" "$log" ||
    fail "rank $victim completed the first collective before it was killed (too late for this test)"
expect_agreement "$log" 3
[ "$(count_done "$log")" -eq 3 ] || fail "expected the 3 others to finish, got $(count_done "$log")"
[ "$(done_lines "$log" | grep -c 'done steps 0\.\.60 ')" -eq 3 ] ||
    fail "not every survivor trained steps 0..60"
! done_lines "$log" | grep -q "rank $victim pid" || fail "the killed rank $victim reported an end"
pass "rank $victim killed in matchmaking; 3 peers agree after $elapsed s"
