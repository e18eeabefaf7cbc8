/*  relay.c - a hostile relaying monitor against a real swarm, over
    loopback (docs/monitor.md §8).

    Usage: attack_relay.  Rank 0 is a public peer that founds the swarm;
    the attacker, speaking the real protocol through the project's
    transport and codec, joins it as a monitor that announces relaying
    (JOIN with the monitor and relay flags; anyone may, in an open swarm);
    then ranks 1 and 2 join in client mode (COLLAB_CLIENT_MODE=1), so
    every message between them goes through the attacker.  It forwards
    each one, and around the first few it also:
      flip     sends the destination, before the genuine one, a copy with
               one byte of the sealed box flipped;
      replay   sends the destination the genuine one a second time;
      misdirect  hands the box to its own sender (a destination that is
               not the receiver's);
      public   hands it to rank 0, a public peer, naming rank 0 as the
               destination;
    and a second identity that is no monitor sends rank 0 a RELAY.  Every
    one must be refused with its own log line by the receiver, and every
    collective (all-reduces of one and of 1000 elements, broadcasts from a
    client) must end with exactly the expected values on all three ranks.
*/
#include "engine/cl_transport.h"
#include "engine/cl_wire.h"
#include "mpi_collab.h"
#include "test_peers.h"
#include "util/cl_identity.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NP 3
#define ITERS 40
#define ATTACKS 3 /* of each kind */

static int s_failures;
static char s_dir[256];
static char s_addr[NP][256];
static int s_port[NP];
static char s_run[128];
static uint8_t s_key[NP][32];

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "[relay] %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);       \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------- */
/* The honest peers. */

static int s_world = NP; /* ranks of the swarm under test */

static int peer_main(int i)
{
    const int n = s_world;
    const double total = n * (n + 1) / 2.0;
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[relay] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    int bad = 0;
    static float xs[1000], ys[1000];
    for (int it = 0; it < ITERS; it++) {
        double x = i + 1, y = -1;
        rc = collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &sum, NULL);
        if (rc != COLLAB_OK || y != total) {
            if (bad++ < 3)
                fprintf(stderr, "[relay] peer %d: all-reduce %d: rc %d, %g (want %g)\n", i, it, rc,
                        y, total);
        }
        for (int k = 0; k < 1000; k++)
            xs[k] = (float)((i + 1) * (k % 17)) + 0.25f * (float)it;
        rc = collab_allreduce(w, xs, ys, 1000, COLLAB_FLOAT, &sum, NULL);
        for (int k = 0; k < 1000 && rc == COLLAB_OK; k++)
            if (ys[k] != (float)(total * (k % 17)) + 0.25f * (float)(n * it)) {
                rc = -1000;
                break;
            }
        if (rc != COLLAB_OK && bad++ < 3)
            fprintf(stderr, "[relay] peer %d: 1000-element all-reduce %d wrong (%d)\n", i, it, rc);
        unsigned char b[256];
        for (int k = 0; k < 256; k++)
            b[k] = i == 1 ? (unsigned char)(k ^ it) : 0;
        rc = collab_bcast(w, b, sizeof b, 1, NULL);
        for (int k = 0; k < 256 && rc == COLLAB_OK; k++)
            if (b[k] != (unsigned char)(k ^ it))
                rc = -1000;
        if (rc != COLLAB_OK && bad++ < 3)
            fprintf(stderr, "[relay] peer %d: broadcast %d wrong (%d)\n", i, it, rc);
        struct timespec ts = {0, 30 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "[relay] peer %d: %d rounds, %d wrong\n", i, ITERS, bad);
    if (collab_finalize() != COLLAB_OK)
        bad++;
    return bad > 0 ? 1 : 0;
}

/* Peer i: the public founder (i == 0 and no initial peer), or a client
   that joins through `initial`. */
