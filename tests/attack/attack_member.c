/*  attack_member.c - a hostile member against real swarms.  Scenarios of
    the attack program (attack.c).

    Hostile members.  In these scenarios peer 3 of 4 is a real member (it
    runs collab_init and the same all-reduces) whose outgoing messages pass
    through the wrappers of zmq_send and zmq_msg_send (harness.h): they decode
    each message with the project's codec and, once the peer is armed at
    the rendezvous, add forged ones on the same connection.
      suspect     SUSPECT(straggler) about rank 1 with every heartbeat.
                  Old: rank 1 was taken out of the group.  Now: one
                  member's report alone takes nobody out.
      admit       an ADMIT that re-admits rank 1 as a straggler with
                  weight 0 for the next 100000 collectives.  Old: results
                  lost rank 1's contribution.  Now: only the admitter's
                  ADMIT counts.
      update      UPDATE with weight 1e308.  Old: every result was 4 x the
                  attacker's input.  Now: refused (above the 1e9 that
                  COLLAB_WEIGHT allows) and the sender banned.
      figure      UPDATE (wire version 11) with a new bandwidth figure
                  with every heartbeat, 1 and 4e9 kbit/s in turn: each
                  one taken would be a view and a new group generation.
                  Now: the coordinator takes a member's new figure at
                  most every 5 s (its log names each one taken), and
                  every all-reduce stays right.
      result      with each DATA it sends a part's reducer, a RESULT for
                  that part (which it does not own) full of 1e30.  Old:
                  corrupted results.  Now: a RESULT counts only from the
                  part's producer.
      flood       with every message it sends, collective messages of 64
                  KiB for 16 communicators nobody created, 64 MiB to every
                  other peer.  Old (no bound): each victim kept all of it.
                  Now, with COLLAB_MAX_UNEXPECTED_PER_PEER=16: each
                  victim's RSS grows by less than 64 MiB, the flood is
                  named in its log, and every all-reduce stays right.
      credit      with every message it sends, point-to-point messages of
                  64 KiB that nobody receives (tag 999 on the world), 64
                  MiB to every other peer, ignoring the credit each grants
                  (docs/wire.md section 10), once the victims are older
                  than their grace (2 x COLLAB_TIMEOUT).  Old (no bound):
                  each victim kept all of it; then (bounds without flow
                  control) each dropped the excess without a ban.  Now:
                  each victim bans it at its first message past the grant
                  (one log line), its RSS grows by less than 64 MiB, and
                  every all-reduce of the three stays right.
      early       as credit, with collective messages of 64 KiB for the
                  world's collectives a million ahead (each waits in the
                  victim's early buffer), ignoring class EARLY's credit
                  (docs/wire.md section 10 item 8).  Each victim keeps
                  what passes the grant within the bounds of
                  docs/security-bounds.md §5 and drops the rest, naming the
                  sender as one past its credit (at powers of two; not
                  banned: a ban by one receiver alone splits the group),
                  its RSS grows by less than 64 MiB, and every all-reduce
                  of the three stays right.
      In flood and early, the flood rides on the hostile
      member's own messages, so its pace follows theirs: rank 0 ends the
      run once the hostile member marked it sent whole (45 s at most; on
      a loaded machine a run ended after a fixed 6 s had sent only part
      of it, below every bound, and no victim named anything).
      status      with each first DATA chunk it sends a part's reducer, a
                  STATUS for that part whose view names rank 1 failed.
                  Old: the reducers took the failure over and left rank
                  1's contribution out of every result (rank 1 itself
                  hung).  Now: a failure counts only with the receiver's
                  own evidence, and the forged view holds no repair back.
*/
#include "attack.h"
#include "coll/cl_coll_impl.h"
#include "engine/cl_comm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

typedef enum {
    H_NONE,
    H_SUSPECT,
    H_ADMIT,
    H_UPDATE,
    H_FIGURE,
    H_RESULT,
    H_FLOOD,
    H_STATUS,
    H_CREDIT,
    H_EARLY
} hostile_t;
static hostile_t s_hostile = H_NONE;

