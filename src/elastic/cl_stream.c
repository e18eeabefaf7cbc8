/*  cl_stream.c - learns the start-up prefix and the period of a stream.

    How it works.  Entries live in a ring of the latest CL_STREAM_HISTORY
    records; the signatures of the first CL_STREAM_HISTORY records are kept
    apart, for joiners.  For every candidate period T (1..MAX_PERIOD) the
    class keeps lm[T], the largest index i whose entry differs from entry
    i + T.  Each new entry n is compared with entries n - T, so lm[] is
    exact for the whole stream at O(MAX_PERIOD) work per collective (a few
    microseconds, small next to any network round trip).  From index
    P_T = lm[T] + 1 on the stream is T-periodic; the smallest T with
    count - P_T >= max(3T, 8) is the lock.

    While locked, a new mismatch at distance T at or after the phase is a
    change of pattern; the stream becomes AMBIGUOUS and locks again as soon
    as some period is confirmed (lm[] keeps running, so a larger period
    that held all along locks at once).  The entry that began a step (the
    "head") is remembered, and a new lock puts its phase on that entry when
    it still occurs, so steps stay aligned after an interruption such as an
    evaluation pass.

    With COLLAB_COLLECTIVES_PER_STEP = K only distance K is tracked, on
    signatures alone.  With explicit marks nothing is learned any more.
*/
#include "elastic/cl_stream.h"

#include "mpi_collab.h"
#include "util/cl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H ((uint64_t)CL_STREAM_HISTORY)

typedef enum {
    MODE_LEARN = 0,      /* period and prefix learned from signatures and addresses */
    MODE_CONFIGURED = 1, /* period given (K); prefix learned from signatures */
    MODE_MARKED = 2,     /* boundaries are the collectives after MPIX_Collab_step */
} stream_mode_t;

typedef struct {
    uint32_t sig;   /* signature of the collective */
    uint8_t marked; /* 1 when it begins an explicitly marked step */
    uintptr_t a1;   /* first buffer address (0 = none) */
    uintptr_t a2;   /* second buffer address (0 = none) */
} entry_t;

struct cl_stream {
    char label[64];          /* names the communicator in logs */
    int per_step;            /* COLLAB_COLLECTIVES_PER_STEP, 0 = learn */
    stream_mode_t mode;      /* where boundaries come from */
    cl_stream_state_t state; /* see cl_stream.h */
    entry_t *ring;           /* entry i at ring[i % H] */
    uint32_t *startup;       /* signatures of entries 0 .. H-1 */
    uint64_t count;          /* entries recorded */
    int64_t *lm;             /* MODE_LEARN: lm[T], T = 1..MAX_PERIOD, -1 = none */
    int64_t lm_k;            /* MODE_CONFIGURED: last mismatch at distance K */
    uint64_t prefix;         /* P told to joiners, CL_STREAM_NONE = unknown */
    uint64_t period;         /* T of the current lock (learned or configured) */
    uint64_t phase;          /* boundaries are phase + m·period */
    entry_t head;            /* the entry that began a step at the last lock */
    bool have_head;          /* head is set */
    bool pending_mark;       /* mark_step called since the last record */
    uint64_t marks[3];       /* indices of the last three marked entries */
    int nmarks;              /* entries used in marks[] */
    uint64_t changes;        /* locked patterns seen to change */
    bool warned_ambiguous;   /* the one-time warning was given */
    bool warned_long;        /* the long start-up warning was given */
};

