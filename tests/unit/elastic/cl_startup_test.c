/*  cl_startup_test.c - selftest of the store of start-up results.

    Keeps and serves results (signature and length checked, mismatches
    logged), refuses duplicates and bad arguments, enforces the cap with
    one warning and remembers the lowest refused index, trims what lies
    after the start-up prefix (clearing the overflow there), iterates in
    order, and tells whether every start-up collective can be answered.
*/
#include "elastic/cl_startup.h"
#include "mpi_collab.h"
#include "util/cl_selftest.h"

#include "el_testlog.h"

#include <stdlib.h>

static void test_keep_and_answer(void)
{
    cl_startup_t *s = cl_startup_new(0);
    CL_CHECK(s != NULL);
    int sum[4] = {10, 20, 30, 40};
    double norm = 2.5;
    CL_CHECK(cl_startup_put(s, 1, 0xabc, sum, sizeof sum) == 0);
    CL_CHECK(cl_startup_put(s, 4, 0xdef, &norm, sizeof norm) == 0);
    CL_CHECK(cl_startup_put(s, 2, 0x111, NULL, 0) == 0); /* a barrier: no bytes */
    CL_CHECK(cl_startup_put(s, 1, 0xabc, sum, sizeof sum) == COLLAB_ERR_ARG);
    CL_CHECK(cl_startup_put(s, 5, 1, NULL, 4) == COLLAB_ERR_ARG);
    CL_CHECK(cl_startup_put(NULL, 5, 1, sum, 4) == COLLAB_ERR_ARG);
    CL_CHECK(cl_startup_count(s) == 3 && cl_startup_bytes(s) == sizeof sum + sizeof norm);
    sum[0] = 999; /* the store keeps a copy */

    int got[4] = {0};
    CL_CHECK(cl_startup_answer(s, 1, 0xabc, got, sizeof got) == 0);
    CL_CHECK(got[0] == 10 && got[3] == 40);
    CL_CHECK(cl_startup_answer(s, 2, 0x111, NULL, 0) == 0);
    cl_startup_entry_t e;
    CL_CHECK(cl_startup_get(s, 4, &e) == 0 && e.signature == 0xdef && e.len == 8);
    CL_CHECK(*(const double *)e.data == 2.5);
    CL_CHECK(cl_startup_get(s, 3, &e) == COLLAB_ERR_ARG);

    el_log_start(CL_LOG_WARN);
    memset(got, 0, sizeof got);
    CL_CHECK(cl_startup_answer(s, 1, 0xabd, got, sizeof got) == COLLAB_ERR_ARG);
    CL_CHECK(got[0] == 0);
    CL_CHECK(cl_startup_answer(s, 1, 0xabc, got, 8) == COLLAB_ERR_ARG);
    CL_CHECK(cl_startup_answer(s, 3, 0xabc, got, 8) == COLLAB_ERR_ARG); /* nothing kept */
    CL_CHECK(cl_startup_answer(s, 1, 0xabc, NULL, 16) == COLLAB_ERR_ARG);
    char *log = el_log_take();
    CL_CHECK(el_count(log, "error: start-up collective #1 of this peer (signature 00000abd, 16 "
                           "bytes of result) differs from the swarm's (signature 00000abc, 16 "
                           "bytes)") == 1);
    CL_CHECK(el_count(log, "(signature 00000abc, 8 bytes of result)") == 1);
    CL_CHECK(el_count(log, "error:") == 2);
    free(log);

    /* Iteration in ascending order. */
    uint64_t order[4];
    int n = 0;
    for (bool ok = cl_startup_first(s, &e); ok; ok = cl_startup_next(s, e.index, &e))
        order[n++] = e.index;
    CL_CHECK(n == 3 && order[0] == 1 && order[1] == 2 && order[2] == 4);
    CL_CHECK(!cl_startup_next(s, CL_STARTUP_NONE, &e));

    /* Trim what lies after the start-up prefix. */
    CL_CHECK(cl_startup_trim(s, 2) == 2);
    CL_CHECK(cl_startup_count(s) == 1 && cl_startup_bytes(s) == sizeof sum);
    CL_CHECK(cl_startup_trim(s, 2) == 0);
    cl_startup_destroy(&s);
    CL_CHECK(s == NULL);
    cl_startup_destroy(&s);
    cl_startup_destroy(NULL);
}

