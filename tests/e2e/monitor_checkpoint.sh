#!/usr/bin/env bash
# collab-monitor's checkpoints and a resume after every peer died
# (docs/monitor.md §7):
#   1. a monitor founds the swarm with --checkpoint-dir and
#      --checkpoint-every 5; four unchanged trainers (LD_PRELOAD) start
#      with its join line only;
#   2. once the monitor wrote two checkpoints, every trainer is SIGKILLed
#      at once;
#   3. `collab-monitor --check-checkpoint` verifies the newest file and
#      refuses a copy with one flipped byte, naming the reason; the newest
#      file is read here (its documented layout):
#      its step K, its step-counter buffer (= K) and the FNV-1a checksum
#      of its parameter buffers, the trainer's own checksum;
#   4. four new trainers start with the monitor's join line only: those
#      that form the new group (at least two) must print "starts at step K
#      checksum X" with the checkpoint's K and X (bitwise equal to the
#      checkpoint), any other one must start later (admitted as an
#      ordinary joiner of the resumed swarm), and the run must end with all
#      four agreeing on the final checksum.
# With the argument `groups` the monitor founds the swarm with
# --target-group 2: all-reduces run in two groups whose states differ by
# design, so the monitor takes each checkpoint from the admitter alone
# ("from 1 peer"), and the resumed trainers are not expected to end equal.
. "$(dirname "$0")/lib.sh"
mode=${1:-plain}
gflags=()
[ "$mode" = groups ] && gflags=(--target-group 2)
need E2E_TRAINER E2E_MONITOR
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
export COLLAB_TIMEOUT=2
limit=100
dir="$E2E_LOG/monitor_checkpoint"
rm -rf "$dir" && mkdir -p "$dir"
pids=()

