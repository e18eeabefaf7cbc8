#!/usr/bin/env bash
# The NCCL face exports exactly the nccl*/pnccl* symbols of the real
# libnccl.so.2, with the same binding (nccl* weak, pnccl* strong), and
# besides them only collab_* and cudaMemcpyAsync (which follows the copies
# out of start-up broadcasts, docs/nccl.md §5); it needs no CUDA or NCCL
# library.
# usage: check_exports.sh REAL_LIBNCCL OUR_LIB...
real=$1
shift
[ -r "$real" ] || { echo "SKIP: no real libnccl.so.2 at '$real'"; exit 77; }
syms() { nm -D --defined-only "$1" | awk '$3 ~ /^p?nccl/ {print $2, $3}' | sort; }
want=$(syms "$real")
[ "$(echo "$want" | wc -l)" -ge 100 ] || { echo "FAIL: only $(echo "$want" | wc -l) symbols in $real"; exit 1; }
rc=0
for lib in "$@"; do
    got=$(syms "$lib")
    if [ "$got" != "$want" ]; then
        echo "FAIL: $lib differs from $real (< real, > ours):"
        diff <(echo "$want") <(echo "$got") | head -40
        rc=1
    fi
    other=$(nm -D --defined-only "$lib" | awk '$3 !~ /^(p?nccl|collab_)/ && $3 != "cudaMemcpyAsync" {print $3}')
    [ -z "$other" ] || { echo "FAIL: $lib exports more: $other"; rc=1; }
    needed=$(readelf -d "$lib" | grep NEEDED | grep -E 'libnccl|libcuda|libcudart' || true)
    [ -z "$needed" ] || { echo "FAIL: $lib needs $needed"; rc=1; }
    [ $rc -eq 0 ] && echo "ok: $lib exports the $(echo "$got" | wc -l) symbols of $real"
done
exit $rc
