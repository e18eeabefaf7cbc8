#!/usr/bin/env bash
# demo.sh - the elastic swarm in one command.
#
# Installs the Debian dependencies if missing, builds mpicollab (Release) in
# build-release/ -- its own folder, apart from scripts/test.sh's build/, so
# the two commands run in either order without rebuilding each other -- then
# trains examples/trainer.c (an unchanged MPICH program) on a swarm
# of 4 peers started by collab-run, twice:
#   1. without faults, for reference;
#   2. with one peer SIGKILLed midway and a new peer joining later, with
#      a collab-monitor watching: the peers join through it, and the demo
#      prints its dashboard's address (open it while the run goes on).
# It ends with a summary: peers over time, the final loss of each peer
# against the fault-free run, and whether all peers hold bit-identical
# parameters.  Takes a minute or two once built.
#
#   scripts/demo.sh [--no-build]      (--no-build: use the build folder as it is)
#
# Environment: BUILD_DIR (default build-release), DEMO_STEPS (150), DEMO_SLEEP_MS (80).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-release}
steps=${DEMO_STEPS:-150}
sleep_ms=${DEMO_SLEEP_MS:-80}
[[ $steps =~ ^[0-9]+$ && $steps -ge 100 ]] || { echo "demo.sh: DEMO_STEPS must be a number >= 100" >&2; exit 2; }
[[ $sleep_ms =~ ^[0-9]+$ ]] || { echo "demo.sh: DEMO_SLEEP_MS must be a number" >&2; exit 2; }

if [ "${1:-}" != "--no-build" ]; then
    bash "$root/scripts/deps.sh" || exit 1
    echo "demo.sh: building in $build (Release)"
    mkdir -p "$build" || exit 1
    blog="$build/demo-build.log"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$blog" 2>&1 &&
        cmake --build "$build" -j "$(nproc)" >>"$blog" 2>&1 || {
        tail -n 40 "$blog" >&2
        echo "demo.sh: the build failed (full log: $blog)" >&2
        exit 1
    }
fi
crun="$build/bin/collab-run"
trainer="$build/examples/trainer"
monitor="$build/bin/collab-monitor"
for f in "$crun" "$trainer" "$monitor"; do
    [ -x "$f" ] || { echo "demo.sh: $f was not built" >&2; exit 1; }
done
logs=$(mktemp -d /tmp/collab-demo.XXXXXX)
py=/usr/bin/python3
[ -x "$py" ] || py=python3

targs=(--steps "$steps" --sleep-ms "$sleep_ms" --log-every 10 --log-all)
kill_at=$((steps / 3 / 10 * 10))
join_at=$((steps / 2 / 10 * 10 + 10))
limit=$((steps * sleep_ms / 1000 * 4 + 90))

echo
echo "== 1. four peers, no faults"
echo "   collab-run -n 4 -- trainer ${targs[*]}"
"$crun" -n 4 --timeout "$limit" -- "$trainer" "${targs[@]}" >"$logs/ref.out" 2>"$logs/ref.err"
st_ref=$?
grep -h 'done steps' "$logs/ref.out" | sed 's/^/   /'

echo
echo "== 2. a monitor; four peers join through it; rank 2 is killed at step $kill_at, a new peer joins at step $join_at"
echo "   collab-monitor --world-size 4 --listen /ip4/127.0.0.1/tcp/0 --http 127.0.0.1:0 --db $logs/monitor.db"
"$monitor" --world-size 4 --listen /ip4/127.0.0.1/tcp/0 --http 127.0.0.1:0 --db "$logs/monitor.db" \
    --tick 1 >"$logs/monitor.out" 2>"$logs/monitor.err" &