static uint8_t s_target[32]; /* rank 1's key */
static uint64_t s_world_seq; /* last world collective seen going out */
static uint64_t s_world_gen;

/* The flood: per DEALER (one per victim), what went out so far. */
#define FLOOD_MSG ((size_t)64 << 10)
#define FLOOD_EACH ((size_t)64 << 20) /* of each kind, to each victim */
#define FLOOD_COMMS 16
#define CREDIT_BYTES ((size_t)1 << 20) /* a point-to-point grant (docs/wire.md section 10) */
/* credit: point-to-point messages sent after each message to a victim:
   enough to pass its grant at the first, so that every victim is passed
   at the attacker's first message to it, which goes to all at once.
   With 8 it took two messages each; once the first victim banned it,
   its collectives stalled and its messages to the others slowed to
   heartbeats, and the coordinator took it out as silent before the last
   victim was passed: that one then dropped its flood as a non-member's
   and named no credit (seen once in CI). */
#define P2P_BURST (CREDIT_BYTES / FLOOD_MSG + 1)
typedef struct {
    void *sock;
    size_t p2p, coll;
} flood_t;
static flood_t s_flood[MAXP];

/* Once the flood went out whole to the 3 victims, the hostile member
   says so ("flooded"): rank 0 ends the run only then (the flood's pace
   follows the messages it rides on, slow on a loaded machine). */
static void flood_done(bool p2p, bool coll)
{
    static bool said;
    int whole = 0;
    for (int k = 0; k < MAXP && !said; k++)
        whole += s_flood[k].sock != NULL && (!p2p || s_flood[k].p2p >= FLOOD_EACH) &&
                 (!coll || s_flood[k].coll >= FLOOD_EACH);
    if (!said && whole >= 3) {
        said = true;
        harness_write_int("flooded", 1);
    }
}

static void flood_after(void *sock, const cl_wire_hdr_t *h, bool p2p, bool coll, bool early)
{
    static uint8_t *payload;
    if (payload == NULL && (payload = calloc(1, FLOOD_MSG)) == NULL)
        return;
    flood_t *f = NULL;
    for (int k = 0; k < MAXP && f == NULL; k++)
        if (s_flood[k].sock == sock || s_flood[k].sock == NULL) {
            f = &s_flood[k];
            f->sock = sock;
        }
    if (f == NULL)
        return;
    flood_done(p2p, coll || early);
    /* (credit: how many victims it sent more than their credit, 64
       messages or 1 MiB, before it was banned or taken out.) */
    static int past_credit;
    bool was_past = f->p2p > CREDIT_BYTES;
    for (size_t k = 0; k < P2P_BURST && p2p && f->p2p < FLOOD_EACH; k++) {
        cl_wire_hdr_t ph;
        memset(&ph, 0, sizeof ph);
        ph.type = CL_MSG_P2P;
        ph.sub = CL_P2P_STANDARD;
        ph.run = h->run;
        ph.epoch = h->epoch;
        ph.comm = CL_COMM_WORLD_ID;
        ph.part = 3; /* its own world rank: a well-formed send */
        ph.aux = 999;
        harness_inject(sock, ph, payload, FLOOD_MSG);
        f->p2p += FLOOD_MSG;
    }
    if (p2p && !was_past && f->p2p > CREDIT_BYTES)
        harness_write_int("past_credit", ++past_credit);
    for (int k = 0; k < 2 && (coll || early) && f->coll < FLOOD_EACH; k++) {
        cl_wire_hdr_t ch;
        memset(&ch, 0, sizeof ch);
        ch.type = CL_MSG_COLL;
        ch.sub = CL_MSG_DATA;
        ch.run = h->run;
        ch.epoch = h->epoch;
        ch.comm = 0x5eed0000u + (f->coll / FLOOD_MSG) % FLOOD_COMMS;
        ch.seq = f->coll / FLOOD_MSG / FLOOD_COMMS;
        if (early) {
            /* Early messages of the world's collectives, far ahead of
               any the members will run: each waits in the early buffer,
               holding the grant. */
            ch.comm = CL_COMM_WORLD_ID;
            ch.epoch = s_world_gen;
            ch.seq = s_world_seq + 1000000 + f->coll / FLOOD_MSG;
        }
        harness_inject(sock, ch, payload, FLOOD_MSG);
        f->coll += FLOOD_MSG;
    }
}

