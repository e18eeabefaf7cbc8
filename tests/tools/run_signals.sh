# collab-run: SIGTERM/SIGINT are passed to every peer's process group; a
# second one kills them all.  The exit status says what happened.
. "$(dirname "$0")/lib.sh"
set -m # background jobs in their own process groups, SIGINT not ignored

start_bg() { # start_bg ARGS...: collab-run in the background, pid in BG
    "$RUN" --abi mpich --libdir "$FAKE" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null &
    BG=$!
    LAST_CMD="collab-run $*"
}

finish_bg() {
    local deadline=$(($(date +%s) + 20))
    while kill -0 "$BG" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
    wait "$BG"
    RC=$?
    ELAPSED=?
}

for sig in TERM INT; do
    case $sig in TERM) num=15 ;; INT) num=2 ;; esac
    start_bg -n 2 "$PROBE" sleep 20000
    wait_for "$TMP/err" ' is pid ' 2 10 || { fail "$sig: peers did not start"; show; }
    kill -s "$sig" "$BG"
    finish_bg
    expect_rc $((128 + num)) "SIG$sig once"
    expect_err "^collab-run: got SIG$sig: passing it on to the peers"
    for r in 0 1; do
        expect_err "^collab-run: rank $r \(pid [0-9]+\) killed by signal $num \($sig\)$"
    done
    for p in $(pids_of); do alive "$p" && fail "$sig: peer $p survived"; done
done

# Peers that ignore SIGTERM: the second one kills them.
start_bg -n 2 --tag-output "$PROBE" ignore-term 20000
wait_for "$TMP/out" 'ready' 2 10 || { fail "ignore-term peers not ready"; show; }
kill -s TERM "$BG"
wait_for "$TMP/err" 'got SIGTERM' 1 10
sleep 0.3 # they ignore it: still alive a while later
for p in $(pids_of); do alive "$p" || fail "peer $p died of an ignored SIGTERM"; done
kill -s TERM "$BG"
finish_bg
expect_rc 143 "SIGTERM twice"
expect_err '^collab-run: got SIGTERM again: killing every peer'
expect_err '^collab-run: rank 0 \(pid [0-9]+\) killed by signal 9 \(KILL\) \[interrupted\]$'
for p in $(pids_of); do alive "$p" && fail "peer $p survived two SIGTERMs"; done

# A peer that handles the signal and exits cleanly gives status 0.
start_bg -n 2 -- /bin/sh -c 'trap "echo bye; exit 0" TERM; echo up; while :; do sleep 0.1; done'
wait_for "$TMP/out" '^up$' 2 10 || { fail "trap peers not up"; show; }
kill -s TERM "$BG"
finish_bg
expect_rc 0 "peers exiting cleanly on SIGTERM"
[ "$(count_out '^bye$')" = 2 ] || { fail "peers did not run their handler"; show; }

# A signal ignored by whoever started collab-run (nohup) stays ignored.
(
    trap '' HUP
    exec "$RUN" --abi mpich --libdir "$FAKE" -n 1 -- /bin/sh -c 'echo up; sleep 0.6; echo survived'
) >"$TMP/out" 2>"$TMP/err" </dev/null &
BG=$!
LAST_CMD="collab-run under an ignored SIGHUP"
wait_for "$TMP/out" '^up$' 1 10 || { fail "peer not up"; show; }
kill -s HUP "$BG"
finish_bg
expect_rc 0
expect_out '^survived$'
expect_no_err 'SIGHUP'

# Everything a peer started dies with it (its process group is signalled).
start_bg -n 1 -- /bin/sh -c 'sleep 300 & echo "child $!"; wait'
wait_for "$TMP/out" '^child [0-9]+$' 1 10 || { fail "grandchild not started"; show; }
gc=$(sed -n 's/^child //p' "$TMP/out")
kill -s TERM "$BG"
finish_bg
deadline=$(($(date +%s) + 5))
while alive "$gc" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.05; done
alive "$gc" && { fail "the peer's own child $gc survived"; kill -9 "$gc"; }

finish
