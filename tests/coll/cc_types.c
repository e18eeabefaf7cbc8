/*  cc_types.c - datatypes, operations, inputs and exact expected results.

    The table lists every predefined datatype under test with its layout
    (value components, index of pair types) and its category in the MPI
    standard's table of reduction operations, so that each (type, op)
    pair the standard allows is exercised.

    Inputs are small integers (halves and quarters for floating-point
    types), chosen per operation so that no sum or product can round or
    overflow for the sizes we test: the expected result computed here is
    exact, and a correct library must match it bit for bit.  Integer
    values are held as 64-bit two's complement and truncated to the
    type's width; MAX/MIN inputs use the top bit of unsigned types and
    large negative values of signed types so that a signed/unsigned
    mix-up is caught.  Logical inputs use several non-zero "true" values.
*/
#include "coll_check.h"

#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layouts of MPI's pair types, from the C compiler itself. */
typedef struct {
    float v;
    int i;
} cc_float_int_t;
typedef struct {
    double v;
    int i;
} cc_double_int_t;
typedef struct {
    long v;
    int i;
} cc_long_int_t;
typedef struct {
    short v;
    int i;
} cc_short_int_t;
typedef struct {
    int v;
    int i;
} cc_2int_t;
typedef struct {
    long double v;
    int i;
} cc_ldouble_int_t;
typedef struct {
    float v;
    float i;
} cc_2real_t;
typedef struct {
    double v;
    double i;
} cc_2double_t;

#define SCALAR(nm, h, cat, fam, kind, sz)                                                          \
    {                                                                                              \
        nm, h, cat, fam, kind, sz, 1, 0, CC_S_SINT, 0, 0, sz, 0                                    \
    }
#define COMPLEX(nm, h, fam, sz)                                                                    \
    {                                                                                              \
        nm, h, CC_CAT_COMPLEX, fam, CC_S_FLT, sz, 2, 0, CC_S_SINT, 0, 0, 2 * (sz), 0               \
    }
#define PAIR(nm, h, fam, vk, vs, ik, st)                                                           \
    {                                                                                              \
        nm, h, CC_CAT_PAIR, fam, vk, vs, 1, 1, ik, (int)sizeof(((st *)0)->i), offsetof(st, i),     \
            sizeof(st), 0                                                                          \
    }