static pid_t spawn(int i, const char *initial)
{
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    if (p < 0) {
        perror("fork");
        exit(3);
    }
    if (p != 0)
        return p;
    char v[512];
    snprintf(v, sizeof v, "%s/peer%d.log", s_dir, i);
    int fd = open(v, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        dup2(fd, 2);
        close(fd);
    }
    snprintf(v, sizeof v, "%s/id%d", s_dir, i);
    setenv("COLLAB_IDENTITY", v, 1);
    snprintf(v, sizeof v, "%d", i);
    setenv("COLLAB_RANK", v, 1);
    snprintf(v, sizeof v, "%d", s_world);
    setenv("COLLAB_WORLD_SIZE", v, 1);
    setenv("COLLAB_RUN_ID", s_run, 1);
    setenv("COLLAB_MATCHMAKING_TIME", "60", 1);
    setenv("COLLAB_SHM", "0", 1);
    setenv("COLLAB_TIMEOUT", "3", 1);
    setenv("COLLAB_LOG", "info", 1);
    if (initial == NULL) {
        snprintf(v, sizeof v, "/ip4/127.0.0.1/tcp/%d", s_port[i]);
        setenv("COLLAB_LISTEN", v, 1);
        unsetenv("COLLAB_INITIAL_PEERS");
    } else {
        setenv("COLLAB_CLIENT_MODE", "1", 1);
        setenv("COLLAB_INITIAL_PEERS", initial, 1);
    }
    _exit(peer_main(i));
}

/* ---------------------------------------------------------------------- */
/* The attacker. */

typedef struct {
    cl_identity_t *id;
    cl_transport_t *tp;
    int up;
    uint64_t epoch;
    bool in_view;
    int forwarded;
    int sent[4]; /* flip, replay, misdirect, public */
} attacker_t;

static attacker_t s_a;

/* Forwards the attacker could not send yet (the destination's connection
   is not up), retried at every poll as an honest relay would. */
typedef struct later {
    struct later *next;
    cl_wire_relay_t hdr;
    size_t len;
    uint8_t box[];
} later_t;
static later_t *s_later, **s_later_tail = &s_later;

static bool forward(attacker_t *a, const cl_wire_relay_t *h, const uint8_t *box, size_t len)
{
    cl_wire_msg_t f;
    memset(&f, 0, sizeof f);
    f.hdr.type = CL_MSG_RELAYED;
    f.hdr.epoch = a->epoch;
    f.u.relay = *h;
    f.payload = box;
    f.payload_len = len;
    return cl_transport_send(a->tp, h->dst, &f) == 0;
}

static void retry(attacker_t *a)
{
    while (s_later != NULL && forward(a, &s_later->hdr, s_later->box, s_later->len)) {
        later_t *l = s_later;
        s_later = l->next;
        if (s_later == NULL)
            s_later_tail = &s_later;
        free(l);
        a->forwarded++;
    }
}

static void attack(attacker_t *a, const cl_wire_msg_t *m, const uint8_t from[32])
{
    const cl_wire_relay_t *r = &m->u.relay;
    cl_wire_msg_t f;
    memset(&f, 0, sizeof f);
    f.hdr.type = CL_MSG_RELAYED;
    f.hdr.epoch = a->epoch;
    f.u.relay = *r;
    f.payload = m->payload;
    f.payload_len = m->payload_len;
    bool arm = a->forwarded >= 4; /* let the swarm start first */
    uint8_t *flipped = NULL;
    if (arm && a->sent[0] < ATTACKS && (flipped = malloc(m->payload_len)) != NULL) {
        memcpy(flipped, m->payload, m->payload_len);
        flipped[m->payload_len / 2] ^= 0x01;
        f.payload = flipped;
        if (cl_transport_send(a->tp, r->dst, &f) == 0)
            a->sent[0]++;
        f.payload = m->payload;
        free(flipped);
    }
    retry(a);
    if (s_later == NULL && forward(a, r, m->payload, m->payload_len)) {
        a->forwarded++;
    } else {
        later_t *l = malloc(sizeof *l + m->payload_len);
        if (l != NULL) {
            l->next = NULL;
            l->hdr = *r;
            l->len = m->payload_len;
            memcpy(l->box, m->payload, m->payload_len);
            *s_later_tail = l;
            s_later_tail = &l->next;
        }
        return;
    }
    if (!arm)
        return;
    if (a->sent[1] < ATTACKS && cl_transport_send(a->tp, r->dst, &f) == 0)
        a->sent[1]++;
    if (a->sent[2] < ATTACKS && cl_transport_send(a->tp, from, &f) == 0)
        a->sent[2]++;
    if (a->sent[3] < ATTACKS) {
        memcpy(f.u.relay.dst, s_key[0], 32);
        if (cl_transport_send(a->tp, s_key[0], &f) == 0)
            a->sent[3]++;
    }
}

