/*  cl_timer.h - a set of deadlines with callbacks, owned by the engine's
    loop.

    A component registers a timer once (a callback and its argument) and
    gets a handle; it then arms the handle at a deadline, re-arms it (the
    new deadline replaces the old one), or cancels it.  The loop sleeps
    until cl_timer_next and calls cl_timer_run, which calls every timer
    whose deadline has come, earliest first, those with equal deadlines in
    the order they were armed.  A timer fires once per arming: one that
    wants "every N seconds" re-arms itself from its callback.  The set has
    a fixed capacity chosen at creation; arming, re-arming and cancelling
    never allocate.  No clock: times are whatever the owner passes (the
    engine's eng_now()).
*/
#ifndef CL_TIMER_H_INCLUDED
#define CL_TIMER_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

typedef struct cl_timer cl_timer_t;

/* A timer's callback: its deadline came; now is the time cl_timer_run
   was given.  It may arm, re-arm, cancel or remove any timer of the set,
   itself included, but must not destroy the set. */
typedef void(cl_timer_fn)(void *arg, double now);

/* A set for at most capacity timers (capacity > 0).  Returns NULL when
   out of memory; the caller owns the result. */
cl_timer_t *cl_timer_new(size_t capacity);

/* Frees the set and nulls *self_p; accepts NULL.  No callback runs. */
void cl_timer_destroy(cl_timer_t **self_p);

/* Registers a timer, disarmed.  Returns its handle (>= 0), or -1 when
   the set is full or fn is NULL.  The set does not own arg. */
int cl_timer_add(cl_timer_t *self, cl_timer_fn *fn, void *arg);

/* Unregisters a timer (armed or not); its handle may be given to a later
   cl_timer_add.  A NULL set or a handle < 0 is ignored. */
void cl_timer_remove(cl_timer_t *self, int id);

/* Arms the timer at when, replacing any deadline it had (sooner or
   later).  A deadline at or before the time of a cl_timer_run that is
   under way fires in the next run, not in this one.  A NULL set or a
   handle < 0 is ignored. */
void cl_timer_arm(cl_timer_t *self, int id, double when);

/* Arms the timer at when unless it is armed sooner already: for "look
   at this no later than when". */
void cl_timer_arm_by(cl_timer_t *self, int id, double when);

/* Disarms the timer (its callback does not run until it is armed
   again).  A NULL set, a handle < 0 or a disarmed timer is ignored. */
void cl_timer_cancel(cl_timer_t *self, int id);

/* The timer's deadline, or INFINITY when it is not armed. */
double cl_timer_when(const cl_timer_t *self, int id);

/* The earliest deadline of the set, or INFINITY when none is armed. */
double cl_timer_next(const cl_timer_t *self);

/* Runs the callbacks of the timers whose deadline is at or before now,
   earliest first (equal deadlines in the order armed), each disarmed
   before its callback.  A timer cancelled or re-armed by an earlier
   callback of the same run does not run.  Returns how many ran; a call
   from inside a callback runs nothing and returns 0. */
size_t cl_timer_run(cl_timer_t *self, double now);

#endif
