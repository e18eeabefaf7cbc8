/*  cr_launch.c - preparing and starting one peer.

    A peer gets a fresh identity file in the run's private folder, a
    reserved loopback port, and an environment built from collab-run's own
    (see docs/collab-run.md for every variable set).  It is started with
    fork and execve (no shell) in a process group of its own, so that
    faults and forwarded signals reach everything it starts, and its
    stdout and stderr go through pipes that the run loop reads.
*/
#include "cr_env.h"
#include "cr_run.h"

#include "util/cl_topo.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#define CR_ADDR_MAX 160 /* "/ip4/127.0.0.1/tcp/65535/p2p/" + a 44-char id, with room */

cr_peer_t *cr_run_prepare(cr_run_t *run, int rank, int started_no)
{
    if (run->npeers == run->cappeers) {
        size_t cap = run->cappeers ? run->cappeers * 2 : 16;
        cr_peer_t **v = realloc(run->peers, cap * sizeof *v);
        if (v == NULL) {
            cr_say("error: out of memory");
            return NULL;
        }
        run->peers = v;
        run->cappeers = cap;
    }
    cr_peer_t *p = calloc(1, sizeof *p);
    if (p == NULL) {
        cr_say("error: out of memory");
        return NULL;
    }
    p->run = run;
    p->slot = (int)run->npeers;
    p->rank = rank;
    p->started_no = started_no;
    p->out.fd = p->err.fd = -1;
    if (rank >= 0) {
        snprintf(p->name, sizeof p->name, "rank %d", rank);
        snprintf(p->tag, sizeof p->tag, "[%d] ", rank);
    } else {
        snprintf(p->name, sizeof p->name, "peer +%d", started_no);
        snprintf(p->tag, sizeof p->tag, "[+%d] ", started_no);
    }
    bool original = started_no == 0;
    char err[512];
    if (!(original && run->user_identity) &&
        cr_swarm_identity(run->swarm, p->slot, p->key_path, sizeof p->key_path, p->peer_id,
                          sizeof p->peer_id, err, sizeof err) != 0) {
        cr_say("error: %s: %s", p->name, err);
        free(p);
        return NULL;
    }
    if (!(original && run->user_listen) &&
        cr_swarm_pick_port(run->swarm, &p->port, err, sizeof err) != 0) {
        cr_say("error: %s: %s", p->name, err);
        free(p);
        return NULL;
    }
    if (run->opts->bind) {
        /* A started peer shares the cores of the rank it stands in for. */
        int n = run->opts->n;
        int index = rank >= 0 ? rank : p->slot % n;
        if (cl_topo_spread(index, n, p->cpus, sizeof p->cpus) != 0)
            p->cpus[0] = '\0'; /* hwloc could not tell: leave it to the system */
    }
    run->peers[run->npeers++] = p;
    return p;
}

/* Appends "/ip4/127.0.0.1/tcp/<port>/p2p/<id>" of other peers to list
   (comma separated): for an original peer, the other original peers (all
   start together); for a peer started later (--chaos start@), the peers
   running at this moment, originals or started, since the originals may
   all be dead by then.  With none running it falls back to the originals
   (and to the user's COLLAB_INITIAL_PEERS, e.g. a monitor, listed first). */
static bool running_peer(const cr_run_t *run, const cr_peer_t *self, const cr_peer_t *q)
{
    (void)run;
    return q != self && q->running && !q->stopped && q->peer_id[0] != '\0' && q->port != 0;
}

static int append_local_peers(const cr_run_t *run, const cr_peer_t *self, char **list, size_t *len)
{
    bool live = false;
    if (self->started_no != 0)
        for (size_t i = 0; i < run->npeers && !live; i++)
            live = running_peer(run, self, run->peers[i]);
    for (size_t i = 0; i < run->npeers; i++) {
        const cr_peer_t *q = run->peers[i];
        if (live ? !running_peer(run, self, q)
                 : q == self || q->started_no != 0 || q->peer_id[0] == '\0' || q->port == 0)
            continue;
        char addr[CR_ADDR_MAX];
        int n = snprintf(addr, sizeof addr, "%s/ip4/127.0.0.1/tcp/%d/p2p/%s", *len > 0 ? "," : "",
                         q->port, q->peer_id);
        if (n < 0 || (size_t)n >= sizeof addr)
            return -1;
        char *grown = realloc(*list, *len + (size_t)n + 1);
        if (grown == NULL)
            return -1;
        memcpy(grown + *len, addr, (size_t)n + 1);
        *list = grown;
        *len += (size_t)n;
    }
    return 0;
}

