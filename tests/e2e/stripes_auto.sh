#!/usr/bin/env bash
# COLLAB_STRIPES=auto (docs/wire.md §1.1, cl_stripe_probe.h): two example
# trainers (unchanged, built with mpicc.mpich, the library preloaded; 4 MiB
# all-reduces; 50 steps capped, 40 full), each in a network namespace of its own on one bridge,
# links of 40 Mbit/s both ways.  Mode:
#   capped  every TCP connection a peer opens uploads at most 10 Mbit/s
#           (htb per source port, as bench/wan.sh --flow-cap): one
#           connection fills a quarter of the link.  Each trainer must
#           keep 2 connections per link after 1, 4 after 2, and keep 4 or
#           more at last;
#   full    no cap: one connection fills the link.  Each trainer must try
#           2 connections and keep 1.
# Both: every trainer finishes, parameters bitwise equal.  Needs root and
# `ip netns` (a link to a loopback address is never measured the same
# way: no per-flow cap can be set there); skipped (77) elsewhere.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER
mode=${1:?usage: stripes_auto.sh capped|full}
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
np=2 rate=40 cap=10 steps=40 limit=200
[ "$mode" = capped ] && steps=50 # 1 s a step with 4 connections, 3.4 s with 1
tag=sa$$
pids=()

case $mode in
capped)
    net=10.83.0
    e2e_ns_setup_capped "$tag" "$np" "$net" "$rate" "$cap" ||
        { say "SKIPPED: needs root, tc (htb, u32) and ip netns"; exit 77; }
    ;;
full)
    net=10.84.0
    e2e_ns_setup "$tag" "$np" "$net" "$rate" ||
        { say "SKIPPED: needs root, tc and ip netns"; exit 77; }
    ;;
*) fail "unknown mode $mode" ;;
esac

env_common=(COLLAB_WORLD_SIZE=$np COLLAB_TIMEOUT=10 COLLAB_MATCHMAKING_TIME=30
    COLLAB_STRIPES=auto COLLAB_LOG=info)
args=(--steps "$steps" --hidden 1024 --batch 4 --log-every 8)

peer() { e2e_ns_start "$net" "$1"; }

say "$np trainers, links of $rate Mbit/s$([ "$mode" = capped ] && echo ", each connection at most $cap"), COLLAB_STRIPES=auto"
e2e_ns_trainers "$np"

# Each trainer's decisions: "stripes: R Mbit/s uploaded with K connections
# per link (B with N); C kept[, trying T]" (at info when the count in use
# changes): K connections measured R against B with N, C is kept (T tried
# next).
summary=
for i in $(seq 0 $((np - 1))); do
    grep 'stripes: .* kept' "$E2E_LOG/p$i.err" | sed 's/^\[collab\] //' >"$E2E_LOG/d$i"
    counts=$(sed -n 's/.*; \([0-9]*\) kept.*/\1/p' "$E2E_LOG/d$i" | tr '\n' ' ')
    [ -n "$counts" ] || fail "trainer $i logged no decision of COLLAB_STRIPES=auto"
    last=${counts% }
    last=${last##* }
    summary="$summary trainer $i: $counts;"
    case $mode in
    capped)
        grep -q 'with 2 connections per link (.* with 1); 2 kept' "$E2E_LOG/d$i" ||
            fail "trainer $i did not keep 2 connections after 1 ($(tr '\n' '|' <"$E2E_LOG/d$i"))"
        grep -q 'with 4 connections per link (.* with 2); 4 kept' "$E2E_LOG/d$i" ||
            fail "trainer $i did not keep 4 connections after 2 ($(tr '\n' '|' <"$E2E_LOG/d$i"))"
        [ "$last" -ge 4 ] || fail "trainer $i kept $last connections per link at last, not 4 or more"
        ;;
    full)
        grep -q 'with 2 connections per link (.* with 1); 1 kept$' "$E2E_LOG/d$i" ||
            fail "trainer $i did not try 2 connections and keep 1 ($(tr '\n' '|' <"$E2E_LOG/d$i"))"
        [ "$last" -eq 1 ] || fail "trainer $i kept $last connections per link at last, not 1"
        ;;
    esac
done
pass "$np trainers bitwise equal; connections per link chosen in turn:$summary"