static cc_type_t types[] = {
    /* C integers */
    SCALAR("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, 1),
    SCALAR("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, CC_CAT_CINT, CC_FAM_C, CC_S_UINT, 1),
    SCALAR("MPI_SHORT", MPI_SHORT, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, sizeof(short)),
    SCALAR("MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT, CC_CAT_CINT, CC_FAM_C, CC_S_UINT,
           sizeof(unsigned short)),
    SCALAR("MPI_INT", MPI_INT, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, sizeof(int)),
    SCALAR("MPI_UNSIGNED", MPI_UNSIGNED, CC_CAT_CINT, CC_FAM_C, CC_S_UINT, sizeof(unsigned)),
    SCALAR("MPI_LONG", MPI_LONG, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, sizeof(long)),
    SCALAR("MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG, CC_CAT_CINT, CC_FAM_C, CC_S_UINT,
           sizeof(unsigned long)),
    SCALAR("MPI_LONG_LONG", MPI_LONG_LONG, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, sizeof(long long)),
    SCALAR("MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG, CC_CAT_CINT, CC_FAM_C, CC_S_UINT,
           sizeof(unsigned long long)),
    SCALAR("MPI_INT8_T", MPI_INT8_T, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, 1),
    SCALAR("MPI_INT16_T", MPI_INT16_T, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, 2),
    SCALAR("MPI_INT32_T", MPI_INT32_T, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, 4),
    SCALAR("MPI_INT64_T", MPI_INT64_T, CC_CAT_CINT, CC_FAM_C, CC_S_SINT, 8),
    SCALAR("MPI_UINT8_T", MPI_UINT8_T, CC_CAT_CINT, CC_FAM_C, CC_S_UINT, 1),
    SCALAR("MPI_UINT16_T", MPI_UINT16_T, CC_CAT_CINT, CC_FAM_C, CC_S_UINT, 2),
    SCALAR("MPI_UINT32_T", MPI_UINT32_T, CC_CAT_CINT, CC_FAM_C, CC_S_UINT, 4),
    SCALAR("MPI_UINT64_T", MPI_UINT64_T, CC_CAT_CINT, CC_FAM_C, CC_S_UINT, 8),
    /* multi-language types */
    SCALAR("MPI_AINT", MPI_AINT, CC_CAT_MULTI, CC_FAM_C, CC_S_SINT, sizeof(MPI_Aint)),
    SCALAR("MPI_OFFSET", MPI_OFFSET, CC_CAT_MULTI, CC_FAM_C, CC_S_SINT, sizeof(MPI_Offset)),
    SCALAR("MPI_COUNT", MPI_COUNT, CC_CAT_MULTI, CC_FAM_C, CC_S_SINT, sizeof(MPI_Count)),
    /* floating point */
    SCALAR("MPI_FLOAT", MPI_FLOAT, CC_CAT_FLOAT, CC_FAM_C, CC_S_FLT, sizeof(float)),
    SCALAR("MPI_DOUBLE", MPI_DOUBLE, CC_CAT_FLOAT, CC_FAM_C, CC_S_FLT, sizeof(double)),
    SCALAR("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, CC_CAT_FLOAT, CC_FAM_C, CC_S_FLT,
           sizeof(long double)),
#if defined(MPIX_C_FLOAT16) && defined(__FLT16_MAX__)
    {"MPIX_C_FLOAT16", MPIX_C_FLOAT16, CC_CAT_FLOAT, CC_FAM_C, CC_S_FLT, 2, 1, 0, CC_S_SINT, 0, 0,
     2, 1},
#endif
    /* complex */
    COMPLEX("MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, CC_FAM_C, sizeof(float)),
    COMPLEX("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, CC_FAM_C, sizeof(double)),
    COMPLEX("MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, CC_FAM_C, sizeof(long double)),
    /* logical */
    SCALAR("MPI_C_BOOL", MPI_C_BOOL, CC_CAT_LOGICAL, CC_FAM_C, CC_S_BOOL, 1),
    /* byte */
    SCALAR("MPI_BYTE", MPI_BYTE, CC_CAT_BYTE, CC_FAM_C, CC_S_UINT, 1),
    /* pairs */
    PAIR("MPI_FLOAT_INT", MPI_FLOAT_INT, CC_FAM_C, CC_S_FLT, 4, CC_S_SINT, cc_float_int_t),
    PAIR("MPI_DOUBLE_INT", MPI_DOUBLE_INT, CC_FAM_C, CC_S_FLT, 8, CC_S_SINT, cc_double_int_t),
    PAIR("MPI_LONG_INT", MPI_LONG_INT, CC_FAM_C, CC_S_SINT, sizeof(long), CC_S_SINT, cc_long_int_t),
    PAIR("MPI_SHORT_INT", MPI_SHORT_INT, CC_FAM_C, CC_S_SINT, sizeof(short), CC_S_SINT,
         cc_short_int_t),
    PAIR("MPI_2INT", MPI_2INT, CC_FAM_C, CC_S_SINT, sizeof(int), CC_S_SINT, cc_2int_t),
    PAIR("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, CC_FAM_C, CC_S_FLT, sizeof(long double),
         CC_S_SINT, cc_ldouble_int_t),
    /* Fortran types, used from C */
    SCALAR("MPI_INTEGER", MPI_INTEGER, CC_CAT_FINT, CC_FAM_FORTRAN, CC_S_SINT, 4),
    SCALAR("MPI_INTEGER1", MPI_INTEGER1, CC_CAT_FINT, CC_FAM_FORTRAN, CC_S_SINT, 1),
    SCALAR("MPI_INTEGER2", MPI_INTEGER2, CC_CAT_FINT, CC_FAM_FORTRAN, CC_S_SINT, 2),
    SCALAR("MPI_INTEGER4", MPI_INTEGER4, CC_CAT_FINT, CC_FAM_FORTRAN, CC_S_SINT, 4),
    SCALAR("MPI_INTEGER8", MPI_INTEGER8, CC_CAT_FINT, CC_FAM_FORTRAN, CC_S_SINT, 8),
    SCALAR("MPI_REAL", MPI_REAL, CC_CAT_FLOAT, CC_FAM_FORTRAN, CC_S_FLT, 4),
    SCALAR("MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, CC_CAT_FLOAT, CC_FAM_FORTRAN, CC_S_FLT, 8),
    SCALAR("MPI_REAL4", MPI_REAL4, CC_CAT_FLOAT, CC_FAM_FORTRAN, CC_S_FLT, 4),
    SCALAR("MPI_REAL8", MPI_REAL8, CC_CAT_FLOAT, CC_FAM_FORTRAN, CC_S_FLT, 8),
    COMPLEX("MPI_COMPLEX", MPI_COMPLEX, CC_FAM_FORTRAN, 4),
    COMPLEX("MPI_DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, CC_FAM_FORTRAN, 8),
    SCALAR("MPI_LOGICAL", MPI_LOGICAL, CC_CAT_LOGICAL, CC_FAM_FORTRAN, CC_S_BOOL, 4),
    PAIR("MPI_2INTEGER", MPI_2INTEGER, CC_FAM_FORTRAN, CC_S_SINT, 4, CC_S_SINT, cc_2int_t),
    PAIR("MPI_2REAL", MPI_2REAL, CC_FAM_FORTRAN, CC_S_FLT, 4, CC_S_FLT, cc_2real_t),
    PAIR("MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, CC_FAM_FORTRAN, CC_S_FLT, 8, CC_S_FLT,
         cc_2double_t),
    /* C++ types, used from C */
    SCALAR("MPI_CXX_BOOL", MPI_CXX_BOOL, CC_CAT_LOGICAL, CC_FAM_CXX, CC_S_BOOL, 1),
    COMPLEX("MPI_CXX_FLOAT_COMPLEX", MPI_CXX_FLOAT_COMPLEX, CC_FAM_CXX, sizeof(float)),
    COMPLEX("MPI_CXX_DOUBLE_COMPLEX", MPI_CXX_DOUBLE_COMPLEX, CC_FAM_CXX, sizeof(double)),
    COMPLEX("MPI_CXX_LONG_DOUBLE_COMPLEX", MPI_CXX_LONG_DOUBLE_COMPLEX, CC_FAM_CXX,
            sizeof(long double)),
    /* data movement only */
    SCALAR("MPI_CHAR", MPI_CHAR, CC_CAT_OTHER, CC_FAM_C, CC_S_SINT, 1),
    /* MPI_Type_contiguous(3, MPI_INT), created by cc_types_init() */
    {"contiguous(3,MPI_INT)", MPI_DATATYPE_NULL, CC_CAT_OTHER, CC_FAM_C, CC_S_SINT, sizeof(int), 3,
     0, CC_S_SINT, 0, 0, 3 * sizeof(int), 0},
};

#define NTYPES (sizeof types / sizeof types[0])
#define CONTIG_INDEX (NTYPES - 1)

static int std_mode;

void cc_types_init(int std)
{
    std_mode = std;
    MPI_Datatype dt;
    if (MPI_Type_contiguous(3, MPI_INT, &dt) != MPI_SUCCESS ||
        MPI_Type_commit(&dt) != MPI_SUCCESS) {
        fprintf(stderr, "coll_check: MPI_Type_contiguous failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    types[CONTIG_INDEX].dt = dt;
}

void cc_types_fini(void)
{
    if (types[CONTIG_INDEX].dt != MPI_DATATYPE_NULL)
        MPI_Type_free(&types[CONTIG_INDEX].dt);
}

const cc_type_t *cc_types(size_t *n)
{
    *n = NTYPES;
    return types;
}

const cc_type_t *cc_type(const char *name)
{
    for (size_t k = 0; k < NTYPES; k++)
        if (strcmp(types[k].name, name) == 0)
            return &types[k];
    return NULL;
}

/* ---------------------------------------------------------------------- */

static const struct {
    const char *name;
    MPI_Op op;
} ops[CC_OP_COUNT] = {
    [CC_OP_SUM] = {"MPI_SUM", MPI_SUM},          [CC_OP_PROD] = {"MPI_PROD", MPI_PROD},
    [CC_OP_MAX] = {"MPI_MAX", MPI_MAX},          [CC_OP_MIN] = {"MPI_MIN", MPI_MIN},
    [CC_OP_LAND] = {"MPI_LAND", MPI_LAND},       [CC_OP_LOR] = {"MPI_LOR", MPI_LOR},
    [CC_OP_LXOR] = {"MPI_LXOR", MPI_LXOR},       [CC_OP_BAND] = {"MPI_BAND", MPI_BAND},
    [CC_OP_BOR] = {"MPI_BOR", MPI_BOR},          [CC_OP_BXOR] = {"MPI_BXOR", MPI_BXOR},
    [CC_OP_MAXLOC] = {"MPI_MAXLOC", MPI_MAXLOC}, [CC_OP_MINLOC] = {"MPI_MINLOC", MPI_MINLOC},
};

MPI_Op cc_op_handle(cc_op_t op)
{
    return ops[op].op;
}
const char *cc_op_name(cc_op_t op)
{
    return ops[op].name;
}

int cc_op_valid(const cc_type_t *t, cc_op_t op)
{
    int arith = op == CC_OP_SUM || op == CC_OP_PROD;
    int order = op == CC_OP_MAX || op == CC_OP_MIN;
    int logic = op == CC_OP_LAND || op == CC_OP_LOR || op == CC_OP_LXOR;
    int bits = op == CC_OP_BAND || op == CC_OP_BOR || op == CC_OP_BXOR;
    int loc = op == CC_OP_MAXLOC || op == CC_OP_MINLOC;
    switch (t->cat) {
    case CC_CAT_CINT:
        return arith || order || logic || bits;
    case CC_CAT_FINT:
    case CC_CAT_MULTI:
        return arith || order || bits;
    case CC_CAT_FLOAT:
        return arith || order;
    case CC_CAT_COMPLEX:
        return arith;
    case CC_CAT_LOGICAL:
        return logic;
    case CC_CAT_BYTE:
        return bits;
    case CC_CAT_PAIR:
        return loc;
    case CC_CAT_OTHER:
        return 0;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Integer helpers. */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Truncates u to `size` bytes, then sign- or zero-extends it. */
static uint64_t norm(uint64_t u, cc_scalar_t kind, int size)
{
    if (size >= 8)
        return u;
    uint64_t mask = (1ull << (8 * size)) - 1;
    u &= mask;
    if (kind == CC_S_SINT && (u >> (8 * size - 1)) & 1)
        u |= ~mask;
    return u;
}

static uint64_t top_bit(int size)
{
    return 1ull << (8 * size - 1);
}

/* ---------------------------------------------------------------------- */
/* Inputs. */

/* Small signed value in [-4, 4] for sums. */
static long gsum(long r, size_t i)
{
    return (long)((r * 7 + (long)(i % 1000003) * 13 + 3) % 9) - 4;
}

/* Factor in {1, 2, -1} for products; 2 and -1 only on the first ranks so
   that products stay small for any size. */
static long gprod(long r, size_t i)
{
    if (r < 3 && (r + (long)(i % 3)) % 3 == 0)
        return 2;
    if (r < 4 && (2 * r + (long)(i % 5)) % 5 == 0)
        return -1;
    return 1;
}

/* Value in [-50, 50] for MAX/MIN. */
static long gorder(long r, size_t i)
{
    return (long)((r * 37 + (long)(i % 101) * 11) % 101) - 50;
}

/* Truth value of input (r, i) for a logical op. */
static int gtruth(cc_op_t op, long r, size_t i)
{
    long k = (long)(i % 997);
    switch (op) {
    case CC_OP_LAND:
        return (r + k) % 5 != 0;
    case CC_OP_LOR:
        return (r + 2 * k) % 7 == 0;
    default:
        return (r * 3 + k) % 4 < 2;
    }
}

static void gen_int(const cc_type_t *t, cc_op_t op, long r, size_t i, uint64_t *u)
{
    int sgn = t->vkind == CC_S_SINT;
    int64_t v;
    switch (op) {
    case CC_OP_SUM:
        v = sgn ? gsum(r, i) : gsum(r, i) + 4;
        break;
    case CC_OP_PROD:
        v = gprod(r, i);
        if (!sgn && v < 0)
            v = 1;
        break;
    case CC_OP_MAX:
    case CC_OP_MIN:
        if (sgn) {
            v = gorder(r, i);
            if ((r + (long)(i % 3)) % 3 == 0)
                v -= (int64_t)(top_bit(t->vsize) >> 1); /* large negative */
        } else {
            v = gorder(r, i) + 50;
            if (std_mode && (r + (long)(i % 2)) % 2 == 0)
                v += (int64_t)top_bit(t->vsize); /* top bit set */
        }
        break;
    case CC_OP_LAND:
    case CC_OP_LOR:
    case CC_OP_LXOR:
        if (!gtruth(op, r, i))
            v = 0;
        else if (t->vkind == CC_S_BOOL)
            v = 1;
        else if (t->vsize >= 2 && i % 7 == 3)
            v = 0x100; /* true, with a zero low byte */
        else if (sgn && i % 2)
            v = -(r + 1);
        else
            v = r + 2;
        break;
    default: /* bitwise */
        v = (int64_t)mix64((uint64_t)r * 1000003u + i * 7919u + (uint64_t)op * 31u);
        break;
    }
    *u = norm((uint64_t)v, t->vkind, t->vsize);
}

static long double gen_flt(cc_op_t op, long r, size_t i)
{
    switch (op) {
    case CC_OP_SUM:
        return (long double)gsum(r, i) + ((i & 1) ? 0.5L : 0.0L);
    case CC_OP_PROD:
        if (r < 2 && (r + (long)(i % 7)) % 7 == 3)
            return 0.5L;
        return (long double)gprod(r, i);
    default:
        return (long double)gorder(r, i) + 0.25L * (long double)(i % 4);
    }
}

/* Complex factors for products: all components are small integers. */
static const int cprod_re[5] = {1, 0, 1, -1, 1};
static const int cprod_im[5] = {0, 1, 1, 0, -1};

void cc_gen_reduce(const cc_type_t *t, cc_op_t op, int rank, size_t i, cc_val_t *v)
{
    long r = rank;
    memset(v, 0, sizeof *v);
    if (t->cat == CC_CAT_PAIR) {
        long val = (long)((r * 5 + (long)(i % 4) * 3) % 4); /* many ties */
        if (t->vkind == CC_S_FLT)
            v->f[0] = (long double)val + 0.5L;
        else
            v->u[0] = norm((uint64_t)(val - 1), t->vkind, t->vsize);
        /* Indices decrease with rank so that "lowest index" differs from
           "lowest rank" among ties. */
        v->idx = (long double)((1000 - r) * 3 + (long)(i % 3));
        return;
    }
    if (t->cat == CC_CAT_COMPLEX) {
        if (op == CC_OP_PROD) {
            int k = (int)((r * 2 + (long)(i % 5)) % 5);
            v->f[0] = cprod_re[k];
            v->f[1] = cprod_im[k];
        } else {
            v->f[0] = gen_flt(CC_OP_SUM, r, i);
            v->f[1] = gen_flt(CC_OP_SUM, r + 3, i + 1);
        }
        return;
    }
    if (t->vkind == CC_S_FLT)
        v->f[0] = gen_flt(op, r, i);
    else
        gen_int(t, op, r, i, &v->u[0]);
}

/* acc = acc (op) x, exactly. */
static void fold(const cc_type_t *t, cc_op_t op, cc_val_t *acc, const cc_val_t *x)
{
    if (t->cat == CC_CAT_PAIR) {
        int gt, lt;
        if (t->vkind == CC_S_FLT) {
            gt = x->f[0] > acc->f[0];
            lt = x->f[0] < acc->f[0];
        } else {
            gt = (int64_t)x->u[0] > (int64_t)acc->u[0];
            lt = (int64_t)x->u[0] < (int64_t)acc->u[0];
        }
        int better = op == CC_OP_MAXLOC ? gt : lt;
        int worse = op == CC_OP_MAXLOC ? lt : gt;
        if (better)
            *acc = *x;
        else if (!worse && x->idx < acc->idx)
            acc->idx = x->idx;
        return;
    }
    if (t->cat == CC_CAT_COMPLEX) {
        if (op == CC_OP_SUM) {
            acc->f[0] += x->f[0];
            acc->f[1] += x->f[1];
        } else {
            long double re = acc->f[0] * x->f[0] - acc->f[1] * x->f[1];
            long double im = acc->f[0] * x->f[1] + acc->f[1] * x->f[0];
            acc->f[0] = re;
            acc->f[1] = im;
        }
        return;
    }
    if (t->vkind == CC_S_FLT) {
        long double a = acc->f[0], b = x->f[0];
        switch (op) {
        case CC_OP_SUM:
            acc->f[0] = a + b;
            break;
        case CC_OP_PROD:
            acc->f[0] = a * b;
            break;
        case CC_OP_MAX:
            acc->f[0] = a > b ? a : b;
            break;
        default:
            acc->f[0] = a < b ? a : b;
            break;
        }
        return;
    }
    uint64_t a = acc->u[0], b = x->u[0], r;
    int sgn = t->vkind == CC_S_SINT;
    switch (op) {
    case CC_OP_SUM:
        r = a + b;
        break;
    case CC_OP_PROD:
        r = a * b;
        break;
    case CC_OP_MAX:
        r = sgn ? ((int64_t)a > (int64_t)b ? a : b) : (a > b ? a : b);
        break;
    case CC_OP_MIN:
        r = sgn ? ((int64_t)a < (int64_t)b ? a : b) : (a < b ? a : b);
        break;
    case CC_OP_LAND:
        r = (a != 0) && (b != 0);
        break;
    case CC_OP_LOR:
        r = (a != 0) || (b != 0);
        break;
    case CC_OP_LXOR:
        r = (a != 0) != (b != 0);
        break;
    case CC_OP_BAND:
        r = a & b;
        break;
    case CC_OP_BOR:
        r = a | b;
        break;
    default:
        r = a ^ b;
        break;
    }
    acc->u[0] = norm(r, t->vkind, t->vsize);
}

void cc_expect_reduce(const cc_type_t *t, cc_op_t op, int nranks, size_t i, cc_val_t *v)
{
    cc_val_t x;
    /* Over one rank the result is the input itself: no op is applied, so
       a logical "true" keeps its value. */
    cc_gen_reduce(t, op, 0, i, v);
    for (int r = 1; r < nranks; r++) {
        cc_gen_reduce(t, op, r, i, &x);
        fold(t, op, v, &x);
    }
}

void cc_gen_move(const cc_type_t *t, long who, size_t i, cc_val_t *v)
{
    memset(v, 0, sizeof *v);
    for (int k = 0; k < t->ncomp; k++) {
        long base = (who * 131 + (long)(i % 100003) * 7 + k * 3) % 251;
        if (t->vkind == CC_S_FLT)
            v->f[k] = (long double)(base - 125) + 0.5L;
        else if (t->vkind == CC_S_BOOL)
            v->u[k] = (uint64_t)(base & 1);
        else if (t->cat == CC_CAT_OTHER && t->vsize == 1)
            v->u[k] = (uint64_t)(base % 127); /* plain char: stay in 0..126 */
        else
            v->u[k] = norm(mix64((uint64_t)who * 7777u + i * 3u + (uint64_t)k), t->vkind, t->vsize);
    }
    if (t->has_index)
        v->idx = (long double)((who * 17 + (long)(i % 1009)) % 1009);
}

/* ---------------------------------------------------------------------- */
/* Storage. */

static void put_flt(unsigned char *p, int size, long double f)
{
    switch (size) {
#if defined(__FLT16_MAX__)
    case 2: {
        _Float16 x = (_Float16)f;
        memcpy(p, &x, 2);
        break;
    }
#endif
    case 4: {
        float x = (float)f;
        memcpy(p, &x, 4);
        break;
    }
    case 8: {
        double x = (double)f;
        memcpy(p, &x, 8);
        break;
    }
    default: {
        long double x = f;
        memcpy(p, &x, 10);
        break;
    } /* 80-bit value bytes */
    }
}

static long double get_flt(const unsigned char *p, int size)
{
    switch (size) {
#if defined(__FLT16_MAX__)
    case 2: {
        _Float16 x;
        memcpy(&x, p, 2);
        return x;
    }
#endif
    case 4: {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    case 8: {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    default: {
        long double x = 0;
        memcpy(&x, p, 10);
        return x;
    }
    }
}

static void put_int(unsigned char *p, int size, uint64_t u)
{
    memcpy(p, &u, (size_t)size);
}

static uint64_t get_int(const unsigned char *p, cc_scalar_t kind, int size)
{
    uint64_t u = 0;
    memcpy(&u, p, (size_t)size);
    return norm(u, kind, size);
}

void cc_store(const cc_type_t *t, void *buf, size_t i, const cc_val_t *v)
{
    unsigned char *p = (unsigned char *)buf + i * t->extent;
    for (int k = 0; k < t->ncomp; k++) {
        if (t->vkind == CC_S_FLT)
            put_flt(p + k * t->vsize, t->vsize, v->f[k]);
        else
            put_int(p + k * t->vsize, t->vsize, v->u[k]);
    }
    if (t->has_index) {
        if (t->ikind == CC_S_FLT)
            put_flt(p + t->ioff, t->isize, v->idx);
        else
            put_int(p + t->ioff, t->isize, (uint64_t)(int64_t)v->idx);
    }
}

void cc_load(const cc_type_t *t, const void *buf, size_t i, cc_val_t *v)
{
    const unsigned char *p = (const unsigned char *)buf + i * t->extent;
    memset(v, 0, sizeof *v);
    for (int k = 0; k < t->ncomp; k++) {
        if (t->vkind == CC_S_FLT)
            v->f[k] = get_flt(p + k * t->vsize, t->vsize);
        else
            v->u[k] = get_int(p + k * t->vsize, t->vkind, t->vsize);
    }
    if (t->has_index) {
        if (t->ikind == CC_S_FLT)
            v->idx = get_flt(p + t->ioff, t->isize);
        else
            v->idx = (long double)(int64_t)get_int(p + t->ioff, CC_S_SINT, t->isize);
    }
}

int cc_equal(const cc_type_t *t, const cc_val_t *a, const cc_val_t *b)
{
    for (int k = 0; k < t->ncomp; k++) {
        if (t->vkind == CC_S_FLT) {
            if (!(a->f[k] == b->f[k]))
                return 0;
        } else if (norm(a->u[k], t->vkind, t->vsize) != norm(b->u[k], t->vkind, t->vsize)) {
            return 0;
        }
    }
    return !t->has_index || a->idx == b->idx;
}

void cc_format(const cc_type_t *t, const cc_val_t *v, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < t->ncomp && used < len; k++) {
        int n;
        if (t->vkind == CC_S_FLT)
            n = snprintf(out + used, len - used, "%s%Lg", k ? "," : "", v->f[k]);
        else if (t->vkind == CC_S_SINT)
            n = snprintf(out + used, len - used, "%s%lld", k ? "," : "",
                         (long long)(int64_t)v->u[k]);
        else
            n = snprintf(out + used, len - used, "%s%llu", k ? "," : "",
                         (unsigned long long)v->u[k]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
    if (t->has_index && used < len)
        snprintf(out + used, len - used, " idx %Lg", v->idx);
}

/* ---------------------------------------------------------------------- */

void cc_fill_reduce(const cc_type_t *t, cc_op_t op, int rank, void *buf, size_t n)
{
    cc_val_t v;
    for (size_t i = 0; i < n; i++) {
        cc_gen_reduce(t, op, rank, i, &v);
        cc_store(t, buf, i, &v);
    }
}

void cc_fill_move(const cc_type_t *t, long who, void *buf, size_t first, size_t n)
{
    cc_val_t v;
    for (size_t i = 0; i < n; i++) {
        cc_gen_move(t, who, first + i, &v);
        cc_store(t, buf, i, &v);
    }
}

static size_t report(const cc_type_t *t, size_t bad, size_t at, const cc_val_t *got,
                     const cc_val_t *want, char *msg, size_t len)
{
    char g[96], w[96];
    if (bad == 0)
        return 0;
    cc_format(t, got, g, sizeof g);
    cc_format(t, want, w, sizeof w);
    snprintf(msg, len, "element %zu: got %s, expected %s (%zu mismatching)", at, g, w, bad);
    return bad;
}

size_t cc_verify_reduce(const cc_type_t *t, cc_op_t op, int nranks, const void *buf, size_t first,
                        size_t n, char *msg, size_t len)
{
    size_t bad = 0, at = 0;
    cc_val_t got, want, g0 = {0}, w0 = {0};
    for (size_t i = 0; i < n; i++) {
        cc_load(t, buf, i, &got);
        cc_expect_reduce(t, op, nranks, first + i, &want);
        if (!cc_equal(t, &got, &want)) {
            if (bad++ == 0) {
                at = first + i;
                g0 = got;
                w0 = want;
            }
        }
    }
    return report(t, bad, at, &g0, &w0, msg, len);
}

size_t cc_verify_move(const cc_type_t *t, long who, const void *buf, size_t first, size_t n,
                      char *msg, size_t len)
{
    size_t bad = 0, at = 0;
    cc_val_t got, want, g0 = {0}, w0 = {0};
    for (size_t i = 0; i < n; i++) {
        cc_load(t, buf, i, &got);
        cc_gen_move(t, who, first + i, &want);
        if (!cc_equal(t, &got, &want)) {
            if (bad++ == 0) {
                at = first + i;
                g0 = got;
                w0 = want;
            }
        }
    }
    return report(t, bad, at, &g0, &w0, msg, len);
}

void cc_poison(void *buf, size_t bytes)
{
    memset(buf, CC_POISON, bytes);
}

int cc_poison_intact(const void *buf, size_t bytes)
{
    const unsigned char *p = buf;
    for (size_t k = 0; k < bytes; k++)
        if (p[k] != CC_POISON)
            return 0;
    return 1;
}

void *cc_alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "coll_check: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}
