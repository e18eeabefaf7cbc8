#!/usr/bin/env bash
# wan.sh - all-reduce over emulated internet links: N real peers, each in
# a network namespace of its own joined to one bridge, every link limited
# by tc's tbf in both directions (netem is not available), the
# MPICH-built allreduce_bench with the library preloaded in each.  Prints
# the time of one all-reduce per size against the best bound for the
# links, and cleans up after itself.  Needs root (ip netns, tc).
#
#   bench/wan.sh [--np 4] [--rate 100] [--slow RATE] [--up-only]
#                [--sizes "16"] [--compression none|fp16|int8|adaptive]
#                [--runs 3] [--iters 2] [--declare | --measure] [--queue MS] [--tcp]
#                [--tcp-mode all|balanced|ring] [--trace DIR] [--logs DIR] [--build DIR]
#                [--stripes N] [--flow-cap MBIT]
#
#   --rate    every link's rate in Mbit/s, both ways
#   --slow    the last peer's link at RATE Mbit/s instead (one slow link)
#   --up-only the slow link is slow on its upload only (a home connection);
#             its download runs at --rate
#   --sizes   all-reduce sizes in MiB of floats
#   --runs    runs per size (a fresh swarm each); the median and min..max
#   --iters   timed all-reduces per run (2 by default), one after the
#             other after 20 warm-up ones; the time is the slowest peer's
#             for all of them, divided by their number
#   --declare every peer declares its link's rate (COLLAB_BANDWIDTH_MBIT),
#             so that the butterfly sizes its parts by them
#   --measure every peer measures its upload instead
#             (COLLAB_BANDWIDTH_MBIT=measure, the library's default); with
#             neither, figures are off (0) and parts equal
#   --queue   each link's queue in ms of its rate (tbf's latency; 100 by
#             default: 1.25 MB at 100 Mbit/s, nothing dropped; with a
#             shorter one TCP drops a little, and ACKs wait less behind data)
#   --tcp     before each run, the same traffic over raw TCP without
#             mpicollab (bench/wan_tcp.py: every peer sends 2S/n to every
#             other at once): what the links give; its median is printed
#             as "tcp s" beside the bound, and mpicollab's median ÷ it
#   --tcp-mode how --tcp sends: all (default: every peer to every other,
#             one thread per connection, as TCP shares the upload),
#             balanced (one thread that keeps every connection within
#             512 KiB of the one that sent least: equal shares of each
#             upload), ring (one connection per peer, to the next, carrying
#             2(n-1)/n x S: a ring all-reduce's traffic without its waits)
#   --trace   write every peer's link counters every 50 ms during each
#             run to DIR/run<k>.p<i> (time, rx bytes, tx bytes)
#   --logs    keep every peer's output of each run in DIR/run<k>/ (rank
#             0 logs at info: the measured figures the coordinator takes)
#   --stripes every peer opens N connections per link (COLLAB_STRIPES)
#   --flow-cap every TCP connection a peer opens uploads at most MBIT
#             Mbit/s, within its link's rate: a link that one connection
#             cannot fill, as behind a per-flow policer, or with one
#             stream's window on a long path.  Each namespace's outgoing
#             connections take their ports from 256 of its own
#             (ip_local_port_range), and the upload's qdisc is htb with
#             one class of MBIT per port under one of the link's rate
#             (u32 filters on the source port)
#
# Bounds (S bytes, n peers, B the common rate, b the slow one):
#   equal links      2(n-1)/n * S / B   (what each link must carry in a
#                                        bandwidth-optimal all-reduce)
#   one slow link    max(2(n-1)/n * S / B, S / b): the slow peer must at
#                    least upload its own input and download the result,
#                    over its own link, both ways at once
#   slow upload only max(2(n-1)/n * S / B, S / b): it must upload its input
# Compression divides what travels but not the bound printed, so fp16's
# ideal is 0.5 and int8's 0.25 of the fp32 bound.  With adaptive (which
# needs --declare) only the slow peer's uploads shrink.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build="$here/../build" np=4 rate=100 slow='' sizes=16 comp=none runs=3 declare=0 uponly=0
tcp=0 tcpmode=all trace='' queue=100 iters=2 logs= stripes=1 flowcap=
while [ $# -gt 0 ]; do
    case "$1" in
    --np) np=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --slow) slow=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --compression) comp=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --declare) declare=1; shift ;;
    --measure) declare=2; shift ;;
    --up-only) uponly=1; shift ;;
    --tcp) tcp=1; shift ;;
    --tcp-mode) tcpmode=$2; tcp=1; shift 2 ;;
    --queue) queue=$2; shift 2 ;;
    --trace) trace=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --stripes) stripes=$2; shift 2 ;;
    --flow-cap) flowcap=$2; shift 2 ;;
    -h | --help) sed -n '2,62p' "$0"; exit 0 ;;
    *) echo "wan.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$build/bench/allreduce_bench"