/* What the hostile member adds after a message (h, body) went out on a
   DEALER. */
static void forge_after(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t blen)
{
    (void)body;
    if (h->type == CL_MSG_COLL && h->comm == CL_COMM_WORLD_ID) {
        s_world_seq = h->seq;
        s_world_gen = h->epoch;
    }
    if (!atomic_load(&s_armed))
        return;
    if (s_hostile == H_FLOOD || s_hostile == H_CREDIT || s_hostile == H_EARLY) {
        flood_after(sock, h, s_hostile == H_CREDIT, s_hostile == H_FLOOD, s_hostile == H_EARLY);
        return;
    }
    if (h->type == CL_MSG_HEARTBEAT) {
        cl_wire_msg_t m;
        memset(&m, 0, sizeof m);
        if (s_hostile == H_SUSPECT) {
            m.hdr.type = CL_MSG_SUSPECT;
            memcpy(m.u.suspect.key, s_target, 32);
            m.u.suspect.reason = CL_SUSPECT_STRAGGLER;
            harness_inject_msg(sock, h, &m);
        } else if (s_hostile == H_UPDATE) {
            m.hdr.type = CL_MSG_UPDATE;
            m.hdr.version = CL_WIRE_VERSION; /* the layout harness_inject announces */
            m.u.update.weight = 1e308;
            harness_inject_msg(sock, h, &m);
        } else if (s_hostile == H_FIGURE) {
            m.hdr.type = CL_MSG_UPDATE;
            m.hdr.version = CL_WIRE_VERSION;
            m.u.update.bandwidth = atomic_load(&s_forged) % 2 == 0 ? 1u : 4000000000u;
            harness_inject_msg(sock, h, &m);
        } else if (s_hostile == H_ADMIT && s_world_gen > 0) {
            cl_elmsg_t a;
            memset(&a, 0, sizeof a);
            cl_el_joiner_t j;
            memset(&j, 0, sizeof j);
            memcpy(j.key, s_target, 32);
            j.rank = 1;
            j.flags = CL_EL_JOINER_READMIT;
            a.type = CL_EL_ADMIT;
            a.s = s_world_seq + 2;
            a.w0_end = a.s + 100000;
            a.gen = s_world_gen;
            a.joiners = &j;
            a.njoiners = 1;
            uint8_t *eb = NULL;
            size_t elen = 0;
            if (cl_elmsg_encode(&a, &eb, &elen) == COLLAB_OK) {
                cl_wire_hdr_t eh = *h;
                eh.type = CL_MSG_ELASTIC;
                eh.sub = CL_EL_ADMIT;
                harness_inject(sock, eh, eb, elen);
            }
            free(eb);
        }
    } else if (s_hostile == H_RESULT && h->type == CL_MSG_COLL && h->sub == CL_MSG_DATA &&
               h->comm == CL_COMM_WORLD_ID && blen >= sizeof(float)) {
        /* A RESULT for the part this DATA goes to: bitmap (every one of the
           4 members contributed), then the chunk's values, all 1e30. */
        size_t n = blen / sizeof(float);
        uint8_t *forged = malloc(1 + blen);
        if (forged == NULL)
            return;
        forged[0] = 0x0f;
        float big = 1e30f;
        for (size_t k = 0; k < n; k++)
            memcpy(forged + 1 + k * sizeof(float), &big, sizeof big);
        cl_wire_hdr_t rh = *h;
        rh.sub = CL_MSG_RESULT;
        rh.aux = 0;
        harness_inject(sock, rh, forged, 1 + blen);
        free(forged);
    } else if (s_hostile == H_STATUS && h->type == CL_MSG_COLL && h->sub == CL_MSG_DATA &&
               h->comm == CL_COMM_WORLD_ID && h->chunk == 0) {
        /* A STATUS for the part this DATA goes to: its view says rank 1
           (member 1) failed, and it holds no chunk (a part of 75000
           floats has 2 chunks: one byte of chunk bits). */
        uint8_t st[2] = {0x02, 0x00};
        cl_wire_hdr_t sh = *h;
        sh.sub = CL_MSG_STATUS;
        sh.chunk = 0;
        sh.aux = 0;
        harness_inject(sock, sh, st, sizeof st);
    }
}

