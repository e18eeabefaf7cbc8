/*  attack_checkpoint.c - hostile monitors and members against the
    checkpoints of docs/monitor.md §7.  Scenarios of the attack program
    (attack.c):

    Checkpoints (docs/monitor.md §7), a role with no old code to record
    against:
      checkpoint  the attacker joins the swarm of 3 as a monitor (anyone
                  may, in an open swarm) and heartbeats like one.  It
                  sends rank 1 QUERY and FETCH, and rank 2 a forged CKPT
                  NOTICE naming itself (from a monitor, not the admitter)
                  followed by QUERY and FETCH.  Must be: no state answer
                  (HASHES, DATA, NACK) ever reaches it, since a monitor
                  reads a member's state only for a copy a NOTICE of the
                  admitter named it for.  Control: it then asks the
                  admitter properly (CKPT REQUEST), gets the NOTICE, and
                  its QUERY and FETCH for that collective are answered
                  with the start-up broadcast's bytes, so answers could
                  reach it; the three peers agree throughout.

    A hostile member against the monitor's majority rule (docs/monitor.md
    §7): a real collab-monitor (ATTACK_MONITOR, the binary) founds the
    swarm with --checkpoint-dir and --checkpoint-every 5; the trainers join
    through it alone.  They broadcast three buffers at start-up (64 KiB,
    4 KiB, 100 bytes) and change them every step, as a trainer changes its
    parameters (state(t), a pattern of the step t).  The last trainer is
    hostile: the wrappers rewrite, with the project's codec, every HASHES
    it answers the monitor's QUERY with: buffer 0 with another hash,
    buffer 1 with 8 GiB, and buffer 2 declared as #5 (another item).
      checkpoint_liar  3 trainers, rank 2 lies.  Must be: at least one
                  checkpoint written, every file holding exactly the three
                  honest buffers with state(K) of its step K (read here
                  from the file); the log names rank 2 and no honest rank;
                  the monitor's address space grows by less than 1 GiB
                  (nothing allocated for the 8 GiB).  The old rule took
                  the majority but named nobody.
      checkpoint_liar_data  3 trainers, rank 0 (a donor the monitor's
                  stripes of small items go to) declares honest hashes but
                  changes the first byte of every DATA it serves.  Must
                  be: every checkpoint the honest state (the monitor's
                  hash check asks the other donors), the log names rank 0
                  and no honest rank.  The old code fetched again silently.
      checkpoint_tie  2 trainers, rank 1 lies: one honest donor against
                  one liar, no majority either way.  Must be: no
                  checkpoint file, the refusal in the log with both ranks
                  named, the same memory bound.  The old rule wrote a
                  checkpoint without any item ("from 2 peers"), which a
                  resume would take for the swarm's state.
      sync_liar   4 trainers of a world of 5, rank 3 lies in its HASHES
                  as above, and a joiner comes after the rendezvous.
                  Must be: every byte of the joiner's start-up broadcasts
                  is the trainers' state at one step, and its log names
                  rank 3 and nobody else.  The old rule (any difference
                  drops the buffer everywhere) left the joiner its own
                  zeros in the buffers the liar misdeclared.
*/
#include "attack.h"
#include "elastic/cl_checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The checkpoint scenario's peers: a start-up broadcast of 64 bytes of
   42 (state a checkpoint holds), then two-element all-reduces (rank+1,
   and a stop flag rank 0 raises after 10 s past the rendezvous, so all
   run the same number), each checked. */