lib="$build/lib/libmpicollab.so"
[ -x "$bench" ] && [ -f "$lib" ] || { echo "wan.sh: build $build first (allreduce_bench, libmpicollab.so)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "wan.sh: needs root (ip netns, tc)" >&2; exit 2; }
[ "$np" -ge 2 ] && [ "$np" -le 32 ] || { echo "wan.sh: --np 2..32" >&2; exit 2; }
tag=wan$$
work=$(mktemp -d /tmp/wan.XXXXXX)

trap 'netns_del "$tag" "$np"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# --flow-cap: namespace $1's device $2 uploads at $3 Mbit/s in all, and
# each of its outgoing TCP connections (one source port each, of the 256
# it may use) at $flowcap.  A queue of $queue ms per class, as tbf's.
flow_cap() {
    local ns=$1 dev=$2 r=$3 k port lim
    ip netns exec "$ns" sysctl -q -w net.ipv4.ip_local_port_range="40000 40255" \
        net.ipv4.tcp_tw_reuse=1 || return 1
    lim=$((flowcap * 1000000 / 8 * queue / 1000 / 1500 + 16))
    {
        echo "qdisc add dev $dev root handle 1: htb default 2"
        echo "class add dev $dev parent 1: classid 1:1 htb rate ${r}mbit ceil ${r}mbit"
        echo "class add dev $dev parent 1:1 classid 1:2 htb rate ${r}mbit ceil ${r}mbit"
        for k in $(seq 0 255); do
            port=$((40000 + k))
            printf 'class add dev %s parent 1:1 classid 1:%x htb rate %smbit ceil %smbit\n' \
                "$dev" $((0x100 + k)) "$flowcap" "$flowcap"
            printf 'qdisc add dev %s parent 1:%x pfifo limit %d\n' "$dev" $((0x100 + k)) "$lim"
            printf 'filter add dev %s parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff match ip sport %d 0xffff flowid 1:%x\n' \
                "$dev" "$port" $((0x100 + k))
        done
    } >"$work/tc.$ns"
    tc -n "$ns" -batch "$work/tc.$ns" 2>&1 | grep -v 'quantum' >&2
    tc -n "$ns" qdisc show dev "$dev" | grep -q htb
}

# The bridge and one namespace per peer: veth ${tag}h$i (bridge side,
# limits the peer's download) and p$i inside (limits its upload).
netns_add "$tag" "$np" 10.77.0 || exit 1
for i in $(seq 0 $((np - 1))); do
    ns=${tag}n$i
    r=$rate
    [ -n "$slow" ] && [ "$i" -eq $((np - 1)) ] && r=$slow
    down=$r
    [ "$uponly" -eq 1 ] && down=$rate
    burst=$((r * 1000000 / 8 / 250)) # 4 ms of traffic, at least a few frames
    [ "$burst" -lt 16000 ] && burst=16000
    dburst=$((down * 1000000 / 8 / 250))
    [ "$dburst" -lt 16000 ] && dburst=16000
    if [ -n "$flowcap" ]; then
        flow_cap "$ns" p$i "$r" || exit 1
    else
        tc -n "$ns" qdisc add dev p$i root tbf rate "${r}mbit" burst "$burst" latency "${queue}ms" || exit 1
    fi
    tc qdisc add dev "${tag}h$i" root tbf rate "${down}mbit" burst "$dburst" latency "${queue}ms" || exit 1
done

bound() { # bytes -> seconds
    "${PYTHON:-/usr/bin/python3}" - "$1" "$np" "$rate" "${slow:-0}" <<'EOF'
import sys
s, n, b, slow = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) * 1e6 / 8, float(sys.argv[4]) * 1e6 / 8
t = 2 * (n - 1) / n * s / b
if slow > 0:
    t = max(t, s / slow)
print(f"{t:.4f}")
EOF
}

