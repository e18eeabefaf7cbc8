/*  cli_ext32.c - MPI_Pack_external / Unpack_external / Pack_external_size
    in the "external32" representation.

    external32 is the standard's canonical form: every basic element big
    endian, at the standard's size, with no padding.  Packing first packs
    the data densely in this machine's form through the type map
    (cli_tmap_pack: size bytes per element), then converts that stream
    element by element while walking the type signature
    (cli_type_children, down to predefined types).  Unpacking does the
    reverse: the caller's buffer is packed densely first, so that bytes a
    conversion does not write (the padding of a long double) keep their
    values, the stream is converted in place of it, then unpacked.

    Conversions on x86-64 (the sizes are the standard's table):
    - integers, reals and each half of a complex: byte-reversed;
    - MPI_LONG and MPI_UNSIGNED_LONG: 4 bytes (the standard's size; values
      outside 32 bits are cut to their low 32 bits, as MPICH and Open MPI
      do), sign- or zero-extended when unpacked;
    - MPI_LONG_DOUBLE (and MPI_REAL16, which both real libraries compute
      as long double; their complex forms per half): the x87 80-bit value
      becomes IEEE binary128 (same sign and exponent, the 63 fraction bits
      at the top of the 112), exact; unpacking truncates the fraction to
      63 bits and writes only the 10 bytes of the x87 value;
    - pair types (MPI_DOUBLE_INT ...): each member as above.
    Each element costs O(1); a pack moves the data twice.
*/
#include "cli.h"
#include "cli_impl.h"
#include "cli_tmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { X_SWAP, X_LONG, X_ULONG, X_LDBL };

typedef struct {
    unsigned char conv;   /* X_* */
    unsigned char native; /* bytes here */
    unsigned char ext;    /* bytes in external32 */
} cli_x32_part_t;

/* The members of predefined type id: their number (0 for MPI_LB/UB). */
static int cli_x32_parts(int id, cli_x32_part_t p[4])
{
    const cli_x32_part_t s1 = {X_SWAP, 1, 1}, s2 = {X_SWAP, 2, 2}, s4 = {X_SWAP, 4, 4},
                         s8 = {X_SWAP, 8, 8}, lg = {X_LONG, 8, 4}, ul = {X_ULONG, 8, 4},
                         ld = {X_LDBL, 16, 16};
    switch (id) {
    case CLI_T_LONG:
        p[0] = lg;
        return 1;
    case CLI_T_UNSIGNED_LONG:
        p[0] = ul;
        return 1;
    case CLI_T_LONG_DOUBLE:
    case CLI_T_REAL16:
        p[0] = ld;
        return 1;
    case CLI_T_C_LONG_DOUBLE_COMPLEX:
    case CLI_T_CXX_LONG_DOUBLE_COMPLEX:
    case CLI_T_COMPLEX32:
        p[0] = p[1] = ld;
        return 2;
    case CLI_T_FLOAT_INT:
    case CLI_T_2INT:
    case CLI_T_2INTEGER:
        p[0] = p[1] = s4;
        return 2;
    case CLI_T_DOUBLE_INT:
        p[0] = s8, p[1] = s4;
        return 2;
    case CLI_T_LONG_INT:
        p[0] = lg, p[1] = s4;
        return 2;
    case CLI_T_SHORT_INT:
        p[0] = s2, p[1] = s4;
        return 2;
    case CLI_T_LONG_DOUBLE_INT:
        p[0] = ld, p[1] = s4;
        return 2;
    case CLI_T_COMPLEX4:
        p[0] = p[1] = s2;
        return 2;
    default:
        break;
    }
    const cli_type_t *t = &cli_predef_types[id];
    if (t->size == 0 || t->mult == 0)
        return 0;
    MPI_Count comp = t->size / t->mult;
    if (t->basic == COLLAB_C_FLOAT_COMPLEX || t->basic == COLLAB_C_DOUBLE_COMPLEX)
        comp /= 2;
    int n = (int)(t->size / comp);
    for (int i = 0; i < n && i < 4; i++)
        p[i] = comp == 1 ? s1 : (cli_x32_part_t){X_SWAP, (unsigned char)comp, (unsigned char)comp};
    return n < 4 ? n : 4;
}

typedef struct {
    int mode;           /* 0: size only, 1: pack (native -> ext), 2: unpack (ext -> native) */
    unsigned char *nat; /* the dense native stream */
    unsigned char *ext; /* the external32 stream */
    MPI_Count bytes;    /* external32 bytes so far */
} cli_x32_walk_t;

