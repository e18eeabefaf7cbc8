#!/usr/bin/env bash
# gpu-check.sh - device buffers on a machine with an NVIDIA GPU, no network
# and no package registry, in under 5 minutes (docs/cuda.md).
#
#   scripts/gpu-check.sh [--dir DIR] [--np N] [--python PY] [STAGE...]
#
# DIR is the folder scripts/gpu-prepare.sh filled on a machine without a
# GPU (default: gpu-carry/ beside this script's repository).  PY is the
# Python with torch and mpi4py (default: python3 on PATH).  Stages run in
# this order, most important first, each under its own timeout, and the
# script ends with one summary of whatever finished:
#   env      (30 s)  glibc, the driver, the libraries our programs need
#                    (those the machine lacks come from DIR/root), the ABI
#                    of this machine's mpi4py, and the system calls the
#                    library uses (process_vm_readv, SO_PEERCRED, shared
#                    memory, loopback TCP)
#   kernels  (45 s)  pointer detection and device kernels against the host
#                    kernels (cuda_kernels_test); the host-pointer fast
#                    path with a CUDA context current (devptr_bench --cuda,
#                    bound 50 ns)
#   mpi      (120 s) N peers sharing the GPU (default 4): all-reduce of
#                    cudaMalloc buffers for every type and op, other calls,
#                    the GPU's pinned copy bandwidth, latency and bandwidth
#                    8 B..64 MiB device vs host (gpu_allreduce)
#   torch    (100 s) PyTorch + mpi4py data-parallel training on 4 peers
#                    with a kill and a join; parameters bitwise equal
#   ddp      (100 s) PyTorch DDP, init_process_group("nccl"), on 4 peers
#                    sharing the GPU with the NCCL face preloaded; torch's
#                    TCPStore in a process of its own; a kill and a join;
#                    parameters bitwise equal (docs/nccl.md)
#   pipe     (90 s)  the staging pipeline measured (not in the default
#                    list): all-reduce 1..64 MiB on N peers, device vs
#                    host, with COLLAB_CUDA_PIPELINE=1 (chunk by chunk)
#                    and 0 (whole buffers), bits checked at 16 MiB
# Default: the first five (at most 6.5 minutes); `env ddp` checks the NCCL
# face alone in at most 2.5, `env pipe` the pipeline in at most 2.  Logs go to $OUT/gpu-check (the device tool's
# folder) or /tmp/gpu-check.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
dir="$repo/gpu-carry" np=4 stages=() inner='' py=$(command -v python3 || echo python3)
while [ $# -gt 0 ]; do
    case "$1" in
    --dir) dir=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --inner) inner=$2; shift 2 ;; # run one stage (the outer script times it)
    -h | --help) sed -n '2,36p' "$0"; exit 0 ;;
    env | kernels | mpi | torch | ddp | pipe) stages+=("$1"); shift ;;
    *) echo "gpu-check.sh: unknown argument '$1' (stages: env kernels mpi torch ddp pipe)" >&2; exit 2 ;;
    esac
