#!/usr/bin/env bash
# robust.sh - what robust aggregation costs: MPI_Allreduce latency with
# COLLAB_AGGREGATION=mean (A) and a robust mode (B), interleaved.
#
#   bench/robust.sh BUILD [--mode centered_clip|trimmed_mean] [--np N]
#                   [--max-bytes B] [--time S] [--runs R]
#
# Runs BUILD's collab-run on its allreduce_bench, alternating A, B, A, B
# ... R times each (default 5), and prints per size the median latency of
# each (min..max) and the ratio B/A.  The robust modes run the one-round
# exchange at every size ((n-1) x size per member instead of the
# butterfly's 2(n-1)/n x size) and aggregate in doubles, so B/A grows with
# size and n.  allreduce_bench marks B's results WRONG: a robust mean of
# its rank-dependent inputs is not their sum, as intended.
set -u
. "$(dirname "$0")/lib.sh"
[ $# -ge 1 ] || { sed -n '2,14p' "$0"; exit 2; }
d=$(cd "$1" && pwd)
shift
mode=centered_clip np=4 max=$((1 << 22)) time=0.3 runs=5
while [ $# -gt 0 ]; do
    case "$1" in
    --mode) mode=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --max-bytes) max=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "robust.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$d/bench/allreduce_bench"
for f in "$bench" "$d/bin/collab-run"; do
    [ -x "$f" ] || { echo "robust.sh: missing $f" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$runs"); do
    for x in a b; do
        agg=$([ $x = a ] && echo mean || echo "$mode")
        COLLAB_AGGREGATION=$agg timeout 600 "$d/bin/collab-run" -n "$np" --timeout 590 -- \
            "$bench" --min-bytes 4096 --max-bytes "$max" --factor 4 --time "$time" 2> /dev/null |
            sed -n 's/^.*bench: \([0-9]\)/\1/p' | awk -v x=$x '{print x, $1, $3}' >> "$tmp/all" ||
            echo "robust.sh: run $r of $agg failed" >&2
    done
done
printf '# MPI_Allreduce float sum, %d peers, %d interleaved runs each; latency us, median (min..max)\n' "$np" "$runs"
bench_ab_table "$tmp/all" "mean" "$mode"
