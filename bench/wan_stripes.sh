#!/usr/bin/env bash
# wan_stripes.sh - one connection per link against several (COLLAB_STRIPES),
# interleaved: bench/wan.sh alternately with --stripes 1 and --stripes N,
# one run each time, RUNS times; prints every run and then each setting's
# median and min..max of the time ÷ the bound.  Needs root, as wan.sh.
#
#   bench/wan_stripes.sh [--stripes 4] [--runs 5] [wan.sh options...]
#
# e.g. a link that one connection cannot fill:
#   bench/wan_stripes.sh --np 2 --rate 100 --flow-cap 25 --sizes 16
set -u
here=$(cd "$(dirname "$0")" && pwd)
n=4 runs=5 rest=()
while [ $# -gt 0 ]; do
    case "$1" in
    --stripes) n=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) rest+=("$1"); shift ;;
    esac
done
out=$(mktemp -d /tmp/wanst.XXXXXX)
trap 'rm -rf "$out"' EXIT
for k in $(seq "$runs"); do
    for s in 1 "$n"; do
        bash "$here/wan.sh" "${rest[@]}" --stripes "$s" --runs 1 >"$out/run" 2>&1 ||
            { cat "$out/run" >&2; exit 1; }
        [ "$k" -eq 1 ] && [ "$s" = 1 ] && head -n 1 "$out/run" | sed 's/, 1 connection(s) per link//'
        line=$(awk '$1 ~ /^[0-9]+$/ { print $2, $3, $5, $6 }' "$out/run" | head -n 1)
        echo "run $k, $s connection(s): bound $(echo "$line" | cut -d' ' -f1) s, time $(echo "$line" | cut -d' ' -f2) s, ÷ bound $(echo "$line" | cut -d' ' -f3), check $(echo "$line" | cut -d' ' -f4)"
        echo "$line" | cut -d' ' -f3 >>"$out/r$s"
    done
done
for s in 1 "$n"; do
    sort -g "$out/r$s" | awk -v s="$s" '{ a[NR] = $1 } END {
        printf "%2s connection(s): median %.2f x bound (%.2f..%.2f over %d runs)\n", s, a[int((NR + 1) / 2)], a[1], a[NR], NR }'
done
