#!/usr/bin/env bash
# monitor_checkpoint.sh - what collab-monitor's checkpoints cost a trainer.
#
#   bench/monitor_checkpoint.sh [--build DIR] [--np N] [--steps S] [--runs R]
#                               [--every K]
#
# The example trainer (unchanged, LD_PRELOAD) with 1 MiB of parameters
# (--hidden 503: 262,660 floats) and no sleep, on N peers (default 3) on
# loopback, R times (default 5) in each of two setups, interleaved:
#   monitor     collab-monitor founds the swarm, no checkpoints;
#   checkpoint  the same with --checkpoint-every K (default 20): every
#               member copies its 1 MiB at the step boundary, the monitor
#               fetches it (hashes compared between the members) and
#               writes a file (at most one checkpoint a second).
# Step time = (wall at step S - wall at step S/4) / (3S/4) on rank 0.
# Prints each run (with the checkpoints written and their mean fetch +
# write time), the medians, the spread (min..max) and the cost of the
# median.  Method and results: docs/benchmarks.md.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" np=3 steps=400 runs=5 every=20
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "monitor_checkpoint.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
trainer="$build/examples/trainer"
monitor="$build/bin/collab-monitor"
preload="$build/lib/libmpicollab.so"
for f in "$trainer" "$monitor" "$preload"; do
    [ -e "$f" ] || { echo "monitor_checkpoint.sh: $f is not built" >&2; exit 1; }
done
work=$(mktemp -d /tmp/monitor_checkpoint.XXXXXX)
# one() runs in a subshell (read < <(one ...)): the processes it starts are
# listed in a file, so that an interrupted benchmark leaves none behind.
cleanup() { kill -9 $(cat "$work/pids" 2>/dev/null) 2>/dev/null; }
trap cleanup EXIT
export COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0 COLLAB_TIMEOUT=5
targs=(--steps "$steps" --hidden 503 --log-every $((steps / 4)))

# one SETUP RUN: prints "ms/step checkpoints mean-seconds" of this run
# only: its monitor and trainers have a run id of their own (peers of
# another run id refuse each other), its files a folder of their own; the
# step time comes from the one trainer of this run that is rank 0, and a
# run whose checkpoints do not match its setup is refused.
one() {
    local setup=$1 run=$2 d="$work/$1.$2" rid="bench-ckpt-$$-$1-$2" addr k
    mkdir -p "$d"
    local extra=()
    [ "$setup" = checkpoint ] && extra=(--checkpoint-dir "$d/ckpt" --checkpoint-every "$every")
    "$monitor" --listen /ip4/127.0.0.1/tcp/0 --world-size "$np" --http off --db "$d/h.db" \
        --run-id "$rid" "${extra[@]}" 2>"$d/monitor.err" &
    local mpid=$!
    echo "$mpid" >>"$work/pids"
    wait_line "$d/monitor.err" '^COLLAB_INITIAL_PEERS=' 20 || { echo "no monitor" >&2; return 1; }
    addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$d/monitor.err" | head -n 1)
    for k in $(seq 0 $((np - 1))); do
        env COLLAB_RUN_ID="$rid" COLLAB_INITIAL_PEERS="$addr" LD_PRELOAD="$preload" "$trainer" \
            "${targs[@]}" >"$d/t$k.out" 2>"$d/t$k.err" &
        echo "$!" >>"$work/pids"
    done
    wait_line "$d/t0.out" ' done steps' 600 || wait_line "$d/t1.out" ' done steps' 60
    sleep 1
    kill -TERM "$mpid" 2>/dev/null
    wait 2>/dev/null
    : >"$work/pids" # all reaped
    "${PYTHON:-/usr/bin/python3}" - "$steps" "$d" "$setup" <<'EOF'
import glob, re, sys
steps, d, setup = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mon = open(d + "/monitor.err", errors="replace").read()
w, files = {}, set()
for f in sorted(glob.glob(d + "/t*.out")):
    for line in open(f, errors="replace"):
        m = re.match(r"trainer: rank 0 step (\d+) batch loss \S+ wall (\S+)", line)
        if m:
            w[int(m.group(1))] = float(m.group(2))
            files.add(f)
if len(files) != 1:
    sys.exit("%s: rank 0's steps are in %d files, not one" % (d, len(files)))
a, b = steps // 4, steps
if a not in w or b not in w:
    sys.exit("%s: rank 0 logged no steps %d and %d" % (d, a, b))
t = re.findall(r"checkpoint of step \d+ written: .* ([\d.]+) s\)", mon)
if (setup == "checkpoint") != (len(t) > 0):
    sys.exit("%s: %d checkpoints written in setup %s" % (d, len(t), setup))
print("%.3f %d %.3f" % ((w[b] - w[a]) / (b - a) * 1000, len(t),
                        sum(map(float, t)) / len(t) if t else 0))
EOF
}

declare -A times
for r in $(seq 1 "$runs"); do
    for setup in monitor checkpoint; do
        read -r t n s < <(one "$setup" "$r") || { echo "run $r $setup failed (logs in $work)" >&2; exit 1; }
        [ -n "${t:-}" ] || { echo "run $r $setup failed (logs in $work)" >&2; exit 1; }
        times[$setup]+="$t "
        echo "run $r  $setup  $t ms/step  ($n checkpoints, $s s each to fetch and write)"
    done
done
"${PYTHON:-/usr/bin/python3}" - "${times[monitor]}" "${times[checkpoint]}" <<'EOF'
import statistics, sys
runs = {name: [float(x) for x in arg.split()]
        for name, arg in zip(("monitor", "checkpoint"), sys.argv[1:])}
med = {k: statistics.median(v) for k, v in runs.items()}
for k, v in runs.items():
    print("%-10s median %.3f ms/step (spread %.3f .. %.3f)" % (k, med[k], min(v), max(v)))
print("checkpoints: %+.2f %% of the median step time"
      % ((med["checkpoint"] / med["monitor"] - 1) * 100))
EOF
rm -rf "$work"
