/*  cl_engine_clock.h - the engine's clock (cl_engine_clock.c).

    Monotonic seconds, less the time this process was found not running
    (stopped, frozen, starved): a peer that was not running never blames
    the others for its own silence.  The pause check
    (cl_engine_pause.c, through eng_el_check_pause) adds what it found;
    every deadline and silence is measured on eng_now.  Any thread may
    call these.
*/
#ifndef CL_ENGINE_CLOCK_H_INCLUDED
#define CL_ENGINE_CLOCK_H_INCLUDED

/* The engine's clock: monotonic seconds, less the time this process was
   found not running (eng_add_not_running). */
double eng_now(void);
/* Monotonic seconds, every second counted. */
double eng_raw_now(void);
/* Takes `seconds` found not running off eng_now from now on (> 0). */
void eng_add_not_running(double seconds);

#endif
