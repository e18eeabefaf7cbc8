"""mpi4py_basic.py - what Debian's mpi4py does, checked on any Open MPI-ABI MPI.

Run with /usr/bin/python3 (Debian's mpi4py 3.1, built for Open MPI 4.1),
either on Open MPI itself or on mpicollab (LD_PRELOAD=libmpicollab-ompi.so,
or LD_LIBRARY_PATH=<build>/lib/mpicollab), with any number of ranks.  Every
rank checks its own results; rank 0 prints one line per check with the
number of ranks that passed, and the exit status is 1 if any check failed
anywhere, so the output can be compared with Open MPI's.
"""
import sys
import threading

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


def raises(cls, fn):
    """True if fn() raises MPI.Exception of error class cls."""
    try:
        fn()
    except MPI.Exception as e:
        return e.Get_error_class() == cls
    return False


if rank == 0:
    print(f"size {size}", flush=True)
report("initialized, thread level multiple",
       MPI.Is_initialized() and MPI.Query_thread() == MPI.THREAD_MULTIPLE)
report("handles compare", comm == MPI.COMM_WORLD and comm != MPI.COMM_SELF
       and MPI.COMM_NULL != comm and MPI.SUM != MPI.MAX)

# --- buffer collectives on numpy arrays --------------------------------
for dtype in (np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8):
    a = np.arange(5, dtype=dtype) + rank
    out = np.zeros_like(a)
    comm.Allreduce(a, out, op=MPI.SUM)
    want = np.arange(5, dtype=np.float64) * size + size * (size - 1) / 2
    report(f"Allreduce SUM {np.dtype(dtype).name}", np.array_equal(out, want.astype(dtype)))

g = np.full(7, float(rank))
comm.Allreduce(MPI.IN_PLACE, g, op=MPI.MAX)
report("Allreduce IN_PLACE MAX", np.all(g == size - 1))

p = np.arange(10, dtype=np.float64) if rank == 0 else np.zeros(10)
comm.Bcast(p, root=0)
report("Bcast float64 from 0", np.array_equal(p, np.arange(10)))

mine = np.array([rank, rank * rank], dtype=np.int32)
allv = np.zeros((size, 2), dtype=np.int32)
comm.Allgather(mine, allv)
report("Allgather int32", all(allv[r, 1] == r * r for r in range(size)))

red = np.zeros(3)
comm.Reduce(np.ones(3), red if rank == 0 else None, op=MPI.SUM, root=0)
report("Reduce to root", rank != 0 or np.all(red == size))

acc = np.ones(3)
if rank == 0:
    comm.Reduce(MPI.IN_PLACE, acc, op=MPI.SUM, root=0)
else:
    comm.Reduce(acc, None, op=MPI.SUM, root=0)
report("Reduce IN_PLACE at root", rank != 0 or np.all(acc == size))

nb = np.zeros(4)
req = comm.Iallreduce(np.ones(4), nb, op=MPI.SUM)
req.Wait()
report("Iallreduce + Wait", np.all(nb == size))
nb2 = np.zeros(4)
req = comm.Iallreduce(np.full(4, 2.0), nb2, op=MPI.SUM)
while not req.Test():
    pass
report("Iallreduce + Test", np.all(nb2 == 2 * size))

comm.Barrier()
report("Barrier", True)