static void test_cap(void)
{
    static uint8_t data[600];
    el_log_start(CL_LOG_WARN);
    cl_startup_t *s = cl_startup_new(1000);
    CL_CHECK(cl_startup_overflow(s) == CL_STARTUP_NONE);
    CL_CHECK(cl_startup_put(s, 0, 1, data, 600) == 0);
    CL_CHECK(cl_startup_put(s, 3, 1, data, 500) == COLLAB_ERR_NO_MEM);
    CL_CHECK(cl_startup_overflow(s) == 3);
    CL_CHECK(cl_startup_put(s, 5, 1, data, 401) == COLLAB_ERR_NO_MEM);
    CL_CHECK(cl_startup_overflow(s) == 3);
    CL_CHECK(cl_startup_put(s, 2, 1, data, 401) == COLLAB_ERR_NO_MEM);
    CL_CHECK(cl_startup_overflow(s) == 2);
    CL_CHECK(cl_startup_put(s, 6, 1, data, 400) == 0); /* exactly full */
    CL_CHECK(cl_startup_bytes(s) == 1000);
    CL_CHECK(cl_startup_put(s, 7, 1, NULL, 0) == 0); /* nothing to keep: fits */
    char *log = el_log_take();
    CL_CHECK(el_count(log,
                      "warning: the results of start-up collectives pass 1000 bytes at collective "
                      "#3 (500 bytes)") == 1);
    CL_CHECK(el_count(log, "warning:") == 1);
    free(log);
    /* The prefix turns out to be 2: nothing refused lies in it. */
    CL_CHECK(cl_startup_trim(s, 2) == 2);
    CL_CHECK(cl_startup_overflow(s) == CL_STARTUP_NONE);
    CL_CHECK(cl_startup_put(s, 1, 1, data, 400) == 0);
    cl_startup_destroy(&s);

    /* A trim above the refused index keeps the mark. */
    s = cl_startup_new(100);
    CL_CHECK(cl_startup_put(s, 4, 1, data, 101) == COLLAB_ERR_NO_MEM);
    CL_CHECK(cl_startup_trim(s, 5) == 0 && cl_startup_overflow(s) == 4);
    cl_startup_destroy(&s);

    /* The default cap is 64 MiB (the length is checked before any byte is
       read). */
    s = cl_startup_new(0);
    el_log_start(CL_LOG_WARN);
    CL_CHECK(cl_startup_put(s, 0, 1, data, CL_STARTUP_DEFAULT_CAP + 1) == COLLAB_ERR_NO_MEM);
    log = el_log_take();
    CL_CHECK_CONTAINS(log, "pass 64 MiB at collective #0 (67108865 bytes)");
    free(log);
    CL_CHECK(CL_STARTUP_DEFAULT_CAP == (size_t)64 << 20);
    cl_startup_destroy(&s);
}

static bool even_is_bcast(uint64_t index, void *ctx)
{
    (*(int *)ctx)++;
    return index % 2 == 0;
}

static void test_complete(void)
{
    cl_startup_t *s = cl_startup_new(0);
    int calls = 0;
    CL_CHECK(cl_startup_complete(s, 0, NULL, NULL));
    CL_CHECK(!cl_startup_complete(s, 1, NULL, NULL));
    CL_CHECK(cl_startup_complete(s, 1, even_is_bcast, &calls) && calls == 1);
    CL_CHECK(!cl_startup_complete(s, 2, even_is_bcast, &calls));
    CL_CHECK(cl_startup_put(s, 1, 9, NULL, 0) == 0);
    CL_CHECK(cl_startup_put(s, 3, 9, "x", 1) == 0);
    CL_CHECK(cl_startup_complete(s, 4, even_is_bcast, &calls));
    CL_CHECK(!cl_startup_complete(s, 6, even_is_bcast, &calls));
    CL_CHECK(!cl_startup_complete(s, 4, NULL, NULL));
    CL_CHECK(!cl_startup_complete(s, CL_STARTUP_MAX_PREFIX + 1, even_is_bcast, &calls));
    CL_CHECK(!cl_startup_complete(NULL, 0, NULL, NULL));
    cl_startup_destroy(&s);

    /* A refused result inside the prefix: never complete. */
    s = cl_startup_new(10);
    cl_log_configure(CL_LOG_ERROR, NULL);
    CL_CHECK(cl_startup_put(s, 1, 9, "0123456789a", 11) == COLLAB_ERR_NO_MEM);
    cl_log_configure(CL_LOG_INFO, NULL);
    CL_CHECK(!cl_startup_complete(s, 2, even_is_bcast, &calls));
    CL_CHECK(cl_startup_put(s, 1, 9, "0", 1) == 0); /* kept later does not clear the mark */
    CL_CHECK(!cl_startup_complete(s, 2, even_is_bcast, &calls));
    CL_CHECK(cl_startup_complete(s, 1, even_is_bcast, &calls));
    cl_startup_destroy(&s);
}

int main(void)
{
    test_keep_and_answer();
    test_cap();
    test_complete();
    el_log_cleanup();
    return cl_selftest_end("cl_startup_test");
}