static bool entry_eq(const cl_stream_t *self, const entry_t *a, const entry_t *b)
{
    if (a->sig != b->sig)
        return false;
    if (self->mode == MODE_CONFIGURED)
        return true; /* the period is given: addresses may change between steps */
    return a->a1 == b->a1 && a->a2 == b->a2;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

cl_stream_t *cl_stream_new(const char *label, int collectives_per_step)
{
    if (collectives_per_step < 0)
        return NULL;
    cl_stream_t *self = calloc(1, sizeof *self);
    if (self == NULL)
        return NULL;
    snprintf(self->label, sizeof self->label, "%s", label != NULL ? label : "a communicator");
    self->per_step = collectives_per_step;
    self->mode = collectives_per_step > 0 ? MODE_CONFIGURED : MODE_LEARN;
    self->state = CL_STREAM_LEARNING;
    self->prefix = CL_STREAM_NONE;
    self->lm_k = -1;
    self->ring = calloc(H, sizeof *self->ring);
    self->startup = calloc(H, sizeof *self->startup);
    if (self->ring == NULL || self->startup == NULL)
        goto err_free;
    if (self->mode == MODE_LEARN) {
        self->lm = malloc((CL_STREAM_MAX_PERIOD + 1) * sizeof *self->lm);
        if (self->lm == NULL)
            goto err_free;
        for (size_t t = 0; t <= CL_STREAM_MAX_PERIOD; t++)
            self->lm[t] = -1;
    }
    if (self->mode == MODE_CONFIGURED && (uint64_t)collectives_per_step >= H) {
        self->state = CL_STREAM_AMBIGUOUS;
        self->warned_ambiguous = true;
        cl_warn("COLLAB_COLLECTIVES_PER_STEP=%d is more than the %d collectives this peer keeps "
                "to find where training starts on %s; joiners are admitted only at explicit step "
                "boundaries: call MPIX_Collab_step() at the top of the training loop",
                collectives_per_step, CL_STREAM_HISTORY, self->label);
    }
    return self;

err_free:
    free(self->lm);
    free(self->startup);
    free(self->ring);
    free(self);
    return NULL;
}

void cl_stream_destroy(cl_stream_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cl_stream_t *self = *self_p;
    free(self->lm);
    free(self->startup);
    free(self->ring);
    free(self);
    *self_p = NULL;
}

static void warn_ambiguous(cl_stream_t *self)
{
    if (self->warned_ambiguous)
        return;
    self->warned_ambiguous = true;
    if (self->mode == MODE_CONFIGURED)
        cl_warn("the collectives on %s do not repeat every %d (COLLAB_COLLECTIVES_PER_STEP) after "
                "%llu collectives; joiners are admitted only at explicit step boundaries: check "
                "COLLAB_COLLECTIVES_PER_STEP or call MPIX_Collab_step() at the top of the "
                "training loop",
                self->label, self->per_step, (unsigned long long)self->count);
    else
        cl_warn("could not learn the training step on %s after %llu collectives; joiners are "
                "admitted only at explicit step boundaries: set COLLAB_COLLECTIVES_PER_STEP to "
                "the number of collectives in one step, or call MPIX_Collab_step() at the top of "
                "the training loop",
                self->label, (unsigned long long)self->count);
}

static void warn_long(cl_stream_t *self)
{
    self->state = CL_STREAM_AMBIGUOUS;
    if (self->warned_long)
        return;
    self->warned_long = true;
    self->warned_ambiguous = true; /* one warning about ambiguity is enough */
    cl_warn("the start-up phase on %s is longer than %d collectives; joiners cannot be admitted "
            "(their start-up collectives could not be answered)",
            self->label, CL_STREAM_HISTORY);
}

/* Puts the phase of a new lock (period t, periodic from p) on the head of
   the previous lock when that entry occurs in a period, and remembers the
   head of this lock. */
static uint64_t place_phase(cl_stream_t *self, uint64_t p, uint64_t t)
{
    uint64_t w = self->count - t; /* the last full period: [w, count), w >= p */
    uint64_t phase = p;
    if (self->have_head) {
        for (uint64_t j = w; j < self->count; j++) {
            if (entry_eq(self, &self->ring[j % H], &self->head)) {
                phase = p + (j - p) % t;
                break;
            }
        }
    }
    uint64_t off = (w - phase) % t;
    uint64_t j0 = off == 0 ? w : w + (t - off);
    self->head = self->ring[j0 % H];
    self->have_head = true;
    return phase;
}

/* Looks for a confirmed period; locks on it.  Returns true when locked. */
static bool try_lock(cl_stream_t *self)
{
    uint64_t n = self->count, t = 0, p = 0;
    bool found = false, too_long = false;
    if (self->mode == MODE_LEARN) {
        uint64_t tmax = n / 3 < CL_STREAM_MAX_PERIOD ? n / 3 : CL_STREAM_MAX_PERIOD;
        for (uint64_t c = 1; c <= tmax && !found; c++) {
            uint64_t pc = (uint64_t)(self->lm[c] + 1);
            if (n - pc < max_u64(3 * c, CL_STREAM_MIN_CONFIRM))
                continue;
            if (self->prefix == CL_STREAM_NONE && pc > H) {
                too_long = true; /* a start-up this long could not be served */
                continue;
            }
            t = c;
            p = pc;
            found = true;
        }
    } else if (self->mode == MODE_CONFIGURED && (uint64_t)self->per_step < H) {
        uint64_t k = (uint64_t)self->per_step;
        uint64_t pc = (uint64_t)(self->lm_k + 1);
        if (n - pc >= max_u64(2 * k, CL_STREAM_MIN_CONFIRM)) {
            if (self->prefix == CL_STREAM_NONE && pc > H) {
                too_long = true;
            } else {
                t = k;
                p = pc;
                found = true;
            }
        }
    }
    if (!found) {
        if (too_long)
            warn_long(self);
        return false;
    }
    bool first = self->prefix == CL_STREAM_NONE;
    self->phase = place_phase(self, p, t);
    self->period = t;
    self->state = CL_STREAM_LOCKED;
    if (first || p < self->prefix)
        self->prefix = p;
    cl_log_level_t level = self->changes <= 1 ? CL_LOG_INFO : CL_LOG_DEBUG;
    if (cl_log_enabled(level)) {
        if (self->mode == MODE_CONFIGURED)
            cl_log(level,
                   "%s on %s: steps of %llu collective%s (COLLAB_COLLECTIVES_PER_STEP) after "
                   "%llu start-up collective%s",
                   first ? "found where training starts" : "steps line up again", self->label,
                   (unsigned long long)t, plural(t), (unsigned long long)self->prefix,
                   plural(self->prefix));
        else
            cl_log(level,
                   "learned the training step on %s%s: %llu collective%s per step after %llu "
                   "start-up collective%s",
                   self->label, first ? "" : " again", (unsigned long long)t, plural(t),
                   (unsigned long long)self->prefix, plural(self->prefix));
    }
    return true;
}

static void pattern_changed(cl_stream_t *self, uint64_t n)
{
    self->changes++;
    self->state = CL_STREAM_AMBIGUOUS;
    cl_log_level_t level = self->changes == 1 ? CL_LOG_WARN : CL_LOG_DEBUG;
    if (!cl_log_enabled(level))
        return;
    if (self->mode == MODE_CONFIGURED)
        cl_log(level,
               "collective #%llu on %s does not repeat collective #%llu as "
               "COLLAB_COLLECTIVES_PER_STEP=%d says; joiners wait until steps line up again%s",
               (unsigned long long)n, self->label, (unsigned long long)(n - self->period),
               self->per_step,
               self->changes == 1 ? " (further changes are logged at debug level)" : "");
    else
        cl_log(level,
               "the pattern of collectives on %s changed at collective #%llu (it repeated every "
               "%llu); joiners wait until it is learned again%s",
               self->label, (unsigned long long)n, (unsigned long long)self->period,
               self->changes == 1 ? " (further changes are logged at debug level)" : "");
}

static void evaluate(cl_stream_t *self, uint64_t n)
{
    if (self->state == CL_STREAM_LOCKED) {
        int64_t last = self->mode == MODE_LEARN ? self->lm[self->period] : self->lm_k;
        if (last >= 0 && (uint64_t)last >= self->phase) {
            pattern_changed(self, n);
            (void)try_lock(self);
        }
        return;
    }
    if (try_lock(self))
        return;
    uint64_t after = CL_STREAM_AMBIGUOUS_AFTER;
    if (self->mode == MODE_CONFIGURED)
        after += 2 * (uint64_t)self->per_step;
    if (self->state == CL_STREAM_LEARNING && self->count >= after) {
        self->state = CL_STREAM_AMBIGUOUS;
        warn_ambiguous(self);
    }
}

static void on_mark(cl_stream_t *self, uint64_t n)
{
    if (self->mode != MODE_MARKED) {
        self->mode = MODE_MARKED;
        free(self->lm);
        self->lm = NULL;
        if (self->prefix == CL_STREAM_NONE)
            self->prefix = n;
        self->state = CL_STREAM_LOCKED;
        cl_debug("steps on %s are marked by MPIX_Collab_step(): %llu start-up collective%s",
                 self->label, (unsigned long long)self->prefix, plural(self->prefix));
        if (self->prefix > H)
            warn_long(self);
    }
    if (self->nmarks == 3) {
        self->marks[0] = self->marks[1];
        self->marks[1] = self->marks[2];
        self->nmarks = 2;
    }
    self->marks[self->nmarks++] = n;
}

uint64_t cl_stream_record(cl_stream_t *self, uint32_t signature, const void *addr1,
                          const void *addr2)
{
    if (self == NULL)
        return CL_STREAM_NONE;
    uint64_t n = self->count;
    entry_t x = {.sig = signature,
                 .marked = self->pending_mark ? 1 : 0,
                 .a1 = (uintptr_t)addr1,
                 .a2 = (uintptr_t)addr2};
    bool marked = self->pending_mark;
    self->pending_mark = false;
    if (n < H)
        self->startup[n] = signature;
    if (self->mode == MODE_LEARN) {
        uint64_t tmax = n < CL_STREAM_MAX_PERIOD ? n : CL_STREAM_MAX_PERIOD;
        for (uint64_t t = 1; t <= tmax; t++)
            if (!entry_eq(self, &x, &self->ring[(n - t) % H]))
                self->lm[t] = (int64_t)(n - t);
    } else if (self->mode == MODE_CONFIGURED) {
        uint64_t k = (uint64_t)self->per_step;
        if (k < H && n >= k && self->ring[(n - k) % H].sig != signature)
            self->lm_k = (int64_t)(n - k);
    }
    self->ring[n % H] = x;
    self->count = n + 1;
    if (marked)
        on_mark(self, n);
    else if (self->mode != MODE_MARKED)
        evaluate(self, n);
    return n;
}

void cl_stream_mark_step(cl_stream_t *self)
{
    if (self != NULL)
        self->pending_mark = true;
}

cl_stream_state_t cl_stream_state(const cl_stream_t *self)
{
    return self != NULL ? self->state : CL_STREAM_AMBIGUOUS;
}

const char *cl_stream_state_name(cl_stream_state_t state)
{
    switch (state) {
    case CL_STREAM_LEARNING:
        return "learning";
    case CL_STREAM_LOCKED:
        return "locked";
    case CL_STREAM_AMBIGUOUS:
        return "ambiguous";
    }
    return "invalid";
}

uint64_t cl_stream_count(const cl_stream_t *self)
{
    return self != NULL ? self->count : 0;
}

uint64_t cl_stream_prefix(const cl_stream_t *self)
{
    return self != NULL ? self->prefix : CL_STREAM_NONE;
}

uint64_t cl_stream_period(const cl_stream_t *self)
{
    if (self == NULL || self->state != CL_STREAM_LOCKED)
        return 0;
    if (self->mode != MODE_MARKED)
        return self->period;
    if (self->nmarks == 3 && self->marks[2] - self->marks[1] == self->marks[1] - self->marks[0])
        return self->marks[2] - self->marks[1];
    return 0;
}

uint64_t cl_stream_changes(const cl_stream_t *self)
{
    return self != NULL ? self->changes : 0;
}

/* Smallest base + k·step >= index (k >= 0), or CL_STREAM_NONE on overflow. */
static uint64_t next_multiple(uint64_t base, uint64_t step, uint64_t index)
{
    if (index <= base)
        return base;
    uint64_t k = (index - base) / step + ((index - base) % step != 0);
    if (k > (CL_STREAM_NONE - 1 - base) / step)
        return CL_STREAM_NONE;
    return base + k * step;
}

uint64_t cl_stream_next_boundary(const cl_stream_t *self, uint64_t index)
{
    if (self == NULL || self->state != CL_STREAM_LOCKED || index == CL_STREAM_NONE)
        return CL_STREAM_NONE;
    if (self->mode != MODE_MARKED)
        return next_multiple(self->phase, self->period, index);
    if (self->count > H && index < self->count - H)
        return CL_STREAM_NONE; /* older marks are forgotten */
    if (index < self->count) {
        for (uint64_t j = index; j < self->count; j++)
            if (self->ring[j % H].marked)
                return j;
    }
    uint64_t gap = cl_stream_period(self);
    if (gap == 0)
        return CL_STREAM_NONE;
    return next_multiple(self->marks[2], gap, index > self->count ? index : self->count);
}

bool cl_stream_is_boundary(const cl_stream_t *self, uint64_t index)
{
    return index != CL_STREAM_NONE && cl_stream_next_boundary(self, index) == index;
}

int cl_stream_signature(const cl_stream_t *self, uint64_t index, uint32_t *signature)
{
    if (self == NULL || signature == NULL || index >= self->count || index >= H)
        return COLLAB_ERR_ARG;
    *signature = self->startup[index];
    return COLLAB_OK;
}
