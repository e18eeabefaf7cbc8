#!/usr/bin/env bash
# collab-monitor SIGKILLed during a run and started again with the same
# flags (--identity, a fixed port, --db, --checkpoint-dir): docs/monitor.md
# §3 "Restart".
#   alive  four unchanged trainers (LD_PRELOAD) train through the monitor;
#          once it wrote two checkpoints it is SIGKILLed and started again
#          while they train.  Must be: the same join line; it rejoins the
#          swarm through the peers of its history within 15 s; it writes
#          later checkpoints (steps past the last one before the kill)
#          into the same directory; the trainers go on and finish, agreeing
#          bitwise.
#   all    the monitor and every trainer are SIGKILLed at once, after two
#          checkpoints; the monitor started again founds the swarm within
#          15 s (nobody of its history is left); four new trainers given
#          only its join line resume at the newest checkpoint's step K,
#          bitwise equal to it, and end at step K + 20 with the checksum of
#          a run of four trainers that was never interrupted (run last,
#          with a monitor of its own).
. "$(dirname "$0")/lib.sh"
mode=${1:?usage: monitor_restart.sh alive|all}
need E2E_TRAINER E2E_MONITOR
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
export COLLAB_TIMEOUT=2
dir="$E2E_LOG/state"
rm -rf "$dir" "$E2E_LOG/ref" && mkdir -p "$dir" "$E2E_LOG/ref"
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT

# mflags DIR: the flags of a monitor with the state of DIR (key,
# history, checkpoints); first_monitor starts one on a free port (sets
# port and addr, its join line), monitor_again another on the same port.
mflags() {
    echo --identity "$1/monitor.key" --world-size 4 --http off --db "$1/history.db" --tick 1 \
        --checkpoint-dir "$1/ckpt" --checkpoint-every 5
}
first_monitor() {
    monitor_start "$1" $(mflags "$2")
    port=$mon_port
    addr=$mon_addr
}
monitor_again() {
    "$E2E_MONITOR" --listen "/ip4/127.0.0.1/tcp/$port" $(mflags "$2") \
        >"$E2E_LOG/$1.out" 2>"$E2E_LOG/$1.err" &
    mon_pid=$!
    pids+=($mon_pid)
}

# trainer NAME STEPS: a trainer given only the join line $addr.  The world
# size waits for all four (matchmaking of up to 20 s), so that every step
# has four contributions, as in the uninterrupted run.
trainer() {
    env COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0 COLLAB_INITIAL_PEERS="$addr" \
        COLLAB_MATCHMAKING_TIME=20 LD_PRELOAD="$preload" "$E2E_TRAINER" --steps "$2" \
        --sleep-ms 60 --log-every 10 >"$E2E_LOG/$1.out" 2>"$E2E_LOG/$1.err" &
    eval "pid_$1=$!"
    pids+=($!)
}

# wait_trainers PREFIX: the four trainers PREFIX0..3 exit 0.
wait_trainers() {
    local k p
    for k in 0 1 2 3; do
        p=pid_$1$k
        wait "${!p}" || fail "trainer $1$k exited with status $?"
    done
}

# agree PREFIX: the four trainers PREFIX0..3 finished with one checksum.
agree() {
    cat "$E2E_LOG/${1}0.out" "$E2E_LOG/${1}1.out" "$E2E_LOG/${1}2.out" "$E2E_LOG/${1}3.out" \
        >"$E2E_LOG/$1.all"
    expect_agreement "$E2E_LOG/$1.all" 4
}

# since T0: seconds since the time T0 (date +%s.%N), one decimal.
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }

# newest_step: the step of the newest checkpoint file of $dir/ckpt.
newest_step() {
    ls "$dir/ckpt"/checkpoint-*.ckpt 2>/dev/null | tail -n 1 |
        sed -n 's/.*checkpoint-0*\([0-9][0-9]*\)\.ckpt$/\1/p'
}

first_monitor mon1 "$dir"
for k in 0 1 2 3; do trainer "a$k" $([ "$mode" = alive ] && echo 260 || echo 1000); done
wait_count "$E2E_LOG/mon1.err" 'checkpoint of step [0-9]* written' 2 60 ||
    fail "the monitor wrote no two checkpoints"
