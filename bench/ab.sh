#!/usr/bin/env bash
# ab.sh - MPI_Allreduce latency of two builds of mpicollab, interleaved.
#
#   bench/ab.sh BUILD_A BUILD_B [--np N] [--min-bytes B] [--max-bytes B] [--time S] [--runs R]
#               [--bcast]
#
# Runs BUILD_A's and BUILD_B's collab-run on the same allreduce_bench
# program (BUILD_A's), alternating A, B, A, B ... R times each (default 5),
# and prints per size the median latency of each (with min..max) and the
# ratio B/A.  For "does this change cost the host path anything": A is
# the build before it, B the build with it.  Method: docs/benchmarks.md.
set -u
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || { sed -n '2,10p' "$0"; exit 2; }
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd)
shift 2
np=4 min=4 max=$((1 << 20)) time=0.3 runs=5 extra= what="MPI_Allreduce float sum"
while [ $# -gt 0 ]; do
    case "$1" in
    --np) np=$2; shift 2 ;;
    --min-bytes) min=$2; shift 2 ;;
    --max-bytes) max=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --bcast) extra=--bcast what="MPI_Bcast floats from rank 0"; shift ;; # needs A's bench to know it
    *) echo "ab.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$a/bench/allreduce_bench"
bench_need ab.sh "$bench" "$a/bin/collab-run" "$b/bin/collab-run"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one_run() { # RUN VARIANT BUILD
    timeout 600 "$3/bin/collab-run" -n "$np" --timeout 590 -- "$bench" --min-bytes "$min" --max-bytes "$max" \
        --time "$time" $extra 2> /dev/null | sed -n 's/^.*bench: \([0-9]\)/\1/p' |
        awk -v x="$2" '{print x, $1, $3}' >> "$tmp/all" ||
        echo "ab.sh: run $1 of $2 failed" >&2
}
bench_interleave "$runs" one_run
printf '# %s, %d peers, %d interleaved runs each; latency us, median (min..max)\n' "$what" "$np" "$runs"
bench_ab_table "$tmp/all" "A" "B"
