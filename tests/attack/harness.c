/*  harness.c - what the hostile-peer programs share (harness.h).

    The peers wait for the parent at a rendezvous: each writes one byte to
    a pipe once it is a member and has run its first collectives, and reads
    one byte from another before it goes on, so an attack always lands
    between the same two steps.

    The wrappers of zmq_send and zmq_msg_send below stand in front of
    libzmq's own (real_zmq.h).  In a hostile member, once harness_wrap
    installed its hooks, each CLAB header that goes out with SNDMORE is
    decoded with the project's codec; the body after it may be rewritten
    before it goes out, or read after, and forgeries added on the same
    connection.  Every other use passes straight through.
*/
#include "harness.h"
#include "test_peers.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "real_zmq.h"

const char *harness_tag = "attack";
int s_failures = 0;
int s_rank = -1;
char s_dir[256];
char s_addr[MAXP][256];
int s_port[MAXP];
char s_run[128];
bool s_setup_failed;
pid_t s_pid[MAXP];
int s_status[MAXP];
atomic_bool s_armed;
atomic_int s_forged;
unsigned s_alive_after;
static int s_ready[2] = {-1, -1}, s_go[2] = {-1, -1};
static int s_gate[MAXP][2]; /* spawn_held: the parent writes one byte to [1] */

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------- */
/* Peers and process control. */

void harness_prepare(const char *tag, const char *run, int n)
{
    test_peers_prepare(tag, n, s_dir, sizeof s_dir, s_addr, s_port);
    snprintf(s_run, sizeof s_run, "%s", run);
    for (int k = 0; k < 2; k++) {
        if (s_ready[k] >= 0)
            close(s_ready[k]);
        if (s_go[k] >= 0)
            close(s_go[k]);
    }
    if (pipe(s_ready) != 0 || pipe(s_go) != 0) {
        perror("pipe");
        exit(3);
    }
}

void harness_peer_env(int i, int n, unsigned initial)
{
    test_peers_env(s_dir, i, s_port[i], n, s_run);
    setenv("COLLAB_MATCHMAKING_TIME", "60", 1); /* groups form at the world size */
    /* The peers stand for peers on other machines: collective data goes
       over the network, where the hostile member's wrappers see it (peers
       of one host and user share memory, inside one trust boundary:
       docs/security.md). */
    setenv("COLLAB_SHM", "0", 1);
    if (getenv("COLLAB_TIMEOUT") == NULL)
        setenv("COLLAB_TIMEOUT", "2", 1);
    if (getenv("COLLAB_LOG") == NULL)
        setenv("COLLAB_LOG", "info", 1);
    test_peers_initial(s_addr, MAXP, initial);
}

void rendezvous(void)
{
    char c = 'r';
    if (write(s_ready[1], &c, 1) != 1)
        s_failures++;
    ssize_t r;
    do
        r = read(s_go[0], &c, 1);
    while (r < 0 && errno == EINTR);
    atomic_store(&s_armed, true);
}

bool wait_ready(int k, double deadline)
{
    double t0 = now_s();
    while (k > 0) {
        double left = deadline - (now_s() - t0);
        if (left <= 0)
            return false;
        zmq_pollitem_t it = {NULL, s_ready[0], ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, (long)(left * 1000) + 1) > 0) {
            char c;
            if (read(s_ready[0], &c, 1) == 1)
                k--;
        }
    }
    return true;
}

void go(int k)
{
    char c = 'g';
    for (int j = 0; j < k; j++)
        if (write(s_go[1], &c, 1) != 1)
            s_failures++;
}

static pid_t spawn_gate(int i, int n, unsigned initial, harness_peer_fn fn, int gate)
{
    fflush(stdout);
    fflush(stderr);
    pid_t p = fork();
    if (p < 0) {
        perror("fork");
        exit(3);
    }
    if (p == 0) {
        s_rank = i;
        close(s_ready[0]);
        close(s_go[1]);
        if (gate >= 0) {
            close(s_gate[i][1]);
            char c;
            ssize_t r;
            do
                r = read(gate, &c, 1);
            while (r < 0 && errno == EINTR);
            close(gate);
            if (r != 1)
                _exit(4); /* the parent went away */
        }
        harness_peer_env(i, n, initial);
        int rc = fn(i, n);
        fflush(stderr);
        _exit(rc != 0 ? rc : s_failures > 0 ? 1 : 0);
    }
    s_pid[i] = p;
    return p;
}

