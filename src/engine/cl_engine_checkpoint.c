/*  cl_engine_checkpoint.c - the swarm's checkpoints, taken by a monitor
    (docs/monitor.md §7, docs/security.md §3).

    Three roles, one message (ELASTIC CKPT, docs/wire.md §7):

    The monitor (COLLAB_CHECKPOINT_DIR and COLLAB_CHECKPOINT_EVERY set)
    sends REQUEST (every N steps after the step of its last checkpoint) to
    the admitter of its view, again every 2 s until a NOTICE comes.  On a
    NOTICE it fetches the state of collective s exactly as a joiner does
    (cl_engine_sync.c: QUERY, HASHES, FETCH, DATA, hashes compared between
    donors), except that an item is taken only when more than half of the
    donors that answered declare it with the same size and hash (so what
    it allocates is bounded by what a majority declares) and that it never
    sends DROP.  Then it writes a checkpoint file (cl_checkpoint: named by
    step, hash-checked, tmp + rename) and prunes all but the newest
    CL_CKPT_KEEP.

    The admitter, at the first step boundary its program posts after a
    REQUEST (at most one checkpoint every MIN_GAP seconds), picks s, the
    first step boundary at least max(one step, EL_ADMIT_AHEAD collectives)
    ahead, as for an admission while several groups run (docs/elastic.md
    §9), so that every member learns s before its program posts it
    (peers of one host on the same-host fast path leave it only once the
    checkpoint is due, eng_ckpt_due: a few steps before).  It
    sends NOTICE (s, the step s begins, the start-up prefix and its
    signatures, the monitor's key) to every group member and the monitor,
    and expects the monitor's fetch itself.  A donor keeps one copy per
    monitor: the next NOTICE frees the previous one (a striped fetch
    reads only part of each copy, so "fetched in full" never frees it).  Members (and the admitter)
    copy their registered state when their program posts s
    (eng_donor_expect / eng_donor_on_post), and answer the monitor's QUERY
    and FETCH for s from that copy only: the authority gate lets a monitor
    read a member's state only for a copy expected for its key.

    Resume.  A monitor that holds a checkpoint (the newest that verifies
    in its directory at start, then each one it writes) and admits a rank
    while the world group is not formed (its founding, or every trainer
    died) sends that peer RESUME (s, step, prefix, signatures) before the
    view that admits it, on the same connection.  The new peer then treats
    its first world collectives as a joiner does: its start-up collectives
    0..P-1 are answered from the checkpoint, which it fetches from the
    monitor alone (QUERY, FETCH of the checkpoint's items), and its
    collective P + j runs as the group's s + j.  All new first peers do the
    same, so they form their group at s, bitwise equal to the checkpoint.

    A component (cl_engine_checkpoint.h): it sees the engine only through
    eng_ckpt_ctx_t, built by eng_el_create (cl_engine_elastic_ctx.c), which
    also owns the pull of the state a fetch runs as, and the numbering a
    resuming peer takes (cl_engine_admittee.c).
*/
#include "engine/cl_engine_checkpoint.h"
#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include "elastic/cl_checkpoint.h"
#include "util/cl_identity.h"
#include "util/cl_log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define REQUEST_EVERY 2.0          /* seconds between two REQUESTs of a monitor */
#define MIN_GAP 1.0                /* seconds between two checkpoints an admitter starts */
#define CHUNK ((size_t)256 * 1024) /* bytes per DATA message, as cl_engine_donor.c */
#define RESUMED_MAX 64             /* peers a monitor sent RESUME to, remembered */

struct el_ckpt {
    eng_ckpt_ctx_t ctx;
    /* Monitor. */
    bool enabled;
    uint64_t last_step;  /* step of the newest checkpoint (0: none) */
    double next_request; /* next REQUEST */
    int timer;           /* in ctx.timers (-1: none, not a monitor that takes them) */
    bool fetching;       /* the running pull (eng_el_sync) is this checkpoint's fetch */
    uint64_t f_s, f_step, f_prefix;
    uint32_t *f_sigs;
    double f_started;
    cl_ckpt_t have; /* the newest checkpoint, served to resuming peers */
    bool have_ok;
    uint8_t resumed[RESUMED_MAX][32]; /* peers sent RESUME (ring) */
    size_t nresumed, next_resumed;
    /* Admitter. */
    bool req_pending;
    uint8_t req_key[32];
    uint64_t req_after, req_every;
    double last_notice;
    /* A new first peer. */
    bool resume_pending;
    uint64_t r_s, r_step, r_prefix;
    uint32_t *r_sigs;
    uint8_t r_key[32];
    bool resumed_from; /* this peer resumed: as coordinator it passes the RESUME on */
};

