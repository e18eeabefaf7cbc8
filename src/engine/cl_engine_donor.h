/*  cl_engine_donor.h - the donor's side of state sync (cl_engine_donor.c). */
#ifndef CL_ENGINE_DONOR_H_INCLUDED
#define CL_ENGINE_DONOR_H_INCLUDED

#include "engine/cl_elmsg.h"

#include <stdbool.h>
#include <stdint.h>

struct cl_engine;
typedef struct el_donor el_donor_t;

/* cl_engine_donor.c: the donor's side. */
el_donor_t *eng_donor_new(void);
void eng_donor_destroy(el_donor_t **d_p);
void eng_donor_on_message(struct cl_engine *e, el_donor_t *d, const uint8_t key[32],
                          const cl_elmsg_t *m);
/* The program posted a world collective, or a collective completed:
   answers the queries that waited for it, refuses those it went past. */
void eng_donor_progress(struct cl_engine *e, el_donor_t *d);
/* This peer alone serves the state of admission s to the joiners js (the
   admitter while the group runs all-reduces in several groups,
   docs/elastic.md §9): it copies its registered buffers when its program
   posts s (eng_donor_on_post) and serves QUERY and FETCH for s from that
   copy (start-up results as always), also once it went past s.  The
   copied contents are freed when every joiner fetched all of them, the
   rest after max(60 s, 12 x COLLAB_TIMEOUT). */
void eng_donor_expect(struct cl_engine *e, el_donor_t *d, uint64_t s, const cl_el_joiner_t *js,
                      uint32_t nj);
/* The program posted world collective seq (before it runs): takes the
   copy expected for seq, if any. */
void eng_donor_on_post(struct cl_engine *e, el_donor_t *d, uint64_t seq);
/* The copy for admission s: 1 taken, 0 expected (the program has not
   posted s yet), -1 none. */
int eng_donor_snapshot(const el_donor_t *d, uint64_t s);
/* Frees copies past their time; returns when it wants to be called next. */
double eng_donor_timer(struct cl_engine *e, el_donor_t *d, double now);
/* Is a copy expected or taken for key (a monitor's checkpoint, or a
   joiner of an admission served from a copy)?  Any s when s is
   UINT64_MAX. */
bool eng_donor_expects(const el_donor_t *d, uint64_t s, const uint8_t key[32]);
/* Frees every copy taken for key alone (a monitor's earlier checkpoint,
   when the next one is noticed). */
void eng_donor_forget(el_donor_t *d, const uint8_t key[32]);

#endif
