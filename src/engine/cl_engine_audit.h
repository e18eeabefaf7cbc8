/*  cl_engine_audit.h - the periodic state check (cl_engine_audit.c). */
#ifndef CL_ENGINE_AUDIT_H_INCLUDED
#define CL_ENGINE_AUDIT_H_INCLUDED

#include "engine/cl_elmsg.h"

#include <stdbool.h>
#include <stdint.h>

struct cl_engine;
typedef struct el_audit el_audit_t;

/* cl_engine_audit.c: every 64 steps the admitter checks that the members
   hold the same registered state (docs/state-sync.md §3); not while the
   group runs all-reduces in several groups (docs/elastic.md §9). */
void eng_audit_maybe_start(struct cl_engine *e, uint64_t seq, uint64_t step);
void eng_audit_on_message(struct cl_engine *e, const uint8_t key[32], const cl_elmsg_t *m);
double eng_audit_timer(struct cl_engine *e, double now);
void eng_audit_destroy(el_audit_t **a_p);

#endif
