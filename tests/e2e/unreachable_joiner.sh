#!/usr/bin/env bash
# A joiner the swarm cannot connect back to (a firewall or NAT in front of
# it): started by hand like peers on other machines, it announces an
# address where nothing accepts connections (COLLAB_ANNOUNCE to a port
# nobody listens on; its own listening socket is elsewhere), so it reaches
# the swarm but the swarm cannot reach it.
#  - With the default COLLAB_CLIENT_MODE=auto it must be told so by the
#    coordinator's dial-back, join as a client, train, and end with the
#    others' parameters; the coordinator's log names the address.
#  - With COLLAB_CLIENT_MODE=0 a second such joiner must stop within the
#    join deadline with an error naming its address and the remedies,
#    while the swarm trains on.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER
need E2E_PYTHON
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
export COLLAB_TIMEOUT=2
export COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0
limit=150
args=(--steps 80 --sleep-ms 100 --log-every 10)
trap hand_cleanup EXIT

# A port of loopback on which nothing listens (bound, then closed).
dead_port() {
    "$E2E_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

hand_start p0 COLLAB_WORLD_SIZE=3
hand_wait_for "$E2E_LOG/p0.err" '^COLLAB_INITIAL_PEERS=' 30 || fail "the founder printed no join line"
addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/p0.err" | head -n 1)
hand_start p1 COLLAB_INITIAL_PEERS="$addr"
port=$(dead_port)
hand_start p2 COLLAB_INITIAL_PEERS="$addr" COLLAB_ANNOUNCE="/ip4/127.0.0.1/tcp/$port"

hand_wait_for "$E2E_LOG/p2.err" 'joining as a client' 40 ||
    fail "the unreachable joiner was not told to join as a client"
hand_wait_for "$E2E_LOG/p0.out" 'trainer: rank 0 step 20 ' 60 || fail "the swarm did not reach step 20"

# The same, told not to fall back: an error within the join deadline
# (30 s), naming the address.  The swarm is full, so it could only ever
# be a standby; the reachability check comes first.
port2=$(dead_port)
t0=$SECONDS
env COLLAB_INITIAL_PEERS="$addr" COLLAB_ANNOUNCE="/ip4/127.0.0.1/tcp/$port2" \
    COLLAB_CLIENT_MODE=0 LD_PRELOAD="$preload" timeout 60 "$E2E_TRAINER" "${args[@]}" \
    >"$E2E_LOG/p3.out" 2>"$E2E_LOG/p3.err"
s3=$?
took=$((SECONDS - t0))
[ "$s3" -ne 0 ] && [ "$s3" -ne 124 ] || fail "the joiner with COLLAB_CLIENT_MODE=0 exited with $s3"
[ "$took" -le 35 ] || fail "the joiner with COLLAB_CLIENT_MODE=0 took $took s to stop"
grep -q "could not connect back to this peer at \"*/ip4/127.0.0.1/tcp/$port2" "$E2E_LOG/p3.err" ||
    fail "the error does not name the address: $(tail -n 3 "$E2E_LOG/p3.err")"
grep -q 'COLLAB_CLIENT_MODE=1 or auto' "$E2E_LOG/p3.err" || fail "the error names no remedy"
say "the joiner with COLLAB_CLIENT_MODE=0 stopped after $took s: $(grep -o 'could not connect back[^:]*' "$E2E_LOG/p3.err" | head -n 1)"

status=0
for k in 0 1 2; do
    p=pid_p$k
    wait "${!p}"
    s=$?
    [ "$s" -eq 0 ] || { status=$s; say "p$k exited with status $s"; }
done
hand_cleanup
trap - EXIT
[ "$status" -eq 0 ] || fail "a peer exited with status $status"
cat "$E2E_LOG"/p[0-2].out >"$E2E_LOG/all.out"
expect_agreement "$E2E_LOG/all.out" 3
grep -q "could not connect back to joiner \"*/ip4/127.0.0.1/tcp/$port" "$E2E_LOG"/p[01].err ||
    fail "the coordinator's log does not name the unreachable address"
pass "an unreachable joiner trained as a client; with COLLAB_CLIENT_MODE=0 one stopped in $took s"
