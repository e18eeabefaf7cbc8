#!/usr/bin/env bash
# test.sh - installs dependencies if missing, configures and builds in
# build/, runs the whole test suite; exits with ctest's status.
#
#   scripts/test.sh [ctest arguments...]     e.g. -L e2e, -LE elastic, -R coll
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (RelWithDebInfo),
# TEST_JOBS (default: number of cores), TEST_TIME_LIMIT (seconds for the
# whole ctest run, default 2400).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${TEST_JOBS:-$(nproc)}
limit=${TEST_TIME_LIMIT:-2400}

bash "$root/scripts/deps.sh" || exit 1
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" || {
    echo "test.sh: configuring failed" >&2
    exit 1
}
echo "test.sh: building in $build"
cmake --build "$build" -j "$jobs" || { echo "test.sh: the build failed" >&2; exit 1; }

echo "test.sh: running ctest (-j $jobs, at most $limit s)"
timeout -k 30 "$limit" ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "test.sh: the test run passed its limit of $limit s (TEST_TIME_LIMIT) and was stopped" >&2
fi
exit $status
