/*  cl_linkrate.c - this peer's upload rate, measured (cl_linkrate.h).

    Why the upload, and why only backlogged stretches: a member of a
    butterfly all-reduce sends and receives the same amount (docs/
    collectives.md §2.2b), and an access link is almost always slower up
    than down, so the upload is what bounds it.  TCP tells the sender how
    much the network took (bytes acknowledged); that is the link's rate
    only while the sender had more waiting and neither its program nor
    the receiver's window held it back, as BBR marks its samples
    "application-limited" otherwise.  Acknowledgements may come late
    and then all at once (the sender's own download is full, or the
    receiving host did not run its network stack for a while on a busy
    machine): a window that got them would look faster than the link, so
    a window counts only what was also sent in it.  The figure is a high
    recent window, because a window in which the peer shared its link
    with the tail of a slow member's flow is lower than what the link
    gives; the third highest rather than the highest, so that the odd
    window that still looks faster than the link (a burst the qdisc took
    before it) is passed over.
*/
#include "engine/cl_linkrate.h"

#include <string.h>

void cl_linkrate_init(cl_linkrate_t *r)
{
    memset(r, 0, sizeof *r);
}

static void s_start(cl_linkrate_t *r, double t, uint64_t acked, uint64_t sent, bool open)
{
    r->open = open;
    r->start_t = t;
    r->start_acked = acked;
    r->start_sent = sent;
}

bool cl_linkrate_add(cl_linkrate_t *r, double t, uint64_t acked, uint64_t sent, bool backlogged)
{
    bool gap = t - r->last_t > CL_LINKRATE_GAP || t < r->last_t;
    r->last_t = t;
    bool drop = r->open && (acked < r->start_acked || sent < r->start_sent);
    if (!backlogged || gap || drop || !r->open) {
        /* The stretch ends; a backlogged sample starts the next. */
        s_start(r, t, acked, sent, backlogged);
        return false;
    }
    double dt = t - r->start_t;
    if (dt < CL_LINKRATE_WINDOW - 1e-6) /* samples of a periodic timer, sums of 0.1 s */
        return false;
    uint64_t da = acked - r->start_acked, ds = sent - r->start_sent;
    r->rates[r->next] = (double)(da < ds ? da : ds) / dt;
    r->next = (r->next + 1) % CL_LINKRATE_KEEP;
    if (r->nrates < CL_LINKRATE_KEEP)
        r->nrates++;
    r->windows++;
    s_start(r, t, acked, sent, true);
    return true;
}

uint32_t cl_linkrate_kbit(const cl_linkrate_t *r)
{
    if (r->nrates < CL_LINKRATE_MIN)
        return 0;
    /* The CL_LINKRATE_RANK highest, in descending order. */
    double top[CL_LINKRATE_RANK] = {0};
    for (size_t i = 0; i < r->nrates; i++) {
        double v = r->rates[i];
        for (size_t k = 0; k < CL_LINKRATE_RANK; k++)
            if (v > top[k]) {
                double tmp = top[k];
                top[k] = v;
                v = tmp;
            }
    }
    double kbit = top[CL_LINKRATE_RANK - 1] * 8.0 / 1000.0;
    if (!(kbit >= 1.0))
        return 1;
    return kbit >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)(kbit + 0.5);
}

static double ratio(uint32_t a, uint32_t b)
{
    return a > b ? (double)a / b : (double)b / a;
}

uint32_t cl_linkrate_propose(uint32_t measured, uint32_t agreed, const uint32_t *others, size_t n)
{
    if (measured == 0)
        return agreed;
    uint32_t near = 0; /* the highest other figure within the snap of the measurement */
    for (size_t i = 0; i < n; i++)
        if (others[i] > 0 && others[i] > near && ratio(others[i], measured) <= CL_LINKRATE_SNAP)
            near = others[i];
    uint32_t want = near > 0 ? near : measured;
    if (agreed == 0 || want == agreed)
        return want;
    if (want > agreed)
        return near > 0 || ratio(want, agreed) > CL_LINKRATE_HYST_UP ? want : agreed;
    return ratio(want, agreed) > CL_LINKRATE_HYST ? want : agreed;
}
