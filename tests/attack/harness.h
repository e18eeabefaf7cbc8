/*  harness.h - what the hostile-peer programs share (tests/attack/attack*.c
    and verify.c): real peers started as collab-run would start them (forked
    processes that call collab_init), a rendezvous between them and the
    parent, process control with deadlines and real kills, wrappers of
    zmq_send/zmq_msg_send through which a hostile member's messages are read
    with the project's codec and tampered with or added to, an attacker
    with a transport of its own, and readers of the run's files and logs.
*/
#ifndef HARNESS_H_INCLUDED
#define HARNESS_H_INCLUDED

#include "engine/cl_elmsg.h"
#include "engine/cl_transport.h"
#include "engine/cl_wire.h"
#include "mpi_collab.h"
#include "util/cl_identity.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MAXP 8 /* peers of one run, at most */

extern const char *harness_tag; /* prefix of messages: "attack", "verify" */
extern int s_failures;          /* failed CHECKs in this process */
extern int s_rank;              /* the peer this process runs, -1 in the parent */
extern char s_dir[256];         /* identities, logs and files of the run */
extern char s_addr[MAXP][256];  /* peer i's full address */
extern int s_port[MAXP];        /* peer i's loopback port */
extern char s_run[128];         /* COLLAB_RUN_ID */
extern bool s_setup_failed;     /* the test could not be set up (exit 3) */
extern pid_t s_pid[MAXP];       /* peer i's process (parent) */
extern atomic_bool s_armed;     /* set in a peer at the rendezvous */
extern atomic_int s_forged;     /* forgeries this process sent (harness_inject) */

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "[%s] %s %d: %s:%d: check failed: %s\n", harness_tag,                  \
                    s_rank >= 0 ? "peer" : "attacker", s_rank, __FILE__, __LINE__, #cond);         \
            s_failures++;                                                                          \
        }                                                                                          \
    } while (0)

static const collab_op_t SUM = {COLLAB_OP_SUM, NULL, NULL, 1};

/* Monotonic seconds. */
double now_s(void);

/* The peer a DEALER socket is connected to (by its endpoint's port), -1
   if none of this run. */
int harness_dest_of(void *sock);

/* A wrapper's "want": every state-sync HASHES message. */
bool harness_is_hashes(void *sock, const cl_wire_hdr_t *h);

/* A wrapper's "rewrite" of a state or checkpoint answer (HASHES), through
   the codec: decodes body, lets edit change its buffer entries (edit
   returns false to leave the message as it is), encodes it again and,
   where it keeps its length, copies it over body and counts it in
   s_forged (written as "forged").  True when body was rewritten. */
bool harness_rewrite_hashes(const cl_wire_hdr_t *h, uint8_t *body, size_t len,
                            bool (*edit)(cl_elmsg_t *m));

/* A thread (pthread_create(..., harness_fail_after, &f)) that SIGKILLs
   its process 300 ms after the last of the results counted in *results
   went out (*last_ms: when, in ms of now_s), logging it as who. */
typedef struct {
    atomic_int *results;
    atomic_long *last_ms;
    const uint64_t *seq; /* the collective they belong to */
    const char *who;
} harness_fail_after_t;
void *harness_fail_after(void *arg);

/* The all-reduce of the relay-proof scenarios, where element k sums to
   8 + 4 (k mod 7): logs a failed call (counting it in *bad) or wrong
   elements (counting the call), and for call 1, the armed one, its time
   (logged and written as armed_ms_<i>).  Non-zero when the call failed. */
int harness_check_sums(int i, int it, int rc, const float *y, size_t cnt, double took, int group,
                       int *bad);

/* ---------------------------------------------------------------------- */
/* Peers and process control. */

/* Prepares a run of n peers: a private folder /tmp/collab-<tag>-XXXXXX
   with an identity and a free port per peer (test_peers_prepare), run id
   `run`, and the rendezvous pipes.  Exits 3 on failure. */
void harness_prepare(const char *tag, const char *run, int n);

/* The environment collab-run gives peer i of n; `initial` is a mask of
   the peers it lists (0: it founds).  Collective data goes over the
   network (COLLAB_SHM=0), where a hostile member's wrappers see it;
   COLLAB_TIMEOUT defaults to 2 s and COLLAB_LOG to info. */
void harness_peer_env(int i, int n, unsigned initial);

/* In a peer: says "ready" to the parent, waits for "go", sets s_armed. */
void rendezvous(void);
/* In the parent: waits for k "ready" bytes; false after `deadline` s. */
bool wait_ready(int k, double deadline);
/* In the parent: lets k peers past the rendezvous. */
void go(int k);

/* Peer i's program: returns its exit status (0: every check passed). */
typedef int (*harness_peer_fn)(int i, int n);

/* Forks peer i of n (environment harness_peer_env(i, n, initial)) running
   fn; the child exits with fn's status, or 1 after a failed CHECK.  The
   pid is kept in s_pid[i] and returned.  Exits 3 when fork fails. */
pid_t spawn(int i, int n, unsigned initial, harness_peer_fn fn);