static int ckpt_peer_main(int i, int n)
{
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    static uint8_t state[64];
    if (i == 0)
        memset(state, 42, sizeof state);
    CHECK(collab_bcast(w, state, sizeof state, 0, NULL) == COLLAB_OK);
    CHECK(state[0] == 42 && state[63] == 42);
    double t0 = 0, want = n * (n + 1) / 2.0;
    int it, bad = 0;
    for (it = 0; it < 100000; it++) {
        if (it == 12) {
            rendezvous();
            t0 = now_s();
        }
        double x[2] = {i + 1, i == 0 && it > 12 && now_s() - t0 > 10 ? 1 : 0}, y[2] = {0, 0};
        rc = collab_allreduce(w, x, y, 2, COLLAB_DOUBLE, &SUM, NULL);
        if (rc != COLLAB_OK || y[0] != want) {
            if (bad++ < 3)
                fprintf(stderr, "[attack] peer %d: all-reduce %d: rc %d, %g (want %g)\n", i, it, rc,
                        y[0], want);
        }
        if (y[1] > 0)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (bad > 0)
        s_failures++;
    fprintf(stderr, "[attack] peer %d: %d all-reduces, %d wrong\n", i, it, bad);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* Polls for `seconds` as a monitor: heartbeats to the n peers every
   0.3 s; returns early once *until becomes true (when not NULL). */
static void monitor_pump(attacker_t *a, int n, double seconds, const bool *until)
{
    double t0 = now_s(), hb = 0;
    while (now_s() - t0 < seconds && (until == NULL || !*until)) {
        if (now_s() - hb >= 0.3) {
            hb = now_s();
            for (int i = 0; i < n; i++) {
                uint8_t key[32];
                peer_key(i, key);
                cl_wire_msg_t m;
                memset(&m, 0, sizeof m);
                m.hdr.type = CL_MSG_HEARTBEAT;
                m.hdr.epoch = a->epoch;
                m.u.heartbeat.epoch = a->epoch;
                (void)cl_transport_send(a->tp, key, &m);
            }
        }
        attacker_poll(a);
    }
}

int sc_checkpoint(void)
{
    prepare("checkpoint", 3);
    for (int i = 0; i < 3; i++)
        spawn(i, 3, i == 0 ? 0u : 0x7u & ~(1u << i), ckpt_peer_main);
    CHECK(wait_ready(3, 60));
    attacker_t a;
    if (!attacker_new(&a, false) || !attacker_reach(&a, 0) || !attacker_reach(&a, 1) ||
        !attacker_reach(&a, 2)) {
        fprintf(stderr, "[attack] could not reach the peers\n");
        s_setup_failed = true;
        return 1;
    }
    uint8_t k0[32], k1[32], k2[32];
    peer_key(0, k0);
    peer_key(1, k1);
    peer_key(2, k2);
    /* Join as a monitor. */
    cl_wire_msg_t j;
    memset(&j, 0, sizeof j);
    j.hdr.type = CL_MSG_JOIN;
    j.u.join.rank = -1;
    j.u.join.weight = 1;
    j.u.join.flags = CL_JOIN_MONITOR;
    j.u.join.settings.world_size = 3;
    j.u.join.settings.target_group = 64;
    j.u.join.incarnation = 7;
    snprintf(j.u.join.address, sizeof j.u.join.address, "%s", cl_transport_address(a.tp));
    CHECK(cl_transport_send(a.tp, k0, &j) == 0);
    monitor_pump(&a, 3, 15, &a.in_view);
    if (!a.in_view) {
        fprintf(stderr, "[attack] the coordinator did not list the attacker as a monitor\n");
        s_setup_failed = true;
        go(3);
        reap(0x7u, 60);
        attacker_destroy(&a);
        return 1;
    }
    fprintf(stderr, "[attack] listed as a monitor in view %llu\n", (unsigned long long)a.epoch);
    /* Unasked reads, and a forged notice. */
    cl_elmsg_t q;
    memset(&q, 0, sizeof q);
    q.type = CL_EL_QUERY;
    q.s = 5;
    cl_elmsg_t f;
    memset(&f, 0, sizeof f);
    f.type = CL_EL_FETCH;
    f.s = 5;
    f.what = CL_EL_ITEM_BUFFER;
    f.len = 8;
    CHECK(attacker_send_el(&a, k1, &q) && attacker_send_el(&a, k1, &f));
    cl_elmsg_t n;
    memset(&n, 0, sizeof n);
    n.type = CL_EL_CKPT;
    n.ckpt = CL_EL_CKPT_NOTICE;
    n.s = 1000;
    n.step = 10;
    memcpy(n.key, cl_identity_public_key(a.id), 32);
    q.s = f.s = n.s;
    CHECK(attacker_send_el(&a, k2, &n) && attacker_send_el(&a, k2, &q) &&
          attacker_send_el(&a, k2, &f));
    fprintf(stderr, "[attack] sent QUERY and FETCH to rank 1, a forged NOTICE, QUERY and FETCH "
                    "to rank 2\n");
    go(3);
    monitor_pump(&a, 3, 2.0, NULL);
    int bad = 0;
    if (a.answers > 0) {
        fprintf(stderr, "[attack] the members answered %d unasked state reads\n", a.answers);
        bad++;
    }
    /* Control: asked properly, the admitter's notice lets it read. */
    cl_elmsg_t r;
    memset(&r, 0, sizeof r);
    r.type = CL_EL_CKPT;
    r.ckpt = CL_EL_CKPT_REQUEST;
    r.every = 1;
    bool noticed = false;
    for (int k = 0; k < 4 && a.notice == 0; k++) {
        CHECK(attacker_send_el(&a, k0, &r));
        monitor_pump(&a, 3, 2.0, &noticed);
        noticed = a.notice != 0;
    }
    if (a.notice == 0) {
        fprintf(stderr, "[attack] control: the admitter sent no CKPT NOTICE\n");
        s_setup_failed = true;
    } else {
        q.s = f.s = a.notice;
        f.len = 64;
        int before = a.answers;
        CHECK(attacker_send_el(&a, k1, &q) && attacker_send_el(&a, k1, &f));
        monitor_pump(&a, 3, 3.0, NULL);
        bool got = a.answers >= before + 2 && a.hashes_bufs >= 1 && a.ndata == 64 &&
                   a.data[0] == 42 && a.data[63] == 42;
        fprintf(stderr, "[attack] control: %s\n",
                got ? "the state at the notice's collective was served"
                    : "no state served after a proper request");
        if (!got)
            s_setup_failed = true;
    }
    bad += reap(0x7u, 60);
    attacker_destroy(&a);
    return bad;
}

/* ---------------------------------------------------------------------- */
/* A hostile member against the monitor's majority rule. */

#define LIAR_BUFS 3
static const size_t s_liar_size[LIAR_BUFS] = {65536, 4096, 100};
static int s_liar = -1; /* the hostile trainer's rank */

/* The trainers' state at step t: buffer j, byte k. */
static uint8_t liar_byte(int j, size_t k, uint64_t t)
{
    return (uint8_t)(k * (size_t)(7 + 2 * j) + t * 13u + (uint64_t)j);
}

static void liar_state(uint8_t *b[LIAR_BUFS], uint64_t t)
{
    for (int j = 0; j < LIAR_BUFS; j++)
        for (size_t k = 0; k < s_liar_size[j]; k++)
            b[j][k] = liar_byte(j, k, t);
}

/* The lies, through the codec; the same length as the honest answer. */
static bool lie_bufs(cl_elmsg_t *m)
{
    if (m->nbufs != LIAR_BUFS)
        return false;
    m->bufs[0].hash[0] ^= 0xff;
    m->bufs[1].size = (uint64_t)8 << 30;
    m->bufs[2].index = m->bufs[2].index + 3;
    return true;
}

static bool lie(const cl_wire_hdr_t *h, uint8_t *body, size_t len)
{
    return harness_rewrite_hashes(h, body, len, lie_bufs);
}

static const harness_wrap_t s_liar_wrap = {harness_is_hashes, lie, NULL, NULL, NULL};

/* checkpoint_liar_data: honest HASHES, every DATA it serves with its
   first byte changed. */
static bool is_data(void *sock, const cl_wire_hdr_t *h)
{
    (void)sock;
    return h->type == CL_MSG_ELASTIC && h->sub == CL_EL_DATA;
}

static bool lie_data(const cl_wire_hdr_t *h, uint8_t *body, size_t len)
{
    cl_elmsg_t m;
    if (cl_elmsg_decode(h->sub, body, len, &m) != 0)
        return false;
    bool ok = m.len > 0 && m.data >= body && m.data < body + len;
    if (ok) {
        body[m.data - body] ^= 0x5a; /* the codec's DATA points into the body */
        harness_write_int("forged", atomic_fetch_add(&s_forged, 1) + 1);
    }
    cl_elmsg_clear(&m);
    return ok;
}

static const harness_wrap_t s_data_liar_wrap = {is_data, lie_data, NULL, NULL, NULL};
static bool s_lie_data; /* the liar lies in DATA, not in HASHES */

/* A trainer: three start-up broadcasts from rank 0, then steps of one
   two-element all-reduce (n, and a stop flag rank 0 raises 8 s after the
   rendezvous), each followed by the change to the next step's state. */
static int liar_peer_main(int i, int n)
{
    if (i == s_liar)
        harness_wrap(s_lie_data ? &s_data_liar_wrap : &s_liar_wrap);
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    static uint8_t b0[65536], b1[4096], b2[100];
    uint8_t *b[LIAR_BUFS] = {b0, b1, b2};
    if (i == 0)
        liar_state(b, 0);
    for (int j = 0; j < LIAR_BUFS; j++)
        CHECK(collab_bcast(w, b[j], s_liar_size[j], 0, NULL) == COLLAB_OK);
    CHECK(b0[1] == liar_byte(0, 1, 0) && b2[99] == liar_byte(2, 99, 0));
    rendezvous();
    double t0 = now_s();
    int bad = 0;
    uint64_t t;
    for (t = 0; t < 100000; t++) {
        double x[2] = {1, i == 0 && now_s() - t0 > 8 ? 1 : 0}, y[2] = {0, 0};
        rc = collab_allreduce(w, x, y, 2, COLLAB_DOUBLE, &SUM, NULL);
        /* The liar is taken out of the group at each state check (its
           lying hashes reach the check too) until it is resynced; when
           rank 0's stop comes while it is out, the others finish and
           leave, and it goes on alone (the library's rule).  Its run ends
           there: an all-reduce of itself alone after the stop time. */
        collab_info_t info;
        if (rc == COLLAB_OK && n > 1 && now_s() - t0 > 8 && collab_last_info(&info) == COLLAB_OK &&
            info.group_size == 1)
            break;
        if ((rc != COLLAB_OK || y[0] != n) && bad++ < 3)
            fprintf(stderr, "[attack] peer %d: all-reduce %llu: rc %d, %g (want %d)\n", i,
                    (unsigned long long)t, rc, y[0], n);
        if (y[1] > 0)
            break;
        liar_state(b, t + 1);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (bad > 0)
        s_failures++;
    fprintf(stderr, "[attack] peer %d: %llu steps, %d wrong\n", i, (unsigned long long)t, bad);
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

/* A field of /proc/<pid>/status in KiB ("VmSize:", "VmPeak:"), or -1. */
static long status_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, strlen(field)) == 0)
            kb = strtol(line + strlen(field), NULL, 10);
    if (f != NULL)
        fclose(f);
    return kb;
}

/* Starts collab-monitor as peer m (its identity and port) founding a
   swarm of n with checkpoints into <dir>/ckpt; its log goes to
   <dir>/mon.log.  False when it printed no join line within 20 s. */
static bool start_monitor(const char *bin, int m, int n)
{
    char log[600], id[600], listen[64], world[16], db[600], ckpt[600];
    snprintf(log, sizeof log, "%s/mon.log", s_dir);
    snprintf(id, sizeof id, "%s/id%d", s_dir, m);
    snprintf(listen, sizeof listen, "/ip4/127.0.0.1/tcp/%d", s_port[m]);
    snprintf(world, sizeof world, "%d", n);
    snprintf(db, sizeof db, "%s/mon.db", s_dir);
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", s_dir);
    fflush(stderr);
    pid_t p = fork();
    if (p < 0)
        return false;
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        setenv("COLLAB_TIMEOUT", "2", 1);
        setenv("COLLAB_LOG", "info", 1);
        execl(bin, bin, "--listen", listen, "--identity", id, "--world-size", world, "--http",
              "off", "--db", db, "--tick", "1", "--run-id", s_run, "--checkpoint-dir", ckpt,
              "--checkpoint-every", "5", (char *)NULL);
        _exit(127);
    }
    s_pid[m] = p;
    double t0 = now_s();
    while (now_s() - t0 < 20) {
        if (harness_log_lines(log, "COLLAB_INITIAL_PEERS=", NULL) > 0)
            return true;
        if (waitpid(p, NULL, WNOHANG) == p)
            return false;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Checks every checkpoint file of <dir>/ckpt: exactly the three honest
   buffers, state(K) of its step K.  Returns the number of files. */
static int check_files(void)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/ckpt", s_dir);
    DIR *d = opendir(dir);
    int files = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "checkpoint-", 11) != 0)
            continue;
        char path[1200], err[CL_CKPT_ERR_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        cl_ckpt_t c;
        files++;
        if (cl_checkpoint_read(path, &c, err) != 0) {
            fprintf(stderr, "[attack] %s\n", err);
            s_failures++;
            continue;
        }
        bool ok = c.nitems == LIAR_BUFS;
        for (uint32_t k = 0; ok && k < c.nitems; k++) {
            const cl_ckpt_item_t *it = &c.items[k];
            ok = it->what == CL_CKPT_BUFFER && it->index < LIAR_BUFS &&
                 it->size == s_liar_size[it->index];
            for (size_t x = 0; ok && x < it->size; x++)
                ok = it->data[x] == liar_byte((int)it->index, x, c.step);
        }
        fprintf(stderr, "[attack] %s: step %llu, %u items: %s\n", de->d_name,
                (unsigned long long)c.step, c.nitems,
                ok ? "the honest state of its step" : "NOT the honest state");
        if (!ok)
            s_failures++;
        cl_checkpoint_clear(&c);
    }
    if (d != NULL)
        closedir(d);
    return files;
}

