#!/usr/bin/env bash
# collab-monitor --relay (docs/monitor.md §8): the monitor is the only peer
# that accepts connections; three trainers in client mode reach each other
# only through it.
#  1. With --relay, coll_check (built with mpicc.mpich, unchanged, under
#     LD_PRELOAD) runs barrier, all-reduce, reduce, reduce-scatter, bcast,
#     gather, allgather, alltoall and point-to-point on the three clients;
#     every rank must find every result equal to the expected value
#     (exact comparisons), the monitor's /metrics must show bytes forwarded
#     (collab_relay_bytes_total > 0) and pass promtool (when installed), and
#     its log the relay's totals.
#     Then, in a new swarm, two client-mode example trainers (unchanged)
#     train through its relaying monitor and a third joins later: it must
#     be admitted into the running group (a client-mode admitter and
#     donors, through the relay) and all three end with bitwise equal
#     parameters.
#  2. Without --relay, a second client-mode trainer must be refused within
#     30 s with the error that names --relay (never hang).
# Where this runs as root and `ip netns` works, every process runs in a
# network namespace of its own on a bridge, and the clients' namespaces
# drop every inbound TCP SYN (iptables): nothing can connect to them.  Elsewhere it runs on loopback with COLLAB_CLIENT_MODE=1.  The mode
# is in the PASSED line.
. "$(dirname "$0")/lib.sh"
need E2E_MONITOR E2E_COLL_CHECK E2E_TRAINER
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
py=${E2E_PYTHON:-python3}
export COLLAB_TIMEOUT=3
limit=120
groups=barrier,allreduce,reduce,reduce-scatter-block,bcast,gather,allgather,alltoall,p2p
np=3
tag=rly$$
pids=()
netns=0

cleanup() {
    kill -9 "${pids[@]}" 2>/dev/null
    [ "$netns" = 1 ] && netns_del "$tag" 4
}
trap cleanup EXIT

# Namespace 0 holds the monitor (10.79.0.1); 1..3 the clients, whose
# input drops TCP segments with SYN set and ACK clear (new connections).
setup_netns() {
    [ "$(id -u)" -eq 0 ] && command -v iptables >/dev/null || return 1
    netns=1
    netns_add "$tag" 4 10.79.0 || return 1
    for i in 1 2 3; do
        ip netns exec "${tag}n$i" iptables -A INPUT -p tcp --syn -j DROP 2>/dev/null || return 1
    done
}

if setup_netns; then
    mode="network namespaces that drop inbound connections"
    mon_addr=10.79.0.1
else
    cleanup
    netns=0
    mode="loopback, client mode"
    mon_addr=127.0.0.1
fi
say "mode: $mode"

# ns I: sets the array $ns to the prefix that runs a command in namespace
# I (empty without namespaces), so that `"${ns[@]}" cmd &` gives the
# command's own pid in $! (ip netns exec execs it).
ns() {
    ns=()
    [ "$netns" = 1 ] && ns=(ip netns exec "${tag}n$1")
    return 0
}

# in_ns I cmd...: runs cmd in namespace I (or here), in the foreground.
in_ns() {
    local i=$1
    shift
    if [ "$netns" = 1 ]; then
        ip netns exec "${tag}n$i" "$@"
    else
        "$@"
    fi
}

