"""wan_tcp.py - raw TCP over the links of bench/wan.sh: what the links
themselves give to an all-reduce's traffic, without mpicollab.

Run once in every peer's namespace (by wan.sh --tcp):

    wan_tcp.py ME N BYTES START
    wan_tcp.py trace PATH

Peer ME (0..N-1, address 10.77.0.ME+1) listens on port 4100, and from the
wall-clock time START on sends BYTES to every other peer over one TCP
connection each, all at once, while receiving as much from each: the
traffic of a bandwidth-optimal all-reduce when BYTES = 2 S / N (each link
carries 2(N-1)/N x S both ways).  Prints the seconds from START until
it has sent and received everything.  `trace PATH` writes the
namespace's link counters (time, rx bytes, tx bytes of /proc/net/dev)
every 50 ms to PATH until killed.
"""
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


def acceptor():
    for _ in range(n - 1):
        c, _ = ls.accept()
        t = threading.Thread(target=receiver, args=(c,))
        t.start()
        rx.append(t)


rx = []
acc = threading.Thread(target=acceptor)
acc.start()
outs = []
for i in range(n):
    if i == me:
        continue
    for _ in range(200):
        try:
            s = socket.create_connection((addr(i), 4100))
            break
        except OSError:
            time.sleep(0.05)
    outs.append(s)
time.sleep(max(0.0, start - time.time()))
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