/* The environment of peer p (see the table in docs/collab-run.md). */
static cr_env_t *peer_env(cr_run_t *run, const cr_peer_t *p)
{
    cr_env_t *env = cr_env_new(environ);
    if (env == NULL)
        return NULL;
    bool original = p->started_no == 0;
    char buf[PATH_MAX + 64];
    int rc = 0;

    snprintf(buf, sizeof buf, "%d", run->opts->n);
    rc |= cr_env_set(env, "COLLAB_WORLD_SIZE", buf);
    if (p->rank >= 0 && !(original && run->user_rank)) {
        snprintf(buf, sizeof buf, "%d", p->rank);
        rc |= cr_env_set(env, "COLLAB_RANK", buf);
    } else if (!original) {
        cr_env_unset(env, "COLLAB_RANK");
    }
    if (!(original && run->user_identity))
        rc |= cr_env_set(env, "COLLAB_IDENTITY", p->key_path);
    if (!(original && run->user_listen)) {
        snprintf(buf, sizeof buf, "/ip4/127.0.0.1/tcp/%d", p->port);
        rc |= cr_env_set(env, "COLLAB_LISTEN", buf);
    }
    /* The first group waits for every peer collab-run starts (it closes at
       once when all N are members, or were): a peer slow to start on a
       busy machine is not a joiner to admit later.  The window only
       matters when a peer never gets as far as joining. */
    if (!run->user_matchmaking)
        rc |= cr_env_set(env, "COLLAB_MATCHMAKING_TIME", "30");
    /* Local rank and size, as mpiexec (MPICH, Open MPI) and torchrun set
       them: GPU trainers choose their device with them.  All peers of a
       run share this host; a peer started by a fault takes the local rank
       of the rank it asks for (else its slot modulo N). */
    int local = p->rank >= 0 ? p->rank : p->slot % run->opts->n;
    snprintf(buf, sizeof buf, "%d", local);
    static const char *local_rank_vars[] = {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                            "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof local_rank_vars / sizeof *local_rank_vars; i++)
        rc |= cr_env_set(env, local_rank_vars[i], buf);
    snprintf(buf, sizeof buf, "%d", run->opts->n);
    static const char *local_size_vars[] = {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                            "LOCAL_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof local_size_vars / sizeof *local_size_vars; i++)
        rc |= cr_env_set(env, local_size_vars[i], buf);

    /* The user's swarm first, then the other local peers.  Rank 0 founds
       the swarm unless the user named one to join. */
    char *list = NULL;
    size_t len = 0;
    bool joins_user = run->user_peers != NULL && run->user_peers[0] != '\0';
    bool founder = original && p->slot == 0 && !joins_user;
    if (joins_user) {
        list = strdup(run->user_peers);
        if (list == NULL)
            rc = -1;
        else
            len = strlen(list);
    }
    if (rc == 0 && !founder && append_local_peers(run, p, &list, &len) != 0)
        rc = -1;
    if (rc == 0) {
        if (len > 0)
            rc |= cr_env_set(env, "COLLAB_INITIAL_PEERS", list);
        else
            cr_env_unset(env, "COLLAB_INITIAL_PEERS");
    }
    free(list);

    if (run->opts->mode == CR_MODE_PRELOAD)
        rc |= cr_env_prepend(env, "LD_PRELOAD", run->preload, ':');
    else
        rc |= cr_env_prepend(env, "LD_LIBRARY_PATH", run->replace_dir, ':');
    if (rc != 0)
        cr_env_destroy(&env);
    return env;
}

/* Parses a Linux cpu list ("0-3,8,10-11") into a CPU_ALLOC'ed set.
   Returns the set (caller frees with CPU_FREE) and its size, or NULL. */
static cpu_set_t *parse_cpulist(const char *list, size_t *size)
{
    int maxcpu = -1;
    for (const char *p = list; *p != '\0';) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a > 65535)
            return NULL;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            if (end == p + 1 || b < a || b > 65535)
                return NULL;
            p = end;
        }
        if (b > maxcpu)
            maxcpu = (int)b;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return NULL;
    }
    if (maxcpu < 0)
        return NULL;
    cpu_set_t *set = CPU_ALLOC((size_t)maxcpu + 1);
    if (set == NULL)
        return NULL;
    *size = CPU_ALLOC_SIZE((size_t)maxcpu + 1);
    CPU_ZERO_S(*size, set);
    for (const char *p = list; *p != '\0';) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            b = strtol(p + 1, &end, 10);
            p = end;
        }
        for (long c = a; c <= b; c++)
            CPU_SET_S((size_t)c, *size, set);
        if (*p == ',')
            p++;
    }
    return set;
}

