# collab-run: the environment of every peer (original and started by a
# fault): COLLAB_* values, key files, preload, and the user's own values.
. "$(dirname "$0")/lib.sh"

# val TAG NAME: the value a peer printed for NAME ("unset" when unset).
val() {
    local v
    v=$(grep -F "[$1] $2" "$TMP/out" | sed -n "s/^\[[^]]*\] $2=//p" | head -1)
    if [ -z "$v" ] && grep -qF "[$1] $2 unset" "$TMP/out"; then v=unset; fi
    printf '%s' "$v"
}
eq() { # eq WHAT GOT WANT
    [ "$2" = "$3" ] || { fail "$1: got '$2', expected '$3'"; show; }
}

cr -n 2 --abi mpich --libdir "$FAKE" --tag-output --chaos start@0.3s "$PROBE" env 1000
expect_rc 0
expect_err '^collab-run: peer \+1 is pid [0-9]+'
expect_err '^collab-run: chaos: started peer \+1 \(pid [0-9]+, any free rank\) at 0\.[3-9][0-9]s$'
expect_err '^collab-run: summary: peer \+1 \(pid [0-9]+\) exited with status 0'

port() { val "$1" COLLAB_LISTEN | sed -n 's|^/ip4/127\.0\.0\.1/tcp/\([0-9]*\)$|\1|p'; }
P0=$(port 0)
P1=$(port 1)
P2=$(port +1)
ID0=$(val 0 IDENTITY_PEER_ID)
ID1=$(val 1 IDENTITY_PEER_ID)
ID2=$(val +1 IDENTITY_PEER_ID)
[ -n "$P0" ] && [ -n "$P1" ] && [ -n "$P2" ] || { fail "COLLAB_LISTEN not /ip4/127.0.0.1/tcp/PORT"; show; }
[ "$P0" != "$P1" ] && [ "$P0" != "$P2" ] && [ "$P1" != "$P2" ] || fail "ports not distinct: $P0 $P1 $P2"
[ -n "$ID0" ] && [ -n "$ID1" ] && [ -n "$ID2" ] || { fail "key files without peer ids"; show; }
[ "$ID0" != "$ID1" ] && [ "$ID0" != "$ID2" ] && [ "$ID1" != "$ID2" ] || fail "peer ids not distinct"

eq "rank 0 COLLAB_RANK" "$(val 0 COLLAB_RANK)" 0
eq "rank 1 COLLAB_RANK" "$(val 1 COLLAB_RANK)" 1
eq "peer +1 COLLAB_RANK" "$(val +1 COLLAB_RANK)" unset
# Local ranks as mpiexec sets them; a started peer without a rank takes its
# slot (2) modulo N.
for v in MPI_LOCALRANKID OMPI_COMM_WORLD_LOCAL_RANK LOCAL_RANK; do
    eq "rank 0 $v" "$(val 0 $v)" 0
    eq "rank 1 $v" "$(val 1 $v)" 1
    eq "peer +1 $v" "$(val +1 $v)" 0
done
eq "rank 1 LOCAL_WORLD_SIZE" "$(val 1 LOCAL_WORLD_SIZE)" 2
for t in 0 1 +1; do
    eq "$t COLLAB_WORLD_SIZE" "$(val "$t" COLLAB_WORLD_SIZE)" 2
    eq "$t COLLAB_MATCHMAKING_TIME" "$(val "$t" COLLAB_MATCHMAKING_TIME)" 30
    eq "$t key file mode" "$(val "$t" IDENTITY_MODE)" 600
    eq "$t key folder mode" "$(val "$t" IDENTITY_DIR_MODE)" 700
    eq "$t LD_PRELOAD" "$(val "$t" LD_PRELOAD)" "$FAKE/libmpicollab.so"
    eq "$t LD_LIBRARY_PATH" "$(val "$t" LD_LIBRARY_PATH)" unset
    eq "$t COLLAB_ANNOUNCE" "$(val "$t" COLLAB_ANNOUNCE)" unset
done
A0=/ip4/127.0.0.1/tcp/$P0/p2p/$ID0
A1=/ip4/127.0.0.1/tcp/$P1/p2p/$ID1
eq "rank 0 COLLAB_INITIAL_PEERS (founder)" "$(val 0 COLLAB_INITIAL_PEERS)" unset
eq "rank 1 COLLAB_INITIAL_PEERS" "$(val 1 COLLAB_INITIAL_PEERS)" "$A0"
eq "peer +1 COLLAB_INITIAL_PEERS" "$(val +1 COLLAB_INITIAL_PEERS)" "$A0,$A1"
K0=$(val 0 COLLAB_IDENTITY)
K2=$(val +1 COLLAB_IDENTITY)
[ "$K0" != "$K2" ] || fail "peer +1 reuses rank 0's key file"
[ "$(dirname "$K0")" = "$(dirname "$K2")" ] || fail "key files in different folders"
[ ! -e "$(dirname "$K0")" ] || fail "the key folder $(dirname "$K0") outlived collab-run"

