/*  verify.c - a reducer that corrupts its own part, against COLLAB_VERIFY.

    Usage: attack_verify [runs] [collectives].  Each run starts 8 real
    peers on loopback (forked processes that call collab_init, as
    collab-run would start them) with COLLAB_VERIFY=1.  Peer 5 is a
    hostile member: it runs the same all-reduces, but the wrappers of
    zmq_send/zmq_msg_send below decode every message it sends with the
    project's codec and, in each butterfly RESULT it sends for the part it
    reduces, add 1000 to every value before it goes out.  The RESULT is
    well formed and comes from the part's owner, so only a validator that
    recomputes the part can tell.

    Every honest peer runs `collectives` (default 60) all-reduces of
    32768 + 1 floats, x[k] = rank + 1 + k % 7, and checks each: with the
    hostile member in the group the result may be wrong (nothing repairs a
    result after the fact), and the collective in which it is removed may
    mix parts with and without it; from the next one on, every result
    must be 8/7 x the sum of the 7 honest peers' inputs, no honest peer may ever be left out, and
   the hostile member must be out by collective 50 at the latest.  The parent then checks that the
   coordinator's log names the conviction
    ("returned a wrong result").  It prints, per run, the collective at
    which peer 0 first saw the group of 7; bench/verify.sh runs 20 runs.

    Recorded effect without verification (COLLAB_VERIFY=0, see
    tests/attack/recorded/verify.txt): every result of every collective
    wrong, the hostile member never removed.
*/
#include "harness.h"

#include "coll/cl_coll_impl.h"
#include "engine/cl_comm.h"
#include "util/cl_identity.h"
#include "util/cl_xsign.h"

#include <math.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NP 8
#define HOSTILE 5
#define CNT 32768
#define BOUND 50 /* the hostile member must be out by this collective */

/* ---------------------------------------------------------------------- */
/* The hostile member's wrappers: they catch the butterfly RESULTs it
   sends for its part and add 1000 to each value.  A signed result (wire
   version 9: bitmap, 1 byte for 8 members, the 96-byte proof, then
   floats) is signed again with the member's own identity key, as a
   hostile library would sign what it sends, so that it stays well formed
   and only a validator that recomputes the part can tell; a result with
   tags (bitmap, tags, floats) goes out with its tags changed too, which
   nothing checks on a result from its producer. */

static cl_identity_t *s_id; /* the hostile member's identity */

static bool is_result(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    return h->type == CL_MSG_COLL && h->sub == CL_MSG_RESULT && h->comm == CL_COMM_WORLD_ID;
}

/* The proof of cl_coll.c's s_sig_msg (with the engine's run id first) for
   chunk (h->part, h->chunk) of the hostile member's part, signed again. */
static void resign(const cl_wire_hdr_t *h, uint8_t *d, size_t blen)
{
    static const char domain[] = "mpicollab chunk v1";
    size_t r = strlen(s_run), dl = sizeof domain - 1, off = 1 + CL_COLL_SIG;
    uint8_t *m = malloc(2 + r + dl + 28 + 1 + 32);
    if (m == NULL || s_id == NULL) {
        free(m);
        return;
    }
    size_t k = 0;
    m[k++] = (uint8_t)(r & 0xff);
    m[k++] = (uint8_t)(r >> 8);
    memcpy(m + k, s_run, r);
    k += r;
    memcpy(m + k, domain, dl);
    k += dl;
    uint64_t comm = h->comm, seq = h->seq;
    uint32_t part = h->part, chunk = h->chunk, rank = HOSTILE;
    for (int b = 0; b < 8; b++) {
        m[k + b] = (uint8_t)(comm >> (8 * b));
        m[k + 8 + b] = (uint8_t)(seq >> (8 * b));
    }
    for (int b = 0; b < 4; b++) {
        m[k + 16 + b] = (uint8_t)(part >> (8 * b));
        m[k + 20 + b] = (uint8_t)(chunk >> (8 * b));
        m[k + 24 + b] = (uint8_t)(rank >> (8 * b));
    }
    k += 28;
    m[k++] = d[0];
    crypto_generichash(m + k, 32, d + off, blen - off, NULL, 0);
    k += 32;
    (void)cl_xsign_sign(cl_identity_secret_key(s_id), m, k, d + 1 + CL_XSIGN_PK, d + 1);
    free(m);
}

