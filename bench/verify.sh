#!/usr/bin/env bash
# verify.sh - what COLLAB_VERIFY costs, and how soon it catches a reducer
# that corrupts its own part.
#
#   bench/verify.sh BUILD [--np N] [--max-bytes B] [--time S] [--runs R]
#                   [--catch-runs K] [--skip-cost] [--skip-catch]
#
# Cost: BUILD's collab-run on its allreduce_bench with COLLAB_VERIFY=0 (A)
# and 1 (B), alternating A, B, A, B ... R times each (default 5), from
# 64 KiB (the butterfly's smallest size: verification checks butterfly
# all-reduces only) to --max-bytes; per size the median latency of each
# (min..max) and the ratio B/A.
# Catch: BUILD's tests/attack_verify K times (default 20): 8 peers, one of
# which adds 1000 to every value of the part it reduces; each run must
# catch it and take it out within 50 all-reduces (tests/attack/verify.c).
set -u
[ $# -ge 1 ] || { sed -n '2,16p' "$0"; exit 2; }
d=$(cd "$1" && pwd)
shift
np=4 max=$((1 << 22)) time=0.3 runs=5 catch=20 cost=1 docatch=1
while [ $# -gt 0 ]; do
    case "$1" in
    --np) np=$2; shift 2 ;;
    --max-bytes) max=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --catch-runs) catch=$2; shift 2 ;;
    --skip-cost) cost=0; shift ;;
    --skip-catch) docatch=0; shift ;;
    *) echo "verify.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$d/bench/allreduce_bench"
for f in "$bench" "$d/bin/collab-run" "$d/tests/attack_verify"; do
    [ -x "$f" ] || { echo "verify.sh: missing $f" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
if [ $cost = 1 ]; then
    for r in $(seq "$runs"); do
        for x in a b; do
            v=$([ $x = a ] && echo 0 || echo 1)
            COLLAB_VERIFY=$v timeout 600 "$d/bin/collab-run" -n "$np" --timeout 590 -- \
                "$bench" --min-bytes 65536 --max-bytes "$max" --factor 4 --time "$time" \
                2> /dev/null | sed -n 's/^.*bench: \([0-9]\)/\1/p' |
                awk -v x=$x '{print x, $1, $3}' >> "$tmp/all" ||
                echo "verify.sh: run $r with COLLAB_VERIFY=$v failed" >&2
        done
    done
    printf '# MPI_Allreduce float sum, %d peers, %d interleaved runs each; latency us, median (min..max)\n' "$np" "$runs"
    printf '%10s | %26s | %26s | %6s\n' bytes "COLLAB_VERIFY=0" "COLLAB_VERIFY=1" "B/A"
    for s in $(awk '{print $2}' "$tmp/all" | sort -un); do
        stat() { awk -v x="$1" -v s="$s" '$1 == x && $2 == s {print $3}' "$tmp/all" | sort -g |
            awk '{v[NR] = $1} END {if (NR) printf "%.1f %.1f %.1f", v[int((NR + 1) / 2)], v[1], v[NR]}'; }
        read -r ma la ha <<< "$(stat a)"
        read -r mb lb hb <<< "$(stat b)"
        awk -v s="$s" -v ma="$ma" -v la="$la" -v ha="$ha" -v mb="$mb" -v lb="$lb" -v hb="$hb" \
            'BEGIN {printf "%10d | %10.1f (%6.1f..%6.1f) | %10.1f (%6.1f..%6.1f) | %6.2f\n", s, ma, la, ha, mb, lb, hb, (ma > 0 ? mb / ma : 0)}'
    done
fi
if [ $docatch = 1 ]; then
    printf '# a reducer corrupting its own part, 8 peers, COLLAB_VERIFY=1, %d runs\n' "$catch"
    "$d/tests/attack_verify" "$catch" 60 2> "$tmp/catch.err" | tee "$tmp/catch.out"
    [ "${PIPESTATUS[0]}" = 0 ] || { status=1; tail -40 "$tmp/catch.err" >&2; }
    sed -n 's/.*from all-reduce \(-\?[0-9]*\) on.*/\1/p' "$tmp/catch.out" | sort -n |
        awk '{v[NR] = $1} END {if (NR) printf "# taken out at all-reduce: median %d, min %d, max %d (bound 50)\n", v[int((NR + 1) / 2)], v[1], v[NR]}'
fi
exit $status