pid_t spawn(int i, int n, unsigned initial, harness_peer_fn fn)
{
    return spawn_gate(i, n, initial, fn, -1);
}

pid_t spawn_held(int i, int n, unsigned initial, harness_peer_fn fn)
{
    if (pipe(s_gate[i]) != 0) {
        perror("pipe");
        exit(3);
    }
    pid_t p = spawn_gate(i, n, initial, fn, s_gate[i][0]);
    close(s_gate[i][0]);
    return p;
}

void release(int i)
{
    char c = 'g';
    if (write(s_gate[i][1], &c, 1) != 1)
        s_failures++;
    close(s_gate[i][1]);
}

int reap(unsigned mask, double deadline)
{
    int bad = 0;
    double t0 = now_s();
    for (int i = 0; i < MAXP; i++) {
        if (!(mask & (1u << i)))
            continue;
        int st = 0;
        for (;;) {
            pid_t r = waitpid(s_pid[i], &st, WNOHANG);
            if (r == s_pid[i])
                break;
            if (now_s() - t0 > deadline) {
                fprintf(stderr, "[%s] peer %d still runs after %.0f s; killing it\n", harness_tag,
                        i, deadline);
                kill(s_pid[i], SIGKILL);
                waitpid(s_pid[i], &st, 0);
                bad++;
                s_status[i] = -1;
                goto next;
            }
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        s_status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            fprintf(stderr, "[%s] peer %d: %s %d\n", harness_tag, i,
                    WIFEXITED(st) ? "exited with" : "killed by signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            bad++;
        }
    next:;
    }
    return bad;
}

void harness_kill(int i)
{
    kill(s_pid[i], SIGKILL);
    waitpid(s_pid[i], NULL, 0);
}

void steps(collab_comm_t *w, int i, int n, unsigned alive, int iters, double deadline)
{
    double sum = 0;
    int k = 0;
    for (int r = 0; r < n; r++)
        if (alive & (1u << r)) {
            sum += r + 1;
            k++;
        }
    double want = n * sum / k, t0 = now_s();
    int good = 0;
    for (int it = 0; good < iters && now_s() - t0 < deadline; it++) {
        double x = i + 1, y = -1;
        int rc = collab_allreduce(w, &x, &y, 1, COLLAB_DOUBLE, &SUM, NULL);
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        if (rc == COLLAB_OK && info.group_size == k && y == want) {
            good++;
        } else if (good > 0 || alive == (1u << n) - 1) {
            fprintf(stderr,
                    "[%s] peer %d: all-reduce %d: rc %d (%s), result %g (want %g), group %d "
                    "(want %d)\n",
                    harness_tag, i, it, rc, collab_strerror(rc), y, want, info.group_size, k);
            s_failures++;
            return;
        }
    }
    if (good < iters) {
        fprintf(stderr, "[%s] peer %d: %d of %d all-reduces right within %.0f s\n", harness_tag, i,
                good, iters, deadline);
        s_failures++;
    }
    CHECK(collab_comm_rank(w) == i);
}

int harness_peer_main(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[%s] peer %d: collab_init: %s\n", harness_tag, i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    steps(w, i, n, (1u << n) - 1, 1, 30);
    rendezvous();
    steps(w, i, n, s_alive_after, 5, 30);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* A hostile member's wrappers. */

static const harness_wrap_t *s_wrap;
static __thread bool t_have; /* a caught CLAB header went out with SNDMORE */
static __thread void *t_sock;
static __thread bool t_drop; /* the caught message is dropped (harness_wrap_t.drop) */
static __thread cl_wire_hdr_t t_hdr;
static __thread bool t_held; /* the caught header is held back (harness_wrap_t.drop_msg) */
static __thread int t_held_flags;
static __thread uint8_t t_hb[CL_WIRE_HDR_SIZE];

void harness_wrap(const harness_wrap_t *w)
{
    s_wrap = w;
}

void harness_inject(void *sock, cl_wire_hdr_t h, const uint8_t *body, size_t blen)
{
    uint8_t hb[CL_WIRE_HDR_SIZE];
    h.version = CL_WIRE_VERSION;
    h.length = blen;
    cl_wire_hdr_encode(&h, hb);
    if (real_zmq_send(sock, hb, sizeof hb, ZMQ_SNDMORE | ZMQ_DONTWAIT) == (int)sizeof hb &&
        real_zmq_send(sock, blen > 0 ? body : (const uint8_t *)"", blen, ZMQ_DONTWAIT) >= 0)
        if (atomic_fetch_add(&s_forged, 1) == 0)
            /* Tell the parent that the attack went out (this peer may be
               banned and stuck from here on). */
            harness_write_int("forged", 1);
}

void harness_inject_msg(void *sock, const cl_wire_hdr_t *like, cl_wire_msg_t *m)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    m->hdr.run = like->run;
    m->hdr.epoch = like->epoch;
    if (cl_wire_encode_body(m, &body, &blen) == CL_WIRE_OK)
        harness_inject(sock, m->hdr, body, blen);
    free(body);
}

int zmq_send(void *s, const void *buf, size_t len, int flags)
{
    const harness_wrap_t *w = s_wrap;
    if (w != NULL && len == CL_WIRE_HDR_SIZE && (flags & ZMQ_SNDMORE) &&
        memcmp(buf, "CLAB", 4) == 0 && cl_wire_hdr_decode(buf, len, &t_hdr) == CL_WIRE_OK &&
        (w->want == NULL || w->want(s, &t_hdr))) {
        t_have = true;
        t_sock = s;
        t_drop = w->drop != NULL && w->drop(s, &t_hdr);
        if (t_drop)
            return (int)len; /* neither the header nor its body goes out */
        if (w->drop_msg != NULL) {
            memcpy(t_hb, buf, len); /* sent with its body, or dropped with it */
            t_held = true;
            t_held_flags = flags;
            return (int)len;
        }
    }
    return real_zmq_send(s, buf, len, flags);
}

/* A rewritten body goes out as a copy; the original is closed. */
static int send_rewritten(const harness_wrap_t *w, zmq_msg_t *m, void *s, int flags)
{
    size_t blen = zmq_msg_size(m);
    zmq_msg_t forged;
    if (blen == 0 || zmq_msg_init_size(&forged, blen) != 0)
        return real_zmq_msg_send(m, s, flags);
    uint8_t *d = zmq_msg_data(&forged);
    memcpy(d, zmq_msg_data(m), blen);
    if (!w->rewrite(&t_hdr, d, blen)) {
        zmq_msg_close(&forged);
        return real_zmq_msg_send(m, s, flags);
    }
    int rc = real_zmq_msg_send(&forged, s, flags);
    if (rc < 0) {
        zmq_msg_close(&forged);
        return real_zmq_msg_send(m, s, flags);
    }
    zmq_msg_close(m);
    return (int)blen;
}

int zmq_msg_send(zmq_msg_t *m, void *s, int flags)
{
    const harness_wrap_t *w = s_wrap;
    if (w == NULL || !t_have || s != t_sock)
        return real_zmq_msg_send(m, s, flags);
    t_have = false;
    if (t_held) {
        t_held = false;
        t_drop = w->drop_msg(s, &t_hdr, zmq_msg_data(m), zmq_msg_size(m));
        if (!t_drop && real_zmq_send(s, t_hb, sizeof t_hb, t_held_flags) != (int)sizeof t_hb)
            return -1; /* the header could not go: neither does its body (the caller's) */
    }
    if (t_drop) {
        t_drop = false;
        int blen = (int)zmq_msg_size(m);
        zmq_msg_close(m);
        return blen;
    }
    if (w->rewrite != NULL)
        return send_rewritten(w, m, s, flags);
    size_t blen = zmq_msg_size(m);
    uint8_t *copy = blen > 0 ? malloc(blen) : NULL;
    if (copy != NULL)
        memcpy(copy, zmq_msg_data(m), blen);
    int rc = real_zmq_msg_send(m, s, flags);
    if (rc >= 0 && (copy != NULL || blen == 0) && w->after != NULL)
        w->after(s, &t_hdr, copy, blen);
    free(copy);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The attacker. */

static void on_event(void *ctx, const cl_tp_event_t *ev)
{
    attacker_t *a = ctx;
    if (ev->kind == CL_TP_UP && !ev->inbound)
        a->up++;
    else if (ev->kind == CL_TP_REFUSED)
        a->refused++;
    else if (ev->kind == CL_TP_MESSAGE) {
        a->messages++;
        const cl_wire_msg_t *m = ev->msg;
        if (m == NULL)
            return;
        if (m->hdr.type == CL_MSG_VIEW && m->u.view.epoch > a->epoch) {
            a->epoch = m->u.view.epoch;
            a->in_view = false;
            for (uint32_t i = 0; i < m->u.view.count; i++)
                a->in_view = a->in_view || ((m->u.view.members[i].flags & CL_MEMBER_MONITOR) &&
                                            memcmp(m->u.view.members[i].key,
                                                   cl_identity_public_key(a->id), 32) == 0);
        }
        if (m->hdr.type != CL_MSG_ELASTIC)
            return;
        cl_elmsg_t em;
        if (cl_elmsg_decode(m->hdr.sub, m->payload, m->payload_len, &em) != 0)
            return;
        if (em.type == CL_EL_HASHES || em.type == CL_EL_DATA || em.type == CL_EL_NACK) {
            a->answers++;
            fprintf(stderr, "[%s] the monitor got %s for collective #%llu\n", harness_tag,
                    cl_elmsg_name(em.type), (unsigned long long)em.s);
        }
        if (em.type == CL_EL_HASHES)
            a->hashes_bufs = (int)em.nbufs;
        if (em.type == CL_EL_DATA) {
            a->ndata = em.len < sizeof a->data ? (size_t)em.len : sizeof a->data;
            memcpy(a->data, em.data, a->ndata);
        }
        if (em.type == CL_EL_CKPT && em.ckpt == CL_EL_CKPT_NOTICE &&
            memcmp(em.key, cl_identity_public_key(a->id), 32) == 0)
            a->notice = em.s;
        cl_elmsg_clear(&em);
    }
}

int s_attacker_max_version; /* 0: the highest */

bool attacker_new(attacker_t *a, bool client)
{
    memset(a, 0, sizeof *a);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/attacker", s_dir);
    a->id = cl_identity_new(path, err, sizeof err);
    if (a->id == NULL) {
        fprintf(stderr, "[%s] identity: %s\n", harness_tag, err);
        return false;
    }
    cl_transport_config_t cfg = {0};
    cfg.identity = a->id;
    cfg.listen = "/ip4/127.0.0.1/tcp/0";
    cfg.client_mode = client;
    cfg.run_id = s_run;
    cfg.max_version = s_attacker_max_version;
    a->tp = cl_transport_new(&cfg, err, sizeof err);
    if (a->tp == NULL) {
        fprintf(stderr, "[%s] transport: %s\n", harness_tag, err);
        return false;
    }
    return true;
}

void attacker_poll(attacker_t *a)
{
    (void)cl_transport_poll(a->tp, NULL, 0, 20, on_event, a);
}

void attacker_pump(attacker_t *a, double seconds)
{
    double t0 = now_s();
    while (now_s() - t0 < seconds)
        attacker_poll(a);
}

bool attacker_reach(attacker_t *a, int i)
{
    uint8_t key[32];
    peer_key(i, key);
    int before = a->up;
    bool ok = cl_transport_connect(a->tp, key, s_addr[i]) == 0;
    double t0 = now_s();
    while (ok && a->up == before && now_s() - t0 < 10)
        attacker_poll(a);
    return ok && a->up > before;
}

bool attacker_send_el(attacker_t *a, const uint8_t key[32], const cl_elmsg_t *em)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    if (cl_elmsg_encode(em, &body, &blen) != 0)
        return false;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_ELASTIC;
    m.hdr.sub = em->type;
    m.payload = body;
    m.payload_len = blen;
    bool ok = cl_transport_send(a->tp, key, &m) == 0;
    free(body);
    return ok;
}

void attacker_destroy(attacker_t *a)
{
    cl_transport_destroy(&a->tp, 0);
    cl_identity_destroy(&a->id);
}

void peer_key(int i, uint8_t out[32])
{
    char err[256], path[512];
    snprintf(path, sizeof path, "%s/id%d", s_dir, i);
    cl_identity_t *id = cl_identity_new(path, err, sizeof err);
    if (id == NULL) {
        memset(out, 0, 32);
        return;
    }
    memcpy(out, cl_identity_public_key(id), 32);
    cl_identity_destroy(&id);
}

/* ---------------------------------------------------------------------- */
/* The run's files. */

long rss_kib(pid_t pid)
{
    return test_peers_rss_kib(pid);
}

int harness_read_int(const char *name, int dflt)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    FILE *f = fopen(path, "r");
    int v = dflt;
    if (f != NULL) {
        if (fscanf(f, "%d", &v) != 1)
            v = dflt;
        fclose(f);
    }
    return v;
}