# What peer $1 declares with --declare: its link's rate; with --measure
# "measure"; else 0 (none).
declared() {
    if [ "$declare" -eq 0 ]; then echo 0
    elif [ "$declare" -eq 2 ]; then echo measure
    elif [ -n "$slow" ] && [ "$1" -eq $((np - 1)) ]; then echo "$slow"
    else echo "$rate"; fi
}

py=${PYTHON:-/usr/bin/python3}
# Raw TCP, the all-reduce's traffic of $1 bytes without mpicollab: the
# slowest peer's seconds.
tcp_run() {
    local per=$(($1 * 2 / np)) start i
    start=$(awk -v t="$(date +%s.%N)" 'BEGIN { printf "%.3f", t + 1.5 }')
    for i in $(seq 0 $((np - 1))); do
        ip netns exec "${tag}n$i" env WAN_TCP_MODE="$tcpmode" \
            "$py" "$here/wan_tcp.py" "$i" "$np" "$per" "$start" >"$work/t$i.out" &
    done
    wait
    cat "$work"/t*.out | sort -g | tail -n 1
}

# Link counters of every peer every 50 ms into $1.p<i> until killed.
trace_start() {
    local i
    tpids=()
    for i in $(seq 0 $((np - 1))); do
        ip netns exec "${tag}n$i" "$py" "$here/wan_tcp.py" trace "$1.p$i" >/dev/null &
        tpids+=($!)
    done
}

# One swarm: rank 0 founds it in namespace 0, the others join it; prints
# the latency (seconds) of the size from rank 0's table.
one_run() {
    local bytes=$1 i addr pids=()
    [ -n "$trace" ] && trace_start "$trace/run$2"
    # The join line is read from r0.err: the last run's must be gone
    # before rank 0 (started in the background) opens it anew.
    rm -f "$work/r0.err"
    local env=(COLLAB_WORLD_SIZE="$np" COLLAB_MATCHMAKING_TIME=30 COLLAB_TIMEOUT=10
               COLLAB_COMPRESSION="$comp" COLLAB_LOG=${WAN_LOG:-warn} COLLAB_STRIPES="$stripes")
    ip netns exec "${tag}n0" env "${env[@]}" COLLAB_BANDWIDTH_MBIT="$(declared 0)" \
        COLLAB_LISTEN=/ip4/10.77.0.1/tcp/4000 \
        COLLAB_LOG=${WAN_LOG:-info} LD_PRELOAD="$lib" "$bench" --min-bytes "$bytes" --max-bytes "$bytes" \
        --time 0.1 --max-iters "$iters" >"$work/r0.out" 2>"$work/r0.err" &
    pids+=($!)
    for _ in $(seq 100); do
        addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$work/r0.err" 2>/dev/null | head -n 1)
        [ -n "$addr" ] && break
        sleep 0.1
    done
    [ -n "$addr" ] || { echo "wan.sh: the founder printed no join line" >&2; kill -9 "${pids[@]}"; return 1; }
    for i in $(seq 1 $((np - 1))); do
        ip netns exec "${tag}n$i" env "${env[@]}" COLLAB_BANDWIDTH_MBIT="$(declared "$i")" \
            COLLAB_LISTEN="/ip4/10.77.0.$((i + 1))/tcp/4000" \
            COLLAB_INITIAL_PEERS="$addr" LD_PRELOAD="$lib" "$bench" --min-bytes "$bytes" \
            --max-bytes "$bytes" --time 0.1 --max-iters "$iters" >"$work/r$i.out" 2>"$work/r$i.err" &
        pids+=($!)
    done
    local st=0
    for p in "${pids[@]}"; do wait "$p" || st=1; done
    [ -n "$trace" ] && kill "${tpids[@]}" 2>/dev/null
    [ -n "$logs" ] && mkdir -p "$logs/run$2" && cp "$work"/r*.out "$work"/r*.err "$logs/run$2/"
    [ "$st" -eq 0 ] || { echo "wan.sh: a peer failed (logs in $work)" >&2; tail -n 3 "$work"/r*.err >&2; return 1; }
    awk '/^bench: [0-9]/ { printf "%.6f\n", $4 / 1e6 }' "$work/r0.out"
}

