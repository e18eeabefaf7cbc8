/*  test_swarm_unexpected.c - scenario "unexpected" of test_swarm: an
    honest program that sends many messages before their receives are
    posted loses none of them, within the bounds of docs/security-bounds.md §5.

    Three peers.  Ranks 1 and 2 each start 10000 nonblocking sends of 64
    bytes (tags 0..9999) and 8 of 1 MiB (tags 20000..20007) to rank 0,
    then all three meet at a barrier; rank 0 waits another second, so
    that everything sits in its unexpected queue, and only then posts the
    receives, in reverse tag order (each one scans the queue), and checks
    every byte.  Rank 0's resident set may grow by the messages and their
    bookkeeping (about 20 MiB), not more than 64 MiB.  The bounds run at
    their defaults except COLLAB_MAX_UNEXPECTED_MSGS=12000: above what an
    honest sender of this program keeps in flight, far below the
    defaults' room.
*/
#include "test_swarm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL 10000
#define SMALL_BYTES 64
#define LARGE 8
#define LARGE_BYTES ((size_t)1 << 20)
#define LARGE_TAG 20000

int child_unexpected(int i, int n)
{
    setenv("COLLAB_MAX_UNEXPECTED_MSGS", "12000", 1);
    collab_comm_t *w = test_join(i, NULL, NULL, 0);
    int rc;
    if (w == NULL)
        return 2;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    long before = test_self_rss_kib();
    uint8_t *large = malloc(LARGE_BYTES);
    if (large == NULL)
        return 2;
    if (i > 0) {
        collab_request_t **req = calloc(SMALL + LARGE, sizeof *req);
        uint8_t small[SMALL_BYTES];
        for (int t = 0; t < SMALL && req != NULL; t++) {
            test_fill(small, sizeof small, i, t);
            CHECK(collab_send(w, small, sizeof small, 0, t, &req[t]) == COLLAB_OK);
        }
        for (int t = 0; t < LARGE && req != NULL; t++) {
            test_fill(large, LARGE_BYTES, i, LARGE_TAG + t);
            CHECK(collab_send(w, large, LARGE_BYTES, 0, LARGE_TAG + t, &req[SMALL + t]) ==
                  COLLAB_OK);
        }
        for (int t = 0; t < SMALL + LARGE && req != NULL; t++)
            CHECK(collab_wait(&req[t], NULL) == COLLAB_OK);
        free(req);
    }
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    if (i == 0) {
        usleep(1000 * 1000);
        long queued = test_self_rss_kib();
        int wrong = 0;
        uint8_t want[SMALL_BYTES], got[SMALL_BYTES];
        uint8_t *lwant = malloc(LARGE_BYTES);
        for (int src = 1; src < n && lwant != NULL; src++) {
            for (int t = LARGE - 1; t >= 0; t--) {
                collab_status_info_t st;
                memset(large, 0, LARGE_BYTES);
                test_fill(lwant, LARGE_BYTES, src, LARGE_TAG + t);
                rc = collab_recv(w, large, LARGE_BYTES, src, LARGE_TAG + t, &st, NULL);
                wrong += rc != COLLAB_OK || st.bytes != LARGE_BYTES ||
                         memcmp(large, lwant, LARGE_BYTES) != 0;
            }
            for (int t = SMALL - 1; t >= 0; t--) {
                collab_status_info_t st;
                memset(got, 0, sizeof got);
                test_fill(want, sizeof want, src, t);
                rc = collab_recv(w, got, sizeof got, src, t, &st, NULL);
                wrong += rc != COLLAB_OK || st.bytes != sizeof got ||
                         memcmp(got, want, sizeof want) != 0;
            }
        }
        free(lwant);
        fprintf(stderr,
                "[test] rank 0: %d messages from each of %d ranks, %d wrong or missing; RSS %ld "
                "KiB before, %ld KiB with them queued (+%ld KiB)\n",
                SMALL + LARGE, n - 1, wrong, before, queued, queued - before);
        CHECK(wrong == 0);
#if !defined(__SANITIZE_ADDRESS__) /* ASan's quarantine and shadow memory */
        CHECK(before > 0 && queued - before < 64 * 1024);
#endif
    }
    free(large);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}
