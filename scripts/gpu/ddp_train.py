#!/usr/bin/env python3
"""An unchanged PyTorch DDP trainer (gpu-check.sh stage `ddp`), run with
the NCCL face preloaded: init_process_group("nccl") through a TCPStore
that another process hosts (ddp_store.py), DistributedDataParallel, SGD.

RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from the environment,
as torchrun would set them (the stage sets them itself: torchrun would
restart every worker at a failure).  All peers share the one GPU.  Every
process draws its own initial values (seeded by its pid): only DDP's
start-up broadcast makes them equal.  A step counter lives in a CUDA
tensor that is broadcast from rank 0 at start-up and advanced every step,
so that a joiner learns the swarm's step.  Every peer that finishes prints

    PARAMS rank <r> start <first step> steps <last step> sha256 <hex>

and the stage compares the hashes (bitwise equality of the parameters).
"""
import argparse
import datetime
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--sleep-ms", type=float, default=20.0)
    ap.add_argument("--hidden", type=int, default=256)
    args = ap.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    dev = torch.device("cuda")
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=False, timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("nccl", store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))

    torch.manual_seed(os.getpid())
    model = torch.nn.Sequential(
        torch.nn.Linear(32, args.hidden), torch.nn.Tanh(), torch.nn.Linear(args.hidden, 1)
    ).to(dev)
    ddp = DDP(model, device_ids=[dev.index if dev.index is not None else 0])
    step = torch.zeros(1, dtype=torch.int64, device=dev)
    dist.broadcast(step, src=0)
    first = int(step.item())
    print(f"rank {rank} pid {os.getpid()} starts at step {first}", flush=True)

    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    w_true = torch.linspace(-1, 1, 32, device=dev)
    s = first
    while s < args.steps:
        g = torch.Generator(device=dev)
        g.manual_seed(s * 1000 + rank)
        x = torch.randn(64, 32, device=dev, generator=g)
        y = torch.sin(x @ w_true)[:, None]
        opt.zero_grad()
        loss = torch.mean((ddp(x) - y) ** 2)
        loss.backward()  # DDP all-reduces the gradients (ncclAllReduce, ncclSum / world)
        opt.step()
        if s % 20 == 0:
            print(f"step {s} rank {rank} loss {loss.item():.6f}", flush=True)
        step += 1
        s += 1
        if args.sleep_ms > 0:
            time.sleep(args.sleep_ms / 1000.0)

    torch.cuda.synchronize()
    blob = b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())
    digest = hashlib.sha256(blob).hexdigest()
    print(f"PARAMS rank {rank} start {first} steps {s} sha256 {digest}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
