#!/usr/bin/env bash
# p2p_ab.sh - point-to-point latency and streaming rate of two builds of
# mpicollab, 2 peers, interleaved.
#
#   bench/p2p_ab.sh BUILD_A BUILD_B [--runs R] [--time S] [--window N]
#                   [--sizes "8 1024 65536 1048576"] [--env-b "VAR=VAL ..."]
#
# Runs bench/p2p_bench (BUILD_B's, built with mpicc.mpich) under BUILD_A's
# and BUILD_B's collab-run, alternating A, B, A, B ... R times each
# (default 5), and prints per kind and size the median time per message
# of each (with min..max) and the ratio B/A.  pingpong is half a round
# trip (osu_latency); stream is a window of MPI_Isend whose receives are
# posted late (what flow control holds back).  --env-b adds environment
# to B's runs only (e.g. small COLLAB_MAX_UNEXPECTED_MSGS, or COLLAB_SHM=0
# to compare the same-host rings with CurveZMQ).  BUILD_A `mpich` runs
# A on the real MPICH (mpiexec.mpich) instead: B/A is then the ratio
# against MPICH (pingpong only: MPICH does not buffer a stream of
# messages past its eager limit, and the stream would wait forever).
# Method: docs/benchmarks.md.
set -u
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || { sed -n '2,19p' "$0"; exit 2; }
if [ "$1" = mpich ]; then a=mpich; else a=$(cd "$1" && pwd); fi
b=$(cd "$2" && pwd)
shift 2
runs=5 time=0.3 window=256 sizes="8 1024 65536 1048576" envb=''
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --env-b) envb=$2; shift 2 ;;
    *) echo "p2p_ab.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$b/bench/p2p_bench"
if [ "$a" = mpich ]; then
    mpiexec=$(command -v mpiexec.mpich) || { echo "p2p_ab.sh: mpiexec.mpich not found" >&2; exit 1; }
    bench_need p2p_ab.sh "$bench" "$mpiexec" "$b/bin/collab-run"
else
    bench_need p2p_ab.sh "$bench" "$a/bin/collab-run" "$b/bin/collab-run"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one_run() { # RUN VARIANT BUILD
    local e
    e=$([ "$2" = b ] && echo "$envb" || true)
    local run=("$3/bin/collab-run" -n 2 --timeout 590 --)
    local only=()
    if [ "$a" = mpich ]; then
        only=(--pingpong-only) # MPICH does not buffer a stream past its eager limit
        [ "$3" = mpich ] && run=("$mpiexec" -n 2)
    fi
    # shellcheck disable=SC2086
    env $e timeout 600 "${run[@]}" "$bench" --time "$time" \
        --window "$window" --sizes "$sizes" "${only[@]}" 2> /dev/null |
        sed -n 's/^.*bench: \([a-z]\)/\1/p' | tee -a "$tmp/raw" |
        awk -v x="$2" -v d="$tmp" '$5 == "ok" {print x, $2, $4 >> (d "/" $1)}' ||
        echo "p2p_ab.sh: run $1 of $2 failed" >&2
}
bench_interleave "$runs" one_run
if grep -q WRONG "$tmp/raw" 2>/dev/null; then
    echo "p2p_ab.sh: a run checked a WRONG message" >&2
fi
for kind in pingpong stream; do
    [ -s "$tmp/$kind" ] || continue
    printf '# %s, 2 peers, %d interleaved runs each; us per message, median (min..max)\n' \
        "$kind" "$runs"
    bench_ab_table "$tmp/$kind" "A" "B"
done
