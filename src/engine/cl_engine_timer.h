/*  cl_engine_timer.h - the engine's clock: how its components name their
    deadlines.

    Components register their deadlines in the loop's timer set
    (cl_timer.h); the loop runs what is due each turn and sleeps until
    the earliest one or until a message or request arrives.  The periods and limits those deadlines
    are made of live here, named, instead of as literals in each
    component, so that one place says how often the engine wakes up and
    how long each wait may last.  Times are seconds of eng_now(), the
    engine's monotonic clock.
*/
#ifndef CL_ENGINE_TIMER_H_INCLUDED
#define CL_ENGINE_TIMER_H_INCLUDED

#include <math.h>

/* The loop sleeps at most this long: it looks again then even when
   nothing happens, so a deadline missed by a component's bookkeeping
   costs at most this long. */
#define ENG_IDLE_WAKE 5.0

/* Timers the components may register with the loop's set (cl_timer.h):
   a handful each, fixed at start. */
#define ENG_TIMERS_MAX 32

/* A joiner sends JOIN again this often while it has no answer (a standby
   peer, waiting for a free rank, every ENG_STANDBY_RETRY). */
#define ENG_JOIN_RETRY 1.0
#define ENG_STANDBY_RETRY 2.0

/* A peer waiting to be admitted at a step boundary repeats its
   ADMIT_REQ this often (the admitter may have changed). */
#define ENG_ADMIT_REQ_EVERY 1.0

/* The coordinator forgets admission requests not repeated for this long. */
#define ENG_ADMIT_REQ_EXPIRE 5.0

/* How often departed peers' records are purged (cl_member_purge). */
#define ENG_PURGE_EVERY 60.0

/* The loop's poll while a requested leave waits to start. */
#define ENG_LEAVE_POLL 0.1

/* How long a joiner tries before it gives up (COLLAB_TIMEOUT = timeout):
   never under 30 s, so that a swarm with a short timeout still admits a
   joiner whose first JOINs were lost. */
static inline double eng_join_limit(double timeout)
{
    return fmax(30.0, 4.0 * timeout);
}

/* The coordinator takes a new measured bandwidth figure from a member
   at most this often (each is a new group generation), and a member
   proposes one at most this often (cl_engine_rate.c).  While
   collectives run, the member samples its upload every ENG_RATE_TICK
   (cl_linkrate.h), and looks whether one runs every ENG_RATE_IDLE
   otherwise. */
#define ENG_FIGURE_EVERY 5.0
#define ENG_FIGURE_PROPOSE_EVERY 10.0
#define ENG_RATE_TICK 0.1
#define ENG_RATE_IDLE 1.0
/* A sample of the upload whose reading took longer than this (the
   thread lost the CPU in the middle) is not used: its counters and its
   time would not belong together. */
#define ENG_RATE_SAMPLE_SLACK 0.002

/* A running collective's algorithm is ticked this often (the waits and
   repairs it keeps itself). */
#define ENG_COLL_TICK 0.1

/* While a collective waits for a chunk of its device input to reach host
   memory (the staging pipeline, docs/cuda.md), the loop looks at the
   copies' events this often: a 256 KiB chunk crosses PCIe in about 10 us,
   a 64 MiB input in 2 to 3 ms. */
#define ENG_STAGE_POLL 0.001

/* A collective waits this long for what a peer that said goodbye has not
   sent: its GOODBYE came after everything it sent, so the rest never
   comes. */
#define ENG_DEPARTED_GRACE 0.2

/* The "step N: averaged ..." line is logged at most this often. */
#define ENG_STEP_LOG_EVERY 1.0

/* A joiner pulling state asks a donor that has not answered its QUERY
   again this often. */
#define ENG_SYNC_REQUERY_EVERY 1.0

/* Once the donors' answers are agreed on, the joiner looks at the
   fetches again this soon. */
#define ENG_SYNC_AFTER_AGREE 1.0

/* How long one exchange with the members (an admission round, an audit)
   may take before it is abandoned: never under 10 s. */
static inline double eng_exchange_limit(double timeout)
{
    return fmax(10.0, 4.0 * timeout);
}

/* How long a call waits for the world group to form, or for this peer
   to be admitted to it, before it fails (COLLAB_MATCHMAKING_TIME comes
   on top while the group is not formed): never under 30 s. */
static inline double eng_group_wait_limit(double timeout)
{
    return fmax(30.0, 4.0 * timeout);
}

/* A donor keeps its copy of the state of one admission this long for
   the joiners to fetch: never under 60 s. */
static inline double eng_donor_keep_limit(double timeout)
{
    return fmax(60.0, 12.0 * timeout);
}

/* A peer waits this long to be admitted (or re-admitted) to the group
   before its collective gives up: never under 60 s. */
static inline double eng_admit_wait_limit(double timeout)
{
    return fmax(60.0, 12.0 * timeout);
}

/* A departing peer's engine runs its GOODBYE exchange for at most this
   long (finalize). */
static inline double eng_leave_bound(double timeout)
{
    return 2.0 * timeout + 2.0;
}

/* A joiner whose initial peers are all gone for this long founds the
   swarm again: never under 1 s. */
static inline double eng_found_grace(double timeout)
{
    return fmax(1.0, 0.5 * timeout);
}

/* Not a time but a lead: an admission while several groups run, and a
   checkpoint, take effect at least this many world collectives after the
   admitter decides, so that every member learns of it before its
   program posts that collective (docs/elastic.md §9). */
#define EL_ADMIT_AHEAD 8

/* A checkpoint being fetched is looked at this often. */
#define ENG_CKPT_POLL 1.0

/* While a peer's wire version is not known yet, its held credit reports
   are looked at this often. */
#define ENG_FLOW_VERSION_POLL 0.05

/* A running collective that got no message for this long may wait for
   one behind early messages that fill its sender's grant: the sender
   gets the overdraft of class EARLY (docs/wire.md section 10 item 8). */
#define ENG_EARLY_STALL 0.02
/* A stream that messages opened for a communicator this program has not
   created leaves the table of COLLAB_MAX_STREAMS after this many seconds
   (its early messages stay: cl_engine_route.c, docs/security-bounds.md §5). */
#define ENG_STREAM_RETIRE_AFTER(timeout) (4.0 * (timeout))

/* A joiner pulling state waits this long for every donor's answer
   (HASHES) before it goes on with those that answered: never under
   30 s. */
static inline double eng_sync_limit(double timeout)
{
    return fmax(30.0, 6.0 * timeout);
}

/* A donor that sends no DATA for this long counts as stalled; its
   stripes go to other donors: never under 10 s. */
static inline double eng_sync_stall(double timeout)
{
    return fmax(2.0 * timeout, 10.0);
}

#endif
