#!/usr/bin/env bash
# oversub.sh - many peers on few cores: a long loop of collectives must
# never take a live peer out of the group (too long for CI; the CTests
# coll.busy_loop_* run a short version).
#
#   bench/oversub.sh [--build DIR] [--np 16] [--seeds "1 2 3 4 5"]
#                    [--iters 400] [--spin-ms 20] [--out DIR]
#
# For each seed, tests/coll/busy_loop runs through collab-run (preload,
# MPICH face) on NP peers, however many cores the machine has: uneven
# computation (up to SPIN ms per iteration, seeded), then allgatherv,
# reduce, allreduce and bcast, every result checked.  Each run is judged
# on its exit status and on the lines "taken out of the group", "left the
# group" and "failed:" in its log (a live peer taken out); the counts are
# printed per seed with the run time and the load average.  Exit status 0
# when every run passed with no such line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" np=16 seeds="1 2 3 4 5" iters=400 spin=20 out=''
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --spin-ms) spin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "oversub.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
prog="$build/tests/coll/busy_loop"
run="$build/bin/collab-run"
for f in "$prog" "$run"; do
    if [ ! -x "$f" ]; then
        echo "oversub.sh: $f is not built" >&2
        exit 2
    fi
done
[ -n "$out" ] || out=$(mktemp -d /tmp/oversub.XXXXXX)
mkdir -p "$out"
bad=0
echo "oversub.sh: $np peers on $(nproc) cores, $iters iterations, spin up to $spin ms"
for seed in $seeds; do
    log="$out/seed$seed.log"
    t0=$(date +%s.%N)
    timeout -k 5 1800 "$run" -n "$np" --abi mpich --mode preload --timeout 1700 -- \
        "$prog" --iters "$iters" --seed "$seed" --spin-ms "$spin" >"$log" 2>&1
    rc=$?
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    out_lines=$(grep -c "taken out of the group\|left the group\|failed:" "$log")
    late=$(grep -c "is late" "$log")
    printf 'seed %s: exit %d, %6.1f s, %d take-outs, %d late notices, load %s\n' "$seed" "$rc" \
        "$t" "$out_lines" "$late" "$(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$rc" -ne 0 ] || [ "$out_lines" -ne 0 ]; then
        bad=$((bad + 1))
        grep -h "taken out of the group\|left the group\|failed:\|busy_loop: rank" "$log" | head -5
    fi
done
echo "oversub.sh: $bad of $(echo $seeds | wc -w) runs had a failure or a take-out (logs in $out)"
[ "$bad" -eq 0 ]
