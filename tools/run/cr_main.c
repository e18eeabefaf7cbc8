/*  cr_main.c - collab-run: starts N peers of an MPI program on this
    machine as one loopback mpicollab swarm (the local mpiexec -n N).

    main() checks everything that can be checked before a peer runs (the
    options, the program and its ABI, the library folder, the COLLAB_*
    variables collab-run would override), then prepares every original
    peer (key file and port) so that each one's address is known, starts
    them all and hands over to the run loop (cr_run.c).  Usage errors exit
    with 2, failures to set up the run with 1.
*/
#include "cr_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef CR_VERSION
#define CR_VERSION "unknown"
#endif
#ifndef CR_INSTALL_LIBDIR
#define CR_INSTALL_LIBDIR "lib" /* relative to the prefix */
#endif

#define CR_EXIT_USAGE 2
#define CR_EXIT_SETUP 1

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cr_say("error: %s", msg);
    return CR_EXIT_USAGE;
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The libraries a mode and ABI need, relative to the library folder. */
static void needed_libs(cr_mode_t mode, cr_abi_t abi, const char *out[2])
{
    out[0] = out[1] = NULL;
    if (mode == CR_MODE_PRELOAD) {
        out[0] = abi == CR_ABI_OMPI ? "libmpicollab-ompi.so" : "libmpicollab.so";
    } else if (abi == CR_ABI_OMPI) {
        out[0] = "mpicollab/libmpi.so.40";
    } else {
        out[0] = "mpicollab/libmpich.so.12";
        out[1] = "mpicollab/libmpi.so.12";
    }
}

static bool has_libs(const char *dir, const char *libs[2], const char **missing)
{
    for (int i = 0; i < 2 && libs[i] != NULL; i++) {
        char p[PATH_MAX];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, libs[i]) >= sizeof p || !is_file(p)) {
            *missing = libs[i];
            return false;
        }
    }
    return true;
}

/* Finds the library folder: --libdir, else <exe dir>/../lib, else
   <exe dir>/../<install libdir>.  Fills run->preload / run->replace_dir. */
static int find_libdir(cr_run_t *run)
{
    const char *libs[2];
    needed_libs(run->opts->mode, run->abi, libs);
    const char *missing = NULL;
    char dir[PATH_MAX];
    if (run->opts->libdir != NULL) {
        if (realpath(run->opts->libdir, dir) == NULL)
            return usage_error("--libdir %s: %s", run->opts->libdir, strerror(errno));
        if (!has_libs(dir, libs, &missing))
            return usage_error("--libdir %s has no %s (needed for --abi %s --mode %s)", dir,
                               missing, cr_abi_name(run->abi),
                               run->opts->mode == CR_MODE_PRELOAD ? "preload" : "replace");
    } else {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return usage_error("cannot find collab-run's own folder (%s); pass --libdir DIR",
                               strerror(errno));
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash != NULL)
            *slash = '\0';
        const char *cands[2] = {"lib", CR_INSTALL_LIBDIR};
        bool found = false;
        char first[PATH_MAX] = "";
        for (int i = 0; i < 2 && !found; i++) {
            char c[PATH_MAX];
            if ((size_t)snprintf(c, sizeof c, "%s/../%s", exe, cands[i]) >= sizeof c)
                continue;
            char real[PATH_MAX];
            if (realpath(c, real) == NULL)
                continue;
            if (first[0] == '\0')
                snprintf(first, sizeof first, "%s", real);
            if (has_libs(real, libs, &missing)) {
                snprintf(dir, sizeof dir, "%s", real);
                found = true;
            }
        }
        if (!found)
            return usage_error("cannot find %s next to collab-run (looked in %s); pass --libdir "
                               "DIR",
                               libs[0], first[0] ? first : exe);
    }
    int n;
    if (run->opts->mode == CR_MODE_PRELOAD)
        n = snprintf(run->preload, sizeof run->preload, "%s/%s", dir, libs[0]);
    else
        n = snprintf(run->replace_dir, sizeof run->replace_dir, "%s/mpicollab", dir);
    if (n < 0 || (size_t)n >= sizeof run->preload)
        return usage_error("library folder path too long: %s", dir);
    return 0;
}

