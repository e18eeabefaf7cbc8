#!/usr/bin/env bash
# fuzz.sh - runs every libFuzzer target under ASan and UBSan.
#
#   bench/fuzz.sh [--runs N] [--max-time S] [--handshake-time S] [--jobs J]
#                 [--build DIR] [--out DIR]
#                 [TARGET...]
#
# Builds the clang Fuzz configuration (CC=clang, -DCOLLAB_FUZZ=ON, as
# scripts/build-matrix.sh does) in DIR (default build-fuzz), then runs
# each target (default: wire elmsg addr config handshake) for N executions
# (default 10^7; --max-time stops a target after S seconds instead, and its
# line then shows how far it got; the handshake target, whose every input
# drives a real transport, runs for --handshake-time S, default 600, unless
# --max-time is given) on a scratch copy of its corpus, J at a time
# (default 1), and
# prints one line per target: executions, seconds, executions per second,
# corpus growth, crashes.  A crash leaves its input in OUT (default
# build-fuzz/fuzz-out/<target>/); add it to tests/fuzz/<target>/corpus
# with the fix, as docs/testing.md says.  The config and handshake targets
# run Argon2id stubbed (cl_secret.h).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
runs=10000000 maxtime=0 hstime=600 jobs=1 build="$root/build-fuzz" out=""
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --max-time) maxtime=$2; shift 2 ;;
    --handshake-time) hstime=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(wire elmsg addr config handshake)
[ -n "$out" ] || out="$build/fuzz-out"
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (scripts/deps.sh)" >&2; exit 1; }

if [ ! -f "$build/CMakeCache.txt" ]; then
    mkdir -p "$build"
    CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCOLLAB_FUZZ=ON >"$build/cmake.log" 2>&1 ||
        { echo "fuzz.sh: cmake failed, see $build/cmake.log" >&2; exit 1; }
fi
bins=()
for t in "${targets[@]}"; do bins+=("fuzz_$t"); done
nice cmake --build "$build" -j2 --target "${bins[@]}" >"$build/fuzz-build.log" 2>&1 ||
    { echo "fuzz.sh: build failed, see $build/fuzz-build.log" >&2; exit 1; }

run_one() {
    local t=$1 dir="$out/$1"
    rm -rf "$dir"
    mkdir -p "$dir/corpus" "$dir/crashes"
    cp "$root/tests/fuzz/$t/corpus/"* "$dir/corpus/"
    local seeds start end rc limit=$maxtime
    [ "$t" != handshake ] || [ "$maxtime" != 0 ] || limit=$hstime
    seeds=$(ls "$dir/corpus" | wc -l)
    start=$(date +%s.%N)
    nice "$build/src/fuzz_$t" -runs="$runs" -max_total_time="$limit" -print_final_stats=1 -artifact_prefix="$dir/crashes/" \
        "$dir/corpus" >"$dir/log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    local execs crashes grown
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
    crashes=$(ls "$dir/crashes" | wc -l)
    grown=$(($(ls "$dir/corpus" | wc -l) - seeds))
    awk -v t="$t" -v e="${execs:-0}" -v s="$start" -v f="$end" -v g="$grown" -v c="$crashes" \
        -v rc="$rc" 'BEGIN { d = f - s; r = d > 0 ? e / d : 0; printf "%-7s %12d execs %8.1f s %10.0f/s  corpus +%-5d crashes %d  exit %d\n", t, e, d, r, g, c, rc }'
}

echo "fuzz.sh: $runs executions per target (time limit ${maxtime}s, 0: none), ASan+UBSan, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
status=0
running=0
for t in "${targets[@]}"; do
    run_one "$t" >"$out.$t.line" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
for t in "${targets[@]}"; do
    cat "$out.$t.line"
    grep -q 'crashes 0  exit 0' "$out.$t.line" || status=1
    rm -f "$out.$t.line"
done
exit $status
