#!/usr/bin/env bash
# A peer told to join a swarm that cannot be reached stops with a clear
# error once its join deadline passes; it never founds a second swarm and
# MPI_Init never returns.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
id=$("${E2E_PYTHON:-python3}" -c '
a = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
n = int.from_bytes(bytes(range(1, 33)), "big"); s = ""
while n: n, r = divmod(n, 58); s = a[r] + s
print(s)')
# A loopback port nothing listens on: bind one, then release it.
port=$("${E2E_PYTHON:-python3}" -c '
import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
addr="/ip4/127.0.0.1/tcp/$port/p2p/$id"
run_logged join 150 env COLLAB_INITIAL_PEERS="$addr" LD_PRELOAD="$preload" "$E2E_TRAINER" --steps 5
[ "$status" -ne 0 ] || fail "the program succeeded without reaching any peer"
[ "$status" -ne 124 ] && [ "$status" -ne 137 ] || fail "no error within 150 s (MPI_Init hangs)"
! grep -q 'starts at step' "$E2E_LOG/join.out" || fail "MPI_Init returned without a swarm"
! grep -qi 'found no active peers\|training alone' "$E2E_LOG/join.out" "$E2E_LOG/join.err" ||
    fail "the peer founded a swarm of its own"
grep -q "COLLAB_INITIAL_PEERS\|$port" "$E2E_LOG/join.err" "$E2E_LOG/join.out" ||
    fail "the error names neither COLLAB_INITIAL_PEERS nor the address"
pass "stopped after $elapsed s: $(grep -h "COLLAB_INITIAL_PEERS\|$port" "$E2E_LOG/join.err" | head -n 1)"