void harness_write_int(const char *name, int v)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%d\n", v);
        fclose(f);
    }
}

int harness_log_lines(const char *path, const char *what, const char *also)
{
    return test_peers_log_lines(path, what, also);
}

void harness_print_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        fputs(line, stderr);
    if (f != NULL)
        fclose(f);
}

void harness_cleanup(void)
{
    char cmd[600], prefix[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    int plen = snprintf(prefix, sizeof prefix, "/tmp/collab-");
    if (strncmp(s_dir, prefix, (size_t)plen) == 0 && strchr(s_dir, '\'') == NULL &&
        system(cmd) != 0)
        fprintf(stderr, "[%s] could not remove %s\n", harness_tag, s_dir);
}

int harness_dest_of(void *sock)
{
    char ep[256];
    size_t len = sizeof ep;
    if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &len) != 0)
        return -1;
    const char *colon = strrchr(ep, ':');
    int port = colon != NULL ? atoi(colon + 1) : -1;
    for (int i = 0; i < MAXP; i++)
        if (s_port[i] == port)
            return i;
    return -1;
}

int harness_check_sums(int i, int it, int rc, const float *y, size_t cnt, double took, int group,
                       int *bad)
{
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: all-reduce %d: %s\n", i, it, collab_strerror(rc));
        ++*bad;
        return -1;
    }
    size_t wrong = 0, first = 0;
    for (size_t k = 0; k < cnt; k++)
        if (y[k] != (float)(8 + 4 * (int)(k % 7)) && wrong++ == 0)
            first = k;
    if (wrong > 0 && (*bad)++ < 3)
        fprintf(stderr,
                "[attack] peer %d: all-reduce %d with a group of %d: %zu of %zu elements "
                "wrong (element %zu is %g, want %d)\n",
                i, it, group, wrong, cnt, first, (double)y[first], 8 + 4 * (int)(first % 7));
    if (it == 1) {
        fprintf(stderr, "[attack] peer %d: the armed all-reduce took %.2f s (group of %d)\n", i, took,
                group);
        char name[32];
        snprintf(name, sizeof name, "armed_ms_%d", i);
        harness_write_int(name, (int)(took * 1000));
    }
    return 0;
}

