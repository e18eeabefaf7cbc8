"""wan_tcp.py - raw TCP over the links of bench/wan.sh: what the links
themselves give to an all-reduce's traffic, without mpicollab.

Run once in every peer's namespace (by wan.sh --tcp):

    wan_tcp.py ME N BYTES START
    wan_tcp.py trace PATH

Peer ME (0..N-1, address 10.77.0.ME+1) listens on port 4100, and from the
wall-clock time START on sends BYTES to every other peer over one TCP
connection each, all at once, while receiving as much from each: the
traffic of a bandwidth-optimal all-reduce when BYTES = 2 S / N (each link
carries 2(N-1)/N x S both ways).  WAN_TCP_MODE says how: `all` (the
default) one thread per connection, as TCP shares the upload; `balanced`
one thread that keeps every connection within 512 KiB of the one that
sent least; `ring` one connection, to peer ME+1, carrying (N-1) x BYTES
(a ring all-reduce's traffic without its waits).  Prints the seconds
from START until it has sent and received everything.  `trace PATH` writes the
namespace's link counters (time, rx bytes, tx bytes of /proc/net/dev)
every 50 ms to PATH until killed.
"""
import os
import socket
import sys
import threading
import time



def sampler(path):
    with open(path, "w", buffering=1) as f:
        while True:
            with open("/proc/net/dev") as d:
                for line in d:
                    name, _, rest = line.partition(":")
                    if name.strip().startswith("p"):
                        v = rest.split()
                        f.write("%.3f %s %s\n" % (time.time(), v[0], v[8]))
            time.sleep(0.05)


if sys.argv[1] == "trace":
    sampler(sys.argv[2])
me, n, nbytes, start = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
addr = lambda i: "10.77.0.%d" % (i + 1)
mode = os.environ.get("WAN_TCP_MODE", "all")
if mode not in ("all", "balanced", "ring"):
    sys.exit("wan_tcp.py: WAN_TCP_MODE must be all, balanced or ring, not %r" % mode)


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr(me), 4100))
ls.listen(n)


def receiver(c):
    got = 0
    while got < nbytes:
        b = c.recv(1 << 20)
        if not b:
            break
        got += len(b)
    c.close()


def sender(s):
    buf = memoryview(b"\0" * (1 << 20))
    left = nbytes
    while left > 0:
        left -= s.send(buf[: min(left, len(buf))])


def balanced(socks):
    """One thread feeds every connection, never one more than SLACK bytes
    ahead of the one that has sent least: each destination gets an equal
    share of this peer's upload, whatever TCP's flows would take."""
    import select
    slack = 1 << 19
    buf = memoryview(b"\0" * (1 << 16))
    sent = [0] * len(socks)
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 18)
        s.setblocking(False)
    while min(sent) < nbytes:
        low = min(x for x in sent if x < nbytes)
        ok = [s for k, s in enumerate(socks) if sent[k] < nbytes and sent[k] <= low + slack]
        _, w, _ = select.select([], ok, [], 1.0)
        for s in w:
            k = socks.index(s)
            try:
                sent[k] += s.send(buf[: min(nbytes - sent[k], len(buf))])
            except BlockingIOError:
                pass
    for s in socks:
        s.setblocking(True)


def acceptor():
    for _ in range(n - 1):
        c, _ = ls.accept()
        t = threading.Thread(target=receiver, args=(c,))
        t.start()
        rx.append(t)


rx = []
if mode == "ring":
    # One flow per link: the whole 2(n-1)/n x S of a ring all-reduce to
    # the next peer, as much from the one before.
    nbytes *= n - 1
    dests = [(me + 1) % n]
    n = 2  # one connection to accept
else:
    dests = [i for i in range(n) if i != me]
acc = threading.Thread(target=acceptor)
acc.start()
outs = []
for i in dests:
    for _ in range(200):
        try:
            s = socket.create_connection((addr(i), 4100))
            break
        except OSError:
            time.sleep(0.05)
    outs.append(s)
time.sleep(max(0.0, start - time.time()))
if mode == "balanced":
    balanced(outs)
else:
    tx = [threading.Thread(target=sender, args=(s,)) for s in outs]
    for t in tx:
        t.start()
    for t in tx:
        t.join()
acc.join()
for t in rx:
    t.join()
print("%.4f" % (time.time() - start))
for s in outs:
    s.close()