static void cli_x32_conv(const cli_x32_part_t *p, unsigned char *nat, unsigned char *ext, int pack)
{
    switch (p->conv) {
    case X_SWAP:
        for (int k = 0; k < p->native; k++) {
            if (pack)
                ext[k] = nat[p->native - 1 - k];
            else
                nat[p->native - 1 - k] = ext[k];
        }
        break;
    case X_LONG:
    case X_ULONG:
        if (pack) {
            uint64_t v;
            memcpy(&v, nat, 8);
            for (int k = 0; k < 4; k++)
                ext[k] = (unsigned char)(v >> (24 - 8 * k));
        } else {
            uint32_t v = 0;
            for (int k = 0; k < 4; k++)
                v = (v << 8) | ext[k];
            int64_t w = p->conv == X_LONG ? (int64_t)(int32_t)v : (int64_t)v;
            memcpy(nat, &w, 8);
        }
        break;
    case X_LDBL: {
        /* x87: 64-bit significand (explicit integer bit) at bytes 0-7,
           sign and 15-bit exponent at bytes 8-9, little endian. */
        if (pack) {
            uint64_t m;
            uint16_t se;
            memcpy(&m, nat, 8);
            memcpy(&se, nat + 8, 2);
            uint64_t frac = m << 1; /* the top 64 of binary128's 112 fraction bits */
            ext[0] = (unsigned char)(se >> 8);
            ext[1] = (unsigned char)se;
            for (int k = 0; k < 8; k++)
                ext[2 + k] = (unsigned char)(frac >> (56 - 8 * k));
            memset(ext + 10, 0, 6);
        } else {
            uint16_t se = (uint16_t)(ext[0] << 8 | ext[1]);
            uint64_t frac = 0;
            for (int k = 0; k < 8; k++)
                frac = (frac << 8) | ext[2 + k];
            uint64_t m = frac >> 1;
            if ((se & 0x7fff) != 0)
                m |= UINT64_C(1) << 63; /* normal numbers, infinities, NaNs */
            memcpy(nat, &m, 8);
            memcpy(nat + 8, &se, 2);
        }
        break;
    }
    }
}

static int cli_x32_visit(void *ctx, const cli_type_t *t, MPI_Count reps)
{
    cli_x32_walk_t *w = ctx;
    if (t->predef < 0) {
        for (MPI_Count i = 0; i < reps; i++)
            cli_type_children(t, cli_x32_visit, w);
        return 0;
    }
    cli_x32_part_t p[4];
    int n = cli_x32_parts(t->predef, p);
    MPI_Count ext = 0;
    for (int k = 0; k < n; k++)
        ext += p[k].ext;
    if (w->mode == 0) {
        w->bytes += ext * reps;
        return 0;
    }
    for (MPI_Count i = 0; i < reps; i++)
        for (int k = 0; k < n; k++) {
            cli_x32_conv(&p[k], w->nat, w->ext + w->bytes, w->mode == 1);
            w->nat += p[k].native;
            w->bytes += p[k].ext;
        }
    return 0;
}

/* External32 bytes of count elements of t. */
static MPI_Count cli_x32_size(const cli_type_t *t, MPI_Count count)
{
    cli_x32_walk_t w = {0};
    cli_x32_visit(&w, t, 1);
    return w.bytes * count;
}

static cli_type_t *cli_x32_type(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why);
}

static int cli_x32_datarep(cli_call_t *call, const char *datarep)
{
    if (datarep == NULL || strcasecmp(datarep, "external32") != 0)
        return cli_err(call, MPI_ERR_ARG, "datarep", "'%s' is not \"external32\"",
                       datarep ? datarep : "(NULL)");
    return MPI_SUCCESS;
}

