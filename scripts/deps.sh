#!/usr/bin/env bash
# deps.sh - installs the Debian packages mpicollab needs, if any is missing.
#
# Quiet apt-get (as root, or through sudo); with nothing missing it does
# nothing and needs no privileges.  Used by scripts/test.sh and
# scripts/demo.sh (and so by CI).  Exit status 0 when everything is there.
# gdb is optional for the build: the tests use it to record where peers
# are stuck when a run reaches its deadline.  libsqlite3-dev and
# libmicrohttpd-dev build collab-monitor; chromium (headless) and
# prometheus (promtool) are what e2e.monitor checks its dashboard and
# /metrics with.  iptables lets e2e.relay (as root) put client-mode
# trainers in network namespaces that drop inbound connections.
set -u
packages=(
    cmake make gcc g++ pkg-config
    libzmq3-dev libczmq-dev libsodium-dev libhwloc-dev
    mpich libmpich-dev openmpi-bin libopenmpi-dev
    python3 python3-numpy python3-mpi4py
    clang iproute2 procps gdb
    libsqlite3-dev libmicrohttpd-dev chromium prometheus iptables
)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "deps.sh: missing packages and no apt-get: ${missing[*]}" >&2
    exit 1
fi
sudo=''
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        sudo='sudo'
    else
        echo "deps.sh: these packages are missing; install them as root: ${missing[*]}" >&2
        exit 1
    fi
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null || { echo "deps.sh: apt-get update failed" >&2; exit 1; }
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null || {
    echo "deps.sh: apt-get install failed for: ${missing[*]}" >&2
    exit 1
}