wait_for() {
    local i
    for i in $(seq $(($3 * 10))); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# monitor NAME [flags]: the monitor in namespace 0; sets $line.
monitor() {
    local name=$1
    shift
    port=$((20000 + RANDOM % 20000))
    hport=$((20000 + RANDOM % 20000))
    rm -f "$E2E_LOG/$name.db"*
    say "[$name] collab-monitor $*"
    ns 0
    "${ns[@]}" "$E2E_MONITOR" --listen "/ip4/$mon_addr/tcp/$port" --world-size "$np" \
        --http "127.0.0.1:$hport" --db "$E2E_LOG/$name.db" "$@" \
        >"$E2E_LOG/$name.out" 2>"$E2E_LOG/$name.err" &
    mpid=$!
    pids+=($mpid)
    wait_for "$E2E_LOG/$name.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "[$name] printed no join line"
    line=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/$name.err" | head -n 1)
}

# client NAME I: a client-mode coll_check in namespace I.
client() {
    ns "$2"
    "${ns[@]}" env COLLAB_CLIENT_MODE=1 COLLAB_INITIAL_PEERS="$line" LD_PRELOAD="$preload" \
        timeout -s KILL "$limit" "$E2E_COLL_CHECK" --quick --groups "$groups" \
        >"$E2E_LOG/$1.out" 2>"$E2E_LOG/$1.err" &
    pids+=($!)
    eval "pid_$1=$!"
}

metric() {
    in_ns 0 "$py" - "http://127.0.0.1:$hport/metrics" "$1" <<'EOF'
import sys, urllib.request
try:
    body = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
except Exception as e:
    sys.exit("GET %s: %s" % (sys.argv[1], e))
for l in body.splitlines():
    if l.startswith(sys.argv[2] + " "):
        print(l.split()[1])
EOF
}

# 1. Through the relay.
monitor relay --relay --relay-mbit 200
t0=$(date +%s)
for i in 1 2 3; do client "c$i" "$i"; done
for i in 1 2 3; do
    p=pid_c$i
    wait "${!p}"
    rc=$?
    [ "$rc" -eq 0 ] || fail "client c$i exited with $rc (see c$i.out/.err)"
done
t1=$(date +%s)
# Rank 0 prints the summary of all ranks; every rank exited 0 above.
summary=$(cat "$E2E_LOG"/c[123].out | sed -n 's/^coll_check: PASS: //p')
[ -n "$summary" ] || fail "no rank printed coll_check's PASS line"
grep -q '3 ranks' "$E2E_LOG"/c[123].out || fail "coll_check did not run on 3 ranks"
for i in 1 2 3; do
    grep -q 'joined in client mode' "$E2E_LOG/c$i.err" || fail "c$i did not join in client mode"
done
bytes=$(metric collab_relay_bytes_total)
[ -n "$bytes" ] && [ "$bytes" -gt 0 ] || fail "/metrics shows no relayed bytes ($bytes)"
dropped=$(metric collab_relay_dropped_total)
if command -v promtool >/dev/null 2>&1; then
    in_ns 0 "$py" -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$hport/metrics', timeout=5).read().decode(), end='')" \
        >"$E2E_LOG/metrics.txt" || fail "GET /metrics failed"
    promtool check metrics <"$E2E_LOG/metrics.txt" || fail "promtool rejects /metrics with the relay's totals"
fi
kill -TERM "$mpid"
wait "$mpid"
grep -q 'monitor: stopping' "$E2E_LOG/relay.err" || fail "the monitor did not stop on SIGTERM"
grep -q 'relay: .* MB forwarded in [0-9]* messages' "$E2E_LOG/relay.err" ||
    fail "the monitor did not log the relay's totals"
# The example trainer, unchanged, through a relay of a swarm of its own:
# two form the group, a third joins it later and is admitted at a step
# boundary by a client-mode admitter, with client-mode donors.
# With namespaces, the third trainer sets no client mode (auto, the
# default) and listens on its namespace's address, which drops inbound
# connections: the monitor's dial-back gets no answer, and the trainer
# must join as a client by itself (issue: a peer behind a firewall).
monitor trainers --relay
steps=200
[ "$netns" = 1 ] && steps=700
trainer() {
    ns "$1"
    local mode=(COLLAB_CLIENT_MODE=1)
    [ "$netns" = 1 ] && [ "$1" = 3 ] &&
        mode=(COLLAB_LISTEN="/ip4/10.79.0.$(($1 + 1))/tcp/$((20000 + RANDOM % 20000))")
    "${ns[@]}" env "${mode[@]}" COLLAB_MATCHMAKING_TIME=2 COLLAB_INITIAL_PEERS="$line" \
        LD_PRELOAD="$preload" timeout -s KILL "$limit" "$E2E_TRAINER" --steps "$steps" \
        --sleep-ms 30 --log-every 50 --log-all >"$E2E_LOG/t$1.out" 2>"$E2E_LOG/t$1.err" &
    pids+=($!)
    eval "tpid_$1=$!"
}
trainer 1
trainer 2
wait_for "$E2E_LOG/t1.out" 'trainer: rank [0-9]* step 50 ' 40 || fail "the first two trainers did not reach step 50"
trainer 3
for i in 1 2 3; do
    p=tpid_$i
    wait "${!p}" || fail "trainer t$i failed (see t$i.out/.err)"
done
cat "$E2E_LOG"/t[123].out "$E2E_LOG"/t[123].err >"$E2E_LOG/trainers.log"
late=$(start_steps "$E2E_LOG/t3.out" "$E2E_LOG/t3.err" | head -n 1)
[ -n "$late" ] && [ "$late" -gt 0 ] || fail "the late trainer did not join the running group (starts at step '$late')"
expect_agreement "$E2E_LOG/trainers.log" 3
if [ "$netns" = 1 ]; then
    grep -q 'joining as a client, which only connects out' "$E2E_LOG/t3.err" ||
        fail "the trainer behind the dropping firewall did not switch to client mode by itself"
    say "the trainer behind a firewall that drops inbound connections joined as a client by itself"
fi
say "the late trainer joined at step $late"
kill -TERM "$mpid"
wait "$mpid"
say "3 client-mode ranks passed $summary in $((t1 - t0)) s; relayed $bytes bytes, dropped $dropped"

# 2. Without the relay: refused, with the remedy, quickly.
monitor norelay
client d1 1
wait_for "$E2E_LOG/norelay.err" 'rank 0 joined' 30 || fail "the first client did not join"
client d2 2
p=pid_d2
t0=$(date +%s)
wait "${!p}"
rc=$?
t1=$(date +%s)
[ "$rc" -ne 0 ] || fail "a second client joined a swarm through which it reaches nobody"
[ "$rc" -ne 137 ] || fail "the second client hung until it was killed"
grep -q 'collab-monitor --relay' "$E2E_LOG/d2.err" || fail "the error does not name --relay"
kill -9 "$pid_d1" "$mpid" 2>/dev/null
pass "$mode; without --relay the second client stopped after $((t1 - t0)) s: $(grep -o 'the swarm refused[^;]*' "$E2E_LOG/d2.err" | head -n 1)"
