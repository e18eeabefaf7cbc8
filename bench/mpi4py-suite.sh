#!/usr/bin/env bash
# mpi4py-suite.sh - mpi4py's own test suite through the Open MPI face.
#
#   bench/mpi4py-suite.sh CHECKOUT [--build DIR] [--np N] [--timeout S]
#                         [--only test_x.py,...] [--out DIR] [--reuse]
#
# CHECKOUT is a checkout of mpi4py at the tag of the installed module
# (Debian's python3-mpi4py is 3.1.4: `git checkout 3.1.4`); its test/
# folder is used unchanged.  Each test file runs on its own, as
#   collab-run -n N --abi ompi /usr/bin/python3 test/FILE
# (N = 3 by default), so a failure in one file cannot hide another.  For
# each file the script prints pass, fail or stopped (no unittest summary:
# an error at import, a crash or a timeout), and for each failed test
# (FAIL or ERROR, any rank) or stopped file its class, decided by
# bench/mpi4py_classify.py: a feature outside the declared scope
# (docs/testing.md: inter-communicators, topologies, and DESIGN's
# out-of-scope RMA, I/O and dynamic processes), or "defect".  Logs go to
# DIR (default a fresh folder under /tmp); --reuse classifies the logs
# already in DIR again instead of running.  Exit status 0 when no failure
# is a defect.
set -u
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
src=$1; shift
build="$here/../build" np=3 timeout=300 only='' out='' reuse=0
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --reuse) reuse=1; shift ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "mpi4py-suite.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -f "$src/test/runtests.py" ] || { echo "mpi4py-suite.sh: $src has no test/runtests.py" >&2; exit 2; }
crun="$build/bin/collab-run"
[ -x "$crun" ] || { echo "mpi4py-suite.sh: $crun is not built" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d /tmp/mpi4py-suite.XXXXXX)
mkdir -p "$out"
py=/usr/bin/python3

pass=0 fail=0 err=0 defects=0
declare -A per_class=()
files=$(cd "$src/test" && ls test_*.py)
[ -n "$only" ] && files=$(echo "$only" | tr ',' ' ')
for f in $files; do
    log="$out/${f%.py}.log"
    if [ "$reuse" -eq 1 ] && [ -f "$log" ]; then
        rc=$(sed -n 's/^collab-run: summary: .* exited with status \([0-9]*\).*/\1/p' "$log" |
            sort -n | tail -n 1)
        rc=${rc:-0}
    else
        (cd "$src/test" && timeout $((timeout + 30)) "$crun" -n "$np" --abi ompi \
            --timeout "$timeout" "$py" "$f") >"$log" 2>&1
        rc=$?
    fi
    ran=$(grep -c '^Ran [0-9]* tests\? in' "$log")
    found=$("$py" "$here/mpi4py_classify.py" "$log" "$np")
    if [ -z "$found" ] && [ "$rc" -eq 0 ] && [ "$ran" -ge 1 ]; then
        echo "$f: pass"
        pass=$((pass + 1))
        continue
    fi
    if [ -z "$found" ]; then
        found="defect	(exit $rc with no failed test)"
    fi
    if [ "$ran" -lt "$np" ] && ! grep -q '^Ran' "$log"; then
        echo "$f: stopped (exit $rc; see $log)"
        err=$((err + 1))
    else
        echo "$f: fail (exit $rc)"
        fail=$((fail + 1))
    fi
    while IFS=$'\t' read -r c t; do
        [ "$c" = defect ] && defects=$((defects + 1))
        per_class[$c]=$(( ${per_class[$c]:-0} + 1 ))
        echo "    [$c] $t"
    done <<<"$found"
done
echo
echo "files: $pass passed, $fail failed, $err stopped early (np $np; logs in $out)"
echo "failed tests (or stopped files) per class:"
for c in "${!per_class[@]}"; do
    echo "  $c: ${per_class[$c]}"
done | sort
[ "$defects" -eq 0 ]
