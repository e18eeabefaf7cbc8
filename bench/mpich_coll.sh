#!/usr/bin/env bash
# mpich_coll.sh - MPICH 4.0.2's own collective tests (test/mpi/coll), built
# with mpicc.mpich from a checkout of MPICH outside this repository, run
# unchanged on mpicollab following their testlist.
#
#   bench/mpich_coll.sh --src MPICH_CHECKOUT [--build DIR] [--work DIR]
#                       [--max-np 16] [--only REGEX] [--timeout S] [--mpich]
#                       [--large] [--skip-merged-comm]
#
# MPICH_CHECKOUT is a checkout of github.com/pmodels/mpich at tag v4.0.2
# (git archive v4.0.2 test/mpi is enough).  The tests are built by hand,
# without MPICH's configure: test/mpi/util's mtest files and dtpools, with
# a minimal mpitestconf.h and an empty mtest_mpix.h written into WORK
# (default: a new folder in /tmp) and a minimal dtpools/dtpoolsconf.h
# written into the checkout if it has none.  A line whose test has no
# source of its own is built as coll/Makefile.am says (its _SOURCES and the
# -D flags of its _CPPFLAGS: the nonblocking variants).  Every line of coll/testlist.in with at
# most MAX-NP processes runs through collab-run (preload, MPICH face), with
# the line's arg= arguments and env= variables (lines marked @largetest@
# only with --large, as in MPICH); a run passes when it exits
# 0 and prints "No Errors", as MPICH's runtests judges.  Tests that do not
# build are reported as such.  --mpich runs each line on real MPICH too.
# --skip-merged-comm builds MTest from a copy in WORK whose communicator
# generator skips its one communicator made by MPI_Intercomm_create and
# MPI_Intercomm_merge (inter-communicators are out of scope), so that the
# tests looping over MTest's communicators exercise the others instead of
# failing as a whole; the checkout is never changed.
# Prints one line per run and a summary; the logs stay in WORK/logs.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" src='' work='' maxnp=16 only='' tmo=180 mpich=0 large=0 skipmerge=0
while [ $# -gt 0 ]; do
    case "$1" in
    --src) src=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --max-np) maxnp=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --mpich) mpich=1; shift ;;
    --large) large=1; shift ;;
    --skip-merged-comm) skipmerge=1; shift ;;
    -h | --help) sed -n '2,/^set -u/{/^set -u/!p}' "$0"; exit 0 ;;
    *) echo "mpich_coll.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
t="$src/test/mpi"
if [ -z "$src" ] || [ ! -f "$t/coll/testlist.in" ]; then
    echo "mpich_coll.sh: --src must name an MPICH checkout (test/mpi/coll/testlist.in)" >&2
    exit 2
fi
run="$build/bin/collab-run"
[ -x "$run" ] || { echo "mpich_coll.sh: $run is not built" >&2; exit 2; }
[ -n "$work" ] || work=$(mktemp -d /tmp/mpich_coll.XXXXXX)
mkdir -p "$work/include" "$work/bin" "$work/logs"
cat >"$work/include/mpitestconf.h" <<'CONF'
/* Minimal configuration for building MPICH's tests without configure. */
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_PTHREAD_H 1
#define HAVE_USLEEP 1
#define HAVE_DECL_USLEEP 1
#define THREAD_PACKAGE_POSIX 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
CONF
printf '#ifndef MTEST_MPIX_H_INCLUDED\n#define MTEST_MPIX_H_INCLUDED\n#endif\n' \
    >"$work/include/mtest_mpix.h"
inc=(-I"$work/include" -I"$t/include" -I"$t/dtpools/include")
# dtpools includes "../dtpoolsconf.h" from its own include folder.
[ -f "$t/dtpools/dtpoolsconf.h" ] ||
    printf '#define HAVE_STDLIB_H 1\n#define HAVE_STRING_H 1\n#define HAVE_STDINT_H 1\n' \
        >"$t/dtpools/dtpoolsconf.h"
# The copy of mtest.c compiled with --skip-merged-comm: case 5 of
# MTestGetIntracommGeneral, "Dup of the world using MPI_Intercomm_merge",
# yields MPI_COMM_NULL at once, as it does on one process.
mtest_src="$t/util/mtest.c"
if [ "$skipmerge" -eq 1 ]; then
    mtest_src="$work/mtest_skip_merge.c"
    sed '/Dup of the world using MPI_Intercomm_merge/a\
                    *comm = MPI_COMM_NULL; break; /* mpich_coll.sh --skip-merged-comm */' \
        "$t/util/mtest.c" >"$mtest_src"
    grep -q 'skip-merged-comm' "$mtest_src" ||
        { echo "mpich_coll.sh: --skip-merged-comm: MTest's merged communicator not found" >&2; exit 2; }
    rm -f "$work/mtest.o"
