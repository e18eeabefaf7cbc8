/*  cl_engine_suspect_test.c - selftest of the failure detector
    (cl_engine_suspect.c), one component of membership.

    Drives it through a fake context, without sockets or a clock: real
    peer records (cl_member) of three members A (rank 0), B (rank 1) and
    C (rank 2), views made by a coordinator's table in the test and
    installed like a VIEW from the network, and a record of every message
    sent or replied and of every view change the component commits (as the
    coordinator does: eng_member_commit).  Checks that heartbeats go
    to every live member, that the coordinator answers the epochs they
    carry (a view to a member behind, an outbidding view to one ahead, a
    view above its epoch to a peer that is no member), that a silent
    member is suspected and, at the coordinator, removed in a view that
    names it; that a member that is not the coordinator reports it
    (SUSPECT) instead; that when the
    coordinator itself goes silent its successor takes over (its epoch
    jumps above every view heard of) and removes it; that the coordinator
    confirms a report only when it sees the silence itself; that a
    heartbeat revives a suspect that was only slow; that a closed
    connection is a failure; that a peer that said goodbye is removed only
    once its connection closed; that a straggler is taken out of the group
    (not the swarm) once late for long enough and the vote agrees; that
    a reducer convicted of a wrong result is banned for 10 times
    COLLAB_BAN_TIME and removed; and that a tenure ends when this peer no
    longer coordinates.  Its timer lives in a real cl_timer set that the
    test runs as the loop would; it stops while this peer is not a
    member.
*/
#include "engine/cl_engine_suspect.h"

#include "engine/cl_engine_timer.h"
#include "mpi_collab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftest.h"

#define MAXSENT 32

typedef struct {
    uint8_t to[32];
    int type;
    uint8_t about[32]; /* SUSPECT: whom */
    int reason;        /* SUSPECT: why */
    uint64_t epoch;    /* HEARTBEAT: the sender's epoch */
} sent_t;

/* The fake engine: the context's argument, struct cl_engine, which the
   component sees only as an incomplete type (docs/architecture.md). */
typedef struct cl_engine {
    cl_config_t cfg;
    uint8_t self[32];
    cl_member_t *mb;
    double now;
    bool member;
    bool vote; /* the authority's straggler vote */
    bool boundaries;
    sent_t sent[MAXSENT];
    int nsent;
    int replied_views;
    /* The last view change committed. */
    int commits;
    uint8_t removed[4][32];
    size_t nremoved;
    uint8_t ungrouped[4][32];
    size_t nungrouped;
    uint64_t commit_epoch;
    int late_seen;
    int checked_coord, checked_member;
    int bans;
    double ban_seconds; /* the duration of the last ban */
    cl_timer_t *timers; /* the loop's set, run by tick */
} fake_t;

static double f_now(fake_t *f)
{
    return f->now;
}

static bool f_is_member(fake_t *f)
{
    return f->member;
}

static void record(fake_t *f, const uint8_t to[32], const cl_wire_msg_t *m)
{
    if (f->nsent == MAXSENT)
        return;
    sent_t *x = &f->sent[f->nsent++];
    memcpy(x->to, to, 32);
    x->type = m->hdr.type;
    if (m->hdr.type == CL_MSG_SUSPECT) {
        memcpy(x->about, m->u.suspect.key, 32);
        x->reason = m->u.suspect.reason;
    } else if (m->hdr.type == CL_MSG_HEARTBEAT) {
        x->epoch = m->u.heartbeat.epoch;
    }
}

static int f_send(fake_t *f, const cl_peer_t *p, cl_wire_msg_t *m)
{
    record(f, p->key, m);
    return COLLAB_OK;
}

static int f_reply(fake_t *f, const uint8_t key[32], cl_wire_msg_t *m)
{
    record(f, key, m);
    return COLLAB_OK;
}

static void f_reply_view(fake_t *f, const uint8_t key[32])
{
    (void)key;
    f->replied_views++;
}