static bool corrupt(const cl_wire_hdr_t *h, uint8_t *d, size_t blen)
{
    bool sig = (h->aux & CL_AUX_SIGNED) != 0;
    size_t off = sig ? 1 + CL_COLL_SIG : 1;
    /* Butterfly results only: the small all-reduces' exchange pieces
       (no CL_AUX_SIGNED, a few floats after their own signature in a
       swarm that signs) are its input, which this test leaves alone. */
    if (blen < off + sizeof(float) || (!sig && blen <= 1 + (size_t)NP * CL_COLL_TAG))
        return false;
    for (size_t k = off; k + sizeof(float) <= blen; k += sizeof(float)) {
        float v;
        memcpy(&v, d + k, sizeof v);
        v += 1000.0f;
        memcpy(d + k, &v, sizeof v);
    }
    if (sig)
        resign(h, d, blen);
    return true;
}

static const harness_wrap_t s_wrap = {is_result, corrupt, NULL, NULL, NULL};

/* ---------------------------------------------------------------------- */
/* The peers. */

static int s_iters;

/* What verify adds to the environment of harness_peer_env. */
static void peer_env(int i)
{
    char path[512];
    if (getenv("COLLAB_VERIFY") == NULL)
        setenv("COLLAB_VERIFY", "1", 1);
    snprintf(path, sizeof path, "%s/log%d", s_dir, i);
    setenv("COLLAB_LOG_FILE", path, 1);
}

/* Peer i: `iters` all-reduces, checked (see the top comment).  Peer 0
   writes the collective at which it first saw the group of 7 (or -1) to
   <dir>/out. */
static int peer_main(int i, int n)
{
    (void)n;
    int iters = s_iters;
    bool hostile = i == HOSTILE;
    peer_env(i);
    if (hostile) {
        char err[256];
        s_id = cl_identity_new(getenv("COLLAB_IDENTITY"), err, sizeof err);
        if (s_id == NULL)
            fprintf(stderr, "[verify] peer %d: its identity: %s\n", i, err);
        harness_wrap(&s_wrap);
    }
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[verify] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    float *x = malloc((CNT + 1) * sizeof *x), *y = malloc((CNT + 1) * sizeof *y);
    if (x == NULL || y == NULL)
        return 2;
    for (size_t k = 0; k < CNT; k++)
        x[k] = (float)(i + 1 + (int)(k % 7));
    x[CNT] = 0;
    collab_op_t sum = {COLLAB_OP_SUM, NULL, NULL, 1};
    /* Until all 8 are in the group (a peer may join late): small
       all-reduces, which every member of one group ends together. */
    double t0 = now_s();
    for (;;) {
        double one = 1, got = 0;
        collab_info_t info = {0};
        rc = collab_allreduce(w, &one, &got, 1, COLLAB_DOUBLE, &sum, NULL);
        (void)collab_last_info(&info);
        if (rc == COLLAB_OK && info.group_size == NP)
            break;
        if (now_s() - t0 > 60) {
            fprintf(stderr, "[verify] peer %d: the group of 8 did not form within 60 s\n", i);
            return 3;
        }
    }
    int out_at = -1, bad = 0, wrong8 = 0;
    for (int it = 0; it < iters; it++) {
        /* Peer 0 marks the last all-reduce: every peer stops after it,
           the hostile one too (while it is still a member). */
        if (i == 0 && it == iters - 1)
            x[CNT] = 1;
        rc = collab_allreduce(w, x, y, CNT + 1, COLLAB_FLOAT, &sum, NULL);
        collab_info_t info = {0};
        (void)collab_last_info(&info);
        if (hostile) {
            if (rc == COLLAB_OK && y[CNT] > 0)
                break;
            if (rc != COLLAB_OK)
                break; /* removed */
            continue;
        }
        if (rc != COLLAB_OK) {
            fprintf(stderr, "[verify] peer %d: all-reduce %d: %s\n", i, it, collab_strerror(rc));
            bad++;
            break;
        }
        if (info.group_size == NP - 1 && out_at < 0)
            out_at = it;
        if (info.group_size == NP) {
            if (out_at >= 0) {
                fprintf(stderr, "[verify] peer %d: all-reduce %d: the hostile member is back\n", i,
                        it);
                bad++;
            }
            /* Its result may be wrong (nothing repairs it): counted for
               the log only. */
            for (size_t k = 0; k < CNT; k++)
                if (y[k] != (float)(36.0 + 8.0 * (double)(k % 7))) {
                    wrong8++;
                    break;
                }
            continue;
        }
        if (info.group_size != NP - 1) {
            fprintf(stderr, "[verify] peer %d: all-reduce %d with a group of %d\n", i, it,
                    info.group_size);
            bad++;
            continue;
        }
        /* The removal may land inside that collective: parts reduced
           before it still hold the hostile member's contribution (a
           member that failed mid-collective stays in the parts that had
           its data, docs/collectives.md).  From the next one on, exact. */
        if (it == out_at)
            continue;
        size_t wrong = 0, first = 0;
        for (size_t k = 0; k < CNT; k++) {
            double want = 8.0 / 7.0 * (30.0 + 7.0 * (double)(k % 7));
            if (fabs((double)y[k] - want) > 1e-4 * want && wrong++ == 0)
                first = k;
        }
        if (wrong > 0) {
            if (bad < 3)
                fprintf(stderr, "[verify] peer %d: all-reduce %d: %zu elements wrong (%zu: %g)\n",
                        i, it, wrong, first, (double)y[first]);
            bad++;
        }
    }
    if (hostile) {
        pause(); /* killed by the parent */
        return 0;
    }
    if (out_at < 0 || out_at > BOUND) {
        fprintf(stderr, "[verify] peer %d: the hostile member was %s\n", i,
                out_at < 0 ? "never taken out" : "taken out too late");
        bad++;
    }
    fprintf(stderr,
            "[verify] peer %d: group of 7 from all-reduce %d on, %d checks failed; %d "
            "all-reduces with the hostile member had a wrong result\n",
            i, out_at, bad, wrong8);
    if (i == 0)
        harness_write_int("out", out_at);
    rc = collab_finalize();
    free(x);
    free(y);
    return bad > 0 || rc != COLLAB_OK ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* The parent. */

static bool log_has(int i, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "%s/log%d", s_dir, i);
    return harness_log_lines(path, what, NULL) > 0;
}