static bool is_dealer(void *sock, const cl_wire_hdr_t *h)
{
    (void)h;
    int type = 0;
    size_t len = sizeof type;
    return zmq_getsockopt(sock, ZMQ_TYPE, &type, &len) == 0 && type == ZMQ_DEALER;
}

/* The wrappers catch what goes out on DEALERs and add forgeries after. */
static const harness_wrap_t s_wrap = {is_dealer, NULL, forge_after, NULL, NULL};

/* Peer i of 4 with a hostile peer 3.  Each all-reduce of x[k] = i + 1 +
   k % 7 must give what the group present makes of honest inputs: with all
   four, the plain sum 10 + 4 (k % 7); with the hostile member taken out
   (it may be, once banned), 4 x the mean of ranks 0..2, 8 + 4 (k % 7).
   Anything else (rank 1 left out or weighted 0, the attacker's weight or
   values winning) is the attack's effect. */
static int member_main(int i, int n, size_t cnt)
{
    (void)n;
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    if (i == 3) {
        const char *h = getenv("ATTACK_HOSTILE");
        s_hostile = strcmp(h, "suspect") == 0  ? H_SUSPECT
                    : strcmp(h, "admit") == 0  ? H_ADMIT
                    : strcmp(h, "update") == 0 ? H_UPDATE
                    : strcmp(h, "figure") == 0 ? H_FIGURE
                    : strcmp(h, "flood") == 0  ? H_FLOOD
                    : strcmp(h, "credit") == 0 ? H_CREDIT
                    : strcmp(h, "early") == 0  ? H_EARLY
                    : strcmp(h, "status") == 0 ? H_STATUS
                                               : H_RESULT;
        peer_key(1, s_target);
        harness_wrap(&s_wrap);
    }
    collab_comm_t *w = collab_comm_world();
    /* One more element: rank 0 sets it once the attack has run long
       enough, and every peer stops after the all-reduce that carries it,
       so all run the same number of collectives. */
    float *x = malloc((cnt + 1) * sizeof *x), *y = malloc((cnt + 1) * sizeof *y);
    if (x == NULL || y == NULL)
        return 2;
    for (size_t k = 0; k < cnt; k++)
        x[k] = (float)(i + 1 + (int)(k % 7));
    x[cnt] = 0;
    const char *mode = getenv("ATTACK_HOSTILE");
    /* (credit: each victim bans it within its first 1 MiB, and then no
       longer takes its messages: the flood need not go out whole.) */
    const bool flood = mode != NULL && (strcmp(mode, "flood") == 0 || strcmp(mode, "early") == 0);
    double t0 = 0;
    int bad = 0, it;
    uint32_t hash = 0; /* of every result, in order: the honest peers agree */
    for (it = 0; it < 1000000; it++) {
        if (it == 1) {
            rendezvous();
            t0 = now_s();
        }
        /* After 6 s, and for a flood once it went out whole (45 s at most:
           the checks then fail on what it did not send). */
        if (i == 0 && it > 12 && x[cnt] == 0 && now_s() - t0 > 6 &&
            (!flood || (it % 16 == 0 && harness_read_int("flooded", 0) == 1) ||
             now_s() - t0 > 45)) {
            if (flood && now_s() - t0 > 45 && harness_read_int("flooded", 0) != 1)
                fprintf(stderr, "[attack] peer 0: the flood did not go out whole within 45 s\n");
            x[cnt] = 1;
        }
        rc = collab_allreduce(w, x, y, cnt + 1, COLLAB_FLOAT, &SUM, NULL);
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        bool last = rc == COLLAB_OK && y[cnt] > 0;
        if (i == 3) {
            if (last)
                break;
            continue; /* the attacker does not check */
        }
        if (rc != COLLAB_OK) {
            fprintf(stderr, "[attack] peer %d: all-reduce %d: %s\n", i, it, collab_strerror(rc));
            if (++bad > 20)
                break;
            continue;
        }
        double base = info.group_size == 4 ? 10 : info.group_size == 3 ? 8 : -1;
        /* A hostile member taken out of the group and re-admitted weighs 0
           in its first step (docs/elastic.md, "Weight 0"): a group of 4
           then gives the three honest inputs' result.  That the honest
           peers agree on each result is checked apart (result_hash). */
        if (info.group_size == 4 && y[0] == (float)8)
            base = 8;
        size_t wrong = 0, first = 0;
        for (size_t k = 0; k < cnt; k++)
            if (y[k] != (float)(base + 4.0 * (double)(k % 7)) && wrong++ == 0)
                first = k;
        hash = hash * 31u + (uint32_t)(y[0] * 4.0f) + 7u * (uint32_t)it;
        if (wrong > 0) {
            if (bad++ < 3)
                fprintf(stderr,
                        "[attack] peer %d: all-reduce %d with a group of %d: %zu of %zu "
                        "elements wrong (element %zu is %g, want %g)\n",
                        i, it, info.group_size, wrong, cnt, first, (double)y[first],
                        base + 4.0 * (double)(first % 7));
        }
        if (last)
            break;
    }
    if (i == 3) {
        fprintf(stderr, "[attack] hostile peer 3 sent %d forged messages\n",
                atomic_load(&s_forged));
        harness_write_int("forged", atomic_load(&s_forged));
        /* Wait to be killed: its finalize would only wait for the others. */
        pause();
    }
    if (bad > 0)
        s_failures++;
    char name[32];
    snprintf(name, sizeof name, "result_hash%d", i);
    harness_write_int(name, (int)(hash & 0x7fffffffu));
    fprintf(stderr, "[attack] peer %d: %d all-reduces, %d wrong\n", i, it, bad);
    CHECK(collab_finalize() == COLLAB_OK);
    free(x);
    free(y);
    return 0;
}