static bool is_self(const struct el_ckpt *c, const cl_peer_t *p)
{
    return p != NULL && memcmp(p->key, c->ctx.self_key, 32) == 0;
}

static double now_of(const struct el_ckpt *c)
{
    return c->ctx.now(c->ctx.arg);
}

static int send_to(const struct el_ckpt *c, const uint8_t key[32], const cl_elmsg_t *m)
{
    return c->ctx.send(c->ctx.arg, key, m);
}

static cl_peer_t *admitter_of(const struct el_ckpt *c)
{
    return c->ctx.admitter(c->ctx.arg);
}

static int configure(struct el_ckpt *c);
static void on_timer(void *arg, double now);

int eng_ckpt_new(const eng_ckpt_ctx_t *ctx, el_ckpt_t **out)
{
    struct el_ckpt *c = calloc(1, sizeof *c);
    if (c == NULL)
        return COLLAB_ERR_NO_MEM;
    c->ctx = *ctx;
    c->timer = -1;
    int rc = configure(c);
    if (rc == COLLAB_OK && c->enabled) {
        c->timer = cl_timer_add(c->ctx.timers, on_timer, c);
        if (c->timer < 0)
            rc = COLLAB_ERR_NO_MEM;
    }
    if (rc != COLLAB_OK) {
        eng_ckpt_destroy(&c);
        return rc;
    }
    *out = c;
    return COLLAB_OK;
}

static int configure(struct el_ckpt *c)
{
    const cl_config_t *cfg = c->ctx.cfg;
    const char *dir = cfg->checkpoint_dir;
    int every = cfg->checkpoint_every;
    if (!cfg->monitor) {
        if (dir != NULL || every > 0)
            cl_warn("COLLAB_CHECKPOINT_DIR and COLLAB_CHECKPOINT_EVERY are read by collab-monitor "
                    "only; this peer ignores them");
        return COLLAB_OK;
    }
    if (dir == NULL && every == 0)
        return COLLAB_OK;
    if (dir == NULL || every == 0) {
        cl_error("a monitor needs both COLLAB_CHECKPOINT_DIR (--checkpoint-dir) and "
                 "COLLAB_CHECKPOINT_EVERY (--checkpoint-every) to take checkpoints; %s is missing",
                 dir == NULL ? "COLLAB_CHECKPOINT_DIR" : "COLLAB_CHECKPOINT_EVERY");
        return COLLAB_ERR_CONFIG;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        cl_error("COLLAB_CHECKPOINT_DIR=%s: cannot create it: %m", dir);
        return COLLAB_ERR_CONFIG;
    }
    char err[CL_CKPT_ERR_MAX], path[4096];
    int rc = cl_checkpoint_latest(dir, &c->have, path, sizeof path, err);
    if (rc < 0) {
        cl_error("COLLAB_CHECKPOINT_DIR=%s: %s", dir, err);
        return COLLAB_ERR_CONFIG;
    }
    const char *run = cfg->run_id != NULL ? cfg->run_id : "default";
    if (rc == 0 && strcmp(c->have.run_id, run) != 0) {
        cl_error("COLLAB_CHECKPOINT_DIR=%s holds checkpoints of COLLAB_RUN_ID=%s (the newest: %s); "
                 "this monitor runs COLLAB_RUN_ID=%s: give it a directory of its own",
                 dir, c->have.run_id, path, run);
        cl_checkpoint_clear(&c->have);
        return COLLAB_ERR_CONFIG;
    }
    c->enabled = true;
    if (rc == 0) {
        c->have_ok = true;
        c->last_step = c->have.step;
        cl_info("the latest checkpoint is %s (step %llu, %u items); a swarm whose "
                "peers all died resumes from it",
                path, (unsigned long long)c->have.step, c->have.nitems);
    } else {
        cl_info("checkpoints every %d steps into %s (none yet)", every, dir);
    }
    return COLLAB_OK;
}