/* One run; returns 0 on success, 1 on failure, 3 on a broken set-up.
 *out_at gets the collective at which the group shrank. */
static int one_run(int run, int iters, int *out_at)
{
    char id[128];
    snprintf(id, sizeof id, "attack-verify-%d-%d", (int)getpid(), run);
    harness_prepare("verify", id, NP);
    s_iters = iters;
    for (int i = 0; i < NP; i++)
        spawn(i, NP, i == 0 ? 0u : ((1u << NP) - 1) & ~(1u << i), peer_main);
    (void)reap(((1u << NP) - 1) & ~(1u << HOSTILE), 120);
    int bad = 0;
    bool setup = false;
    for (int i = 0; i < NP; i++) {
        if (i == HOSTILE || s_status[i] == 0)
            continue;
        if (s_status[i] == 3)
            setup = true;
        else
            bad++;
    }
    harness_kill(HOSTILE);
    if (setup && bad == 0) {
        fprintf(stderr, "[verify] run %d: the swarm did not form (logs in %s)\n", run, s_dir);
        return 3;
    }
    *out_at = harness_read_int("out", -1);
    /* The coordinator (rank 0) names the convicted member. */
    if (!log_has(0, "returned a wrong result")) {
        fprintf(stderr, "[verify] run %d: rank 0's log does not name the wrong result\n", run);
        bad++;
    }
    if (bad > 0 || getenv("VERIFY_KEEP") != NULL)
        fprintf(stderr, "[verify] run %d: logs kept in %s\n", run, s_dir);
    else
        harness_cleanup();
    return bad > 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 2;
    int iters = argc > 2 ? atoi(argv[2]) : 60;
    if (runs < 1 || iters < BOUND + 2) {
        fprintf(stderr, "usage: attack_verify [runs >= 1] [collectives >= %d]\n", BOUND + 2);
        return 3;
    }
    signal(SIGPIPE, SIG_IGN);
    harness_tag = "verify";
    if (getenv("COLLAB_TIMEOUT") == NULL)
        setenv("COLLAB_TIMEOUT", "5", 1);
    int failed = 0;
    for (int r = 0; r < runs; r++) {
        int at = -1;
        double t0 = now_s();
        int rc = one_run(r, iters, &at);
        if (rc == 3)
            return 3;
        failed += rc != 0;
        printf("run %d: %s, group of 7 from all-reduce %d on (%.1f s)\n", r,
               rc == 0 ? "caught" : "FAILED", at, now_s() - t0);
        fflush(stdout);
    }
    printf("verify: %d of %d runs caught and removed the corrupting reducer by all-reduce %d\n",
           runs - failed, runs, BOUND);
    return failed > 0 ? 1 : 0;
}
