/*  attack_malformed.c - a malformed message from a peer that completed the
    handshake, against a swarm run with COLLAB_BAN_TIME=7 (not the default
    60).  A scenario of the attack program (attack.c):
      malformed   3 peers; the attacker (client mode, a fresh key) completes
                  the handshake with rank 2 and sends it a HEARTBEAT; right
                  behind it, on the same link, a HEARTBEAT whose header is
                  right (its length is the body's) but whose body is cut to
                  8 of its 16 bytes: it passes the transport's framing and
                  fails cl_wire_decode ("malformed body").  Again once the
                  victim logged the first (inside the ban: dropped unread)
                  and 8.5 s after that line (the ban is over: read and
                  banned again).  Must be: rank 2's log has exactly two
                  lines "dropped a malformed message from peer <the
                  attacker>… (malformed body); ignoring it for 7 s" (the
                  configured time reaches the transport through the
                  engine, and the ban lasts that long), no peer logs any
                  other dropped malformed message, and the three go on
                  with 5 exact all-reduces together.  With the engine
                  passing 60 instead of COLLAB_BAN_TIME by hand
                  (recorded/malformed.txt) the line said 60 s and the
                  third message was dropped unread.
*/
#include "attack.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The honest peers, each with a log of its own. */
static int malformed_peer(int i, int n)
{
    char log[600];
    snprintf(log, sizeof log, "%s/peer%d.log", s_dir, i);
    setenv("COLLAB_LOG_FILE", log, 1);
    return harness_peer_main(i, n);
}

static const int s_victim = 2;
static int s_sent; /* malformed messages sent (the parent's wrapper) */

/* The attacker's own HEARTBEATs to the victim. */
static bool want_heartbeat(void *sock, const cl_wire_hdr_t *h)
{
    return h->type == CL_MSG_HEARTBEAT && harness_dest_of(sock) == s_victim;
}

/* Behind each of them, on the same DEALER: the same header with the body
   cut to its first 8 bytes. */
static void after_heartbeat(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t len)
{
    if (len < 16)
        return;
    harness_inject(sock, *h, body, 8);
    s_sent++;
}

/* Sends the victim a well-formed HEARTBEAT (the wrapper adds the
   malformed one) and lets the transport run for `pump` s. */
static void send_pair(attacker_t *a, const uint8_t key[32], double pump)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HEARTBEAT;
    CHECK(cl_transport_send(a->tp, key, &m) == 0);
    attacker_pump(a, pump);
}

/* Runs the attacker's transport until the victim's log has k lines that
   name the attacker as the sender of a malformed message (10 s at most);
   returns how many it has. */
static int wait_lines(attacker_t *a, const char *log, const char *by, int k)
{
    int got = 0;
    for (double t0 = now_s(); (got = harness_log_lines(log, by, NULL)) < k && now_s() - t0 < 10;)
        attacker_pump(a, 0.05);
    return got;
}

int sc_malformed(void)
{
    const int n = 3;
    s_sent = 0;
    setenv("COLLAB_BAN_TIME", "7", 1);
    prepare("malformed", n);
    s_alive_after = 0x7u;
    for (int i = 0; i < n; i++)
        spawn(i, n, i == 0 ? 0u : 0x7u & ~(1u << i), malformed_peer);
    CHECK(wait_ready(n, 60));
    attacker_t a;
    if (!attacker_new(&a, true) || !attacker_reach(&a, s_victim)) {
        fprintf(stderr, "[attack] could not reach rank %d\n", s_victim);
        s_setup_failed = true;
        return 1;
    }
    uint8_t key[32];
    peer_key(s_victim, key);
    /* The attacker as the victim names it: the first 8 characters of
       its peer id. */
    char id[CL_PEER_ID_MAX], by[64], log[600];
    if (cl_base58_encode(cl_identity_public_key(a.id), 32, id, sizeof id) != 0)
        strcpy(id, "?");
    snprintf(by, sizeof by, "from peer %.8s… (malformed body)", id);
    snprintf(log, sizeof log, "%s/peer%d.log", s_dir, s_victim);
    static const harness_wrap_t wrap = {want_heartbeat, NULL, after_heartbeat, NULL, NULL};
    harness_wrap(&wrap);
    /* The first is read and its sender banned; the second, sent once the
       victim logged the first, falls inside the ban and is dropped
       unread; the third, 8.5 s after that line (the ban began before
       it), is read and banned again. */
    send_pair(&a, key, 0.05);
    int first = wait_lines(&a, log, by, 1);
    double t1 = now_s();
    send_pair(&a, key, 0.5);
    while (now_s() - t1 < 8.5)
        attacker_pump(&a, 0.05);
    send_pair(&a, key, 0.05);
    (void)wait_lines(&a, log, by, first + 1);
    attacker_pump(&a, 0.5);
    harness_wrap(NULL);
    fprintf(stderr, "[attack] sent rank %d %d HEARTBEATs with a body of 8 of 16 bytes\n", s_victim,
            s_sent);
    CHECK(s_sent == 3);
    attacker_destroy(&a);
    go(n);
    int bad = reap(0x7u, 60);
    int lines[3], seven = 0, any = 0;
    for (int i = 0; i < n; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/peer%d.log", s_dir, i);
        lines[i] = harness_log_lines(path, "dropped a malformed message", NULL);
        any += lines[i];
    }
    seven = harness_log_lines(log, by, "; ignoring it for 7 s");
    fprintf(stderr,
            "[attack] lines \"dropped a malformed message\": %d, %d, %d (peers 0-2); of rank "
            "%d's, %d name the attacker and 7 s\n",
            lines[0], lines[1], lines[2], s_victim, seven);
    if (seven != 2)
        harness_print_file(log);
    CHECK(seven == 2);
    CHECK(any == seven); /* nothing else was dropped as malformed */
    return bad;
}
