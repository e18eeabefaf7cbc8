#!/usr/bin/env bash
# run.sh - MPI_Allreduce latency and bus bandwidth, real MPICH vs mpicollab.
#
#   bench/run.sh [--build DIR] [--np N] [--max-bytes B] [--time S]
#                [--mode preload|replace] [--in-place] [--out FILE]
#
# Runs build/bench/allreduce_bench (built with mpicc.mpich) once with
# `mpiexec.mpich -n N` and once with `collab-run -n N`, in the same script
# run, then prints one table: per size the latency and bus bandwidth of
# each, and the ratios ours/MPICH (latency: lower is better; bandwidth:
# higher is better).  Method: docs/benchmarks.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" np=4 max=$((64 << 20)) time=0.5 mode=preload inplace='' out=''
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --max-bytes) max=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --in-place) inplace=--in-place; shift ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
bench="$build/bench/allreduce_bench"
crun="$build/bin/collab-run"
mpiexec=$(command -v mpiexec.mpich || true)
for f in "$bench" "$crun" "$mpiexec"; do
    [ -n "$f" ] && [ -x "$f" ] || { echo "run.sh: missing $f (build first: scripts/test.sh or cmake --build)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--max-bytes "$max" --time "$time" $inplace)

echo "run.sh: MPICH:      $mpiexec -n $np $bench ${args[*]}" >&2
timeout 3600 "$mpiexec" -n "$np" "$bench" "${args[@]}" >"$tmp/mpich" 2>"$tmp/mpich.err"
st_m=$?
echo "run.sh: mpicollab:  $crun -n $np --mode $mode -- $bench ${args[*]}" >&2
timeout 3700 "$crun" -n "$np" --mode "$mode" --timeout 3600 -- "$bench" "${args[@]}" \
    >"$tmp/ours" 2>"$tmp/ours.err"
st_o=$?
[ "$st_m" -eq 0 ] || { echo "run.sh: the MPICH run failed ($st_m):" >&2; tail "$tmp/mpich.err" >&2; }
[ "$st_o" -eq 0 ] || { echo "run.sh: the mpicollab run failed ($st_o):" >&2; tail "$tmp/ours.err" >&2; }

rows() { sed -n 's/^.*bench: \([0-9]\)/\1/p' "$1"; }
{
    printf '# MPI_Allreduce, float sum%s, %d peers on %s (%s cores)\n' "${inplace:+ in place}" \
        "$np" "$(hostname)" "$(nproc)"
    printf '%12s | %12s %12s %8s | %10s %10s %8s | %s\n' bytes "MPICH us" "ours us" ratio \
        "MPICH MB/s" "ours MB/s" ratio check
    join -j 1 <(rows "$tmp/mpich" | sort -k1,1) <(rows "$tmp/ours" | sort -k1,1) | sort -n |
        awk '{
            # fields: bytes, then (iters lat algbw busbw check) for MPICH and ours
            lr = $3 > 0 ? $8 / $3 : 0; br = $5 > 0 ? $10 / $5 : 0;
            printf "%12d | %12.1f %12.1f %8.2f | %10.2f %10.2f %8.2f | %s/%s\n",
                   $1, $3, $8, lr, $5, $10, br, $6, $11 }'
    echo "# bus bandwidth = bytes / latency * 2(n-1)/n; ratio = ours / MPICH"
    echo "# (latency: lower is better; bandwidth: higher is better)"
} | tee ${out:+"$out"}
[ "$st_m" -eq 0 ] && [ "$st_o" -eq 0 ]