bool harness_is_hashes(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    return h->type == CL_MSG_ELASTIC && h->sub == CL_EL_HASHES;
}

bool harness_rewrite_hashes(const cl_wire_hdr_t *h, uint8_t *body, size_t len,
                            bool (*edit)(cl_elmsg_t *m))
{
    cl_elmsg_t m;
    if (cl_elmsg_decode(h->sub, body, len, &m) != 0)
        return false;
    bool ok = false;
    if (edit(&m)) {
        uint8_t *out = NULL;
        size_t olen = 0;
        if (cl_elmsg_encode(&m, &out, &olen) == 0 && olen == len) {
            memcpy(body, out, len);
            ok = true;
            harness_write_int("forged", atomic_fetch_add(&s_forged, 1) + 1);
        }
        free(out);
    }
    cl_elmsg_clear(&m);
    return ok;
}

void *harness_fail_after(void *arg)
{
    const harness_fail_after_t *f = arg;
    for (;;) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        long last = atomic_load(f->last_ms);
        if (atomic_load(f->results) > 0 && (long)(now_s() * 1000) - last > 300) {
            fprintf(stderr, "[attack] %s: %d results of collective #%llu out; failing now\n", f->who,
                    atomic_load(f->results), (unsigned long long)*f->seq);
            raise(SIGKILL);
        }
    }
    return NULL;
}
