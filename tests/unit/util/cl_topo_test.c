/*  cl_topo_test.c - selftest of cl_topo on the machine it runs on (any
    size, with or without a network card) and on made-up machines that
    hwloc loads from HWLOC_SYNTHETIC and HWLOC_XMLFILE. */
#define _GNU_SOURCE
#include "util/cl_log.h"
#include "util/cl_selftest.h"
#include "util/cl_topo.h"

#include <fcntl.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_dir[256];

/* Parses a Linux cpu list ("0-3,8") into set; returns 0 or -1. */
static int s_parse_list(const char *text, cpu_set_t *set)
{
    CPU_ZERO(set);
    const char *p = text;
    if (*p == '\0')
        return -1;
    while (*p != '\0') {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a >= CPU_SETSIZE)
            return -1;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b >= CPU_SETSIZE)
                return -1;
            p = end;
        }
        for (long i = a; i <= b; i++)
            CPU_SET(i, set);
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return -1;
    }
    return 0;
}

static void test_bad_arguments(void)
{
    char buf[64] = "junk";
    CL_CHECK(cl_topo_spread(0, 0, buf, sizeof buf) == -1);
    CL_CHECK(cl_topo_spread(-1, 2, buf, sizeof buf) == -1);
    CL_CHECK(cl_topo_spread(2, 2, buf, sizeof buf) == -1);
    CL_CHECK(cl_topo_spread(0, 1, NULL, 10) == -1);
    CL_CHECK(cl_topo_spread(0, 1, buf, 0) == -1);
    CL_CHECK(cl_topo_spread(0, 1, buf, 1) == -1); /* no room for any list */
    CL_CHECK(buf[0] == '\0');
}

/* On the real machine: every peer gets a non-empty set of cpus this
   process may use; with no more peers than cores the sets are disjoint
   and cover them all. */
static void test_spread_here(void)
{
    hwloc_topology_t topo;
    hwloc_topology_init(&topo);
    hwloc_topology_load(topo);
    int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    hwloc_topology_destroy(topo);
    CL_CHECK(ncores >= 1 && npus >= ncores);
    cpu_set_t mine;
    CL_CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0);
    printf("this machine: %d cores, %d hardware threads, %d usable\n", ncores, npus,
           CPU_COUNT(&mine));

    for (int n = 1; n <= 2 * npus + 1; n++) {
        cpu_set_t all;
        CPU_ZERO(&all);
        int total = 0;
        for (int i = 0; i < n; i++) {
            char list[1024];
            cpu_set_t set;
            CL_CHECK(cl_topo_spread(i, n, list, sizeof list) == 0);
            CL_CHECK(s_parse_list(list, &set) == 0);
            CL_CHECK(CPU_COUNT(&set) >= 1);
            cpu_set_t inside;
            CPU_AND(&inside, &set, &mine);
            CL_CHECK(CPU_EQUAL(&inside, &set));
            CPU_OR(&all, &all, &set);
            total += CPU_COUNT(&set);
        }
        if (n <= ncores) {
            CL_CHECK(total == CPU_COUNT(&all)); /* disjoint */
            CL_CHECK(CPU_EQUAL(&all, &mine));   /* covering */
        }
    }
}

static void s_expect_spread(int index, int n, const char *expected)
{
    char list[256];
    int rc = cl_topo_spread(index, n, list, sizeof list);
    CL_CHECK(rc == 0);
    CL_CHECK_STREQ(rc == 0 ? list : "(failed)", expected);
    if (rc != 0 || strcmp(list, expected) != 0)
        fprintf(stderr, "  spread(%d, %d)\n", index, n);
}

/* A made-up machine: 2 packages x 4 cores x 2 hardware threads; PU os
   indexes are 0..15 with PUs 2k and 2k+1 on core k. */
static void test_spread_synthetic(void)
{
    setenv("HWLOC_SYNTHETIC", "pack:2 core:4 pu:2", 1);
    s_expect_spread(0, 1, "0-15");
    s_expect_spread(0, 2, "0-7");
    s_expect_spread(1, 2, "8-15");
    s_expect_spread(0, 3, "0-3");
    s_expect_spread(1, 3, "4-9");
    s_expect_spread(2, 3, "10-15");
    s_expect_spread(7, 8, "14-15");
    /* More peers than cores: first threads of all cores, then second. */
    s_expect_spread(0, 16, "0");
    s_expect_spread(1, 16, "2");
    s_expect_spread(7, 16, "14");
    s_expect_spread(8, 16, "1");
    s_expect_spread(15, 16, "15");
    s_expect_spread(16, 20, "0"); /* oversubscribed: round-robin again */
    s_expect_spread(19, 20, "6");
    char tiny[4];
    CL_CHECK(cl_topo_spread(0, 1, tiny, sizeof tiny) == -1); /* "0-15" needs 5 */
    unsetenv("HWLOC_SYNTHETIC");
}

typedef struct {
    int result;
    cpu_set_t before, after;
    int restrict_first; /* pin the thread to one cpu before placing it */
} s_place_t;

static void *s_place_thread(void *arg)
{
    s_place_t *p = arg;
    if (p->restrict_first) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(p->restrict_first - 1, &one);
        sched_setaffinity(0, sizeof one, &one);
    }
    sched_getaffinity(0, sizeof p->before, &p->before);
    p->result = cl_topo_place_engine_thread();
    sched_getaffinity(0, sizeof p->after, &p->after);
    return NULL;
}

static s_place_t s_place(int restrict_first)
{
    s_place_t p;
    memset(&p, 0, sizeof p);
    p.result = -1;
    p.restrict_first = restrict_first;
    pthread_t th;
    CL_CHECK(pthread_create(&th, NULL, s_place_thread, &p) == 0);
    pthread_join(th, NULL);
    return p;
}

