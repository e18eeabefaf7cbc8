#!/usr/bin/env bash
# check_scripts.sh SRC BUILD PYTHON - what of scripts/gpu-check.sh runs
# without a GPU: shell syntax, Python syntax, the core linking no CUDA
# library and the plugin exporting only its entry, the sandbox probe, and the
# `env` stage against a folder laid out as gpu-prepare.sh lays it out (the
# build's libraries and collab-run as the prefix).
set -u
src=$1 build=$2 py=$3
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

for s in gpu-check.sh gpu-prepare.sh; do
    bash -n "$src/scripts/$s" || fail "$s: syntax"
done
"$py" -m py_compile "$src/scripts/gpu/torch_train.py" "$src/scripts/gpu/sandbox_probe.py" \
    "$src/scripts/gpu/ddp_train.py" "$src/scripts/gpu/ddp_store.py" ||
    fail "Python syntax"
"$src/scripts/gpu-check.sh" bogus > /dev/null 2>&1 && fail "an unknown stage was accepted"

# The core and the faces link no CUDA library (the plugin is dlopened).
for lib in "$build"/lib/libmpicollab.so "$build"/lib/libmpicollab-ompi.so \
    "$build"/lib/libmpicollab-nccl.so "$build"/lib/mpicollab/*.so*; do
    [ -e "$lib" ] || continue
    if readelf -d "$lib" | grep -qE 'NEEDED.*(libcuda|libcudart|libnccl)'; then
        fail "$(basename "$lib") links a CUDA library"
    fi
done
if [ -e "$build/lib/libmpicollab-cuda.so" ]; then
    exported=$(nm -D --defined-only "$build/lib/libmpicollab-cuda.so" | awk '{print $3}' | grep -v '^$')
    [ "$exported" = collab_cuda_plugin_ops ] || fail "the plugin exports more than its entry: $exported"
fi

mkdir -p "$tmp/carry/prefix" "$tmp/carry/bin" "$tmp/carry/root" "$tmp/out"
ln -s "$build/lib" "$tmp/carry/prefix/lib"
ln -s "$build/bin" "$tmp/carry/prefix/bin"
OUT="$tmp/out" "$src/scripts/gpu-check.sh" --dir "$tmp/carry" --python "$py" env > "$tmp/log" 2>&1
rc=$?
cat "$tmp/log"
grep -q '^glibc: machine [0-9.]*, programs need [0-9.]*' "$tmp/log" || fail "no glibc line"
grep -q '^libraries: all resolved' "$tmp/log" || fail "libraries not resolved"
[ "$(grep -c '^probe .*: ok$' "$tmp/log")" -eq 4 ] || fail "a sandbox probe failed"
grep -q '^mpi4py ABI used: \(mpich\|ompi\)$' "$tmp/log" || fail "no mpi4py ABI"
grep -q '^==================== gpu-check summary' "$tmp/log" || fail "no summary"
# Without a driver the stage reports it and fails; with one it passes.
if "$py" -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2> /dev/null; then
    [ $rc -eq 0 ] || fail "env stage failed on a machine with a driver"
else
    grep -q 'FAIL: no libcuda.so.1' "$tmp/log" || fail "the missing driver is not reported"
    [ $rc -ne 0 ] || fail "env stage passed without a driver"
fi
[ $fails -eq 0 ] && echo "gpu_check_scripts: passed"
exit $fails
