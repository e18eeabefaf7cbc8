/*  cl_engine_elastic_int.h - what cl_engine_elastic.c and its adapter
    files cl_engine_elastic_ctx.c and cl_engine_elastic_hooks.c share,
    and nobody else includes: the
    elastic layer's state (struct eng_elastic), the context through which
    the layer's logic (cl_engine_elastic.c) sees the engine
    (eng_el_ctx_t), the logic's functions (eng_elastic_*, on the state)
    and the helpers the adapters keep.  The rest of the engine sees the
    layer only through the hooks of cl_engine_elastic.h, thin wrappers in
    cl_engine_elastic_hooks.c.  This header includes no private engine
    header: cl_engine_elastic.c sees struct cl_engine and a stream only
    as opaque pointers.
*/
#ifndef CL_ENGINE_ELASTIC_INT_H_INCLUDED
#define CL_ENGINE_ELASTIC_INT_H_INCLUDED

#include "elastic/cl_admission.h"
#include "elastic/cl_startup.h"
#include "elastic/cl_statereg.h"
#include "elastic/cl_stream.h"
#include "engine/cl_elmsg.h"
#include "engine/cl_engine_admittee.h"
#include "engine/cl_engine_admitter.h"
#include "engine/cl_engine_audit.h"
#include "engine/cl_engine_checkpoint.h"
#include "engine/cl_engine_donor.h"
#include "engine/cl_engine_elastic.h"
#include "engine/cl_engine_gens.h" /* group_gen_t */
#include "engine/cl_engine_join.h" /* eng_state_t */
#include "engine/cl_engine_pause.h"
#include "engine/cl_engine_sync.h"
#include "engine/cl_member.h"
#include "util/cl_config.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

/* What the layer's logic (cl_engine_elastic.c) may ask of the engine.
   Every function gets `arg`, the engine, typed (struct cl_engine *,
   incomplete here: docs/architecture.md, "Typed contexts");
   cl_engine_elastic_ctx.c fills it (el_ctx) and the selftest fakes it.
   A stream is an opaque handle (struct stream *) that only the adapters
   open: the logic gets the world stream from `world` or from a hook's
   caller and hands it back.  The pointers stay valid for the layer's
   life. */
typedef struct {
    struct cl_engine *arg;
    /* The engine's configuration (read only): COLLAB_COLLECTIVES_PER_STEP
       for the world stream's steps. */
    const cl_config_t *cfg;
    const uint8_t *self_key;                     /* this peer's public key (32 bytes) */
    cl_member_t *mb;                             /* the membership's records (read only) */
    eng_state_t (*state)(struct cl_engine *arg); /* the engine's state */
    int (*rank)(struct cl_engine *arg);          /* this peer's world rank, -1 without */
    /* Sends m to key: through the loop (eng_send) to a member, else on
       the transport; returns 0 or a negative status.  reply_view: this
       peer's view back on the connection key used (the answer to a PROBE;
       eng_member_reply_view, which records that the view went out). */
    int (*send)(struct cl_engine *arg, const uint8_t key[32], cl_wire_msg_t *m);
    void (*reply_view)(struct cl_engine *arg, const uint8_t key[32]);
    /* Ignores key for that many seconds (a malformed message). */
    void (*ban)(struct cl_engine *arg, const uint8_t key[32], double seconds);
    /* Asks the coordinator to take this peer out of the group
       (eng_report_self_out). */
    void (*self_out)(struct cl_engine *arg);
    /* The group generation gen as recorded here, or NULL
       (eng_cs_gen); whether gen is recorded and lists this peer
       (eng_cs_in_gen). */
    const group_gen_t *(*gen)(struct cl_engine *arg, uint64_t gen);
    bool (*in_gen)(struct cl_engine *arg, uint64_t gen);
    /* The world communicator's stream, or NULL (eng_el_world). */
    struct stream *(*world)(struct cl_engine *arg);
    /* s's sequence number of the next local call. */
    uint64_t (*next_seq)(struct cl_engine *arg, struct stream *s);
    /* True while a collective runs on s, with its sequence and the
       generation it runs under (0: alone). */
    bool (*running)(struct cl_engine *arg, struct stream *s, uint64_t *seq, uint64_t *gen);
    /* The collective of s that completes (eng_el_on_done; its context is
       still the stream's): its sequence, generation, members that called
       another collective and contributors. */
    void (*finishing)(struct cl_engine *arg, struct stream *s, uint64_t *seq, uint64_t *gen,
                      int *nmismatch, int *ncontrib);
    /* Restarts s's running collective under gen (0: alone;
       eng_cs_restart). */
    void (*restart)(struct cl_engine *arg, struct stream *s, uint64_t gen);
    /* Gives req, posted on s, sequence seq (eng_coll_number). */
    void (*number)(struct cl_engine *arg, struct stream *s, collab_request_t *req, uint64_t seq);
    /* Drops the early messages of s for sequences below seq
       (eng_cs_drop_buffered_below). */
    void (*drop_below)(struct cl_engine *arg, struct stream *s, uint64_t seq);
    /* s's calls posted and not started, in order: how many, the first
       (NULL when none), and taking one out (the logic hands it to the
       admittee); the streams own the list. */
    size_t (*queued)(struct cl_engine *arg, struct stream *s);
    collab_request_t *(*queue_head)(struct cl_engine *arg, struct stream *s);
    void (*dequeue)(struct cl_engine *arg, struct stream *s, collab_request_t *req);
} eng_el_ctx_t;

