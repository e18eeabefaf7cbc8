/*  cl_engine_rate.h - this peer's measured bandwidth figure, one component
    of the engine (cl_engine_rate.c; docs/collectives.md §2.2b).

    eng_rate_t samples this peer's upload while collectives run
    (cl_transport_upload, every ENG_RATE_TICK), keeps the measurement
    (cl_linkrate.h) and, when it says the figure the view holds for this
    peer should change, hands the new one to membership
    (eng_member_set_figure), at most every ENG_FIGURE_PROPOSE_EVERY.
    Only with COLLAB_BANDWIDTH_MBIT=measure (the default), never on a
    monitor.

    It sees the engine only through the context it gets at creation
    (eng_rate_ctx_t).  Engine thread only.
*/
#ifndef CL_ENGINE_RATE_H_INCLUDED
#define CL_ENGINE_RATE_H_INCLUDED

#include "engine/cl_timer.h"
#include "util/cl_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eng_rate eng_rate_t;

/* The engine, incomplete here (docs/architecture.md, "Typed contexts"). */
struct cl_engine;

/* What the measurement may ask of the engine.  Every function gets `arg`. */
typedef struct {
    struct cl_engine *arg;  /* the engine, opaque here */
    const cl_config_t *cfg; /* COLLAB_BANDWIDTH_MBIT (bandwidth_measure), monitor */
    cl_timer_t *timers;     /* the loop's set: one timer is registered in it */
    /* The engine's clock (eng_now), for the timer, and the raw monotonic
       clock (eng_raw_now), for the samples: the network goes on while
       this process does not run, and eng_now leaves such time out. */
    double (*now)(struct cl_engine *arg);
    double (*raw_now)(struct cl_engine *arg);
    /* Whether this peer is a member, and whether a collective of it runs
       (not eng_coll_idle). */
    bool (*is_member)(struct cl_engine *arg);
    bool (*busy)(struct cl_engine *arg);
    /* The upload's sample (cl_transport_upload). */
    void (*upload)(struct cl_engine *arg, double now, uint64_t *acked, uint64_t *sent,
                   bool *backlogged);
    /* The figure the view holds for this peer (kbit/s, 0 none), and the
       other members' figures of the world group into others[0 .. cap-1]
       (*n of them). */
    uint32_t (*figures)(struct cl_engine *arg, uint32_t *others, size_t cap, size_t *n);
    /* This peer's figure should be kbit now (eng_member_set_figure). */
    void (*propose)(struct cl_engine *arg, uint32_t kbit);
} eng_rate_ctx_t;

/* Creates the component and registers its timer (armed at once); copies
   ctx.  Returns NULL without memory or timer; the caller owns the
   result. */
eng_rate_t *eng_rate_new(const eng_rate_ctx_t *ctx);
/* Unregisters its timer, frees it and nulls *self_p.  Accepts NULL. */
void eng_rate_destroy(eng_rate_t **self_p);
/* The measured upload in kbit/s, 0 while unknown (for the log and the
   tests). */
uint32_t eng_rate_measured(const eng_rate_t *r);

#endif
