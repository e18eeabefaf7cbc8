"""inert_check.py - a preloaded face does nothing in a process that never calls MPI_Init.

Run with LD_PRELOAD=libmpicollab-ompi.so: the process must have exactly one
thread, no sockets and no "[collab]" output, also after importing numpy
(which loads many libraries) and spawning a child that inherits the
preload.
"""
import os
import subprocess
import sys

import numpy  # noqa: F401  (loads a lot of shared objects under the preload)



def fd_targets():
    """Targets of this process's open descriptors (the one listdir used is
    gone by the time it is read)."""
    out = []
    for f in os.listdir("/proc/self/fd"):
        try:
            out.append(os.readlink(f"/proc/self/fd/{f}"))
        except FileNotFoundError:
            pass
    return out


threads = len(os.listdir("/proc/self/task"))
sockets = [t for t in fd_targets() if t.startswith("socket:")]
child = subprocess.run(["/bin/echo", "child ok"], capture_output=True, text=True)
preload = os.environ.get("LD_PRELOAD", "")
ok = (threads == 1 and not sockets and child.returncode == 0 and child.stdout == "child ok\n"
      and "[collab]" not in child.stderr and "mpicollab-ompi" in preload)
print(f"threads {threads} sockets {len(sockets)} child rc {child.returncode}")
sys.exit(0 if ok else 1)
