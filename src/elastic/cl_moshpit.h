/*  cl_moshpit.h - splitting a large group into small ones, differently for
    every collective (Moshpit-style averaging; docs/elastic.md §9).

    A world all-reduce whose group has more than COLLAB_TARGET_GROUP
    members runs in several smaller groups at once.  Which member goes
    where is a pure function of what every member shares: the number of
    members of the (sorted) member list, their weights and client flags,
    the target size and the collective's sequence number.  Every member
    therefore computes the same split without exchanging anything.
*/
#ifndef CL_MOSHPIT_H_INCLUDED
#define CL_MOSHPIT_H_INCLUDED

#include <stdint.h>

/* The number of groups n members are split into for target size `target`:
   ceil(n / target), or 1 when n <= target or target < 1. */
int cl_moshpit_ngroups(int n, int target);

/* Splits the n members of a sorted member list for collective `seq`:
   writes the group of member i (0 .. result-1) to grp[i] and returns the
   number of groups.  The members are shuffled by a permutation seeded with
   seq and cut into cl_moshpit_ngroups(n, target) blocks of balanced size
   (each at most target).  A block with no member of weight > 0, or with
   clients only while some member is not a client, is merged into the next
   block (so such a group may exceed target); weight and client may be
   NULL (all 1, none a client).  With
   n <= target every member is in group 0.  Returns -1 when out of
   memory. */
int cl_moshpit_split(int n, int target, uint64_t seq, const double *weight, const int *client,
                     int *grp);

#endif
