/*  test_swarm_bw.c - scenario "bandwidth" of test_swarm: butterfly parts
    sized by the members' declared bandwidth (COLLAB_BANDWIDTH_MBIT).

    Four peers; rank 3 declares 25 Mbit/s, the others 100.  Each runs
    butterfly-sized all-reduces (2 MiB of doubles) of x[k] = (rank + 1)
    v(k), integers, so that every sum is exact.  Checked:
      - with all four, every result is exactly 10 v(k), and each member
        carries what the sized parts make it: rank 3 reduces 1/64 of the
        vector (the floor of 1/16 of an equal share) and sends about
        C (1 + 2/64), the others about C (1 + 2 x 63/192), where equal
        parts would make everyone send 1.5 C;
      - rank 1 is SIGKILLed by a thread of its own while an all-reduce is
        in flight: every element the survivors get is size x the mean of
        its chunk's contributors (those the call names, perhaps rank 1
        too: the lost parts are re-cut and reduced again), and the
        survivors hold the same bits (checksums compared by MAX and MIN);
      - the three survivors then size their parts again ({100, 100, 25}:
        rank 3's link carries about C (1 + 1/48));
      - rank 2's debug log names every sized all-reduce, of four members
        and of three, with 32 KiB chunks (cl_coll_chunk_bw: the slowest
        link at 25 Mbit/s).
*/
#include "test_peers.h"
#include "test_swarm.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COUNT 262144 /* doubles: 2 MiB, well above the one-round threshold */

static double v(size_t k)
{
    return (double)(k % 977 + 1);
}

static void *s_killer(void *arg)
{
    (void)arg;
    usleep(15 * 1000); /* inside the all-reduce by then */
    raise(SIGKILL);
    return NULL;
}