static int cli_x32_pack(cli_call_t *call, const char *datarep, const void *inbuf, MPI_Count incount,
                        MPI_Datatype dt, void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    int rc = cli_x32_datarep(call, datarep);
    if (rc != MPI_SUCCESS)
        return rc;
    const cli_type_t *t = cli_x32_type(dt);
    MPI_Count bytes = cli_x32_size(t, 1), total, native;
    if (__builtin_mul_overflow(incount, bytes, &total) ||
        __builtin_mul_overflow(incount, t->size, &native))
        return cli_err(call, MPI_ERR_COUNT, "incount", "packed size overflows");
    if (*position < 0 || *position > outsize || total > outsize - *position)
        return cli_err(call, MPI_ERR_TRUNCATE, "outsize",
                       "%lld bytes at position %lld do not fit in %lld bytes", (long long)total,
                       (long long)*position, (long long)outsize);
    if (total == 0)
        return MPI_SUCCESS;
    unsigned char *tmp = malloc((size_t)native);
    if (tmp == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    cli_tmap_pack(t, incount, inbuf, tmp);
    cli_x32_walk_t w = {.mode = 1, .nat = tmp, .ext = (unsigned char *)outbuf + *position};
    for (MPI_Count i = 0; i < incount; i++)
        cli_x32_visit(&w, t, 1);
    free(tmp);
    *position += total;
    return MPI_SUCCESS;
}

static int cli_x32_unpack(cli_call_t *call, const char *datarep, const void *inbuf,
                          MPI_Count insize, MPI_Count *position, void *outbuf, MPI_Count outcount,
                          MPI_Datatype dt)
{
    int rc = cli_x32_datarep(call, datarep);
    if (rc != MPI_SUCCESS)
        return rc;
    const cli_type_t *t = cli_x32_type(dt);
    MPI_Count bytes = cli_x32_size(t, 1), total, native;
    if (__builtin_mul_overflow(outcount, bytes, &total) ||
        __builtin_mul_overflow(outcount, t->size, &native))
        return cli_err(call, MPI_ERR_COUNT, "outcount", "unpacked size overflows");
    if (*position < 0 || *position > insize || total > insize - *position)
        return cli_err(call, MPI_ERR_TRUNCATE, "insize",
                       "%lld bytes at position %lld exceed the %lld-byte input", (long long)total,
                       (long long)*position, (long long)insize);
    if (total == 0)
        return MPI_SUCCESS;
    unsigned char *tmp = malloc((size_t)native);
    if (tmp == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    cli_tmap_pack(t, outcount, outbuf, tmp); /* bytes no conversion writes keep their values */
    cli_x32_walk_t w = {.mode = 2, .nat = tmp, .ext = (unsigned char *)inbuf + *position};
    for (MPI_Count i = 0; i < outcount; i++)
        cli_x32_visit(&w, t, 1);
    cli_tmap_unpack(t, outcount, tmp, outbuf);
    free(tmp);
    *position += total;
    return MPI_SUCCESS;
}

int cli_impl_Pack_external(cli_call_t *call, const char *datarep, const void *inbuf, int incount,
                           MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                           MPI_Aint *position)
{
    MPI_Count pos = *position;
    int rc = cli_x32_pack(call, datarep, inbuf, incount, datatype, outbuf, outsize, &pos);
    if (rc == MPI_SUCCESS)
        *position = (MPI_Aint)pos;
    return rc;
}

int cli_impl_Pack_external_c(cli_call_t *call, const char *datarep, const void *inbuf,
                             MPI_Count incount, MPI_Datatype datatype, void *outbuf,
                             MPI_Count outsize, MPI_Count *position)
{
    return cli_x32_pack(call, datarep, inbuf, incount, datatype, outbuf, outsize, position);
}

int cli_impl_Unpack_external(cli_call_t *call, const char datarep[], const void *inbuf,
                             MPI_Aint insize, MPI_Aint *position, void *outbuf, int outcount,
                             MPI_Datatype datatype)
{
    MPI_Count pos = *position;
    int rc = cli_x32_unpack(call, datarep, inbuf, insize, &pos, outbuf, outcount, datatype);
    if (rc == MPI_SUCCESS)
        *position = (MPI_Aint)pos;
    return rc;
}

int cli_impl_Unpack_external_c(cli_call_t *call, const char datarep[], const void *inbuf,
                               MPI_Count insize, MPI_Count *position, void *outbuf,
                               MPI_Count outcount, MPI_Datatype datatype)
{
    return cli_x32_unpack(call, datarep, inbuf, insize, position, outbuf, outcount, datatype);
}

static int cli_x32_size_of(cli_call_t *call, const char *datarep, MPI_Count incount,
                           MPI_Datatype datatype, MPI_Count *size)
{
    int rc = cli_x32_datarep(call, datarep);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Count one = cli_x32_size(cli_x32_type(datatype), 1);
    if (__builtin_mul_overflow(incount, one, size))
        return cli_err(call, MPI_ERR_COUNT, "incount", "packed size overflows");
    return MPI_SUCCESS;
}

int cli_impl_Pack_external_size(cli_call_t *call, const char *datarep, int incount,
                                MPI_Datatype datatype, MPI_Aint *size)
{
    MPI_Count s = 0;
    int rc = cli_x32_size_of(call, datarep, incount, datatype, &s);
    if (rc == MPI_SUCCESS)
        *size = (MPI_Aint)s;
    return rc;
}

int cli_impl_Pack_external_size_c(cli_call_t *call, const char *datarep, MPI_Count incount,
                                  MPI_Datatype datatype, MPI_Count *size)
{
    return cli_x32_size_of(call, datarep, incount, datatype, size);
}