#define EL_BARRIERS 16     /* admissions whose generation rule is remembered */
#define EL_ODD_OUT_LIMIT 3 /* collectives where all others differed, then it leaves */
#define EL_ENTRANTS 64     /* admitted peers whose first sequence is remembered */
#define EL_DONE_RING 64    /* completed world collectives whose generation is remembered */

/* An admission: from sequence s of the world communicator on, only
   generations >= gen may run (docs/elastic.md §3). */
typedef struct {
    uint64_t gen; /* 0 = unused */
    uint64_t s;
    bool reported;        /* this peer found it completed s under an older generation */
    uint8_t admitter[32]; /* who sent the ADMIT */
    uint64_t prev_gen;    /* the group generation here when the ADMIT came */
    /* Not 0: the admission did not take effect (its admitter left before
       the group got its view, see eng_elastic_view_changed); generations in
       [gen, void_until) may not run from s on, older ones may again. */
    uint64_t void_until;
    /* The ADMIT as it came (cl_elmsg encoding; NULL if it could not be
       kept), so that a coordinator that takes over from an admitter that
       died mid-admission can hand it on (eng_elastic_hand_on). */
    uint8_t *admit;
    size_t admit_len;
    bool handed_on;
} el_barrier_t;

/* A peer admitted into the world group by an ADMIT. */
typedef struct {
    uint8_t key[32];
    int rank;        /* world rank, -1 = unused slot */
    uint64_t from;   /* first world sequence it takes part in */
    uint64_t w0_end; /* a re-admitted straggler weighs 0 in [from, w0_end) */
    bool readmit;
    uint64_t gen; /* generation of the admission */
} el_entrant_t;

