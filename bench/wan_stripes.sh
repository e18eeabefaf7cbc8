#!/usr/bin/env bash
# wan_stripes.sh - one connection per link against several (COLLAB_STRIPES),
# interleaved: bench/wan.sh in turn with --stripes 1 and each other
# setting given, one run each time, RUNS times; prints every run and then
# each setting's median and min..max of the time ÷ the bound.  Needs root,
# as wan.sh.
#
#   bench/wan_stripes.sh [--stripes "4 auto"] [--only] [--runs 5] [wan.sh options...]
#
# --stripes: the settings besides 1 (4 by default): counts, auto, auto:N;
# --only: those settings without 1.
# With auto, wan.sh's 20 warm-up all-reduces leave the probe its time
# before the timed ones.
#
# e.g. a link that one connection cannot fill:
#   bench/wan_stripes.sh --np 2 --rate 100 --flow-cap 25 --sizes 16
set -u
here=$(cd "$(dirname "$0")" && pwd)
n=4 runs=5 rest=() only=0
while [ $# -gt 0 ]; do
    case "$1" in
    --stripes) n=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --only) only=1; shift ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) rest+=("$1"); shift ;;
    esac
done
out=$(mktemp -d /tmp/wanst.XXXXXX)
trap 'rm -rf "$out"' EXIT
settings="1 $n"
[ "$only" -eq 1 ] && settings=$n
for k in $(seq "$runs"); do
    for s in $settings; do
        bash "$here/wan.sh" "${rest[@]}" --stripes "$s" --runs 1 >"$out/run" 2>&1 ||
            { cat "$out/run" >&2; exit 1; }
        [ "$k" -eq 1 ] && [ "$s" = "${settings%% *}" ] && head -n 1 "$out/run" | sed "s/, $s connection(s) per link//"
        line=$(awk '$1 ~ /^[0-9]+$/ { print $2, $3, $5, $6 }' "$out/run" | head -n 1)
        echo "run $k, $s connection(s): bound $(echo "$line" | cut -d' ' -f1) s, time $(echo "$line" | cut -d' ' -f2) s, ÷ bound $(echo "$line" | cut -d' ' -f3), check $(echo "$line" | cut -d' ' -f4)"
        echo "$line" | cut -d' ' -f3 >>"$out/r$s"
    done
done
for s in $settings; do
    sort -g "$out/r$s" | awk -v s="$s" '{ a[NR] = $1 } END {
        printf "%6s connection(s): median %.2f x bound (%.2f..%.2f over %d runs)\n", s, a[int((NR + 1) / 2)], a[1], a[NR], NR }'
done
