# Helpers for collab-run's process tests (sourced by run_*.sh).
# Inputs come from CTest through CR_TEST_* variables (see tools.cmake).
set -u
ulimit -c 0 # peers that crash on purpose leave no core files

for v in CR_TEST_RUN CR_TEST_KEYGEN CR_TEST_PROBE CR_TEST_FAKELIB CR_TEST_BIN; do
    if [ -z "${!v:-}" ]; then
        echo "$v is not set; run this test through ctest" >&2
        exit 1
    fi
done

RUN=$CR_TEST_RUN
PROBE=$CR_TEST_PROBE
FAKE=$CR_TEST_FAKELIB
FAILED=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cr_test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# Peers must not inherit COLLAB_* settings of whoever runs the tests.
for v in $(env | sed -n 's/^\(COLLAB_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

fail() {
    echo "FAIL: $*" >&2
    FAILED=1
}

# cr ARGS...: runs collab-run, stdout in $TMP/out, stderr in $TMP/err,
# exit status in RC, seconds taken in ELAPSED.
cr() {
    local t0 t1
    t0=$(date +%s.%N)
    "$RUN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    RC=$?
    t1=$(date +%s.%N)
    ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    LAST_CMD="collab-run $*"
}

show() {
    echo "---- $LAST_CMD (exit $RC, ${ELAPSED}s)" >&2
    echo "---- stdout:" >&2
    head -c 4000 "$TMP/out" >&2
    echo "---- stderr:" >&2
    head -c 4000 "$TMP/err" >&2
    echo "----" >&2
}

expect_rc() {
    if [ "$RC" != "$1" ]; then
        fail "${2:-$LAST_CMD}: exit status $RC, expected $1"
        show
    fi
}

# expect_err REGEX [what]: some stderr line matches the extended regex.
expect_err() {
    if ! grep -Eq -- "$1" "$TMP/err"; then
        fail "${2:-$LAST_CMD}: no stderr line matches /$1/"
        show
    fi
}

expect_no_err() {
    if grep -Eq -- "$1" "$TMP/err"; then
        fail "${2:-$LAST_CMD}: a stderr line matches /$1/ but should not"
        show
    fi
}

expect_out() {
    if ! grep -Eq -- "$1" "$TMP/out"; then
        fail "${2:-$LAST_CMD}: no stdout line matches /$1/"
        show
    fi
}

# count_out REGEX: number of stdout lines matching.
count_out() { grep -Ec -- "$1" "$TMP/out"; }

# float comparisons: between VALUE LOW HIGH
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# wait_for FILE REGEX COUNT SECONDS: waits until COUNT lines of FILE match.
wait_for() {
    local deadline n
    deadline=$(($(date +%s) + $4))
    while :; do
        n=$(grep -Ec -- "$2" "$1" 2>/dev/null)
        [ "${n:-0}" -ge "$3" ] && return 0
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

# pids_of: the peers' pids from "X is pid P" lines of $TMP/err.
pids_of() { sed -n 's/^collab-run: .* is pid \([0-9][0-9]*\).*/\1/p' "$TMP/err"; }

alive() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" | cut -c1)" != Z ]; }

finish() {
    if [ "$FAILED" != 0 ]; then
        echo "$(basename "$0"): FAILED" >&2
        exit 1
    fi
    echo "$(basename "$0"): passed"
    exit 0
}
