#!/usr/bin/env python3
"""A small data-parallel trainer on mpi4py and numpy.

Every rank holds its own shard of a synthetic regression problem and the
same two-layer network.  Rank 0's initial parameters are broadcast to all
ranks; each step, every rank computes gradients on its shard, sums them
over all ranks with an in-place Allreduce, divides by the number of ranks
and takes the same SGD step.  Parameters therefore stay identical on every
rank.

Runs unchanged on any MPI, e.g.

    mpirun -n 4 python3 numpy_trainer.py
    collab-run -n 4 --abi ompi /usr/bin/python3 numpy_trainer.py

and prints, on every rank, the final loss and a checksum of the
parameters (equal on all ranks).
"""
import argparse
import hashlib

import numpy as np
from mpi4py import MPI


def make_shard(rank, n, dim, seed):
    """Synthetic data: y = sin(x . w_true) + noise, a different shard per rank."""
    w_true = np.random.default_rng(seed).standard_normal(dim)
    rng = np.random.default_rng(seed + 1000 + rank)
    x = rng.standard_normal((n, dim))
    y = np.sin(x @ w_true) + 0.05 * rng.standard_normal(n)
    return x, y[:, None]


def init_params(dim, hidden, rng):
    return {
        "w1": rng.standard_normal((dim, hidden)) / np.sqrt(dim),
        "b1": np.zeros(hidden),
        "w2": rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
        "b2": np.zeros(1),
    }


def forward_backward(p, x, y):
    """Mean squared error on this shard and its gradients."""
    h = np.tanh(x @ p["w1"] + p["b1"])
    out = h @ p["w2"] + p["b2"]
    err = out - y
    loss = float(np.mean(err ** 2))
    d_out = 2.0 * err / len(x)
    d_h = (d_out @ p["w2"].T) * (1.0 - h ** 2)
    grads = {
        "w2": h.T @ d_out,
        "b2": d_out.sum(axis=0),
        "w1": x.T @ d_h,
        "b1": d_h.sum(axis=0),
    }
    return loss, grads


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--samples", type=int, default=256, help="samples per rank")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()

    x, y = make_shard(rank, args.samples, args.dim, args.seed)
    # Each rank draws its own initial values; rank 0's win.
    params = init_params(args.dim, args.hidden, np.random.default_rng(args.seed + rank))
    for name in sorted(params):
        comm.Bcast(params[name], root=0)

    loss = 0.0
    for step in range(args.steps):
        loss, grads = forward_backward(params, x, y)
        for name in sorted(grads):
            g = grads[name]
            comm.Allreduce(MPI.IN_PLACE, g, op=MPI.SUM)
            g /= size
            params[name] -= args.lr * g
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss:.6f}", flush=True)

    # A buffer Allreduce (not the pickle-based comm.allreduce) also works
    # while peers come and go.
    total = np.array([loss])
    comm.Allreduce(MPI.IN_PLACE, total, op=MPI.SUM)
    mean_loss = float(total[0]) / size
    flat = np.concatenate([params[k].ravel() for k in sorted(params)])
    checksum = float(np.sum(flat * (1.0 + np.arange(flat.size) % 7)))
    digest = hashlib.sha256(flat.tobytes()).hexdigest()[:16]
    print(f"rank {rank}/{size} final loss {mean_loss:.6f} "
          f"checksum {checksum:.10e} params {digest}", flush=True)


if __name__ == "__main__":
    main()
