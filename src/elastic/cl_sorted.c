/*  cl_sorted.c - arrays of entries kept sorted by a 64-bit index.

    The index is read with memcpy from the start of each entry, so the
    functions work for any entry type without knowing its layout beyond
    its first member.
*/
#include "elastic/cl_sorted.h"

#include <stdlib.h>
#include <string.h>

static uint64_t s_index_at(const void *v, size_t size, size_t i)
{
    uint64_t index;
    memcpy(&index, (const char *)v + i * size, sizeof index);
    return index;
}

size_t cl_sorted_locate(const void *v, size_t n, size_t size, uint64_t index, bool *found)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s_index_at(v, size, mid) < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n && s_index_at(v, size, lo) == index;
    return lo;
}

void *cl_sorted_grow(void *v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return v;
    size_t room = *cap > 0 ? 2 * *cap : 16;
    void *grown = realloc(v, room * size);
    if (grown == NULL)
        return NULL;
    *cap = room;
    return grown;
}

void cl_sorted_open(void *v, size_t n, size_t size, size_t pos)
{
    char *b = v;
    memmove(b + (pos + 1) * size, b + pos * size, (n - pos) * size);
}
