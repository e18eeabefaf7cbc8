#!/usr/bin/env bash
# A bad COLLAB_* value stops the program at MPI_Init within seconds, with a
# non-zero status and a line that names the variable; MPI_Init never
# returns (the trainer never starts).  Run on a single peer started
# directly (preload and replacement) and through collab-run.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER E2E_RUN
preload="$E2E_LIBDIR/libmpicollab.so"
replace="$E2E_LIBDIR/mpicollab"
[ -f "$preload" ] || fail "$preload is not built"
[ -f "$replace/libmpich.so.12" ] || fail "$replace/libmpich.so.12 is not built"

# A well-formed peer id (base58 of 32 bytes) for otherwise bad addresses.
id=$("${E2E_PYTHON:-python3}" -c '
a = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
n = int.from_bytes(bytes(range(1, 33)), "big"); s = ""
while n: n, r = divmod(n, 58); s = a[r] + s
print(s)')

cases=(
    "COLLAB_INITIAL_PEERS=garbage"
    "COLLAB_INITIAL_PEERS=/ip4/127.0.0.1/tcp/0/p2p/$id"
    "COLLAB_INITIAL_PEERS=/ip4/999.1.1.1/tcp/4000/p2p/$id"
    "COLLAB_INITIAL_PEERS=/ip4/127.0.0.1/tcp/4000/p2p/not-a-peer-id"
    "COLLAB_INITIAL_PEERS="
    "COLLAB_WORLD_SIZE=abc"
    "COLLAB_TIMEOUT=-1"
    "COLLAB_COMPRESSION=zip"
    "COLLAB_LOG=loud"
    "COLLAB_TIMEOUTT=5"
)

k=0
failures=()
for c in "${cases[@]}"; do
    var=${c%%=*}
    for how in preload replace collab; do
        k=$((k + 1))
        case $how in
        preload) run_logged "c$k" 30 env "$c" LD_PRELOAD="$preload" "$E2E_TRAINER" --steps 5 ;;
        replace) run_logged "c$k" 30 env "$c" LD_LIBRARY_PATH="$replace" "$E2E_TRAINER" --steps 5 ;;
        collab) run_logged "c$k" 60 env "$c" "$E2E_RUN" -n 2 --timeout 30 -- "$E2E_TRAINER" --steps 5 ;;
        esac
        out="$E2E_LOG/c$k.out"
        err="$E2E_LOG/c$k.err"
        why=''
        if [ "$status" -eq 0 ]; then
            why="the program succeeded"
        elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
            why="no error within the time limit"
        elif [ "$elapsed" -gt 15 ]; then
            why="took $elapsed s to fail"
        elif ! grep -q "$var" "$out" "$err"; then
            why="no line names $var"
        elif grep -q 'starts at step' "$out"; then
            why="MPI_Init returned"
        fi
        if [ -n "$why" ]; then
            failures+=("$c ($how, log c$k): $why")
            E2E_FAILED_RUNS="${E2E_FAILED_RUNS:-} c$k"
            say "$c ($how): FAILED: $why"
        else
            say "$c ($how): status $status in $elapsed s: $(grep -h "$var" "$err" "$out" | head -n 1)"
        fi
    done
done
[ ${#failures[@]} -eq 0 ] || fail "${#failures[@]} case(s): $(printf '%s; ' "${failures[@]}")"
pass
