/*  cr_run.c - the run loop: signals, peer exits, output and faults.

    Everything happens on one thread.  Signals are blocked and read from a
    signalfd, so SIGCHLD, SIGINT and SIGTERM are ordinary poll events; the
    poll timeout is the time to the next due event (a timed fault, a
    SIGCONT after a stop, --timeout, the grace period for output after the
    last peer ended), so the loop sleeps whenever nothing happens.

    When a peer is reaped its pipes are drained first, so its last lines
    appear before the report of how it ended.  A fault fires at most once;
    faults still pending when the run can no longer trigger them are
    reported as never having happened.
*/
#include "cr_run.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CR_OUTPUT_GRACE 1.0 /* seconds to wait for output after the last peer ended */

double cr_run_now(const cr_run_t *run)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - run->t0;
}

static const char *sig_name(int sig)
{
    const char *n = sigabbrev_np(sig);
    return n != NULL ? n : "?";
}

static const char *killer_text(cr_killer_t k)
{
    switch (k) {
    case CR_BY_CHAOS:
        return " [chaos]";
    case CR_BY_TIMEOUT:
        return " [timeout]";
    case CR_BY_INTERRUPT:
        return " [interrupted]";
    default:
        return "";
    }
}

/* "exited with status 3" / "killed by signal 9 (KILL)". */
static void describe_end(const cr_peer_t *p, char *buf, size_t len)
{
    int st = p->wstatus;
    if (WIFEXITED(st))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d (%s)%s", WTERMSIG(st), sig_name(WTERMSIG(st)),
                 WCOREDUMP(st) ? ", core dumped" : "");
    else
        snprintf(buf, len, "ended with wait status 0x%x", (unsigned)st);
}

static void send_group(cr_peer_t *p, int sig)
{
    /* The whole process group: also whatever the peer started itself. */
    if (kill(-p->pid, sig) != 0 && errno == ESRCH)
        (void)kill(p->pid, sig);
}

/* The peer a fault target names: the running one if any, else the latest
   that had that name, else NULL. */
static cr_peer_t *find_target(cr_run_t *run, cr_target_t t)
{
    cr_peer_t *latest = NULL;
    for (size_t i = run->npeers; i-- > 0;) {
        cr_peer_t *p = run->peers[i];
        if (p->pid == 0)
            continue;
        bool match = t.started ? p->started_no == t.n : p->rank == t.n;
        if (!match)
            continue;
        if (p->running)
            return p;
        if (latest == NULL)
            latest = p;
    }
    return latest;
}

static void fire(cr_run_t *run, cr_chaos_t *c)
{
    c->done = true;
    double now = cr_run_now(run);
    char tname[32];
    if (c->action == CR_CHAOS_START) {
        int no = ++run->nstarted; /* +K numbers follow the order of start faults */
        cr_peer_t *p = cr_run_launch(run, c->target.n, no);
        if (p == NULL) {
            run->run_error = true;
            cr_say("chaos: '%s': could not start a peer at %.2fs", c->spec, now);
            return;
        }
        if (p->rank >= 0)
            cr_say("chaos: started %s (pid %d, peer +%d) at %.2fs", p->name, (int)p->pid, no, now);
        else
            cr_say("chaos: started %s (pid %d, any free rank) at %.2fs", p->name, (int)p->pid, now);
        return;
    }
    cr_peer_t *p = find_target(run, c->target);
    if (p == NULL || !p->running) {
        cr_say("chaos: '%s': %s is not running at %.2fs; skipped", c->spec,
               cr_target_text(c->target, tname, sizeof tname), now);
        return;
    }
    if (c->action == CR_CHAOS_KILL) {
        send_group(p, SIGKILL);
        p->killed_by = CR_BY_CHAOS;
        p->stopped = false;
        cr_say("chaos: SIGKILL %s (pid %d) at %.2fs", p->name, (int)p->pid, now);
        return;
    }
    /* stop: a second stop of a stopped peer extends the stop. */
    double until = now + c->stop_seconds;
    if (!p->stopped || until > p->cont_at)
        p->cont_at = until;
    p->stopped = true;
    send_group(p, SIGSTOP);
    cr_say("chaos: SIGSTOP %s (pid %d) at %.2fs for %.2fs", p->name, (int)p->pid, now,
           c->stop_seconds);
}