static char *s_slurp(const char *path)
{
    static char buf[8192];
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void test_place_here(void)
{
    s_place_t p = s_place(0);
    CL_CHECK(p.result == 0 || p.result == 1);
    if (p.result == 1) {
        /* Bound: to the hardware threads of one core, inside its old set. */
        cpu_set_t inside;
        CPU_AND(&inside, &p.after, &p.before);
        CL_CHECK(CPU_EQUAL(&inside, &p.after));
        CL_CHECK(CPU_COUNT(&p.after) >= 1 && CPU_COUNT(&p.after) < CPU_COUNT(&p.before));
    } else {
        CL_CHECK(CPU_EQUAL(&p.before, &p.after));
    }
    printf("engine placement on this machine: %s\n", p.result == 1 ? "bound" : "left alone");

    /* A thread already placed by someone else is left where it is. */
    cpu_set_t mine;
    sched_getaffinity(0, sizeof mine, &mine);
    if (CPU_COUNT(&mine) >= 2) {
        int last = -1;
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &mine))
                last = i;
        p = s_place(last + 1);
        CL_CHECK(p.result == 0);
        CL_CHECK(CPU_EQUAL(&p.before, &p.after) && CPU_COUNT(&p.after) == 1);
    }
}

/* A made-up machine with a network card on package 0: cores 0-2 on
   package 0, cores 3-5 on package 1.  The engine goes to core 2. */
static const char s_xml_head[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x3f\" complete_cpuset=\"0x3f\" "
    "allowed_cpuset=\"0x3f\" nodeset=\"0x3\" complete_nodeset=\"0x3\" allowed_nodeset=\"0x3\" "
    "gp_index=\"1\">\n";

static void s_xml_package(FILE *f, int pkg, int with_nic)
{
    int gp = 100 * (pkg + 1);
    unsigned mask = 0x7u << (3 * pkg);
    fprintf(f,
            "<object type=\"Package\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
            "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\">\n"
            "<object type=\"NUMANode\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
            "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\" "
            "local_memory=\"1073741824\"/>\n",
            pkg, mask, mask, 1u << pkg, 1u << pkg, gp, pkg, mask, mask, 1u << pkg, 1u << pkg,
            gp + 1);
    for (int c = 0; c < 3; c++) {
        int os = 3 * pkg + c;
        fprintf(f,
                "<object type=\"Core\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
                "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\">\n"
                "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
                "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%d\"/>\n</object>\n",
                os, 1u << os, 1u << os, 1u << pkg, 1u << pkg, gp + 10 + 2 * c, os, 1u << os,
                1u << os, 1u << pkg, 1u << pkg, gp + 11 + 2 * c);
    }
    if (with_nic)
        fprintf(f,
                "<object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"0-1\" depth=\"0\" "
                "bridge_pci=\"0000:[00-00]\">\n"
                "<object type=\"PCIDev\" gp_index=\"%d\" pci_busid=\"0000:00:03.0\" "
                "pci_type=\"0200 [1af4:1041] [1af4:1041] 01\" pci_link_speed=\"0.000000\">\n"
                "<object type=\"OSDev\" gp_index=\"%d\" name=\"eth7\" osdev_type=\"2\"/>\n"
                "</object>\n</object>\n",
                gp + 50, gp + 51, gp + 52);
    fprintf(f, "</object>\n");
}

static void s_xml_machine(const char *path, int nic_package)
{
    FILE *f = fopen(path, "w");
    CL_CHECK(f != NULL);
    if (f == NULL)
        return;
    fputs(s_xml_head, f);
    s_xml_package(f, 0, nic_package == 0);
    s_xml_package(f, 1, nic_package == 1);
    fputs("</object>\n</topology>\n", f);
    fclose(f);
}

static void test_place_made_up(void)
{
    char xml[300], log[300];
    snprintf(xml, sizeof xml, "%s/machine.xml", s_dir);
    snprintf(log, sizeof log, "%s/debug.log", s_dir);
    const struct {
        int nic_package;
        int result;
        const char *says;
    } cases[] = {
        {0, 1, "engine thread bound to cpus 2, near network card eth7"},
        {1, 1, "engine thread bound to cpus 5, near network card eth7"},
        {-1, 0, "engine thread left unbound: hwloc sees no network card"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        s_xml_machine(xml, cases[i].nic_package);
        setenv("HWLOC_XMLFILE", xml, 1);
        unlink(log);
        cl_log_configure(CL_LOG_DEBUG, log);
        s_place_t p = s_place(0);
        cl_log_configure(CL_LOG_INFO, NULL);
        unsetenv("HWLOC_XMLFILE");
        CL_CHECK(p.result == cases[i].result);
        CL_CHECK_CONTAINS(s_slurp(log), cases[i].says);
        /* hwloc does not bind for real on a machine read from XML. */
        CL_CHECK(CPU_EQUAL(&p.before, &p.after));
    }
    unlink(xml);
    unlink(log);
}

int main(void)
{
    snprintf(s_dir, sizeof s_dir, "/tmp/cl_topo_test.XXXXXX");
    if (mkdtemp(s_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    /* A topology given by the caller's environment would skew the test. */
    unsetenv("HWLOC_SYNTHETIC");
    unsetenv("HWLOC_XMLFILE");
    test_bad_arguments();
    test_spread_here();
    test_spread_synthetic();
    test_place_here();
    test_place_made_up();
    rmdir(s_dir);
    return cl_selftest_end("cl_topo_test");
}
