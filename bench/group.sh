#!/usr/bin/env bash
# group.sh - the same-host group all-reduce protocol (cl_fast_group.c) on
# its own against MPICH: medians of interleaved runs.
#
#   bench/group.sh [--build DIR] [--np 4] [--runs 5] [--calls 20]
#                  [--sizes "8 1048576 16777216"]
#
# Alternates, --runs times and per size, `mpiexec.mpich -n NP
# allreduce_bench` (MPI_Allreduce of floats, SUM) and `cl_fast_group_test
# bench NP SIZE CALLS` (NP processes on one shared area, the slowest
# member's median latency over CALLS calls), and prints per size each
# one's median latency with its spread (min..max) and the ratio of the
# medians (protocol / MPICH).  The protocol runs without the engine and
# the MPI face: what the path reaches once the engine grants it to groups.
# Method: docs/benchmarks.md.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" np=4 runs=5 calls=20 sizes="8 1048576 16777216"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "group.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$build/bench/allreduce_bench" fgt="$build/src/cl_fast_group_test"
mpiexec=$(command -v mpiexec.mpich || true)
for f in "$bench" "$fgt" "$mpiexec"; do
    [ -n "$f" ] && [ -x "$f" ] || { echo "group.sh: missing $f (build first)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$runs"); do
    for s in $sizes; do
        timeout 600 "$mpiexec" -n "$np" "$bench" --min-bytes "$s" --max-bytes "$s" --time 0.3 \
            2>/dev/null | sed -n 's/^.*bench: \([0-9]\)/\1/p' | awk '{print "a", $1, $3}' >>"$tmp/lat"
        timeout 600 "$fgt" bench "$np" "$s" "$calls" |
            sed -n 's/.*bytes \([0-9]*\) .*median_us \([0-9.]*\).*/b \1 \2/p' >>"$tmp/lat"
    done
done
echo "# $np processes, $runs interleaved runs, latency in us: median (min..max)"
bench_ab_table "$tmp/lat" MPICH group-protocol
