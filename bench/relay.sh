#!/usr/bin/env bash
# relay.sh - the rate a relaying collab-monitor achieves against its
# --relay-mbit limit (docs/monitor.md §8, docs/benchmarks.md).
#
#   bench/relay.sh [--build DIR] [--limits "20 80"] [--runs 5] [--bytes B]
#                  [--seconds S]
#
# Each run starts a monitor with --relay --relay-mbit L on loopback and two
# client-mode peers (COLLAB_CLIENT_MODE=1) that run allreduce_bench on
# B-byte buffers (default 1 MiB) for about S seconds (default 12): every
# byte between them goes through the relay.  After the group formed and 3
# s of warm-up, it reads collab_relay_bytes_total from the monitor's
# /metrics twice, 5 s apart; the rate achieved is the difference over the
# measured interval (RELAY bodies: sealed messages and their 72-byte
# routing fields, what the bucket counts).  The limits are interleaved,
# run after run; the table gives per limit the median rate (min..max),
# its ratio to the limit and the messages dropped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=$here/../build
limits="20 80"
runs=5
bytes=$((1 << 20))
seconds=12
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --limits) limits=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "relay.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
mon="$build/bin/collab-monitor"
bench="$build/bench/allreduce_bench"
lib="$build/lib/libmpicollab.so"
py=/usr/bin/python3
for f in "$mon" "$bench"; do
    [ -x "$f" ] || { echo "relay.sh: build $f first" >&2; exit 2; }
done
[ -f "$lib" ] || { echo "relay.sh: build $lib first" >&2; exit 2; }
work=$(mktemp -d /tmp/relay-bench.XXXXXX)
results="$work/results"
: >"$results"
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null; }
trap 'cleanup; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

metric() {
    "$py" - "http://127.0.0.1:$hport/metrics" "$1" <<'EOF'
import sys, urllib.request
try:
    body = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
except Exception:
    sys.exit(0)
for l in body.splitlines():
    if l.startswith(sys.argv[2] + " "):
        print(l.split()[1])
EOF
}

now() { "$py" -c 'import time; print("%.3f" % time.monotonic())'; }

# one_run LIMIT: appends "LIMIT 0 MBIT DROPPED" to $results.
one_run() {
    local limit=$1 port line b0 b1 t0 t1
    port=$((20000 + RANDOM % 20000))
    hport=$((20000 + RANDOM % 20000))
    rm -f "$work/m.db"*
    COLLAB_TIMEOUT=5 "$mon" --listen "/ip4/127.0.0.1/tcp/$port" --world-size 2 --relay \
        --relay-mbit "$limit" --http "127.0.0.1:$hport" --db "$work/m.db" \
        >"$work/m.out" 2>"$work/m.err" &
    pids=($!)
    wait_line "$work/m.err" '^COLLAB_INITIAL_PEERS=' 20 || { echo "relay.sh: no join line" >&2; return 1; }
    line=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$work/m.err" | head -n 1)
    for i in 0 1; do
        COLLAB_TIMEOUT=10 COLLAB_LOG=warn COLLAB_CLIENT_MODE=1 COLLAB_INITIAL_PEERS="$line" \
            LD_PRELOAD="$lib" "$bench" --min-bytes "$bytes" --max-bytes "$bytes" \
            --time "$seconds" --max-iters 100000 >"$work/c$i.out" 2>"$work/c$i.err" &
        pids+=($!)
    done
    wait_line "$work/m.err" 'formed the group' 30 || { echo "relay.sh: no group" >&2; return 1; }
    sleep 3
    b0=$(metric collab_relay_bytes_total)
    t0=$(now)
    sleep 5
    b1=$(metric collab_relay_bytes_total)
    t1=$(now)
    local dropped
    dropped=$(metric collab_relay_dropped_total)
    { cleanup; wait; } 2>/dev/null
    [ -n "$b0" ] && [ -n "$b1" ] || { echo "relay.sh: no metrics" >&2; return 1; }
    "$py" -c "print('$limit 0 %.2f ${dropped:-0}' % (($b1 - $b0) * 8 / ($t1 - $t0) / 1e6))" >>"$results"
    echo "relay.sh: limit $limit Mbit/s: $(tail -n 1 "$results" | awk '{print $3}') Mbit/s achieved, ${dropped:-0} dropped"
}

for r in $(seq "$runs"); do
    for l in $limits; do
        one_run "$l" || exit 1
    done
done
echo
echo "relay rate, $runs interleaved runs, 2 client-mode peers, all-reduce of $bytes bytes"
printf '%12s | %28s | %8s | %8s\n' "limit Mbit/s" "achieved Mbit/s median (min..max)" "ratio" "dropped"
for l in $limits; do
    read -r m lo hi <<<"$(bench_stat "$results" "$l" 0 3)"
    read -r dm dl dh <<<"$(bench_stat "$results" "$l" 0 4)"
    awk -v l="$l" -v m="$m" -v lo="$lo" -v hi="$hi" -v d="$dh" \
        'BEGIN {printf "%12d | %10.2f (%6.2f..%6.2f)      | %8.3f | %8d\n", l, m, lo, hi, m / l, d}'
done
