#!/usr/bin/env bash
# attack_soak.sh - 6 honest peers and 1 hostile member train together for
# about 2 minutes with COLLAB_AGGREGATION=centered_clip (docs/security-bounds.md
# §7, docs/testing.md).
#
#   bench/attack_soak.sh [--build DIR] [--steps N] [--sleep-ms MS] [--out DIR]
#                        [--no-chaos] [--chaos SPEC ...]
#
# First a fault-free run: the example trainer on 7 honest peers gives the
# reference loss.  Then the same training with rank 6 hostile: its trainer
# runs with bench/soak_hostile.c preloaded, which forges RESULTs for parts
# it does not own, sends NaN contributions, weights of 1e9 and once 1e308,
# forged ADMITs and VIEWs, and floods FETCH (64 per heartbeat).  Chaos on
# top, unless --no-chaos: honest rank 2 is stopped (SIGSTOP) for 6 s at
# 25 s, honest rank 4 is killed (SIGKILL) at 45 s and a new peer joins at
# 50 s (collab-run --chaos; --chaos SPEC replaces these).  Checked:
#
#   agree   the 6 honest peers finish with one checksum (bitwise equal;
#           with chaos, the joiner in place of the killed rank 4)
#   loss    each honest final loss within 5 % of the fault-free loss
#   rss     each honest peer's RSS grows by less than 64 MiB (first sample
#           5 s after its start against the largest later one)
#   named   the honest peers' logs name the attack: the forged RESULT, the
#           non-finite contributions, the forged ADMIT and VIEW, the
#           refused weight
#
# Exit status 0 when every check passes.  Logs stay in OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" steps=3000 sleep_ms=30 out='' chaos=() default_chaos=1
while [ $# -gt 0 ]; do
    case "$1" in
    --no-chaos) default_chaos=0; shift ;;
    --chaos) chaos+=(--chaos "$2"); default_chaos=0; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --sleep-ms) sleep_ms=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "attack_soak.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ "$default_chaos" = 1 ] && chaos=(--chaos 'stop:2@25s+6' --chaos 'kill:4@45s' --chaos 'start@50s')
build=$(cd "$build" && pwd)
crun="$build/bin/collab-run" trainer="$build/examples/trainer"
shim="$build/bench/libsoak_hostile.so"
for f in "$crun" "$trainer" "$shim"; do
    [ -e "$f" ] || { echo "attack_soak.sh: missing $f (build first)" >&2; exit 1; }
done
out=${out:-$(mktemp -d /tmp/collab-attack-soak.XXXXXX)}
mkdir -p "$out" || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
np=7 hostile=6
targs=(--steps "$steps" --sleep-ms "$sleep_ms" --log-every 500)
limit=$((steps * (sleep_ms + 40) / 1000 + 120))
export COLLAB_AGGREGATION=centered_clip
# The peers stand for peers on other machines: collective data goes over
# the network, where the hostile member's shim sees all of it (between
# peers of one host and user, shared memory is one trust boundary:
# docs/security.md §2).
export COLLAB_SHM=0
# The weight of 1e308 (which gets the hostile member banned) goes out at
# about 60 % of the run.
export SOAK_ARM=5 SOAK_HUGE=$((steps * sleep_ms * 6 / 10000))

# The program each peer runs: the trainer, preloading the shim at rank 6.
cat > "$out/peer.sh" <<EOF
#!/bin/sh
if [ "\${SOAK_HOSTILE:-0}" = 1 ] && [ "\$COLLAB_RANK" = $hostile ]; then
    LD_PRELOAD="$shim\${LD_PRELOAD:+:\$LD_PRELOAD}"
    export LD_PRELOAD
fi
exec "$trainer" "\$@"
EOF
chmod +x "$out/peer.sh"

done_lines() { grep -h 'trainer: rank [0-9]* pid [0-9]* done steps' "$1" || true; }
honest_done() { done_lines "$1" | grep -v "trainer: rank $hostile "; }

