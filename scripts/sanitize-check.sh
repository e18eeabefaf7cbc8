#!/usr/bin/env bash
# sanitize-check.sh - the part of the suite CI runs under AddressSanitizer
# and UndefinedBehaviorSanitizer (COLLAB_SANITIZE=ON, gcc): every
# selftest, the fuzz corpus replays, and one multi-process test per area
# of the engine (a swarm with a kill, a client member, a goodbye, hostile
# peers, device staging, the NCCL face in one process).  Programs built
# with mpicc.mpich, and tests that preload a face, are left out: the
# sanitizer runtime must come first in a process, which a preloaded
# library cannot arrange.
#
#   scripts/sanitize-check.sh [BUILD_DIR]     default build-matrix/gcc-Sanitize
#
# Builds BUILD_DIR when it is missing (scripts/build-matrix.sh gcc-Sanitize).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-matrix/gcc-Sanitize}
if [ ! -f "$build/CTestTestfile.cmake" ]; then
    bash "$root/scripts/build-matrix.sh" gcc-Sanitize || exit 1
fi
# A leak or an error in any process fails the test that started it.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
areas='^(swarm_basic|swarm_kill|swarm_client|swarm_goodbye|attack_view|attack_hellos|attack_result|cl_stage_mixed|nccl_face_args|nccl_face_mpi-first)$'
echo "sanitize-check.sh: selftests and fuzz replays"
timeout -k 10 600 ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -L 'selftest|fuzz' ||
    { echo "sanitize-check.sh: a selftest or replay failed under the sanitizers" >&2; exit 1; }
echo "sanitize-check.sh: one multi-process test per area"
timeout -k 10 600 ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -R "$areas" ||
    { echo "sanitize-check.sh: a multi-process test failed under the sanitizers" >&2; exit 1; }
echo "sanitize-check.sh: clean"