/* Output callback: line triggers of faults watching this peer. */
static void on_line(void *ctx, const char *line, size_t len)
{
    (void)len;
    cr_peer_t *p = ctx;
    cr_run_t *run = p->run;
    if (run->interrupted || run->timed_out)
        return;
    for (size_t i = 0; i < run->opts->nchaos; i++) {
        cr_chaos_t *c = run->opts->chaos[i];
        if (c->done || !c->on_line)
            continue;
        cr_target_t t = c->line_target;
        bool match = t.started ? p->started_no == t.n : p->rank == t.n;
        if (match && regexec(&c->regex, line, 0, NULL, 0) == 0)
            fire(run, c);
    }
}

static void cancel_faults(cr_run_t *run, const char *why)
{
    for (size_t i = 0; i < run->opts->nchaos; i++) {
        cr_chaos_t *c = run->opts->chaos[i];
        if (!c->done) {
            c->done = true;
            cr_say("chaos: '%s' cancelled (%s)", c->spec, why);
        }
    }
}

static void kill_all(cr_run_t *run, cr_killer_t why)
{
    for (size_t i = 0; i < run->npeers; i++) {
        cr_peer_t *p = run->peers[i];
        if (!p->running)
            continue;
        send_group(p, SIGKILL);
        if (p->killed_by == CR_BY_NOBODY)
            p->killed_by = why;
        p->stopped = false;
    }
}

static cr_peer_t *peer_by_pid(cr_run_t *run, pid_t pid)
{
    for (size_t i = 0; i < run->npeers; i++)
        if (run->peers[i]->pid == pid)
            return run->peers[i];
    return NULL;
}

static void reap(cr_run_t *run)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            return;
        cr_peer_t *p = peer_by_pid(run, pid);
        if (p == NULL || !p->running)
            continue;
        cr_stream_drain(&p->out, on_line, p);
        cr_stream_drain(&p->err, on_line, p);
        p->running = false;
        p->stopped = false;
        p->wstatus = st;
        p->t_end = cr_run_now(run);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            char how[96];
            describe_end(p, how, sizeof how);
            cr_say("%s (pid %d) %s%s", p->name, (int)p->pid, how, killer_text(p->killed_by));
        }
    }
}

static void on_interrupt(cr_run_t *run, int sig)
{
    if (run->interrupted == 0) {
        run->interrupted = sig;
        cr_say("got SIG%s: passing it on to the peers (send it again to kill them)", sig_name(sig));
        cancel_faults(run, "interrupted");
        for (size_t i = 0; i < run->npeers; i++) {
            cr_peer_t *p = run->peers[i];
            if (!p->running)
                continue;
            send_group(p, sig);
            if (p->stopped) { /* a stopped peer could not act on it */
                send_group(p, SIGCONT);
                p->stopped = false;
            }
        }
        return;
    }
    if (run->escalated == 0) {
        run->escalated = run->interrupted;
        cr_say("got SIG%s again: killing every peer", sig_name(sig));
        kill_all(run, CR_BY_INTERRUPT);
    }
}

static void handle_signals(cr_run_t *run)
{
    struct signalfd_siginfo si;
    bool child = false;
    for (;;) {
        ssize_t r = read(run->sigfd, &si, sizeof si);
        if (r != (ssize_t)sizeof si)
            break;
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            child = true;
        } else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            on_interrupt(run, sig);
        } else {
            for (size_t i = 0; i < run->npeers; i++)
                if (run->peers[i]->running)
                    send_group(run->peers[i], sig);
        }
    }
    if (child)
        reap(run);
}

static void on_timeout(cr_run_t *run, double now)
{
    run->timed_out = true;
    char list[4096] = "";
    size_t len = 0;
    int running = 0;
    for (size_t i = 0; i < run->npeers; i++) {
        cr_peer_t *p = run->peers[i];
        if (!p->running)
            continue;
        running++;
        int n = snprintf(list + len, sizeof list - len, "%s%s (pid %d)", len ? ", " : "", p->name,
                         (int)p->pid);
        if (n < 0 || (size_t)n >= sizeof list - len) {
            snprintf(list + len, sizeof list - len, ", ...");
            len = strlen(list);
            break;
        }
        len += (size_t)n;
    }
    if (running > 0)
        cr_say("timeout: %.2fs passed; still running: %s; killing them", now, list);
    else
        cr_say("timeout: %.2fs passed", now);
    cancel_faults(run, "timeout");
    kill_all(run, CR_BY_TIMEOUT);
}

