/*  cl_topo.c - where threads run: hwloc helpers for the engine and collab-run.

    Both helpers load a fresh hwloc topology (about a millisecond without
    I/O objects, a few with them) and destroy it before returning, so no
    hwloc state outlives a call and nothing runs at library load time.

    Engine placement: a thread whose affinity already excludes some of the
    cores this process may use has been placed on purpose (collab-run's
    spread, taskset, numactl, the trainer's own pinning inherited by the
    engine thread); it is left alone.  Otherwise the engine is bound to the
    last core of the hwloc object that holds the first non-loopback network
    card (its NUMA node, or the package or machine when hwloc knows no
    closer one).  Trainers and their thread pools fill cores from 0 up, so
    the last core near the NIC is the least contended useful one.

    Spreading: the cores this process may use (cgroup cpuset and current
    affinity) are cut into n contiguous blocks, which keeps a peer's cores
    on one NUMA node whenever the blocks allow it; with more peers than
    cores, hardware threads are dealt one per peer, first threads first.
*/
#include "util/cl_topo.h"

#include "util/cl_log.h"

#include <hwloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static hwloc_topology_t s_load(bool with_io)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return NULL;
    if (with_io) {
        hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        /* Network cards are all we look for.  The GPU components would
           initialise CUDA, OpenCL or GL inside the trainer's process, and
           the libpciaccess-based "pci" component leaks and finds nothing
           the Linux backend does not read from sysfs itself. */
        static const char *const skip[] = {"pci",    "cuda", "nvml",     "rsmi",
                                           "opencl", "gl",   "levelzero"};
        for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
            hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, skip[i]);
    }
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return NULL;
    }
    return topo;
}

/* The first network card hwloc knows (hwloc lists no loopback device, but
   a card named "lo" is skipped anyway), or NULL. */
static hwloc_obj_t s_first_nic(hwloc_topology_t topo)
{
    for (hwloc_obj_t dev = hwloc_get_next_osdev(topo, NULL); dev != NULL;
         dev = hwloc_get_next_osdev(topo, dev)) {
        if (dev->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && dev->name != NULL &&
            strcmp(dev->name, "lo") != 0)
            return dev;
    }
    return NULL;
}

int cl_topo_place_engine_thread(void)
{
    int bound = 0;
    char where[256] = "";
    hwloc_topology_t topo = s_load(true);
    if (topo == NULL) {
        cl_debug("engine thread left unbound: hwloc cannot read this machine");
        return 0;
    }
    hwloc_bitmap_t current = hwloc_bitmap_alloc();
    hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
    if (current == NULL || hwloc_get_cpubind(topo, current, HWLOC_CPUBIND_THREAD) != 0) {
        cl_debug("engine thread left unbound: hwloc cannot read its binding");
        goto out;
    }
    if (!hwloc_bitmap_isincluded(allowed, current)) {
        hwloc_bitmap_list_snprintf(where, sizeof where, current);
        cl_debug("engine thread stays on the cpus this process was given (%s)", where);
        goto out;
    }
    if (hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) < 2) {
        cl_debug("engine thread left unbound: fewer than two cores");
        goto out;
    }
    hwloc_obj_t nic = s_first_nic(topo);
    if (nic == NULL) {
        cl_debug("engine thread left unbound: hwloc sees no network card");
        goto out;
    }
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, nic);
    int ncores = near != NULL
                     ? hwloc_get_nbobjs_inside_cpuset_by_type(topo, near->cpuset, HWLOC_OBJ_CORE)
                     : 0;
    hwloc_obj_t core = ncores > 0 ? hwloc_get_obj_inside_cpuset_by_type(
                                        topo, near->cpuset, HWLOC_OBJ_CORE, (unsigned)ncores - 1)
                                  : NULL;
    if (core == NULL) {
        cl_debug("engine thread left unbound: no core near network card %s", nic->name);
        goto out;
    }
    hwloc_bitmap_list_snprintf(where, sizeof where, core->cpuset);
    if (hwloc_set_cpubind(topo, core->cpuset, HWLOC_CPUBIND_THREAD) != 0) {
        cl_debug("engine thread left unbound: binding to cpus %s failed: %m", where);
        goto out;
    }
    cl_debug("engine thread bound to cpus %s, near network card %s", where, nic->name);
    bound = 1;