/* Checks the COLLAB_* variables collab-run sets against the user's. */
static int check_user_env(cr_run_t *run)
{
    const char *ws = getenv("COLLAB_WORLD_SIZE");
    if (ws != NULL) {
        char *end = NULL;
        errno = 0;
        long v = strtol(ws, &end, 10);
        if (ws[0] == '\0' || *end != '\0' || errno != 0)
            return usage_error("COLLAB_WORLD_SIZE='%s' in the environment is not a number", ws);
        if (v != run->opts->n)
            return usage_error("COLLAB_WORLD_SIZE=%s in the environment conflicts with -n %d", ws,
                               run->opts->n);
    }
    int starts = 0;
    for (size_t i = 0; i < run->opts->nchaos; i++)
        if (run->opts->chaos[i]->action == CR_CHAOS_START)
            starts++;
    /* Per-peer variables: one value cannot serve several peers. */
    static const char *per_peer[] = {"COLLAB_RANK", "COLLAB_IDENTITY", "COLLAB_LISTEN",
                                     "COLLAB_ANNOUNCE"};
    bool *flags[] = {&run->user_rank, &run->user_identity, &run->user_listen, &run->user_announce};
    for (size_t i = 0; i < sizeof per_peer / sizeof per_peer[0]; i++) {
        const char *v = getenv(per_peer[i]);
        if (v == NULL)
            continue;
        if (run->opts->n > 1 || starts > 0)
            return usage_error("%s is set in the environment, but collab-run starts several "
                               "peers here and gives each its own; unset it",
                               per_peer[i]);
        *flags[i] = true;
    }
    run->user_peers = getenv("COLLAB_INITIAL_PEERS");
    /* As in the library, an empty list is an error, never "found a new
       swarm": a script whose peer list came out empty must not silently
       start a second swarm. */
    if (run->user_peers != NULL && run->user_peers[strspn(run->user_peers, " \t,")] == '\0')
        return usage_error("COLLAB_INITIAL_PEERS='%s': expected one or more peer addresses "
                           "(/ip4/<ip>/tcp/<port>/p2p/<peer id>); unset it to found a new swarm",
                           run->user_peers);
    run->user_matchmaking = getenv("COLLAB_MATCHMAKING_TIME") != NULL;
    return 0;
}

/* Makes sure descriptors 0, 1 and 2 are open, so that no pipe of ours
   can take one of their numbers. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0)
            continue;
        int nul = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (nul >= 0 && nul != fd) {
            dup2(nul, fd);
            close(nul);
        }
    }
}

static void raise_fd_limit(int peers)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)peers * 4 + 64;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    cr_run_t run;
    memset(&run, 0, sizeof run);
    run.sigfd = -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    run.t0 = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;

    ensure_std_fds();
    cr_opts_t opts;
    char err[1024];
    if (cr_opts_parse(argc, argv, &opts, err, sizeof err) != 0) {
        cr_say("error: %s", err);
        cr_say("see collab-run --help");
        return CR_EXIT_USAGE;
    }
    run.opts = &opts;
    if (opts.help) {
        fputs(cr_opts_usage(), stdout);
        cr_opts_clear(&opts);
        return 0;
    }
    if (opts.version) {
        printf("collab-run (mpicollab) %s\n", CR_VERSION);
        cr_opts_clear(&opts);
        return 0;
    }

    int rc = CR_EXIT_USAGE;
    if (cr_resolve_program(opts.argv[0], run.prog, sizeof run.prog, err, sizeof err) != 0) {
        usage_error("%s", err);
        goto out;
    }
    char why[512];
    cr_abi_t found = cr_detect_abi(run.prog, why, sizeof why);
    if (opts.abi == CR_ABI_UNKNOWN) {
        if (found == CR_ABI_UNKNOWN) {
            usage_error("cannot tell which MPI ABI %s uses: %s; pass --abi mpich or --abi ompi",
                        run.prog, why);
            goto out;
        }
        run.abi = found;
    } else {
        run.abi = opts.abi;
        if (found != CR_ABI_UNKNOWN && found != opts.abi)
            cr_say("warning: %s links the %s ABI, but --abi %s was given", run.prog,
                   cr_abi_name(found), cr_abi_name(opts.abi));
    }
    if (find_libdir(&run) != 0 || check_user_env(&run) != 0)
        goto out;

    rc = CR_EXIT_SETUP;
    raise_fd_limit(opts.n);
    /* Signals are read from a signalfd.  One that our parent made us
       ignore (a shell's background job, nohup) stays ignored: a blocked
       signal would be queued for the signalfd even though it is ignored. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++) {
        struct sigaction sa;
        if (sigaction(fwd[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            continue;
        sigaddset(&mask, fwd[i]);
    }
    if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0 ||
        (run.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        cr_say("error: signalfd: %s", strerror(errno));
        goto out;
    }
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not kill collab-run */

    run.swarm = cr_swarm_new(err, sizeof err);
    if (run.swarm == NULL) {
        cr_say("error: %s", err);
        goto out;
    }
    for (int i = 0; i < opts.n; i++)
        if (cr_run_prepare(&run, i, 0) == NULL)
            goto out;
    cr_swarm_release_ports(run.swarm);
    for (int i = 0; i < opts.n; i++) {
        if (cr_run_start(&run, run.peers[i]) != 0) {
            cr_run_abort(&run);
            goto out;
        }
    }
    rc = cr_run_loop(&run);
out:
    cr_run_free_peers(&run);
    cr_swarm_destroy(&run.swarm);
    if (run.sigfd >= 0)
        close(run.sigfd);
    cr_opts_clear(&opts);
    return rc;
}