static bool any_running(const cr_run_t *run)
{
    for (size_t i = 0; i < run->npeers; i++)
        if (run->peers[i]->running)
            return true;
    return false;
}

static bool start_pending(const cr_run_t *run)
{
    for (size_t i = 0; i < run->opts->nchaos; i++) {
        const cr_chaos_t *c = run->opts->chaos[i];
        if (!c->done && c->action == CR_CHAOS_START && !c->on_line)
            return true;
    }
    return false;
}

static bool any_stream_open(const cr_run_t *run)
{
    for (size_t i = 0; i < run->npeers; i++)
        if (run->peers[i]->out.fd >= 0 || run->peers[i]->err.fd >= 0)
            return true;
    return false;
}

/* Fires whatever is due now: timed faults, SIGCONTs, the timeout. */
static void due_events(cr_run_t *run)
{
    double now = cr_run_now(run);
    if (!run->interrupted && !run->timed_out) {
        for (size_t i = 0; i < run->opts->nchaos; i++) {
            cr_chaos_t *c = run->opts->chaos[i];
            if (!c->done && !c->on_line && c->at_seconds <= now)
                fire(run, c);
        }
    }
    for (size_t i = 0; i < run->npeers; i++) {
        cr_peer_t *p = run->peers[i];
        if (p->running && p->stopped && p->cont_at <= now) {
            p->stopped = false;
            send_group(p, SIGCONT);
            cr_say("chaos: SIGCONT %s (pid %d) at %.2fs", p->name, (int)p->pid, now);
        }
    }
    if (run->opts->timeout > 0 && !run->timed_out && now >= run->opts->timeout)
        on_timeout(run, now);
}

/* Milliseconds until the next timed event (-1: none). */
static int next_wait_ms(const cr_run_t *run, double grace_until)
{
    double now = cr_run_now(run);
    double next = INFINITY;
    if (!run->interrupted && !run->timed_out)
        for (size_t i = 0; i < run->opts->nchaos; i++) {
            const cr_chaos_t *c = run->opts->chaos[i];
            if (!c->done && !c->on_line && c->at_seconds < next)
                next = c->at_seconds;
        }
    for (size_t i = 0; i < run->npeers; i++) {
        const cr_peer_t *p = run->peers[i];
        if (p->running && p->stopped && p->cont_at < next)
            next = p->cont_at;
    }
    if (run->opts->timeout > 0 && !run->timed_out && run->opts->timeout < next)
        next = run->opts->timeout;
    if (grace_until >= 0 && grace_until < next)
        next = grace_until;
    if (isinf(next))
        return -1;
    double ms = ceil((next - now) * 1000.0);
    if (ms < 0)
        return 0;
    if (ms > 86400000.0)
        return 86400000;
    return (int)ms;
}

static int exit_status(const cr_run_t *run)
{
    if (run->timed_out)
        return 124;
    int status = 0;
    for (size_t i = 0; i < run->npeers; i++) {
        const cr_peer_t *p = run->peers[i];
        if (p->pid == 0 || p->killed_by != CR_BY_NOBODY)
            continue;
        int s = 1;
        if (WIFEXITED(p->wstatus))
            s = WEXITSTATUS(p->wstatus);
        else if (WIFSIGNALED(p->wstatus))
            s = 128 + WTERMSIG(p->wstatus);
        if (s > status)
            status = s;
    }
    if (run->escalated != 0 && 128 + run->escalated > status)
        status = 128 + run->escalated;
    if (run->run_error && status == 0)
        status = 1;
    return status;
}

