#!/usr/bin/env bash
# collab-monitor with real peers (docs/monitor.md), the seeds' workflow:
#   1. a monitor founds the swarm (--world-size 4) and prints its join line;
#   2. four unchanged trainers (LD_PRELOAD) start with that line only, and
#      average their loss every step (--avg-loss; COLLAB_REPORT_LOSS=2: the
#      trainer's last gradient tensor, the output bias, is one float too);
#   3. /metrics and /api/swarm show 4 peers; one trainer is SIGKILLed: 3;
#      a new trainer joins with the same line: 4 again; /metrics passes
#      promtool (when installed);
#   4. the monitor is restarted (SIGTERM, same --identity, port and --db):
#      same join line, it finds the swarm again through the peers alive in
#      its history, the series keeps its rows and grows, /metrics shows 4;
#   5. after every trainer left, a sixth one starts with the same line: the
#      monitor, the only member left, admits it and it trains;
#   6. then the monitor is restarted once more with a
#      long --tick (the history stays still) and headless Chromium loads
#      the dashboard: the peer table lists the 6 trainers, every plot holds
#      as many points as /api/series has rows for it, the alive plot goes
#      4 -> 3 -> 4, the loss plot has points, and the timeline holds a circle
#      per event of /api/events (a failure and six joins among them).
#      Skipped with a note when chromium is not installed.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER E2E_MONITOR
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
py=${E2E_PYTHON:-python3}
export COLLAB_TIMEOUT=2
limit=150
port=$((20000 + RANDOM % 20000))
url=
dir="$E2E_LOG/monitor"
rm -rf "$dir" && mkdir -p "$dir"
pids=()

# get PATH: the body of an HTTP GET, or nothing.
get() { "$py" - "$url$1" <<'EOF'
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
except Exception as e:
    sys.stderr.write("GET %s: %s\n" % (sys.argv[1], e))
EOF
}
metric() { get /metrics | sed -n "s/^$1 //p"; }

# wait_metric NAME VALUE SECONDS
wait_metric() {
    local i
    for i in $(seq $(($3 * 4))); do
        [ "$(metric "$1")" = "$2" ] && return 0
        sleep 0.25
    done
    return 1
}

# wait_row ALIVE SECONDS: until the newest row of /api/series has alive = ALIVE.
wait_row() {
    local i
    for i in $(seq $(($2 * 4))); do
        get /api/series | grep '"t":' | tail -n 1 | grep -q "\"alive\":$1," && return 0
        sleep 0.25
    done
    return 1
}

# monitor NAME [extra flags]: starts the monitor in the background.
monitor() {
    local name=$1
    shift
    say "[$name] collab-monitor $*"
    "$E2E_MONITOR" --listen "/ip4/127.0.0.1/tcp/$port" --identity "$dir/monitor.key" \
        --world-size 4 --http 127.0.0.1:0 --db "$dir/history.db" "$@" \
        >"$E2E_LOG/$name.out" 2>"$E2E_LOG/$name.err" &
    mon_pid=$!
    pids+=($mon_pid)
    (sleep "$limit" && kill -9 "$mon_pid" 2>/dev/null) >/dev/null 2>&1 &
    pids+=($!)
}

trainer() {
    local name=$1
    say "[$name] starts"
    env COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0 COLLAB_INITIAL_PEERS="$addr" COLLAB_REPORT_INTERVAL=1 \
        COLLAB_REPORT_LOSS=2 LD_PRELOAD="$preload" "$E2E_TRAINER" --steps 260 --sleep-ms 100 \
        --log-every 20 --avg-loss >"$E2E_LOG/$name.out" 2>"$E2E_LOG/$name.err" &
    eval "pid_$name=$!"
    pids+=($!)
    (sleep "$limit" && kill -9 "$!" 2>/dev/null) >/dev/null 2>&1 &
    pids+=($!)
}

# dashboard NAME: waits for monitor NAME's dashboard line; sets $url.
dashboard() {
    wait_for "$E2E_LOG/$1.err" 'dashboard at http' 60 || fail "monitor $1 served no dashboard"
    url=$(sed -n 's|.*dashboard at \(http://[0-9.:]*\)/.*|\1|p' "$E2E_LOG/$1.err" | head -n 1)
    [ -n "$url" ] || fail "monitor $1: no dashboard address in its log"
}

