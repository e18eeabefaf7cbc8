# lib.sh - shared helpers of the end-to-end tests (sourced, not run).
#
# The tests get their inputs from E2E_* variables set by e2e.cmake (never
# COLLAB_*: peers inherit the environment and the library refuses unknown
# COLLAB_* names):
#   E2E_RUN       collab-run
#   E2E_TRAINER   examples/trainer, built with mpicc.mpich
#   E2E_MPIEXEC   mpiexec.mpich
#   E2E_LIBDIR    the build's lib/ (libmpicollab.so, mpicollab/libmpich.so.12)
#   E2E_OUT       folder for logs; the MPICH reference lives there
#   E2E_PYTHON    a python3 (only for arithmetic on floats)

set -u

. "$(dirname "${BASH_SOURCE[0]}")/../stack_watch.sh"

E2E_NAME=${E2E_NAME:-$(basename "$0" .sh)}
E2E_LOG="${E2E_OUT:?E2E_OUT is not set}/$E2E_NAME"
mkdir -p "$E2E_LOG" || exit 1
rm -f "$E2E_LOG"/*.out "$E2E_LOG"/*.err

# The trainer arguments shared by every test that compares with the MPICH
# reference (results depend on --steps, --seed and the world size only).
E2E_STEPS=120
E2E_REF="$E2E_OUT/reference.txt"

say() { echo "$E2E_NAME: $*"; }

# Prints why the test failed, the tail of each log (or only of the runs
# named in $E2E_FAILED_RUNS), and exits 1.
fail() {
    echo "$E2E_NAME: FAILED: $*" >&2
    local -a files=()
    local f r
    if [ -n "${E2E_FAILED_RUNS:-}" ]; then
        for r in $E2E_FAILED_RUNS; do files+=("$E2E_LOG/$r.out" "$E2E_LOG/$r.err"); done
    else
        files=("$E2E_LOG"/*.out "$E2E_LOG"/*.err)
    fi
    for f in "${files[@]}"; do
        [ -s "$f" ] || continue
        if [ "$(wc -l <"$f")" -gt 30 ]; then
            echo "----- $f (faults, errors and ends)" >&2
            grep -E 'collab-run: (chaos|summary)|error|fatal|FAIL|starts at step|done steps' "$f" |
                head -n 40 >&2
        fi
        echo "----- $f (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
    for f in "$E2E_LOG"/*.stacks; do
        [ -s "$f" ] || continue
        echo "----- $f: stacks of the peers still running near the deadline" >&2
        head -n 120 "$f" >&2
    done
    exit 1
}

pass() {
    say "PASSED${1:+: $1}"
    exit 0
}

need() {
    for v in "$@"; do
        local path=${!v:-}
        [ -n "$path" ] && [ -x "$path" ] || fail "$v ($path) is not built or not executable"
    done
}

# run_logged NAME LIMIT cmd...  runs cmd with an outer time limit, output in
# $E2E_LOG/NAME.out/.err; sets $status and $elapsed (seconds).
# With E2E_WATCH=S set, the stacks of the processes still running after S
# seconds are written to $E2E_LOG/NAME.stacks (needs gdb).
run_logged() {
    local name=$1 limit=$2
    shift 2
    say "[$name] $*"
    local t0=$SECONDS
    rm -f "$E2E_LOG/$name.stacks"
    timeout -k 5 "$limit" "$@" >"$E2E_LOG/$name.out" 2>"$E2E_LOG/$name.err" &
    local pid=$!
    if [ -n "${E2E_WATCH:-}" ] && command -v gdb >/dev/null 2>&1; then
        stack_watch "$pid" "$E2E_WATCH" "$E2E_LOG/$name.stacks" &
    fi
    wait "$pid"
    status=$?
    elapsed=$((SECONDS - t0))
    say "[$name] exit status $status after $elapsed s"
}

# collab NAME TIMEOUT [collab-run options...] -- program args...
# Runs collab-run with --timeout TIMEOUT (and a slightly longer outer
# limit); the peers' stacks are recorded 10 s before the deadline.
collab() {
    local name=$1 tmo=$2
    shift 2
    E2E_WATCH=$((tmo - 10)) run_logged "$name" $((tmo + 30)) "$E2E_RUN" --timeout "$tmo" \
        --tag-output "$@"
}

# The trainer's end lines in a log, one per peer that finished.
done_lines() { grep -h 'trainer: rank [0-9]* pid [0-9]* done steps' "$@" || true; }

# Number of peers that finished.
count_done() { done_lines "$@" | wc -l; }

# Distinct parameter checksums among the peers that finished.
checksums() { done_lines "$@" | sed -n 's/.* checksum \([0-9a-f]*\).*/\1/p' | sort -u; }