static void on_event(void *ctx, const cl_tp_event_t *ev)
{
    attacker_t *a = ctx;
    if (ev->kind == CL_TP_UP && !ev->inbound)
        a->up++;
    if (ev->kind != CL_TP_MESSAGE || ev->msg == NULL)
        return;
    const cl_wire_msg_t *m = ev->msg;
    if (m->hdr.type == CL_MSG_VIEW && m->u.view.epoch > a->epoch) {
        a->epoch = m->u.view.epoch;
        a->in_view = false;
        for (uint32_t i = 0; i < m->u.view.count; i++) {
            const cl_wire_member_t *e = &m->u.view.members[i];
            a->in_view = a->in_view || ((e->flags & CL_MEMBER_RELAY) &&
                                        memcmp(e->key, cl_identity_public_key(a->id), 32) == 0);
            if (e->flags & CL_MEMBER_CLIENT) /* its connection may come later */
                (void)cl_transport_expect_client(a->tp, e->key);
        }
    }
    if (m->hdr.type == CL_MSG_RELAYED)
        attack(a, m, ev->key);
}

/* Polls as a monitor: heartbeats every 0.3 s to the peers; until *stop. */
static void pump(attacker_t *a, double seconds, bool (*stop)(void))
{
    double t0 = now_s(), hb = 0;
    while (now_s() - t0 < seconds && (stop == NULL || !stop())) {
        if (now_s() - hb >= 0.3) {
            hb = now_s();
            for (int i = 0; i < NP; i++) {
                cl_wire_msg_t m;
                memset(&m, 0, sizeof m);
                m.hdr.type = CL_MSG_HEARTBEAT;
                m.hdr.epoch = a->epoch;
                m.u.heartbeat.epoch = a->epoch;
                (void)cl_transport_send(a->tp, s_key[i], &m);
            }
        }
        (void)cl_transport_poll(a->tp, NULL, 0, 20, on_event, a);
        retry(a);
    }
}

static bool listed(void)
{
    return s_a.in_view;
}

static pid_t s_pid[NP];
static int s_exit[NP];
static int s_stranger_up;

static void on_stranger(void *ctx, const cl_tp_event_t *ev)
{
    (void)ctx;
    if (ev->kind == CL_TP_UP && !ev->inbound)
        s_stranger_up++;
}

static bool all_exited(void)
{
    bool all = true;
    for (int i = 0; i < NP; i++) {
        if (s_exit[i] != -1)
            continue;
        int st;
        if (waitpid(s_pid[i], &st, WNOHANG) == s_pid[i])
            s_exit[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        else
            all = false;
    }
    return all;
}

static bool transport_new(cl_identity_t **id, cl_transport_t **tp, const char *name)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    *id = cl_identity_new(path, err, sizeof err);
    if (*id == NULL)
        return false;
    cl_transport_config_t cfg = {0};
    cfg.identity = *id;
    cfg.listen = "/ip4/127.0.0.1/tcp/0";
    cfg.run_id = s_run;
    *tp = cl_transport_new(&cfg, err, sizeof err);
    if (*tp == NULL)
        fprintf(stderr, "[relay] transport: %s\n", err);
    return *tp != NULL;
}