int sc_checkpoint_liar(int n, bool data)
{
    prepare(data ? "checkpoint_liar_data" : n == 3 ? "checkpoint_liar" : "checkpoint_tie", n + 1);
    s_lie_data = data;
    /* The monitor's stripes of small items go to the first donors (by
       rank): a liar in DATA must be one of them. */
    s_liar = data ? 0 : n - 1;
    const char *bin = getenv("ATTACK_MONITOR");
    if (bin == NULL || !start_monitor(bin, n, n)) {
        fprintf(stderr, "[attack] could not start collab-monitor (ATTACK_MONITOR=%s)\n",
                bin != NULL ? bin : "(unset)");
        s_setup_failed = true;
        if (bin != NULL)
            harness_kill(n);
        return 1;
    }
    long vm0 = status_kib(s_pid[n], "VmSize:");
    for (int i = 0; i < n; i++)
        spawn(i, n, 1u << n, liar_peer_main);
    CHECK(wait_ready(n, 60));
    go(n);
    int bad = reap((1u << n) - 1, 90);
    long peak = status_kib(s_pid[n], "VmPeak:");
    kill(s_pid[n], SIGTERM);
    bad += reap(1u << n, 20); /* the monitor stops cleanly */
    char log[600];
    snprintf(log, sizeof log, "%s/mon.log", s_dir);
    int forged = harness_read_int("forged", 0);
    int written = harness_log_lines(log, "checkpoint of step", "written");
    int refused = harness_log_lines(log, "do not agree by a majority", NULL);
    int named[MAXP] = {0};
    for (int i = 0; i < n; i++) {
        char who[32];
        snprintf(who, sizeof who, "rank %d (", i);
        named[i] = harness_log_lines(
            log, data ? "does not match the hash" : "checkpoint of collective", who);
    }
    int files = check_files();
    fprintf(stderr,
            "[attack] the liar (rank %d) sent %d forged messages; the monitor wrote %d "
            "checkpoint(s) (%d file(s) kept), refused %d; lines naming rank 0..%d: %d %d %d; "
            "address space %ld KiB at the start, at most %ld KiB\n",
            s_liar, forged, written, files, refused, n - 1, named[0], named[1], named[2], vm0,
            peak);
    if (forged == 0) {
        fprintf(stderr, "[attack] the liar sent no forgery; the test proves nothing\n");
        s_setup_failed = true;
    }
    if (n >= 3) {
        CHECK(written >= 1 && files >= 1);
        CHECK(named[s_liar] >= 1);
        for (int i = 0; i < n; i++)
            if (i != s_liar)
                CHECK(named[i] == 0);
    } else {
        CHECK(written == 0 && files == 0);
        CHECK(refused >= 1);
        CHECK(named[0] >= 1 && named[1] >= 1);
    }
#if !defined(__SANITIZE_ADDRESS__)
    CHECK(vm0 > 0 && peak > 0 && peak - vm0 < 1024 * 1024);
#endif
    if (s_failures > 0 || bad > 0) {
        /* What the monitor said about checkpoints, for the failure's reader. */
        FILE *f = fopen(log, "r");
        char line[1024];
        while (f != NULL && fgets(line, sizeof line, f) != NULL)
            if (strstr(line, "checkpoint") != NULL || strstr(line, "majority") != NULL)
                fprintf(stderr, "[monitor] %s", line);
        if (f != NULL)
            fclose(f);
    }
    return bad;
}

