/*  attack_proofs.c - a producer that gives one member a wrong relay proof
    of its part and then fails, and an older peer that would bring tags
    back into a swarm that signs (docs/security.md §6, relay proofs).

    Usage: attack proofs | proofs_v8 | proofs_mixed | downgrade.  Peers
    0..3 of 4, at COLLAB_VERIFY=1 (a swarm that signs its proofs), run
    butterfly all-reduces of 300000 floats; peer 3 is a real member whose
    outgoing messages pass through the harness's wrappers.  Armed at the
    rendezvous, in the first all-reduce after it, peer 3 (the reducer of
    part 3) sends each RESULT of its part:
      to rank 1 (the victim)  with an empty contributor bitmap, which the
                              victim refuses, so it never holds the part;
      to ranks 0 and 2        as its library made it (signed), or, when
                              the proof is tags, with rank 1's tag wrong;
    then, once its RESULTs have gone out and 300 ms passed without more,
    it SIGKILLs itself.  Its input is the mean of the others' (2 + k % 7
    against i + 1 + k % 7), so every all-reduce has one right answer,
    8 + 4 (k % 7), whoever contributed: every survivor checks every
    element of every all-reduce (so they are bitwise equal), and times the
    armed one.

      proofs        every peer at wire version 10.  The holders verified
                    peer 3's signature when they took the chunk; their
                    relays to rank 1 carry it and count.  Asserted: every
                    all-reduce right at the three survivors, the armed one
                    done within COLLAB_TIMEOUT (2 s) at each (no deadline
                    waited for), and no survivor left the group.
      proofs_v8     every peer at COLLAB_WIRE_VERSION=8: tags, the code of
                    before.  Recorded (tests/attack/recorded/proofs.txt):
                    rank 1 refuses the honest relays (its tag fails), waits
                    for deadlines, suspects the honest holders.  Not a
                    CTest: it shows the effect the signatures remove.
      proofs_mixed  no attack, default settings (a swarm that does not
                    sign), peer 2 at COLLAB_WIRE_VERSION=8 (a peer of the
                    release before): admitted, tags in every collective,
                    and every all-reduce right, before and after peer 3
                    fails.  (A swarm that signs refuses peer 2: downgrade.)
      downgrade     peers 0..2 at COLLAB_VERIFY=1, peer 3 speaks the real
                    protocol at COLLAB_WIRE_VERSION=8 and does not say it
                    expects signatures.  Before the swarm's floor
                    (recorded/downgrade.txt) peer 3 was admitted and every
                    collective it was in fell back to tags: a member chose
                    the weaker proofs by speaking 8.  Asserted: peer 3's
                    collab_init fails within 10 s (every member refuses
                    its handshake: version 10 needed), peers 0..2 run 8
                    all-reduces in a group of 3, all right, and every
                    RESULT each of them sends is signed (none carries
                    tags).
      downgrade_adopted  the same, but only peer 0, the founder, sets
                    COLLAB_VERIFY=1 (peers 1 and 2 take it from the
                    swarm's settings when they join), and peer 3 starts
                    once peers 1 and 2 are members and lists only them:
                    the floor comes from the adopted settings.  Both
                    modes also check peer 3's log: every initial peer
                    refused it, naming version 10 and why.
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

#define PROOF_CNT 300000
#define VICTIM 1

static bool s_attack;         /* peer 3 rewrites its RESULTs */
static uint64_t s_seq;        /* the armed collective (0: none seen yet) */
static atomic_int s_results;  /* RESULTs of it that went out */
static atomic_long s_last_ms; /* when the last one went out (ms of now_s) */
static __thread int s_dest;   /* rank the caught message goes to */

