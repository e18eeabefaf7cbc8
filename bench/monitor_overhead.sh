#!/usr/bin/env bash
# monitor_overhead.sh - what reporting to collab-monitor costs a trainer.
#
#   bench/monitor_overhead.sh [--build DIR] [--np N] [--steps S] [--runs R]
#                             [--interval SECONDS] [--timed-only]
#
# The example trainer (unchanged, LD_PRELOAD) with 1 MiB of gradients
# (--hidden 503: 262,660 floats) and no sleep, on N peers (default 3) on
# loopback, R times (default 5) in each of three setups, interleaved:
#   plain    the first trainer founds the swarm; no monitor, no reports;
#   quiet    collab-monitor founds it, but the trainers report only every
#            1000000 s (never, in a run): the monitor's process and its
#            heartbeats without the reports;
#   monitor  the same with reports every --interval seconds (default 0.5:
#            ten times more often than the default COLLAB_REPORT_INTERVAL,
#            to make the cost visible) and COLLAB_REPORT_LOSS=2.
# Every setup runs the trainer with --avg-loss.  The cost of reporting is
# monitor against quiet: the same processes on the same cores, with and
# without reports (on a real swarm the monitor runs on another machine).
# On a loaded machine that difference drowns in noise, so one more run
# ("timed", COLLAB_LOG=debug) has the engine time its own reporting work:
# building and sending each report, and the accounting done as each
# collective completes (the only part on a collective's path); the
# script divides it by the trainers' elapsed time.
# Step time = (wall at step S - wall at step S/4) / (3S/4) on rank 0, so
# start-up and joining are left out.  Prints each run, then the medians,
# the spread (min..max) and the overhead of the median, which should
# stay under 1 %.  Method and results: docs/benchmarks.md.
set -u
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" np=3 steps=400 runs=5 interval=0.5 timed_only=
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --timed-only) timed_only=1; shift ;;
    -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "monitor_overhead.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
trainer="$build/examples/trainer"
monitor="$build/bin/collab-monitor"
preload="$build/lib/libmpicollab.so"
for f in "$trainer" "$monitor" "$preload"; do
    [ -e "$f" ] || { echo "monitor_overhead.sh: $f is not built" >&2; exit 1; }
