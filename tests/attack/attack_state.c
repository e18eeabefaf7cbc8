/*  attack_state.c - hostile peers against the state a joiner takes from
    its donors (docs/state-sync.md, docs/security-bounds.md §5).  Scenarios of
    the attack program (attack.c).  A world of 2: rank 0 founds the swarm
    and trains alone (it broadcast three buffers at start-up: 4 MiB, 4 KiB
    and 100 bytes, then changes them every step); rank 1 starts once rank 0
    trains, is admitted as a joiner and takes rank 0's state.

      sync_huge   rank 0 (the joiner's only donor) is hostile: the
                  wrappers rewrite, with the project's codec, every HASHES
                  it answers with, declaring each buffer as 8 GiB.  Old: the
                  joiner allocated every announced buffer up to 2^36
                  bytes, so its address space grew by 24 GiB (VmPeak).
                  Now: it allocates only at its own program's sizes, so it
                  grows by less than 1 GiB; its log names rank 0 for each
                  buffer, and says that no honest majority declared it.
      fetch_flood rank 1 (the joiner) is hostile: each FETCH it sends is
                  followed by 400 copies of itself on the same connection.
                  Old: the donor read and queued its 4 MiB state for each
                  (1.6 GiB of DATA), its resident set growing with what
                  ZeroMQ had not sent yet.  Now: it serves one joiner at
                  most COLLAB_FETCH_LIMIT (4) times its state per
                  admission, refuses the rest (NACK), names the flood in
                  its log, and its resident set grows by less than 256
                  MiB; the swarm goes on.
*/
#include "attack.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ST_BUFS 3
static const size_t s_size[ST_BUFS] = {(size_t)4 << 20, 4096, 100};
static uint8_t *s_buf[ST_BUFS];
static bool s_huge; /* sync_huge: rank 0 lies; else fetch_flood: rank 1 floods */

#define FLOOD_COPIES 400

static uint8_t st_byte(int j, size_t k, uint64_t t)
{
    return (uint8_t)(k * (size_t)(5 + 2 * j) + t * 11u + (uint64_t)j);
}

static void st_fill(uint64_t t)
{
    for (int j = 0; j < ST_BUFS; j++)
        for (size_t k = 0; k < s_size[j]; k++)
            s_buf[j][k] = st_byte(j, k, t);
}

/* sync_huge: every buffer of a HASHES declared as 8 GiB. */
static bool huge_bufs(cl_elmsg_t *m)
{
    for (uint32_t j = 0; j < m->nbufs; j++)
        m->bufs[j].size = (uint64_t)8 << 30;
    return m->nbufs > 0;
}

static bool huge(const cl_wire_hdr_t *h, uint8_t *body, size_t len)
{
    return harness_rewrite_hashes(h, body, len, huge_bufs);
}

static const harness_wrap_t s_huge_wrap = {harness_is_hashes, huge, NULL, NULL, NULL};

/* fetch_flood: each FETCH sent again FLOOD_COPIES times. */
static bool is_fetch(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    return h->type == CL_MSG_ELASTIC && h->sub == CL_EL_FETCH;
}

static void flood_fetch(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t len)
{
    for (int k = 0; k < FLOOD_COPIES; k++)
        harness_inject(sock, *h, body, len);
}

static const harness_wrap_t s_flood_wrap = {is_fetch, NULL, flood_fetch, NULL, NULL};

/* A field of /proc/self/status in KiB ("VmPeak:", "VmHWM:"), or -1. */
static long self_kib(const char *field)
{
    FILE *fp = fopen("/proc/self/status", "r");
    if (fp == NULL)
        return -1;
    char line[256];
    long v = -1;
    while (fgets(line, sizeof line, fp) != NULL)
        if (strncmp(line, field, strlen(field)) == 0)
            v = strtol(line + strlen(field), NULL, 10);
    fclose(fp);
    return v;
}