# start:RANK asks for that rank; a started peer can be a fault's target.
# The second start waits for the first started peer's line (a timed one
# came first on a loaded machine and took the name +1).
cr -n 2 --abi mpich --libdir "$FAKE" --tag-output --chaos 'start:1@line:0:^COLLAB_RANK=0$' \
    --chaos 'start@line:+1:^COLLAB_RANK=1$' --chaos 'kill:+2@line:+2:^COLLAB_RANK' "$PROBE" env 800
expect_rc 0
expect_err '^collab-run: chaos: started rank 1 \(pid [0-9]+, peer \+1\) at'
expect_err '^collab-run: chaos: SIGKILL peer \+2 \(pid [0-9]+\) at'
expect_err '^collab-run: summary: peer \+2 \(pid [0-9]+\) killed by signal 9 \(KILL\) \[chaos\]'
[ "$(grep -c '^\[1\] COLLAB_RANK=1$' "$TMP/out")" = 2 ] || { fail "two rank-1 peers expected"; show; }
[ "$(grep -c '^\[1\] COLLAB_INITIAL_PEERS=/ip4/127\.0\.0\.1/tcp/[0-9]*/p2p/[^,]*,/ip4/' "$TMP/out")" = 1 ] ||
    { fail "the started rank 1 should list both original peers"; show; }

# The user's explicit values win.
COLLAB_MATCHMAKING_TIME=4 COLLAB_INITIAL_PEERS=/ip4/10.1.2.3/tcp/7/p2p/Xyz \
    cr -n 2 --abi mpich --libdir "$FAKE" --tag-output "$PROBE" env 0
expect_rc 0
eq "user matchmaking time" "$(val 0 COLLAB_MATCHMAKING_TIME)" 4
# Rank 0 joins the user's swarm like the others instead of founding one.
P0=$(port 0)
ID0=$(val 0 IDENTITY_PEER_ID)
P1=$(port 1)
ID1=$(val 1 IDENTITY_PEER_ID)
eq "user's swarm, then the local peers (rank 0)" "$(val 0 COLLAB_INITIAL_PEERS)" \
    "/ip4/10.1.2.3/tcp/7/p2p/Xyz,/ip4/127.0.0.1/tcp/$P1/p2p/$ID1"
eq "user's swarm, then the local peers (rank 1)" "$(val 1 COLLAB_INITIAL_PEERS)" \
    "/ip4/10.1.2.3/tcp/7/p2p/Xyz,/ip4/127.0.0.1/tcp/$P0/p2p/$ID0"
COLLAB_LISTEN=/ip4/127.0.0.1/tcp/45678 COLLAB_RANK=0 COLLAB_WORLD_SIZE=1 \
    cr -n 1 --abi mpich --libdir "$FAKE" --tag-output "$PROBE" env 0
expect_rc 0
eq "user's listen address" "$(val 0 COLLAB_LISTEN)" /ip4/127.0.0.1/tcp/45678

# Replace mode and the Open MPI face.
LD_LIBRARY_PATH=/opt/x cr -n 1 --abi ompi --mode replace --libdir "$FAKE" --tag-output "$PROBE" env 0
expect_rc 0
eq "replace mode LD_LIBRARY_PATH" "$(val 0 LD_LIBRARY_PATH)" "$FAKE/mpicollab:/opt/x"
eq "replace mode LD_PRELOAD" "$(val 0 LD_PRELOAD)" unset
cr -n 1 --abi ompi --libdir "$FAKE" --tag-output "$PROBE" env 0
eq "ompi preload" "$(val 0 LD_PRELOAD)" "$FAKE/libmpicollab-ompi.so"

# A start fault keeps the run alive until it fires, even with no peer left.
cr -n 1 --abi mpich --libdir "$FAKE" --tag-output --chaos start:0@0.5s "$PROBE" env 0
expect_rc 0
[ "$(grep -c '^\[0\] COLLAB_RANK=0$' "$TMP/out")" = 2 ] || { fail "restart of rank 0 missing"; show; }

finish
