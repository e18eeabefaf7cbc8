/*  attack_xproof.c - hostile members against the exchange and the broadcast
    chain of a swarm that signs (docs/security.md §6, relay proofs).

    Usage: attack xrelay | xbcast.  Peers 0..3 of 4 at COLLAB_VERIFY=1;
    each is a real member whose outgoing messages pass through the
    harness's wrappers.

      xrelay  small all-reduces (1001 floats: the exchange).  Armed at the
              rendezvous, in the first all-reduce after it, peer 3 sends
              its piece to ranks 1 and 2 only (its RESULTs to rank 0, the
              victim, are dropped: a SIGKILL mid-send) and SIGKILLs itself
              300 ms after its last one.  Rank 0 lacks peer 3's piece and
              repairs it; rank 1, the hostile member and the lowest holder,
              is the one the relay rule asks, and its wrapper flips a bit
              of the value in every RELAY of peer 3's piece it sends.  Peer
              3's input is the mean of the others' (so every all-reduce has
              one right answer, 8 + 4 (k % 7), whoever contributed): every
              member checks every element of every all-reduce.  Recorded
              before the pieces were signed (recorded/xrelay.txt): rank 0
              took the forged relay (peer 3 had failed, so a relay of its
              piece counted) and its result was wrong.  Asserted: every
              all-reduce right at ranks 0, 1 and 2 (so bitwise equal), the
              armed one completed within 10 s at each, and rank 0's log
              names rank 1 as the sender of a relay that rank 3 did not
              sign.
      xbcast  broadcasts of 1 MiB from rank 0 (4 chunks: the chain
              0 -> 1 -> 2 -> 3).  Rank 1, an intermediate, flips a bit of
              every chunk it forwards (every broadcast after the
              rendezvous).  Recorded before the chunks were signed
              (recorded/xbcast.txt): ranks 2 and 3 got the altered bytes.
              Asserted: every broadcast at ranks 1, 2 and 3 equal to the
              root's buffer, 6 of them within 60 s, and rank 2's log names
              rank 1 as the sender of a forwarded chunk that rank 0 did
              not sign.
*/
#include "attack.h"
#include "coll/cl_coll_impl.h"
#include "engine/cl_comm.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define X_CNT 1000         /* floats of an exchange all-reduce (plus a flag) */
#define X_BCAST (1u << 20) /* bytes of a broadcast: 4 chunks */
#define X_VICTIM 0
#define X_HOSTILE 1
#define X_FAILING 3

static uint64_t s_seq;        /* the armed collective (0: none seen yet) */
static atomic_int s_results;  /* RESULTs of it that went out (peer 3) */
static atomic_long s_last_ms; /* when the last one went out (ms of now_s) */
static __thread int s_dest;   /* rank the caught message goes to */
static bool s_bcast;          /* the scenario: xbcast, else xrelay */

static bool coll_out(void *sock, const cl_wire_hdr_t *h)
{
    int type = 0;
    size_t len = sizeof type;
    return atomic_load(&s_armed) && h->type == CL_MSG_COLL && h->comm == CL_COMM_WORLD_ID &&
           zmq_getsockopt(sock, ZMQ_TYPE, &type, &len) == 0 && type == ZMQ_DEALER;
}

/* Peer 3: its RESULTs of the armed collective. */
static bool failing_want(void *sock, const cl_wire_hdr_t *h)
{
    if (!coll_out(sock, h) || h->sub != CL_MSG_RESULT)
        return false;
    if (s_seq == 0)
        s_seq = h->seq;
    if (h->seq != s_seq)
        return false;
    s_dest = harness_dest_of(sock);
    atomic_fetch_add(&s_results, 1);
    atomic_store(&s_last_ms, (long)(now_s() * 1000));
    return true;
}

/* Those to the victim are dropped: it never gets peer 3's piece, as if
   the SIGKILL had come before those sends. */
static bool failing_drop(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    (void)h;
    return s_dest == X_VICTIM;
}

/* Rank 1: RELAYs of peer 3's piece (xrelay, the armed collective) or the
   chunks it forwards down the chain (xbcast, every broadcast). */
static bool hostile_want(void *sock, const cl_wire_hdr_t *h)
{
    if (!coll_out(sock, h))
        return false;
    if (s_bcast)
        return h->sub == CL_MSG_RESULT && harness_dest_of(sock) == 2;
    return h->sub == CL_MSG_RELAY && h->part == X_FAILING && (h->aux & CL_AUX_ABSENT) == 0;
}

/* The value is last in every layout (signed or not): flip a bit of the
   exponent of its last float but one (the last is the stop flag, which
   the peers do not check). */
static bool hostile_rewrite(const cl_wire_hdr_t *h, uint8_t *body, size_t len)
{
    if (len < 5)
        return false;
    body[len - 5] ^= 0x40;
    if (atomic_fetch_add(&s_forged, 1) < 3)
        fprintf(stderr, "[attack] hostile peer 1: changed a %s of collective #%llu (part %u, chunk %u)\n",
                h->sub == CL_MSG_RELAY ? "RELAY" : "forwarded RESULT", (unsigned long long)h->seq,
                h->part, h->chunk);
    harness_write_int("forged", 1);
    return true;
}

static const harness_wrap_t s_failing = {failing_want, NULL, NULL, failing_drop, NULL};
static const harness_wrap_t s_hostile = {hostile_want, hostile_rewrite, NULL, NULL, NULL};

/* Peer 3 fails once its RESULTs of the armed collective went out. */
static harness_fail_after_t s_fail = {&s_results, &s_last_ms, &s_seq, "peer 3"};

