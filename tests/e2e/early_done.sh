#!/usr/bin/env bash
# Early completion over slow links (docs/collectives.md §3, "Retention"):
# three example trainers (unchanged, built with mpicc.mpich, the library
# preloaded), each in a network namespace of its own on one bridge, every
# link limited by tbf to 20 Mbit/s both ways, train with 1 MiB layers
# (--hidden 512: butterfly all-reduces of about 0.6 s on these links, far
# longer than a copy of the result).
#   plain  every trainer finishes; the members' logs show all-reduces
#          completed before the others' DONE; parameters bitwise equal.
#   kill   the same, and rank 2 is SIGKILLed as it enters the all-reduces
#          of step 15: the two survivors finish bitwise equal.
# Needs root and `ip netns` (the links must be slow: on loopback no
# all-reduce completes early); skipped (77) elsewhere.
. "$(dirname "$0")/lib.sh"
mode=${1:?usage: early_done.sh plain|kill}
need E2E_TRAINER
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
np=3 rate=20 steps=20 limit=150
tag=edn$$
pids=()

# Peer i at $net.(i+1); each veth limited both ways.  A subnet per mode:
# the two tests may run at the same time.
net=10.78.0
[ "$mode" = kill ] && net=10.80.0
if ! e2e_ns_setup "$tag" "$np" "$net" "$rate"; then
    say "SKIPPED: needs root, tc and ip netns (slow links; on loopback nothing completes early)"
    exit 77
fi

env_common=(COLLAB_WORLD_SIZE=$np COLLAB_TIMEOUT=3 COLLAB_MATCHMAKING_TIME=30 COLLAB_LOG=debug)
args=(--steps "$steps" --hidden 512 --batch 4 --mark-step 15 --log-every 5)

# peer I: trainer I in its namespace, logs in $E2E_LOG/pI.out/.err.
peer() {
    local i=$1 extra=()
    [ "$i" -gt 0 ] && extra=(COLLAB_INITIAL_PEERS="$line")
    ip netns exec "${tag}n$i" env "${env_common[@]}" "${extra[@]}" \
        COLLAB_LISTEN="/ip4/$net.$((i + 1))/tcp/4000" LD_PRELOAD="$preload" \
        timeout -s KILL "$limit" "$E2E_TRAINER" "${args[@]}" \
        >"$E2E_LOG/p$i.out" 2>"$E2E_LOG/p$i.err" &
    pids+=($!)
    eval "pid$i=$!"
}

say "mode $mode: $np trainers, links of $rate Mbit/s"
peer 0
wait_for "$E2E_LOG/p0.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "the founder printed no join line"
line=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/p0.err" | head -n 1)
for i in $(seq 1 $((np - 1))); do peer "$i"; done

survivors=$np victim=-1
if [ "$mode" = kill ]; then
    # Ranks follow the order of joining: find rank 2's trainer by its line.
    for _ in $(seq $((limit * 10))); do
        f=$(grep -l 'rank 2 entering allreduce of step 15' "$E2E_LOG"/p*.out 2>/dev/null | head -n 1)
        [ -n "$f" ] && break
        sleep 0.1
    done
    [ -n "$f" ] || fail "rank 2 never reached step 15"
    tpid=$(sed -n 's/^trainer: rank 2 pid \([0-9]*\) starts at step.*/\1/p' "$f" | head -n 1)
    [ -n "$tpid" ] || fail "no pid in $f"
    kill -9 "$tpid"
    victim=$(basename "$f" .out)
    victim=${victim#p}
    say "rank 2 (trainer pid $tpid) SIGKILLed entering the all-reduces of step 15"
    survivors=$((np - 1))
fi

st=0
for i in $(seq 0 $((np - 1))); do
    [ "$i" -eq "$victim" ] && continue
    eval "wait \$pid$i" || { st=1; say "trainer $i exited with an error"; }
done
[ "$st" -eq 0 ] || fail "a surviving trainer failed"
cat "$E2E_LOG"/p*.out "$E2E_LOG"/p*.err >"$E2E_LOG/all.log"
[ "$(count_done "$E2E_LOG/all.log")" -eq "$survivors" ] ||
    fail "expected $survivors trainers to finish"
expect_agreement "$E2E_LOG/all.log" "$survivors"
early=$(grep -c "completes before the others' DONE" "$E2E_LOG/all.log")
[ "$early" -gt 0 ] || fail "no all-reduce completed before the others' DONE"
pass "$survivors trainers bitwise equal; $early all-reduces completed before the others' DONE"
