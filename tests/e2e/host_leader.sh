#!/usr/bin/env bash
# All-reduces through host leaders (strict mode, docs/collectives.md §5c):
# five peers of tests/coll/hier_check (built with mpicc.mpich, the library
# preloaded) on three "hosts", network namespaces of one bridge: ranks 0
# and 1 in the first, 2 and 3 in the second, 4 alone in the third.
#   plain         every check of every iteration right, on the world, a
#                 duplicate and a split; the float sums' bits equal on
#                 every rank; every peer logged that the world's
#                 all-reduces go through leaders (and, with
#                 COLLAB_HOST_LEADER=0, that none did: the same checks
#                 flat).
#   kill_member   rank 3 (not a leader) SIGKILLs itself in iteration 3:
#   kill_leader   rank 2 (its host's leader) does: every survivor fails
#                 that call (the float maximum) with MPIX_ERR_PROC_FAILED
#                 (MPICH's 101), none prints a wrong value, none hangs.
# Needs root and `ip netns` (peers of one namespace are one host); skipped
# (77) elsewhere.
. "$(dirname "$0")/lib.sh"
need E2E_HIER_CHECK
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
mode=${1:-plain}
np=5 limit=150 net=10.85.0 tag=hl$$
host_of=(0 0 1 1 2)
pids=()
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    say "SKIPPED: needs root and ip netns"
    exit 77
fi
E2E_NS_TAG=$tag E2E_NS_N=3
trap 'kill -9 "${pids[@]}" 2>/dev/null; netns_del "$E2E_NS_TAG" "$E2E_NS_N"' EXIT
netns_add "$tag" 3 "$net" || { say "SKIPPED: could not make network namespaces"; exit 77; }

# peer R [VAR=VALUE...]: rank R in its host's namespace, port 4000 + R.
peer() {
    local r=$1 h=${host_of[$1]} extra=()
    shift
    [ "$r" -gt 0 ] && extra+=(COLLAB_INITIAL_PEERS="$line")
    ip netns exec "${tag}n$h" env COLLAB_WORLD_SIZE=$np COLLAB_STRICT=1 COLLAB_RANK="$r" \
        COLLAB_TIMEOUT=3 COLLAB_MATCHMAKING_TIME=30 "$@" "${extra[@]}" \
        COLLAB_LISTEN="/ip4/$net.$((h + 1))/tcp/$((4000 + r))" LD_PRELOAD="$preload" \
        timeout -s KILL "$limit" "$E2E_HIER_CHECK" "${prog_args[@]}" \
        >"$E2E_LOG/p$r.out" 2>"$E2E_LOG/p$r.err" &
    pids+=($!)
}

# run [VAR=VALUE...]: all five; sets st[r] to each exit status.
run() {
    local r
    pids=() line=
    rm -f "$E2E_LOG"/p*.out "$E2E_LOG"/p*.err
    peer 0 "$@"
    wait_for "$E2E_LOG/p0.err" '^COLLAB_INITIAL_PEERS=' 20 || fail "the founder printed no join line"
    line=$(sed -n 's/^COLLAB_INITIAL_PEERS=//p' "$E2E_LOG/p0.err" | head -n 1)
    for r in $(seq 1 $((np - 1))); do peer "$r" "$@"; done
    st=()
    for r in $(seq 0 $((np - 1))); do
        wait "${pids[$r]}"
        st[$r]=$?
    done
    cat "$E2E_LOG"/p*.out "$E2E_LOG"/p*.err >"$E2E_LOG/all.log"
    ! grep -q "WRONG" "$E2E_LOG/all.log" || fail "a rank got a wrong value: $(grep -m1 WRONG "$E2E_LOG/all.log")"
}

# leaders_logged N: N peers logged that the world goes through leaders.
leaders_logged() {
    local n
    n=$(grep -l "on communicator 0000000000000001 go through host leaders: 3 hosts" \
        "$E2E_LOG"/p*.err | wc -l)
    [ "$n" -eq "$1" ]
}

# all_ok: every rank finished every check, with equal bits.
all_ok() {
    local r hashes
    for r in $(seq 0 $((np - 1))); do
        [ "${st[$r]}" -eq 0 ] || fail "rank $r ended with status ${st[$r]}"
    done
    hashes=$(sed -n 's/^hier_check rank [0-9]* ok hash //p' "$E2E_LOG/all.log" | sort -u)
    [ "$(sed -n '/^hier_check rank [0-9]* ok hash /p' "$E2E_LOG/all.log" | wc -l)" -eq "$np" ] ||
        fail "not every rank finished its checks"
    [ "$(echo "$hashes" | wc -l)" -eq 1 ] || fail "the float sums differ between ranks: $hashes"
}

case "$mode" in
plain)
    prog_args=(12)
    run
    all_ok
    leaders_logged "$np" || fail "not every peer logged that the world's all-reduces go through leaders"
    grep -q "go through host leaders: 2 hosts" "$E2E_LOG/p0.err" ||
        fail "rank 0 did not log that the split's first part (2 hosts) goes through leaders"
    mkdir -p "$E2E_LOG/leaders" && cp "$E2E_LOG"/p* "$E2E_LOG/leaders/"
    say "through leaders: every check right, bits equal; now the same flat"
    run COLLAB_HOST_LEADER=0
    all_ok
    leaders_logged 0 || fail "a peer went through leaders with COLLAB_HOST_LEADER=0"
    pass "5 peers on 3 hosts: the same checks right through leaders and flat"
    ;;
kill_member | kill_leader)
    victim=3
    [ "$mode" = kill_leader ] && victim=2
    prog_args=(8 "$victim" 3)
    run
    leaders_logged "$np" || fail "not every peer logged that the world's all-reduces go through leaders"
    grep -q "hier_check rank $victim kills itself at 3" "$E2E_LOG/all.log" || fail "rank $victim did not kill itself"
    for r in $(seq 0 $((np - 1))); do
        [ "$r" -eq "$victim" ] && continue
        [ "${st[$r]}" -eq 3 ] || fail "rank $r ended with status ${st[$r]}, not 3 (the call failed)"
        grep -q "^hier_check rank $r failed at 3 in float max code 101$" "$E2E_LOG/p$r.out" ||
            fail "rank $r did not fail iteration 3's float maximum (the call rank $victim died in) with MPIX_ERR_PROC_FAILED: $(cat "$E2E_LOG/p$r.out")"
    done
    pass "rank $victim killed: every survivor failed the call with MPIX_ERR_PROC_FAILED"
    ;;
*) fail "unknown mode $mode" ;;
esac