void eng_ckpt_destroy(el_ckpt_t **c_p)
{
    struct el_ckpt *c = c_p != NULL ? *c_p : NULL;
    if (c == NULL)
        return;
    if (c->timer >= 0)
        cl_timer_remove(c->ctx.timers, c->timer);
    cl_checkpoint_clear(&c->have);
    free(c->f_sigs);
    free(c->r_sigs);
    free(c);
    *c_p = NULL;
}

bool eng_ckpt_monitor_accepts(const el_ckpt_t *c, int sub)
{
    if (c == NULL || !c->enabled)
        return false;
    return sub == CL_EL_CKPT || sub == CL_EL_HASHES || sub == CL_EL_DATA || sub == CL_EL_NACK ||
           sub == CL_EL_QUERY || sub == CL_EL_FETCH;
}

/* Did this monitor send key a checkpoint to resume from? */
static bool resumed(const struct el_ckpt *c, const uint8_t key[32])
{
    for (size_t i = 0; i < c->nresumed; i++)
        if (memcmp(c->resumed[i], key, 32) == 0)
            return true;
    return false;
}

/* ---------------------------------------------------------------------- */
/* The monitor: asking, fetching, writing. */

static void send_request(struct el_ckpt *c)
{
    cl_peer_t *a = admitter_of(c);
    if (a == NULL || is_self(c, a) || a->state != CL_PEER_ALIVE)
        return;
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_CKPT;
    m.ckpt = CL_EL_CKPT_REQUEST;
    m.step = c->last_step;
    m.every = (uint64_t)c->ctx.cfg->checkpoint_every;
    (void)send_to(c, a->key, &m);
}

/* The fetch ended: asks for the next checkpoint at once, so that it is
   taken N steps after this one. */
static void fetch_end(struct el_ckpt *c)
{
    c->fetching = false;
    free(c->f_sigs);
    c->f_sigs = NULL;
    if (c->ctx.member(c->ctx.arg))
        send_request(c);
    c->next_request = now_of(c) + REQUEST_EVERY;
}

void eng_ckpt_fetched(el_ckpt_t *c, const el_sync_t *y)
{
    if (c == NULL || !c->fetching || y == NULL)
        return;
    if (eng_sync_split(y)) {
        cl_warn("the members that answered do not agree by a majority on the state of step %llu "
                "(named above); no checkpoint written",
                (unsigned long long)c->f_step);
        fetch_end(c);
        return;
    }
    size_t n = eng_sync_count(y), got = 0;
    cl_ckpt_t out;
    memset(&out, 0, sizeof out);
    out.items = calloc(n > 0 ? n : 1, sizeof *out.items);
    if (out.items == NULL) {
        cl_error("out of memory writing the checkpoint of step %llu",
                 (unsigned long long)c->f_step);
        fetch_end(c);
        return;
    }
    uint64_t bytes = 0;
    /* Buffers first, then results, each by index: the file's order. */
    for (int what = CL_EL_ITEM_BUFFER; what <= CL_EL_ITEM_RESULT; what++)
        for (size_t i = 0; i < n; i++) {
            cl_ckpt_item_t it;
            memset(&it, 0, sizeof it);
            int w;
            const uint8_t *d;
            size_t len;
            if (eng_sync_item_at(y, i, &w, &it.index, &d, &len, &it.signature) != COLLAB_OK ||
                w != what)
                continue;
            it.what = what == CL_EL_ITEM_BUFFER ? CL_CKPT_BUFFER : CL_CKPT_RESULT;
            it.size = len;
            it.data = (uint8_t *)d;
            cl_checkpoint_item_hash(d, len, it.hash);
            /* Insertion by index (the sync keeps them in arrival order). */
            size_t k = got;
            while (k > 0 && out.items[k - 1].what == it.what && out.items[k - 1].index > it.index) {
                out.items[k] = out.items[k - 1];
                k--;
            }
            out.items[k] = it;
            got++;
            bytes += len;
        }
    size_t items = 0;
    uint64_t total = 0;
    int donors = 0;
    eng_sync_totals(y, &items, &total, &donors);
    if (donors == 0) {
        cl_warn("no member served the state of step %llu; no checkpoint written",
                (unsigned long long)c->f_step);
        free(out.items);
        fetch_end(c);
        return;
    }
    if (got < n) {
        /* Agreed but not fetched (the members serving them died or went
           silent): a checkpoint without them would resume a swarm from a
           mix of its state and the program's own. */
        cl_warn("%zu of the swarm's %zu state items of step %llu could not be fetched; no "
                "checkpoint written (the next one is asked for)",
                n - got, n, (unsigned long long)c->f_step);
        free(out.items);
        fetch_end(c);
        return;
    }
    snprintf(out.run_id, sizeof out.run_id, "%s",
             c->ctx.cfg->run_id != NULL ? c->ctx.cfg->run_id : "default");
    out.step = c->f_step;
    out.seq = c->f_s;
    out.prefix = c->f_prefix;
    out.sigs = c->f_sigs;
    out.nitems = (uint32_t)got;
    char path[4096], err[CL_CKPT_ERR_MAX];
    if (cl_checkpoint_write(c->ctx.cfg->checkpoint_dir, &out, path, sizeof path, err) != 0) {
        cl_error("checkpoint of step %llu not written: %s", (unsigned long long)c->f_step, err);
        free(out.items);
        fetch_end(c);
        return;
    }
    int pruned = cl_checkpoint_prune(c->ctx.cfg->checkpoint_dir, CL_CKPT_KEEP);
    cl_info("checkpoint of step %llu written: %s (%zu items, %.1f MB from %d peer%s, "
            "%.1f s)%s",
            (unsigned long long)c->f_step, path, got, (double)bytes / 1e6, donors,
            donors == 1 ? "" : "s", now_of(c) - c->f_started,
            pruned > 0 ? "; older ones pruned" : "");
    /* Served to resuming peers from now on: read back what was written. */
    cl_ckpt_t fresh;
    if (cl_checkpoint_read(path, &fresh, err) == 0) {
        cl_checkpoint_clear(&c->have);
        c->have = fresh;
        c->have_ok = true;
    } else {
        cl_error("%s", err);
    }
    c->last_step = c->f_step;
    free(out.items);
    fetch_end(c);
}

