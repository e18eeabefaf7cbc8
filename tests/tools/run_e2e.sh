# collab-run end to end with the real library: an MPICH-built program
# doing MPI_Allreduce on 3 peers (and mpi4py on the Open MPI face, when
# that face and mpi4py are there).  Skipped until the library is built.
. "$(dirname "$0")/lib.sh"

LIB=${CR_TEST_LIBDIR:-}
if [ -z "$LIB" ] || [ ! -f "$LIB/libmpicollab.so" ]; then
    echo "no $LIB/libmpicollab.so yet: end-to-end test skipped"
    exit 77
fi
PROG=$CR_TEST_BIN/e2e_allreduce_mpich
[ -x "$PROG" ] || { echo "e2e_allreduce_mpich not built (no mpicc.mpich)"; exit 77; }

cr -n 3 --timeout 50 --tag-output --libdir "$LIB" "$PROG"
expect_rc 0
for r in 0 1 2; do
    expect_out "^\[$r\] e2e rank $r of 3 sum 6 expected 6$"
done

PY=${CR_TEST_PYTHON:-/usr/bin/python3}
if [ -f "$LIB/libmpicollab-ompi.so" ] && "$PY" -c 'import mpi4py, numpy' 2>/dev/null; then
    cat >"$TMP/e2e.py" <<'PYEOF'
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
x = np.array([comm.Get_rank() + 1.0])
y = np.zeros(1)
comm.Allreduce(x, y, op=MPI.SUM)
print("py rank", comm.Get_rank(), "sum", int(y[0]))
PYEOF
    cr -n 2 --timeout 50 --abi ompi --tag-output --libdir "$LIB" "$PY" "$TMP/e2e.py"
    expect_rc 0
    expect_out '^\[0\] py rank 0 sum 3$'
    expect_out '^\[1\] py rank 1 sum 3$'
fi

finish
