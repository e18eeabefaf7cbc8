#!/usr/bin/env bash
# build-matrix.sh - builds mpicollab in every configuration that the README
# and the scripts use, with Debian's gcc and clang, warnings as errors:
# Release (demo, Install), RelWithDebInfo (tests), Debug, the sanitizer
# build (COLLAB_SANITIZE=ON) and, with clang, the libFuzzer targets.
#
#   scripts/build-matrix.sh [CONFIG...]    e.g. gcc-Release clang-Debug
#
# Each configuration builds in build-matrix/<compiler>-<config>/ and logs
# there; the script prints one line per configuration and exits non-zero
# if any failed.  Environment: MATRIX_DIR (default build-matrix).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${MATRIX_DIR:-$root/build-matrix}
all=(gcc-Release gcc-RelWithDebInfo gcc-Debug gcc-Sanitize
     clang-Release clang-RelWithDebInfo clang-Debug clang-Sanitize clang-Fuzz)
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=("${all[@]}")

bash "$root/scripts/deps.sh" || exit 1
failed=0
for c in "${configs[@]}"; do
    cc=${c%%-*}
    kind=${c#*-}
    case $cc in
    gcc) cxx=g++ ;;
    clang) cxx=clang++ ;;
    *) echo "build-matrix.sh: unknown compiler in '$c' (gcc or clang)" >&2; exit 2 ;;
    esac
    extra=()
    case $kind in
    Release | RelWithDebInfo | Debug) extra=(-DCMAKE_BUILD_TYPE="$kind") ;;
    Sanitize) extra=(-DCMAKE_BUILD_TYPE=Debug -DCOLLAB_SANITIZE=ON) ;;
    Fuzz) extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLAB_FUZZ=ON) ;;
    *) echo "build-matrix.sh: unknown configuration '$c'" >&2; exit 2 ;;
    esac
    b="$dir/$c"
    mkdir -p "$b" || exit 1
    start=$SECONDS
    if CC=$cc CXX=$cxx cmake -S "$root" -B "$b" "${extra[@]}" >"$b/build.log" 2>&1 &&
        cmake --build "$b" -j "$(nproc)" >>"$b/build.log" 2>&1; then
        echo "build-matrix: $c ok ($((SECONDS - start)) s)"
    else
        echo "build-matrix: $c FAILED ($((SECONDS - start)) s); the first errors:"
        grep -m 10 -E 'error|warning' "$b/build.log" | sed 's/^/    /'
        failed=$((failed + 1))
    fi
done
[ $failed -eq 0 ] || { echo "build-matrix: $failed configuration(s) failed" >&2; exit 1; }
echo "build-matrix: all ${#configs[@]} configurations built"
