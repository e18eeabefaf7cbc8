#!/usr/bin/env bash
# The reference: the trainer on real MPICH with 4 ranks.  Records the final
# loss that the other tests compare with (a CTest fixture).
. "$(dirname "$0")/lib.sh"
need E2E_TRAINER E2E_MPIEXEC
rm -f "$E2E_REF"
run_logged mpich 300 "$E2E_MPIEXEC" -n 4 "$E2E_TRAINER" --steps "$E2E_STEPS" --log-every 20
[ "$status" -eq 0 ] || fail "the trainer failed on MPICH (status $status)"
[ "$(count_done "$E2E_LOG/mpich.out")" -eq 4 ] || fail "not every rank finished on MPICH"
loss=$(losses "$E2E_LOG/mpich.out" | head -n 1)
sum=$(done_lines "$E2E_LOG/mpich.out" | grep 'rank 0 ' | sed -n 's/.* checksum \([0-9a-f]*\).*/\1/p')
printf 'loss %s\nchecksum %s\n' "$loss" "$sum" >"$E2E_REF"
pass "MPICH final loss $loss"