static void on_notice(struct el_ckpt *c, cl_peer_t *p, const cl_elmsg_t *m)
{
    if (!c->enabled || c->fetching || c->ctx.sync(c->ctx.arg) != NULL)
        return;
    if (memcmp(m->key, c->ctx.self_key, 32) != 0)
        return; /* another monitor's */
    if (p == NULL || p->rank < 0 || admitter_of(c) != p) {
        cl_debug("monitor: a checkpoint notice from a member that is not the admitter; ignored");
        return;
    }
    if (m->step <= c->last_step && c->have_ok)
        return;
    c->f_sigs = m->nsigs > 0 ? malloc(m->nsigs * sizeof *c->f_sigs) : NULL;
    if (m->nsigs > 0 && c->f_sigs == NULL)
        return;
    if (m->nsigs > 0)
        memcpy(c->f_sigs, m->sigs, m->nsigs * sizeof *c->f_sigs);
    c->f_s = m->s;
    c->f_step = m->step;
    c->f_prefix = m->prefix;
    c->f_started = now_of(c);
    c->fetching = true;
    cl_debug("monitor: fetching the state of step %llu (collective #%llu)",
             (unsigned long long)m->step, (unsigned long long)m->s);
    if (!c->ctx.fetch(c->ctx.arg, m->s, p->key)) {
        cl_error("out of memory starting a checkpoint");
        fetch_end(c);
        return;
    }
    /* While it fetches, the timer looks at it often. */
    cl_timer_arm(c->ctx.timers, c->timer, now_of(c) + ENG_CKPT_POLL);
}

void eng_ckpt_member(el_ckpt_t *c)
{
    if (c != NULL && c->timer >= 0)
        cl_timer_arm(c->ctx.timers, c->timer, now_of(c));
}

/* The monitor's REQUESTs and a fetch that ended unnoticed; found no
   member, it stops (eng_ckpt_member arms it again). */
static void on_timer(void *arg, double now)
{
    struct el_ckpt *c = arg;
    if (!c->ctx.member(c->ctx.arg))
        return;
    if (c->fetching) {
        const el_sync_t *y = c->ctx.sync(c->ctx.arg);
        if (y == NULL || eng_sync_done(y)) {
            /* Ended without eng_ckpt_fetched (another pull replaced it). */
            fetch_end(c);
        } else {
            cl_timer_arm(c->ctx.timers, c->timer, now + ENG_CKPT_POLL);
            return;
        }
    }
    if (now >= c->next_request) {
        send_request(c);
        c->next_request = now + REQUEST_EVERY;
    }
    cl_timer_arm(c->ctx.timers, c->timer, c->next_request);
}