cleanup() { kill -9 "${pids[@]}" 2>/dev/null; }
trap cleanup EXIT

monitor m1 --tick 1
wait_for "$E2E_LOG/m1.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "the monitor printed no join line"
dashboard m1
grep -q 'found no active peers' "$E2E_LOG/m1.err" || fail "the monitor did not found the swarm"
addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/m1.err" | head -n 1)
say "join line: COLLAB_INITIAL_PEERS=$addr"
for k in 0 1 2 3; do trainer "t$k"; done
wait_metric collab_peers_alive 4 40 || fail "/metrics never showed 4 peers alive"
get /api/swarm | grep -q '"alive":4' || fail "/api/swarm does not show 4 peers alive"
wait_for "$E2E_LOG/m1.err" 'step #[0-9]*  loss = [0-9]' 40 ||
    fail "the monitor logged no step with a loss"
if command -v promtool >/dev/null 2>&1; then
    get /metrics >"$dir/metrics.txt"
    promtool check metrics <"$dir/metrics.txt" || fail "promtool rejects /metrics"
    say "promtool accepts /metrics"
else
    say "promtool is not installed: format not checked"
fi

say "SIGKILL t1"
kill -9 "$pid_t1"
wait_metric collab_peers_alive 3 30 || fail "/metrics never showed 3 peers after the kill"
get /api/swarm | grep -q '"alive":3' || fail "/api/swarm does not show 3 peers after the kill"
wait_for "$E2E_LOG/m1.err" 'rank [0-9] failed' 10 || fail "the monitor did not log the failure"
wait_row 3 10 || fail "the history never recorded 3 peers"
trainer t4
wait_metric collab_peers_alive 4 40 || fail "/metrics never showed 4 peers after the join"
wait_for "$E2E_LOG/m1.err" 'rank [0-9] joined' 10 || fail "the monitor did not log the join"
# Coordination passed to rank 0 as it joined: the group was formed by a trainer.
grep -q 'formed the group' "$E2E_LOG/m1.err" && fail "the monitor coordinated while trainers lived"
grep -q 'formed the group' "$E2E_LOG"/t[0-3].err || fail "no trainer formed the group"
sleep 3 # a few rows of the series at 4 again

# Restart: same address, history kept, back in the swarm through its peers.
rows1=$(get /api/series | grep -c '"t":')
say "SIGTERM the monitor ($rows1 rows of history)"
kill -TERM "$mon_pid"
wait "$mon_pid" || fail "the monitor did not stop cleanly on SIGTERM"
monitor m2 --tick 1
wait_for "$E2E_LOG/m2.err" '^COLLAB_INITIAL_PEERS=' 40 || fail "the restarted monitor printed no join line"
dashboard m2
addr2=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/m2.err" | head -n 1)
[ "$addr2" = "$addr" ] || fail "the join line changed across the restart: $addr2"
grep -q 'found no active peers' "$E2E_LOG/m2.err" && fail "the restarted monitor founded a second swarm"
wait_metric collab_peers_alive 4 30 || fail "the restarted monitor never saw the 4 peers"
sleep 2
rows2=$(get /api/series | grep -c '"t":')
[ "$rows2" -gt "$rows1" ] || fail "the history did not survive the restart ($rows1 rows, then $rows2)"
say "history: $rows1 rows before the restart, $rows2 after"

for k in 0 2 3 4; do
    p=pid_t$k
    wait "${!p}" || fail "t$k exited with status $?"
done
# Every trainer is gone: the monitor coordinates again, and a trainer that
# comes later joins through it and trains (alone, after matchmaking).
wait_metric collab_peers_alive 0 20 || fail "/metrics never showed 0 peers after the run"
say "[t5] starts after every other trainer left"
env COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0 COLLAB_INITIAL_PEERS="$addr" COLLAB_MATCHMAKING_TIME=1 \
    LD_PRELOAD="$preload" "$E2E_TRAINER" --steps 20 --log-every 10 \
    >"$E2E_LOG/t5.out" 2>"$E2E_LOG/t5.err" &