static int relay_peer(int i, collab_comm_t *w)
{
    size_t cnt = X_CNT;
    float *x = malloc((cnt + 1) * sizeof *x), *y = malloc((cnt + 1) * sizeof *y);
    if (x == NULL || y == NULL)
        return 2;
    for (size_t k = 0; k < cnt; k++)
        x[k] = (float)(i == X_FAILING ? 2 + (int)(k % 7) : i + 1 + (int)(k % 7));
    x[cnt] = 0;
    double t0 = 0;
    int bad = 0, it, group = 0;
    for (it = 0; it < 2000; it++) {
        if (it == 1) {
            rendezvous();
            t0 = now_s();
        }
        /* Rank 0 stops the run 3 s after the rendezvous. */
        if (i == 0 && it > 5 && now_s() - t0 > 3)
            x[cnt] = 1;
        double s = now_s();
        int rc = collab_allreduce(w, x, y, cnt + 1, COLLAB_FLOAT, &SUM, NULL);
        double took = now_s() - s;
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        group = info.group_size;
        if (harness_check_sums(i, it, rc, y, cnt, took, info.group_size, &bad) != 0) {
            if (bad > 20)
                break;
            continue;
        }
        if (y[cnt] > 0)
            break;
    }
    fprintf(stderr, "[attack] peer %d: %d all-reduces, %d wrong, last group of %d\n", i, it, bad,
            group);
    char name[32];
    snprintf(name, sizeof name, "wrong_%d", i);
    harness_write_int(name, bad);
    free(x);
    free(y);
    return 0;
}

static int bcast_peer(int i, collab_comm_t *w)
{
    uint8_t *b = malloc(X_BCAST);
    if (b == NULL)
        return 2;
    int bad = 0, done = 0;
    for (int it = 0; it < 7; it++) {
        if (it == 1)
            rendezvous();
        for (size_t k = 0; k < X_BCAST; k++)
            b[k] = i == 0 ? (uint8_t)(k * 7 + (size_t)it) : 0;
        int rc = collab_bcast(w, b, X_BCAST, 0, NULL);
        if (rc != COLLAB_OK) {
            fprintf(stderr, "[attack] peer %d: broadcast %d: %s\n", i, it, collab_strerror(rc));
            bad++;
            continue;
        }
        size_t wrong = 0, first = 0;
        for (size_t k = 0; k < X_BCAST; k++)
            if (b[k] != (uint8_t)(k * 7 + (size_t)it) && wrong++ == 0)
                first = k;
        if (wrong > 0 && bad++ < 3)
            fprintf(stderr, "[attack] peer %d: broadcast %d: %zu of %u bytes differ from the "
                            "root's (the first at %zu)\n",
                    i, it, wrong, X_BCAST, first);
        done += it >= 1;
    }
    fprintf(stderr, "[attack] peer %d: %d broadcasts after the rendezvous, %d wrong\n", i, done,
            bad);
    char name[32];
    snprintf(name, sizeof name, "wrong_%d", i);
    harness_write_int(name, bad);
    snprintf(name, sizeof name, "done_%d", i);
    harness_write_int(name, done);
    free(b);
    return 0;
}

static int xproof_peer(int i, int n)
{
    (void)n;
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    if (i == X_HOSTILE)
        harness_wrap(&s_hostile);
    if (i == X_FAILING && !s_bcast) {
        harness_wrap(&s_failing);
        pthread_t t;
        if (pthread_create(&t, NULL, harness_fail_after, &s_fail) != 0)
            return 2;
        pthread_detach(t);
    }
    collab_comm_t *w = collab_comm_world();
    rc = s_bcast ? bcast_peer(i, w) : relay_peer(i, w);
    CHECK(collab_finalize() == COLLAB_OK);
    return rc;
}

int sc_xproof(const char *mode)
{
    s_bcast = strcmp(mode, "xbcast") == 0;
    prepare(mode, 4);
    setenv("COLLAB_VERIFY", "1", 1);
    char log[600];
    snprintf(log, sizeof log, "%s/peers.log", s_dir);
    setenv("COLLAB_LOG_FILE", log, 1);
    for (int i = 0; i < 4; i++)
        spawn(i, 4, i == 0 ? 0u : 0xfu & ~(1u << i), xproof_peer);
    CHECK(wait_ready(4, 60));
    go(4);
    int bad = reap(s_bcast ? 0xfu : 0x7u, s_bcast ? 60 : 90);
    if (!s_bcast)
        harness_kill(X_FAILING);
    harness_print_file(log); /* what the peers logged, for the record */
    for (int i = s_bcast ? 1 : 0; i < (s_bcast ? 4 : 3); i++) {
        char name[32];
        snprintf(name, sizeof name, "wrong_%d", i);
        int wrong = harness_read_int(name, -1);
        fprintf(stderr, "[attack] peer %d: %d wrong results\n", i, wrong);
        CHECK(wrong == 0);
        if (s_bcast) {
            snprintf(name, sizeof name, "done_%d", i);
            CHECK(harness_read_int(name, -1) == 6);
        } else {
            snprintf(name, sizeof name, "armed_ms_%d", i);
            int ms = harness_read_int(name, -1);
            CHECK(ms >= 0 && ms < 10000);
        }
    }
    /* The forgery named in the honest log: rank 0 (xrelay) or rank 2
       (xbcast) names rank 1 and what it sent. */
    int named = s_bcast ? harness_log_lines(log, "rank 2: warning:",
                                            "rank 1 sent a forwarded chunk of (part 0")
                        : harness_log_lines(log, "rank 0: warning:",
                                            "rank 1 sent a relay of (part 3");
    fprintf(stderr, "[attack] forgeries named in the honest log: %d\n", named);
    CHECK(named >= 1);
    if (harness_read_int("forged", 0) == 0) {
        fprintf(stderr, "[attack] the hostile peer changed nothing; the test proves nothing\n");
        s_setup_failed = true;
    }
    return bad;
}
