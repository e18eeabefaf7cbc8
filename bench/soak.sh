#!/usr/bin/env bash
# soak.sh - long chaos soak of the elastic swarm.
#
#   bench/soak.sh [--build DIR] [--duration SECONDS] [--seed N] [--np N]
#                 [--steps N] [--sleep-ms MS] [--faults MAX] [--out DIR]
#                 [--mode preload|replace] [--schedule "FAULTS"]
#
# First a fault-free run of examples/trainer on N peers gives the reference
# loss and parameters.  Then, until DURATION has passed, round after round
# runs the same training under a random fault schedule (seeded: the same
# seed gives the same schedules): SIGKILL of a peer, SIGSTOP for a few
# seconds, and new peers joining.  Each round is judged:
#
#   hang          collab-run had to kill the run at its deadline
#   crash         a peer that was not killed on purpose ended badly (a
#                 peer started into a full swarm that gives up as a
#                 standby once the swarm ends is not a crash, nor is the
#                 pause error below)
#   pause-stop    a stopped peer ended with the documented pause error
#                 ("after the pause the swarm went on without this peer
#                 and none of its members took it back", status 101,
#                 MPIX_ERR_PROC_FAILED) while other peers still ran
#   disagreement  peers that finished hold different parameters (also
#                 after a hang, crash or pause-stop: pause-stop+disagreement)
#   nobody        no peer finished although some were never killed
#   after-end     the same pause error, but after every other peer had
#                 ended (collab-run's end times): nobody was left to take
#                 it back; documented, counted apart, not a failure
#   loss          final loss / fault-free loss (reported, not judged)
#
# --schedule replays one fault schedule, written as the faults column
# prints it ("stop:0@12s+7 kill:2@3s start@12s"), in every round instead
# of random ones: how often a round that went wrong goes wrong again.
#
# The verdict is bench/soak_verdict.sh's (tests/tools/soak_verdict_test.sh).
# The logs of every round stay in OUT (default: a new folder in /tmp).
# Exit status 0 when no round had a hang, crash, pause-stop, disagreement
# or nobody.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" duration=1800 seed=1 np=4 steps=300 sleep_ms=60 maxfaults=4 out='' mode=preload schedule=''
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --sleep-ms) sleep_ms=$2; shift 2 ;;
    --faults) maxfaults=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --schedule) schedule=$2; shift 2 ;;
    -h | --help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
for v in duration seed np steps sleep_ms maxfaults; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "soak.sh: --${v//_/-} needs a whole number" >&2; exit 2; }
done
[ "$np" -ge 2 ] || { echo "soak.sh: --np must be at least 2" >&2; exit 2; }
for fault in $schedule; do
    [[ $fault =~ ^(kill:[0-9]+@[0-9]+s|stop:[0-9]+@[0-9]+s\+[0-9]+|start@[0-9]+s)$ ]] ||
        { echo "soak.sh: --schedule: '$fault' is not kill:R@Ts, stop:R@Ts+D or start@Ts" >&2; exit 2; }
done
crun="$build/bin/collab-run"
trainer="$build/examples/trainer"
for f in "$crun" "$trainer"; do
    [ -x "$f" ] || { echo "soak.sh: missing $f (build first)" >&2; exit 1; }
done
out=${out:-$(mktemp -d /tmp/collab-soak.XXXXXX)}
mkdir -p "$out" || exit 1
py=/usr/bin/python3
[ -x "$py" ] || py=python3

targs=(--steps "$steps" --sleep-ms "$sleep_ms" --log-every 50)
# A fault-free run lasts about steps * sleep: faults land in its first 80%.
span=$((steps * sleep_ms / 1000))
[ "$span" -ge 5 ] || { echo "soak.sh: the run is too short for faults (raise --steps or --sleep-ms)" >&2; exit 2; }
limit=$((span * 4 + 120))

done_lines() { grep -h 'trainer: rank [0-9]* pid [0-9]* done steps' "$1" || true; }
sums() { done_lines "$1" | sed -n 's/.* checksum \([0-9a-f]*\).*/\1/p' | sort -u; }
losses() { done_lines "$1" | sed -n 's/.* final loss \([^ ]*\) .*/\1/p'; }
. "$here/soak_verdict.sh" # soak_verdict