K1=$(newest_step)
line1=$(grep '^COLLAB_INITIAL_PEERS=' "$E2E_LOG/mon1.err" | head -n 1)

if [ "$mode" = alive ]; then
    say "SIGKILL the monitor (newest checkpoint: step $K1); the trainers go on"
    kill -9 "$mon_pid"
    { wait "$mon_pid"; } 2>/dev/null
    t0=$(date +%s.%N)
    monitor_again mon2 "$dir"
    wait_for "$E2E_LOG/mon2.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "the restarted monitor printed no join line"
    secs=$(since "$t0")
    [ "$(grep '^COLLAB_INITIAL_PEERS=' "$E2E_LOG/mon2.err" | head -n 1)" = "$line1" ] ||
        fail "the restarted monitor's join line changed"
    grep -q 'rejoining the swarm' "$E2E_LOG/mon2.err" || fail "the restarted monitor did not rejoin"
    grep -q 'found no active peers' "$E2E_LOG/mon2.err" &&
        fail "the restarted monitor founded a second swarm while the trainers ran"
    float_cmp "$secs < 15" || fail "the restarted monitor took $secs s to rejoin"
    wait_count "$E2E_LOG/mon2.err" 'checkpoint of step [0-9]* written' 2 60 ||
        fail "the restarted monitor wrote no two checkpoints"
    K2=$(newest_step)
    [ -n "$K2" ] && [ "$K2" -gt "$K1" ] || fail "no checkpoint after step $K1 in $dir/ckpt"
    wait_trainers a
    agree a
    kill -TERM "$mon_pid"
    wait "$mon_pid" || fail "the restarted monitor did not stop cleanly"
    pass "rejoined in $secs s; checkpoints went on from step $K1 to step $K2 in the same directory"
fi

say "SIGKILL the monitor and every trainer at once (newest checkpoint: step $K1)"
kill -9 "$mon_pid" "$pid_a0" "$pid_a1" "$pid_a2" "$pid_a3"
{ wait "$mon_pid" "$pid_a0" "$pid_a1" "$pid_a2" "$pid_a3"; } 2>/dev/null
latest=$(ls "$dir/ckpt"/checkpoint-*.ckpt | tail -n 1)
read -r K C X < <(ckpt_summary "$latest")
[ -n "$K" ] && [ "$K" -ge 5 ] && [ "$C" = "$K" ] || fail "unreadable checkpoint $latest"
t0=$(date +%s.%N)
monitor_again mon2 "$dir"
wait_for "$E2E_LOG/mon2.err" 'found no active peers' 40 || fail "the restarted monitor did not found the swarm"
secs=$(since "$t0")
float_cmp "$secs < 15" || fail "the restarted monitor took $secs s to found the swarm again"
[ "$(grep '^COLLAB_INITIAL_PEERS=' "$E2E_LOG/mon2.err" | head -n 1)" = "$line1" ] ||
    fail "the restarted monitor's join line changed"
end=$((K + 20))
for k in 0 1 2 3; do trainer "b$k" "$end"; done
wait_trainers b
for k in 0 1 2 3; do
    grep -q "starts at step $K checksum $X\$" "$E2E_LOG/b$k.out" ||
        fail "b$k did not resume at step $K bitwise equal to the checkpoint: $(grep 'starts at step' "$E2E_LOG/b$k.out")"
done
agree b
sum=$(checksums "$E2E_LOG/b.all")
kill -TERM "$mon_pid"
wait "$mon_pid" || fail "the restarted monitor did not stop cleanly"

say "the uninterrupted run: a monitor of its own, four trainers to step $end"
first_monitor ref "$E2E_LOG/ref"
for k in 0 1 2 3; do trainer "r$k" "$end"; done
wait_trainers r
agree r
ref=$(checksums "$E2E_LOG/r.all")
kill -TERM "$mon_pid"
[ "$sum" = "$ref" ] || fail "the resumed run ends with checksum $sum, the uninterrupted one with $ref"
pass "founded again in $secs s; resumed at step $K, step $end bitwise equal to the uninterrupted run ($sum)"
