# lib.sh - what the interleaved benchmark scripts share (sourced, not run).
#
# Their runs append lines "VARIANT SIZE VALUE..." to one file; these
# functions turn them into medians with their spread (docs/benchmarks.md).

# bench_stat FILE VARIANT SIZE FIELD -> "median min max" of that field over
# the lines of VARIANT and SIZE ("0 0 0" when there are none).
bench_stat() {
    awk -v i="$2" -v s="$3" -v f="$4" '$1 == i && $2 == s {print $f}' "$1" | sort -g |
        awk '{v[NR] = $1} END {if (NR) printf "%g %g %g", v[int((NR + 1) / 2)], v[1], v[NR]; else print "0 0 0"}'
}

# bench_ab_table FILE NAME_A NAME_B: for lines "a|b SIZE LATENCY", one row
# per size with each variant's median latency (min..max) and the ratio B/A.
bench_ab_table() {
    local file=$1 s ma la ha mb lb hb
    printf '%10s | %26s | %26s | %6s\n' bytes "$2" "$3" "B/A"
    for s in $(awk '{print $2}' "$file" | sort -un); do
        read -r ma la ha <<<"$(bench_stat "$file" a "$s" 3)"
        read -r mb lb hb <<<"$(bench_stat "$file" b "$s" 3)"
        awk -v s="$s" -v ma="$ma" -v la="$la" -v ha="$ha" -v mb="$mb" -v lb="$lb" -v hb="$hb" \
            'BEGIN {printf "%10d | %10.1f (%6.1f..%6.1f) | %10.1f (%6.1f..%6.1f) | %6.2f\n", s, ma, la, ha, mb, lb, hb, (ma > 0 ? mb / ma : 0)}'
    done
}

# wait_line FILE PATTERN SECONDS: polls FILE every 0.1 s until a line
# matches PATTERN (0) or SECONDS pass (1).
wait_line() {
    local i
    for i in $(seq $(($3 * 10))); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# bench_need NAME FILE...: stops with "NAME: missing FILE" unless every
# FILE is executable.
bench_need() {
    local name=$1 f
    shift
    for f in "$@"; do
        [ -x "$f" ] || { echo "$name: missing $f" >&2; exit 1; }
    done
}

# bench_interleave RUNS FUNC: calls "FUNC RUN VARIANT BUILD" for RUN in
# 1..RUNS and VARIANT a then b (BUILD: $a or $b), so that both builds see
# the same drift of a noisy machine.
bench_interleave() {
    local r x
    for r in $(seq "$1"); do
        for x in a b; do
            "$2" "$r" "$x" "$([ "$x" = a ] && echo "$a" || echo "$b")"
        done
    done
}

# Network namespaces on one bridge: netns_add TAG N NET, netns_del TAG N
# (scripts/netns.sh, shared with the tests).
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/netns.sh"
