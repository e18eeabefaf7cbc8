/*  attack_goodbye.c - a member that leaves gracefully and lies in its
    GOODBYE about how many collectives it entered.  A scenario of the
    attack program (attack.c):
      goodbye     4 peers run all-reduces of x[k] = i + 1 + k % 7; after
                  1 + 10 of them with the group of 4, peer 3 finalizes
                  (the graceful leave, docs/elastic.md §10), and its
                  wrapper rewrites the GOODBYE it sends every member so
                  that it names 1 << 30 collectives entered on the world
                  instead of the 11 it ran.  Peers 0-2 run 60 more
                  all-reduces.  Must be: every result exact (the sum over
                  ranks 0-2 scaled to the world of 4: 8 + 4 (k % 7)),
                  the 60 done within 8 s, and each of the three logs
                  "rank 3, which left, sent nothing for collective" at
                  most once (one communicator), at least one of them
                  once.  With the call of eng_leave_cut in
                  eng_coll_deferred commented out by hand
                  (recorded/goodbye.txt) each of the 60 waited
                  ENG_DEPARTED_GRACE for data that never came: 17.9 s in
                  all, and no such line.
*/
#include "attack.h"
#include "engine/cl_comm.h"

#include <stdlib.h>
#include <string.h>

#define BEFORE 10   /* all-reduces of the group of 4 after the rendezvous */
#define AFTER 60    /* all-reduces of the three after the departure */
#define CNT 8       /* doubles per all-reduce */
#define BOUND_S 8.0 /* for the AFTER ones; 60 x 0.2 s would be 12 s */
#define LIE ((uint64_t)1 << 30)

/* The hostile peer's outgoing GOODBYEs (to each member; on DEALERs and
   ROUTERs alike). */
static bool want_goodbye(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    return h->type == CL_MSG_GOODBYE;
}

/* Rewrites the world's `entered` through the codec (a fixed-width field:
   the body keeps its length). */
static bool lie_entered(const cl_wire_hdr_t *h, uint8_t *body, size_t len)
{
    uint8_t hb[CL_WIRE_HDR_SIZE];
    cl_wire_hdr_encode(h, hb);
    cl_wire_msg_t m;
    if (cl_wire_decode(hb, sizeof hb, body, len, &m) != CL_WIRE_OK)
        return false;
    bool ok = false;
    for (uint32_t k = 0; k < m.u.goodbye.count; k++) {
        cl_wire_bye_comm_t *c = &m.u.goodbye.comms[k];
        if (c->comm != CL_COMM_WORLD_ID)
            continue;
        harness_write_int("entered", (int)c->entered);
        c->entered = LIE;
        uint8_t *out = NULL;
        size_t olen = 0;
        if (cl_wire_encode_body(&m, &out, &olen) == CL_WIRE_OK && olen == len) {
            memcpy(body, out, len);
            ok = true;
            harness_write_int("forged", atomic_fetch_add(&s_forged, 1) + 1);
        }
        free(out);
    }
    cl_wire_msg_clear(&m);
    return ok;
}

/* One all-reduce of x[k] = i + 1 + k % 7; for an honest peer, checks
   that element k is base + 4 (k % 7) (counting a wrong call in *bad). */
static void step(collab_comm_t *w, int i, int it, double base, int *bad)
{
    double x[CNT], y[CNT];
    for (int k = 0; k < CNT; k++) {
        x[k] = i + 1 + k % 7;
        y[k] = -1;
    }
    int rc = collab_allreduce(w, x, y, CNT, COLLAB_DOUBLE, &SUM, NULL);
    if (i == 3)
        return;
    collab_info_t info = {0};
    (void)collab_last_info(&info);
    int wrong = 0, first = 0;
    for (int k = 0; k < CNT; k++)
        if (y[k] != base + 4.0 * (k % 7) && wrong++ == 0)
            first = k;
    if (rc != COLLAB_OK || wrong > 0) {
        if ((*bad)++ < 3)
            fprintf(stderr,
                    "[attack] peer %d: all-reduce %d: rc %d (%s), group of %d, %d of %d elements "
                    "wrong (element %d is %g, want %g)\n",
                    i, it, rc, collab_strerror(rc), info.group_size, wrong, CNT, first, y[first],
                    base + 4.0 * (first % 7));
    }
}

static int goodbye_peer(int i, int n)
{
    (void)n;
    char log[600];
    snprintf(log, sizeof log, "%s/peer%d.log", s_dir, i);
    setenv("COLLAB_LOG_FILE", log, 1);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    int bad = 0, it = 0;
    step(w, i, it++, 10, &bad);
    rendezvous();
    while (it < 1 + BEFORE)
        step(w, i, it++, 10, &bad);
    if (i == 3) {
        static const harness_wrap_t wrap = {want_goodbye, lie_entered, NULL, NULL, NULL};
        harness_wrap(&wrap);
        double t0 = now_s();
        rc = collab_finalize();
        fprintf(stderr, "[attack] hostile peer 3 left after %d all-reduces (%.2f s): %s\n", it,
                now_s() - t0, collab_strerror(rc));
        return 0;
    }
    /* The three: 4 x the mean of ranks 0..2, from the first collective
       peer 3 did not enter. */
    double t0 = now_s();
    while (it < 1 + BEFORE + AFTER && now_s() - t0 < 60)
        step(w, i, it++, 8, &bad);
    double took = now_s() - t0;
    char name[32];
    snprintf(name, sizeof name, "after_ms%d", i);
    harness_write_int(name, (int)(took * 1000));
    fprintf(stderr, "[attack] peer %d: %d all-reduces after the departure in %.2f s, %d wrong\n", i,
            it - 1 - BEFORE, took, bad);
    CHECK(it == 1 + BEFORE + AFTER);
    if (bad > 0)
        s_failures++;
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int sc_goodbye(void)
{
    const int n = 4;
    prepare("goodbye", n);
    for (int i = 0; i < n; i++)
        spawn(i, n, i == 0 ? 0u : 0xfu & ~(1u << i), goodbye_peer);
    CHECK(wait_ready(n, 60));
    go(n);
    int bad = reap(0x7u, 90);
    harness_kill(3);
    int forged = harness_read_int("forged", 0);
    fprintf(stderr,
            "[attack] the hostile peer rewrote %d GOODBYEs: %llu world collectives entered "
            "instead of %d\n",
            forged, (unsigned long long)LIE, harness_read_int("entered", -1));
    if (forged == 0) {
        fprintf(stderr, "[attack] no GOODBYE was rewritten; the test proves nothing\n");
        s_setup_failed = true;
        return bad;
    }
    int total = 0;
    bool printed = false;
    for (int i = 0; i < 3; i++) {
        char name[32], log[600];
        snprintf(name, sizeof name, "after_ms%d", i);
        snprintf(log, sizeof log, "%s/peer%d.log", s_dir, i);
        int ms = harness_read_int(name, -1);
        int lines = harness_log_lines(log, "rank 3, which left, sent nothing for collective", NULL);
        total += lines;
        fprintf(stderr,
                "[attack] peer %d: %d all-reduces after the departure in %d ms (bound %.0f s); "
                "%d line(s) \"rank 3, which left, sent nothing\"\n",
                i, AFTER, ms, BOUND_S, lines);
        CHECK(ms >= 0 && ms < BOUND_S * 1000);
        CHECK(lines <= 1); /* once per communicator, and there is one */
        if ((ms < 0 || ms >= BOUND_S * 1000 || lines > 1) && !printed) {
            harness_print_file(log); /* one peer's log, for the failure's cause */
            printed = true;
        }
    }
    CHECK(total >= 1);
    return bad;
}