/* The peers' folder, identities and keys, and the run id "attack-TAG-PID". */
static bool relay_prepare(const char *tag)
{
    test_peers_prepare(tag, NP, s_dir, sizeof s_dir, s_addr, s_port);
    snprintf(s_run, sizeof s_run, "attack-%s-%d", tag, (int)getpid());
    for (int i = 0; i < NP; i++) {
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/id%d", s_dir, i);
        cl_identity_t *id = cl_identity_new(path, err, sizeof err);
        if (id == NULL)
            return false;
        memcpy(s_key[i], cl_identity_public_key(id), 32);
        cl_identity_destroy(&id);
        s_exit[i] = -1;
    }
    return true;
}

/* Does peer i's log hold `what`? */
static bool logged(int i, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s%d.log", s_dir, i < NP ? "peer" : "monitor", i);
    return test_peers_file_holds(path, what);
}

static void dump(int i)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tail -n 25 %s/%s%d.log >&2", s_dir, i < NP ? "peer" : "monitor", i);
    fprintf(stderr, "----- %s %d\n", i < NP ? "peer" : "monitor", i);
    if (system(cmd) != 0)
        fprintf(stderr, "(no log)\n");
}

static int sc_monitor(const char *monitor);

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 3 && strcmp(argv[1], "monitor") == 0)
        return sc_monitor(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: attack_relay [monitor PATH-OF-collab-monitor]\n");
        return 2;
    }
    if (!relay_prepare("relay"))
        return 3;
    s_pid[0] = spawn(0, NULL);
    attacker_t *a = &s_a;
    memset(a, 0, sizeof *a);
    if (!transport_new(&a->id, &a->tp, "attacker"))
        return 3;
    double t0 = now_s();
    while (a->up == 0 && now_s() - t0 < 20) {
        (void)cl_transport_connect(a->tp, s_key[0], s_addr[0]);
        pump(a, 0.5, NULL);
    }
    /* Join as a monitor that relays. */
    cl_wire_msg_t j;
    memset(&j, 0, sizeof j);
    j.hdr.type = CL_MSG_JOIN;
    j.u.join.rank = -1;
    j.u.join.weight = 1;
    j.u.join.flags = CL_JOIN_MONITOR | CL_JOIN_RELAY;
    j.u.join.settings.world_size = NP;
    j.u.join.settings.target_group = 64;
    j.u.join.incarnation = 7;
    snprintf(j.u.join.address, sizeof j.u.join.address, "%s", cl_transport_address(a->tp));
    CHECK(cl_transport_send(a->tp, s_key[0], &j) == 0);
    pump(a, 15, listed);
    if (!a->in_view) {
        fprintf(stderr, "[relay] the coordinator did not list the attacker as a relaying "
                        "monitor\n");
        kill(s_pid[0], SIGKILL);
        waitpid(s_pid[0], NULL, 0);
        dump(0);
        return 3;
    }
    fprintf(stderr, "[relay] listed as a relaying monitor in view %llu\n",
            (unsigned long long)a->epoch);
    /* A stranger's RELAY to the public rank 0. */
    cl_identity_t *sid = NULL;
    cl_transport_t *stp = NULL;
    bool stranger = transport_new(&sid, &stp, "stranger");
    s_stranger_up = 0;
    if (stranger && cl_transport_connect(stp, s_key[0], s_addr[0]) == 0) {
        double t1 = now_s();
        while (s_stranger_up == 0 && now_s() - t1 < 10) {
            (void)cl_transport_poll(stp, NULL, 0, 20, on_stranger, NULL);
            pump(a, 0.02, NULL);
        }
        uint8_t box[200];
        randombytes_buf(box, sizeof box);
        cl_wire_msg_t r;
        memset(&r, 0, sizeof r);
        r.hdr.type = CL_MSG_RELAYED;
        memcpy(r.u.relay.dst, s_key[0], 32);
        memcpy(r.u.relay.src, s_key[1], 32);
        r.u.relay.counter = 1;
        r.payload = box;
        r.payload_len = sizeof box;
        CHECK(s_stranger_up > 0 && cl_transport_send(stp, s_key[0], &r) == 0);
        for (int k = 0; k < 20; k++) {
            (void)cl_transport_poll(stp, NULL, 0, 10, on_stranger, NULL);
            pump(a, 0.01, NULL);
        }
    }
    s_pid[1] = spawn(1, s_addr[0]);
    s_pid[2] = spawn(2, s_addr[0]);
    pump(a, 90, all_exited);
    bool ok = all_exited();
    for (int i = 0; i < NP && !ok; i++)
        if (s_exit[i] == -1) {
            kill(s_pid[i], SIGKILL);
            waitpid(s_pid[i], NULL, 0);
            s_exit[i] = 137;
        }
    fprintf(stderr,
            "[relay] forwarded %d; sent %d flipped, %d replayed, %d misdirected, %d to a "
            "public peer\n",
            a->forwarded, a->sent[0], a->sent[1], a->sent[2], a->sent[3]);
    for (int i = 0; i < NP; i++) {
        if (s_exit[i] != 0) {
            fprintf(stderr, "[relay] peer %d exited with %d\n", i, s_exit[i]);
            s_failures++;
        }
    }
    CHECK(a->forwarded > 0 && a->sent[0] > 0 && a->sent[1] > 0 && a->sent[2] > 0 && a->sent[3] > 0);
    bool flip = logged(1, "its seal does not open") || logged(2, "its seal does not open");
    bool replay = logged(1, "(a replay)") || logged(2, "(a replay)");
    bool misdirect = logged(1, "for another peer") || logged(2, "for another peer");
    bool public = logged(0, "to this public peer");
    bool nonmonitor = logged(0, "not a relaying monitor");
    CHECK(nonmonitor);
    CHECK(flip);
    CHECK(replay);
    CHECK(misdirect);
    CHECK(public);
    if (stranger) {
        cl_transport_destroy(&stp, 0);
        cl_identity_destroy(&sid);
    }
    if (s_failures > 0)
        for (int i = 0; i < NP; i++)
            dump(i);
    cl_transport_destroy(&a->tp, 0);
    cl_identity_destroy(&a->id);
    fprintf(stderr, "[relay] %s\n", s_failures == 0 ? "PASSED" : "FAILED");
    return s_failures == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------------- */
