#!/usr/bin/env bash
# Robust aggregation against a member that scales its gradients by 1000:
# with COLLAB_AGGREGATION=mean the training is ruined (final loss at least
# 2x MPICH's fault-free loss, or not finite), which shows that the test
# can fail; with centered_clip every peer ends bitwise equal, within 10 %
# of the fault-free loss, on the same 4 peers and data.
. "$(dirname "$0")/lib.sh"
need E2E_RUN E2E_TRAINER
ref=$(ref_loss)
poison=(--scale-rank 3 --scale 1000)

COLLAB_AGGREGATION=mean collab mean 120 -n 4 -- "$E2E_TRAINER" --steps "$E2E_STEPS" \
    --log-every 0 "${poison[@]}"
[ "$status" -eq 0 ] || fail "collab-run (mean) exited with status $status"
expect_agreement "$E2E_LOG/mean.out" 4
l=$(losses "$E2E_LOG/mean.out" | head -n 1)
case "$l" in
*nan* | *inf*) ;; # ruined for good
*) float_cmp "$l >= 2 * $ref" ||
    fail "mean: final loss $l is not ruined by the scaled member (fault-free: $ref)" ;;
esac
say "mean: final loss $l (fault-free $ref)"

COLLAB_AGGREGATION=centered_clip collab clip 120 -n 4 -- "$E2E_TRAINER" --steps "$E2E_STEPS" \
    --log-every 0 "${poison[@]}"
[ "$status" -eq 0 ] || fail "collab-run (centered_clip) exited with status $status"
expect_agreement "$E2E_LOG/clip.out" 4
for l in $(losses "$E2E_LOG/clip.out"); do
    float_cmp "$l == $l and abs($l - $ref) <= 0.10 * $ref" ||
        fail "centered_clip: final loss $l is not within 10 % of the fault-free $ref"
done
pass "centered_clip: final loss $(losses "$E2E_LOG/clip.out" | head -n 1), mean: $(losses "$E2E_LOG/mean.out" | head -n 1), fault-free $ref"