/* ---------------------------------------------------------------------- */
/* A hostile donor against a joiner's state agreement (docs/state-sync.md
   §4): sync_liar. */

/* 13 x 197 = 1 (mod 256): the step whose state starts with byte b0. */
#define INV13 197u

/* Four trainers of a world of 5 (rank 3 lies in its HASHES as in
   checkpoint_liar) and a joiner, peer 4, started after the rendezvous.
   The joiner checks that its start-up broadcasts hold the trainers'
   state at one step (every byte), and writes the verdict to "joined". */
static int sync_peer_main(int i, int n)
{
    setenv("COLLAB_MATCHMAKING_TIME", "1", 1); /* the group of 4 forms without the 5th */
    bool joiner = i == n - 1;
    if (i == s_liar)
        harness_wrap(&s_liar_wrap);
    if (joiner) {
        char log[600];
        snprintf(log, sizeof log, "%s/joiner.log", s_dir);
        setenv("COLLAB_LOG_FILE", log, 1);
    }
    int rc = collab_init(NULL);
    if (rc != COLLAB_OK) {
        fprintf(stderr, "[attack] peer %d: collab_init: %s\n", i, collab_strerror(rc));
        return 2;
    }
    collab_comm_t *w = collab_comm_world();
    static uint8_t b0[65536], b1[4096], b2[100];
    uint8_t *b[LIAR_BUFS] = {b0, b1, b2};
    if (i == 0)
        liar_state(b, 0);
    for (int j = 0; j < LIAR_BUFS; j++)
        CHECK(collab_bcast(w, b[j], s_liar_size[j], 0, NULL) == COLLAB_OK);
    if (joiner) {
        uint64_t t = (uint64_t)((b0[0] * INV13) & 255u);
        size_t wrong = 0;
        for (int j = 0; j < LIAR_BUFS; j++)
            for (size_t k = 0; k < s_liar_size[j]; k++)
                wrong += b[j][k] != liar_byte(j, k, t);
        fprintf(stderr, "[attack] joiner: state of step %llu (mod 256), %zu bytes unlike it\n",
                (unsigned long long)t, wrong);
        harness_write_int("joined", wrong == 0 ? 1 : 0);
    } else {
        rendezvous();
    }
    double t0 = now_s();
    uint64_t t;
    for (t = 0; t < 100000; t++) {
        double x[2] = {1, i == 0 && now_s() - t0 > 8 ? 1 : 0}, y[2] = {0, 0};
        rc = collab_allreduce(w, x, y, 2, COLLAB_DOUBLE, &SUM, NULL);
        CHECK(rc == COLLAB_OK);
        /* Rank 0's flag ends the run.  A peer out of the group when it
           went (the state check takes the liar and the joiner out to be
           resynced) never sees it: with the trainers gone, the two go on
           as a group of their own (docs/elastic.md, "Waiting") and stop
           by their own clock. */
        if (y[1] > 0 || rc != COLLAB_OK || now_s() - t0 > 20)
            break;
        if (i == 0 && t == 5)
            harness_write_int("trained", 1); /* the joiner may start */
        liar_state(b, t + 1);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(collab_finalize() == COLLAB_OK);
    return 0;
}

int sc_sync_liar(void)
{
    const int n = 5;
    prepare("sync_liar", n);
    s_liar = 3;
    s_lie_data = false;
    for (int i = 0; i < n - 1; i++)
        spawn(i, n, i == 0 ? 0 : 1u, sync_peer_main);
    CHECK(wait_ready(n - 1, 60));
    go(n - 1);
    /* The joiner starts once the group of 4 trains, so that it is admitted
       into a running swarm and takes its state from the donors. */
    double t0 = now_s();
    while (harness_read_int("trained", 0) != 1 && now_s() - t0 < 60) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(harness_read_int("trained", 0) == 1);
    spawn(n - 1, n, 1u, sync_peer_main);
    int bad = reap((1u << n) - 1, 90);
    char log[600];
    snprintf(log, sizeof log, "%s/joiner.log", s_dir);
    int forged = harness_read_int("forged", 0);
    int joined = harness_read_int("joined", -1);
    int named = harness_log_lines(log, "unlike the majority", "rank 3 (");
    int others = harness_log_lines(log, "unlike the majority", NULL) - named;
    fprintf(stderr,
            "[attack] the liar (rank 3) sent %d forged HASHES; the joiner %s the trainers' "
            "state; lines of its log naming the liar: %d, naming others: %d\n",
            forged,
            joined == 1   ? "took"
            : joined == 0 ? "did NOT take"
                          : "never reported",
            named, others);
    if (forged == 0) {
        fprintf(stderr, "[attack] the liar sent no forgery; the test proves nothing\n");
        s_setup_failed = true;
    }
    CHECK(joined == 1);
    CHECK(named >= 1 && others == 0);
    return bad;
}