cleanup() { kill -9 "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT

monitor_start mon --identity "$dir/monitor.key" --world-size 4 --http off \
    --db "$dir/history.db" --tick 1 --checkpoint-dir "$dir/ckpt" --checkpoint-every 5 "${gflags[@]}"
(sleep "$limit" && kill -9 "$mon_pid" 2>/dev/null) >/dev/null 2>&1 &
pids+=($!)
addr=$mon_addr

# trainer NAME STEPS
trainer() {
    env COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0 COLLAB_INITIAL_PEERS="$addr" \
        COLLAB_MATCHMAKING_TIME=3 LD_PRELOAD="$preload" "$E2E_TRAINER" --steps "$2" \
        --sleep-ms 60 --log-every 10 >"$E2E_LOG/$1.out" 2>"$E2E_LOG/$1.err" &
    eval "pid_$1=$!"
    pids+=($!)
}

for k in 0 1 2 3; do trainer "a$k" 1000; done
wait_count "$E2E_LOG/mon.err" 'checkpoint of step [0-9]* written' 2 40 ||
    fail "the monitor wrote no two checkpoints"
say "SIGKILL every trainer"
kill -9 "$pid_a0" "$pid_a1" "$pid_a2" "$pid_a3"
wait_count "$E2E_LOG/mon.err" 'rank [0-9] failed' 4 30 || fail "the monitor did not see all four die"
grep -h 'checkpoint of step' "$E2E_LOG/mon.err" | sed 's/^/   /'
if [ "$mode" = groups ]; then
    grep -q 'checkpoint of step [0-9]* written: .*from 1 peer,' "$E2E_LOG/mon.err" ||
        fail "with several groups the monitor did not take a checkpoint from the admitter alone"
fi

latest=$(ls "$dir/ckpt"/checkpoint-*.ckpt | tail -n 1)
[ -n "$latest" ] || fail "no checkpoint file in $dir/ckpt"
n=$(ls "$dir/ckpt"/checkpoint-*.ckpt | wc -l)
[ "$n" -le 3 ] || fail "$n checkpoints kept, more than the 3 documented"
ls "$dir/ckpt"/.checkpoint-* >/dev/null 2>&1 && fail "a temporary checkpoint file was left"
"$E2E_MONITOR" --check-checkpoint "$latest" >"$E2E_LOG/check.out" 2>&1 ||
    fail "--check-checkpoint refuses the newest checkpoint: $(cat "$E2E_LOG/check.out")"
grep -q 'verified; run default, step' "$E2E_LOG/check.out" || fail "--check-checkpoint printed no summary"
cp "$latest" "$dir/corrupt.ckpt"
# One byte inverted (a constant written there could equal the byte it
# replaces, and leave the file as it was).
byte=$(od -An -tu1 -j300 -N1 "$dir/corrupt.ckpt" | tr -d ' ')
[ -n "$byte" ] || fail "the checkpoint is shorter than 301 bytes"
printf "\\$(printf '%03o' $((byte ^ 255)))" | dd of="$dir/corrupt.ckpt" bs=1 seek=300 conv=notrunc 2>/dev/null
cmp -s "$latest" "$dir/corrupt.ckpt" && fail "the corrupted copy equals the checkpoint"
"$E2E_MONITOR" --check-checkpoint "$dir/corrupt.ckpt" >"$E2E_LOG/corrupt.out" 2>&1 &&
    fail "--check-checkpoint accepted a corrupted checkpoint"
grep -q 'is refused: its hash does not match its contents (corrupted)' "$E2E_LOG/corrupt.out" ||
    fail "the corrupted checkpoint was refused without the reason: $(cat "$E2E_LOG/corrupt.out")"
say "$(cat "$E2E_LOG/corrupt.out")"
# Step, step-counter buffer and FNV-1a of the parameter buffers (every
# buffer but the last, the step counter).
read -r K C X < <(ckpt_summary "$latest")
say "latest checkpoint: $latest: step $K, step counter $C, parameters' checksum $X"
[ -n "$K" ] && [ "$K" -ge 5 ] || fail "unreadable checkpoint or step below 5"
[ "$C" = "$K" ] || fail "the checkpoint's step counter ($C) is not its step ($K)"

end=$((K + 30))
for k in 0 1 2 3; do trainer "b$k" "$end"; done
for k in 0 1 2 3; do
    p=pid_b$k
    wait "${!p}" || fail "resumed trainer b$k exited with status $?"
done
# Those that form the new group resume at K, bitwise equal to the
# checkpoint; one that reaches the monitor after the group formed (with
# --target-group 2 matchmaking closes at 2) is an ordinary joiner of the
# resumed swarm, admitted at a later step.
at_k=0
for k in 0 1 2 3; do
    line=$(grep 'starts at step' "$E2E_LOG/b$k.out")
    sk=$(echo "$line" | sed -n 's/.* starts at step \([0-9]*\) .*/\1/p')
    [ -n "$sk" ] || fail "b$k printed no start"
    if [ "$sk" = "$K" ]; then
        echo "$line" | grep -q "checksum $X\$" ||
            fail "b$k resumed at step $K but not bitwise equal to the checkpoint: $line"
        at_k=$((at_k + 1))
    elif [ "$sk" -le "$K" ]; then
        fail "b$k started at step $sk, before the checkpoint's $K: $line"
    else
        say "b$k joined the resumed swarm later, at step $sk"
    fi
done
[ "$at_k" -ge 2 ] || fail "only $at_k trainer(s) resumed at the checkpoint's step $K"
grep -q 'resumes from the checkpoint' "$E2E_LOG/mon.err" || fail "the monitor logged no resume"
sums=$(grep -h "done steps [0-9]*..$end " "$E2E_LOG"/b[0-3].out | sed -n 's/.*checksum \([0-9a-f]*\).*/\1/p' | sort -u)
[ "$(grep -h "done steps [0-9]*..$end " "$E2E_LOG"/b[0-3].out | wc -l)" = 4 ] ||
    fail "not every trainer of the resumed swarm reached step $end"
[ "$mode" = groups ] || [ "$(echo "$sums" | wc -l)" = 1 ] || fail "the resumed trainers disagree: $sums"
say "$at_k trainers resumed at step $K (checksum $X); at step $end: $(echo $sums)"
kill -TERM "$mon_pid"
wait "$mon_pid" || fail "the monitor did not stop cleanly"
# Another run must not resume from these checkpoints.
"$E2E_MONITOR" --listen /ip4/127.0.0.1/tcp/0 --http off --db "$dir/other.db" --run-id other \
    --checkpoint-dir "$dir/ckpt" --checkpoint-every 5 >"$E2E_LOG/other.out" 2>"$E2E_LOG/other.err" &&
    fail "a monitor of another run id started on this run's checkpoints"
grep -q 'holds checkpoints of COLLAB_RUN_ID=default.*this monitor runs COLLAB_RUN_ID=other' \
    "$E2E_LOG/other.err" || fail "a monitor of another run id did not say why it stopped"
pass "resumed from the checkpoint of step $K"
