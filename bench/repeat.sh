#!/usr/bin/env bash
# repeat.sh - one CTest, run again and again, to measure how often a rare
# failure happens (too long for CI).
#
#   bench/repeat.sh TEST [--build DIR] [--runs N] [--minutes M] [--beside TEST2]
#                   [--busy] [--debug] [--count PATTERN]... [--out DIR]
#
# Runs the CTest named TEST (an exact name) N times, or for M minutes,
# whichever ends first (default: 20 runs).  --beside runs TEST2 in the same
# ctest call (-j2), as CI does; --busy keeps one busy process running
# beside it the whole time (a loaded machine); --debug sets COLLAB_LOG=debug.
# After each passing run, each --count PATTERN is counted in the test's log
# folder (build/tests/<area>/<name>/run.err when there is one), so that a
# run can show that the path under test was taken.  A failing run's ctest
# output and log folder are kept in OUT (default: a new folder in /tmp).
# Prints one line per run and "TEST: P of N runs passed"; exit status 0
# when all passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" runs=20 minutes=0 beside='' busy=0 debug=0 out='' counts=()
[ $# -ge 1 ] || { sed -n '2,/^set -u/{/^set -u/!p}' "$0"; exit 2; }
test=$1
shift
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --minutes) minutes=$2; shift 2 ;;
    --beside) beside=$2; shift 2 ;;
    --busy) busy=1; shift ;;
    --debug) debug=1; shift ;;
    --count) counts+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -u/{/^set -u/!p}' "$0"; exit 0 ;;
    *) echo "repeat.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[[ "$runs" =~ ^[0-9]+$ && "$minutes" =~ ^[0-9]+$ ]] ||
    { echo "repeat.sh: --runs and --minutes take whole numbers" >&2; exit 2; }
ctest --test-dir "$build" -N -R "^${test}\$" | grep -Eq "Test +#[0-9]+: ${test//./\\.}\$" ||
    { echo "repeat.sh: no CTest named '$test' in $build" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/repeat.XXXXXX)
mkdir -p "$out"
regex="^${test}\$"
[ -n "$beside" ] && regex="$regex|^${beside}\$"
busy_pid=''
if [ "$busy" -eq 1 ]; then
    nice -n 5 sh -c 'while :; do :; done' &
    busy_pid=$!
    trap 'kill "$busy_pid" 2>/dev/null' EXIT
fi
# The test's own log folder: build/tests/<area>/<name without its prefix>,
# looked for after each run (a fresh build has none before its first).
logdir=
end=$(($(date +%s) + minutes * 60))
pass=0 n=0
while [ "$n" -lt "$runs" ] && { [ "$minutes" -eq 0 ] || [ "$(date +%s)" -lt "$end" ]; }; do
    n=$((n + 1))
    env $([ "$debug" -eq 1 ] && echo COLLAB_LOG=debug) \
        ctest --test-dir "$build" -R "$regex" -j2 --timeout 300 --output-on-failure >"$out/ctest.$n.log" 2>&1
    [ -n "$logdir" ] ||
        logdir=$(find "$build/tests" -maxdepth 2 -type d -name "${test#*.}" 2>/dev/null | head -n 1)
    if grep -Eq "^ *[0-9]+/[0-9]+ Test +#[0-9]+: ${test//./\\.} .*Passed" "$out/ctest.$n.log"; then
        pass=$((pass + 1))
        line="run $n: passed"
        for c in "${counts[@]+"${counts[@]}"}"; do
            k=0
            [ -n "$logdir" ] && k=$(cat "$logdir"/*.err "$logdir"/*.log 2>/dev/null | grep -c -- "$c")
            line="$line, \"$c\" $k"
        done
        echo "$line"
    else
        [ -n "$logdir" ] && cp -r "$logdir" "$out/fail.$n"
        echo "run $n: FAILED (kept in $out)"
    fi
done
echo "$test: $pass of $n runs passed (logs of failures in $out)"
[ "$pass" -eq "$n" ]
