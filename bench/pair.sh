#!/usr/bin/env bash
# pair.sh - 2 peers on one host against MPICH: medians of interleaved runs.
#
#   bench/pair.sh [--build DIR] [--np 2] [--runs 5] [--time S]
#                 [--sizes "8 1048576 16777216"] [--also "NAME:VAR=VAL ..."]
#                 [--coll allreduce|bcast|reduce|barrier] [--out FILE]
#
# Runs build/bench/allreduce_bench (built with mpicc.mpich) on
# `mpiexec.mpich -n NP` and on `collab-run -n NP`, alternating MPICH and
# mpicollab --runs times, and prints per size the median latency of each
# with its spread (min..max), the ratio of the medians (ours / MPICH), and
# the median bus bandwidth of each as a fraction of this machine's memcpy
# bandwidth (build/bench/memcpy_bench, measured at the start and the end).
# --also adds a mpicollab variant run in the same rotation with extra
# environment (e.g. --also "noshm:COLLAB_SHM=0"); repeatable.  --coll
# times MPI_Bcast from rank 0, MPI_Reduce to rank 0 or MPI_Barrier
# instead (their bus bandwidth column is the all-reduce's formula, not
# meaningful; a barrier's size only names its row: --sizes 8).
# Method: docs/benchmarks.md.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" np=2 runs=5 time=0.3 sizes="8 1048576 16777216" out='' coll=allreduce
names=(mpich ours) envs=("" "")
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --also)
        case "$2" in *:*=*) ;; *) echo "pair.sh: --also wants NAME:VAR=VAL, got '$2'" >&2; exit 2 ;; esac
        names+=("${2%%:*}"); envs+=("${2#*:}"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --coll)
        case "$2" in allreduce | bcast | reduce | barrier) coll=$2 ;; *) echo "pair.sh: --coll wants allreduce, bcast, reduce or barrier, got '$2'" >&2; exit 2 ;; esac
        shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "pair.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$build/bench/allreduce_bench" crun="$build/bin/collab-run" mcb="$build/bench/memcpy_bench"
mpiexec=$(command -v mpiexec.mpich || true)
for f in "$bench" "$crun" "$mcb" "$mpiexec"; do
    [ -n "$f" ] && [ -x "$f" ] || { echo "pair.sh: missing $f (build first)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
memcpy_rate() { "$mcb" | sed -n 's/.*median_MBps \([0-9.]*\).*/\1/p'; }
mc0=$(memcpy_rate)

# One run per size, so that every size of one run sees the same load.
one() { # variant index, size -> "size latency busbw check" on stdout
    local i=$1 s=$2 args=(--min-bytes "$2" --max-bytes "$2" --time "$time")
    [ "$coll" = allreduce ] || args+=("--$coll")
    if [ "${names[$i]}" = mpich ]; then
        timeout 600 "$mpiexec" -n "$np" "$bench" "${args[@]}" 2>>"$tmp/err.$i"
    else
        # shellcheck disable=SC2086 # VAR=VAL words on purpose
        timeout 600 env ${envs[$i]} "$crun" -n "$np" --timeout 590 -- "$bench" "${args[@]}" \
            2>>"$tmp/err.$i"
    fi | sed -n 's/^.*bench: \([0-9]\)/\1/p' | awk '{print $1, $3, $5, $6}'
}
fail=0
for r in $(seq "$runs"); do
    for s in $sizes; do
        for i in "${!names[@]}"; do
            line=$(one "$i" "$s")
            if [ -z "$line" ]; then
                echo "pair.sh: run $r of ${names[$i]} at $s bytes failed:" >&2
                tail -3 "$tmp/err.$i" >&2
                fail=1
                continue
            fi
            echo "$i $line" >>"$tmp/all"
            case "$line" in *WRONG*) echo "pair.sh: WRONG result: ${names[$i]} $line" >&2; fail=1 ;; esac
        done
    done
done
mc1=$(memcpy_rate)
mc=$(awk -v a="$mc0" -v b="$mc1" 'BEGIN {printf "%.1f", (a + b) / 2}')

stat() { bench_stat "$tmp/all" "$@"; } # variant, size, field -> "median min max"
{
    case $coll in
    allreduce) what='MPI_Allreduce float sum' ;;
    bcast) what='MPI_Bcast floats from rank 0' ;;
    barrier) what='MPI_Barrier' ;;
    *) what='MPI_Reduce float sum to rank 0' ;;
    esac
    printf '# %s, %d peers on %s (%s cores, load %s), %d interleaved runs\n' "$what" \
        "$np" "$(hostname)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$runs"
    printf '# memcpy bandwidth %s MB/s (start %s, end %s)\n' "$mc" "$mc0" "$mc1"
    printf '# latency us: median [min..max]; ratio: median / MPICH median; bus: median bus MB/s and its fraction of memcpy\n'
    for i in "${!names[@]}"; do
        [ -n "${envs[$i]}" ] && printf '# variant %s: mpicollab with %s\n' "${names[$i]}" "${envs[$i]}"
    done
    printf '%10s | %-8s | %28s | %7s | %10s %7s\n' bytes variant "latency us" ratio "bus MB/s" "/memcpy"
    for s in $sizes; do
        read -r m0 _ _ <<<"$(stat 0 "$s" 3)"
        for i in "${!names[@]}"; do
            read -r m lo hi <<<"$(stat "$i" "$s" 3)"
            read -r bb _ _ <<<"$(stat "$i" "$s" 4)"
            awk -v s="$s" -v n="${names[$i]}" -v m="$m" -v lo="$lo" \
                -v hi="$hi" -v m0="$m0" -v bb="$bb" -v mc="$mc" 'BEGIN {
                printf "%10d | %-8s | %10.1f [%6.1f..%8.1f] | %7.2f | %10.1f %7.4f\n",
                       s, n, m, lo, hi, (m0 > 0 ? m / m0 : 0), bb, (mc > 0 ? bb / mc : 0) }'
        done
    done
} | tee ${out:+"$out"}
exit $fail
