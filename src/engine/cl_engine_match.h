/*  cl_engine_match.h - matchmaking of the world group (cl_engine_match.c).
*/
#ifndef CL_ENGINE_MATCH_H_INCLUDED
#define CL_ENGINE_MATCH_H_INCLUDED

#include <stdbool.h>

struct cl_engine;

/* Registers the window's timer. */
int eng_match_init(struct cl_engine *e);
/* Removes the timer, frees the ranks ever members. */
void eng_match_fini(struct cl_engine *e);
/* Rank r is (or was) a member. */
void eng_match_note_joined(struct cl_engine *e, int r);
/* Coordinator: forms the group when it is time. */
void eng_match_check(struct cl_engine *e, double now);
/* Someone asked for the group: the window's clock runs. */
void eng_match_asked(struct cl_engine *e, double now);
/* After each check of silent members (the timer of _suspect). */
void eng_match_checked(void *arg, bool coordinator, double now);

#endif
