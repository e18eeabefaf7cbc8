#!/usr/bin/env bash
# Bandwidth figures measured (COLLAB_BANDWIDTH_MBIT unset: "measure", the
# default; docs/collectives.md §2.2b): four example trainers (unchanged,
# built with mpicc.mpich, the library preloaded; 4 MiB all-reduces), each
# in a network namespace of its own on one bridge; three links limited by
# tbf to 20 Mbit/s both ways, the fourth to 8 Mbit/s.  Nobody declares a
# rate.  Checked:
#   - every trainer finishes, parameters bitwise equal;
#   - the coordinator took a measured figure for the slow peer within
#     [0.5, 1.3] x 8 Mbit/s, and one for a fast peer at least 1.5 times
#     as high (TCP's payload gets about 90 % of a link; the figures come
#     from what was sent and acknowledged while two connections or more
#     stayed backlogged);
#   - rank 0's debug log shows all-reduces whose parts were sized by
#     those figures.
# Needs root and `ip netns` (links to a loopback address are never
# measured); skipped (77) elsewhere.
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER
preload="$E2E_LIBDIR/libmpicollab.so"
[ -f "$preload" ] || fail "$preload is not built"
np=4 fast=20 slow=8 steps=16 limit=250
tag=mbw$$
pids=()

if ! e2e_ns_setup "$tag" "$np" 10.81.0 "$fast" "$fast" "$fast" "$slow"; then
    say "SKIPPED: needs root, tc and ip netns (figures are not measured on loopback)"
    exit 77
fi

env_common=(COLLAB_WORLD_SIZE=$np COLLAB_TIMEOUT=5 COLLAB_MATCHMAKING_TIME=30)
args=(--steps "$steps" --hidden 1024 --batch 4 --log-every 5)

# peer I: trainer I in its namespace, logs in $E2E_LOG/pI.out/.err.
peer() {
    local level=info
    [ "$1" -eq 0 ] && level=debug
    e2e_ns_start 10.81.0 "$1" COLLAB_LOG=$level
}

say "$np trainers, links of $fast Mbit/s and one of $slow, nothing declared"
e2e_ns_trainers "$np"

# The slow peer's rank, from its own log lines.
srank=$(sed -n 's/^\[collab\] rank \([0-9]*\): .*/\1/p' "$E2E_LOG/p$((np - 1)).err" | head -n 1)
[ -n "$srank" ] || fail "the slow peer logged no rank"
# Figures the coordinator took: "rank R's bandwidth figure is now X kbit/s
# (measured)", or its own ("this peer's ...", rank from the line's prefix).
figures=$(sed -n -e "s/^\[collab\] rank [0-9]*: rank \([0-9]*\)'s bandwidth figure is now \([0-9]*\) kbit.*/\1 \2/p" \
    -e "s/^\[collab\] rank \([0-9]*\): this peer's bandwidth figure is now \([0-9]*\) kbit.*/\1 \2/p" \
    "$E2E_LOG"/p*.err)
[ -n "$figures" ] || fail "no measured figure was taken"
say "figures taken (rank kbit/s): $(echo "$figures" | tr '\n' ';')"
sfig=$(echo "$figures" | awk -v r="$srank" '$1 == r { f = $2 } END { print f + 0 }')
[ "$sfig" -ge $((slow * 500)) ] && [ "$sfig" -le $((slow * 1300)) ] ||
    fail "the slow peer's (rank $srank) last figure is $sfig kbit/s, not about $((slow * 1000))"
ffig=$(echo "$figures" | awk -v r="$srank" '$1 != r && $2 > m { m = $2 } END { print m + 0 }')
[ "$ffig" -ge $((sfig * 3 / 2)) ] ||
    fail "no fast peer's figure reached 1.5 x the slow peer's ($ffig against $sfig kbit/s)"
sized=$(grep -c "parts sized by bandwidth" "$E2E_LOG/p0.err")
[ "$sized" -gt 0 ] || fail "rank 0 never sized its parts by the figures"
pass "$np trainers bitwise equal; slow peer measured at $sfig kbit/s, a fast one at $ffig; $sized sized all-reduces"
