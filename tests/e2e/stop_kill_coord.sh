#!/usr/bin/env bash
# A peer stopped long enough to be taken out, while the coordinator is
# killed (soak seed 1, round 22): rank 2 is stopped (SIGSTOP) for 9 s and
# rank 0 killed at once.  Ranks 1 and 3 take both out and go on as a
# group of two.  Rank 2, back, asks the members of its last view (PROBE);
# only 2 of its 4 can answer, no majority, so their newer view does not
# count at once (docs/security.md §4).  It must start no collective
# meanwhile, must not take 1 and 3 out for a silence (they answered), and
# must end up re-admitted by them with their state: all three finish with
# bit-identical parameters.  Default COLLAB_TIMEOUT
# (5 s): the round after the pause lasts 20 s, so the others train long
# enough to still be there.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
unset COLLAB_TIMEOUT
collab run 200 -n 4 \
    --chaos 'stop:2@line:0:step 30 +9' \
    --chaos 'kill:0@line:0:step 30 ' \
    -- "$E2E_TRAINER" --steps 700 --sleep-ms 60 --log-every 10
log="$E2E_LOG/run.out"
err="$E2E_LOG/run.err"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
grep -q 'collab-run: chaos: SIGKILL rank 0' "$err" || fail "rank 0 was never killed"
grep -q '^\[2\] .*this peer was stopped for' "$err" || fail "rank 2 never saw its own stop"
# Taken out, it finishes the step it is in alone (a straggler's path,
# docs/collectives.md §3) and is re-admitted with the group's state.
grep -q '^\[2\] .*re-admitted at collective' "$err" || fail "rank 2 was never re-admitted"
# Alone it logs its progress "with 1 peer" about every 100 collectives:
# the straggler's one step at most, never a run of its own.
alone=$(grep -c '^\[2\] .*averaged .* with 1 peer' "$err")
[ "$alone" -le 2 ] || fail "rank 2 trained alone ($alone progress lines with 1 peer)"
for r in 1 3; do
    ! grep -q "^\[2\] .*rank $r (.*) failed: it went silent" "$err" ||
        fail "rank 2 took rank $r out as silent although it answered its probe"
done
expect_agreement "$log" 3
pass