/* The real relaying monitor against hostile senders. */

/* Sends a RELAY from tp to key with the given ends and a box of random
   bytes. */
static bool send_relay(cl_transport_t *tp, const uint8_t to[32], const uint8_t src[32],
                       const uint8_t dst[32])
{
    uint8_t box[200];
    randombytes_buf(box, sizeof box);
    cl_wire_msg_t r;
    memset(&r, 0, sizeof r);
    r.hdr.type = CL_MSG_RELAYED;
    memcpy(r.u.relay.dst, dst, 32);
    memcpy(r.u.relay.src, src, 32);
    r.u.relay.counter = 1;
    r.payload = box;
    r.payload_len = sizeof box;
    return cl_transport_send(tp, to, &r) == 0;
}

/* collab-monitor --relay founds a swarm of 2 client-mode ranks (0, 1;
   the monitor is identity 2).  A stranger that completed the handshake
   with the monitor sends it a RELAY that names rank 0 as its sender (a
   spoof) and one of its own for rank 0 (not a member).  Asserted: the
   monitor refuses each with its log line ("named another peer as its
   sender" at once, "is not a client-mode member" once the stranger's
   wait for a view that could list it is over), counts both in the
   totals it logs ("2 refused"), and the two ranks' collectives through
   it stay exact. */