/* ---------------------------------------------------------------------- */
/* The admitter. */

/* How many collectives past the boundary where the admitter decides a
   checkpoint its boundary s lies at least (period t): max(one step,
   EL_ADMIT_AHEAD), so that every member learns s before posting it. */
static uint64_t notice_ahead(uint64_t t)
{
    return t > EL_ADMIT_AHEAD ? t : EL_ADMIT_AHEAD;
}

bool eng_ckpt_due(const el_ckpt_t *c, uint64_t step, uint64_t period)
{
    if (c == NULL || !c->req_pending)
        return false;
    if (now_of(c) - c->last_notice < MIN_GAP)
        return false; /* no checkpoint starts before then */
    /* The boundary a notice names lies notice_ahead() past the first
       boundary on the engine path (eng_ckpt_on_boundary), which may be a
       step away, and the call under way when the grant ends may still be
       fast: the engine path is due that many steps before the step asked
       for. */
    uint64_t t = period > 0 ? period : 1;
    uint64_t lead = 2 + (notice_ahead(t) + t - 1) / t;
    if (step + lead < c->req_after + c->req_every)
        return false;
    /* Only the admitter takes it (a request left from when this peer was
       the admitter never comes due). */
    return is_self(c, admitter_of(c));
}

void eng_ckpt_on_boundary(el_ckpt_t *c, uint64_t seq, uint64_t idx)
{
    if (c == NULL || !c->req_pending)
        return;
    const cl_stream_t *stream = c->ctx.stream;
    cl_peer_t *mon = c->ctx.find(c->ctx.arg, c->req_key);
    if (mon == NULL || !mon->monitor || mon->state != CL_PEER_ALIVE) {
        c->req_pending = false;
        return;
    }
    uint64_t p = cl_stream_prefix(stream), t = cl_stream_period(stream);
    if (p == CL_STREAM_NONE || t == 0 || seq < p)
        return;
    uint64_t ahead = notice_ahead(t);
    uint64_t at = cl_stream_next_boundary(stream, idx + ahead);
    if (at == CL_STREAM_NONE || at < idx + ahead)
        return;
    uint64_t s = seq + (at - idx);
    uint64_t step = (s - p) / t;
    if (step < c->req_after + c->req_every || now_of(c) - c->last_notice < MIN_GAP)
        return;
    if (p > CL_ELMSG_MAX_PREFIX)
        return;
    uint32_t *sigs = p > 0 ? calloc(p, sizeof *sigs) : NULL;
    if (p > 0 && sigs == NULL)
        return;
    for (uint64_t i = 0; i < p; i++)
        if (cl_stream_signature(stream, i, &sigs[i]) != COLLAB_OK) {
            free(sigs);
            return;
        }
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_CKPT;
    m.ckpt = CL_EL_CKPT_NOTICE;
    m.s = s;
    m.step = step;
    m.prefix = p;
    m.sigs = sigs;
    m.nsigs = (uint32_t)p;
    memcpy(m.key, c->req_key, 32);
    c->ctx.keep_copy(c->ctx.arg, s, c->req_key, false); /* one copy per monitor */
    size_t n;
    cl_peer_t *const *list = c->ctx.members(c->ctx.arg, &n);
    for (size_t i = 0; i < n; i++)
        if (!is_self(c, list[i]) && list[i]->in_group && list[i]->state == CL_PEER_ALIVE)
            (void)send_to(c, list[i]->key, &m);
    (void)send_to(c, c->req_key, &m);
    free(sigs);
    c->req_pending = false;
    c->last_notice = now_of(c);
    cl_debug("checkpoint of step %llu at collective #%llu for monitor %.8s…",
             (unsigned long long)step, (unsigned long long)s, mon->id);
}

/* ---------------------------------------------------------------------- */
/* A new first peer resuming from a monitor's checkpoint. */

