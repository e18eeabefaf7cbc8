# collab-run: kill faults, by time and by a line of output.
. "$(dirname "$0")/lib.sh"

R() { cr --abi mpich --libdir "$FAKE" --tag-output "$@"; }
ticks_of() { grep -c "^\[$1\] tick " "$TMP/out"; }
last_tick() { sed -n "s/^\[$1\] tick \([0-9]*\) .*/\1/p" "$TMP/out" | tail -1; }

# By time: rank 1 dies at 0.6 s; the others finish; killed on purpose
# does not count, so the run succeeds.
R -n 3 --chaos kill:1@0.6s "$PROBE" ticks 15 100
expect_rc 0
expect_err '^collab-run: chaos: SIGKILL rank 1 \(pid [0-9]+\) at [0-9]+\.[0-9]{2}s$'
at=$(sed -n 's/^collab-run: chaos: SIGKILL rank 1 .* at \([0-9.]*\)s$/\1/p' "$TMP/err")
between "${at:-0}" 0.6 1.5 || fail "kill at ${at}s, expected about 0.6s"
expect_err '^collab-run: rank 1 \(pid [0-9]+\) killed by signal 9 \(KILL\) \[chaos\]$'
expect_err '^collab-run: summary: rank 1 \(pid [0-9]+\) killed by signal 9 \(KILL\) \[chaos\] after'
[ "$(ticks_of 0)" = 15 ] && [ "$(ticks_of 2)" = 15 ] || { fail "survivors did not finish"; show; }
n1=$(ticks_of 1)
[ "$n1" -ge 4 ] && [ "$n1" -le 12 ] || { fail "rank 1 printed $n1 ticks"; show; }
pid1=$(sed -n 's/^collab-run: rank 1 is pid \([0-9]*\).*/\1/p' "$TMP/err")
expect_err "^collab-run: chaos: SIGKILL rank 1 \(pid $pid1\)"

# A killed peer does not hide another peer's failure.
cr --abi mpich --libdir "$FAKE" -n 2 --chaos kill:1@0.3s -- /bin/sh -c \
    'if [ "$COLLAB_RANK" = 0 ]; then sleep 0.8; exit 5; fi; sleep 30'
expect_rc 5

# By line, on stdout: rank 2 dies right after printing tick 4.
R -n 3 --chaos 'kill:2@line:2:^tick 4 ' "$PROBE" ticks 10 250
expect_rc 0
l2=$(last_tick 2)
[ "${l2:-0}" -ge 4 ] && [ "${l2:-0}" -le 5 ] || { fail "rank 2's last tick is ${l2}, expected 4"; show; }
[ "$(ticks_of 0)" = 10 ] || { fail "rank 0 did not finish"; show; }
expect_err '^collab-run: chaos: SIGKILL rank 2 \(pid [0-9]+\) at'

# By line, on stderr; the watched rank need not be the victim.
R -n 2 --chaos 'kill:1@line:0:tick [3]' "$PROBE" ticks 12 150 err
expect_rc 0
expect_err '^collab-run: chaos: SIGKILL rank 1 '
n=$(grep -c '^\[1\] tick ' "$TMP/err")
[ "$n" -ge 2 ] && [ "$n" -le 4 ] || { fail "rank 1 printed $n ticks, expected about 3"; show; }

# Faults that cannot happen are reported, not silently dropped.
R -n 2 --chaos 'kill:0@line:1:no such line' "$PROBE" ticks 2 10
expect_rc 0
expect_err "^collab-run: chaos: 'kill:0@line:1:no such line' never happened$"
R -n 2 --chaos kill:1@0.5s -- /bin/sh -c '[ "$COLLAB_RANK" = 1 ] || sleep 1'
expect_rc 0
expect_err "^collab-run: chaos: 'kill:1@0.5s': rank 1 is not running at 0\.[5-9][0-9]s; skipped$"

finish
