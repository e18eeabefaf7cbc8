"""mpi4py_dtypes.py - derived datatypes and Alltoallv/w through Debian's mpi4py.

Run with /usr/bin/python3 on Open MPI or on mpicollab's Open MPI face
(run_compare.py), with any number of ranks.  Every rank checks its own
results against values computed here; rank 0 prints one line per check
with the number of ranks that passed, so the output can be compared with
Open MPI's, and the exit status is 1 if any check failed anywhere.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
failed = []


def report(what, ok):
    passed = comm.allreduce(1 if ok else 0, op=MPI.SUM)
    if rank == 0:
        print(f"{what:<46} {passed}/{size}", flush=True)
    if passed != size:
        failed.append(what)


# A strided vector: every third double of a 4 x 3 matrix (its first column).
vec = MPI.DOUBLE.Create_vector(4, 1, 3).Commit()
report("vector size and extent", vec.Get_size() == 32 and vec.Get_extent() == (0, 80))
m = np.arange(12, dtype="d").reshape(4, 3) + 100 * rank
col = np.zeros(4)
if size > 1:
    if rank == 0:
        comm.Send([m, 1, vec], dest=1, tag=3)
    if rank == 1:
        comm.Recv([col, 4, MPI.DOUBLE], source=0, tag=3)
report("send a matrix column as a vector", size == 1 or rank != 1
       or list(col) == [0.0, 3.0, 6.0, 9.0])
# Receive into a column: only that column changes.
dst = np.full((4, 3), -1.0)
comm.Bcast([dst if rank else m, 1, vec], root=0)
want = np.full((4, 3), -1.0)
want[:, 0] = [0.0, 3.0, 6.0, 9.0]
report("broadcast into a column", rank == 0 or np.array_equal(dst, want))
# Allgather of columns into columns of a wider matrix, through a resized vector.
colt = MPI.DOUBLE.Create_vector(4, 1, size).Create_resized(0, 8).Commit()
allc = np.zeros((4, size))
comm.Allgather([m[:, 1].copy(), 4, MPI.DOUBLE], [allc, 1, colt])
report("allgather into columns (resized vector)",
       all(np.array_equal(allc[:, r], np.arange(4) * 3 + 1 + 100 * r) for r in range(size)))
colt.Free()

# A struct matching a numpy record: int32, float64, 3 x int16.
rec = np.dtype([("a", "i4"), ("x", "f8"), ("s", "i2", 3)], align=True)
st = MPI.Datatype.Create_struct([1, 1, 3], [rec.fields[f][1] for f in ("a", "x", "s")],
                                [MPI.INT, MPI.DOUBLE, MPI.SHORT])
st = st.Create_resized(0, rec.itemsize).Commit()
report("struct size and extent", st.Get_size() == 18 and st.Get_extent() == (0, rec.itemsize))
comb = st.Get_envelope()[3]
report("struct envelope (resized)", comb == MPI.COMBINER_RESIZED)
mine = np.zeros(2, dtype=rec)
mine["a"] = [rank, rank + 10]
mine["x"] = [rank * 0.5, -rank]
mine["s"] = [[rank, 1, 2], [3, 4, rank]]
got = np.zeros(2 * size, dtype=rec)
comm.Allgather([mine, 2, st], [got, 2, st])
ok = all(got["a"][2 * r] == r and got["x"][2 * r + 1] == -r and got["s"][2 * r + 1][2] == r
         for r in range(size))
report("allgather of a struct", ok)
buf = bytearray(st.Pack_size(2, comm))
pos = st.Pack(mine, buf, 0, comm)
back = np.zeros(2, dtype=rec)
st.Unpack(buf, 0, back, comm)
report("pack and unpack a struct", pos == 36 and back.tobytes() == mine.tobytes())
st.Free()

# Alltoallv: rank r sends r + j + 1 ints to rank j.
sc = np.array([rank + j + 1 for j in range(size)], dtype="i")
sd = np.concatenate([[0], np.cumsum(sc)[:-1]]).astype("i")
rc = np.array([j + rank + 1 for j in range(size)], dtype="i")
rd = np.concatenate([[0], np.cumsum(rc)[:-1]]).astype("i")
sbuf = np.concatenate([np.full(sc[j], rank * 100 + j, dtype="i") for j in range(size)])
rbuf = np.full(rc.sum(), -1, dtype="i")
comm.Alltoallv([sbuf, (sc, sd), MPI.INT], [rbuf, (rc, rd), MPI.INT])
want = np.concatenate([np.full(rc[j], j * 100 + rank, dtype="i") for j in range(size)])
report("Alltoallv", np.array_equal(rbuf, want))
rbuf[:] = -1
comm.Ialltoallv([sbuf, (sc, sd), MPI.INT], [rbuf, (rc, rd), MPI.INT]).Wait()
report("Ialltoallv", np.array_equal(rbuf, want))
# Alltoallw: one double and one int to each rank, byte displacements.
sw = np.zeros(size, dtype=np.dtype([("d", "f8"), ("i", "i4")], align=False))
sw["d"] = [rank + j / 10 for j in range(size)]
sw["i"] = [rank * 10 + j for j in range(size)]
pair = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.INT]).Create_resized(0, 12)
pair = pair.Commit()
rw = np.zeros(size, dtype=sw.dtype)
counts = [1] * size
displs = [12 * j for j in range(size)]
comm.Alltoallw([sw, (counts, displs), [pair] * size], [rw, (counts, displs), [pair] * size])
report("Alltoallw", all(rw["d"][j] == j + rank / 10 and rw["i"][j] == j * 10 + rank
                        for j in range(size)))
pair.Free()

# Nonblocking prefix reductions.
x = np.array([rank + 1, 2], dtype="i")
y = np.zeros(2, dtype="i")
comm.Iscan(x, y, op=MPI.SUM).Wait()
report("Iscan", y[0] == (rank + 1) * (rank + 2) // 2 and y[1] == 2 * (rank + 1))
y[:] = -5
comm.Iexscan(x, y, op=MPI.SUM).Wait()
report("Iexscan", rank == 0 or (y[0] == rank * (rank + 1) // 2 and y[1] == 2 * rank))
vec.Free()

if rank == 0:
    print("failed: " + (", ".join(failed) if failed else "none"), flush=True)
sys.exit(1 if failed else 0)