static int sc_monitor(const char *monitor)
{
    s_world = 2;
    if (!relay_prepare("relaym"))
        return 3;
    /* The monitor: identity 2, its port. */
    fflush(stderr);
    pid_t mpid = fork();
    if (mpid < 0)
        return 3;
    if (mpid == 0) {
        char log[512], id[512], listen[128], db[512];
        snprintf(log, sizeof log, "%s/monitor%d.log", s_dir, NP);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
            close(fd);
        }
        snprintf(id, sizeof id, "%s/id2", s_dir);
        snprintf(listen, sizeof listen, "/ip4/127.0.0.1/tcp/%d", s_port[2]);
        snprintf(db, sizeof db, "%s/monitor.db", s_dir);
        setenv("COLLAB_TIMEOUT", "3", 1);
        setenv("COLLAB_SHM", "0", 1);
        execl(monitor, monitor, "--listen", listen, "--identity", id, "--world-size", "2",
              "--relay", "--http", "off", "--db", db, "--run-id", s_run, (char *)NULL);
        _exit(127);
    }
    s_pid[0] = spawn(0, s_addr[2]);
    s_pid[1] = spawn(1, s_addr[2]);
    s_pid[2] = mpid;
    /* The stranger. */
    cl_identity_t *sid = NULL;
    cl_transport_t *stp = NULL;
    int bad = 0;
    if (!transport_new(&sid, &stp, "stranger"))
        return 3;
    double t0 = now_s();
    while (s_stranger_up == 0 && now_s() - t0 < 20) {
        (void)cl_transport_connect(stp, s_key[2], s_addr[2]);
        for (int k = 0; k < 25 && s_stranger_up == 0; k++)
            (void)cl_transport_poll(stp, NULL, 0, 20, on_stranger, NULL);
    }
    CHECK(s_stranger_up > 0);
    const uint8_t *me = cl_identity_public_key(sid);
    CHECK(send_relay(stp, s_key[2], s_key[0], s_key[1])); /* spoofed sender */
    CHECK(send_relay(stp, s_key[2], me, s_key[0]));       /* a stranger's own */
    double sent = now_s();
    for (int k = 0; k < 50; k++)
        (void)cl_transport_poll(stp, NULL, 0, 20, on_stranger, NULL);
    /* The ranks train through the monitor meanwhile. */
    t0 = now_s();
    while (now_s() - t0 < 90) {
        bool done = true;
        for (int i = 0; i < 2; i++) {
            int st;
            if (s_exit[i] == -1 && waitpid(s_pid[i], &st, WNOHANG) == s_pid[i])
                s_exit[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            done = done && s_exit[i] != -1;
        }
        if (done)
            break;
        (void)cl_transport_poll(stp, NULL, 0, 50, on_stranger, NULL);
    }
    for (int i = 0; i < 2; i++) {
        if (s_exit[i] == -1) {
            kill(s_pid[i], SIGKILL);
            waitpid(s_pid[i], NULL, 0);
            s_exit[i] = 137;
        }
        if (s_exit[i] != 0) {
            fprintf(stderr, "[relay] peer %d exited with %d\n", i, s_exit[i]);
            bad++;
        }
    }
    /* The stranger's own waits for a view that could list it, at most
       max(2 s, COLLAB_TIMEOUT = 3 s), before it is refused. */
    while (now_s() - sent < 5)
        (void)cl_transport_poll(stp, NULL, 0, 50, on_stranger, NULL);
    kill(mpid, SIGTERM);
    int st;
    waitpid(mpid, &st, 0);
    CHECK(logged(NP, "named another peer as its sender"));
    CHECK(logged(NP, "is not a client-mode member of this view"));
    CHECK(logged(NP, "2 refused"));
    CHECK(logged(NP, "relay: ") && logged(0, "joined in client mode"));
    s_failures += bad;
    if (s_failures > 0) {
        dump(0);
        dump(1);
        dump(NP);
    }
    cl_transport_destroy(&stp, 0);
    cl_identity_destroy(&sid);
    fprintf(stderr, "[relay] %s\n", s_failures == 0 ? "PASSED" : "FAILED");
    return s_failures == 0 ? 0 : 1;
}
