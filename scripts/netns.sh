# netns.sh - emulated hosts: network namespaces on one bridge, for the
# tests (tests/e2e/lib.sh) and benchmarks (bench/lib.sh) that need them.
# Sourced, not run; root only.  Links are left unlimited: the callers
# shape them with tc.
#
# netns_add TAG N NET creates namespaces TAGn0 .. TAGn(N-1), each joined
# to the bridge TAGbr by a veth pair (TAGhI on the bridge, pI inside,
# address NET.(I+1)/24), and returns 1 when any step fails.
# netns_del TAG N kills what runs in them and removes them, their veths
# and the bridge (whatever part exists; errors ignored).

netns_add() {
    local tag=$1 n=$2 net=$3 i ns
    ip link add name "${tag}br" type bridge 2>/dev/null || return 1
    ip link set "${tag}br" up || return 1
    for i in $(seq 0 $((n - 1))); do
        ns=${tag}n$i
        ip netns add "$ns" || return 1
        ip link add "${tag}h$i" type veth peer name p$i netns "$ns" || return 1
        ip link set "${tag}h$i" master "${tag}br" up || return 1
        ip -n "$ns" addr add "$net.$((i + 1))/24" dev p$i || return 1
        ip -n "$ns" link set p$i up || return 1
        ip -n "$ns" link set lo up || return 1
    done
}

netns_del() {
    local tag=$1 n=$2 i
    for i in $(seq 0 $((n - 1))); do
        ip netns pids "${tag}n$i" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "${tag}n$i" 2>/dev/null
        ip link del "${tag}h$i" 2>/dev/null
    done
    ip link del "${tag}br" 2>/dev/null
}