static void f_commit(fake_t *f, cl_member_delta_t *d)
{
    f->commits++;
    f->nremoved = 0;
    f->nungrouped = 0;
    for (size_t i = 0; i < d->nremoved && i < 4; i++)
        memcpy(f->removed[f->nremoved++], d->removed[i]->key, 32);
    for (size_t i = 0; i < d->nungrouped && i < 4; i++)
        memcpy(f->ungrouped[f->nungrouped++], d->ungrouped[i]->key, 32);
    f->commit_epoch = cl_member_epoch(f->mb);
    cl_member_delta_clear(d);
}

static void f_ban(fake_t *f, const uint8_t key[32], double seconds)
{
    (void)key;
    f->bans++;
    f->ban_seconds = seconds;
}

static const char *f_desc(fake_t *f, const cl_peer_t *p, char *out, size_t len)
{
    (void)f;
    snprintf(out, len, "rank %d", p->rank >= 0 ? p->rank : p->prev_rank);
    return out;
}

static uint64_t f_progress(fake_t *f)
{
    (void)f;
    return 7;
}

static double f_step_gap(fake_t *f)
{
    (void)f;
    return 0.1;
}

static bool f_boundaries(fake_t *f)
{
    return f->boundaries;
}

static void f_late_seen(fake_t *f, double now)
{
    (void)now;
    f->late_seen++;
}

static bool f_epoch_step_ok(fake_t *f, uint64_t own, uint64_t epoch)
{
    (void)f;
    return epoch <= own || epoch - own <= 1024;
}

static bool f_member_ahead(fake_t *f, bool ahead, double patience)
{
    (void)f;
    (void)patience;
    return ahead;
}

static bool f_vote(fake_t *f, const uint8_t subject[32], const uint8_t reporter[32], size_t n)
{
    (void)subject;
    (void)reporter;
    (void)n;
    return f->vote;
}

static void f_checked(fake_t *f, bool coordinator, double now)
{
    (void)now;
    if (coordinator)
        f->checked_coord++;
    else
        f->checked_member++;
}

static uint8_t K[3][32]; /* A, B, C */

/* A fake whose records hold the view of a coordinator's table with A at
   rank 0, B at 1 and C at 2, the world group formed, as seen by `self`
   (0, 1 or 2), installed at time `now`. */