static bool want(void *sock, const cl_wire_hdr_t *h)
{
    int type = 0;
    size_t len = sizeof type;
    if (!s_attack || !atomic_load(&s_armed) || h->type != CL_MSG_COLL || h->sub != CL_MSG_RESULT ||
        h->comm != CL_COMM_WORLD_ID || zmq_getsockopt(sock, ZMQ_TYPE, &type, &len) != 0 ||
        type != ZMQ_DEALER)
        return false;
    if (s_seq == 0)
        s_seq = h->seq;
    if (h->seq != s_seq)
        return false;
    s_dest = harness_dest_of(sock);
    return true;
}

/* Body of a RESULT: contributor bitmap (one byte for 4 members), the
   proof (signed: 96 bytes, aux says so; tags: 16 per member), the value. */
static bool rewrite(const cl_wire_hdr_t *h, uint8_t *body, size_t len)
{
    bool changed = false;
    if (s_dest == VICTIM && len > 0) {
        body[0] = 0; /* refused by the victim: it never holds the chunk */
        changed = true;
    } else if ((h->aux & CL_AUX_SIGNED) == 0 && len > 1 + 4 * CL_COLL_TAG) {
        body[1 + VICTIM * CL_COLL_TAG + 3] ^= 0x40; /* the victim's tag */
        changed = true;
    }
    atomic_fetch_add(&s_results, 1);
    atomic_store(&s_last_ms, (long)(now_s() * 1000));
    if (changed && atomic_fetch_add(&s_forged, 1) == 0)
        harness_write_int("forged", 1);
    return changed;
}

static const harness_wrap_t s_wrap = {want, rewrite, NULL, NULL, NULL};

/* Peer 3 fails once its RESULTs of the armed collective went out. */
static harness_fail_after_t s_fail = {&s_results, &s_last_ms, &s_seq, "hostile peer 3"};

static int proofs_peer(int i, int n)
{
    (void)n;
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    if (i == 3 && s_attack) {
        harness_wrap(&s_wrap);
        pthread_t t;
        if (pthread_create(&t, NULL, harness_fail_after, &s_fail) != 0)
            return 2;
        pthread_detach(t);
    }
    collab_comm_t *w = collab_comm_world();
    size_t cnt = PROOF_CNT;
    float *x = malloc((cnt + 1) * sizeof *x), *y = malloc((cnt + 1) * sizeof *y);
    if (x == NULL || y == NULL)
        return 2;
    for (size_t k = 0; k < cnt; k++)
        x[k] = (float)(i == 3 ? 2 + (int)(k % 7) : i + 1 + (int)(k % 7));
    x[cnt] = 0;
    double t0 = 0;
    int bad = 0, it, group = 0;
    for (it = 0; it < 1000; it++) {
        if (it == 1) {
            rendezvous();
            t0 = now_s();
        }
        /* Without the attack peer 3 is killed by the parent after a few
           all-reduces; rank 0 stops the run 6 s after the rendezvous. */
        if (i == 0 && it > 5 && now_s() - t0 > 6)
            x[cnt] = 1;
        double s = now_s();
        rc = collab_allreduce(w, x, y, cnt + 1, COLLAB_FLOAT, &SUM, NULL);
        double took = now_s() - s;
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        group = info.group_size;
        bool last = rc == COLLAB_OK && y[cnt] > 0;
        if (i == 3 && it == 2)
            harness_write_int("ready3", 1);
        if (harness_check_sums(i, it, rc, y, cnt, took, info.group_size, &bad) != 0) {
            if (bad > 20)
                break;
            continue;
        }
        if (last)
            break;
    }
    if (bad > 0)
        s_failures++;
    fprintf(stderr, "[attack] peer %d: %d all-reduces, %d wrong, last group of %d\n", i, it, bad,
            group);
    char name[32];
    snprintf(name, sizeof name, "group_%d", i);
    harness_write_int(name, group);
    CHECK(collab_finalize() == COLLAB_OK);
    free(x);
    free(y);
    return 0;
}

/* downgrade: RESULTs this peer sent, signed and with tags. */
static atomic_int s_signed, s_tagged;