mon_pid=$!
trap 'kill "$mon_pid" 2>/dev/null' EXIT
join=
for _ in $(seq 100); do
    join=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$logs/monitor.err" | head -n 1)
    url=$(sed -n 's/.*dashboard at \(http[^ ]*\).*/\1/p' "$logs/monitor.err" | head -n 1)
    [ -n "$join" ] && [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$join" ] || { cat "$logs/monitor.err" >&2; echo "demo.sh: the monitor did not start" >&2; exit 1; }
echo "   dashboard: $url   (live while the run goes on)"
echo "   COLLAB_INITIAL_PEERS=$join collab-run -n 4 --chaos 'kill:2@line:0:step $kill_at ' --chaos 'start@line:0:step $join_at ' -- trainer ... --avg-loss"
COLLAB_INITIAL_PEERS="$join" COLLAB_REPORT_INTERVAL=1 COLLAB_REPORT_LOSS=2 \
    "$crun" -n 4 --timeout "$limit" \
    --chaos "kill:2@line:0:step $kill_at " --chaos "start@line:0:step $join_at " \
    -- "$trainer" "${targs[@]}" --avg-loss >"$logs/chaos.out" 2>"$logs/chaos.err"
st_chaos=$?
sleep 2
grep -hE 'monitor: (warning: )?(rank [0-9]+ (failed|joined)|step #)' "$logs/monitor.err" |
    head -n 12 | sed 's/^/   /'
kill "$mon_pid" 2>/dev/null
wait "$mon_pid" 2>/dev/null
echo "   the monitor's history: $logs/monitor.db (restart it with --db to browse it)"
grep -h 'chaos:' "$logs/chaos.err" | sed 's/^collab-run: /   /'
grep -h '\[collab\].*\(failed\|admitted\|finished with\|error\)' "$logs/chaos.err" |
    head -n 8 | sed 's/^/   /'
grep -h 'done steps\|starts at step [1-9]' "$logs/chaos.out" | sed 's/^/   /'

echo
echo "== summary (logs in $logs)"
"$py" - "$logs/ref.out" "$logs/chaos.out" "$st_ref" "$st_chaos" <<'PY'
import re, sys
ref_path, chaos_path, st_ref, st_chaos = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
done_re = re.compile(r"trainer: rank (\d+) pid (\d+) done steps (\d+)\.\.(\d+) final loss (\S+) checksum ([0-9a-f]+)")
step_re = re.compile(r"trainer: rank (\d+) step (\d+) batch loss \S+ wall ([0-9.]+)")

def done(path):
    return [m.groups() for m in map(done_re.search, open(path, errors="replace")) if m]

ref, chaos = done(ref_path), done(chaos_path)
ok = True
if st_ref != 0 or len(ref) != 4:
    print(f"fault-free run: FAILED (status {st_ref}, {len(ref)} peers finished)")
    ok = False
ref_loss = float(ref[0][4]) if ref else float("nan")
if ref:
    print(f"fault-free run: 4 peers, final loss {ref_loss:.6g}, "
          f"{'identical' if len({r[5] for r in ref}) == 1 else 'DIFFERENT'} parameters")

# Peers over time: ranks that logged a step in each 2-second window.
points = [(float(m.group(3)), int(m.group(1)))
          for m in map(step_re.search, open(chaos_path, errors="replace")) if m]
if points:
    t0 = min(t for t, _ in points)
    windows = {}
    for t, r in points:
        windows.setdefault(int((t - t0) // 2), set()).add(r)
    print("peers training over time (ranks that logged a step):")
    for w in range(max(windows) + 1):
        ranks = sorted(windows.get(w, ()))
        print(f"  {2*w:4d}-{2*w+2:<4d}s  {len(ranks)}  {'#' * len(ranks):4s}  ranks {' '.join(map(str, ranks))}")

print(f"run with a kill and a join: status {st_chaos}, {len(chaos)} peers finished")
for rank, pid, first, last, loss, sum_ in sorted(chaos, key=lambda c: (int(c[0]), int(c[2]))):
    role = "joiner" if int(first) > 0 else "veteran"
    print(f"  rank {rank} (pid {pid}, {role}, steps {first}..{last}): final loss {float(loss):.6g}"
          f" ({float(loss) / ref_loss:.3f} x fault-free), checksum {sum_}")
same = len({c[5] for c in chaos}) == 1
print(f"checksums equal across peers: {'yes' if same and chaos else 'NO'}")
joined = any(int(c[2]) > 0 for c in chaos)
print(f"joiner started from the swarm's step: {'yes' if joined else 'NO'}")
if st_chaos != 0 or not same or len(chaos) != 4 or not joined:
    ok = False
print("demo: OK" if ok else "demo: something went wrong; see the logs above")
sys.exit(0 if ok else 1)
PY
