#!/usr/bin/env bash
# A swarm started by hand, the way peers on separate machines are: no
# launcher, the unchanged MPICH-built trainer with the library preloaded.
# The first peer founds the swarm (COLLAB_WORLD_SIZE=4) and prints its join
# line; three more peers join with COLLAB_INITIAL_PEERS copied from that
# log.  At step 30 the peer holding rank 2 is SIGKILLed; at step 60 a new
# peer is started by hand with the same join line.  The 3 survivors and
# the joiner must finish with bit-identical parameters, the joiner's step
# counter must start where the swarm was (not at 0), the loss must stay
# close to MPICH's, and a survivor's log must name the killed peer.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
export COLLAB_TIMEOUT=2
export COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0
limit=150
args=(--steps "$E2E_STEPS" --sleep-ms 100 --log-every 10)
trap hand_cleanup EXIT

hand_start p0 COLLAB_WORLD_SIZE=4
hand_wait_for "$E2E_LOG/p0.err" '^COLLAB_INITIAL_PEERS=' 30 || fail "the founder printed no join line"
addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/p0.err" | head -n 1)
say "join line: COLLAB_INITIAL_PEERS=$addr"
for k in 1 2 3; do
    hand_start "p$k" COLLAB_INITIAL_PEERS="$addr"
done

hand_wait_for "$E2E_LOG/p0.out" 'trainer: rank 0 step 30 ' 60 || fail "the swarm did not reach step 30"
victim=
for k in 0 1 2 3; do
    grep -q 'rank 2/4 listening' "$E2E_LOG/p$k.err" && victim=p$k
done
[ -n "$victim" ] || fail "no peer holds rank 2"
vpid=pid_$victim
say "SIGKILL $victim (rank 2, pid ${!vpid})"
kill -9 "${!vpid}"

hand_wait_for "$E2E_LOG/p0.out" 'trainer: rank 0 step 60 ' 60 || fail "the swarm did not reach step 60"
hand_start p4 COLLAB_INITIAL_PEERS="$addr"

status=0
for k in 0 1 2 3 4; do
    p=pid_p$k
    [ "p$k" = "$victim" ] && continue
    wait "${!p}"
    s=$?
    [ "$s" -eq 0 ] || { status=$s; say "p$k exited with status $s (137: killed at the ${limit} s limit)"; }
done
wait "${!vpid}" 2>/dev/null
hand_cleanup
trap - EXIT
[ "$status" -eq 0 ] || fail "a surviving peer or the joiner exited with status $status"

logs=()
for k in 0 1 2 3 4; do
    [ "p$k" = "$victim" ] || logs+=("$E2E_LOG/p$k.out")
done
cat "${logs[@]}" >"$E2E_LOG/all.out"
expect_agreement "$E2E_LOG/all.out" 4
grep -q 'rank 2/4 listening' "$E2E_LOG/p4.err" || fail "the joiner did not take the free rank 2"
first=$(start_steps "$E2E_LOG/p4.out")
[ -n "$first" ] && [ "$first" -gt 0 ] ||
    fail "the joiner's step counter started at '${first}', not where the swarm was"
grep -Eq 'rank 2 \([^)]*\) (failed|left|is late)|peer rank 2 failed' "$E2E_LOG"/p[0-4].err ||
    fail "no survivor's log names the killed rank 2"
expect_loss_near_reference "$E2E_LOG/all.out" 1.25
pass "joiner started at step $first"