# Runs collab-run (name, SOAK_HOSTILE, faults...) in the background,
# sampling the RSS of its peers every second into $out/$name.rss
# ("seconds rank kib" lines).
run() {
    local name=$1 h=$2
    shift 2
    SOAK_HOSTILE=$h SOAK_OUT="$out" timeout -k 5 $((limit + 30)) "$crun" -n $np --abi mpich \
        --timeout "$limit" --tag-output "$@" -- "$out/peer.sh" "${targs[@]}" \
        >"$out/$name.out" 2>"$out/$name.err" &
    local cr=$!
    : >"$out/$name.rss"
    while kill -0 "$cr" 2>/dev/null; do
        for p in $(for c in $(pgrep -P "$cr" 2>/dev/null); do pgrep -P "$c"; done); do
            local r kib
            r=$({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | sed -n 's/^COLLAB_RANK=//p')
            kib=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$p/status" 2>/dev/null)
            [ -n "$r" ] && [ -n "$kib" ] && echo "$SECONDS $r $kib" >>"$out/$name.rss"
        done
        sleep 1
    done
    wait "$cr"
}

echo "attack_soak.sh: logs in $out; $np peers, trainer ${targs[*]}, centered_clip," \
    "faults: ${chaos[*]:-none}"
t0=$SECONDS
run reference 0
st=$?
ref=$(honest_done "$out/reference.out" | sed -n 's/.* final loss \([^ ]*\) .*/\1/p' | head -n 1)
[ "$st" -eq 0 ] && [ -n "$ref" ] || { echo "attack_soak.sh: the fault-free run failed ($st)" >&2; exit 1; }
echo "attack_soak.sh: fault-free: loss $ref in $((SECONDS - t0)) s"
t0=$SECONDS
run attack 1 "${chaos[@]}"
st=$?
secs=$((SECONDS - t0))
bad=0
n=$(honest_done "$out/attack.out" | wc -l)
sums=$(honest_done "$out/attack.out" | sed -n 's/.* checksum \([0-9a-f]*\).*/\1/p' | sort -u)
echo "attack_soak.sh: attack run: status $st, $secs s, $n honest peers done, checksums: $(echo $sums)"
[ "$n" -eq 6 ] || { echo "FAIL: $n of 6 honest peers finished"; bad=1; }
[ "$(echo "$sums" | grep -c .)" -eq 1 ] || { echo "FAIL agree: honest peers disagree"; bad=1; }
for l in $(honest_done "$out/attack.out" | sed -n 's/.* final loss \([^ ]*\) .*/\1/p'); do
    if "$py" -c "import sys; l, r = float('$l'), float('$ref'); sys.exit(0 if l == l and abs(l - r) <= 0.05 * r else 1)"; then
        :
    else
        echo "FAIL loss: $l not within 5 % of $ref"; bad=1
    fi
done
echo "attack_soak.sh: losses $(honest_done "$out/attack.out" | sed -n 's/.* final loss \([^ ]*\) .*/\1/p' | sort -u | tr '\n' ' ')(fault-free $ref)"
for r in 0 1 2 3 4 5; do
    read -r first last max <<<"$(awk -v r=$r '$2 == r {if (!s) {s = $1}; if ($1 - s >= 5 && !f) f = $3; if (f && $3 > m) m = $3} END {print f + 0, m + 0, m - f}' "$out/attack.rss")"
    grow=$((max / 1024))
    echo "attack_soak.sh: rank $r RSS $((first / 1024)) MiB at 5 s, at most $((last / 1024)) MiB later (+$grow MiB)"
    [ "$first" -gt 0 ] && [ "$max" -lt $((64 * 1024)) ] || { echo "FAIL rss: rank $r"; bad=1; }
done
honest_log() { grep -E "^\[[0-5]\] " "$out/attack.err"; }
for what in "RESULT:refused a RESULT\|part it does not produce\|does not produce" \
    "NaN:non-finite values" "ADMIT:type ADMIT\|ELASTIC ADMIT\|ADMIT from" \
    "VIEW:type VIEW" "weight:weight\|banned" "FETCH:FETCH"; do
    tag=${what%%:*} pat=${what#*:}
    c=$(honest_log | grep -ci "$pat")
    echo "attack_soak.sh: honest log lines naming the $tag forgery: $c"
    [ "$c" -gt 0 ] || { [ "$tag" = FETCH ] || bad=1; }
done
echo "attack_soak.sh: the hostile member sent: $(tr '\n' ' ' <"$out/hostile.counts" 2>/dev/null)"
[ "$bad" -eq 0 ] && echo "attack_soak.sh: PASS" || echo "attack_soak.sh: FAIL"
exit $bad
