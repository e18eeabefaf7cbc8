/*  test_swarm_shm_p2p.c - scenario "shm_p2p" of test_swarm: point-to-point
    messages between the two peers of one host go through the
    shared-memory rings, whole and in order.

    Two peers on one host (COLLAB_SHM=auto, so their link is a same-host
    one).  Each way, in turn: messages of 0 B to 40 MiB (more than twice a
    16 MiB ring: fragments, wrapping), standard and synchronous (a
    synchronous send's completion is a P2P_CTL message back), then a
    stream of P2P_STREAM small messages with sequence numbers, sent as
    nonblocking sends around an all-reduce (COLL on the same ring) and
    received after it: each arrives intact and in the order sent.  Then
    rank 1 stops rank 0 and sends it 288 MiB, more than the rings' own
    queue bound, which must all be taken and arrive once rank 0 runs
    again (ahead).  At the
    end each peer's debug log counts the messages its rings carried: at
    least 90% of the point-to-point messages it received (a message right
    behind a CurveZMQ one, such as a heartbeat, the peer may not have
    handed on yet takes CurveZMQ too; a build that sends them all over
    CurveZMQ moves only the collectives' one or two there).
*/
#include "test_swarm.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define P2P_SIZES 8
#define P2P_STREAM 300
#define P2P_STREAM_TAG 7000
#define P2P_BIG ((size_t)40 << 20)

static const size_t s_sizes[P2P_SIZES] = {
    0, 1, 1000, 65536, (size_t)1 << 20, ((size_t)16 << 20) + 5, P2P_BIG - 3, 77};

/* The messages the rings carried, from this peer's debug log ("... %llu
   received through rings"); -1 when the line is missing. */
static long long ring_received(const char *log)
{
    FILE *f = fopen(log, "r");
    if (f == NULL)
        return -1;
    char line[1024];
    long long got = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        const char *p = strstr(line, "shared memory: ");
        unsigned long long sent, recv;
        if (p != NULL &&
            sscanf(p, "shared memory: %llu messages sent and %llu received through rings", &sent,
                   &recv) == 2)
            got = (long long)recv;
    }
    fclose(f);
    return got;
}

/* Sends every size from `from` to `to` (standard, then synchronous for
   every other one), or receives and checks them.  Returns the messages
   received here. */
static int sizes_one_way(collab_comm_t *w, int me, int from, int to, uint8_t *buf, uint8_t *want)
{
    int got = 0;
    for (int k = 0; k < P2P_SIZES; k++) {
        size_t len = s_sizes[k];
        int tag = 100 + k;
        if (me == from) {
            test_fill(buf, len, from, tag);
            if (k % 2 == 1)
                CHECK(collab_ssend(w, buf, len, to, tag, NULL) == COLLAB_OK);
            else
                CHECK(collab_send(w, buf, len, to, tag, NULL) == COLLAB_OK);
        } else {
            collab_status_info_t st;
            memset(buf, 0xEE, len + 1);
            test_fill(want, len, from, tag);
            CHECK(collab_recv(w, buf, P2P_BIG, from, tag, &st, NULL) == COLLAB_OK);
            CHECK(st.source == from && st.tag == tag && st.bytes == len);
            CHECK(memcmp(buf, want, len) == 0);
            CHECK(buf[len] == 0xEE); /* nothing past the message */
            got++;
        }
    }
    return got;
}

/* P2P_STREAM numbered messages from `from`, sent before an all-reduce and
   received after it, in order. */
static int stream_one_way(collab_comm_t *w, int me, int from, int to)
{
    uint64_t msg[4];
    collab_request_t *req[P2P_STREAM];
    int got = 0;
    if (me == from)
        for (int k = 0; k < P2P_STREAM; k++) {
            for (int j = 0; j < 4; j++)
                msg[j] = ((uint64_t)from << 32) | (uint64_t)(k * 4 + j);
            req[k] = NULL;
            CHECK(collab_send(w, msg, sizeof msg, to, P2P_STREAM_TAG, &req[k]) == COLLAB_OK);
        }
    double x = me + 1, sum = 0;
    CHECK(collab_allreduce(w, &x, &sum, 1, COLLAB_DOUBLE, &SUM, NULL) == COLLAB_OK);
    CHECK(sum == 3.0);
    if (me == from) {
        for (int k = 0; k < P2P_STREAM; k++)
            CHECK(collab_wait(&req[k], NULL) == COLLAB_OK);
        return 0;
    }
    for (int k = 0; k < P2P_STREAM; k++) {
        collab_status_info_t st;
        memset(msg, 0, sizeof msg);
        CHECK(collab_recv(w, msg, sizeof msg, COLLAB_ANY_SOURCE, COLLAB_ANY_TAG, &st, NULL) ==
              COLLAB_OK);
        CHECK(st.source == from && st.tag == P2P_STREAM_TAG && st.bytes == sizeof msg);
        for (int j = 0; j < 4; j++)
            CHECK(msg[j] == (((uint64_t)from << 32) | (uint64_t)(k * 4 + j)));
        got++;
    }
    return got;
}

/* AHEAD_MSGS messages of 24 MiB from rank 1 while rank 0 is stopped
   (SIGSTOP from rank 1: its engine reads nothing), so that more than the
   rings' own 256 MiB queue bound waits in rank 1; every send must succeed
   (flow control bounds what is in flight), and once rank 0 runs again
   every message arrives whole and in order.  The scenario runs with
   COLLAB_TIMEOUT=10, so that a slow sender (a sanitizer build on a loaded
   machine) does not take the stopped peer for dead. */
#define AHEAD_MSGS 12
#define AHEAD_BYTES ((size_t)24 << 20)

