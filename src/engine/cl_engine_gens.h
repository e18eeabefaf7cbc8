/*  cl_engine_gens.h - the generations of the world group
    (cl_engine_gens.c; docs/wire.md §6).
*/
#ifndef CL_ENGINE_GENS_H_INCLUDED
#define CL_ENGINE_GENS_H_INCLUDED

#include <stdint.h>

/* The world group of one generation (a view's group_epoch). */
typedef struct {
    uint64_t gen; /* 0 = unused slot */
    int n;
    int *world; /* world ranks, ascending */
    double *weight;
    int *client;
    uint32_t *bandwidth; /* agreed bandwidth figures (kbit/s, 0 unknown) */
} group_gen_t;

#define ENG_GENS 16 /* generations remembered */

#endif
