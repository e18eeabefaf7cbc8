# collab-run: stop faults (SIGSTOP, then SIGCONT after the given time),
# checked on the gaps in the peers' own timestamps.
. "$(dirname "$0")/lib.sh"

R() { cr --abi mpich --libdir "$FAKE" --tag-output "$@"; }
# max_gap TAG: the longest pause between consecutive ticks of a peer.
max_gap() {
    sed -n "s/^\[$1\] tick [0-9]* t=//p" "$TMP/out" |
        awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { printf "%.3f", m }'
}

R -n 2 --chaos stop:0@0.5s+1.5 "$PROBE" ticks 40 50
expect_rc 0
g0=$(max_gap 0)
g1=$(max_gap 1)
between "$g0" 1.35 2.6 || { fail "rank 0 paused ${g0}s, expected about 1.5s"; show; }
between "$g1" 0 0.6 || { fail "rank 1 paused ${g1}s, but it was not stopped"; show; }
[ "$(grep -c '^\[0\] tick ' "$TMP/out")" = 40 ] || { fail "rank 0 did not finish after SIGCONT"; show; }
expect_err '^collab-run: chaos: SIGSTOP rank 0 \(pid [0-9]+\) at 0\.[5-9][0-9]s for 1\.50s$'
expect_err '^collab-run: chaos: SIGCONT rank 0 \(pid [0-9]+\) at [0-9]+\.[0-9]{2}s$'
stop=$(sed -n 's/^collab-run: chaos: SIGSTOP rank 0 .* at \([0-9.]*\)s for.*/\1/p' "$TMP/err")
cont=$(sed -n 's/^collab-run: chaos: SIGCONT rank 0 .* at \([0-9.]*\)s$/\1/p' "$TMP/err")
between "$(awk -v a="$stop" -v b="$cont" 'BEGIN { print b - a }')" 1.49 2.0 ||
    fail "SIGCONT ${cont}s after SIGSTOP ${stop}s"

# Triggered by a line; the regex holds a space and the duration follows
# the last '+'.
R -n 2 --chaos 'stop:1@line:1:^tick 5 +1' "$PROBE" ticks 10 50
expect_rc 0
gap=$(sed -n 's/^\[1\] tick \([56]\) t=//p' "$TMP/out" | awk 'NR == 1 { a = $1 } NR == 2 { printf "%.3f", $1 - a }')
between "${gap:-0}" 0.9 2.0 || { fail "gap after rank 1's tick 5 is ${gap}s, expected about 1s"; show; }

# A stopped peer still dies of a kill fault, and of --timeout.
R -n 1 --chaos stop:0@0.2s+30 --chaos kill:0@0.6s "$PROBE" ticks 100 50
expect_rc 0
expect_err 'killed by signal 9 \(KILL\) \[chaos\]$'
between "$ELAPSED" 0 5 || fail "took ${ELAPSED}s"

finish