struct eng_elastic {
    eng_el_ctx_t ctx; /* the engine as the logic sees it (copied at creation) */
    /* Building blocks (src/elastic/). */
    cl_stream_t *stream;     /* the world communicator's stream */
    cl_statereg_t *reg;      /* start-up broadcast buffers */
    cl_startup_t *startup;   /* results of other start-up collectives */
    el_admitter_t *admitter; /* admissions this peer decides (cl_engine_admitter.c) */
    el_admittee_t *admittee; /* this peer's own admission (cl_engine_admittee.c) */
    el_donor_t *donor;       /* queries of joiners this peer serves */
    uint8_t *kinds;          /* kind + 1 of stream entries < CL_STREAM_HISTORY */
    uint64_t trimmed;        /* prefix the registry was trimmed to (NONE: not yet) */
    bool full_warned;        /* the registry was full */
    /* This peer's standing and its stream numbering: local index ->
       sequence number of the group.  Written by cl_engine_elastic.c only
       (the admittee asks, eng_elastic_stand). */
    el_standing_t st;
    uint64_t done_seq; /* sequences below this one have completed here */
    struct {
        uint64_t seq, gen;     /* gen 0: unused, or completed alone */
    } done_ring[EL_DONE_RING]; /* the latest completed ones, by seq % EL_DONE_RING */
    /* Admissions known to this peer. */
    el_barrier_t barriers[EL_BARRIERS];
    int next_barrier;
    el_entrant_t entrants[EL_ENTRANTS];
    int next_entrant;
    el_sync_t *sync;
    eng_pause_t *pause; /* a stop of this process and its doubt (cl_engine_pause.c) */
    int odd_out;        /* world collectives in a row where all others differed */
    bool group_open;    /* the last view: the group not formed, or this peer no member */
    el_audit_t *audit;  /* the periodic state check (cl_engine_audit.c) */
    el_ckpt_t *ckpt;    /* checkpoints (cl_engine_checkpoint.c) */
};

/* ---------------------------------------------------------------------- */
/* The layer's logic (cl_engine_elastic.c), on its state.  The hooks of
   cl_engine_elastic.h are wrappers of these: they check that the layer
   exists and that a stream is the world's, and read what a stream holds.
   None of them takes struct cl_engine. */

/* Creates the layer's own state on ctx (copied): the world stream's
   record, the state registry, the start-up record, the kinds; the
   components' pointers are NULL (the adapters create them).  NULL
   without memory.  destroy frees it and the ADMITs kept (the components
   must be destroyed first); accepts NULL and nulls the pointer. */
struct eng_elastic *eng_elastic_new(const eng_el_ctx_t *ctx);
/* Sets field f of this peer's standing el->st to v (the admittee's
   requests, through its context's stand): the layer is the standing's
   only writer.  An unknown f changes nothing. */
void eng_elastic_stand(struct eng_elastic *el, el_st_field_t f, uint64_t v);
void eng_elastic_destroy(struct eng_elastic **el_p);

/* Sends an ELASTIC message to key (ctx.send).  Returns 0 or a negative
   status. */
int eng_elastic_send(struct eng_elastic *el, const uint8_t key[32], const cl_elmsg_t *msg);

/* The hooks' logic, for the world stream s (the hooks checked): see
   eng_el_can_serve, _on_post, _on_fast, _fast_ok (world: s is the
   world's), _period, _steps, _on_done (comm_size: the communicator's),
   _boundaries_known, _follow, _mark_step, _gen_ok, _choose_gen, _route,
   _is_entrant, _takes_part (the world communicator), _view_changed,
   _on_message in cl_engine_elastic.h. */
int eng_elastic_can_serve(struct eng_elastic *el, uint64_t s);
bool eng_elastic_on_post(struct eng_elastic *el, struct stream *s, collab_request_t *req,
                         bool again);
void eng_elastic_on_fast(struct eng_elastic *el, const collab_request_t *req);
bool eng_elastic_fast_ok(const struct eng_elastic *el, bool world);
uint64_t eng_elastic_period(const struct eng_elastic *el);
uint64_t eng_elastic_steps(const struct eng_elastic *el);
void eng_elastic_on_done(struct eng_elastic *el, struct stream *s, collab_request_t *req,
                         int status, int comm_size);
bool eng_elastic_boundaries_known(const struct eng_elastic *el);
void eng_elastic_follow(struct eng_elastic *el, const collab_follow_t *v, size_t n);
void eng_elastic_mark_step(struct eng_elastic *el);
bool eng_elastic_gen_ok(const struct eng_elastic *el, uint64_t seq, uint64_t gen);
uint64_t eng_elastic_choose_gen(const struct eng_elastic *el);
eng_el_route_t eng_elastic_route(const struct eng_elastic *el, uint64_t seq, uint64_t cur,
                                 uint64_t hgen);
