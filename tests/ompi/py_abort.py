"""py_abort.py - comm.Abort(3) from mpi4py ends the process with status 3."""
from mpi4py import MPI

print("before abort", flush=True)
MPI.COMM_WORLD.Abort(3)
print("not reached", flush=True)
