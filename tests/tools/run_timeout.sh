# collab-run --timeout: names the peers still running, kills them, exits 124.
. "$(dirname "$0")/lib.sh"

R() { cr --abi mpich --libdir "$FAKE" "$@"; }

R -n 3 --timeout 1 "$PROBE" sleep 30000
expect_rc 124
between "$ELAPSED" 0.9 4 || fail "--timeout 1 took ${ELAPSED}s"
expect_err '^collab-run: timeout: 1\.[0-9]{2}s passed; still running: rank 0 \(pid [0-9]+\), rank 1 \(pid [0-9]+\), rank 2 \(pid [0-9]+\); killing them$'
expect_err '^collab-run: summary: rank 2 \(pid [0-9]+\) killed by signal 9 \(KILL\) \[timeout\] after'
for p in $(pids_of); do alive "$p" && fail "peer $p survived the timeout"; done

# Only the peers still running are named.
R -n 2 --timeout 0.8s -- /bin/sh -c '[ "$COLLAB_RANK" = 0 ] || exec sleep 30'
expect_rc 124
expect_err 'still running: rank 1 \(pid [0-9]+\); killing them$'
expect_err '^collab-run: summary: rank 0 \(pid [0-9]+\) exited with status 0'

# A stopped peer is killed too; pending faults are cancelled.
R -n 1 --timeout 1 --chaos stop:0@0.1s+60 --chaos start@30s "$PROBE" sleep 30000
expect_rc 124
between "$ELAPSED" 0.9 4 || fail "timeout with a stopped peer took ${ELAPSED}s"
expect_err "^collab-run: chaos: 'start@30s' cancelled \(timeout\)$"

# Not reached: the peers' status counts.
R -n 2 --timeout 20 "$PROBE" exit 0,4
expect_rc 4
between "$ELAPSED" 0 5 || fail "a run far from its timeout took ${ELAPSED}s"
expect_no_err 'timeout'

finish
