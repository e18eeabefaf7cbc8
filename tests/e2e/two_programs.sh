#!/usr/bin/env bash
# Two different programs in one run id.  A swarm of world size 4 trains
# with 3 peers (rank 3 is left free); a different program (the trainer
# with other layer sizes, so other collective signatures) is then started
# by hand with the swarm's join line and takes rank 3.  DESIGN §4: a
# member whose signature differs is evicted, never averaged in.  So:
#   - the 3 original peers finish with bit-identical parameters, equal to
#     those of the same swarm run without the intruder;
#   - the intruder finds out at admission that its start-up collectives
#     differ from the swarm's, says so in an error line, leaves the swarm
#     and ends with an MPI error (MPI_ERR_OTHER, fatal by default); it
#     never hangs and is never averaged in.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
export COLLAB_TIMEOUT=2
steps=80
args=(--steps "$steps" --sleep-ms 50 --log-every 10)

# Every peer collab-run starts runs this; the original rank 3 ends at once
# (before MPI_Init), so that rank stays free for the intruder.
peer="$E2E_LOG/peer.sh"
cat >"$peer" <<PEER || fail "cannot write $peer"
#!/usr/bin/env bash
[ "\${COLLAB_RANK:-}" = 3 ] && exit 0
exec "$E2E_TRAINER" "\$@"
PEER
chmod +x "$peer"

# 1. The swarm alone.
collab base 100 -n 4 --abi mpich -- "$peer" "${args[@]}"
[ "$status" -eq 0 ] || E2E_FAILED_RUNS=base fail "the swarm alone: collab-run exited with status $status"
E2E_FAILED_RUNS=base expect_agreement "$E2E_LOG/base.out" 3
[ "$(count_done "$E2E_LOG/base.out")" -eq 3 ] || E2E_FAILED_RUNS=base fail "the swarm alone: 3 peers should finish"
want=$(checksums "$E2E_LOG/base.out")

# 2. The same swarm, and the other program joining it while it trains.
rm -f "$E2E_LOG/swarm.status"
(
    collab swarm 100 -n 4 --abi mpich -- "$peer" "${args[@]}"
    echo "$status" >"$E2E_LOG/swarm.status"
) &
swarm=$!
addr=
# Up to 90 s: the first group waits up to 30 s for the rank whose slot
# the other program takes (collab-run's matchmaking window).
for _ in $(seq 900); do
    [ -s "$E2E_LOG/swarm.status" ] && break
    if grep -q 'trainer: rank 0 step 20 ' "$E2E_LOG/swarm.out" 2>/dev/null; then
        addr=$(sed -n 's/^\[0\] COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/swarm.err" | head -n 1)
        break
    fi
    sleep 0.1
done
if [ -z "$addr" ]; then
    wait "$swarm"
    E2E_FAILED_RUNS=swarm fail "the swarm never printed rank 0's join line and step 20"
fi
say "intruder joins $addr"
run_logged intruder 100 env COLLAB_INITIAL_PEERS="$addr" LD_PRELOAD="$preload" \
    "$E2E_TRAINER" --hidden 16 "${args[@]}"
istatus=$status
wait "$swarm"
status=$(cat "$E2E_LOG/swarm.status" 2>/dev/null || echo missing)
[ "$status" = 0 ] || fail "the swarm with the intruder: collab-run exited with status $status"
[ "$istatus" -ne 124 ] && [ "$istatus" -ne 137 ] || fail "the intruder did not end within 100 s"
grep -q 'rank 3/4 listening' "$E2E_LOG/intruder.err" || fail "the intruder did not join the swarm as rank 3"
grep -q 'this program differs from the one the swarm runs under COLLAB_RUN_ID' \
    "$E2E_LOG/intruder.err" || fail "the intruder's log does not say that it runs another program"
[ "$istatus" -ne 0 ] || fail "the intruder ended with status 0; its MPI call should have failed"
grep -q 'MPI_ERR_OTHER' "$E2E_LOG/intruder.err" || fail "the intruder's MPI call did not fail with MPI_ERR_OTHER"
log="$E2E_LOG/swarm.out"
[ "$(count_done "$log")" -eq 3 ] || fail "expected the 3 original peers to finish, got $(count_done "$log")"
expect_agreement "$log" 3
got=$(checksums "$log")
[ "$got" = "$want" ] ||
    fail "the intruder changed the swarm's parameters: checksum $got, without it $want"
pass "originals agree with the run without the intruder ($want); intruder status $istatus"