static bool count_results(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    if (h->type == CL_MSG_COLL && h->sub == CL_MSG_RESULT)
        atomic_fetch_add((h->aux & CL_AUX_SIGNED) != 0 ? &s_signed : &s_tagged, 1);
    return false; /* read only: every message goes out as made */
}

static const harness_wrap_t s_count = {count_results, NULL, NULL, NULL, NULL};

static int downgrade_peer(int i, int n)
{
    (void)n;
    setenv("COLLAB_MATCHMAKING_TIME", "3", 1); /* a group of 3 of the 4 ranks */
    char path[300];
    snprintf(path, sizeof path, "%s/older.err", s_dir);
    if (i == 3 && freopen(path, "w", stderr) == NULL) /* its log, read by the parent */
        return 2;
    double t0 = now_s();
    int rc = collab_init(NULL);
    if (i == 3) {
        harness_write_int("admitted3", rc == COLLAB_OK);
        harness_write_int("init_ms3", (int)((now_s() - t0) * 1000));
        if (rc != COLLAB_OK) {
            fprintf(stderr, "[attack] older peer 3: collab_init: %s (kept out)\n",
                    collab_strerror(rc));
            return 0;
        }
    } else {
        if (rc != COLLAB_OK) {
            fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
            return 2;
        }
        harness_wrap(&s_count);
        char up[32];
        snprintf(up, sizeof up, "up_%d", i);
        harness_write_int(up, 1);
    }
    collab_comm_t *w = collab_comm_world();
    size_t cnt = PROOF_CNT;
    float *x = malloc(cnt * sizeof *x), *y = malloc(cnt * sizeof *y);
    if (x == NULL || y == NULL)
        return 2;
    for (size_t k = 0; k < cnt; k++)
        x[k] = (float)(1 + (int)(k % 7));
    int group = 0;
    for (int it = 0; it < 8; it++) {
        rc = collab_allreduce(w, x, y, cnt, COLLAB_FLOAT, &SUM, NULL);
        CHECK(rc == COLLAB_OK);
        if (rc != COLLAB_OK)
            break;
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        group = info.group_size;
        /* An absent rank counts as the mean of the others: the sum of the
           world of 4 whoever contributed. */
        size_t wrong = 0;
        for (size_t k = 0; k < cnt; k++)
            wrong += y[k] != (float)(4 * (1 + (int)(k % 7)));
        CHECK(wrong == 0);
    }
    char name[32];
    snprintf(name, sizeof name, "group_%d", i);
    harness_write_int(name, group);
    snprintf(name, sizeof name, "signed_%d", i);
    harness_write_int(name, atomic_load(&s_signed));
    snprintf(name, sizeof name, "tagged_%d", i);
    harness_write_int(name, atomic_load(&s_tagged));
    CHECK(collab_finalize() == COLLAB_OK);
    free(x);
    free(y);
    return 0;
}

