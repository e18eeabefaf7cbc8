#!/usr/bin/env python3
"""Hosts torch's TCPStore for gpu-check.sh stage `ddp`, in a process of its
own: no trainer hosts it, so that killing any trainer (rank 0 included)
leaves the store to the others and to joiners.  Prints "STORE ready
<port>" once it listens, then serves until killed.
"""
import argparse
import datetime
import signal
import sys

import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    args = ap.parse_args()
    store = dist.TCPStore("127.0.0.1", args.port, args.world, is_master=True,
                          timeout=datetime.timedelta(seconds=300), wait_for_workers=False)
    print(f"STORE ready {args.port}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    del store
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    sys.exit(main())
