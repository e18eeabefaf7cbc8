# soak_verdict.sh - the verdict of one round of bench/soak.sh (sourced,
# not run), apart so that tests/tools/soak_verdict_test.sh can judge
# made-up round logs with it.

# The documented end of a peer that was stopped and came back to a swarm
# that had gone on without it, none of whose members took it back
# (docs/security.md §4): it exits with MPIX_ERR_PROC_FAILED (101).
SOAK_PAUSE_ERROR='error: after the pause the swarm went on without this peer and none of its members took it back'
SOAK_PAUSE_STATUS=101

# soak_peer_ends ERR: one line per peer collab-run started, from its log:
# "TAG|END|HOW", TAG the peer's output tag ([2], [+1]), END when it ended
# in seconds from the start of the run (a peer started by a fault counts
# from its start), HOW collab-run's words (exited with status 0, killed
# by signal 9 (KILL) [chaos], ...).
soak_peer_ends() {
    awk '
    /^collab-run: chaos: started .* \(pid [0-9]+,.*\) at [0-9.]+s$/ {
        pid = $0; sub(/.*\(pid /, "", pid); sub(/,.*/, "", pid)
        at = $NF; sub(/s$/, "", at); start[pid] = at
    }
    /^collab-run: summary: (rank [0-9]+|peer \+[0-9]+) \(pid [0-9]+\) .* after [0-9.]+s$/ {
        pid = $0; sub(/.*\(pid /, "", pid); sub(/\).*/, "", pid)
        tag = "[" $4 "]"
        how = $0; sub(/^[^)]*\) /, "", how); sub(/ after [0-9.]+s$/, "", how)
        after = $NF; sub(/s$/, "", after)
        ends[++n] = sprintf("%s|%.2f|%s", tag, (pid in start ? start[pid] : 0) + after, how)
    }
    END { for (i = 1; i <= n; i++) print ends[i] }' "$1"
}

# soak_bad_peers ERR: one line "KIND TAG" per peer that ended badly (a
# status other than 0, not killed on purpose), KIND one of
#   standby      a standby that gave up after the swarm it waited for
#                ended (a peer started into a full swarm, or one whose rank
#                went to a newcomer while it was stopped, gets no rank and
#                says so), or a joiner that got a rank but whose swarm
#                ended before its group took it in (it never held the
#                swarm's state, so it cannot go on alone, and says so)
#   after-end    stopped with the pause error (SOAK_PAUSE_ERROR, status
#                101) after every other peer had ended: nobody was left to
#                take it back
#   pause-stop   stopped with the pause error while another peer still ran
#   crash        anything else
# "Every other peer" leaves out the standbys and the peers that stopped
# with the pause error themselves: neither was the swarm.
soak_bad_peers() {
    local err=$1 tag end how kind swarm_end=0
    local -a bad=()
    while IFS='|' read -r tag end how; do
        if [ "$how" = 'exited with status 0' ] || [[ $how == *'[chaos]' ]]; then
            kind=fine
        elif grep -F "$tag [collab] " "$err" |
            grep -qE "error: (the swarm this peer waited for as a standby|every other member of the swarm left or failed before this peer was admitted)"; then
            kind=standby
        elif [ "$how" = "exited with status $SOAK_PAUSE_STATUS" ] &&
            grep -F "$tag [collab] " "$err" | grep -qF "$SOAK_PAUSE_ERROR"; then
            kind=pause
        else
            kind=crash
        fi
        case $kind in
        fine) awk -v a="$end" -v b="$swarm_end" 'BEGIN { exit !(a > b) }' && swarm_end=$end ;;
        *) bad+=("$kind|$tag|$end") ;;
        esac
    done < <(soak_peer_ends "$err")
    local b
    for b in "${bad[@]}"; do
        IFS='|' read -r kind tag end <<<"$b"
        if [ "$kind" = pause ]; then
            if awk -v a="$swarm_end" -v b="$end" 'BEGIN { exit !(a < b) }'; then
                kind=after-end
            else
                kind=pause-stop
            fi
        fi
        echo "$kind $tag"
    done
}

# soak_verdict STATUS DONE SUMS KILLED STARTED NP ERR: the verdict of a
# round from collab-run's exit status, the number of peers that finished,
# the number of distinct checksums among them, the faults that killed or
# started a peer, the number of peers and collab-run's log; the first
# that holds of
#   hang          collab-run had to kill the run at its deadline
#   crash         a peer that was not killed on purpose ended badly (not a
#                 standby, not the pause error below)
#   pause-stop    a peer stopped with the pause error while the others
#                 still ran
#   disagreement  peers that finished hold different parameters
#   nobody        no peer finished although some were never killed
#   after-end     a peer stopped with the pause error after the swarm had
#                 ended (documented; not a failure)
#   ok
# A hang, crash or pause-stop whose finished peers also disagree is
# "hang+disagreement" (and so on): two swarms that trained apart must not
# hide behind the first verdict.
soak_verdict() {
    local st=$1 n=$2 ns=$3 killed=$4 started=$5 np=$6 err=$7 kinds='' first=''
    [ "$st" -ne 0 ] && kinds=$(soak_bad_peers "$err" | cut -d' ' -f1 | sort -u | tr '\n' ' ')
    if [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
        first=hang
    elif [ "$st" -ne 0 ] && { [[ " $kinds" == *' crash '* ]] || [ -z "$kinds" ]; }; then
        first=crash
    elif [[ " $kinds" == *' pause-stop '* ]]; then
        first=pause-stop
    fi
    if [ -n "$first" ]; then
        if [ "$ns" -gt 1 ]; then echo "$first+disagreement"; else echo "$first"; fi
    elif [ "$ns" -gt 1 ]; then
        echo disagreement
    elif [ "$n" -eq 0 ] && [ "$killed" -lt $((np + started)) ]; then
        echo nobody
    elif [[ " $kinds" == *' after-end '* ]]; then
        echo after-end
    else
        echo ok
    fi
}