echo "soak.sh: logs in $out; seed $seed; $np peers; trainer ${targs[*]}"
timeout -k 5 $((limit + 30)) "$crun" -n "$np" --mode "$mode" --timeout "$limit" --tag-output -- \
    "$trainer" "${targs[@]}" >"$out/reference.out" 2>"$out/reference.err"
st=$?
ref_loss=$(losses "$out/reference.out" | head -n 1)
if [ "$st" -ne 0 ] || [ -z "$ref_loss" ] || [ "$(sums "$out/reference.out" | wc -l)" -ne 1 ]; then
    echo "soak.sh: the fault-free run failed (status $st); see $out/reference.*" >&2
    exit 1
fi
echo "soak.sh: fault-free: loss $ref_loss, checksum $(sums "$out/reference.out")"

RANDOM=$seed
t_end=$((SECONDS + duration))
rounds=0 hangs=0 crashes=0 pausestops=0 disagree=0 nobody=0 afterend=0
printf '%5s %-60s %6s %5s %-13s %s\n' round faults status done verdict loss/ref
while [ "$SECONDS" -lt "$t_end" ]; do
    rounds=$((rounds + 1))
    nf=$((1 + RANDOM % maxfaults))
    chaos=() desc='' killed=0 started=0
    [ -n "$schedule" ] && nf=0
    for fault in $schedule; do
        chaos+=(--chaos "$fault")
        desc+="$fault "
        [[ $fault == kill:* ]] && killed=$((killed + 1))
        [[ $fault == start@* ]] && started=$((started + 1))
    done
    for ((f = 0; f < nf; f++)); do
        at=$((1 + RANDOM % (span * 8 / 10)))
        case $((RANDOM % 3)) in
        0) r=$((RANDOM % np)); chaos+=(--chaos "kill:$r@${at}s"); desc+="kill:$r@${at}s "; killed=$((killed + 1)) ;;
        1) r=$((RANDOM % np)); d=$((2 + RANDOM % 8)); chaos+=(--chaos "stop:$r@${at}s+$d"); desc+="stop:$r@${at}s+$d " ;;
        2) chaos+=(--chaos "start@${at}s"); desc+="start@${at}s "; started=$((started + 1)) ;;
        esac
    done
    log="$out/round$rounds"
    timeout -k 5 $((limit + 30)) "$crun" -n "$np" --mode "$mode" --timeout "$limit" --tag-output \
        "${chaos[@]}" -- "$trainer" "${targs[@]}" >"$log.out" 2>"$log.err"
    st=$?
    n=$(done_lines "$log.out" | wc -l)
    ns=$(sums "$log.out" | wc -l)
    verdict=$(soak_verdict "$st" "$n" "$ns" "$killed" "$started" "$np" "$log.err")
    case $verdict in
    hang*) hangs=$((hangs + 1)) ;;
    crash*) crashes=$((crashes + 1)) ;;
    pause-stop*) pausestops=$((pausestops + 1)) ;;
    after-end) afterend=$((afterend + 1)) ;;
    nobody) nobody=$((nobody + 1)) ;;
    esac
    [[ $verdict == *disagreement ]] && disagree=$((disagree + 1))
    ratio=$(for l in $(losses "$log.out"); do echo "$l"; done | "$py" -c "
import sys
v = [float(x) for x in sys.stdin.read().split()]
print('%.3f' % (max(v) / $ref_loss) if v else '-')")
    printf '%5d %-60s %6d %5d %-13s %s\n' "$rounds" "$desc" "$st" "$n" "$verdict" "$ratio"
done
echo "soak.sh: $rounds rounds: $hangs hangs, $crashes crashes, $pausestops stopped by the pause" \
    "error while the swarm ran, $disagree disagreements, $nobody without survivors;" \
    "$afterend stopped by the pause error after the swarm had ended (documented, not" \
    "failures) (logs in $out)"
[ $((hangs + crashes + pausestops + disagree + nobody)) -eq 0 ]
