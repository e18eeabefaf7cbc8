/*  cl_engine_clock.c - the engine's clock (cl_engine_clock.h): one
    process-wide count of the seconds this process was found not running,
    taken off the monotonic clock.
*/
#include "engine/cl_engine_clock.h"

#include <stdatomic.h>
#include <time.h>

/* Seconds during which this process was found not running (stopped,
   frozen, starved): the engine's clock does not count them, so that a
   peer that was not running never blames the others for its own silence
   (cl_engine_pause.c, through eng_el_check_pause). */
static _Atomic double s_not_running;

double eng_raw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double eng_now(void)
{
    return eng_raw_now() - atomic_load(&s_not_running);
}

void eng_add_not_running(double seconds)
{
    if (seconds > 0)
        atomic_store(&s_not_running, atomic_load(&s_not_running) + seconds);
}
