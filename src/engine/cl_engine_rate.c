/*  cl_engine_rate.c - this peer's measured bandwidth figure
    (cl_engine_rate.h).

    Its timer looks every ENG_RATE_IDLE whether a collective runs; while
    one does it samples the upload every ENG_RATE_TICK, so that a
    backlogged stretch is seen at a tenth of a second's grain
    (cl_linkrate.h).  Each completed window may change what the figure
    should be (cl_linkrate_propose: near other members' figures it joins
    them, otherwise it moves only past the hysteresis); a change goes to
    membership, which sends it to the coordinator (UPDATE) or, on the
    coordinator, makes the view.  The coordinator's own limit
    (ENG_FIGURE_EVERY per member) keeps a member from making the views
    churn; this side's (ENG_FIGURE_PROPOSE_EVERY) keeps an honest one
    from asking more often than that.
*/
#include "engine/cl_engine_rate.h"

#include "engine/cl_engine_timer.h"
#include "engine/cl_linkrate.h"
#include "util/cl_log.h"

#include <stdlib.h>

#define OTHERS_MAX 4096 /* other members' figures looked at for the snap */

struct eng_rate {
    eng_rate_ctx_t ctx;
    int timer;          /* in ctx.timers */
    cl_linkrate_t lr;   /* the measurement */
    bool sampling;      /* the last look found a collective running */
    double proposed_at; /* when a figure was last proposed, 0 never */
    uint32_t *others;   /* OTHERS_MAX figures, scratch */
};

static void on_timer(void *arg, double now);

eng_rate_t *eng_rate_new(const eng_rate_ctx_t *ctx)
{
    eng_rate_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->ctx = *ctx;
    cl_linkrate_init(&r->lr);
    r->others = calloc(OTHERS_MAX, sizeof *r->others);
    r->timer = cl_timer_add(r->ctx.timers, on_timer, r);
    if (r->others == NULL || r->timer < 0) {
        eng_rate_destroy(&r);
        return NULL;
    }
    if (r->ctx.cfg->bandwidth_measure && !r->ctx.cfg->monitor)
        cl_timer_arm(r->ctx.timers, r->timer, r->ctx.now(r->ctx.arg) + ENG_RATE_IDLE);
    return r;
}

void eng_rate_destroy(eng_rate_t **self_p)
{
    eng_rate_t *r = *self_p;
    if (r == NULL)
        return;
    if (r->timer >= 0)
        cl_timer_remove(r->ctx.timers, r->timer);
    free(r->others);
    free(r);
    *self_p = NULL;
}

uint32_t eng_rate_measured(const eng_rate_t *r)
{
    return cl_linkrate_kbit(&r->lr);
}

/* A window was measured: should the view's figure change? */
static void s_consider(eng_rate_t *r, double now)
{
    uint32_t measured = cl_linkrate_kbit(&r->lr);
    if (measured == 0 || (r->proposed_at > 0 && now - r->proposed_at < ENG_FIGURE_PROPOSE_EVERY))
        return;
    size_t n = 0;
    uint32_t agreed = r->ctx.figures(r->ctx.arg, r->others, OTHERS_MAX, &n);
    uint32_t want = cl_linkrate_propose(measured, agreed, r->others, n);
    if (want == agreed)
        return;
    cl_debug("measured upload %u kbit/s: bandwidth figure %u kbit/s (the view holds %u)", measured,
             want, agreed);
    r->proposed_at = now;
    r->ctx.propose(r->ctx.arg, want);
}

static void on_timer(void *arg, double now)
{
    eng_rate_t *r = arg;
    bool busy = r->ctx.is_member(r->ctx.arg) && r->ctx.busy(r->ctx.arg);
    if (busy || r->sampling) {
        uint64_t acked = 0, sent = 0;
        bool backlogged = false;
        double raw = r->ctx.raw_now(r->ctx.arg);
        r->ctx.upload(r->ctx.arg, raw, &acked, &sent, &backlogged);
        /* A sample whose reading took long (this thread lost the CPU in
           the middle) has no one time: it ends the stretch. */
        double after = r->ctx.raw_now(r->ctx.arg);
        if (after - raw > ENG_RATE_SAMPLE_SLACK)
            backlogged = false;
        if (cl_linkrate_add(&r->lr, raw, acked, sent, backlogged && busy))
            s_consider(r, now);
    }
    r->sampling = busy;
    cl_timer_arm(r->ctx.timers, r->timer, now + (busy ? ENG_RATE_TICK : ENG_RATE_IDLE));
}