# --- pickle-based collectives and point-to-point -----------------------
report("allreduce(int)", comm.allreduce(rank, op=MPI.SUM) == size * (size - 1) // 2)
report("allreduce(float, MAX)", comm.allreduce(rank * 0.5, op=MPI.MAX) == (size - 1) * 0.5)
obj = comm.bcast({"step": 3, "name": "x" * 1000} if rank == 0 else None, root=0)
report("bcast(dict)", obj == {"step": 3, "name": "x" * 1000})
report("allgather(tuple)", comm.allgather((rank, "r")) == [(r, "r") for r in range(size)])
gathered = comm.gather(rank * 2, root=0)
report("gather(int)", gathered == ([2 * r for r in range(size)] if rank == 0 else None))
report("scatter(list)", comm.scatter([f"s{r}" for r in range(size)] if rank == 0 else None,
                                     root=0) == f"s{rank}")
report("reduce(int)", comm.reduce(1, op=MPI.SUM, root=0) == (size if rank == 0 else None))
sreq = comm.isend({"from": rank}, dest=(rank + 1) % size, tag=5)
got = comm.recv(source=(rank - 1) % size, tag=5)
sreq.wait()
report("isend/recv ring (Mprobe/Mrecv)", got == {"from": (rank - 1) % size})
buf = np.zeros(3)
rreq = comm.Irecv(buf, source=MPI.ANY_SOURCE, tag=9)
comm.Send(np.full(3, float(rank)), dest=(rank + 1) % size, tag=9)
st = MPI.Status()
rreq.Wait(st)
report("Send/Irecv with status", st.Get_source() == (rank - 1) % size and st.Get_tag() == 9
       and st.Get_count(MPI.DOUBLE) == 3 and np.all(buf == (rank - 1) % size))

# --- communicators, attributes, datatypes ------------------------------
dup = comm.Dup()
report("Dup: congruent, errors raise", MPI.Comm.Compare(comm, dup) == MPI.CONGRUENT
       and raises(MPI.ERR_ROOT, lambda: dup.Bcast(np.zeros(1), root=size)))
half = comm.Split(rank % 2, rank)
report("Split by parity", half.Get_size() == (size + 1 - rank % 2) // 2
       and half.Get_rank() == rank // 2)
half.Free()
dup.Free()
report("Free", dup == MPI.COMM_NULL)

tag_ub = comm.Get_attr(MPI.TAG_UB)
report("TAG_UB attribute", tag_ub is not None and tag_ub >= 32767)
deleted = []
kv = MPI.Comm.Create_keyval(delete_fn=lambda c, k, v: deleted.append(v))
c2 = comm.Dup()
c2.Set_attr(kv, "payload")
val = c2.Get_attr(kv)
c2.Delete_attr(kv)
c2.Free()
MPI.Comm.Free_keyval(kv)
report("keyval set/get/delete callback", val == "payload" and deleted == ["payload"])

report("type sizes", MPI.DOUBLE.Get_size() == 8 and MPI.INT.Get_size() == 4
       and MPI.DOUBLE_INT.Get_extent() == (0, 16) and MPI.LONG_DOUBLE_INT.Get_size() == 20)


def py2f_roundtrip():
    d = comm.Dup()
    try:
        return (MPI.Comm.f2py(comm.py2f()) == comm and MPI.Comm.f2py(d.py2f()) == d
                and MPI.Datatype.f2py(MPI.DOUBLE.py2f()) == MPI.DOUBLE
                and MPI.Op.f2py(MPI.SUM.py2f()) == MPI.SUM and comm.py2f() == 0
                and MPI.DOUBLE.py2f() == 46 and MPI.SUM.py2f() == 3)
    except MPI.Exception as e:
        print(f"  py2f/f2py: {e}", flush=True)
        return False
    finally:
        d.Free()


report("py2f/f2py (Open MPI's Fortran numbers)", py2f_roundtrip())

# --- MPI_THREAD_MULTIPLE: two threads, a communicator each ---------------
results = {}


def worker(c, key):
    a = np.full(1000, float(rank + 1))
    for _ in range(10):
        c.Allreduce(MPI.IN_PLACE, a, op=MPI.MAX)
    results[key] = a[0]


pair = [comm.Dup(), comm.Dup()]
threads = [threading.Thread(target=worker, args=(c, i)) for i, c in enumerate(pair)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for c in pair:
    c.Free()
report("two threads, Allreduce on two communicators", results == {0: size, 1: size})

# --- errors --------------------------------------------------------------
out = np.zeros(2)
report("OP_NULL -> MPI.Exception ERR_OP",
       raises(MPI.ERR_OP, lambda: comm.Allreduce(np.ones(2), out, op=MPI.OP_NULL)))
report("root out of range -> ERR_ROOT",
       raises(MPI.ERR_ROOT, lambda: comm.Bcast(np.zeros(1), root=size)))
try:
    comm.Allreduce(np.ones(2), out, op=MPI.OP_NULL)
except MPI.Exception as e:
    if rank == 0:
        print(f"  str(MPI.Exception): {e}", flush=True)
t0 = MPI.Wtime()
report("Wtime advances", MPI.Wtime() >= t0 and MPI.Wtick() > 0)

if rank == 0:
    print("failed: " + (", ".join(failed) if failed else "none"), flush=True)
sys.exit(1 if failed else 0)