/* The peers of the member scenarios: member_main with this many floats. */
static size_t s_member_cnt;
static int member_peer(int i, int n)
{
    return member_main(i, n, s_member_cnt);
}

/* A hostile member (peer 3 of 4) in mode `mode`. */
int sc_member(const char *mode, size_t cnt)
{
    prepare(mode, 4);
    bool figure = strcmp(mode, "figure") == 0;
    char log[600];
    snprintf(log, sizeof log, "%s/peers.log", s_dir);
    if (figure)
        setenv("COLLAB_LOG_FILE", log, 1);
    setenv("ATTACK_HOSTILE", mode, 1);
    s_member_cnt = cnt;
    for (int i = 0; i < 4; i++)
        spawn(i, 4, i == 0 ? 0u : 0xfu & ~(1u << i), member_peer);
    CHECK(wait_ready(4, 60));
    go(4);
    double t0 = now_s();
    int bad = reap(0x7u, 90);
    double took = now_s() - t0;
    harness_kill(3);
    /* The test means something only if the forgeries went out. */
    int forged = harness_read_int("forged", 0);
    if (forged == 0) {
        fprintf(stderr, "[attack] the hostile peer sent no forgery; the test proves nothing\n");
        s_setup_failed = true;
    }
    if (figure) {
        /* Rank 0 coordinates; it names each figure it took.  One every
           5 s at most, and at least one (the forgeries reached it). */
        int taken = harness_log_lines(log, "rank 3's bandwidth figure is now", NULL);
        int allowed = (int)(took / 5.0) + 2;
        fprintf(stderr, "[attack] %d forged figures sent, %d taken in %.1f s (at most %d)\n",
                forged, taken, took, allowed);
        if (forged <= 2 * allowed) {
            fprintf(stderr, "[attack] too few forgeries to pass the limit\n");
            s_setup_failed = true;
        }
        CHECK(taken >= 1 && taken <= allowed);
    }
    return bad;
}

