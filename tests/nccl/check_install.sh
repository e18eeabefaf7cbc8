#!/usr/bin/env bash
# The NCCL face installs alone (component mpicollab_nccl) as
# <prefix>/lib/libmpicollab-nccl.so (with its SONAME links) and
# <prefix>/lib/mpicollab/libnccl.so.2 (SONAME libnccl.so.2), and the
# installed libraries export what the real libnccl.so.2 exports.
# usage: check_install.sh BUILD REAL_LIBNCCL
build=$1 real=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nccl_install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --component mpicollab_nccl --prefix "$tmp" > "$tmp/log" 2>&1 ||
    { cat "$tmp/log"; echo "FAIL: cmake --install --component mpicollab_nccl"; exit 1; }
rc=0
for f in lib/libmpicollab-nccl.so lib/libmpicollab-nccl.so.0 lib/mpicollab/libnccl.so.2; do
    [ -e "$tmp/$f" ] || { echo "FAIL: $f not installed"; rc=1; }
done
readelf -d "$tmp/lib/mpicollab/libnccl.so.2" 2> /dev/null | grep -q 'SONAME.*\[libnccl.so.2\]' ||
    { echo "FAIL: libnccl.so.2 has not the SONAME libnccl.so.2"; rc=1; }
other=$(find "$tmp" -type f ! -path '*/lib/libmpicollab-nccl.so*' ! -path '*/lib/mpicollab/libnccl.so.2' ! -name log)
[ -z "$other" ] || { echo "FAIL: the component installs more: $other"; rc=1; }
[ $rc -eq 0 ] || exit 1
bash "$here/check_exports.sh" "$real" "$tmp/lib/libmpicollab-nccl.so" "$tmp/lib/mpicollab/libnccl.so.2"
