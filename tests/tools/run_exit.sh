# collab-run: how peers end is reported, and the exit status is the worst
# of them; output and stdin pass through unchanged.
. "$(dirname "$0")/lib.sh"

R() { cr --abi mpich --libdir "$FAKE" "$@"; }

R -n 3 "$PROBE" exit 0,0,0
expect_rc 0
expect_no_err 'exited with status [1-9]|killed by'
[ "$(grep -Ec '^collab-run: rank [0-2] is pid [0-9]+' "$TMP/err")" = 3 ] || { fail "3 'is pid' lines"; show; }
for r in 0 1 2; do
    expect_err "^collab-run: summary: rank $r \(pid [0-9]+\) exited with status 0 after [0-9]+\.[0-9]{2}s$"
done

R -n 3 "$PROBE" exit 0,3,1
expect_rc 3
expect_err '^collab-run: rank 1 \(pid [0-9]+\) exited with status 3$'
expect_err '^collab-run: rank 2 \(pid [0-9]+\) exited with status 1$'
expect_no_err '^collab-run: rank 0 \(pid [0-9]+\) exited'

R -n 2 "$PROBE" exit 0,sig:15
expect_rc 143
expect_err '^collab-run: rank 1 \(pid [0-9]+\) killed by signal 15 \(TERM\)$'

R -n 2 "$PROBE" exit sig:11,0
expect_rc 139
expect_err '^collab-run: rank 0 \(pid [0-9]+\) killed by signal 11 \(SEGV\)'

R -n 3 "$PROBE" exit 0,200,sig:9
expect_rc 200
expect_err 'rank 2 \(pid [0-9]+\) killed by signal 9 \(KILL\)$'
expect_err '^collab-run: summary: rank 1 \(pid [0-9]+\) exited with status 200 after'

# The peer reported matches the pid announced for it.
R -n 2 "$PROBE" exit 0,7
pid1=$(sed -n 's/^collab-run: rank 1 is pid \([0-9]*\).*/\1/p' "$TMP/err")
expect_err "^collab-run: rank 1 \(pid $pid1\) exited with status 7$"

# Untagged output is passed through byte for byte, tagged lines are closed.
R -n 1 "$PROBE" partial
expect_rc 0
printf 'no newline at the end' | cmp -s - "$TMP/out" || { fail "untagged partial line changed"; show; }
R -n 1 --tag-output "$PROBE" partial
printf '[0] no newline at the end\n' | cmp -s - "$TMP/out" || { fail "tagged partial line"; show; }

# stdin goes to rank 0 (when it is not a terminal); the others read /dev/null.
printf 'hello\n' | "$RUN" -n 2 --abi mpich --libdir "$FAKE" --tag-output -- /bin/sh -c \
    'if read x; then echo "got $x"; else echo "got eof"; fi' >"$TMP/out" 2>"$TMP/err"
RC=$?
LAST_CMD="stdin pass-through"
expect_rc 0
expect_out '^\[0\] got hello$'
expect_out '^\[1\] got eof$'

# The peers' arguments arrive unchanged (no shell in between).
R -n 1 -- /bin/echo '-n' 'a b' '$HOME' '*'
expect_out '^a b \$HOME \*$'

finish