# Final losses, one per finished peer.
losses() { done_lines "$@" | sed -n 's/.* final loss \([^ ]*\) .*/\1/p'; }

# Start steps of every peer that started ("starts at step N").
start_steps() { grep -h 'trainer: rank [0-9]* pid [0-9]* starts at step' "$@" |
    sed -n 's/.* starts at step \([0-9]*\).*/\1/p'; }

# Fails unless every finished peer reports the same checksum and at least
# $2 peers finished.
expect_agreement() {
    local log=$1 want=$2
    local n sums
    n=$(count_done "$log")
    sums=$(checksums "$log" | wc -l)
    [ "$n" -ge "$want" ] || fail "$n peers finished, expected at least $want"
    [ "$sums" -eq 1 ] || fail "peers disagree: $sums distinct checksums: $(checksums "$log" | tr '\n' ' ')"
    say "$n peers finished with the same parameters (checksum $(checksums "$log"))"
}

# expect_exit0 ERR WHO...: fails unless collab-run's summary in ERR says
# that each WHO ('rank 1', 'peer +1') exited with status 0.
expect_exit0() {
    local err=$1 who
    shift
    for who in "$@"; do
        grep -q "summary: $who (pid [0-9]*) exited with status 0 " "$err" ||
            fail "$who did not exit with status 0"
    done
}

# float_cmp EXPR: evaluates a Python boolean expression on floats.
float_cmp() {
    "${E2E_PYTHON:-python3}" -c "import sys; sys.exit(0 if ($1) else 1)"
}

# The MPICH reference loss (made by the e2e.reference fixture).
ref_loss() {
    [ -s "$E2E_REF" ] || fail "no MPICH reference in $E2E_REF (run the e2e.reference test)"
    sed -n 's/^loss //p' "$E2E_REF"
}

# Fails unless every finished peer's loss is at most FACTOR times the
# reference (plus a small slack): faults may cost a little accuracy, not
# the training.
expect_loss_near_reference() {
    local log=$1 factor=$2 ref l
    ref=$(ref_loss)
    for l in $(losses "$log"); do
        float_cmp "$l == $l and $l <= $factor * $ref + 0.005" ||
            fail "final loss $l is not within ${factor}x of MPICH's $ref"
    done
    say "final losses $(losses "$log" | sort -u | tr '\n' ' ')(MPICH: $ref)"
}

# Peers started by hand, the way peers on separate machines are (no
# launcher, the trainer with the library preloaded).  The caller sets
# $preload (the library), the array args (trainer arguments) and $limit
# (seconds after which a peer is SIGKILLed), and calls hand_cleanup on
# exit.
hand_pids=()
hand_watchdogs=()

# hand_start NAME [VAR=value...]: one peer in the background, logs
# NAME.out/.err, its pid in $pid_NAME.
hand_start() {
    local name=$1
    shift
    say "[$name] starts"
    # env execs the trainer: $! is the trainer itself, for kill -9.
    env "$@" LD_PRELOAD="$preload" "$E2E_TRAINER" "${args[@]}" \
        >"$E2E_LOG/$name.out" 2>"$E2E_LOG/$name.err" &
    hand_pids+=($!)
    eval "pid_$name=$!"
    # Nothing may outlive the limit.
    (sleep "$limit" && kill -9 "$!" 2>/dev/null) >/dev/null 2>&1 &
    hand_watchdogs+=($!)
}

# hand_wait_for FILE PATTERN SECONDS: until a line of FILE matches
# (wait_for, below).
hand_wait_for() { wait_for "$@"; }

hand_cleanup() { kill -9 "${hand_pids[@]}" "${hand_watchdogs[@]}" 2>/dev/null; }

