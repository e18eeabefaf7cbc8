/*  cl_comm.c - communicator objects and their ids.

    Reverse lookups (world rank -> comm rank) use a sorted array of pairs,
    built once; the world communicator needs neither map.
*/
#include "engine/cl_comm.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static collab_comm_t *comm_alloc(uint64_t id, cl_comm_kind_t kind, int size, int rank)
{
    collab_comm_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->id = id;
    c->kind = kind;
    c->size = size;
    c->rank = rank;
    atomic_init(&c->children, 0);
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static int build_maps(collab_comm_t *c, const int *world_of)
{
    c->world_of = malloc((size_t)c->size * sizeof(int));
    c->by_world = malloc((size_t)c->size * 2 * sizeof(int));
    if (c->world_of == NULL || c->by_world == NULL)
        return -1;
    memcpy(c->world_of, world_of, (size_t)c->size * sizeof(int));
    for (int r = 0; r < c->size; r++) {
        c->by_world[2 * r] = world_of[r];
        c->by_world[2 * r + 1] = r;
    }
    qsort(c->by_world, (size_t)c->size, 2 * sizeof(int), cmp_pair);
    return 0;
}

collab_comm_t *cl_comm_new_world(int size, int rank)
{
    return comm_alloc(CL_COMM_WORLD_ID, CL_COMM_WORLD, size, rank);
}

collab_comm_t *cl_comm_new_self(int world_rank)
{
    collab_comm_t *c = comm_alloc(CL_COMM_SELF_ID, CL_COMM_SELF, 1, 0);
    if (c != NULL && build_maps(c, &world_rank) != 0)
        cl_comm_destroy(&c);
    return c;
}

collab_comm_t *cl_comm_new_derived(uint64_t id, int size, int rank, const int *world_of)
{
    if (size < 1 || rank < 0 || rank >= size || world_of == NULL)
        return NULL;
    collab_comm_t *c = comm_alloc(id, CL_COMM_DERIVED, size, rank);
    if (c != NULL && build_maps(c, world_of) != 0)
        cl_comm_destroy(&c);
    return c;
}

void cl_comm_destroy(collab_comm_t **comm_p)
{
    if (comm_p == NULL || *comm_p == NULL)
        return;
    free((*comm_p)->world_of);
    free((*comm_p)->by_world);
    free((*comm_p)->group_keys);
    pthread_mutex_destroy(&(*comm_p)->lock);
    free(*comm_p);
    *comm_p = NULL;
}

int cl_comm_world_of(const collab_comm_t *comm, int r)
{
    if (r < 0 || r >= comm->size)
        return -1;
    return comm->world_of != NULL ? comm->world_of[r] : r;
}

int cl_comm_rank_of_world(const collab_comm_t *comm, int w)
{
    if (comm->by_world == NULL)
        return w >= 0 && w < comm->size ? w : -1;
    int lo = 0, hi = comm->size;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (comm->by_world[2 * mid] < w)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < comm->size && comm->by_world[2 * lo] == w ? comm->by_world[2 * lo + 1] : -1;
}

uint64_t cl_comm_child_id(uint64_t parent, uint32_t index, int colour)
{
    uint8_t in[8 + 4 + 4], out[8];
    for (int i = 0; i < 8; i++)
        in[i] = (uint8_t)(parent >> (8 * i));
    for (int i = 0; i < 4; i++) {
        in[8 + i] = (uint8_t)(index >> (8 * i));
        in[12 + i] = (uint8_t)((uint32_t)colour >> (8 * i));
    }
    crypto_generichash(out, sizeof out, in, sizeof in, NULL, 0);
    uint64_t id = 0;
    for (int i = 7; i >= 0; i--)
        id = (id << 8) | out[i];
    if (id <= CL_COMM_SELF_ID)
        id += 3; /* reserved ids */
    return id;
}

static void hash_u64(crypto_generichash_state *h, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    crypto_generichash_update(h, b, sizeof b);
}

static uint64_t hash_final(crypto_generichash_state *h)
{
    uint8_t out[8];
    crypto_generichash_final(h, out, sizeof out);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | out[i];
    return v;
}

uint64_t cl_comm_group_id(collab_comm_t *parent, const int *world_of, int n, int tag)
{
    /* The key names (members, tag) on this parent; the count tells the
       k-th communicator made with them from the one before. */
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, 8);
    hash_u64(&h, (uint64_t)(uint32_t)tag);
    hash_u64(&h, (uint64_t)n);
    for (int i = 0; i < n; i++)
        hash_u64(&h, (uint64_t)(uint32_t)world_of[i]);
    uint64_t key = hash_final(&h);
    uint64_t seq = 0;
    pthread_mutex_lock(&parent->lock);
    int i = 0;
    while (i < parent->ngroup_keys && parent->group_keys[2 * i] != key)
        i++;
    if (i == parent->ngroup_keys) {
        uint64_t *grown = realloc(parent->group_keys, (size_t)(i + 1) * 2 * sizeof(uint64_t));
        if (grown == NULL) {
            pthread_mutex_unlock(&parent->lock);
            return 0;
        }
        parent->group_keys = grown;
        grown[2 * i] = key;
        grown[2 * i + 1] = 0;
        parent->ngroup_keys++;
    }
    seq = parent->group_keys[2 * i + 1]++;
    pthread_mutex_unlock(&parent->lock);
    /* "G" keeps these ids apart from dup/split children of the parent. */
    crypto_generichash_init(&h, NULL, 0, 8);
    crypto_generichash_update(&h, (const uint8_t *)"G", 1);
    hash_u64(&h, parent->id);
    hash_u64(&h, key);
    hash_u64(&h, seq);
    uint64_t id = hash_final(&h);
    if (id <= CL_COMM_SELF_ID)
        id += 3; /* reserved ids */
    return id;
}
