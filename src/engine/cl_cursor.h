/*  cl_cursor.h - the little-endian reading cursor and write buffer of the
    project's codecs (cl_wire.c, cl_elmsg.c; docs/wire.md).

    Reading: a cl_rd_t knows how many bytes are left; every read checks
    first, and a read past the end poisons the cursor (bad) and returns
    zeros from then on, so a decoder reads all fields unconditionally and
    looks once, at the end, whether the cursor is still good and has
    nothing left.  cl_rd_check poisons it when a field's value is out of
    range.
    Writing: a cl_wr_t grows one malloc'd buffer (data, owned by the caller
    once encoding succeeded); an allocation failure sets oom, a value the
    reader would reject sets bad (cl_wr_check), and either makes every
    later write a no-op.
    Header-only and inline: both codecs sit on the receive path.
*/
#ifndef CL_CURSOR_H_INCLUDED
#define CL_CURSOR_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Little-endian helpers. */

/* Stores v at p, little-endian (2, 4 or 8 bytes; p must have room). */
static inline void cl_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void cl_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void cl_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Loads a little-endian value of 2, 4 or 8 bytes from p. */
static inline uint16_t cl_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t cl_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline uint64_t cl_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---------------------------------------------------------------------- */
/* Reading cursor. */

typedef struct {
    const uint8_t *p; /* next byte */
    size_t left;      /* bytes left */
    bool bad;         /* a read failed or a value was out of range */
} cl_rd_t;

/* Consumes n bytes and returns where they start, or NULL (and poisons the
   cursor) when it is already bad or fewer than n bytes are left.  The
   pointer points into the caller's buffer. */
static inline const uint8_t *cl_rd_take(cl_rd_t *r, size_t n)
{
    if (r->bad || r->left < n) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

/* Read one little-endian integer; 0 when the cursor is or becomes bad. */
static inline uint8_t cl_rd_u8(cl_rd_t *r)
{
    const uint8_t *p = cl_rd_take(r, 1);
    return p != NULL ? p[0] : 0;
}

static inline uint16_t cl_rd_u16(cl_rd_t *r)
{
    const uint8_t *p = cl_rd_take(r, 2);
    return p != NULL ? cl_get_u16(p) : 0;
}

static inline uint32_t cl_rd_u32(cl_rd_t *r)
{
    const uint8_t *p = cl_rd_take(r, 4);
    return p != NULL ? cl_get_u32(p) : 0;
}

static inline uint64_t cl_rd_u64(cl_rd_t *r)
{
    const uint8_t *p = cl_rd_take(r, 8);
    return p != NULL ? cl_get_u64(p) : 0;
}

/* A u32 read as two's complement. */
static inline int32_t cl_rd_i32(cl_rd_t *r)
{
    return (int32_t)cl_rd_u32(r);
}

/* An IEEE-754 double stored as its u64 bit pattern. */
static inline double cl_rd_f64(cl_rd_t *r)
{
    uint64_t bits = cl_rd_u64(r);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Copies n bytes into out, or zeros it when they are not there. */
static inline void cl_rd_bytes(cl_rd_t *r, uint8_t *out, size_t n)
{
    const uint8_t *p = cl_rd_take(r, n);
    if (p != NULL)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

/* Poisons the cursor when ok is false (a field out of its range). */
static inline void cl_rd_check(cl_rd_t *r, bool ok)
{
    if (!ok)
        r->bad = true;
}

/* ---------------------------------------------------------------------- */
/* Growable write buffer. */

typedef struct {
    uint8_t *data; /* malloc'd; the caller frees it */
    size_t len;    /* bytes written */
    size_t cap;    /* bytes allocated */
    bool oom;      /* an allocation failed */
    bool bad;      /* a field was out of range */
} cl_wr_t;

/* Appends n bytes and returns where the caller writes them, or NULL when
   the buffer is already oom or bad or cannot grow (then oom is set). */
static inline uint8_t *cl_wr_room(cl_wr_t *w, size_t n)
{
    if (w->oom || w->bad)
        return NULL;
    if (w->len + n > w->cap) {
        size_t cap = w->cap > 0 ? w->cap : 64;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *d = realloc(w->data, cap);
        if (d == NULL) {
            w->oom = true;
            return NULL;
        }
        w->data = d;
        w->cap = cap;
    }
    uint8_t *p = w->data + w->len;
    w->len += n;
    return p;
}

/* Append one little-endian integer (no-op once oom or bad). */
static inline void cl_wr_u8(cl_wr_t *w, uint8_t v)
{
    uint8_t *p = cl_wr_room(w, 1);
    if (p != NULL)
        p[0] = v;
}

static inline void cl_wr_u16(cl_wr_t *w, uint16_t v)
{
    uint8_t *p = cl_wr_room(w, 2);
    if (p != NULL)
        cl_put_u16(p, v);
}

static inline void cl_wr_u32(cl_wr_t *w, uint32_t v)
{
    uint8_t *p = cl_wr_room(w, 4);
    if (p != NULL)
        cl_put_u32(p, v);
}

static inline void cl_wr_u64(cl_wr_t *w, uint64_t v)
{
    uint8_t *p = cl_wr_room(w, 8);
    if (p != NULL)
        cl_put_u64(p, v);
}

/* Appends the u64 bit pattern of d. */
static inline void cl_wr_f64(cl_wr_t *w, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    cl_wr_u64(w, bits);
}

/* Appends n bytes copied from src. */
static inline void cl_wr_bytes(cl_wr_t *w, const void *src, size_t n)
{
    uint8_t *p = cl_wr_room(w, n);
    if (p != NULL && n > 0)
        memcpy(p, src, n);
}

/* Marks the buffer bad when ok is false: the encoder refuses to write a
   value the decoder would reject. */
static inline void cl_wr_check(cl_wr_t *w, bool ok)
{
    if (!ok)
        w->bad = true;
}

#endif
