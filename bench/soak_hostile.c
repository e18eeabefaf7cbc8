/*  soak_hostile.c - LD_PRELOAD shim that makes one peer of
    bench/attack_soak.sh a hostile member.

    The peer is a real member (the example trainer under collab-run); this
    shim wraps zmq_send and zmq_msg_send, decodes every message the peer
    sends with the project's codec and, once armed (SOAK_ARM seconds after
    the first message, default 5), tampers with some and adds forgeries on
    the same connection, as tests/attack/harness.c does:

      results   with the first chunk of each world collective it sends a
                member, a RESULT for the part of another member (member 0,
                or 1 when it is member 0) full of 1e30;
      NaN       one MPI_Allreduce of floats in 5, its own contribution is all
                NaN: the shim stands in front of the MPICH face
                (MPI_Allreduce, MPICH's ABI) and hands the library a NaN
                input, so the library encodes and, in a swarm that signs,
                signs it as the peer's own (a hostile member runs the
                library it likes);
      weights   with every heartbeat, UPDATE weight 1e9 (the most
                COLLAB_WEIGHT allows); SOAK_HUGE seconds after arming
                (default 90), one UPDATE weight 1e308;
      ADMIT     with every heartbeat, an ADMIT that re-admits a random key
                as rank 1 with weight 0 for 100000 collectives;
      VIEW      with every heartbeat, a VIEW one epoch ahead that lists
                only this peer;
      FETCH     with every heartbeat, 64 FETCHes of 1 GiB of state item 0.

    Each forgery kind is counted; the counts are written to
    $SOAK_OUT/hostile.counts when the process exits.
*/
#include "coll/cl_coll_impl.h"
#include "engine/cl_comm.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_wire.h"
#include "util/cl_identity.h"

#include <dlfcn.h>
#include <math.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "real_zmq.h"

enum { K_RESULT, K_NAN, K_UPDATE, K_HUGE, K_ADMIT, K_VIEW, K_FETCH, K_COUNT };
static const char *const s_names[K_COUNT] = {"result", "nan",  "update", "huge_weight",
                                             "admit",  "view", "fetch"};
static atomic_long s_count[K_COUNT];
static double s_t0, s_arm = 5, s_huge = 90;
static atomic_bool s_huge_sent;

static __thread bool t_have;
static __thread void *t_sock;
static __thread cl_wire_hdr_t t_hdr;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void s_report(void)
{
    const char *dir = getenv("SOAK_OUT");
    char path[1024];
    snprintf(path, sizeof path, "%s/hostile.counts", dir != NULL ? dir : "/tmp");
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    for (int k = 0; k < K_COUNT; k++)
        fprintf(f, "%s %ld\n", s_names[k], atomic_load(&s_count[k]));
    fclose(f);
}

__attribute__((constructor)) static void s_init(void)
{
    if (getenv("SOAK_ARM") != NULL)
        s_arm = atof(getenv("SOAK_ARM"));
    if (getenv("SOAK_HUGE") != NULL)
        s_huge = atof(getenv("SOAK_HUGE"));
    atexit(s_report);
}

static bool s_armed(void)
{
    double t = now_s();
    if (s_t0 == 0)
        s_t0 = t;
    return t - s_t0 >= s_arm;
}

static void inject(void *sock, cl_wire_hdr_t h, const uint8_t *body, size_t blen, int kind)
{
    uint8_t hb[CL_WIRE_HDR_SIZE];
    h.version = CL_WIRE_VERSION;
    h.length = blen;
    cl_wire_hdr_encode(&h, hb);
    if (real_zmq_send(sock, hb, sizeof hb, ZMQ_SNDMORE | ZMQ_DONTWAIT) == (int)sizeof hb &&
        real_zmq_send(sock, blen > 0 ? body : (const uint8_t *)"", blen, ZMQ_DONTWAIT) >= 0)
        atomic_fetch_add(&s_count[kind], 1);
}

static void inject_msg(void *sock, const cl_wire_hdr_t *like, cl_wire_msg_t *m, int kind)
{
    uint8_t *body = NULL;
    size_t blen = 0;
    m->hdr.run = like->run;
    m->hdr.version = CL_WIRE_VERSION; /* the body's layout follows it (inject sends it) */
    if (m->hdr.epoch == 0)
        m->hdr.epoch = like->epoch;
    if (cl_wire_encode_body(m, &body, &blen) == CL_WIRE_OK)
        inject(sock, m->hdr, body, blen, kind);
    free(body);
}

static void inject_el(void *sock, const cl_wire_hdr_t *like, const cl_elmsg_t *a, int kind)
{
    uint8_t *eb = NULL;
    size_t elen = 0;
    if (cl_elmsg_encode(a, &eb, &elen) == COLLAB_OK) {
        cl_wire_hdr_t eh = *like;
        eh.type = CL_MSG_ELASTIC;
        eh.sub = a->type;
        eh.comm = 0;
        eh.seq = 0;
        inject(sock, eh, eb, elen, kind);
    }
    free(eb);
}

