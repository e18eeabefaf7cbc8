#!/usr/bin/env bash
# gpu-prepare.sh - prepares, on a machine without a GPU, the folder that
# scripts/gpu-check.sh needs on a GPU machine that has no network and no
# package registry (docs/cuda.md, "Checking on a GPU machine").
#
#   scripts/gpu-prepare.sh [--build DIR] [--out DIR]
#
# --build  an existing build of this tree, configured with the CUDA toolkit
#          (default: build/); it is installed, not rebuilt.
# --out    the folder to fill (default: gpu-carry/ in the repository root,
#          ignored by git): prefix/ (the installed library, collab-run and
#          the device plugin), bin/ (gpu_allreduce built with mpicc.mpich
#          and the CUDA runtime, cuda_kernels_test, devptr_bench), debs/
#          (the runtime packages of libzmq, CZMQ, libsodium, hwloc and
#          everything they load that glibc and libstdc++ do not provide)
#          and root/ (those packages unpacked with dpkg -x).
# Then carry the folder to the GPU machine (the device tool's `carry`) and
# run scripts/gpu-check.sh there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
build="$repo/build" out="$repo/gpu-carry"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-prepare.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
die() { echo "gpu-prepare.sh: $*" >&2; exit 1; }
cuda=${CUDA_HOME:-/usr/local/cuda}

[ -f "$build/CMakeCache.txt" ] || die "$build is not a build folder (cmake -S . -B build first)"
[ -f "$build/lib/libmpicollab-cuda.so" ] ||
    die "$build has no device plugin: configure it where the CUDA toolkit is found ($cuda)"
command -v mpicc.mpich > /dev/null || die "mpicc.mpich not found (scripts/deps.sh installs it)"
[ -f "$cuda/lib64/libcudart_static.a" ] || die "no CUDA runtime at $cuda/lib64"

rm -rf "$out"
mkdir -p "$out/bin" "$out/debs" "$out/root"
out=$(cd "$out" && pwd)

echo "gpu-prepare: building and installing $build into $out/prefix"
nice cmake --build "$build" -j2 > "$out/build.log" 2>&1 || die "build failed (see $out/build.log)"
cmake --install "$build" --prefix "$out/prefix" > "$out/install.log" 2>&1 ||
    die "install failed (see $out/install.log)"
cp "$build/lib/libmpicollab-cuda.so" "$out/prefix/lib/" 2> /dev/null || true
strip --strip-debug "$out"/prefix/lib/*.so* "$out"/prefix/lib/mpicollab/*.so* 2> /dev/null || true

echo "gpu-prepare: building the check programs"
mpicc.mpich -O2 -Wall -Wextra -I"$cuda/include" "$repo/scripts/gpu/gpu_allreduce.c" \
    -L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread -o "$out/bin/gpu_allreduce"
cp "$build/cuda/cuda_kernels_test" "$build/bench/devptr_bench" "$out/bin/"
strip --strip-debug "$out"/bin/* 2> /dev/null || true

# The packages behind every library our programs load, except the base
# system's (glibc, libgcc, libstdc++), which the GPU machine has newer.
echo "gpu-prepare: collecting runtime packages"
pkgs=$(for f in "$out"/prefix/lib/*.so* "$out"/prefix/bin/*; do ldd "$f" 2> /dev/null; done |
    awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
        real=$(readlink -f "$lib")
        p=$(dpkg -S "$lib" 2> /dev/null || dpkg -S "$real" 2> /dev/null || true)
        [ -n "$p" ] && echo "${p%%:*}"
    done | sort -u | grep -vxE 'libc6|libgcc-s1|libstdc\+\+6' || true)
[ -n "$pkgs" ] || die "found no runtime packages (is ldd working?)"
for p in $pkgs; do
    ver=$(dpkg-query -W -f='${Version}' "$p")
    arch=$(dpkg-query -W -f='${Architecture}' "$p")
    cached=$(ls /var/cache/apt/archives/"${p}_${ver//:/%3a}_${arch}.deb" 2> /dev/null | head -1 || true)
    if [ -n "$cached" ]; then
        cp "$cached" "$out/debs/"
    else
        # The installed version first, else the archive's current one.
        (cd "$out/debs" && { apt-get download -q "$p=$ver" || apt-get download -q "$p"; } \
            > /dev/null 2>&1) || die "cannot get the package $p (apt-get download)"
    fi
done
for d in "$out"/debs/*.deb; do dpkg -x "$d" "$out/root"; done
rm -rf "$out/root/usr/share"
echo "$pkgs" | tr ' ' '\n' > "$out/debs/PACKAGES"
size=$(du -sm "$out" | cut -f1)
echo "gpu-prepare: $out is ready ($size MiB; packages: $(echo $pkgs | tr '\n' ' '))"
[ "$size" -lt 60 ] || echo "gpu-prepare: warning: $size MiB is close to the 64 MiB a device call carries" >&2
