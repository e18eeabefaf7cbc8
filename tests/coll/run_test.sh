#!/usr/bin/env bash
# run_test.sh - runs one MPI program on N peers in one mode and judges the
# outcome.  Used by the CTests generated from tests/coll/testlist.
#
#   run_test.sh --mode MODE --np N --timeout S --expect EXPECT
#               --collab-run PATH --mpiexec PATH --logdir DIR -- PROGRAM ARGS...
#
# MODE
#   mpich     real MPICH: mpiexec.mpich -n N PROGRAM ARGS
#   preload   collab-run -n N --abi mpich --mode preload  (LD_PRELOAD)
#   replace   collab-run -n N --abi mpich --mode replace  (LD_LIBRARY_PATH)
#   compare   mpich, then preload: both must meet EXPECT and print the same
#             "<program>: ..." lines on stdout
# EXPECT      comma-separated: pass | fail | exit=N, and grep=WORD (WORD must
#             appear in the combined output of every run)
#
# Output of each run is kept in LOGDIR/<mode>.out and .err.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/../stack_watch.sh"

mode='' np='' tmo='' expect='pass' collab_run='' mpiexec='' logdir=''
while [ $# -gt 0 ]; do
    case "$1" in
    --mode) mode=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --collab-run) collab_run=$2; shift 2 ;;
    --mpiexec) mpiexec=$2; shift 2 ;;
    --logdir) logdir=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "run_test.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
if [ -z "$mode" ] || [ -z "$np" ] || [ -z "$tmo" ] || [ -z "$logdir" ] || [ $# -eq 0 ]; then
    echo "run_test.sh: missing arguments (see the header of this script)" >&2
    exit 2
fi
prog=$1
shift
name=$(basename "$prog")
mkdir -p "$logdir" || exit 2

want_exit='' want_fail=0 want_grep=()
IFS=',' read -r -a parts <<<"$expect"
for p in "${parts[@]}"; do
    case "$p" in
    pass) want_exit=0 ;;
    fail) want_fail=1 ;;
    exit=*) want_exit=${p#exit=} ;;
    grep=*) want_grep+=("${p#grep=}") ;;
    *) echo "run_test.sh: bad expectation '$p'" >&2; exit 2 ;;
    esac
done

if [ ! -x "$prog" ]; then
    echo "run_test.sh: program $prog is not built" >&2
    exit 1
fi

# Runs PROGRAM in one mode; sets $status and leaves the logs.
run_one() {
    local m=$1 out="$logdir/$1.out" err="$logdir/$1.err"
    local -a cmd
    shift
    case "$m" in
    mpich)
        if [ -z "$mpiexec" ] || [ ! -x "$mpiexec" ]; then
            echo "run_test.sh: mpiexec.mpich not found" >&2
            status=1
            return
        fi
        cmd=(timeout -k 5 "$tmo" "$mpiexec" -n "$np" "$prog" "$@")
        ;;
    preload | replace)
        if [ -z "$collab_run" ] || [ ! -x "$collab_run" ]; then
            echo "run_test.sh: collab-run is not built ($collab_run)" >&2
            status=1
            return
        fi
        # collab-run enforces the deadline itself; the outer timeout only
        # guards against collab-run hanging.
        cmd=(timeout -k 5 $((tmo + 30)) "$collab_run" -n "$np" --abi mpich --mode "$m"
             --timeout "$tmo" -- "$prog" "$@")
        ;;
    *)
        echo "run_test.sh: unknown mode '$m'" >&2
        status=2
        return
        ;;
    esac
    echo "run_test.sh: [$m] ${cmd[*]}"
    local t0=$SECONDS
    rm -f "$logdir/$m.stacks"
    "${cmd[@]}" >"$out" 2>"$err" &
    local pid=$!
    # Shortly before the deadline, record where the peers are stuck.
    if [ "$m" != mpich ] && command -v gdb >/dev/null 2>&1; then
        stack_watch "$pid" $((tmo > 20 ? tmo - 10 : tmo / 2)) "$logdir/$m.stacks" &
    fi
    wait "$pid"
    status=$?
    echo "run_test.sh: [$m] exit status $status after $((SECONDS - t0)) s"
}

# Judges one run against EXPECT; prints why it failed.
judge() {
    local m=$1 ok=0
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "run_test.sh: [$m] FAILED: timed out after $tmo s" >&2
        ok=1
    elif [ -n "$want_exit" ] && [ "$status" -ne "$want_exit" ]; then
        echo "run_test.sh: [$m] FAILED: exit status $status, expected $want_exit" >&2
        ok=1
    elif [ "$want_fail" -eq 1 ] && [ "$status" -eq 0 ]; then
        echo "run_test.sh: [$m] FAILED: succeeded, expected a failure" >&2
        ok=1
    fi
    for w in "${want_grep[@]+"${want_grep[@]}"}"; do
        if ! grep -q -e "$w" "$logdir/$m.out" "$logdir/$m.err"; then
            echo "run_test.sh: [$m] FAILED: output does not mention '$w'" >&2
            ok=1
        fi
    done
    if [ "$ok" -ne 0 ]; then
        echo "----- $m stdout (last 40 lines)" >&2
        tail -n 40 "$logdir/$m.out" >&2
        echo "----- $m stderr (last 40 lines)" >&2
        tail -n 40 "$logdir/$m.err" >&2
        if [ -s "$logdir/$m.stacks" ]; then
            echo "----- $m: stacks of the peers still running near the deadline" >&2
            head -n 120 "$logdir/$m.stacks" >&2
        fi
    fi
    return $ok
}

# The program's own report lines, whatever prefix a launcher adds.
report_lines() {
    sed -n "s/^.*\\($name: \\)/\\1/p" "$1"
}

rc=0
if [ "$mode" = compare ]; then
    run_one mpich "$@"
    judge mpich || rc=1
    run_one preload "$@"
    judge preload || rc=1
    if [ "$(report_lines "$logdir/mpich.out" | wc -l)" -eq 0 ]; then
        echo "run_test.sh: FAILED: no '$name: ' lines to compare in the MPICH run" >&2
        rc=1
    elif ! diff -u <(report_lines "$logdir/mpich.out") <(report_lines "$logdir/preload.out") \
        >"$logdir/compare.diff"; then
        echo "run_test.sh: FAILED: output differs between MPICH and mpicollab:" >&2
        cat "$logdir/compare.diff" >&2
        rc=1
    else
        echo "run_test.sh: output identical on MPICH and mpicollab ($(report_lines "$logdir/mpich.out" | wc -l) lines)"
    fi
else
    run_one "$mode" "$@"
    judge "$mode" || rc=1
fi
[ "$rc" -eq 0 ] && echo "run_test.sh: PASSED"
exit $rc
