#!/usr/bin/env bash
# check_follow.sh COLLAB_RUN NCCL_FACE_TEST MODE - a DDP-like start-up
# through the NCCL face (docs/nccl.md §5) on 3 peers: rank 2 is SIGKILLed
# at rank 0's step 60 and a joiner takes rank 2 at step 120.  Every peer
# that finishes prints "PARAMS rank R start S hash H".
#   follow:          3 peers finish, the joiner from a step > 0, one hash
#   follow-control:  the copies are made with memcpy, which the face cannot
#                    see: the joiner must end with other parameters (this
#                    shows that the check above can fail)
#   standby:         rank 1 leaves at step 20; a second process for rank 2
#                    starts at rank 0's step 30, while the first runs:
#                    ncclCommInitRank requires the rank, so it must wait as a
#                    standby (the core's log says so) and not take the free
#                    rank 1; the first SIGKILLs itself at step 60, and the
#                    second takes rank 2 after that step, served the swarm's
#                    parameters (one hash; 2 peers finish, ranks 0 and 2)
set -u
run=$1 prog=$2 mode=$3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ "$mode" = standby ]; then
    chaos=(--chaos 'start:2@line:0:^step 30 ')
else
    chaos=(--chaos 'kill:2@line:0:^step 60 ' --chaos 'start:2@line:0:^step 120 ')
fi
COLLAB_TIMEOUT=2 "$run" -n 3 --abi mpich --timeout 100 --tag-output "${chaos[@]}" -- \
    "$prog" "$mode" > "$log" 2>&1
rc=$?
grep -E 'PARAMS|chaos:|FAIL|starts at|differ between' "$log"
n=$(grep -c 'PARAMS rank' "$log")
distinct=$(grep -o 'PARAMS rank.*' "$log" | awk '{print $NF}' | sort -u | wc -l)
joiner=$(grep -o 'PARAMS rank.*' "$log" | awk '$5 > 0' | wc -l)
echo "collab-run status $rc; $n peers finished, $distinct distinct hash(es), $joiner joiner(s)"
want=3
[ "$mode" = standby ] && want=2
if grep -q 'FAIL' "$log" || [ "$n" -ne "$want" ] || [ "$joiner" -ne 1 ]; then
    echo "FAIL: expected $want finishing peers, one of them a joiner"
    tail -40 "$log"
    exit 1
fi
if [ "$mode" = standby ]; then
    grep -q 'waiting as a standby' "$log" || { echo "FAIL: the second rank 2 did not wait as a standby"; exit 1; }
    grep -q 'SIGKILLs itself at step 60' "$log" || { echo "FAIL: the first rank 2 did not die at step 60"; exit 1; }
    grep -q 'rank 1 leaves at step 20' "$log" || { echo "FAIL: rank 1 did not leave at step 20"; exit 1; }
    if grep -q 'PARAMS rank 1 ' "$log"; then
        echo "FAIL: a peer took the free rank 1 (the second process did not require rank 2)"
        exit 1
    fi
    start=$(grep -o 'PARAMS rank 2 start [0-9]*' "$log" | awk '{print $NF}')
    if [ -z "$start" ] || [ "$start" -le 60 ]; then
        echo "FAIL: the second rank 2 started at step '${start}', not after the first died (step 60)"
        exit 1
    fi
fi
if [ "$mode" != follow-control ] && [ "$distinct" -ne 1 ]; then
    echo "FAIL: the parameters differ between peers (the joiner was not served the swarm's)"
    exit 1
fi
if [ "$mode" = follow-control ] && [ "$distinct" -eq 1 ]; then
    echo "FAIL: the control ended with equal parameters: the check cannot tell"
    exit 1
fi
echo "ok: $mode"
