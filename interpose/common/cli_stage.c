/*  cli_stage.c - dense staging buffers for non-contiguous datatypes.

    Packing and unpacking walk the type map (cli_tmap.c) block by block.
    A blocking call packs, runs the core on the stage and unpacks before
    it returns; a nonblocking one hangs the stage on its request, whose
    completion hook unpacks into the program's buffer once the core is
    done (cli_stage_attach chains after the hook the request already
    has, such as a collective's bookkeeping).
*/
#include "cli_stage.h"
#include "cli_tmap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local bool s_device; /* the last stage refused device memory */

int cli_stage_fail(cli_call_t *call, const char *what)
{
    if (s_device)
        return cli_err(call, MPI_ERR_BUFFER, "buf",
                       "device (CUDA) memory with a non-contiguous datatype is not supported");
    return cli_err(call, MPI_ERR_NO_MEM, NULL, "%s", what);
}

cli_stage_t *cli_stage_new(cli_type_t *t, void *buf, int nblk, const cli_stage_block_t *blk,
                           MPI_Count bytes)
{
    s_device = buf != NULL && collab_is_device_buffer(buf);
    if (s_device)
        return NULL;
    cli_stage_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->blk = malloc(((size_t)nblk + 1) * sizeof *s->blk);
    s->tmp = bytes >= 0 && (uint64_t)bytes < SIZE_MAX ? malloc((size_t)bytes + 1) : NULL;
    if (s->blk == NULL || s->tmp == NULL) {
        free(s->blk);
        free(s->tmp);
        free(s);
        return NULL;
    }
    if (nblk > 0)
        memcpy(s->blk, blk, (size_t)nblk * sizeof *blk);
    s->nblk = nblk;
    s->bytes = bytes;
    s->buf = buf;
    s->type = t;
    cli_lock();
    t->refs++;
    cli_unlock();
    return s;
}

cli_stage_t *cli_stage_one(cli_type_t *t, const void *buf, MPI_Count count)
{
    cli_stage_block_t b = {0, 0, count};
    MPI_Count bytes;
    if (count < 0 || __builtin_mul_overflow(count, t->size, &bytes))
        return NULL; /* reported as out of memory: no such stage can exist */
    return cli_stage_new(t, (void *)buf, 1, &b, bytes);
}

void cli_stage_pack(cli_stage_t *s)
{
    for (int k = 0; k < s->nblk; k++)
        if (s->blk[k].count > 0)
            cli_tmap_pack(s->type, s->blk[k].count, s->buf + s->blk[k].toff,
                          s->tmp + s->blk[k].poff);
}

void cli_stage_unpack(cli_stage_t *s)
{
    for (int k = 0; k < s->nblk; k++)
        if (s->blk[k].count > 0)
            cli_tmap_unpack(s->type, s->blk[k].count, s->tmp + s->blk[k].poff,
                            s->buf + s->blk[k].toff);
}

void cli_stage_unpack_part(cli_stage_t *s, MPI_Count bytes)
{
    if (bytes > s->bytes)
        bytes = s->bytes;
    cli_tmap_unpack_part(s->type, bytes, s->tmp, s->buf);
}

void cli_stage_destroy(cli_stage_t **self_p)
{
    while (self_p != NULL && *self_p != NULL) {
        cli_stage_t *s = *self_p;
        *self_p = s->next;
        cli_lock();
        cli_type_unref(s->type);
        cli_unlock();
        free(s->blk);
        free(s->tmp);
        free(s);
    }
}

int cli_stage_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    cli_stage_t *s = r->aux;
    if (s == NULL)
        return status;
    if (s->chained != NULL) {
        r->aux = s->chained_aux;
        status = s->chained(r, status, st);
    }
    r->aux = NULL;
    if (status == COLLAB_OK && s->unpack) {
        if (r->kind == CLI_REQ_RECV && st != NULL)
            cli_stage_unpack_part(s, (MPI_Count)st->bytes);
        else
            for (cli_stage_t *p = s; p != NULL; p = p->next)
                if (p->unpack)
                    cli_stage_unpack(p);
    }
    cli_stage_destroy(&s);
    return status;
}

void cli_stage_attach(MPI_Request h, cli_stage_t *s)
{
    int why = 0;
    cli_req_t *r = cli_req_lookup(h, &why);
    if (r == NULL) {
        cli_stage_destroy(&s);
        return;
    }
    if (r->done) {
        void *keep = r->aux;
        r->aux = s;
        r->status = cli_stage_finish(r, r->status, &r->st);
        r->aux = keep;
        return;
    }
    s->chained = r->finish;
    s->chained_aux = r->aux;
    r->finish = cli_stage_finish;
    r->aux = s;
}