/* As spawn, but the child waits for release(i) before it runs fn.  For a
   peer that must start after the parent used ZeroMQ itself: a fork then
   can copy a lock that one of libzmq's threads holds (its reaper still
   closing the parent's sockets), and the child would wait on it for
   ever.  Forked before that use, the child never sees those threads. */
pid_t spawn_held(int i, int n, unsigned initial, harness_peer_fn fn);
/* In the parent: lets a peer of spawn_held go on. */
void release(int i);

/* Waits for the peers in `mask` (others may be dead already) within
   deadline; kills what is left then.  Returns the number of peers that
   did not exit 0; s_status[i] gets each one's exit status (-1: killed). */
int reap(unsigned mask, double deadline);
extern int s_status[MAXP];

/* SIGKILLs peer i and reaps it. */
void harness_kill(int i);

/* The honest peers of the stranger scenarios: `iters` all-reduces of
   rank+1 among the ranks in `alive` (a mask), each checked (the sum over
   them, an absent rank counted as the mean of the others, the group
   exactly them); harness_peer_main runs one, the rendezvous, then 5 with
   the ranks of s_alive_after. */
void steps(collab_comm_t *w, int i, int n, unsigned alive, int iters, double deadline);
extern unsigned s_alive_after;
int harness_peer_main(int i, int n);

/* ---------------------------------------------------------------------- */
/* A hostile member: wrappers of zmq_send and zmq_msg_send.  Every use
   passes straight through until harness_wrap is called. */

typedef struct {
    /* Which messages to catch (the header decoded; NULL: every one). */
    bool (*want)(void *sock, const cl_wire_hdr_t *h);
    /* When set: changes a caught body in place (same length) before it
       goes out; false sends the original. */
    bool (*rewrite)(const cl_wire_hdr_t *h, uint8_t *body, size_t len);
    /* When set: called after a caught message went out (body copied). */
    void (*after)(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t len);
    /* When set: true drops the caught message (header and body) as if
       the process had died before sending it. */
    bool (*drop)(void *sock, const cl_wire_hdr_t *h);
    /* When set: the caught header is held back until its body is sent;
       true then drops both (a process that died before it sent them),
       false sends both, and rewrite and after apply as above. */
    bool (*drop_msg)(void *sock, const cl_wire_hdr_t *h, const uint8_t *body, size_t len);
} harness_wrap_t;

/* Installs the wrappers' hooks (w must outlive the process's sends). */
void harness_wrap(const harness_wrap_t *w);

/* Sends a forged message (header h, length set here, and body) on sock, a
   DEALER, past the wrappers; counts it in s_forged and, on the first one,
   writes <dir>/forged so that the parent knows the attack went out. */
void harness_inject(void *sock, cl_wire_hdr_t h, const uint8_t *body, size_t blen);
/* The same for a message encoded with the codec, with run and epoch
   taken from `like`. */
void harness_inject_msg(void *sock, const cl_wire_hdr_t *like, cl_wire_msg_t *m);

/* ---------------------------------------------------------------------- */
/* The attacker: a transport of its own, with a fresh identity. */

typedef struct {
    cl_identity_t *id;
    cl_transport_t *tp;
    int up;       /* UP events seen */
    int refused;  /* REFUSED events seen */
    int messages; /* messages received */
    /* What a monitor sees. */
    uint64_t epoch;   /* newest view epoch */
    bool in_view;     /* a view lists it as a monitor */
    int answers;      /* HASHES, DATA or NACK received */
    uint64_t notice;  /* s of a CKPT NOTICE naming it (0: none) */
    int hashes_bufs;  /* buffers in the last HASHES */
    uint8_t data[64]; /* the last DATA's first bytes */
    size_t ndata;
} attacker_t;

/* The highest wire version the attacker's next transport speaks (0: the
   highest there is). */
extern int s_attacker_max_version;
/* A fresh identity (<dir>/attacker) and transport on a free loopback
   port (client: binds nothing); false with a message on failure. */
bool attacker_new(attacker_t *a, bool client);
/* Polls the transport once (20 ms at most). */
void attacker_poll(attacker_t *a);
/* Polls the transport for `seconds`. */
void attacker_pump(attacker_t *a, double seconds);
/* Connects to peer i and waits for the handshake (10 s at most). */
bool attacker_reach(attacker_t *a, int i);
/* Sends an ELASTIC message to the peer with key `key`. */
bool attacker_send_el(attacker_t *a, const uint8_t key[32], const cl_elmsg_t *em);
void attacker_destroy(attacker_t *a);

/* Peer i's public key (from its identity file). */
void peer_key(int i, uint8_t out[32]);

/* ---------------------------------------------------------------------- */
/* The run's files. */

/* Resident set of pid in KiB, or -1 (it exited). */
long rss_kib(pid_t pid);
/* The integer in <dir>/name, or dflt. */
int harness_read_int(const char *name, int dflt);
/* Writes v to <dir>/name. */
void harness_write_int(const char *name, int v);
/* Lines of the file at path that contain `what` and, when not NULL,
   `also`. */
int harness_log_lines(const char *path, const char *what, const char *also);
/* Copies the file at path to stderr (nothing when it cannot be read). */
void harness_print_file(const char *path);
/* Removes the run's folder. */
void harness_cleanup(void);

#endif
