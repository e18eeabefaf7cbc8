/*  cl_engine_match.c - matchmaking of the world group (docs/membership.md
    §2): the coordinator forms the group once every rank of the world was
    a member, the target size is present, or the matchmaking window
    (COLLAB_MATCHMAKING_TIME from the first request) ended with at least
    COLLAB_MIN_GROUP members; a member that waits for the group asks the
    coordinator with MATCH.  Owns match_* and the ranks ever members
    (joined/njoined), and the window's timer.
*/
#include "engine/cl_engine_match.h"

#include "engine/cl_engine_int.h"

#include "util/cl_log.h"

#include <stdlib.h>
#include <string.h>

/* Notes that rank r is (or was) a member, for matchmaking: once every rank
   of the world has been one, nobody else can join the first group. */
void eng_match_note_joined(struct cl_engine *e, int r)
{
    int ws = cl_member_settings(e->mb)->world_size;
    if (r < 0 || r >= ws)
        return;
    if (r >= e->njoined_cap) {
        uint8_t *a = realloc(e->joined, (size_t)ws);
        if (a == NULL)
            return;
        memset(a + e->njoined_cap, 0, (size_t)(ws - e->njoined_cap));
        e->joined = a;
        e->njoined_cap = ws;
    }
    if (!e->joined[r]) {
        e->joined[r] = 1;
        e->njoined++;
    }
}

void eng_match_check(struct cl_engine *e, double now)
{
    if (!eng_self_coordinates(e))
        return;
    eng_take_over(e);
    if (cl_member_group_closed(e->mb) || e->match_since <= 0)
        return;
    eng_match_note_joined(e, cl_member_self(e->mb)->rank);
    size_t n;
    cl_member_list(e->mb, &n);
    const cl_settings_t *s = cl_member_settings(e->mb);
    /* Every rank of the world was a member (some may have failed since):
       nobody else can come, and waiting for the window is in vain. */
    bool close =
        (int)n >= s->world_size || (int)n >= s->target_group || e->njoined >= s->world_size;
    if (!close && !s->strict && now >= e->match_since + e->cfg.matchmaking_time &&
        (int)n >= e->cfg.min_group)
        close = true;
    if (!close)
        return;
    cl_member_delta_t d;
    if (cl_member_close_group(e->mb, &d) == 1) {
        cl_info("formed the group: %zu of %d ranks present", n, s->world_size);
        eng_coordinator_commit(e, &d);
    } else {
        cl_member_delta_clear(&d);
    }
}

void eng_request_match(struct cl_engine *e)
{
    if (cl_member_group_closed(e->mb) || e->state != ENG_MEMBER)
        return;
    if (eng_self_coordinates(e)) {
        eng_take_over(e);
        eng_match_asked(e, eng_now());
        eng_match_check(e, eng_now());
        return;
    }
    cl_peer_t *c = cl_member_coordinator(e->mb);
    if (c == NULL || (e->match_asked && memcmp(e->match_asked_key, c->key, 32) == 0))
        return;
    cl_wire_msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = CL_MSG_MATCH;
    m.hdr.comm = CL_COMM_WORLD_ID;
    if (eng_send(e, c, &m) == COLLAB_OK) {
        memcpy(e->match_asked_key, c->key, 32);
        e->match_asked = true;
    }
}

/* Someone asked for the group (match_since is set): the window's end is
   armed. */
void eng_match_asked(struct cl_engine *e, double now)
{
    if (e->match_since <= 0)
        e->match_since = now;
    cl_timer_arm(e->timers, e->match_timer, e->match_since + e->cfg.matchmaking_time);
}

/* After each check of silent members (the timer of _suspect): matchmaking. */
void eng_match_checked(void *arg, bool coordinator, double now)
{
    struct cl_engine *e = arg;
    if (coordinator) {
        if (e->waiting_for_group)
            eng_request_match(e); /* starts the clock of a new coordinator */
        eng_match_check(e, now);
        return;
    }
    /* Ask again at every check while the group is not formed: a MATCH
       can be lost with a coordinator that failed, or reach a peer that
       did not know yet that it is a member (its view was on the way). */
    if (e->waiting_for_group) {
        e->match_asked = false;
        eng_request_match(e);
    }
}

/* The end of the matchmaking window (match_since +
   COLLAB_MATCHMAKING_TIME): the one deadline of matchmaking.  Every other
   condition of forming the group changes with an event that looks at it
   (a view installed or committed, a MATCH, each check of silent members
   while this peer coordinates). */
static void on_match_timer(void *arg, double now)
{
    struct cl_engine *e = arg;
    if (e->state == ENG_MEMBER)
        eng_match_check(e, now);
}

int eng_match_init(struct cl_engine *e)
{
    e->match_timer = cl_timer_add(e->timers, on_match_timer, e);
    return e->match_timer >= 0 ? COLLAB_OK : COLLAB_ERR_NO_MEM;
}

void eng_match_fini(struct cl_engine *e)
{
    if (e->match_timer >= 0)
        cl_timer_remove(e->timers, e->match_timer);
    e->match_timer = -1;
    free(e->joined);
    e->joined = NULL;
    e->njoined = e->njoined_cap = 0;
}
