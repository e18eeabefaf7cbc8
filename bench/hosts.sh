#!/usr/bin/env bash
# hosts.sh - all-reduces across hosts through host leaders against the
# flat path (docs/collectives.md §5c): H "hosts", network namespaces on
# one bridge, K peers in each (peers of one namespace share memory), each
# host's link limited by tbf in both directions.  The MPICH-built
# allreduce_bench with the library preloaded, in strict mode, runs once
# with COLLAB_HOST_LEADER=1 (the default) and once with 0, alternating,
# a fresh swarm each run.  Prints the median (min..max) of each, their
# ratio per run, and the bounds for the host links.  Needs root.
#
#   bench/hosts.sh [--hosts 2] [--per-host 2] [--rate 100] [--mib 4]
#                  [--runs 5] [--iters 2] [--warmup 4] [--build DIR]
#
# Bounds (S bytes, B a host link's rate, n = H x K peers):
#   through leaders  2(H-1)/H x S / B: a bandwidth-optimal all-reduce
#                    among the H hosts
#   flat             2K(n-K)/n x S / B: each of a host's K peers sends
#                    the share of its 2(n-1)/n x S that goes to the
#                    other hosts' peers, (n-K)/(n-1) of it, over the
#                    host's one link
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build="$here/../build" hosts=2 per=2 rate=100 mib=4 runs=5 iters=2 warmup=4
while [ $# -gt 0 ]; do
    case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --mib) mib=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "hosts.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$build/bench/allreduce_bench"
lib="$build/lib/libmpicollab.so"
[ -x "$bench" ] && [ -f "$lib" ] || { echo "hosts.sh: build $build first (allreduce_bench, libmpicollab.so)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "hosts.sh: needs root (ip netns, tc)" >&2; exit 2; }
[ "$hosts" -ge 2 ] && [ "$hosts" -le 8 ] && [ "$per" -ge 1 ] && [ "$per" -le 8 ] ||
    { echo "hosts.sh: --hosts 2..8, --per-host 1..8" >&2; exit 2; }
np=$((hosts * per))
tag=hst$$
work=$(mktemp -d /tmp/hosts.XXXXXX)
trap 'netns_del "$tag" "$hosts"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

netns_add "$tag" "$hosts" 10.78.0 || exit 1
burst=$((rate * 1000000 / 8 / 250))
[ "$burst" -lt 16000 ] && burst=16000
for h in $(seq 0 $((hosts - 1))); do
    ns=${tag}n$h
    tc -n "$ns" qdisc add dev p$h root tbf rate "${rate}mbit" burst "$burst" latency 100ms || exit 1
    tc qdisc add dev "${tag}h$h" root tbf rate "${rate}mbit" burst "$burst" latency 100ms || exit 1
done

bytes=$((mib * 1048576))
read -r lead_bound flat_bound < <(awk -v s="$bytes" -v b="$rate" -v h="$hosts" -v k="$per" 'BEGIN {
    B = b * 1e6 / 8; n = h * k
    printf "%.4f %.4f\n", 2 * (h - 1) / h * s / B, 2 * k * (n - k) / n * s / B }')

# one_run LEADER: one swarm with COLLAB_HOST_LEADER=LEADER; prints the
# seconds of one all-reduce (rank 0's table) or fails.
one_run() {
    local lead=$1 r h addr pids=() st=0
    rm -f "$work"/r*.out "$work"/r*.err
    for r in $(seq 0 $((np - 1))); do
        h=$((r / per))
        local env=(COLLAB_WORLD_SIZE="$np" COLLAB_STRICT=1 COLLAB_RANK="$r" COLLAB_HOST_LEADER="$lead"
                   COLLAB_MATCHMAKING_TIME=30 COLLAB_TIMEOUT=10 COLLAB_LOG=warn
                   COLLAB_LISTEN="/ip4/10.78.0.$((h + 1))/tcp/$((4000 + r))")
        [ "$r" -gt 0 ] && env+=(COLLAB_INITIAL_PEERS="$addr")
        [ "$r" -eq 0 ] && env+=(COLLAB_LOG=info) # its join line, and whether leaders are used
        ip netns exec "${tag}n$h" env "${env[@]}" LD_PRELOAD="$lib" "$bench" --min-bytes "$bytes" \
            --max-bytes "$bytes" --time 0.1 --max-iters "$iters" --warmup "$warmup" \
            >"$work/r$r.out" 2>"$work/r$r.err" &
        pids+=($!)
        if [ "$r" -eq 0 ]; then
            for _ in $(seq 100); do
                addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$work/r0.err" 2>/dev/null | head -n 1)
                [ -n "$addr" ] && break
                sleep 0.1
            done
            [ -n "$addr" ] || { echo "hosts.sh: the founder printed no join line" >&2; cat "$work/r0.err" >&2; kill -9 "${pids[@]}"; return 1; }
        fi
    done
    for p in "${pids[@]}"; do wait "$p" || st=1; done
    [ "$st" -eq 0 ] || { echo "hosts.sh: a peer failed" >&2; tail -n 3 "$work"/r*.err >&2; return 1; }
    grep -q ' WRONG' "$work/r0.out" && { echo "hosts.sh: a WRONG result" >&2; return 1; }
    # The path asked for is the one taken.
    if grep -q "go through host leaders" "$work/r0.err"; then [ "$lead" -eq 1 ]; else [ "$lead" -eq 0 ]; fi ||
        { echo "hosts.sh: COLLAB_HOST_LEADER=$lead but rank 0's log says otherwise" >&2; return 1; }
    awk '/^bench: [0-9]/ { printf "%.6f\n", $4 / 1e6 }' "$work/r0.out"
}

stats() { # values -> "median (min..max)"
    printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { printf "%.3f (%.3f..%.3f)", a[int((NR + 1) / 2)], a[1], a[NR] }'
}

echo "hosts.sh: $hosts hosts x $per peers, host links ${rate} Mbit/s both ways, $mib MiB float sums, strict mode, $runs interleaved runs"
lead=() flat=() ratio=()
for k in $(seq "$runs"); do
    a=$(one_run 1) || exit 1
    b=$(one_run 0) || exit 1
    lead+=("$a") flat+=("$b")
    ratio+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", a / b }')")
    echo "hosts.sh: run $k: through leaders $a s, flat $b s"
done
printf '%-16s %10s %24s %10s\n' "path" "bound s" "median s (min..max)" "÷ bound"
med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf '%-16s %10s %24s %10.2f\n' "through leaders" "$lead_bound" "$(stats "${lead[@]}")" \
    "$(awk -v t="$(med "${lead[@]}")" -v b="$lead_bound" 'BEGIN { print t / b }')"
printf '%-16s %10s %24s %10.2f\n' "flat" "$flat_bound" "$(stats "${flat[@]}")" \
    "$(awk -v t="$(med "${flat[@]}")" -v b="$flat_bound" 'BEGIN { print t / b }')"
echo "leaders ÷ flat per run: $(stats "${ratio[@]}")"