echo "wan.sh: $np peers, links ${rate} Mbit/s (queues ${queue} ms)${flowcap:+, each connection at most ${flowcap} Mbit/s}, $stripes connection(s) per link${slow:+ (the last one ${slow} Mbit/s$([ "$uponly" -eq 1 ] && echo ' up, '"$rate"' down'))}, compression $comp, $runs runs$([ "$declare" -eq 1 ] && echo ', rates declared')$([ "$declare" -eq 2 ] && echo ', rates measured')"
[ -n "$trace" ] && mkdir -p "$trace"
if [ "$tcp" -eq 1 ]; then
    printf '%6s %8s %22s %8s %22s %8s %6s %6s\n' "MiB" "bound s" "tcp s (min..max)" "÷ bound" "median s (min..max)" "÷ bound" "÷ tcp" "check"
else
    printf '%10s %12s %22s %10s %8s\n' "MiB" "bound s" "median s (min..max)" "÷ bound" "check"
fi
k=0
for mib in $sizes; do
    bytes=$((mib * 1048576))
    b=$(bound "$bytes")
    times=() tcps=()
    check=ok
    for _ in $(seq "$runs"); do
        [ "$tcp" -eq 1 ] && tcps+=("$(tcp_run "$bytes")")
        k=$((k + 1))
        t=$(one_run "$bytes" "$k") || exit 1
        times+=("$t")
        grep -q ' WRONG' "$work/r0.out" && check=WRONG
    done
    sorted=$(printf '%s\n' "${times[@]}" | sort -g)
    med=$(echo "$sorted" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    lo=$(echo "$sorted" | head -n 1)
    hi=$(echo "$sorted" | tail -n 1)
    ratio=$(awk -v t="$med" -v b="$b" 'BEGIN { printf "%.2f", t / b }')
    [ "$comp" != none ] && [ "$check" = WRONG ] && check="lossy"
    if [ "$tcp" -eq 1 ]; then
        sorted=$(printf '%s\n' "${tcps[@]}" | sort -g)
        tmed=$(echo "$sorted" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
        tr=$(awk -v t="$tmed" -v b="$b" 'BEGIN { printf "%.2f", t / b }')
        printf '%6s %8s %22s %8s %22s %8s %6s %6s\n' "$mib" "$b" \
            "$tmed ($(echo "$sorted" | head -n 1)..$(echo "$sorted" | tail -n 1))" "$tr" \
            "$med ($lo..$hi)" "$ratio" "$(awk -v t="$med" -v b="$tmed" 'BEGIN { printf "%.2f", t / b }')" "$check"
    else
        printf '%10s %12s %22s %10s %8s\n' "$mib" "$b" "$med ($lo..$hi)" "$ratio" "$check"
    fi
done
