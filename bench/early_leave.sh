#!/usr/bin/env bash
# early_leave.sh - ranks that finalize while another is still busy, every
# kind of last collective, 3 to 16 peers (too long for CI; the CTests
# coll.early_leave_* run a few of these cases).
#
#   bench/early_leave.sh [--build DIR] [--np "3 5 8 12 16"] [--repeat N]
#                        [--out DIR] [--mpich]
#
# For each peer count, each last collective (reduce, reduce_big, gatherv,
# scatterv, bcast, rsb, allreduce) and each choice of the slow rank (0, the
# root of the rooted ones, and the last rank), tests/coll/early_leave runs
# through collab-run (preload, MPICH face): every rank but the slow one
# finalizes right after the last collective, and every rank checks its
# results.  --mpich runs the same cases on real MPICH first, as a check of
# the program.  Prints one line per case and a summary; exit status 0 when
# every case passed.  The logs stay in OUT (default: a new folder in /tmp).
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" nps="3 5 8 12 16" repeat=1 out='' mpich=0
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mpich) mpich=1; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "early_leave.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
prog="$build/tests/coll/early_leave"
run="$build/bin/collab-run"
for f in "$prog" "$run"; do
    if [ ! -x "$f" ]; then
        echo "early_leave.sh: $f is not built" >&2
        exit 2
    fi
done
[ -n "$out" ] || out=$(mktemp -d /tmp/early_leave.XXXXXX)
mkdir -p "$out"
pass=0 fail=0
for np in $nps; do
    for kind in reduce reduce_big gatherv scatterv bcast rsb allreduce; do
        for slow in 0 -1; do
            for r in $(seq 1 "$repeat"); do
                name="np${np}_${kind}_slow${slow}_${r}"
                if [ "$mpich" -eq 1 ]; then
                    timeout -k 5 120 mpiexec.mpich -n "$np" "$prog" --last "$kind" --slow "$slow" \
                        >"$out/$name.mpich" 2>&1 || echo "$name: FAILED on MPICH (the program is wrong)"
                fi
                t0=$(date +%s.%N)
                timeout -k 5 150 "$run" -n "$np" --abi mpich --mode preload --timeout 120 -- \
                    "$prog" --last "$kind" --slow "$slow" >"$out/$name.log" 2>&1
                rc=$?
                t=$(echo "$(date +%s.%N) - $t0" | bc)
                if [ "$rc" -eq 0 ] && grep -q "result is complete" "$out/$name.log"; then
                    pass=$((pass + 1))
                    printf '%-34s passed  %6.2f s\n' "$name" "$t"
                else
                    fail=$((fail + 1))
                    printf '%-34s FAILED  %6.2f s (exit %d, log %s)\n' "$name" "$t" "$rc" "$out/$name.log"
                    grep -h "early_leave: rank" "$out/$name.log" | head -3
                fi
            done
        done
    done
done
echo "early_leave.sh: $pass passed, $fail failed (logs in $out)"
[ "$fail" -eq 0 ]
