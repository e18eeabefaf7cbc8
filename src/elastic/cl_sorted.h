/*  cl_sorted.h - arrays of entries kept sorted by a 64-bit index.

    The start-up store (cl_startup) and the state registry (cl_statereg)
    each keep their entries in one array sorted by start-up index.  An
    entry is any struct whose first member is its uint64_t index; these
    functions see the array as n entries of `size` bytes.  The caller owns
    the array and keeps its count and room.
*/
#ifndef CL_SORTED_H_INCLUDED
#define CL_SORTED_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Position of the entry with this index among the n entries of v (binary
   search), or where such an entry would be inserted.  *found says whether
   the entry is there. */
size_t cl_sorted_locate(const void *v, size_t n, size_t size, uint64_t index, bool *found);

/* Makes room for one more entry: when n == *cap, reallocates v to twice
   *cap entries (16 at first) and updates *cap.  Returns the array to use
   from now on, or NULL when out of memory (then v and *cap are unchanged
   and still valid). */
void *cl_sorted_grow(void *v, size_t n, size_t *cap, size_t size);

/* Moves entries pos..n-1 of v one place up, opening slot pos for an
   insertion; the array must have room for n + 1 entries. */
void cl_sorted_open(void *v, size_t n, size_t size, size_t pos);

#endif