/* Async-signal-safe error report from the child before exec. */
static void child_fail(const char *what, const char *prog, int err)
{
    const char *parts[] = {"collab-run: ", what, " ", prog, ": ", strerror(err), "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (write(2, parts[i], strlen(parts[i])) < 0)
            break;
    _exit(127);
}

int cr_run_start(cr_run_t *run, cr_peer_t *p)
{
    cr_env_t *env = peer_env(run, p);
    if (env == NULL) {
        cr_say("error: %s: out of memory building its environment", p->name);
        return -1;
    }
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        cr_say("error: %s: pipe: %s", p->name, strerror(errno));
        cr_env_destroy(&env);
        return -1;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        cr_say("error: %s: pipe: %s", p->name, strerror(errno));
        close(out[0]);
        close(out[1]);
        cr_env_destroy(&env);
        return -1;
    }
    /* Rank 0 reads collab-run's stdin, unless it is a terminal (a peer in
       a background process group would be stopped by SIGTTIN). */
    bool keep_stdin = p->slot == 0 && !isatty(0);
    char **envp = cr_env_array(env);
    char **argv = run->opts->argv;
    const char *prog = run->prog;

    size_t setsize = 0;
    cpu_set_t *cpus = p->cpus[0] != '\0' ? parse_cpulist(p->cpus, &setsize) : NULL;
    if (cpus == NULL)
        p->cpus[0] = '\0';

    pid_t pid = fork();
    if (pid < 0) {
        if (cpus != NULL)
            CPU_FREE(cpus);
        cr_say("error: %s: fork: %s", p->name, strerror(errno));
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        cr_env_destroy(&env);
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
        if (cpus != NULL)
            (void)sched_setaffinity(0, setsize, cpus); /* placement is advice, not a must */
        if (dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
            _exit(127);
        if (!keep_stdin) {
            int nul = open("/dev/null", O_RDONLY);
            if (nul < 0 || dup2(nul, 0) < 0)
                child_fail("cannot open /dev/null for", prog, errno);
            if (nul != 0)
                close(nul);
        }
        execve(prog, argv, envp);
        child_fail("cannot execute", prog, errno);
    }
    /* Both sides set the group, so it exists before any signal is sent. */
    if (setpgid(pid, pid) != 0 && errno != EACCES && errno != ESRCH)
        cr_say("warning: %s: setpgid: %s", p->name, strerror(errno));
    if (cpus != NULL)
        CPU_FREE(cpus);
    close(out[1]);
    close(err[1]);
    cr_env_destroy(&env);
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
    const char *tag = run->opts->tag_output ? p->tag : NULL;
    if (cr_stream_init(&p->out, out[0], 1, tag) != 0 ||
        cr_stream_init(&p->err, err[0], 2, tag) != 0)
        cr_say("warning: %s: out of memory: its output is lost", p->name);
    p->pid = pid;
    p->running = true;
    p->t_start = cr_run_now(run);
    if (p->cpus[0] != '\0')
        cr_say("%s is pid %d (cpus %s)", p->name, (int)pid, p->cpus);
    else
        cr_say("%s is pid %d", p->name, (int)pid);
    return 0;
}

cr_peer_t *cr_run_launch(cr_run_t *run, int rank, int started_no)
{
    cr_peer_t *p = cr_run_prepare(run, rank, started_no);
    if (p == NULL)
        return NULL;
    cr_swarm_release_ports(run->swarm);
    if (cr_run_start(run, p) != 0)
        return NULL;
    return p;
}