out:
    hwloc_bitmap_free(current);
    hwloc_topology_destroy(topo);
    return bound;
}

int cl_topo_spread(int index, int n, char *cpulist, size_t len)
{
    if (n < 1 || index < 0 || index >= n || cpulist == NULL || len == 0)
        return -1;
    hwloc_topology_t topo = s_load(false);
    if (topo == NULL)
        return -1;
    int rc = -1;
    hwloc_obj_t *cores = NULL, *pus = NULL;
    hwloc_bitmap_t domain = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
    hwloc_bitmap_t binding = hwloc_bitmap_alloc();
    hwloc_bitmap_t result = hwloc_bitmap_alloc();
    if (domain == NULL || binding == NULL || result == NULL)
        goto out;
    /* Stay inside the affinity collab-run itself was started with. */
    if (hwloc_get_cpubind(topo, binding, HWLOC_CPUBIND_PROCESS) == 0 &&
        hwloc_bitmap_intersects(domain, binding))
        hwloc_bitmap_and(domain, domain, binding);

    /* Cores (or PUs, where hwloc knows no cores) that meet the domain. */
    hwloc_obj_type_t unit =
        hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int nunits = hwloc_get_nbobjs_by_type(topo, unit);
    int npus_all = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    if (nunits <= 0 || npus_all <= 0)
        goto out;
    cores = calloc((size_t)nunits, sizeof *cores);
    pus = calloc((size_t)npus_all, sizeof *pus);
    if (cores == NULL || pus == NULL)
        goto out;
    int ncores = 0;
    for (int i = 0; i < nunits; i++) {
        hwloc_obj_t c = hwloc_get_obj_by_type(topo, unit, (unsigned)i);
        if (c != NULL && c->cpuset != NULL && hwloc_bitmap_intersects(c->cpuset, domain))
            cores[ncores++] = c;
    }
    if (ncores == 0)
        goto out;

    if (n <= ncores) {
        int first = (int)((long)index * ncores / n);
        int last = (int)((long)(index + 1) * ncores / n); /* exclusive */
        for (int i = first; i < last; i++)
            hwloc_bitmap_or(result, result, cores[i]->cpuset);
        hwloc_bitmap_and(result, result, domain);
    } else {
        /* Deal hardware threads: thread 0 of every core, then thread 1... */
        int npus = 0;
        for (int t = 0; npus < npus_all; t++) {
            int added = 0;
            for (int i = 0; i < ncores && npus < npus_all; i++) {
                int k = 0;
                hwloc_obj_t pu = NULL;
                while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(topo, cores[i]->cpuset,
                                                                      HWLOC_OBJ_PU, pu)) != NULL) {
                    if (!hwloc_bitmap_isset(domain, pu->os_index))
                        continue;
                    if (k++ == t) {
                        pus[npus++] = pu;
                        added++;
                        break;
                    }
                }
            }
            if (added == 0)
                break;
        }
        if (npus == 0)
            goto out;
        hwloc_bitmap_only(result, pus[index % npus]->os_index);
    }
    int need = hwloc_bitmap_list_snprintf(cpulist, len, result);
    if (need > 0 && (size_t)need < len)
        rc = 0;
out:
    if (rc != 0)
        cpulist[0] = '\0';
    free(cores);
    free(pus);
    hwloc_bitmap_free(domain);
    hwloc_bitmap_free(binding);
    hwloc_bitmap_free(result);
    hwloc_topology_destroy(topo);
    return rc;
}
