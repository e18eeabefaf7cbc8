#!/usr/bin/env python3
"""Data-parallel PyTorch training on the GPU through mpi4py (gpu-check.sh
stage `torch`).

Every peer builds the same small network on its GPU (chosen by the local
rank that collab-run sets), from its OWN random initial values; rank 0's
parameters reach everyone through comm.Bcast of the CUDA tensors, and a
step counter through a Bcast of a host array, both at start-up.  Each
step: a batch of this rank's synthetic data, backward, one in-place
comm.Allreduce of all gradients (flattened into one CUDA tensor), division
by the world size (MPI_SUM with absent ranks is size x the mean of those
present), an SGD step.

Run with a kill and a join: the joiner's start-up Bcasts are served from
the veterans' live device contents, so it starts from the swarm's current
parameters and step; had it kept its own initial values, its final
parameters would differ.  Every peer that finishes prints

    PARAMS rank <r> start <first step> steps <last step> sha256 <hex>

and the check compares the hashes (bitwise equality of the parameters).
"""
import argparse
import hashlib
import os
import sys
import time

import numpy as np
import torch
from mpi4py import MPI


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--sleep-ms", type=float, default=20.0)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local % torch.cuda.device_count())
    dev = torch.device("cuda")
    # No deterministic kernels are needed: every peer applies the same
    # all-reduced gradient to the same parameters, element by element.

    # Each process draws its own initial values (seeded by its pid):
    # only the broadcast makes them equal.
    torch.manual_seed(os.getpid())
    model = torch.nn.Sequential(
        torch.nn.Linear(32, args.hidden), torch.nn.Tanh(), torch.nn.Linear(args.hidden, 1)
    ).to(dev)
    params = list(model.parameters())
    for p in params:
        comm.Bcast(p.data, root=0)
    step = np.zeros(1, dtype=np.int64)
    comm.Bcast(step, root=0)
    first = int(step[0])
    print(f"rank {rank} pid {os.getpid()} starts at step {first}", flush=True)

    opt = torch.optim.SGD(params, lr=0.05)
    w_true = torch.linspace(-1, 1, 32, device=dev)
    flat = torch.zeros(sum(p.numel() for p in params), device=dev)
    while step[0] < args.steps:
        g = torch.Generator(device=dev)
        g.manual_seed(int(step[0]) * 1000 + rank)
        x = torch.randn(64, 32, device=dev, generator=g)
        y = torch.sin(x @ w_true)[:, None]
        opt.zero_grad()
        loss = torch.mean((model(x) - y) ** 2)
        loss.backward()
        off = 0
        for p in params:
            n = p.numel()
            flat[off:off + n].copy_(p.grad.reshape(-1))
            off += n
        comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
        flat /= size
        off = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[off:off + n].view_as(p))
            off += n
        opt.step()
        if step[0] % 20 == 0:
            print(f"step {int(step[0])} rank {rank} loss {loss.item():.6f}", flush=True)
        step[0] += 1
        if args.sleep_ms > 0:
            time.sleep(args.sleep_ms / 1000.0)

    torch.cuda.synchronize()
    blob = b"".join(p.detach().cpu().numpy().tobytes() for p in params)
    digest = hashlib.sha256(blob).hexdigest()
    print(f"PARAMS rank {rank} start {first} steps {int(step[0])} sha256 {digest}", flush=True)
    comm.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