/* FNV-1a of the result's bytes, folded to 48 bits (exact in a double). */
static double checksum(const double *y)
{
    uint64_t h = 1469598103934665603ull;
    const uint8_t *b = (const uint8_t *)y;
    for (size_t i = 0; i < COUNT * sizeof *y; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return (double)(h >> 16);
}

/* y against size x the mean of its contributors: each chunk's own set,
   which holds every contributor that info names and perhaps the victim
   (a chunk reduced before it died; docs/collectives.md §3). */
static int check_result(int i, const double *y, const collab_info_t *info, int n, int victim)
{
    double sum = 0;
    bool named = false;
    for (int r = 0; r < info->nranks; r++) {
        sum += info->ranks[r] + 1;
        named = named || info->ranks[r] == victim;
    }
    double f = n * sum / info->nranks;
    double g = named ? f : n * (sum + victim + 1) / (info->nranks + 1);
    for (size_t k = 0; k < COUNT; k++)
        if (!(fabs(y[k] - f * v(k)) <= 1e-12 * f * v(k)) &&
            !(fabs(y[k] - g * v(k)) <= 1e-12 * g * v(k))) {
            fprintf(stderr, "[test] rank %d: element %zu is %.17g, want %.17g or %.17g\n", i, k,
                    y[k], f * v(k), g * v(k));
            return 1;
        }
    return 0;
}

/* One peer's run: its world, its input and result. */
typedef struct {
    collab_comm_t *w;
    double *x, *y;
    collab_info_t info;
    char log[512]; /* its log file */
} bw_run_t;

/* Joins as peer i (logging to <log><i>) and runs `rounds` all-reduces of
   all n peers: every sum exact, this member's traffic each way within
   lo..hi times the vector.  False when it could not start. */
static bool bw_rounds(bw_run_t *r, int i, int n, const char *log, int rounds, double lo, double hi)
{
    memset(r, 0, sizeof *r);
    r->w = test_join(i, log, r->log, sizeof r->log);
    r->x = malloc(COUNT * sizeof *r->x);
    r->y = malloc(COUNT * sizeof *r->y);
    if (r->w == NULL || r->x == NULL || r->y == NULL)
        return false;
    for (size_t k = 0; k < COUNT; k++)
        r->x[k] = (i + 1) * v(k);
    const double C = COUNT * sizeof(double);
    for (int it = 0; it < rounds; it++) {
        CHECK(collab_allreduce(r->w, r->x, r->y, COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(collab_last_info(&r->info) == COLLAB_OK);
        CHECK(r->info.group_size == n);
        size_t bad = 0;
        for (size_t k = 0; k < COUNT; k++)
            bad += r->y[k] != 10 * v(k);
        CHECK(bad == 0);
        double sent = (double)r->info.bytes_sent, recv = (double)r->info.bytes_received;
        CHECK(sent > lo * C && sent < hi * C);
        CHECK(recv > lo * C && recv < hi * C);
        if (it == 0)
            fprintf(stderr, "[test] rank %d: sent %.3f C, received %.3f C\n", i, sent / C,
                    recv / C);
    }
    return true;
}

static int bw_end(bw_run_t *r)
{
    free(r->x);
    free(r->y);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int child_bandwidth(int i, int n)
{
    setenv("COLLAB_BANDWIDTH_MBIT", i == 3 ? "25" : "100", 1);
    if (i == 2) /* its log names each sized all-reduce's parts and chunk */
        setenv("COLLAB_LOG", "debug", 1);
    /* All four: exact sums, and the traffic of sized parts. */
    bw_run_t r;
    if (!bw_rounds(&r, i, n, "bwlog", 3, i == 3 ? 1.0 : 1.62, i == 3 ? 1.05 : 1.7))
        return 2;
    collab_comm_t *w = r.w;
    double *x = r.x, *y = r.y;
    const double C = COUNT * sizeof(double);
    collab_info_t info = r.info;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    /* Rank 1 dies in the middle of an all-reduce. */
    pthread_t t;
    if (i == 1 && pthread_create(&t, NULL, s_killer, NULL) != 0)
        raise(SIGKILL);
    int iters = 0, wrong = 0;
    do {
        CHECK(collab_allreduce(w, x, y, COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(collab_last_info(&info) == COLLAB_OK);
        wrong += check_result(i, y, &info, n, 1);
        iters++;
    } while (info.group_size == n && iters < 200);
    CHECK(wrong == 0);
    CHECK(info.group_size == n - 1);
    double hi = 0, lo = 0, sum = checksum(y);
    CHECK(collab_allreduce(w, &sum, &hi, 1, COLLAB_DOUBLE, &MAX, NULL) == COLLAB_OK);
    CHECK(collab_allreduce(w, &sum, &lo, 1, COLLAB_DOUBLE, &MIN, NULL) == COLLAB_OK);
    CHECK(hi == lo && hi == sum);
    /* Three survivors: sized again. */
    CHECK(collab_allreduce(w, x, y, COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(collab_last_info(&info) == COLLAB_OK);
    CHECK(info.group_size == n - 1);
    CHECK(check_result(i, y, &info, n, 1) == 0);
    double sent = (double)info.bytes_sent;
    if (i == 3)
        CHECK(sent > 1.0 * C && sent < 1.05 * C);
    else
        CHECK(sent > 1.45 * C && sent < 1.55 * C);
    fprintf(stderr, "[test] rank %d: went on without rank 1 after %d all-reduces; sent %.3f C\n", i,
            iters, sent / C);
    if (i == 2) {
        /* Chunks by the slowest link (cl_coll_chunk_bw): 25 Mbit/s with
           three others or two gives the 32 KiB floor, never the 256 KiB
           default; sized parts with four members and then with three. */
        int four = test_peers_log_lines(r.log, "4 parts sized by bandwidth", NULL);
        int three = test_peers_log_lines(r.log, "3 parts sized by bandwidth", NULL);
        int small = test_peers_log_lines(r.log, "; chunks of 32768 bytes", NULL);
        fprintf(stderr,
                "[test] rank 2: %d all-reduces sized for four, %d for three, %d in 32 KiB chunks\n",
                four, three, small);
        CHECK(four >= 4 && three >= 1 && small == four + three);
    }
    return bw_end(&r);
}

/* Scenario "bandwidth_v6": the same figures, but rank 2 speaks wire
   version 6 (COLLAB_WIRE_VERSION=6), whose JOIN and views carry none.  Its
   figure is unknown to everyone and it sees no figures at all, so every
   member cuts equal parts: sums exact, everyone carrying 1.5 x the vector
   each way, and no member excluded for a signature of its own. */
int child_bandwidth_v6(int i, int n)
{
    setenv("COLLAB_BANDWIDTH_MBIT", i == 3 ? "25" : "100", 1);
    if (i == 2)
        setenv("COLLAB_WIRE_VERSION", "6", 1);
    bw_run_t r;
    if (!bw_rounds(&r, i, n, "bw6log", 3, 1.45, 1.55))
        return 2;
    return bw_end(&r);
}

/* Scenario "bandwidth_claims": absurd figures.  Rank 0 claims the most
   COLLAB_BANDWIDTH_MBIT takes (4 Tbit/s), rank 1 the least (1 kbit/s),
   ranks 2 and 3 100 Mbit/s.  Rank 0's part stops at two equal shares
   (half the vector: its link carries 2 C), rank 1's at 1/16 of one
   (1/64: 1.031 C), ranks 2 and 3 share the rest (about 1.48 C each);
   the sums stay exact. */
int child_bandwidth_claims(int i, int n)
{
    static const char *claim[4] = {"4000000", "0.001", "100", "100"};
    static const double lo[4] = {1.98, 1.0, 1.46, 1.46}, hi[4] = {2.02, 1.05, 1.51, 1.51};
    setenv("COLLAB_BANDWIDTH_MBIT", claim[i], 1);
    bw_run_t r;
    if (!bw_rounds(&r, i, n, "bwclog", 2, lo[i], hi[i]))
        return 2;
    return bw_end(&r);
}

/* Scenario "adaptive": COLLAB_COMPRESSION=adaptive (docs/collectives.md
   §2.2c).  Rank 3 declares 25 Mbit/s, the others 100, so rank 3 (a
   quarter of the median) sends int8 and the others full precision;
   rank 2 does not set the variable and takes it from the swarm.
   Checked over three all-reduces of 2 MiB of doubles:
     - every member holds the same bits (checksums by MAX and MIN);
     - each element is within int8's error of the exact 10 v(k): rank 3's
       input and the results of its part are quantised, nothing else;
     - rank 3 sends about C (1 + 2/64) elements at 1 + 8/256 bytes each
       (0.13 C, against 1.03 C without compression), and the others about
       1.65 C (their contributions to rank 3's small part go as int8). */
int child_adaptive(int i, int n)
{
    setenv("COLLAB_BANDWIDTH_MBIT", i == 3 ? "25" : "100", 1);
    if (i != 2)
        setenv("COLLAB_COMPRESSION", "adaptive", 1);
    collab_comm_t *w = test_join(i, "adlog", NULL, 0);
    double *x = malloc(COUNT * sizeof *x), *y = malloc(COUNT * sizeof *y);
    if (w == NULL || x == NULL || y == NULL)
        return 2;
    for (size_t k = 0; k < COUNT; k++)
        x[k] = (i + 1) * v(k);
    const double C = COUNT * sizeof(double);
    for (int it = 0; it < 3; it++) {
        collab_info_t info;
        CHECK(collab_allreduce(w, x, y, COUNT, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
        CHECK(collab_last_info(&info) == COLLAB_OK);
        CHECK(info.group_size == n);
        size_t bad = 0, exact = 0;
        for (size_t k = 0; k < COUNT; k++) {
            double err = fabs(y[k] - 10 * v(k));
            bad += !(err <= 0.01 * 10 * 977); /* int8: max/254 per block, twice */
            exact += err == 0;
        }
        CHECK(bad == 0);
        CHECK(exact < COUNT); /* something was quantised */
        double hi = 0, lo = 0, sum = checksum(y);
        CHECK(collab_allreduce(w, &sum, &hi, 1, COLLAB_DOUBLE, &MAX, NULL) == COLLAB_OK);
        CHECK(collab_allreduce(w, &sum, &lo, 1, COLLAB_DOUBLE, &MIN, NULL) == COLLAB_OK);
        CHECK(hi == lo && hi == sum);
        double sent = (double)info.bytes_sent;
        if (i == 3)
            CHECK(sent > 0.12 * C && sent < 0.15 * C);
        else
            CHECK(sent > 1.55 * C && sent < 1.7 * C);
        if (it == 0)
            fprintf(stderr, "[test] rank %d: sent %.3f C, received %.3f C, %zu of %d exact\n", i,
                    sent / C, (double)info.bytes_received / C, exact, COUNT);
    }
    free(x);
    free(y);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}