static void summary(cr_run_t *run)
{
    for (size_t i = 0; i < run->opts->nchaos; i++) {
        cr_chaos_t *c = run->opts->chaos[i];
        if (!c->done) {
            c->done = true;
            cr_say("chaos: '%s' never happened", c->spec);
        }
    }
    for (size_t i = 0; i < run->npeers; i++) {
        const cr_peer_t *p = run->peers[i];
        if (p->pid == 0) {
            cr_say("summary: %s was not started", p->name);
            continue;
        }
        char how[96];
        describe_end(p, how, sizeof how);
        cr_say("summary: %s (pid %d) %s%s after %.2fs", p->name, (int)p->pid, how,
               killer_text(p->killed_by), p->t_end - p->t_start);
    }
}

int cr_run_loop(cr_run_t *run)
{
    struct pollfd *pfds = NULL;
    cr_stream_t **streams = NULL;
    cr_peer_t **owners = NULL;
    size_t cap = 0;
    double grace_until = -1;
    for (;;) {
        due_events(run);
        if (!any_running(run) && (run->interrupted || run->timed_out || !start_pending(run))) {
            if (!any_stream_open(run))
                break;
            double now = cr_run_now(run);
            if (grace_until < 0) {
                grace_until = now + CR_OUTPUT_GRACE;
            } else if (now >= grace_until) {
                /* Something the peers started still holds their pipes. */
                for (size_t i = 0; i < run->npeers; i++) {
                    cr_stream_close(&run->peers[i]->out, on_line, run->peers[i]);
                    cr_stream_close(&run->peers[i]->err, on_line, run->peers[i]);
                }
                break;
            }
        } else {
            grace_until = -1;
        }
        size_t need = 1 + 2 * run->npeers;
        if (need > cap) {
            struct pollfd *np = realloc(pfds, need * sizeof *np);
            if (np != NULL)
                pfds = np;
            cr_stream_t **ns = realloc(streams, need * sizeof *ns);
            if (ns != NULL)
                streams = ns;
            cr_peer_t **no = realloc(owners, need * sizeof *no);
            if (no != NULL)
                owners = no;
            if (np == NULL || ns == NULL || no == NULL) {
                cr_say("error: out of memory; killing every peer");
                run->run_error = true;
                kill_all(run, CR_BY_INTERRUPT);
                break;
            }
            cap = need;
        }
        size_t n = 0;
        pfds[n++] = (struct pollfd){.fd = run->sigfd, .events = POLLIN};
        for (size_t i = 0; i < run->npeers; i++) {
            cr_peer_t *p = run->peers[i];
            cr_stream_t *ss[2] = {&p->out, &p->err};
            for (int k = 0; k < 2; k++) {
                if (ss[k]->fd < 0)
                    continue;
                pfds[n] = (struct pollfd){.fd = ss[k]->fd, .events = POLLIN};
                streams[n] = ss[k];
                owners[n] = p;
                n++;
            }
        }
        int r = poll(pfds, (nfds_t)n, next_wait_ms(run, grace_until));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            cr_say("error: poll: %s; killing every peer", strerror(errno));
            run->run_error = true;
            kill_all(run, CR_BY_INTERRUPT);
            break;
        }
        if (pfds[0].revents != 0)
            handle_signals(run);
        for (size_t i = 1; i < n; i++)
            if (pfds[i].revents != 0)
                (void)cr_stream_read(streams[i], on_line, owners[i]);
    }
    free(pfds);
    free(streams);
    free(owners);
    /* After an internal error some peers may still need reaping. */
    while (any_running(run)) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0)
            break;
        cr_peer_t *p = peer_by_pid(run, pid);
        if (p != NULL) {
            p->running = false;
            p->wstatus = st;
            p->t_end = cr_run_now(run);
        }
    }
    summary(run);
    return exit_status(run);
}

void cr_run_abort(cr_run_t *run)
{
    kill_all(run, CR_BY_INTERRUPT);
    for (size_t i = 0; i < run->npeers; i++) {
        cr_peer_t *p = run->peers[i];
        if (!p->running)
            continue;
        int st;
        while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
            ;
        p->running = false;
    }
}

void cr_run_free_peers(cr_run_t *run)
{
    for (size_t i = 0; i < run->npeers; i++) {
        cr_stream_close(&run->peers[i]->out, NULL, NULL);
        cr_stream_close(&run->peers[i]->err, NULL, NULL);
        free(run->peers[i]);
    }
    free(run->peers);
    run->peers = NULL;
    run->npeers = run->cappeers = 0;
}