done
work=$(mktemp -d /tmp/monitor_overhead.XXXXXX)
pids=()
cleanup() { kill -9 "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT
export COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0 COLLAB_TIMEOUT=5
targs=(--steps "$steps" --hidden 503 --log-every $((steps / 4)) --avg-loss)

# one SETUP RUN: prints the step time in ms.
one() {
    local setup=$1 run=$2 d="$work/$1.$2" addr k
    mkdir -p "$d"
    local extra=()
    if [ "$setup" != plain ]; then
        "$monitor" --listen /ip4/127.0.0.1/tcp/0 --world-size "$np" --http off --db "$d/h.db" \
            2>"$d/monitor.err" &
        pids+=($!)
        local mpid=$!
        wait_line "$d/monitor.err" '^COLLAB_INITIAL_PEERS=' 20 || { echo "no monitor" >&2; return 1; }
        addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$d/monitor.err")
        extra=(COLLAB_REPORT_INTERVAL="$interval" COLLAB_REPORT_LOSS=2)
        [ "$setup" = quiet ] && extra=(COLLAB_REPORT_INTERVAL=1000000)
        for k in $(seq 0 $((np - 1))); do
            env COLLAB_INITIAL_PEERS="$addr" "${extra[@]}" LD_PRELOAD="$preload" "$trainer" \
                "${targs[@]}" >"$d/t$k.out" 2>"$d/t$k.err" &
            pids+=($!)
        done
    else
        env COLLAB_WORLD_SIZE="$np" LD_PRELOAD="$preload" "$trainer" "${targs[@]}" \
            >"$d/t0.out" 2>"$d/t0.err" &
        pids+=($!)
        wait_line "$d/t0.err" '^COLLAB_INITIAL_PEERS=' 20 || { echo "no founder" >&2; return 1; }
        addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$d/t0.err")
        for k in $(seq 1 $((np - 1))); do
            env COLLAB_INITIAL_PEERS="$addr" LD_PRELOAD="$preload" "$trainer" "${targs[@]}" \
                >"$d/t$k.out" 2>"$d/t$k.err" &
            pids+=($!)
        done
    fi
    wait_line "$d/t0.out" ' done steps' 600 || wait_line "$d/t1.out" ' done steps' 60
    sleep 1
    [ "$setup" != plain ] && kill -TERM "$mpid" 2>/dev/null
    wait 2>/dev/null
    pids=()
    cat "$d"/t*.out | "${PYTHON:-/usr/bin/python3}" -c '
import re, sys
steps = int(sys.argv[1])
w = {}
for line in sys.stdin:
    m = re.match(r"trainer: rank 0 step (\d+) batch loss \S+ wall (\S+)", line)
    if m:
        w[int(m.group(1))] = float(m.group(2))
a, b = steps // 4, steps
if a not in w or b not in w:
    sys.exit("rank 0 logged no steps %d and %d" % (a, b))
print("%.3f" % ((w[b] - w[a]) / (b - a) * 1000))
' "$steps"
}

declare -A times
[ -n "$timed_only" ] && runs=0
for r in $(seq 1 "$runs"); do
    for setup in plain quiet monitor; do
        t=$(one "$setup" "$r") || { echo "run $r $setup failed (logs in $work)" >&2; exit 1; }
        times[$setup]+="$t "
        echo "run $r  $setup  $t ms/step"
    done
done
[ -n "$timed_only" ] || "${PYTHON:-/usr/bin/python3}" - "${times[plain]}" "${times[quiet]}" "${times[monitor]}" <<'EOF'
import statistics, sys
runs = {name: [float(x) for x in arg.split()]
        for name, arg in zip(("plain", "quiet", "monitor"), sys.argv[1:])}
med = {k: statistics.median(v) for k, v in runs.items()}
for k, v in runs.items():
    print("%-8s median %.3f ms/step (spread %.3f .. %.3f)" % (k, med[k], min(v), max(v)))
print("reporting (monitor vs quiet): %+.2f %% of the median step time"
      % ((med["monitor"] / med["quiet"] - 1) * 100))
print("monitor process on the same cores (quiet vs plain): %+.2f %%"
      % ((med["quiet"] / med["plain"] - 1) * 100))
EOF
# The timed run: the engine measures its reporting work itself.
d="$work/timed"
mkdir -p "$d"
"$monitor" --listen /ip4/127.0.0.1/tcp/0 --world-size "$np" --http off --db "$d/h.db" \
    2>"$d/monitor.err" &
mpid=$!
pids+=($mpid)
wait_line "$d/monitor.err" '^COLLAB_INITIAL_PEERS=' 20 || { echo "no monitor" >&2; exit 1; }
addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$d/monitor.err")
for k in $(seq 0 $((np - 1))); do
    env COLLAB_INITIAL_PEERS="$addr" COLLAB_REPORT_INTERVAL="$interval" COLLAB_REPORT_LOSS=2 \
        COLLAB_LOG=debug LD_PRELOAD="$preload" "$trainer" "${targs[@]}" \
        >"$d/t$k.out" 2>"$d/t$k.err" &
    pids+=($!)
done
for k in $(seq 0 $((np - 1))); do wait_line "$d/t$k.err" 'reporting cost:' 900; done
kill -TERM "$mpid" 2>/dev/null
wait 2>/dev/null
"${PYTHON:-/usr/bin/python3}" - "$d" "$np" "$interval" <<'EOF'
import re, sys
d, np_, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for k in range(np_):
    err = open("%s/t%d.err" % (d, k), errors="replace").read()
    out = open("%s/t%d.out" % (d, k), errors="replace").read()
    c = re.search(r"reporting cost: (\d+) reports sent in ([\d.]+) us, accounting of (\d+) "
                  r"collectives in ([\d.]+) us", err)
    e = re.search(r"done steps \S+ final loss \S+ checksum \S+ elapsed ([\d.]+) s", out)
    if not c or not e:
        sys.exit("timed run: trainer %d logged no reporting cost or no elapsed time" % k)
    n, send_us = int(c.group(1)), float(c.group(2))
    ncoll, count_us = int(c.group(3)), float(c.group(4))
    el = float(e.group(1))
    print("timed trainer %d: %d reports, %.1f us each; %.3f us of accounting per collective; "
          "all of it %.4f %% of its %.1f s (reports every %g s)"
          % (k, n, send_us / max(n, 1), count_us / max(ncoll, 1),
             (send_us + count_us) / 1e6 / el * 100, el, interval))
EOF
rm -rf "$work"