done
[ ${#stages[@]} -gt 0 ] || stages=(env kernels mpi torch ddp)
[ -d "$dir/prefix" ] || { echo "gpu-check.sh: $dir/prefix missing: run scripts/gpu-prepare.sh first" >&2; exit 2; }
dir=$(cd "$dir" && pwd)
logs=${OUT:-/tmp}/gpu-check
mkdir -p "$logs"
prefix="$dir/prefix" bin="$dir/bin"
t_start=$(date +%s)
declare -A status elapsed
summary=()
note() { summary+=("$*"); echo "gpu-check: $*"; }

# The libraries this machine lacks, from the unpacked packages (never the
# ones it has: a newer system library must win for torch and friends).
deplibs="$dir/deplibs"
make_deplibs() {
    rm -rf "$deplibs"
    mkdir -p "$deplibs"
    local f so
    for f in "$dir"/root/lib/x86_64-linux-gnu/*.so.* "$dir"/root/usr/lib/x86_64-linux-gnu/*.so.*; do
        [ -e "$f" ] || continue
        so=$(basename "$f")
        case "$so" in *.so.*.*) continue ;; esac # the soname link is enough
        ldconfig -p | grep -q "^[[:space:]]*$so " && continue
        ln -sf "$f" "$deplibs/$so"
    done
}
export LD_LIBRARY_PATH="$deplibs:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

stage_env() {
    local fails=0
    make_deplibs
    echo "deplibs: $(ls "$deplibs" | tr '\n' ' ')"
    local need have
    command -v objdump > /dev/null || echo "note: objdump missing: glibc versions not compared"
    need=$(objdump -T "$prefix"/lib/*.so* "$prefix"/bin/* 2> /dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
    have=$(ldd --version 2> /dev/null | head -1 | grep -o '[0-9]*\.[0-9]*$')
    echo "glibc: machine $have, programs need ${need#GLIBC_}"
    if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "${need#GLIBC_}" "$have" | sort -V | head -1)" != "${need#GLIBC_}" ]; then
        echo "FAIL: glibc $have is older than ${need#GLIBC_}"; fails=$((fails + 1))
    fi
    local missing
    # gpu_allreduce is an MPICH program: the MPI face stands in for
    # libmpich.so.12 when collab-run starts it (--mode replace).
    missing=$(for f in "$prefix"/lib/*.so* "$prefix"/bin/collab-run "$bin"/*; do ldd "$f" 2> /dev/null | grep 'not found' | sed "s|^|$(basename "$f"): |"; done |
        grep -v 'libcuda.so.1' | grep -v 'gpu_allreduce:.*libmpich.so.12' | sort -u)
    if [ -n "$missing" ]; then echo "FAIL: unresolved libraries:"; echo "$missing"; fails=$((fails + 1)); else echo "libraries: all resolved"; fi
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || fails=$((fails + 1))
    else
        echo "driver: nvidia-smi not found"
    fi
    # The loader's view (LD_LIBRARY_PATH included), as the library's dlopen sees it.
    if "$py" -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2> /dev/null; then
        echo "driver: libcuda.so.1 loads"
    else
        echo "FAIL: no libcuda.so.1 (no NVIDIA driver)"; fails=$((fails + 1))
    fi
    # mpi4py: which MPI ABI its extension modules link.
    "$py" - << 'PYEOF' > "$logs/mpi4py.txt" 2>&1 || true
import glob, os, subprocess, importlib.util
spec = importlib.util.find_spec("mpi4py")
if spec is None:
    print("mpi4py: not installed"); raise SystemExit
d = os.path.dirname(spec.origin)
import mpi4py
print("mpi4py", mpi4py.__version__, d)
for so in sorted(glob.glob(os.path.join(d, "*.so"))):
    out = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    needed = [l.split("[")[1].rstrip("]") for l in out.splitlines() if "NEEDED" in l]
    print("module", os.path.basename(so), "needs", " ".join(n for n in needed if "mpi" in n) or "no libmpi (loads it at run time)")
PYEOF
    cat "$logs/mpi4py.txt"
    if grep -q 'libmpi.so.40' "$logs/mpi4py.txt"; then echo ompi > "$logs/abi"
    else echo mpich > "$logs/abi"; fi
    echo "mpi4py ABI used: $(cat "$logs/abi")"
    # torch's CUDA runtime and NCCL: linked or loaded, and how the runtime
    # versions its symbols (the NCCL face follows device-to-device copies
    # out of start-up broadcast buffers through cudaMemcpyAsync, docs/nccl.md §5).
    "$py" - << 'PYEOF' > "$logs/torchlibs.txt" 2>&1 || true
import glob, os, subprocess
try:
    import torch
except Exception as e:
    print("torch: not importable:", e); raise SystemExit
d = os.path.join(os.path.dirname(torch.__file__), "lib")
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")
for so in ("libc10_cuda.so", "libtorch_cuda.so"):
    out = subprocess.run(["readelf", "-d", os.path.join(d, so)], capture_output=True, text=True).stdout
    needed = [l.split("[")[1].rstrip("]") for l in out.splitlines() if "NEEDED" in l]
    print(so, "needs", " ".join(n for n in needed if "cudart" in n or "nccl" in n or "cuda" in n))
import ctypes
torch.zeros(1, device="cuda")
maps = open("/proc/self/maps").read()
for name in ("libcudart", "libnccl", "libcuda.so"):
    paths = sorted({l.split()[-1] for l in maps.splitlines() if name in l})
    print("mapped", name, paths)
for p in sorted({l.split()[-1] for l in maps.splitlines() if "libcudart" in l}):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", p], capture_output=True, text=True).stdout
    print(p, [l.split()[-1] for l in out.splitlines() if "cudaMemcpyAsync" in l][:4])
PYEOF
    cat "$logs/torchlibs.txt"
    "$py" "$here/gpu/sandbox_probe.py" || fails=$((fails + $?))
    return $fails
}

stage_kernels() {
    local rc=0
    "$bin/cuda_kernels_test" "$prefix/lib/libmpicollab-cuda.so" || rc=$?
    [ $rc -eq 77 ] && return 77
    COLLAB_LOG=warn "$bin/devptr_bench" --cuda-noctx || rc=$((rc + 1))
    COLLAB_LOG=warn "$bin/devptr_bench" --cuda || rc=$((rc + 1))
    return $rc
}

stage_mpi() {
    COLLAB_CUDA=1 COLLAB_LOG=warn "$prefix/bin/collab-run" -n "$np" --abi mpich --mode replace \
        --libdir "$prefix/lib" --timeout 110 "$bin/gpu_allreduce"
}

stage_pipe() {
    local rc=0 on
    for on in 1 0; do
        COLLAB_CUDA=1 COLLAB_CUDA_PIPELINE=$on COLLAB_LOG=warn "$prefix/bin/collab-run" -n "$np" \
            --abi mpich --mode replace --libdir "$prefix/lib" --timeout 42 \
            "$bin/gpu_allreduce" $((64 << 20)) pipe |
            sed "s/^RESULT allreduce /RESULT pipeline$on /"
        [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    done
    return $rc
}

stage_torch() {
    local abi mpiabi
    abi=$(cat "$logs/abi" 2> /dev/null || echo mpich)
    mpiabi=$([ "$abi" = ompi ] && echo openmpi || echo mpich)
    COLLAB_CUDA=1 COLLAB_TIMEOUT=3 MPI4PY_MPIABI=$mpiabi PYTHONUNBUFFERED=1 \
        "$prefix/bin/collab-run" -n 4 --abi "$abi" --mode replace --libdir "$prefix/lib" \
        --tag-output --timeout 95 \
        --chaos 'kill:2@line:0:^step 60 ' --chaos 'start@line:0:^step 100 ' \
        "$py" "$here/gpu/torch_train.py" --steps 800 --sleep-ms 20
}

# DDP through the NCCL face.  The store runs in its own process; RANK is
# the rank collab-run gives the peer (COLLAB_RANK; the joiner takes the
# killed rank back), MASTER_* point at the store.  collab-run preloads the
# MPI face as well: both faces then share one core (docs/nccl.md).
stage_ddp() {
    local port store_pid rc=0 i
    [ -f "$prefix/lib/libmpicollab-nccl.so" ] || { echo "FAIL: no libmpicollab-nccl.so in $prefix/lib (built where nccl.h is found)"; return 1; }
    port=$((29500 + RANDOM % 2000))
    "$py" "$here/gpu/ddp_store.py" --port "$port" --world 4 > "$logs/ddp_store.log" 2>&1 &
    store_pid=$!
    for i in $(seq 1 100); do
        grep -q '^STORE ready' "$logs/ddp_store.log" 2> /dev/null && break
        kill -0 "$store_pid" 2> /dev/null || break
        sleep 0.1
    done
    grep -q '^STORE ready' "$logs/ddp_store.log" || { echo "FAIL: the TCPStore did not start:"; cat "$logs/ddp_store.log"; kill "$store_pid" 2> /dev/null; return 1; }
    # A run that hangs: the threads' backtraces of every trainer (cuda-gdb
    # attaches; the machine has no gdb) go to the logs, at 30 s when fewer
    # than 4 trainers started, else at 70 s when none has finished.
    ( dump() {
          command -v cuda-gdb > /dev/null || { echo "note: a hang, and no cuda-gdb for backtraces"; return; }
          echo "gpu-check: the trainers look stuck ($1): backtraces in bt-<pid>.txt"
          for pid in $(pgrep -f '^[^ ]*python[^ ]* [^ ]*ddp_train.py'); do
              timeout 25 cuda-gdb -p "$pid" -batch -ex 'thread apply all bt' > "$logs/bt-$pid.txt" 2>&1 &
          done
          wait
      }
      sleep 30
      if [ "$(grep -c 'starts at step' "$logs/ddp.log" 2> /dev/null)" -lt 4 ]; then dump "start-up"; exit 0; fi
      sleep 40
      grep -q 'PARAMS rank' "$logs/ddp.log" 2> /dev/null || dump "training" ) &
    local dumper=$!
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=4 \
    LD_PRELOAD="$prefix/lib/libmpicollab-nccl.so${LD_PRELOAD:+:$LD_PRELOAD}" \
    COLLAB_CUDA=1 COLLAB_TIMEOUT=3 PYTHONUNBUFFERED=1 TORCH_NCCL_ASYNC_ERROR_HANDLING=1 \
    COLLAB_LOG=${GPU_CHECK_LOG:-info} \
        "$prefix/bin/collab-run" -n 4 --abi mpich --mode preload --libdir "$prefix/lib" \
        --tag-output --timeout 90 \
        --chaos 'kill:2@line:0:^step 60 ' --chaos 'start:2@line:0:^step 100 ' -- \
        bash -c 'export RANK=$COLLAB_RANK; exec "$@"' ddp "$py" "$here/gpu/ddp_train.py" \
        --steps 600 --sleep-ms 20 || rc=$?
    kill "$dumper" 2> /dev/null
    kill "$store_pid" 2> /dev/null
    wait "$store_pid" 2> /dev/null
    return $rc
}

# Every stage needs the libraries, not only env's: link them before any.
[ -n "$inner" ] || make_deplibs
if [ -n "$inner" ]; then
    "stage_$inner"
    exit $?
fi

declare -A limit=([env]=30 [kernels]=45 [mpi]=120 [torch]=100 [ddp]=100 [pipe]=90)
for s in "${stages[@]}"; do
    echo "=== gpu-check: stage $s (limit ${limit[$s]} s) ==="
    t0=$(date +%s%N)
    timeout -k 5 "${limit[$s]}" bash "$0" --dir "$dir" --np "$np" --python "$py" --inner "$s" 2>&1 | tee "$logs/$s.log"
    rc=${PIPESTATUS[0]}
    elapsed[$s]=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
    case $rc in
    0) status[$s]=ok ;;
    124 | 137) status[$s]="TIMED OUT" ;;
    77) status[$s]="skipped (no GPU)" ;;
    *) status[$s]="FAILED (status $rc)" ;;
    esac
    echo "=== gpu-check: stage $s: ${status[$s]} in ${elapsed[$s]} s ==="
done

# ---- summary -----------------------------------------------------------
ran() { [[ " ${stages[*]} " == *" $1 "* ]] && [ -f "$logs/$1.log" ]; }
echo
echo "==================== gpu-check summary ===================="
for s in "${stages[@]}"; do printf '%-8s %-22s %6s s\n' "$s" "${status[$s]}" "${elapsed[$s]}"; done
if ran kernels; then
    grep -E 'checks failed|differ|ns/call' "$logs/kernels.log" | grep -E 'checks failed|ns/call| [1-9][0-9]* differ' | sed 's/^/kernels: /'
fi
if ran mpi; then
    grep -o 'RESULT correctness.*\|RESULT copy.*' "$logs/mpi.log" | sed 's/^RESULT /mpi: /'
    echo "mpi: all-reduce float SUM, $np peers, device vs host (medians of 5 interleaved rounds)"
    printf '  %10s %12s %12s %10s %10s %7s\n' bytes host_us dev_us host_GB/s dev_GB/s dev/host
    grep -o 'RESULT allreduce .*' "$logs/mpi.log" | awk '{printf "  %10s %12s %12s %10s %10s %7s\n", $3, $5, $8, $11, $13, $15}'
    big=$(grep -o 'RESULT allreduce 67108864 .*' "$logs/mpi.log" | awk '{print $15}')
    [ -n "$big" ] && echo "mpi: 64 MiB device/host time ratio $big (bound 1.1: $(awk -v r="$big" 'BEGIN {print (r <= 1.1 ? "met" : "NOT met")}'))"
fi
if ran pipe; then
    grep -o 'RESULT correctness_failures.*' "$logs/pipe.log" | sed 's/^RESULT /pipe: /'
    echo "pipe: all-reduce float SUM, $np peers, medians of 5 interleaved rounds (us); piped:"
    echo "      COLLAB_CUDA_PIPELINE=1 (chunk by chunk), whole: =0 (one copy each way)"
    printf '  %10s %10s %10s %10s %11s %11s\n' bytes host piped whole piped/host whole/host
    join <(grep -o 'RESULT pipeline1 .*' "$logs/pipe.log" | awk '{print $3, $5, $8}' | sort) \
        <(grep -o 'RESULT pipeline0 .*' "$logs/pipe.log" | awk '{print $3, $8}' | sort) |
        sort -n | awk '{printf "  %10s %10s %10s %10s %11.3f %11.3f\n", $1, $2, $3, $4, $3 / $2, $4 / $2}'
fi
if ran torch; then
    n=$(grep -c 'PARAMS rank' "$logs/torch.log")
    distinct=$(grep -o 'PARAMS rank.*' "$logs/torch.log" | awk '{print $NF}' | sort -u | wc -l)
    joiner=$(grep -o 'PARAMS rank.*' "$logs/torch.log" | awk '$5 > 0 {print "rank " $3 " from step " $5}' | head -1)
    killed=$(grep -c 'chaos: SIGKILL' "$logs/torch.log")
    echo "torch: $n peers finished, $distinct distinct parameter hash(es), kill seen: $killed, joiner: ${joiner:-none}"
    [ "$n" -ge 4 ] && [ "$distinct" -eq 1 ] && [ -n "$joiner" ] && echo "torch: parameters bitwise equal across survivors and joiner: yes" ||
        echo "torch: parameters bitwise equal across survivors and joiner: NO"
fi
if ran ddp; then
    n=$(grep -c 'PARAMS rank' "$logs/ddp.log")
    distinct=$(grep -o 'PARAMS rank.*' "$logs/ddp.log" | awk '{print $NF}' | sort -u | wc -l)
    joiner=$(grep -o 'PARAMS rank.*' "$logs/ddp.log" | awk '$5 > 0 {print "rank " $3 " from step " $5}' | head -1)
    killed=$(grep -c 'chaos: SIGKILL' "$logs/ddp.log")
    echo "ddp: $n peers finished, $distinct distinct parameter hash(es), kill seen: $killed, joiner: ${joiner:-none}"
    [ "$n" -ge 4 ] && [ "$distinct" -eq 1 ] && [ -n "$joiner" ] && echo "ddp: parameters bitwise equal across survivors and joiner: yes" ||
        echo "ddp: parameters bitwise equal across survivors and joiner: NO"
fi
echo "total $(( $(date +%s) - t_start )) s; logs in $logs"
for s in "${stages[@]}"; do [ "${status[$s]}" = ok ] || exit 1; done
exit 0