pid_t5=$!
pids+=($pid_t5)
wait "$pid_t5" || fail "a trainer joining the monitor's empty swarm exited with status $?"
grep -q 'done steps 0..20' "$E2E_LOG/t5.out" || fail "the late trainer did not train"
grep -q 'found no active peers' "$E2E_LOG/t5.err" && fail "the late trainer founded its own swarm"
wait_for "$E2E_LOG/m2.err" 'rank 0 joined' 10 || fail "the monitor did not admit the late trainer"
sleep 2
kill -TERM "$mon_pid"
wait "$mon_pid" || fail "the monitor did not stop cleanly"

# The dashboard in a real browser, over a history that stands still.
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || pass "(chromium not installed: dashboard not checked in a browser)"
monitor m3 --tick 3600
dashboard m3
get /api/series >"$dir/series.json"
get /api/events >"$dir/events.json"
get /api/peers >"$dir/peers.json"
chrome() {
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$dir/chromium" --window-size=1000,1500 "$@" 2>>"$E2E_LOG/chromium.err"
}
chrome --dump-dom "$url/" >"$dir/dashboard.html" || fail "chromium could not load the dashboard"
chrome --screenshot="$dir/dashboard.png" "$url/" >/dev/null || fail "chromium took no screenshot"
say "screenshot: $dir/dashboard.png"
"$py" - "$dir" <<'EOF' || fail "the dashboard does not match the JSON API"
import json, re, sys
from html.parser import HTMLParser
d = sys.argv[1]
series = json.load(open(d + "/series.json"))
events = json.load(open(d + "/events.json"))
peers = json.load(open(d + "/peers.json"))

class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.plot = None
        self.points = {}
        self.timeline = False
        self.events = []
        self.rows = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "data-series" in a:
            self.plot = a["data-series"]
            self.points[self.plot] = []
        elif tag == "svg" and a.get("id") == "timeline":
            self.timeline = True
        elif tag == "circle" and self.plot is not None and a.get("class") == "pt":
            self.points[self.plot].append((float(a["cx"]), float(a["cy"])))
        elif tag == "circle" and self.timeline:
            self.events.append(a.get("class", ""))
        elif tag == "tr" and "peer" in a.get("class", "").split():
            self.rows.append(a)
    def handle_endtag(self, tag):
        if tag == "svg":
            self.plot = None
            self.timeline = False

p = Page()
p.feed(open(d + "/dashboard.html").read())
bad = []
for key in ("alive", "steps_per_s", "samples_per_s", "loss", "mbit_s", "group_size"):
    want = sum(1 for r in series if r[key] is not None)
    got = len(p.points.get(key, []))
    print("plot %-14s %4d points, /api/series %4d rows" % (key, got, want))
    if got != want:
        bad.append("plot %s: %d points, %d rows" % (key, got, want))
if not p.points.get("loss"):
    bad.append("the loss plot is empty")
# 4 -> 3 -> 4 in the alive series (the rows the alive plot draws).
alive = [r["alive"] for r in series]
seq = [a for i, a in enumerate(alive) if i == 0 or a != alive[i - 1]]
text = ",".join(map(str, seq))
print("alive over time:", text)
if not re.search(r"4,3,(4|3,4)", text):
    bad.append("the alive series does not go 4 -> 3 -> 4: " + text)
kinds = [e["kind"] for e in events]
if len(p.events) != len(events):
    bad.append("timeline: %d circles, /api/events %d rows" % (len(p.events), len(events)))
if sum(1 for c in p.events if "ev-failed" in c) < 1 or kinds.count("failed") < 1:
    bad.append("no failure on the timeline")
if sum(1 for c in p.events if "ev-joined" in c) < 6:
    bad.append("fewer than 6 joins on the timeline")
trainers = [x for x in peers if not x["monitor"]]
if len(p.rows) != len(trainers) or len(trainers) != 6:
    bad.append("peer table: %d rows, /api/peers %d trainers (want 6)" % (len(p.rows), len(trainers)))
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
kill -TERM "$mon_pid"
wait "$mon_pid"
pass "4 -> 3 -> 4 peers in /metrics, JSON and the dashboard; history and address kept across restarts"
