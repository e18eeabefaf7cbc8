# soak_verdict.sh - the verdict of one round of bench/soak.sh (sourced,
# not run), apart so that tests/tools/soak_verdict_test.sh can judge
# made-up round logs with it.

# True when every peer that ended badly (not killed on purpose) was a
# standby that gave up after the swarm it waited for ended: a peer started
# into a full swarm, or one whose rank went to a newcomer while it was
# stopped, gets no rank and says so.
only_standbys_gave_up() {
    local err=$1 line who tag
    while IFS= read -r line; do
        who=$(sed -n 's/^collab-run: summary: \(rank [0-9]*\|peer +[0-9]*\) .*/\1/p' <<<"$line")
        case $who in
        rank*) tag="[${who#rank }]" ;;
        peer*) tag="[${who#peer }]" ;;
        *) return 1 ;;
        esac
        grep -F "$tag [collab] " "$err" |
            grep -q "error: the swarm this peer waited for as a standby" || return 1
    done < <(grep '^collab-run: summary:' "$err" | grep -v 'exited with status 0' | grep -v '\[chaos\]')
    return 0
}

# soak_verdict STATUS DONE SUMS KILLED STARTED NP ERR: the verdict of a
# round (ok, hang, crash, disagreement or nobody) from collab-run's exit
# status, the number of peers that finished, the number of distinct
# checksums among them, the faults that killed or started a peer, the
# number of peers and collab-run's log.
soak_verdict() {
    local st=$1 n=$2 ns=$3 killed=$4 started=$5 np=$6 err=$7
    if [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
        echo hang
    elif [ "$st" -ne 0 ] && ! only_standbys_gave_up "$err"; then
        echo crash
    elif [ "$ns" -gt 1 ]; then
        echo disagreement
    elif [ "$n" -eq 0 ] && [ "$killed" -lt $((np + started)) ]; then
        echo nobody
    else
        echo ok
    fi
}
