#!/usr/bin/env bash
# The trainer on 4 peers of mpicollab, in the mode given as $1 (preload or
# replace): every peer ends with bit-identical parameters, and the final
# loss equals real MPICH's up to float rounding (summation order).
#   striped  preloaded, over the network path (COLLAB_SHM=0) with four
#            connections per link (COLLAB_STRIPES=4, docs/wire.md §1.1) and
#            layers of 1 MiB (--hidden 512), whose all-reduces the stripes
#            carry: the same against MPICH run here with those layers, and
#            the peers' logs show the stripes that came up.
. "$(dirname "$0")/lib.sh"
mode=${1:?usage: trainer.sh preload|replace|striped}
need E2E_RUN E2E_TRAINER
args=(--steps "$E2E_STEPS" --log-every 20)
striped=0
if [ "$mode" = striped ]; then
    need E2E_MPIEXEC
    striped=1 mode=preload
    args=(--steps 30 --hidden 512 --log-every 10)
    run_logged mpich 300 "$E2E_MPIEXEC" -n 4 "$E2E_TRAINER" "${args[@]}"
    [ "$status" -eq 0 ] || fail "the trainer failed on MPICH (status $status)"
    export COLLAB_STRIPES=4 COLLAB_SHM=0 COLLAB_LOG=debug
fi
collab run 120 -n 4 --mode "$mode" -- "$E2E_TRAINER" "${args[@]}"
[ "$status" -eq 0 ] || fail "collab-run exited with status $status"
if [ "$striped" = 1 ]; then
    n=$(cat "$E2E_LOG/run.out" "$E2E_LOG/run.err" | grep -c 'opened a stripe of its link' || true)
    [ "$n" -ge 3 ] || fail "only $n stripes came up (COLLAB_STRIPES=4)"
    say "$n stripes came up"
fi
expect_agreement "$E2E_LOG/run.out" 4
ref=$(ref_loss)
[ "$striped" = 1 ] && ref=$(losses "$E2E_LOG/mpich.out" | head -n 1)
for l in $(losses "$E2E_LOG/run.out"); do
    float_cmp "abs($l - $ref) <= 1e-4 * abs($ref) + 1e-7" ||
        fail "final loss $l differs from MPICH's $ref by more than float rounding"
done
pass "loss $(losses "$E2E_LOG/run.out" | head -n 1) vs MPICH $ref"