# wait_for FILE PATTERN SECONDS: true once FILE has a line matching PATTERN
# (grep's basic syntax), false after SECONDS.
wait_for() {
    local i
    for i in $(seq $(($3 * 10))); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# wait_count FILE PATTERN N SECONDS: true once N lines of FILE match.
wait_count() {
    local i
    for i in $(seq $(($4 * 10))); do
        [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
        sleep 0.1
    done
    return 1
}

# monitor_start NAME ARGS...: starts collab-monitor ($E2E_MONITOR) with
# ARGS on a random loopback port, in the background, its output in
# NAME.out and NAME.err; a port another test holds is tried again with
# another (3 tries).  Sets mon_port, mon_pid (added to the array pids) and
# mon_addr (its join line); fails the test when it prints none in 20 s.
monitor_start() {
    local name=$1 try
    shift
    for try in 1 2 3; do
        mon_port=$((20000 + RANDOM % 20000))
        "$E2E_MONITOR" --listen "/ip4/127.0.0.1/tcp/$mon_port" "$@" \
            >"$E2E_LOG/$name.out" 2>"$E2E_LOG/$name.err" &
        mon_pid=$!
        pids+=($mon_pid)
        wait_for "$E2E_LOG/$name.err" '^COLLAB_INITIAL_PEERS=\|Address already in use' 20
        grep -q 'Address already in use' "$E2E_LOG/$name.err" || break
        wait "$mon_pid"
    done
    wait_for "$E2E_LOG/$name.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "monitor $name printed no join line"
    mon_addr=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/$name.err" | head -n 1)
}

# ckpt_summary FILE: reads a collab-monitor checkpoint of the example
# trainer (the layout of docs/monitor.md §7) and prints its step, its
# step-counter buffer (the last buffer) and the FNV-1a checksum of the
# parameter buffers (every other one), the trainer's own checksum.
ckpt_summary() {
    "${E2E_PYTHON:-python3}" - "$1" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"COLLABCK"
ver, n, step, seq, prefix, rlen = struct.unpack_from("<IIQQQI", b, 8)
off = 44 + rlen + 4 * prefix
rows = []
for i in range(n):
    what, sig, idx, size = struct.unpack_from("<B3xIQQ", b, off)
    rows.append((what, idx, size))
    off += 56
data = {}
for what, idx, size in rows:
    data[(what, idx)] = b[off:off + size]
    off += size
bufs = sorted(k for k in data if k[0] == 0)
h = 0xcbf29ce484222325
for k in bufs[:-1]:
    for c in data[k]:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
counter = struct.unpack("<i", data[bufs[-1]])[0]
print(step, counter, "%016x" % h)
EOF
}

# Network namespaces on one bridge (root only): netns_add TAG N NET and
# netns_del TAG N (scripts/netns.sh, shared with the benchmarks).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/netns.sh"

# Peer $2's link (made by netns_add with tag $1) limited by tbf to $3
# Mbit/s both ways: inside its namespace (its upload) and on the bridge
# (its download), burst 4 ms and queue 100 ms of the rate, as
# bench/wan.sh.
e2e_ns_limit() {
    local tag=$1 i=$2 rate=$3
    local burst=$((rate * 1000000 / 8 / 250)) queue=$((rate * 1000000 / 8 / 10))
    [ "$burst" -ge 3000 ] || burst=3000
    ip netns exec "${tag}n$i" tc qdisc add dev p$i root tbf rate "${rate}mbit" burst "$burst" \
        limit "$queue" || return 1
    tc qdisc add dev "${tag}h$i" root tbf rate "${rate}mbit" burst "$burst" limit "$queue"
}

# Peer $2's upload (namespace of tag $1) at $3 Mbit/s in all, and each of
# its outgoing TCP connections at $4 Mbit/s, as behind a provider that
# polices each flow (bench/wan.sh --flow-cap): its outgoing connections
# take their source ports from 40000-40255, and its device's qdisc is htb
# with one class of $4 per port, under one of $3 (u32 filters on the
# source port), queues of 100 ms.  Its download stays as e2e_ns_limit made
# it; call this instead of e2e_ns_limit's upload half (e2e_ns_setup_capped).
e2e_ns_flow_cap() {
    local tag=$1 i=$2 rate=$3 cap=$4 ns=${1}n$2 k lim batch
    ip netns exec "$ns" sysctl -q -w net.ipv4.ip_local_port_range="40000 40255" \
        net.ipv4.tcp_tw_reuse=1 || return 1
    lim=$((cap * 1000000 / 8 / 10 / 1500 + 16))
    batch=$(mktemp) || return 1
    {
        echo "qdisc add dev p$i root handle 1: htb default 2"
        echo "class add dev p$i parent 1: classid 1:1 htb rate ${rate}mbit ceil ${rate}mbit"
        echo "class add dev p$i parent 1:1 classid 1:2 htb rate ${rate}mbit ceil ${rate}mbit"
        for k in $(seq 0 255); do
            printf 'class add dev p%s parent 1:1 classid 1:%x htb rate %smbit ceil %smbit\n' \
                "$i" $((0x100 + k)) "$cap" "$cap"
            printf 'qdisc add dev p%s parent 1:%x pfifo limit %d\n' "$i" $((0x100 + k)) "$lim"
            printf 'filter add dev p%s parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff match ip sport %d 0xffff flowid 1:%x\n' \
                "$i" $((40000 + k)) $((0x100 + k))
        done
    } >"$batch"
    tc -n "$ns" -batch "$batch" 2>&1 | grep -v quantum >&2
    rm -f "$batch"
    tc -n "$ns" qdisc show dev "p$i" | grep -q htb
}

# As e2e_ns_setup with one rate $4 for every peer, each peer's outgoing
# connections capped at $5 Mbit/s each (e2e_ns_flow_cap); download at $4.
e2e_ns_setup_capped() {
    local tag=$1 n=$2 net=$3 rate=$4 cap=$5 i burst queue
    [ "$(id -u)" -eq 0 ] && command -v tc >/dev/null || return 1
    E2E_NS_TAG=$tag E2E_NS_N=$n
    trap 'kill -9 "${pids[@]}" 2>/dev/null; netns_del "$E2E_NS_TAG" "$E2E_NS_N"' EXIT
    netns_add "$tag" "$n" "$net" || return 1
    burst=$((rate * 1000000 / 8 / 250)) queue=$((rate * 1000000 / 8 / 10))
    [ "$burst" -ge 3000 ] || burst=3000
    for i in $(seq 0 $((n - 1))); do
        e2e_ns_flow_cap "$tag" "$i" "$rate" "$cap" || return 1
        tc qdisc add dev "${tag}h$i" root tbf rate "${rate}mbit" burst "$burst" limit "$queue" ||
            return 1
    done
}

# e2e_ns_start NET I [VAR=VALUE...]: trainer I of a network-namespace
# test in namespace ${tag}nI, listening at NET.(I+1):4000, with the
# caller's env_common and args, the extra variables given, and (I > 0)
# the join line `line`; killed after $limit s; logs in $E2E_LOG/pI.out
# and .err; its pid appended to `pids`.
e2e_ns_start() {
    local net=$1 i=$2 extra=()
    shift 2
    [ "$i" -gt 0 ] && extra+=(COLLAB_INITIAL_PEERS="$line")
    ip netns exec "${tag}n$i" env "${env_common[@]}" "$@" "${extra[@]}" \
        COLLAB_LISTEN="/ip4/$net.$((i + 1))/tcp/4000" LD_PRELOAD="$preload" \
        timeout -s KILL "$limit" "$E2E_TRAINER" "${args[@]}" \
        >"$E2E_LOG/p$i.out" 2>"$E2E_LOG/p$i.err" &
    pids+=($!)
}

# The trainers of a network-namespace test: starts peer 0 with the
# caller's function `peer I`, sets `line` to its join line (the others'
# COLLAB_INITIAL_PEERS), starts peers 1 .. $1-1, waits for every pid in
# `pids`, gathers the logs into $E2E_LOG/all.log and checks that $1
# trainers finished with bitwise-equal parameters.
e2e_ns_trainers() {
    local np=$1 i p st=0
    peer 0
    wait_for "$E2E_LOG/p0.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "the founder printed no join line"
    line=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/p0.err" | head -n 1)
    for i in $(seq 1 $((np - 1))); do peer "$i"; done
    for p in "${pids[@]}"; do wait "$p" || st=1; done
    [ "$st" -eq 0 ] || fail "a trainer failed"
    cat "$E2E_LOG"/p*.out "$E2E_LOG"/p*.err >"$E2E_LOG/all.log"
    [ "$(count_done "$E2E_LOG/all.log")" -eq "$np" ] || fail "expected $np trainers to finish"
    expect_agreement "$E2E_LOG/all.log" "$np"
}

# The network of a slow-link test: $2 peers in namespaces of tag $1 at
# $3.(i+1) on one bridge, peer i's link limited (e2e_ns_limit) to the
# i-th rate of the rest of the arguments (the last one for the peers
# past them).  Removed when the script exits, after every pid in the
# caller's array `pids` is killed.  Returns 1 without root, tc or ip
# netns.
e2e_ns_setup() {
    local tag=$1 n=$2 net=$3 i rate
    shift 3
    [ "$(id -u)" -eq 0 ] && command -v tc >/dev/null || return 1
    E2E_NS_TAG=$tag E2E_NS_N=$n
    trap 'kill -9 "${pids[@]}" 2>/dev/null; netns_del "$E2E_NS_TAG" "$E2E_NS_N"' EXIT
    netns_add "$tag" "$n" "$net" || return 1
    for i in $(seq 0 $((n - 1))); do
        rate=${1:-$rate}
        [ $# -gt 0 ] && shift
        e2e_ns_limit "$tag" "$i" "$rate" || return 1
    done
}