static void on_resume(struct el_ckpt *c, const uint8_t key[32], const cl_elmsg_t *m)
{
    if (c->ctx.cfg->monitor || !c->ctx.fresh(c->ctx.arg)) {
        cl_warn("a checkpoint to resume from arrived after this peer's first collective; it "
                "starts from its own state");
        return;
    }
    free(c->r_sigs);
    c->r_sigs = m->nsigs > 0 ? malloc(m->nsigs * sizeof *c->r_sigs) : NULL;
    if (m->nsigs > 0 && c->r_sigs == NULL)
        return;
    if (m->nsigs > 0)
        memcpy(c->r_sigs, m->sigs, m->nsigs * sizeof *c->r_sigs);
    c->r_s = m->s;
    c->r_step = m->step;
    c->r_prefix = m->prefix;
    /* The monitor that holds the checkpoint: the sender, or the one a
       resumed coordinator names. */
    static const uint8_t zero[32];
    memcpy(c->r_key, memcmp(m->key, zero, 32) != 0 ? m->key : key, 32);
    c->resume_pending = true;
}

bool eng_ckpt_take_resume(el_ckpt_t *c, eng_ckpt_resume_t *out)
{
    if (c == NULL || !c->resume_pending)
        return false;
    c->resume_pending = false;
    out->s = c->r_s;
    out->step = c->r_step;
    out->prefix = c->r_prefix;
    out->sigs = c->r_sigs;
    memcpy(out->key, c->r_key, 32);
    return true;
}

void eng_ckpt_resuming(el_ckpt_t *c)
{
    if (c != NULL)
        c->resumed_from = true;
}

/* The monitor, as the coordinator that admits a rank: a new first peer
   resumes from the checkpoint. */
void eng_ckpt_on_admit_rank(el_ckpt_t *c, const uint8_t key[32])
{
    if (c == NULL || c->ctx.group_closed(c->ctx.arg))
        return;
    if (!c->ctx.cfg->monitor && c->resumed_from) {
        /* A coordinator that resumed from a monitor's checkpoint while the
           group forms: the peers it admits resume from it too. */
        cl_elmsg_t m;
        memset(&m, 0, sizeof m);
        m.type = CL_EL_CKPT;
        m.ckpt = CL_EL_CKPT_RESUME;
        m.s = c->r_s;
        m.step = c->r_step;
        m.prefix = c->r_prefix;
        m.sigs = c->r_sigs;
        m.nsigs = (uint32_t)c->r_prefix;
        memcpy(m.key, c->r_key, 32);
        (void)send_to(c, key, &m);
        return;
    }
    if (!c->ctx.cfg->monitor || !c->have_ok)
        return;
    cl_elmsg_t m;
    memset(&m, 0, sizeof m);
    m.type = CL_EL_CKPT;
    m.ckpt = CL_EL_CKPT_RESUME;
    m.s = c->have.seq;
    m.step = c->have.step;
    m.prefix = c->have.prefix;
    m.sigs = c->have.sigs;
    m.nsigs = (uint32_t)c->have.prefix;
    memcpy(m.key, c->ctx.self_key, 32);
    if (send_to(c, key, &m) != COLLAB_OK)
        return;
    if (!resumed(c, key)) {
        memcpy(c->resumed[c->next_resumed], key, 32);
        c->next_resumed = (c->next_resumed + 1) % RESUMED_MAX;
        if (c->nresumed < RESUMED_MAX)
            c->nresumed++;
    }
    char sid[CL_PEER_ID_MAX];
    cl_base58_encode(key, 32, sid, sizeof sid);
    cl_info("peer %.8s… resumes from the checkpoint of step %llu", sid,
            (unsigned long long)c->have.step);
}

