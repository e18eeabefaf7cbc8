/*  cl_topo.h - where threads run: hwloc helpers for the engine and collab-run.

    The engine thread should run near the network card and away from the
    cores the trainer computes on; collab-run, which starts several peers
    on one machine, gives each its own share of the cores.  Both work on
    any machine: when hwloc cannot tell (no NIC, a container, an unusual
    kernel) they say so in the debug log and leave things as they are.
*/
#ifndef CL_TOPO_H_INCLUDED
#define CL_TOPO_H_INCLUDED

#include <stddef.h>

/* Binds the calling thread (the engine's) to one core, unless the process
   is already restricted to a subset of the machine's cores (collab-run or
   the user placed it: we stay inside that placement and change nothing).
   The core chosen is the last one of the NUMA node nearest to the first
   network card that hwloc sees (loopback is not a card), which is where
   trainers, starting at core 0, put their threads last.  Never fails the
   caller: returns 1 when the thread was bound, 0 when it was left alone
   (reason logged at debug level). */
int cl_topo_place_engine_thread(void);

/* Writes into cpulist the cores that peer `index` of `n` peers on this
   machine should run on, as a Linux cpu list ("0-3,8-11", OS numbering,
   the syntax of taskset -c and of /sys).  With n no larger than the number
   of cores, each peer gets a contiguous block of whole cores (all their
   hardware threads), blocks differing in size by one at most; with more
   peers than cores, peers are dealt round-robin over the hardware threads,
   one each, the first thread of every core first.  Only cores this process
   may use count.  Returns 0, or -1 on bad arguments (index outside 0..n-1,
   n < 1), a buffer too small, or when hwloc cannot read the machine. */
int cl_topo_spread(int index, int n, char *cpulist, size_t len);

#endif
