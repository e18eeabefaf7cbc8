#!/usr/bin/env bash
# soak_verdict_test.sh VERDICT_SH - bench/soak_verdict.sh on made-up round
# logs (collab-run's lines as it writes them): the pause error after the
# swarm ended (after-end) apart from the same error while others still ran
# (pause-stop) and from real crashes, with end times counted from a late
# peer's start; standbys; the precedence of the verdicts.
set -u
. "${1:?usage: soak_verdict_test.sh bench/soak_verdict.sh}"
tmp=$(mktemp -d /tmp/soak_verdict_test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0

pause_line() { echo "[$1] [collab] rank $1: $SOAK_PAUSE_ERROR within 20 s; stopping (its parameters are no longer the swarm's)"; }

# expect NAME WANT_VERDICT WANT_PEERS STATUS DONE SUMS KILLED STARTED: judges
# $tmp/NAME.err; WANT_PEERS is soak_bad_peers' lines joined by ';'.
expect() {
    local name=$1 want=$2 want_peers=$3 got peers
    shift 3
    got=$(soak_verdict "$1" "$2" "$3" "$4" "$5" 4 "$tmp/$name.err")
    peers=$(soak_bad_peers "$tmp/$name.err" | paste -sd';')
    if [ "$got" = "$want" ] && [ "$peers" = "$want_peers" ]; then
        echo "ok: $name: $got${peers:+ ($peers)}"
    else
        echo "FAIL: $name: verdict '$got' (want '$want'), peers '$peers' (want '$want_peers')"
        failures=$((failures + 1))
    fi
}

# Soak seed 2, round 19: rank 0 stopped 11..19 s, the others (rank 1 and
# the peer started at 14 s) ended at 23.9 s, rank 0 at 59.09 s.
cat >"$tmp/after_end.err" <<EOT
collab-run: rank 0 is pid 27049 (cpus 0)
collab-run: rank 1 is pid 27050 (cpus 1)
collab-run: rank 2 is pid 27051 (cpus 0)
collab-run: rank 3 is pid 27052 (cpus 1)
collab-run: chaos: SIGKILL rank 3 (pid 27052) at 9.00s
collab-run: rank 3 (pid 27052) killed by signal 9 (KILL) [chaos]
collab-run: chaos: SIGSTOP rank 0 (pid 27049) at 11.00s for 8.00s
collab-run: chaos: SIGKILL rank 2 (pid 27051) at 12.00s
collab-run: rank 2 (pid 27051) killed by signal 9 (KILL) [chaos]
collab-run: peer +1 is pid 27065 (cpus 0)
collab-run: chaos: started peer +1 (pid 27065, any free rank) at 14.00s
collab-run: chaos: SIGCONT rank 0 (pid 27049) at 19.00s
$(pause_line 0)
collab-run: rank 0 (pid 27049) exited with status 101
collab-run: summary: rank 0 (pid 27049) exited with status 101 after 59.09s
collab-run: summary: rank 1 (pid 27050) exited with status 0 after 23.89s
collab-run: summary: rank 2 (pid 27051) killed by signal 9 (KILL) [chaos] after 11.99s
collab-run: summary: rank 3 (pid 27052) killed by signal 9 (KILL) [chaos] after 8.99s
collab-run: summary: peer +1 (pid 27065) exited with status 0 after 9.90s
EOT
expect after_end after-end 'after-end [0]' 101 2 1 2 1

# The same, but the started peer came at 40 s and ran 20 s: it ended at
# 60 s, after rank 0 (its "after" alone, 20 s, would say before).
sed -e 's/started peer +1 (pid 27065, any free rank) at 14.00s/started peer +1 (pid 27065, any free rank) at 40.00s/' \
    -e 's/peer +1 (pid 27065) exited with status 0 after 9.90s/peer +1 (pid 27065) exited with status 0 after 20.00s/' \
    "$tmp/after_end.err" >"$tmp/late_peer.err"
expect late_peer pause-stop 'pause-stop [0]' 101 2 1 2 1

# Soak seed 2, round 28: rank 3 still trained until 64.52 s.
cat >"$tmp/while_running.err" <<EOT
collab-run: rank 0 is pid 27813 (cpus 0)
collab-run: rank 1 is pid 27814 (cpus 1)
collab-run: rank 2 is pid 27815 (cpus 0)
collab-run: rank 3 is pid 27816 (cpus 1)
collab-run: chaos: SIGSTOP rank 0 (pid 27813) at 4.00s for 6.00s
collab-run: chaos: SIGKILL rank 2 (pid 27815) at 6.00s
collab-run: rank 2 (pid 27815) killed by signal 9 (KILL) [chaos]
collab-run: chaos: SIGCONT rank 0 (pid 27813) at 10.00s
collab-run: chaos: SIGKILL rank 1 (pid 27814) at 12.00s
collab-run: rank 1 (pid 27814) killed by signal 9 (KILL) [chaos]
$(pause_line 0)
collab-run: rank 0 (pid 27813) exited with status 101
collab-run: summary: rank 0 (pid 27813) exited with status 101 after 50.09s
collab-run: summary: rank 1 (pid 27814) killed by signal 9 (KILL) [chaos] after 11.98s
collab-run: summary: rank 2 (pid 27815) killed by signal 9 (KILL) [chaos] after 5.98s
collab-run: summary: rank 3 (pid 27816) exited with status 0 after 64.52s
EOT
expect while_running pause-stop 'pause-stop [0]' 101 1 1 2 0

# Status 101 without the pause error, the error with another status, or
# the error in another peer's log: crashes.
grep -v 'after the pause' "$tmp/after_end.err" >"$tmp/no_line.err"
expect no_line crash 'crash [0]' 101 2 1 2 1
sed 's/with status 101/with status 1/' "$tmp/after_end.err" >"$tmp/other_status.err"
expect other_status crash 'crash [0]' 1 2 1 2 1
sed 's/^\[0\] \[collab\] rank 0:/[1] [collab] rank 1:/' "$tmp/after_end.err" >"$tmp/other_peer.err"
expect other_peer crash 'crash [0]' 101 2 1 2 1

# Two peers stopped with the pause error after the swarm ended: neither
# was the swarm, so each is after-end (rank 2 ends after rank 0).
cat >"$tmp/two_paused.err" <<EOT
$(pause_line 0)
$(pause_line 2)
collab-run: summary: rank 0 (pid 11) exited with status 101 after 50.00s
collab-run: summary: rank 1 (pid 12) exited with status 0 after 30.00s
collab-run: summary: rank 2 (pid 13) exited with status 101 after 55.00s
collab-run: summary: rank 3 (pid 14) exited with status 0 after 31.00s
EOT
expect two_paused after-end 'after-end [0];after-end [2]' 101 2 1 0 0

# A standby that gave up is no failure; with the pause error after the
# end the round is after-end; a crash beside it is a crash.
cat >"$tmp/standby.err" <<EOT
[+1] [collab] error: the swarm this peer waited for as a standby ended
collab-run: chaos: started peer +1 (pid 15, any free rank) at 10.00s
collab-run: summary: rank 0 (pid 11) exited with status 0 after 30.00s
collab-run: summary: rank 1 (pid 12) exited with status 0 after 30.00s
collab-run: summary: rank 2 (pid 13) exited with status 0 after 30.00s
collab-run: summary: rank 3 (pid 14) exited with status 0 after 30.00s
collab-run: summary: peer +1 (pid 15) exited with status 1 after 25.00s
EOT
expect standby ok 'standby [+1]' 1 4 1 0 1
{ cat "$tmp/standby.err"; pause_line 3; } |
    sed 's/rank 3 (pid 14) exited with status 0 after 30.00s/rank 3 (pid 14) exited with status 101 after 40.00s/' \
        >"$tmp/standby_after_end.err"
expect standby_after_end after-end 'after-end [3];standby [+1]' 101 3 1 0 1
sed 's/rank 1 (pid 12) exited with status 0/rank 1 (pid 12) killed by signal 11 (SEGV)/' \
    "$tmp/standby_after_end.err" >"$tmp/crash_beside.err"
expect crash_beside crash 'crash [1];after-end [3];standby [+1]' 139 2 1 0 1

# A joiner whose swarm ended before its group took it in (status 101,
# as the pause error, but its own words) is no failure either.
cat >"$tmp/late_joiner.err" <<EOT
[+2] [collab] rank 3: error: every other member of the swarm left or failed before this peer was admitted to the group of the world communicator (the run ended); giving up
collab-run: chaos: started peer +2 (pid 16, any free rank) at 5.00s
collab-run: summary: rank 0 (pid 11) exited with status 0 after 28.00s
collab-run: summary: rank 1 (pid 12) killed by signal 9 (KILL) [chaos] after 11.00s
collab-run: summary: rank 2 (pid 13) exited with status 0 after 28.00s
collab-run: summary: rank 3 (pid 14) exited with status 0 after 28.00s
collab-run: summary: peer +2 (pid 16) exited with status 101 after 24.00s
EOT
expect late_joiner ok 'standby [+2]' 101 3 1 1 1

# Precedence: a hang first; a disagreement before after-end, and named
# beside a hang, crash or pause-stop; a clean run.
cp "$tmp/after_end.err" "$tmp/after_end_hang.err"
expect after_end_hang hang 'after-end [0]' 124 2 1 2 1
cp "$tmp/after_end.err" "$tmp/after_end_disagree.err"
expect after_end_disagree disagreement 'after-end [0]' 101 2 2 2 1
# A disagreement is named beside a hang, crash or pause-stop (soak seed
# 6, round 1: a paused peer stopped with the pause error while the rest
# trained on as two swarms with two checksums).
cp "$tmp/late_peer.err" "$tmp/pause_disagree.err"
expect pause_disagree pause-stop+disagreement 'pause-stop [0]' 101 4 2 2 1
cp "$tmp/after_end.err" "$tmp/hang_disagree.err"
expect hang_disagree hang+disagreement 'after-end [0]' 124 2 2 2 1
grep -v '101\|after the pause' "$tmp/after_end.err" >"$tmp/clean.err"
expect clean ok '' 0 2 1 2 1

[ "$failures" -eq 0 ] || { echo "soak_verdict_test: $failures FAILED"; exit 1; }
echo "soak_verdict_test: ok"