/* The monitor serving its checkpoint to a resuming peer. */
static void serve(struct el_ckpt *c, const uint8_t key[32], const cl_elmsg_t *m)
{
    cl_elmsg_t r;
    memset(&r, 0, sizeof r);
    r.s = m->s;
    if (!c->have_ok || m->s != c->have.seq) {
        r.type = CL_EL_NACK;
        r.what = m->type == CL_EL_FETCH ? m->what : CL_EL_ITEM_BUFFER;
        r.index = m->index;
        r.offset = m->offset;
        r.len = m->len;
        r.reason = CL_EL_NACK_MOVED;
        (void)send_to(c, key, &r);
        return;
    }
    const cl_ckpt_t *h = &c->have;
    if (m->type == CL_EL_QUERY) {
        r.type = CL_EL_HASHES;
        r.bufs = calloc(h->nitems > 0 ? h->nitems : 1, sizeof *r.bufs);
        r.res = calloc(h->nitems > 0 ? h->nitems : 1, sizeof *r.res);
        for (uint32_t i = 0; r.bufs != NULL && r.res != NULL && i < h->nitems; i++) {
            const cl_ckpt_item_t *it = &h->items[i];
            if (it->what == CL_CKPT_BUFFER && r.nbufs < CL_ELMSG_MAX_ITEMS) {
                r.bufs[r.nbufs].index = it->index;
                r.bufs[r.nbufs].size = it->size;
                memcpy(r.bufs[r.nbufs++].hash, it->hash, CL_ELMSG_HASH);
            } else if (it->what == CL_CKPT_RESULT && r.nres < CL_ELMSG_MAX_ITEMS) {
                r.res[r.nres].index = it->index;
                r.res[r.nres].signature = it->signature;
                r.res[r.nres].len = it->size;
                memcpy(r.res[r.nres++].hash, it->hash, CL_ELMSG_HASH);
            }
        }
        if (r.bufs != NULL && r.res != NULL)
            (void)send_to(c, key, &r);
        free(r.bufs);
        free(r.res);
        return;
    }
    const cl_ckpt_item_t *it = NULL;
    int want = m->what == CL_EL_ITEM_BUFFER ? CL_CKPT_BUFFER : CL_CKPT_RESULT;
    for (uint32_t i = 0; i < h->nitems && it == NULL; i++)
        if (h->items[i].what == want && h->items[i].index == m->index)
            it = &h->items[i];
    if (it == NULL || m->offset + m->len > it->size) {
        r.type = CL_EL_NACK;
        r.what = m->what;
        r.index = m->index;
        r.offset = m->offset;
        r.len = m->len;
        r.reason = CL_EL_NACK_UNKNOWN;
        (void)send_to(c, key, &r);
        return;
    }
    r.type = CL_EL_DATA;
    r.what = m->what;
    r.index = m->index;
    uint64_t end = m->offset + m->len;
    for (uint64_t off = m->offset; off < end;) {
        size_t n = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
        r.offset = off;
        r.len = n;
        r.data = it->data + off;
        if (send_to(c, key, &r) != COLLAB_OK)
            break;
        off += n;
    }
}

/* ---------------------------------------------------------------------- */

bool eng_ckpt_on_message(el_ckpt_t *c, cl_peer_t *p, const uint8_t key[32], const cl_elmsg_t *m)
{
    if (c == NULL)
        return false;
    const cl_config_t *cfg = c->ctx.cfg;
    bool in = c->ctx.member(c->ctx.arg);
    bool member = p != NULL && p->state != CL_PEER_GONE && p->rank >= 0;
    bool monitor = p != NULL && p->state != CL_PEER_GONE && p->monitor;
    if (m->type == CL_EL_QUERY || m->type == CL_EL_FETCH) {
        if (!cfg->monitor)
            return false; /* the donor's (cl_engine_donor.c) */
        if (member && in)
            serve(c, key, m);
        return true;
    }
    if (m->type != CL_EL_CKPT)
        return false;
    switch (m->ckpt) {
    case CL_EL_CKPT_REQUEST:
        /* Only a monitor of this peer's view asks, and only the admitter
           acts on it. */
        if (!monitor || cfg->monitor || !in || admitter_of(c) == NULL ||
            !is_self(c, admitter_of(c)))
            break;
        c->req_pending = true;
        memcpy(c->req_key, key, 32);
        c->req_after = m->step;
        c->req_every = m->every;
        break;
    case CL_EL_CKPT_NOTICE:
        if (cfg->monitor) {
            on_notice(c, p, m);
            break;
        }
        /* A member copies its state at s for the monitor the admitter
           names, a monitor of this peer's view. */
        if (!member || !in || admitter_of(c) != p) {
            cl_debug("a checkpoint notice from a peer that is not the admitter; ignored");
            break;
        }
        {
            cl_peer_t *mon = c->ctx.find(c->ctx.arg, m->key);
            if (mon == NULL || !mon->monitor || mon->state == CL_PEER_GONE)
                break;
            /* One copy per monitor; already blocked in s (it posted s and
               it did not complete): copied now. */
            c->ctx.keep_copy(c->ctx.arg, m->s, m->key, true);
        }
        break;
    case CL_EL_CKPT_RESUME:
        /* From the monitor (or the coordinator that resumed from it) this
           peer asked to join, before its view (the gate checked that it
           asked the sender); once a member, from a monitor of its view
           only, before its first collective (on_resume checks). */
        if (cfg->monitor || (in && !monitor))
            break;
        on_resume(c, key, m);
        break;
    default:
        break;
    }
    return true;
}