fi
objs=()
for f in util/mtest util/mtest_common util/dtypes util/mtest_thread dtpools/src/dtpools \
    dtpools/src/dtpools_attr dtpools/src/dtpools_custom dtpools/src/dtpools_desc \
    dtpools/src/dtpools_init_verify dtpools/src/dtpools_misc; do
    o="$work/$(basename "$f").o"
    if [ ! -f "$o" ]; then
        c="$t/$f.c"
        [ "$f" = util/mtest ] && c=$mtest_src
        mpicc.mpich -O1 -w -I"$t/util" "${inc[@]}" -c "$c" -o "$o" ||
            { echo "mpich_coll.sh: cannot build $f.c" >&2; exit 2; }
    fi
    objs+=("$o")
done
pass=0 fail=0 nobuild=0 skipped=0
while read -r name np rest; do
    case "$name" in '' | '#'*) continue ;; esac
    if [[ "$name" == @largetest@* ]]; then
        if [ "$large" -eq 0 ]; then
            skipped=$((skipped + 1))
            continue
        fi
        name=${name#@largetest@}
    fi
    [ -n "$only" ] && ! [[ "$name" =~ $only ]] && continue
    if ! [[ "$np" =~ ^[0-9]+$ ]] || [ "$np" -gt "$maxnp" ]; then
        skipped=$((skipped + 1))
        continue
    fi
    args=() envs=()
    for w in $rest; do
        case "$w" in
        arg=*) args+=("${w#arg=}") ;;
        env=*) envs+=("${w#env=}") ;;
        esac
    done
    bin="$work/bin/$name"
    if [ ! -x "$bin" ] && [ ! -f "$bin.nobuild" ]; then
        # A test is coll/NAME.c, or, for the variants Makefile.am builds
        # from another test (nballtoall1, nbcoll2, nbic*: NAME_SOURCES and
        # -D flags in NAME_CPPFLAGS, e.g. -DUSE_MTEST_NBC), that file.
        csrc="$t/coll/$name.c" cflags=()
        if [ ! -f "$csrc" ]; then
            am=$(sed -n "s/^${name}_SOURCES *= *\([A-Za-z0-9_]*\.c\) *\$/\1/p" "$t/coll/Makefile.am")
            [ -n "$am" ] && csrc="$t/coll/$am"
            for w in $(sed -n "s/^${name}_CPPFLAGS *= *//p" "$t/coll/Makefile.am"); do
                [[ "$w" == -D* ]] && cflags+=("$w")
            done
        fi
        if [ -f "$csrc" ] &&
            mpicc.mpich -O1 -w "${cflags[@]+"${cflags[@]}"}" "${inc[@]}" -o "$bin" "$csrc" \
                "${objs[@]}" -lm >"$bin.buildlog" 2>&1; then
            :
        else
            touch "$bin.nobuild"
        fi
    fi
    id="${name}_np${np}$(printf '_%s' "${args[@]+"${args[@]}"}" | tr -c 'A-Za-z0-9_=.-' '_')"
    if [ -f "$bin.nobuild" ]; then
        nobuild=$((nobuild + 1))
        printf '%-50s not built\n' "$id"
        continue
    fi
    if [ "$mpich" -eq 1 ]; then
        env "${envs[@]+"${envs[@]}"}" timeout -k 5 "$tmo" mpiexec.mpich -n "$np" "$bin" \
            "${args[@]+"${args[@]}"}" >"$work/logs/$id.mpich" 2>&1 </dev/null
    fi
    t0=$(date +%s)
    env "${envs[@]+"${envs[@]}"}" timeout -k 5 $((tmo + 30)) "$run" -n "$np" --abi mpich \
        --mode preload --timeout "$tmo" -- "$bin" "${args[@]+"${args[@]}"}" \
        >"$work/logs/$id.log" 2>&1 </dev/null
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q "No Errors" "$work/logs/$id.log"; then
        pass=$((pass + 1))
        printf '%-50s passed  %4d s\n' "$id" $(($(date +%s) - t0))
    else
        fail=$((fail + 1))
        printf '%-50s FAILED  %4d s (exit %d): %s\n' "$id" $(($(date +%s) - t0)) "$rc" \
            "$(grep -h -i "error\|found\|expected" "$work/logs/$id.log" |
                grep -v -m1 "found no active peers" | cut -c1-120)"
    fi
done <"$t/coll/testlist.in"
echo "mpich_coll.sh: $pass passed, $fail failed, $nobuild not built, $skipped skipped" \
    "(more than $maxnp processes, large, or no count); logs in $work/logs"
