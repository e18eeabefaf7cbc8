#!/usr/bin/env bash
# The trainer on 4 peers of mpicollab, in the mode given as $1 (preload or
# replace): every peer ends with bit-identical parameters, and the final
# loss equals real MPICH's up to float rounding (summation order).
. "$(dirname "$0")/lib.sh"
mode=${1:?usage: trainer.sh preload|replace}
need E2E_RUN E2E_TRAINER
collab run 120 -n 4 --mode "$mode" -- "$E2E_TRAINER" --steps "$E2E_STEPS" --log-every 20
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
expect_agreement "$E2E_LOG/run.out" 4
ref=$(ref_loss)
for l in $(losses "$E2E_LOG/run.out"); do
    float_cmp "abs($l - $ref) <= 1e-4 * abs($ref) + 1e-7" ||
        fail "final loss $l differs from MPICH's $ref by more than float rounding"
done
pass "loss $(losses "$E2E_LOG/run.out" | head -n 1) vs MPICH $ref"
