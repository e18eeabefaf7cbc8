#!/usr/bin/env bash
# contig.sh - contiguous collectives before and after a change of the face.
#
#   bench/contig.sh --before BUILD_A --after BUILD_B [--np N] [--runs R]
#
# Runs build/bench/contig_bench (built with mpicc.mpich) through
# collab-run -n N with the library of BUILD_A and of BUILD_B, alternating
# A, B, A, B ... R times each (default 5), then prints per measurement
# the median over the runs of each build, the spread (min-max) and the
# ratio B/A (> 1: B is slower).  Each run already reports the median of
# 5 timed batches.  The MPICH run of the same program is shown as a
# reference.  Method: docs/benchmarks.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
before='' after='' np=4 runs=5
while [ $# -gt 0 ]; do
    case "$1" in
    --before) before=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "contig.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$before" ] && [ -n "$after" ] || { echo "contig.sh: --before and --after are required" >&2; exit 2; }
bench="$after/bench/contig_bench"
[ -x "$bench" ] || { echo "contig.sh: missing $bench" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$runs"); do
    for side in before after; do
        b=${!side}
        timeout 600 "$b/bin/collab-run" -n "$np" --mode preload --timeout 500 -- "$bench" \
            2>/dev/null | sed -n 's/^.*contig: //p' >"$tmp/$side.$i" ||
            echo "contig.sh: a $side run failed" >&2
    done
done
mpiexec.mpich -n "$np" "$bench" 2>/dev/null | sed -n 's/^.*contig: //p' >"$tmp/mpich"
python3 - "$tmp" "$runs" <<'PY'
import sys, statistics, glob
tmp, runs = sys.argv[1], int(sys.argv[2])
def load(side):
    vals = {}
    for i in range(1, runs + 1):
        for line in open(f"{tmp}/{side}.{i}"):
            name, us = line.split()
            vals.setdefault(name, []).append(float(us))
    return vals
a, b = load("before"), load("after")
ref = dict(l.split() for l in open(f"{tmp}/mpich"))
print(f"# {runs} interleaved runs per build; us per call, median [min-max]")
print(f"{'measurement':<22} {'before':>22} {'after':>22} {'after/before':>12} {'MPICH':>9}")
for name in list(a) + [n for n in b if n not in a]:
    x, y = a.get(name, [float('nan')]), b.get(name, [float('nan')])
    mx, my = statistics.median(x), statistics.median(y)
    print(f"{name:<22} {mx:9.2f} [{min(x):.1f}-{max(x):.1f}] {my:9.2f} [{min(y):.1f}-{max(y):.1f}]"
          f" {my / mx if mx else float('nan'):12.3f} {float(ref.get(name, 'nan')):9.2f}")
PY