/* Flood of unexpected messages from a hostile member (peer 3 of 4), with
   the bounds lowered so that the test stays small: the victims' RSS is
   sampled until they finish. */
int sc_flood(const char *mode)
{
    bool credit = strcmp(mode, "credit") == 0, early = strcmp(mode, "early") == 0;
    setenv("COLLAB_MAX_UNEXPECTED", getenv("ATTACK_UNBOUNDED") ? "16777216" : "64", 1);
    setenv("COLLAB_MAX_UNEXPECTED_PER_PEER", getenv("ATTACK_UNBOUNDED") ? "16777216" : "16", 1);
    setenv("COLLAB_MAX_UNEXPECTED_MSGS", getenv("ATTACK_UNBOUNDED") ? "16777216" : "65536", 1);
    setenv("COLLAB_MAX_STREAMS_PER_PEER", getenv("ATTACK_UNBOUNDED") ? "1048576" : "8", 1);
    setenv("COLLAB_MAX_STREAMS", getenv("ATTACK_UNBOUNDED") ? "1048576" : "1024", 1);
    prepare(mode, 4);
    char log[600];
    snprintf(log, sizeof log, "%s/peers.log", s_dir);
    setenv("COLLAB_LOG_FILE", log, 1);
    setenv("ATTACK_HOSTILE", mode, 1);
    s_member_cnt = 1;
    for (int i = 0; i < 4; i++)
        spawn(i, 4, i == 0 ? 0u : 0xfu & ~(1u << i), member_peer);
    CHECK(wait_ready(4, 60));
    /* Every peer is ready once its first all-reduce completed: its engine
       started before now. */
    double started = now_s();
    if (credit || early) {
        /* A receiver younger than 2 x COLLAB_TIMEOUT may have restarted
           under its key, and its senders may still count on its old
           grant: it lets the bounds drop their excess without a ban
           (docs/wire.md section 10).  The attack comes after that,
           counted from the moment every victim was ready (counted from
           their start, on a loaded machine the victims started late and
           the whole flood could arrive within their grace: no drop past
           the credit named). */
        const char *t = getenv("COLLAB_TIMEOUT");
        double grace = 2 * (t != NULL ? atof(t) : 5.0) + 0.5;
        while (now_s() - started < grace) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    long before[3], peak[3];
    for (int i = 0; i < 3; i++)
        peak[i] = before[i] = rss_kib(s_pid[i]);
    go(4);
    double t0 = now_s();
    for (bool alive = true; alive && now_s() - t0 < 90;) {
        alive = false;
        for (int i = 0; i < 3; i++) {
            long r = rss_kib(s_pid[i]); /* -1 once it exited */
            alive |= r >= 0;
            if (r > peak[i])
                peak[i] = r;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int bad = reap(0x7u, 10);
    harness_kill(3);
    /* An honest peer the machine's load stalled for COLLAB_TIMEOUT was
       taken out of the group and finished its step alone: its results
       differ for that reason, not the flood's (seen once in a full suite
       run on two cores).  The scenario did not run as meant: set-up
       failure, run again. */
    int honest_out = 0;
    for (int i = 0; i < 3; i++) {
        char who[32];
        snprintf(who, sizeof who, "rank %d: ", i);
        honest_out += harness_log_lines(log, who, "this peer was taken out of the group");
    }
    if (honest_out > 0) {
        fprintf(stderr, "[attack] an honest peer was taken out of the group %d times\n",
                honest_out);
        s_setup_failed = true;
    }
    /* Every honest peer got the same results, in the same order (one that
       left the hostile member's messages out alone would not). */
    int h0 = harness_read_int("result_hash0", -1);
    fprintf(stderr, "[attack] results of the honest peers: %s\n",
            h0 != -1 && harness_read_int("result_hash1", -2) == h0 &&
                    harness_read_int("result_hash2", -3) == h0
                ? "the same"
                : "DIFFER");
    CHECK(h0 != -1 && harness_read_int("result_hash1", -2) == h0 &&
          harness_read_int("result_hash2", -3) == h0);
    for (int i = 0; i < 3; i++) {
        fprintf(stderr,
                "[attack] victim %d: RSS %ld KiB before the flood, at most %ld KiB during "
                "it (+%ld KiB)\n",
                i, before[i], peak[i], peak[i] - before[i]);
#if defined(__SANITIZE_ADDRESS__)
        (void)0; /* ASan's quarantine keeps freed memory resident */
#else
        if (getenv("ATTACK_UNBOUNDED") == NULL)
            CHECK(before[i] > 0 && peak[i] - before[i] < 64 * 1024);
#endif
    }
    /* The flood went out, and each victim named its sender. */
    int forged = harness_read_int("forged", 0);
    fprintf(stderr, "[attack] the hostile peer sent %d flood messages\n", forged);
    if (forged == 0)
        s_setup_failed = true;
    const char *by3 = "from rank 3 (";
    int p2p_lines = harness_log_lines(log, by3, "dropped a point-to-point message");
    int stream_lines =
        harness_log_lines(log, by3, "for a communicator this program has not created");
    int early_lines = harness_log_lines(log, by3, "dropped an early collective message");
    int credit_lines = harness_log_lines(log, by3, "passed the credit this peer granted");
    int early_credit_lines = harness_log_lines(log, by3, "granted for early collective messages");
    credit_lines -= early_credit_lines;
    fprintf(stderr,
            "[attack] log lines naming rank 3: %d point-to-point (%d past its credit, banned), "
            "%d stream, %d early, %d collective past its credit\n",
            p2p_lines, credit_lines, stream_lines, early_lines, early_credit_lines);
    if (early) {
        /* Past its grant it met the bounds: each victim dropped their
           excess and named its sender as one past its credit (a few
           lines: at powers of two), and nobody was banned. */
        CHECK(early_credit_lines >= 3 && early_lines >= 3);
        CHECK(early_credit_lines + early_lines < 200);
        CHECK(credit_lines == 0 && p2p_lines == 0);
        /* The drops are the group's decision: the victims reported it
           (two reports are the vote), and the group took it out, so that
           no victim waited alone for a message of it that it dropped. */
        int reports = harness_log_lines(log,
                                        "passed its credit for early collective messages; "
                                        "reporting it",
                                        NULL);
        int out = harness_log_lines(log, "rank 3: ", "this peer was taken out of the group");
        fprintf(stderr, "[attack] %d reports of rank 3 to the coordinator, taken out %d times\n",
                reports, out);
        CHECK(reports >= 2 && out >= 1);
    } else if (credit) {
        /* Each victim banned it at its first message past the grant: one
           line each, and nothing else from it got through.  The flood
           rides on the messages it sends each victim: one stalled long
           enough on a loaded machine (COLLAB_TIMEOUT) to be banned and
           taken out by the first victims before it sent the others past
           their grant, and they then had nothing to ban (the scenario did
           not run: set-up failure, run again). */
        int past = harness_read_int("past_credit", 0);
        fprintf(stderr, "[attack] the hostile peer sent %d victims more than their credit\n", past);
        if (past < 3)
            s_setup_failed = true;
        else
            CHECK(credit_lines >= 3 && credit_lines <= 6);
        CHECK(credit_lines >= 1 && p2p_lines == credit_lines);
    } else if (getenv("ATTACK_UNBOUNDED") == NULL) {
        CHECK(stream_lines >= 3); /* each victim named it */
        /* What it sent for the streams it opened: within the grace
           (2 x COLLAB_TIMEOUT after a victim started) the bounds drop it,
           after it a victim drops what passes the grant (docs/wire.md
           section 10). */
        CHECK(early_lines + early_credit_lines >= 3);
        CHECK(p2p_lines + stream_lines + early_lines + early_credit_lines < 200);
    }
    if (bad > 0 || s_failures > 0)
        harness_print_file(log); /* what the peers logged, for the failure's cause */
    return bad;
}
