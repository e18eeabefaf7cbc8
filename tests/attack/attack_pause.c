/*  attack_pause.c - a hostile member against a peer back from a pause
    (docs/security.md §4, rules 4 and 5).  Scenario of the attack program
    (attack.c).

      pauseview   5 peers, COLLAB_TIMEOUT 6 s; peer 4 is a real member
                  (it runs the same all-reduces) whose wrappers add two
                  forged VIEWs one epoch ahead of its own, one listing
                  every member but peer 2, one listing peer 4 alone (as a
                  client), right after each answer it gives peer 2's
                  PROBE and with every heartbeat it sends peer 2, once
                  peer 2 ran again.  The parent stops peer 2 (SIGSTOP)
                  for 5.2 s: long enough that peer 2 finds it was stopped
                  and asks the members (PROBE), short enough that nobody
                  takes it out.  Old (recorded/pauseview.txt, the gate of
                  the commit before the rule, by hand): a view of a
                  member it probed counted, so peer 2 applied a forgery,
                  saw itself removed and rejoined, was removed again, and
                  hung; the others' all-reduces went wrong.  Now: a view
                  of a member that is not the coordinator counts after a
                  pause only once a majority of the last view answered
                  with it; peer 2 applies neither forgery, is never
                  removed, and every honest peer's all-reduces give the
                  sum of all five in a group of five.
*/
#include "attack.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define NP 5
#define VICTIM 2
#define HOSTILE 4

/* The forged views: every member but the victim (public entries at
   their real addresses), and the hostile member alone (a client). */
static void forge_views(void *sock, const cl_wire_hdr_t *h)
{
    cl_wire_member_t ents[NP];
    uint32_t n = 0;
    for (int i = 0; i < NP; i++) {
        if (i == VICTIM)
            continue;
        memset(&ents[n], 0, sizeof ents[n]);
        peer_key(i, ents[n].key);
        ents[n].rank = i;
        ents[n].flags = CL_MEMBER_IN_GROUP;
        ents[n].weight = 1.0;
        ents[n].address = s_addr[i];
        n++;
    }
    cl_wire_member_t alone = {{0}, 0, CL_MEMBER_CLIENT | CL_MEMBER_IN_GROUP, 1.0, "", 0};
    peer_key(HOSTILE, alone.key);
    for (int k = 0; k < 2; k++) {
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_VIEW;
        m.hdr.version = CL_WIRE_VERSION; /* the layout harness_inject announces */
        m.u.view.epoch = h->epoch + 1;
        m.u.view.group_epoch = h->epoch + 1;
        m.u.view.settings.world_size = NP;
        m.u.view.settings.target_group = 64;
        m.u.view.settings.robust_min = 1;
        m.u.view.settings.max_weight_ratio = 16;
        m.u.view.flags = CL_VIEW_GROUP_CLOSED;
        m.u.view.count = k == 0 ? n : 1;
        m.u.view.members = k == 0 ? ents : &alone;
        cl_wire_hdr_t like = *h;
        like.epoch = h->epoch + 1;
        harness_inject_msg(sock, &like, &m);
    }
}

/* After each heartbeat the hostile member sends the victim (on its
   DEALER), and right after its answer to the victim's PROBE (a VIEW, on
   its ROUTER), once the victim ran again: the forgeries. */
static void *s_to_victim; /* the DEALER to the victim */
static void forge_after(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t blen)
{
    (void)body, (void)blen;
    if (h->type == CL_MSG_HEARTBEAT && harness_dest_of(sock) == VICTIM)
        s_to_victim = sock;
    if (!atomic_load(&s_armed) || s_to_victim == NULL || harness_read_int("resumed", 0) == 0)
        return;
    if ((h->type == CL_MSG_HEARTBEAT && sock == s_to_victim) || h->type == CL_MSG_VIEW)
        forge_views(s_to_victim, h);
}