static int state_peer_main(int i, int n)
{
    setenv("COLLAB_MATCHMAKING_TIME", "1", 1); /* rank 0 trains alone first */
    bool joiner = i == n - 1;
    char log[600];
    snprintf(log, sizeof log, "%s/peer%d.log", s_dir, i);
    setenv("COLLAB_LOG_FILE", log, 1);
    if (s_huge && i == 0)
        harness_wrap(&s_huge_wrap);
    if (!s_huge && joiner)
        harness_wrap(&s_flood_wrap);
    for (int j = 0; j < ST_BUFS; j++)
        if ((s_buf[j] = calloc(1, s_size[j])) == NULL)
            return 2;
    long peak0 = self_kib("VmPeak:");
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    if (i == 0)
        st_fill(0);
    int bad = 0;
    for (int j = 0; j < ST_BUFS; j++)
        bad += collab_bcast(w, s_buf[j], s_size[j], 0, NULL) != COLLAB_OK;
    CHECK(bad == 0);
    if (joiner) {
        long grew = (self_kib("VmPeak:") - peak0) / 1024;
        fprintf(stderr, "[attack] joiner: its address space grew by %ld MiB during its start-up\n",
                grew);
        harness_write_int("joiner_grew", (int)grew);
        harness_write_int("joined", bad == 0 ? 1 : 0);
    } else {
        rendezvous();
        harness_write_int("hwm0", (int)(self_kib("VmHWM:") / 1024));
    }
    double t0 = now_s();
    uint64_t t;
    for (t = 0; t < 100000; t++) {
        double x[2] = {1, i == 0 && now_s() - t0 > 10 ? 1 : 0}, y[2] = {0, 0};
        rc = collab_allreduce(w, x, y, 2, COLLAB_DOUBLE, &SUM, NULL);
        CHECK(rc == COLLAB_OK);
        if (y[1] > 0 || rc != COLLAB_OK)
            break;
        if (i == 0 && t == 5)
            harness_write_int("trained", 1); /* the joiner may start */
        st_fill(t + 1);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (i == 0)
        harness_write_int("hwm1", (int)(self_kib("VmHWM:") / 1024));
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int sc_state(const char *mode)
{
    const int n = 2;
    s_huge = strcmp(mode, "sync_huge") == 0;
    prepare(mode, n);
    spawn(0, n, 0, state_peer_main);
    CHECK(wait_ready(1, 60));
    go(1);
    double t0 = now_s();
    while (harness_read_int("trained", 0) != 1 && now_s() - t0 < 60) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(harness_read_int("trained", 0) == 1);
    spawn(1, n, 1u, state_peer_main);
    int bad = reap((1u << n) - 1, 90);
    char log0[600], log1[600];
    snprintf(log0, sizeof log0, "%s/peer0.log", s_dir);
    snprintf(log1, sizeof log1, "%s/peer1.log", s_dir);
    int forged = harness_read_int("forged", 0);
    int joined = harness_read_int("joined", -1);
    if (forged == 0) {
        fprintf(stderr, "[attack] no forgery went out; the test proves nothing\n");
        s_setup_failed = true;
    }
    if (s_huge) {
        int grew = harness_read_int("joiner_grew", -1);
        int named = harness_log_lines(log1, "rank 0 (", "but this program's own has");
        int refused = harness_log_lines(log1, "no honest majority", NULL);
        fprintf(stderr,
                "[attack] rank 0 sent %d forged HASHES (every buffer 8 GiB); the joiner %s its "
                "start-up, its address space grew by %d MiB; lines naming rank 0: %d, refusals: "
                "%d\n",
                forged, joined == 1 ? "finished" : "did NOT finish", grew, named, refused);
        CHECK(joined == 1);
        CHECK(grew >= 0 && grew < 1024);
        CHECK(named >= 1 && refused >= 1);
    } else {
        int hwm0 = harness_read_int("hwm0", -1), hwm1 = harness_read_int("hwm1", -1);
        int named = harness_log_lines(log0, "FETCH", "COLLAB_FETCH_LIMIT");
        fprintf(stderr,
                "[attack] the joiner's flood went out (%d); the donor's resident set grew from "
                "%d to %d MiB; lines of its log naming the flood: %d\n",
                forged, hwm0, hwm1, named);
        CHECK(joined == 1);
        CHECK(hwm0 > 0 && hwm1 > 0 && hwm1 - hwm0 < 256);
        CHECK(named >= 1);
    }
    return bad;
}