/* Forgeries that ride on a heartbeat. */
static void s_on_heartbeat(void *sock, const cl_wire_hdr_t *h)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_UPDATE;
    bool huge = now_s() - s_t0 >= s_arm + s_huge && !atomic_exchange(&s_huge_sent, true);
    m.u.update.weight = huge ? 1e308 : 1e9;
    inject_msg(sock, h, &m, huge ? K_HUGE : K_UPDATE);

    cl_el_joiner_t j;
    memset(&j, 0, sizeof j);
    randombytes_buf(j.key, sizeof j.key);
    j.rank = 1;
    j.flags = CL_EL_JOINER_READMIT;
    cl_elmsg_t a;
    memset(&a, 0, sizeof a);
    a.type = CL_EL_ADMIT;
    a.s = 1;
    a.w0_end = 100000;
    a.gen = h->epoch;
    a.joiners = &j;
    a.njoiners = 1;
    inject_el(sock, h, &a, K_ADMIT);

    memset(&a, 0, sizeof a);
    a.type = CL_EL_FETCH;
    a.s = 1;
    a.what = 0;
    a.index = 0;
    a.offset = 0;
    a.len = (uint64_t)1 << 30;
    for (int k = 0; k < 64; k++)
        inject_el(sock, h, &a, K_FETCH);

    /* A VIEW one epoch ahead listing this peer alone (as a client: no
       address to check). */
    static uint8_t self_key[32];
    static bool have_key;
    if (!have_key && getenv("COLLAB_IDENTITY") != NULL) {
        char err[256];
        cl_identity_t *id = cl_identity_new(getenv("COLLAB_IDENTITY"), err, sizeof err);
        if (id != NULL) {
            memcpy(self_key, cl_identity_public_key(id), 32);
            have_key = true;
        }
        cl_identity_destroy(&id);
    }
    if (have_key) {
        cl_wire_member_t me = {{0}, 0, CL_MEMBER_CLIENT | CL_MEMBER_IN_GROUP, 1.0, "", 0};
        memcpy(me.key, self_key, 32);
        memset(&m, 0, sizeof m);
        m.hdr.type = CL_MSG_VIEW;
        m.hdr.epoch = h->epoch + 1;
        m.u.view.epoch = h->epoch + 1;
        m.u.view.group_epoch = h->epoch + 1;
        m.u.view.settings.world_size = 7;
        m.u.view.settings.target_group = 64;
        m.u.view.settings.aggregation = 2;
        m.u.view.settings.robust_min = 1;
        m.u.view.settings.max_weight_ratio = 16;
        m.u.view.count = 1;
        m.u.view.members = &me;
        uint8_t *body = NULL;
        size_t blen = 0;
        m.hdr.run = h->run;
        m.hdr.version = CL_WIRE_VERSION; /* the body's layout follows it (inject sends it) */
        if (cl_wire_encode_body(&m, &body, &blen) == CL_WIRE_OK)
            inject(sock, m.hdr, body, blen, K_VIEW);
        free(body);
    }
}

__attribute__((visibility("default"))) int zmq_send(void *s, const void *buf, size_t len, int flags)
{
    if (len == CL_WIRE_HDR_SIZE && (flags & ZMQ_SNDMORE) && memcmp(buf, "CLAB", 4) == 0 &&
        cl_wire_hdr_decode(buf, len, &t_hdr) == CL_WIRE_OK) {
        t_have = true;
        t_sock = s;
    }
    return real_zmq_send(s, buf, len, flags);
}

__attribute__((visibility("default"))) int zmq_msg_send(zmq_msg_t *m, void *s, int flags)
{
    if (!t_have || s != t_sock)
        return real_zmq_msg_send(m, s, flags);
    t_have = false;
    cl_wire_hdr_t h = t_hdr;
    if (!s_armed())
        return real_zmq_msg_send(m, s, flags);
    size_t blen = zmq_msg_size(m);
    bool coll = h.type == CL_MSG_COLL && h.comm == CL_COMM_WORLD_ID && h.sub == CL_MSG_RESULT &&
                blen >= sizeof(float);
    int rc = real_zmq_msg_send(m, s, flags);
    if (rc < 0)
        return rc;
    if (h.type == CL_MSG_HEARTBEAT) {
        s_on_heartbeat(s, &h);
    } else if (coll && h.chunk == 0) {
        /* Another member's part, full of 1e30. */
        uint8_t *forged = malloc(blen);
        if (forged != NULL) {
            float big = 1e30f;
            for (size_t k = 0; k + sizeof big <= blen; k += sizeof big)
                memcpy(forged + k, &big, sizeof big);
            cl_wire_hdr_t fh = h;
            fh.part = h.part == 0 ? 1 : 0;
            inject(s, fh, forged, blen, K_RESULT);
            free(forged);
        }
    }
    return rc;
}

/* MPICH's ABI (the trainer is built with mpicc.mpich): handles are ints.
   In place or not, the library is handed the NaN copy as this peer's
   input and writes the result to rbuf. */
#define SOAK_MPI_FLOAT 0x4c00040a

typedef int (*allreduce_fn)(const void *, void *, int, int, int, int);

/* One float all-reduce in 5, once armed: its own contribution all NaN. */
__attribute__((visibility("default"))) int MPI_Allreduce(const void *sbuf, void *rbuf, int count,
                                                         int dt, int op, int comm)
{
    static allreduce_fn real;
    static atomic_long calls;
    if (real == NULL)
        real = (allreduce_fn)dlsym(RTLD_NEXT, "MPI_Allreduce");
    if (real == NULL)
        return 1; /* MPI_ERR_BUFFER: no library behind the shim */
    if (!s_armed() || dt != SOAK_MPI_FLOAT || count <= 0 || atomic_fetch_add(&calls, 1) % 5 != 0)
        return real(sbuf, rbuf, count, dt, op, comm);
    float *nan_in = malloc((size_t)count * sizeof *nan_in);
    if (nan_in == NULL)
        return real(sbuf, rbuf, count, dt, op, comm);
    for (int k = 0; k < count; k++)
        nan_in[k] = NAN;
    atomic_fetch_add(&s_count[K_NAN], 1);
    int rc = real(nan_in, rbuf, count, dt, op, comm);
    free(nan_in);
    return rc;
}