static bool wanted(void *sock, const cl_wire_hdr_t *h)
{
    int type = 0;
    size_t len = sizeof type;
    return h->type == CL_MSG_VIEW ||
           (zmq_getsockopt(sock, ZMQ_TYPE, &type, &len) == 0 && type == ZMQ_DEALER);
}

static const harness_wrap_t s_wrap = {wanted, NULL, forge_after, NULL, NULL};

/* Peer i: all-reduces of x[k] = i + 1 + k % 7 until rank 0 ends the run
   (the last element); every result must be the sum of all five, 15 +
   5 (k % 7), in a group of five. */
static int pause_peer(int i, int n)
{
    (void)n;
    enum { CNT = 1000 };
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    if (i == HOSTILE)
        harness_wrap(&s_wrap);
    collab_comm_t *w = collab_comm_world();
    static float x[CNT + 1], y[CNT + 1];
    for (size_t k = 0; k < CNT; k++)
        x[k] = (float)(i + 1 + (int)(k % 7));
    double t0 = 0;
    int bad = 0, it;
    for (it = 0; it < 1000000; it++) {
        if (it == 1) {
            rendezvous();
            t0 = now_s();
        }
        /* Rank 0 ends the run 12 s after the victim ran again. */
        if (i == 0 && it > 1 && it % 16 == 0 && x[CNT] == 0) {
            int resumed = harness_read_int("resumed", 0);
            if (resumed > 0 && now_s() - t0 > resumed / 1000.0 + 12)
                x[CNT] = 1;
        }
        rc = collab_allreduce(w, x, y, CNT + 1, COLLAB_FLOAT, &SUM, NULL);
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        if (rc != COLLAB_OK) {
            fprintf(stderr, "[attack] peer %d: all-reduce %d: %s\n", i, it, collab_strerror(rc));
            if (++bad > 20)
                break;
            continue;
        }
        size_t wrong = 0, first = 0;
        for (size_t k = 0; k < CNT; k++)
            if (y[k] != (float)(15 + 5 * (int)(k % 7)) && wrong++ == 0)
                first = k;
        if ((wrong > 0 || info.group_size != NP) && i != HOSTILE && bad++ < 3)
            fprintf(stderr,
                    "[attack] peer %d: all-reduce %d with a group of %d: %zu elements wrong "
                    "(element %zu is %g)\n",
                    i, it, info.group_size, wrong, first, (double)y[first]);
        if (y[CNT] > 0)
            break;
        if (i == 0 && it % 64 == 0) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (i == HOSTILE) {
        harness_write_int("forged", atomic_load(&s_forged));
        pause(); /* killed by the parent */
    }
    fprintf(stderr, "[attack] peer %d: %d all-reduces, %d wrong\n", i, it, bad);
    CHECK(bad == 0);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Stops peer i (SIGSTOP) and returns once the parent heard that it
   stopped: whatever comes next happens while it is stopped (its threads
   may run on for a moment after the signal on a loaded machine; the
   parent hears of the stop once every thread stopped).  False when it
   did not stop within 10 s. */
static bool stop_peer(int i)
{
    if (kill(s_pid[i], SIGSTOP) != 0)
        return false;
    int st = 0;
    for (double end = now_s() + 10; now_s() < end;) {
        if (waitpid(s_pid[i], &st, WNOHANG | WUNTRACED) == s_pid[i] && WIFSTOPPED(st))
            return true;
        struct timespec ms = {0, 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    fprintf(stderr, "[attack] peer %d did not stop within 10 s of SIGSTOP\n", i);
    return false;
}

/* Starts scenario name (COLLAB_TIMEOUT timeout, the peers' log into
   log) with NP peers running fn, and stops the victim 2 s after the go
   (stop_peer).  Returns when the go was given (now_s). */
static double start_and_stop(char *log, size_t cap, const char *name, const char *timeout,
                             harness_peer_fn fn)
{
    setenv("COLLAB_TIMEOUT", timeout, 1);
    prepare(name, NP);
    snprintf(log, cap, "%s/peers.log", s_dir);
    setenv("COLLAB_LOG_FILE", log, 1);
    for (int i = 0; i < NP; i++)
        spawn(i, NP, i == 0 ? 0u : 0x1fu & ~(1u << i), fn);
    CHECK(wait_ready(NP, 60));
    go(NP);
    double t0 = now_s();
    struct timespec two = {2, 0};
    nanosleep(&two, NULL);
    CHECK(stop_peer(VICTIM));
    return t0;
}

int sc_pauseview(void)
{
    char log[600];
    double t0 = start_and_stop(log, sizeof log, "pauseview", "6", pause_peer);
    struct timespec stop = {5, 200 * 1000 * 1000};
    nanosleep(&stop, NULL);
    CHECK(kill(s_pid[VICTIM], SIGCONT) == 0);
    /* ms since the go, as rank 0 counts it (its t0 is a little later). */
    harness_write_int("resumed", (int)((now_s() - t0) * 1000));
    int bad = reap(0x1fu & ~(1u << HOSTILE), 90);
    harness_kill(HOSTILE);
    int forged = harness_read_int("forged", 0);
    int paused = harness_log_lines(log, "this peer was stopped for", NULL);
    int removed = harness_log_lines(log, "this peer was removed from the swarm", NULL);
    int refused = harness_log_lines(log, "counts only once a majority", NULL);
    fprintf(stderr,
            "[attack] the hostile peer sent %d forged views; the victim found its pause %d "
            "time(s), was removed %d time(s), named the rule %d time(s)\n",
            forged, paused, removed, refused);
    /* The test means something only if the victim probed and the
       forgeries went out after. */
    if (forged == 0 || paused == 0) {
        fprintf(stderr, "[attack] no pause found or no forgery sent; the test proves nothing\n");
        s_setup_failed = true;
    }
    CHECK(removed == 0);
    if (bad > 0 || s_failures > 0) {
        harness_print_file(log); /* what the peers logged, for the failure's cause */
    }
    return bad;
}

/* ---------------------------------------------------------------------- */
/* pausefallback: no majority left to answer after the pause.

      pausefallback  5 peers, COLLAB_TIMEOUT 2 s (a probe window of
                  max(10 s, 4 x 2 s) = 10 s); no hostile peer.  The
                  parent stops peer 2, the victim (SIGSTOP), then peer 0
                  (the coordinator peer 2 recognises) and peer 4, which
                  stay stopped until they are killed (SIGKILL) once the
                  victim took them out: they never close a connection
                  the victim could see closing.  Peers 1 and 3 go on as
                  a group of two with a new coordinator (each marks its
                  first all-reduce in a group of two); then the victim
                  is continued.  It finds its pause and probes, but only
                  2 of the 5 members of its last view can answer, so no
                  view reaches a majority (docs/security.md §4, rule 5):
                  their answers, a newer view without it, are tallied
                  and dropped (its log says so), and the parent then
                  stops peers 1 and 3 too, until the victim took them
                  out of its view.  So the victim cannot follow peer 1
                  as its coordinator (rule 1, which it would once it
                  found peer 0 failed while peer 1 still talked to it):
                  it excuses peer 0 when it runs again and hears nothing
                  from it after, so it finds peer 0 failed COLLAB_TIMEOUT
                  later at the earliest, and by then peers 1 and 3 are
                  stopped, silent until it took them out as well (the
                  parent checks that peer 0 was not found failed before
                  they stopped).  At the
                  end of the window it must warn and send JOIN to the
                  members that answered with a newer view (following a
                  REDIRECT to their coordinator), and be taken back: the
                  run ends only after every survivor's all-reduces have
                  been the sum of peers 1, 2 and 3 in a group of three,
                  scaled to the world of five (5 (9 + 3 (k % 7)) / 3),
                  30 times in a row; peer 1 ends it then (or gives up 45
                  s after the victim's continue, and the checks fail).
                  Peers 1 and 3 find their own pause (about 2 s) when
                  they run again; in their view of two no majority of
                  others exists, so each may end its own window with a
                  JOIN to the other, which changes nothing (peer 1
                  coordinates; the victim's warning is counted only
                  from rank 2).  Found on the first run: the fallback
                  compared the answers with the victim's epoch at the
                  deadline, which had moved on (it had removed the
                  silent members itself), and sent its JOIN over links
                  it had dropped with them.
*/
#define FB_KILL_A 0
#define FB_KILL_B 4
#define FB_SURVIVORS ((1u << 1) | (1u << VICTIM) | (1u << 3))

static int fallback_peer(int i, int n)
{
    (void)n;
    enum { CNT = 1000, INAROW = 30 };
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    static float x[CNT + 1], y[CNT + 1];
    for (size_t k = 0; k < CNT; k++)
        x[k] = (float)(i + 1 + (int)(k % 7));
    double t0 = 0;
    int failed = 0, good = 0, row = 0, it, group = 0;
    bool paired = false;
    size_t wrong = 0;
    for (it = 0; it < 10000000; it++) {
        if (it == 1) {
            rendezvous();
            t0 = now_s();
        }
        if (i == 1 && it > 1 && x[CNT] == 0) {
            int resumed = harness_read_int("resumed", 0);
            double since = resumed > 0 ? now_s() - t0 - resumed / 1000.0 : 0;
            if (resumed > 0 && (row >= INAROW || since > 45)) {
                if (row < INAROW)
                    fprintf(stderr,
                            "[attack] peer 1: no group of peers 1, 2 and 3 %.0f s after "
                            "peer 2 ran again; ending the run\n",
                            since);
                x[CNT] = 1;
            }
        }
        rc = collab_allreduce(w, x, y, CNT + 1, COLLAB_FLOAT, &SUM, NULL);
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        if (rc != COLLAB_OK) {
            /* Expected while members die or the victim is out. */
            if (failed++ < 5)
                fprintf(stderr, "[attack] peer %d: all-reduce %d: %s\n", i, it,
                        collab_strerror(rc));
            row = 0;
            if (failed > 2000)
                break;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        group = info.group_size;
        if (group == 2 && i != VICTIM && !paired) {
            paired = true; /* peers 1 and 3 go on as a group of two */
            harness_write_int(i == 1 ? "pair1" : "pair3", 1);
        }
        wrong = 0;
        for (size_t k = 0; k < CNT; k++) {
            /* The sum of 3 scaled to the world of 5 (an absent rank
               counts as the mean of the others). */
            double want = NP * (9.0 + 3 * (int)(k % 7)) / 3;
            wrong += !(y[k] > want - 1e-4 * want && y[k] < want + 1e-4 * want);
        }
        if (group == 3 && wrong == 0) {
            good++;
            row++;
        } else {
            row = 0;
        }
        if (y[CNT] > 0)
            break;
        if (it % 64 == 0) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    fprintf(stderr,
            "[attack] peer %d: %d all-reduces (%d failed, %d exact in a group of three); the last "
            "in a group of %d with %zu elements wrong\n",
            i, it, failed, good, group, wrong);
    /* The last all-reduce, the one that ended the run, is the same call
       on every survivor: exact there means identical everywhere. */
    CHECK(y[CNT] > 0);
    CHECK(group == 3);
    CHECK(wrong == 0);
    harness_write_int(i == VICTIM ? "victim_good" : "survivor_good", good);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Waits, `secs` at most, until the peers' log holds a line with `what`
   (and `also`, unless NULL); false when none came. */
static bool wait_log(const char *log, const char *what, const char *also, double secs)
{
    for (double end = now_s() + secs; harness_log_lines(log, what, also) == 0;) {
        if (now_s() >= end)
            return false;
        struct timespec ms = {0, 10 * 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    return true;
}

/* Waits, `secs` at most, until peers 1 and 3 both marked their first
   all-reduce in a group of two; false when they did not. */
static bool wait_pair(double secs)
{
    for (double end = now_s() + secs;
         harness_read_int("pair1", 0) == 0 || harness_read_int("pair3", 0) == 0;) {
        if (now_s() >= end)
            return false;
        struct timespec ms = {0, 10 * 1000 * 1000};
        nanosleep(&ms, NULL);
    }
    return true;
}

/* Why the set-up did not come about, for the log; NULL when it did. */
static const char *fallback_setup(const char *log, double t0)
{
    if (!stop_peer(FB_KILL_A) || !stop_peer(FB_KILL_B))
        return "peers 0 and 4 did not stop";
    if (!wait_pair(30))
        return "peers 1 and 3 did not go on as a group of two within 30 s";
    if (kill(s_pid[VICTIM], SIGCONT) != 0)
        return "the victim could not be continued";
    harness_write_int("resumed", (int)((now_s() - t0) * 1000));
    /* A member's answer to its PROBE, tallied and dropped (no majority). */
    bool answered =
        wait_log(log, "rank 2: warning: dropped a message of type VIEW", "after a pause", 10);
    if (!stop_peer(1) || !stop_peer(3))
        return "peers 1 and 3 did not stop";
    if (!answered)
        return "the victim dropped no answer to its PROBE within 10 s";
    if (harness_log_lines(log, "rank 2: warning: rank 0 (", "seems dead") > 0)
        return "the victim found peer 0 failed before peers 1 and 3 stopped";
    if (!wait_log(log, "rank 2: warning: rank 1 (", "failed: ", 20) ||
        !wait_log(log, "rank 2: warning: rank 3 (", "failed: ", 20))
        return "the victim did not take peers 1 and 3 out within 20 s";
    return NULL;
}

int sc_pausefallback(void)
{
    char log[600];
    double t0 = start_and_stop(log, sizeof log, "pausefallback", "2", fallback_peer);
    const char *failed = fallback_setup(log, t0);
    if (harness_read_int("resumed", 0) == 0) /* peer 1 ends the run 45 s after it */
        harness_write_int("resumed", (int)((now_s() - t0) * 1000));
    harness_kill(FB_KILL_A);
    harness_kill(FB_KILL_B);
    CHECK(kill(s_pid[1], SIGCONT) == 0);
    CHECK(kill(s_pid[3], SIGCONT) == 0);
    CHECK(kill(s_pid[VICTIM], SIGCONT) == 0);
    int bad = reap(FB_SURVIVORS, 90);
    int paused = harness_log_lines(log, "rank 2: warning: this peer was stopped for", NULL);
    /* The victim's own warning (peers 1 and 3 may give one of their own,
       below). */
    int warned = harness_log_lines(log, "rank 2: warning: after the pause no view was answered",
                                   "rejoining through");
    int removed =
        harness_log_lines(log, "rank 2: error: this peer was removed from the swarm", NULL);
    int readmitted = harness_log_lines(log, "re-admitted rank 2", NULL);
    fprintf(stderr,
            "[attack] pausefallback: the victim found its pause %d time(s), warned of no majority "
            "%d time(s), found itself removed %d time(s); the survivors re-admitted it %d "
            "time(s)\n",
            paused, warned, removed, readmitted);
    if (failed != NULL || paused == 0) {
        fprintf(stderr, "[attack] set-up: %s; the test proves nothing\n",
                failed != NULL ? failed : "the victim found no pause");
        s_setup_failed = true;
    }
    CHECK(warned >= 1);
    CHECK(readmitted >= 1);
    if (bad > 0 || s_failures > 0 || s_setup_failed)
        harness_print_file(log);
    return bad;
}