int sc_downgrade(bool adopted)
{
    prepare(adopted ? "downgrade_adopted" : "downgrade", 4);
    for (int i = 0; i < 4; i++) {
        if (i < 3) {
            if (i == 0 || !adopted)
                setenv("COLLAB_VERIFY", "1", 1);
            else
                unsetenv("COLLAB_VERIFY");
            unsetenv("COLLAB_WIRE_VERSION");
        } else {
            unsetenv("COLLAB_VERIFY");
            setenv("COLLAB_WIRE_VERSION", "8", 1);
        }
        /* Adopted: peer 3 comes once peers 1 and 2 are members. */
        double t0 = now_s();
        while (adopted && i == 3 &&
               (harness_read_int("up_1", 0) == 0 || harness_read_int("up_2", 0) == 0) &&
               now_s() - t0 < 30) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        /* The honest peers list each other; the older one lists them
           (adopted: only the two that took the setting from the swarm). */
        unsigned older = adopted ? 0x6u : 0x7u;
        spawn(i, 4, i == 3 ? older : 0x7u & ((1u << i) - 1), downgrade_peer);
    }
    int bad = reap(0xfu, 100);
    int admitted = harness_read_int("admitted3", -1), init_ms = harness_read_int("init_ms3", -1);
    fprintf(stderr, "[attack] older peer 3: %s after %d ms\n",
            admitted == 1   ? "ADMITTED"
            : admitted == 0 ? "refused"
                            : "no answer",
            init_ms);
    CHECK(admitted == 0);
    CHECK(init_ms >= 0 && init_ms < 10000); /* about 1 s: no join deadline waited for */
    /* Refused by the members it lists, each naming the version and why
       (adopted: peers 1 and 2 raised their floor when they joined). */
    char path[300];
    snprintf(path, sizeof path, "%s/older.err", s_dir);
    int why = harness_log_lines(path, "needs wire version 10 on every link", NULL);
    int all = harness_log_lines(path, "COLLAB_INITIAL_PEERS refused this peer", "protocol version");
    fprintf(stderr, "[attack] older peer 3's log: %d refusals naming version 10, %s\n", why,
            all > 0 ? "every initial peer refused it" : "NOT refused by every initial peer");
    CHECK(why >= (adopted ? 2 : 3) && all == 1);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "group_%d", i);
        int group = harness_read_int(name, -1);
        snprintf(name, sizeof name, "signed_%d", i);
        int sig = harness_read_int(name, -1);
        snprintf(name, sizeof name, "tagged_%d", i);
        int tag = harness_read_int(name, -1);
        fprintf(stderr, "[attack] peer %d: group of %d, RESULTs sent %d signed, %d with tags\n", i,
                group, sig, tag);
        CHECK(group == 3);
        CHECK(sig > 0 && tag == 0);
    }
    return bad;
}

int sc_proofs(const char *mode)
{
    bool v8 = strcmp(mode, "proofs_v8") == 0, mixed = strcmp(mode, "proofs_mixed") == 0;
    s_attack = !mixed;
    prepare(mode, 4);
    /* Signed proofs are made only in a swarm that expects hostile
       members (a robust aggregation or COLLAB_VERIFY); the attack modes
       run in one, so that only the wire version differs.  Such a swarm
       keeps peers below version 10 out, so the mixed one runs in a swarm
       that does not sign. */
    if (mixed)
        unsetenv("COLLAB_VERIFY");
    else
        setenv("COLLAB_VERIFY", "1", 1);
    if (v8)
        setenv("COLLAB_WIRE_VERSION", "8", 1);
    for (int i = 0; i < 4; i++) {
        if (mixed)
            setenv("COLLAB_WIRE_VERSION", i == 2 ? "8" : "9", 1);
        spawn(i, 4, i == 0 ? 0u : 0xfu & ~(1u << i), proofs_peer);
    }
    CHECK(wait_ready(4, 60));
    go(4);
    if (mixed) {
        /* Peer 3 fails (SIGKILL) a few all-reduces after the rendezvous. */
        double t0 = now_s();
        while (harness_read_int("ready3", 0) == 0 && now_s() - t0 < 30) {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        harness_kill(3);
    }
    int bad = reap(0x7u, 90);
    harness_kill(3);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "armed_ms_%d", i);
        int ms = harness_read_int(name, -1);
        snprintf(name, sizeof name, "group_%d", i);
        int group = harness_read_int(name, -1);
        fprintf(stderr, "[attack] survivor %d: armed all-reduce %d ms, last group of %d\n", i, ms,
                group);
        if (!v8 && !mixed) {
            CHECK(ms >= 0 && ms < 2000); /* within COLLAB_TIMEOUT: no deadline waited for */
            CHECK(group == 3);           /* no honest holder taken out */
        }
        if (mixed)
            CHECK(group == 3);
    }
    if (s_attack && harness_read_int("forged", 0) == 0) {
        fprintf(stderr, "[attack] the hostile peer changed no result; the test proves nothing\n");
        s_setup_failed = true;
    }
    return bad;
}