bool eng_elastic_is_entrant(const struct eng_elastic *el, const uint8_t key[32]);
bool eng_elastic_takes_part(const struct eng_elastic *el, int w, uint64_t seq, double *weight);
void eng_elastic_view_changed(struct eng_elastic *el);
void eng_elastic_on_message(struct eng_elastic *el, cl_peer_t *p, const uint8_t key[32],
                            const cl_wire_msg_t *m);

/* Did this peer complete the sequence of an admission under a generation
   older than the admission's?  Possible only while world all-reduces run
   in several groups, for a group that ran ahead of the admitter before
   the ADMIT reached it.  Such a peer holds results its new group never
   computed, so it reports it and asks the coordinator to take it out of
   the group (re-admitted and resynced as a straggler).  Called when an
   ADMIT arrives, when a view is installed and when a world collective
   completes. */
void eng_elastic_check_admissions(struct eng_elastic *el);

/* What every member remembers of an admission: its generation rule and
   its entrants (m an ADMIT, admitter its sender or NULL). */
void eng_elastic_remember(struct eng_elastic *el, const cl_elmsg_t *m, const uint8_t *admitter);
/* The coordinator that took over from an admitter that died during an
   admission hands that admission's ADMIT on to the members (once). */
void eng_elastic_hand_on(struct eng_elastic *el);
/* Voids the admissions lost with their admitter (it left before the
   whole group got the view that admits its joiners): their generations
   are barred from their sequence on, the joiners' first sequences
   forgotten, and a collective inside such a sequence restarts under the
   generation before.  Called at each view change (cl_engine_elastic_adm.c). */
void eng_elastic_void_lost(struct eng_elastic *el);
/* An admission of generation gen that the coordinator may adopt from
   `from` after its own views went past it (cl_member_adopt_admission):
   `from` admits, this peer holds its ADMIT of gen, not voided, and if
   this peer enters with it, its own admission of gen still stands. */
bool eng_elastic_adoptable(const struct eng_elastic *el, const uint8_t from[32], uint64_t gen);

/* Per-stream signature of a collective used for step learning and for
   matching a joiner's start-up collectives (kind, sizes, type, op, root,
   communicator; independent of the group). */
uint32_t eng_el_signature(const collab_request_t *req);

/* Where a completed collective's result lies in the caller's buffers, for
   the kinds whose result is the same on every member (barrier, allreduce,
   allgatherv): true with *ptr and *len set.  False for the others (reduce, gatherv:
   a result at the root only; scatterv, alltoall, reduce_scatter_block:
   one per rank). */
bool eng_el_result_span(const collab_request_t *req, int comm_size, void **ptr, size_t *len);

/* The running pull of the state (cl_engine_sync.h: an admission's sync,
   a monitor's checkpoint fetch, a peer resuming from a checkpoint).
   cl_engine_elastic_ctx.c alone starts, replaces and frees it (el->sync)
   and builds its context; the others ask through these.  eng_el_sync: the
   running pull, or NULL (read only).  eng_el_sync_start replaces it with
   a pull of admission s (eng_sync_start; admit and admitter as there),
   eng_el_sync_start_one with a pull of collective s from key alone
   (eng_sync_start_one); both return false without memory (then none
   runs).  eng_el_sync_check_donors: the pull looks at the view now
   (eng_sync_view_changed; it finishes at once when nobody is left to
   ask).  eng_el_sync_stop frees it (never from inside its `finished`). */
const el_sync_t *eng_el_sync(struct cl_engine *e);
bool eng_el_sync_start(struct cl_engine *e, uint64_t s, const cl_elmsg_t *admit,
                       const uint8_t *admitter);
bool eng_el_sync_start_one(struct cl_engine *e, uint64_t s, const uint8_t key[32]);
void eng_el_sync_check_donors(struct cl_engine *e);
void eng_el_sync_stop(struct cl_engine *e);

#endif
