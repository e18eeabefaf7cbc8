#!/usr/bin/env bash
# check_follow.sh COLLAB_RUN NCCL_FACE_TEST MODE - a DDP-like start-up
# through the NCCL face (docs/nccl.md §5) on 3 peers: rank 2 is SIGKILLed
# at rank 0's step 60 and a joiner takes rank 2 at step 120.  Every peer
# that finishes prints "PARAMS rank R start S hash H".
#   follow:          3 peers finish, the joiner from a step > 0, one hash
#   follow-control:  the copies are made with memcpy, which the face cannot
#                    see: the joiner must end with other parameters (this
#                    shows that the check above can fail)
set -u
run=$1 prog=$2 mode=$3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
COLLAB_TIMEOUT=2 "$run" -n 3 --abi mpich --timeout 100 --tag-output \
    --chaos 'kill:2@line:0:^step 60 ' --chaos 'start:2@line:0:^step 120 ' -- \
    "$prog" "$mode" > "$log" 2>&1
rc=$?
grep -E 'PARAMS|chaos:|FAIL|starts at|differ between' "$log"
n=$(grep -c 'PARAMS rank' "$log")
distinct=$(grep -o 'PARAMS rank.*' "$log" | awk '{print $NF}' | sort -u | wc -l)
joiner=$(grep -o 'PARAMS rank.*' "$log" | awk '$5 > 0' | wc -l)
echo "collab-run status $rc; $n peers finished, $distinct distinct hash(es), $joiner joiner(s)"
if grep -q 'FAIL' "$log" || [ "$n" -ne 3 ] || [ "$joiner" -ne 1 ]; then
    echo "FAIL: expected 3 finishing peers, one of them a joiner"
    tail -40 "$log"
    exit 1
fi
if [ "$mode" = follow ] && [ "$distinct" -ne 1 ]; then
    echo "FAIL: the parameters differ between peers (the joiner was not served the swarm's)"
    exit 1
fi
if [ "$mode" = follow-control ] && [ "$distinct" -eq 1 ]; then
    echo "FAIL: the control ended with equal parameters: the check cannot tell"
    exit 1
fi
echo "ok: $mode"