static void fake_init(fake_t *f, int self, double now)
{
    memset(f, 0, sizeof *f);
    f->cfg.timeout = 1.0;
    f->cfg.ban_time = 60.0;
    memcpy(f->self, K[self], 32);
    f->now = now;
    f->member = true;
    f->vote = true;
    f->boundaries = true;
    f->timers = cl_timer_new(4);
    CHECK(f->timers != NULL);
    cl_settings_t set = {4, false, 0, 3, 0, 1, 16, false};
    cl_member_t *ct = cl_member_new(K[0]);
    CHECK(cl_member_found(ct, 0, "/ip4/127.0.0.1/tcp/1/p2p/a", false, 1.0, &set) == 0);
    cl_member_delta_t d;
    CHECK(cl_member_admit(ct, K[1], 1, "/ip4/127.0.0.1/tcp/2/p2p/b", false, 1.0, now, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_admit(ct, K[2], 2, "/ip4/127.0.0.1/tcp/3/p2p/c", false, 1.0, now, &d) == 0);
    cl_member_delta_clear(&d);
    CHECK(cl_member_close_group(ct, &d) == 1);
    cl_member_delta_clear(&d);
    cl_wire_view_t v;
    CHECK(cl_member_view(ct, &v) == 0);
    f->mb = cl_member_new(K[self]);
    CHECK(cl_member_apply_view(f->mb, &v, now, &d) == 1); /* the coordinator's view */
    cl_member_delta_clear(&d);
    free(v.members);
    cl_member_destroy(&ct);
}

static eng_suspect_t *fd_new(fake_t *f)
{
    eng_suspect_ctx_t ctx = {.arg = f,
                             .cfg = &f->cfg,
                             .self_key = f->self,
                             .mb = f->mb,
                             .timers = f->timers,
                             .hb_interval = 0.25,
                             .now = f_now,
                             .is_member = f_is_member,
                             .send = f_send,
                             .reply = f_reply,
                             .reply_view = f_reply_view,
                             .commit = f_commit,
                             .ban = f_ban,
                             .desc = f_desc,
                             .progress = f_progress,
                             .step_gap = f_step_gap,
                             .boundaries_known = f_boundaries,
                             .late_seen = f_late_seen,
                             .epoch_step_ok = f_epoch_step_ok,
                             .member_ahead = f_member_ahead,
                             .straggler_vote = f_vote,
                             .checked = f_checked};
    eng_suspect_t *s = eng_suspect_new(&ctx);
    CHECK(s != NULL);
    return s;
}

static void fake_fini(fake_t *f, eng_suspect_t **s)
{
    eng_suspect_destroy(s);
    CHECK(*s == NULL);
    CHECK(isinf(cl_timer_next(f->timers))); /* its timer went with it */
    cl_timer_destroy(&f->timers);
    cl_member_destroy(&f->mb);
}

/* The loop's turn at f->now: the timers that are due run. */
static void tick(fake_t *f)
{
    (void)cl_timer_run(f->timers, f->now);
}

static cl_peer_t *rec(fake_t *f, int i)
{
    return cl_member_find(f->mb, K[i]);
}

static int count_sent(const fake_t *f, int type, int to)
{
    int n = 0;
    for (int i = 0; i < f->nsent; i++)
        if (f->sent[i].type == type && (to < 0 || memcmp(f->sent[i].to, K[to], 32) == 0))
            n++;
    return n;
}

static void heard_all(fake_t *f, double now)
{
    for (int i = 0; i < 3; i++)
        cl_member_heard(f->mb, K[i], now);
}

/* The coordinator heartbeats every member; a member silent for
   COLLAB_TIMEOUT is suspected and removed in a view that names it. */
static void test_coordinator_removes_silent(void)
{
    fake_t f;
    fake_init(&f, 0, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    CHECK(eng_suspect_coordinates(s));
    CHECK(cl_timer_next(f.timers) == f.now); /* started: heartbeats at once */
    uint64_t epoch = cl_member_epoch(f.mb);
    tick(&f);
    CHECK(count_sent(&f, CL_MSG_HEARTBEAT, 1) == 1 && count_sent(&f, CL_MSG_HEARTBEAT, 2) == 1);
    CHECK(count_sent(&f, CL_MSG_HEARTBEAT, 0) == 0); /* never to itself */
    CHECK(cl_timer_next(f.timers) == f.now + 0.25);
    CHECK(f.commits == 0);
    /* A check with nothing to do does not take over: the epoch stays (an
       admitter's view one above it may be on its way here). */
    f.now = 10.5;
    tick(&f);
    CHECK(f.commits == 0 && cl_member_epoch(f.mb) == epoch);

    /* B keeps talking, C goes silent. */
    f.now = 11.2;
    cl_member_heard(f.mb, K[1], f.now);
    tick(&f);
    CHECK(f.commits == 1);
    CHECK(f.nremoved == 1 && memcmp(f.removed[0], K[2], 32) == 0);
    CHECK(rec(&f, 2)->state == CL_PEER_GONE);
    CHECK(rec(&f, 2)->suspect_reason == CL_SUSPECT_SILENT); /* the fan-out reads it */
    CHECK(rec(&f, 1)->state == CL_PEER_ALIVE);
    /* The first action of its tenure raised the epoch. */
    CHECK(f.commit_epoch > epoch + 64);
    CHECK(f.checked_coord == 2 && f.checked_member == 0); /* at 10.5 and 11.2 */
    CHECK(count_sent(&f, CL_MSG_SUSPECT, -1) == 0);
    /* No longer a member: its timer stops, until it is one again. */
    f.member = false;
    f.nsent = 0;
    f.now = 12.0;
    tick(&f);
    CHECK(f.nsent == 0);
    CHECK(isinf(cl_timer_next(f.timers)));
    f.member = true;
    eng_suspect_started(s, false);
    tick(&f);
    CHECK(count_sent(&f, CL_MSG_HEARTBEAT, 1) == 1);
    CHECK(cl_timer_next(f.timers) == f.now + 0.25);
    fake_fini(&f, &s);
}

/* A member that does not coordinate reports a silent member to the
   coordinator and removes nobody itself. */
static void test_member_reports_silent(void)
{
    fake_t f;
    fake_init(&f, 1, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    CHECK(!eng_suspect_coordinates(s));
    tick(&f);
    f.nsent = 0;
    f.now = 11.2;
    cl_member_heard(f.mb, K[0], f.now);
    tick(&f);
    CHECK(f.commits == 0);
    CHECK(rec(&f, 2)->state == CL_PEER_SUSPECT);
    CHECK(count_sent(&f, CL_MSG_SUSPECT, 0) >= 1);
    bool named = false;
    for (int i = 0; i < f.nsent; i++)
        if (f.sent[i].type == CL_MSG_SUSPECT)
            named = memcmp(f.sent[i].about, K[2], 32) == 0 && f.sent[i].reason == CL_SUSPECT_SILENT;
    CHECK(named);
    CHECK(f.checked_member == 1 && f.checked_coord == 0);

    /* A heartbeat of the suspect: it was only slow. */
    cl_wire_msg_t hb;
    memset(&hb, 0, sizeof hb);
    hb.hdr.type = CL_MSG_HEARTBEAT;
    hb.u.heartbeat.epoch = cl_member_epoch(f.mb);
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(rec(&f, 2)->state == CL_PEER_ALIVE);

    /* Its connection closes: a failure, reported as such. */
    f.nsent = 0;
    eng_suspect_closed(s, rec(&f, 2));
    CHECK(rec(&f, 2)->state == CL_PEER_SUSPECT && rec(&f, 2)->link_closed);
    CHECK(f.nsent == 1 && f.sent[0].type == CL_MSG_SUSPECT &&
          f.sent[0].reason == CL_SUSPECT_CLOSED);
    /* A closed link is not revived by a heartbeat still on its way. */
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(rec(&f, 2)->state == CL_PEER_SUSPECT);
    /* Once the connection works again, it is. */
    eng_suspect_link_up(s, rec(&f, 2));
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(rec(&f, 2)->state == CL_PEER_ALIVE && !rec(&f, 2)->link_closed);
    /* A refused connection is a failure too. */
    f.nsent = 0;
    eng_suspect_refused(s, rec(&f, 2));
    CHECK(rec(&f, 2)->state == CL_PEER_SUSPECT && rec(&f, 2)->link_closed);
    CHECK(f.nsent == 1 && f.sent[0].reason == CL_SUSPECT_CLOSED);
    eng_suspect_forget(s, rec(&f, 2));
    CHECK(rec(&f, 2)->suspect_reason == 0 && !rec(&f, 2)->link_closed);
    fake_fini(&f, &s);
}

/* The coordinator fails: its successor (B, rank 1) computes that it
   coordinates now, takes over above every epoch heard, and removes it. */
static void test_successor_takes_over(void)
{
    fake_t f;
    fake_init(&f, 1, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    tick(&f);
    /* C's heartbeat tells of an epoch ahead of this peer's view (a view
       of A that never reached B). */
    uint64_t own = cl_member_epoch(f.mb);
    cl_wire_msg_t hb;
    memset(&hb, 0, sizeof hb);
    hb.hdr.type = CL_MSG_HEARTBEAT;
    hb.u.heartbeat.epoch = own + 5;
    f.nsent = 0;
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    /* Not the coordinator: it answers with its own heartbeat. */
    CHECK(f.nsent == 1 && f.sent[0].type == CL_MSG_HEARTBEAT && f.sent[0].epoch == own);
    CHECK(f.replied_views == 0);

    f.now = 11.2;
    cl_member_heard(f.mb, K[2], f.now);
    tick(&f);
    CHECK(eng_suspect_coordinates(s));
    CHECK(f.commits == 1);
    CHECK(f.nremoved == 1 && memcmp(f.removed[0], K[0], 32) == 0);
    CHECK(f.commit_epoch == own + 5 + 64 + 1); /* above the epoch heard, then the removal */
    CHECK(f.checked_coord == 1);
    /* Nobody else was suspected or reported. */
    CHECK(rec(&f, 2)->state == CL_PEER_ALIVE);
    CHECK(count_sent(&f, CL_MSG_SUSPECT, -1) == 0);

    /* Later actions of the tenure raise nothing. */
    uint64_t e1 = cl_member_epoch(f.mb);
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e1);
    fake_fini(&f, &s);
}

static cl_wire_msg_t heartbeat_of(uint64_t epoch)
{
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_HEARTBEAT;
    m.u.heartbeat.epoch = epoch;
    return m;
}

/* The coordinator answers the epochs of heartbeats: a member behind gets
   the view; a member still ahead (the authority says for long enough)
   is outbid, the takeover's epoch above it; a peer that is no member
   gets a view above its epoch, raised only by a bounded step. */
static void test_heartbeat_epochs(void)
{
    fake_t f;
    fake_init(&f, 0, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    uint64_t own = cl_member_epoch(f.mb);
    cl_wire_msg_t hb = heartbeat_of(own);
    eng_suspect_on_message(s, rec(&f, 1), K[1], &hb);
    CHECK(f.replied_views == 0 && f.nsent == 0 && cl_member_epoch(f.mb) == own);
    hb = heartbeat_of(own - 1);
    eng_suspect_on_message(s, rec(&f, 1), K[1], &hb);
    CHECK(f.replied_views == 1 && cl_member_epoch(f.mb) == own);
    hb = heartbeat_of(own + 3);
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(f.replied_views == 2);
    CHECK(cl_member_epoch(f.mb) == own + 3 + 64);
    /* Far beyond a bounded step: heard of, never followed. */
    uint64_t now_epoch = cl_member_epoch(f.mb);
    hb = heartbeat_of(now_epoch + 5000);
    eng_suspect_on_message(s, NULL, K[2], &hb);
    CHECK(f.replied_views == 3 && cl_member_epoch(f.mb) == now_epoch);
    hb = heartbeat_of(now_epoch + 10);
    eng_suspect_on_message(s, NULL, K[2], &hb);
    CHECK(f.replied_views == 4 && cl_member_epoch(f.mb) == now_epoch + 11);
    fake_fini(&f, &s);
}

/* The coordinator confirms a member's report only when it sees the
   silence itself. */
static void test_report_confirmed(void)
{
    fake_t f;
    fake_init(&f, 0, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_SUSPECT;
    memcpy(m.u.suspect.key, K[2], 32);
    m.u.suspect.reason = CL_SUSPECT_SILENT;
    f.now = 10.3; /* heard from C 0.3 s ago: below COLLAB_TIMEOUT/2 */
    eng_suspect_on_message(s, rec(&f, 1), K[1], &m);
    CHECK(f.commits == 0 && rec(&f, 2)->state == CL_PEER_ALIVE);
    f.now = 10.6;
    eng_suspect_on_message(s, rec(&f, 1), K[1], &m);
    CHECK(f.commits == 1 && f.nremoved == 1 && memcmp(f.removed[0], K[2], 32) == 0);
    /* A report of a non-member is not acted upon. */
    f.commits = 0;
    eng_suspect_on_message(s, NULL, K[2], &m);
    CHECK(f.commits == 0);
    fake_fini(&f, &s);
}

/* A peer that said goodbye is removed once its connection closed. */
static void test_goodbye(void)
{
    fake_t f;
    fake_init(&f, 0, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    eng_suspect_peer(s, rec(&f, 1), ENG_SUSPECT_LEFT);
    CHECK(rec(&f, 1)->state == CL_PEER_SUSPECT);
    CHECK(f.commits == 0); /* others may still be receiving its GOODBYE */
    CHECK(count_sent(&f, CL_MSG_SUSPECT, -1) == 0);
    eng_suspect_closed(s, rec(&f, 1));
    CHECK(f.commits == 1 && f.nremoved == 1 && memcmp(f.removed[0], K[1], 32) == 0);
    CHECK(rec(&f, 1)->suspect_reason == ENG_SUSPECT_LEFT);
    /* C says goodbye and keeps its connection: the check removes it
       COLLAB_TIMEOUT later. */
    eng_suspect_peer(s, rec(&f, 2), ENG_SUSPECT_LEFT);
    tick(&f);
    CHECK(f.commits == 1);
    f.now += 1.0;
    cl_member_heard(f.mb, K[2], f.now);
    tick(&f);
    CHECK(f.commits == 2 && f.nremoved == 1 && memcmp(f.removed[0], K[2], 32) == 0);
    fake_fini(&f, &s);
}

/* A straggler is taken out of the group, not the swarm, once late for
   long enough, when the vote agrees; a corrupt reducer is banned for 10 ×
   COLLAB_BAN_TIME and removed. */
static void test_straggler_and_corrupt(void)
{
    fake_t f;
    fake_init(&f, 0, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    eng_suspect_late(s, rec(&f, 2), CL_SUSPECT_STRAGGLER);
    CHECK(f.late_seen == 1 && f.commits == 0);
    f.now = 10.5; /* allow: max(COLLAB_TIMEOUT, 3 x step gap) = 1 s */
    heard_all(&f, f.now);
    eng_suspect_late(s, rec(&f, 2), CL_SUSPECT_STRAGGLER);
    CHECK(f.commits == 0);
    f.now = 11.1;
    heard_all(&f, f.now);
    f.vote = false;
    eng_suspect_late(s, rec(&f, 2), CL_SUSPECT_STRAGGLER);
    CHECK(f.commits == 0); /* one report is not enough */
    f.vote = true;
    eng_suspect_late(s, rec(&f, 2), CL_SUSPECT_STRAGGLER);
    CHECK(f.commits == 1 && f.nungrouped == 1 && memcmp(f.ungrouped[0], K[2], 32) == 0);
    CHECK(f.nremoved == 0 && rec(&f, 2)->state == CL_PEER_ALIVE && !rec(&f, 2)->in_group);

    f.cfg.ban_time = 3.0; /* COLLAB_BAN_TIME=3: banned for 10 times that */
    eng_suspect_corrupt(s, rec(&f, 1));
    CHECK(f.bans == 1 && f.ban_seconds == 30.0);
    CHECK(f.commits == 2 && f.nremoved == 1 && memcmp(f.removed[0], K[1], 32) == 0);
    fake_fini(&f, &s);
}

/* A tenure ends when this peer no longer coordinates, and the next one
   raises the epoch again.  The component learns of it where that can
   change: a membership that begins again (eng_suspect_started: only a
   founder coordinates from the start) and a suspect alive again (its
   heartbeat, or this peer's own stop excusing it); _member asks after
   each view it installs (eng_suspect_tenure). */
static void test_tenure(void)
{
    fake_t f;
    fake_init(&f, 0, 10.0);
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, true); /* a founder: nothing to take over */
    uint64_t e0 = cl_member_epoch(f.mb);
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e0);
    f.member = false; /* removed, then a member again: a new tenure */
    CHECK(!eng_suspect_coordinates(s));
    f.member = true;
    eng_suspect_started(s, false);
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e0 + 64);
    eng_suspect_tenure(s); /* it still coordinates: the tenure goes on */
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e0 + 64);
    fake_fini(&f, &s);

    /* B (rank 1) coordinates while A (rank 0) is suspect. */
    fake_init(&f, 1, 10.0);
    s = fd_new(&f);
    eng_suspect_started(s, false);
    cl_peer_t *a = rec(&f, 0);
    a->state = CL_PEER_SUSPECT;
    a->suspect_reason = CL_SUSPECT_SILENT;
    CHECK(eng_suspect_coordinates(s));
    e0 = cl_member_epoch(f.mb);
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e0 + 64);
    /* A's heartbeat: it was only slow, and coordinates again. */
    cl_wire_msg_t hb;
    memset(&hb, 0, sizeof hb);
    hb.hdr.type = CL_MSG_HEARTBEAT;
    hb.u.heartbeat.epoch = cl_member_epoch(f.mb);
    eng_suspect_on_message(s, a, K[0], &hb);
    CHECK(a->state == CL_PEER_ALIVE && !eng_suspect_coordinates(s));
    /* Suspect again: B's next tenure raises the epoch again. */
    a->state = CL_PEER_SUSPECT;
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e0 + 128);
    /* This peer's own stop excuses A: the same. */
    eng_suspect_excuse(s, a, f.now);
    CHECK(a->state == CL_PEER_ALIVE && !eng_suspect_coordinates(s));
    a->state = CL_PEER_SUSPECT;
    eng_suspect_take_over(s);
    CHECK(cl_member_epoch(f.mb) == e0 + 192);
    fake_fini(&f, &s);
}

/* A member whose tenure as coordinator ended answers a member still
   behind the view that ended it with its view (soak seed 6, round 1: the
   views of the tenure were refused there while the coordinator before
   was not yet suspected, and the member that coordinated next was a
   newcomer the behind member never heard of); a member never behind
   that view, and a peer that never coordinated, get nothing. */
static void test_former_coordinator_answers(void)
{
    fake_t f;
    fake_init(&f, 1, 10.0); /* B, rank 1 */
    eng_suspect_t *s = fd_new(&f);
    eng_suspect_started(s, false);
    uint64_t e0 = cl_member_epoch(f.mb);
    cl_wire_msg_t hb = heartbeat_of(e0 - 1);
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(f.replied_views == 0); /* never coordinated: not its to answer */
    cl_peer_t *a = rec(&f, 0);
    a->state = CL_PEER_SUSPECT;
    a->suspect_reason = CL_SUSPECT_SILENT;
    eng_suspect_take_over(s);
    uint64_t tenure = cl_member_epoch(f.mb);
    CHECK(tenure == e0 + 64);
    hb = heartbeat_of(cl_member_epoch(f.mb));
    eng_suspect_on_message(s, a, K[0], &hb); /* A alive again: B's tenure ends */
    CHECK(!eng_suspect_coordinates(s));
    int before = f.replied_views;
    hb = heartbeat_of(e0); /* C never took a view of B's tenure */
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(f.replied_views == before + 1);
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb); /* at each of its heartbeats */
    CHECK(f.replied_views == before + 2);
    hb = heartbeat_of(tenure); /* C has the view that ended it */
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(f.replied_views == before + 2);
    /* The coordinator A moves on; C behind A's newer view but not B's:
       A answers it, not B. */
    cl_member_raise_epoch(f.mb, tenure + 5);
    hb = heartbeat_of(tenure + 1);
    eng_suspect_on_message(s, rec(&f, 2), K[2], &hb);
    CHECK(f.replied_views == before + 2);
    fake_fini(&f, &s);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 32; j++)
            K[i][j] = (uint8_t)(0x10 * (i + 1) + j);
    CHECK(strcmp(eng_suspect_reason_text(CL_SUSPECT_SILENT), "it went silent") == 0);
    test_coordinator_removes_silent();
    test_member_reports_silent();
    test_successor_takes_over();
    test_heartbeat_epochs();
    test_report_confirmed();
    test_goodbye();
    test_straggler_and_corrupt();
    test_tenure();
    test_former_coordinator_answers();
    printf("cl_engine_suspect_test: %s\n", s_failures == 0 ? "ok" : "FAILED");
    return s_failures != 0;
}