static int ahead(collab_comm_t *w, int me, uint8_t *buf, uint8_t *want)
{
    int pid = (int)getpid(), other = 0;
    if (me == 0)
        CHECK(collab_send(w, &pid, sizeof pid, 1, 50, NULL) == COLLAB_OK);
    else
        CHECK(collab_recv(w, &other, sizeof other, 0, 50, NULL, NULL) == COLLAB_OK);
    if (me == 1) {
        test_fill(buf, AHEAD_BYTES, 1, 60); /* the same bytes under each tag */
        CHECK(other > 0 && kill((pid_t)other, SIGSTOP) == 0);
        for (int k = 0; k < AHEAD_MSGS; k++) {
            int rc = collab_send(w, buf, AHEAD_BYTES, 0, 60 + k, NULL);
            if (rc != COLLAB_OK)
                fprintf(stderr, "[test] rank 1: send %d of 24 MiB to the stopped rank 0: %s\n", k,
                        collab_strerror(rc));
            CHECK(rc == COLLAB_OK);
        }
        CHECK(kill((pid_t)other, SIGCONT) == 0);
        return 1; /* the pid */
    }
    int got = 0;
    test_fill(want, AHEAD_BYTES, 1, 60);
    for (int k = 0; k < AHEAD_MSGS; k++) {
        collab_status_info_t st;
        memset(buf, 0, AHEAD_BYTES);
        CHECK(collab_recv(w, buf, AHEAD_BYTES, 1, COLLAB_ANY_TAG, &st, NULL) == COLLAB_OK);
        CHECK(st.tag == 60 + k && st.bytes == AHEAD_BYTES && memcmp(buf, want, AHEAD_BYTES) == 0);
        got++;
    }
    return got;
}

int child_shm_p2p(int i, int n)
{
    (void)n;
    setenv("COLLAB_SHM", "auto", 1);
    setenv("COLLAB_LOG", "debug", 1);
    char log[512];
    collab_comm_t *w = test_join(i, "shmp2plog", log, sizeof log);
    if (w == NULL)
        return 2;
    uint8_t *buf = malloc(P2P_BIG + 1), *want = malloc(P2P_BIG);
    if (buf == NULL || want == NULL)
        return 2;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    double t0 = now_s();
    int got = 0;
    for (int from = 0; from < 2; from++) {
        got += sizes_one_way(w, i, from, 1 - from, buf, want);
        got += stream_one_way(w, i, from, 1 - from);
    }
    got += ahead(w, i, buf, want);
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    fprintf(stderr, "[test] rank %d: %d point-to-point messages received in %.2f s\n", i, got,
            now_s() - t0);
    CHECK(got == P2P_SIZES + P2P_STREAM + (i == 0 ? AHEAD_MSGS : 1));
    CHECK(collab_finalize() == COLLAB_OK);
    long long rings = ring_received(log);
    fprintf(stderr, "[test] rank %d: the rings carried %lld messages to it\n", i, rings);
    /* A message right behind a CurveZMQ one the peer may not have handed
       on yet (a heartbeat) takes CurveZMQ too, to keep the order. */
    CHECK(rings >= got * 9 / 10);
    free(buf);
    free(want);
    return 0;
}

/* Scenario "shm_p2p_kill": rank 1 sends rank 0 40 messages of 24 MiB
   (960 MiB) through the ring, faster than rank 0 takes them, and is
   SIGKILLed right after its last send returns, while its engine still
   streams them.  Every message rank 0 receives is whole; the first
   receive after the kill fails with COLLAB_ERR_PROC_FAILED, within the
   failure detector's time, and nothing hangs. */
#define KILL_BYTES ((size_t)24 << 20)
#define KILL_MSGS 40

int child_shm_p2p_kill(int i, int n)
{
    (void)n;
    setenv("COLLAB_SHM", "auto", 1);
    collab_comm_t *w = test_join(i, "shmp2pkill", NULL, 0);
    if (w == NULL)
        return 2;
    uint8_t *buf = malloc(KILL_BYTES), *want = malloc(KILL_BYTES);
    if (buf == NULL || want == NULL)
        return 2;
    CHECK(collab_barrier(w, NULL) == COLLAB_OK);
    if (i == 1) {
        test_fill(buf, KILL_BYTES, 1, 9);
        for (int k = 0; k < KILL_MSGS; k++) {
            int rc = collab_send(w, buf, KILL_BYTES, 0, 9, NULL);
            if (rc != COLLAB_OK)
                fprintf(stderr, "[test] rank 1: send %d: %s\n", k, collab_strerror(rc));
            CHECK(rc == COLLAB_OK);
        }
        raise(SIGKILL);
        return 1;
    }
    test_fill(want, KILL_BYTES, 1, 9);
    double t0 = now_s();
    int whole = 0, rc = COLLAB_OK;
    while (whole < KILL_MSGS) {
        collab_status_info_t st;
        memset(buf, 0, KILL_BYTES);
        rc = collab_recv(w, buf, KILL_BYTES, 1, 9, &st, NULL);
        if (rc != COLLAB_OK)
            break;
        CHECK(st.source == 1 && st.bytes == KILL_BYTES && memcmp(buf, want, KILL_BYTES) == 0);
        whole++;
    }
    fprintf(stderr, "[test] rank 0: %d whole messages of 24 MiB, then %s after %.2f s\n", whole,
            collab_strerror(rc), now_s() - t0);
    CHECK(rc == COLLAB_ERR_PROC_FAILED);
    CHECK(whole < KILL_MSGS); /* the kill landed within the stream */
    CHECK(now_s() - t0 < 30);
    CHECK(collab_finalize() == COLLAB_OK);
    free(buf);
    free(want);
    return 0;
}
