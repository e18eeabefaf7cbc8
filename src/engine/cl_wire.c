/*  cl_wire.c - encoder and decoder of docs/wire.md.

    The decoder walks the body with a cursor (cl_cursor.h) that knows how many bytes are
    left; every read checks first, a failed read poisons the cursor, and a
    body is accepted only when the cursor ends exactly at the end with no
    failure.  Field values are range-checked here, so code that receives a
    decoded message can trust its fields' ranges (not their meaning: a rank
    may still be unknown, a key still a stranger's).
*/
#include "engine/cl_wire.h"

#include "engine/cl_cursor.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t s_magic[4] = {0x43, 0x4C, 0x41, 0x42}; /* "CLAB" */

/* ---------------------------------------------------------------------- */
/* String fields (the cursor itself is in cl_cursor.h). */

/* Reads a str field; points *s at it (not NUL-terminated) and *n at its
   length.  Rejects lengths over CL_WIRE_STR_MAX and NUL bytes inside. */
static void rd_str_ref(cl_rd_t *r, const uint8_t **s, size_t *n)
{
    uint16_t len = cl_rd_u16(r);
    *s = NULL;
    *n = 0;
    if (len > CL_WIRE_STR_MAX) {
        r->bad = true;
        return;
    }
    const uint8_t *p = cl_rd_take(r, len);
    if (p == NULL)
        return;
    if (memchr(p, 0, len) != NULL) {
        r->bad = true;
        return;
    }
    *s = p;
    *n = len;
}

static void rd_str(cl_rd_t *r, char out[CL_WIRE_STR_MAX + 1])
{
    const uint8_t *s;
    size_t n;
    rd_str_ref(r, &s, &n);
    if (s != NULL)
        memcpy(out, s, n);
    out[s != NULL ? n : 0] = '\0';
}

static void wr_str(cl_wr_t *w, const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n > CL_WIRE_STR_MAX) {
        w->bad = true;
        return;
    }
    cl_wr_u16(w, (uint16_t)n);
    cl_wr_bytes(w, s, n);
}

static bool weight_ok(double w)
{
    return isfinite(w) && w > 0.0;
}

/* ---------------------------------------------------------------------- */
/* Header. */

void cl_wire_hdr_encode(const cl_wire_hdr_t *h, uint8_t out[CL_WIRE_HDR_SIZE])
{
    memcpy(out, s_magic, 4);
    out[4] = h->version;
    out[5] = h->type;
    out[6] = h->sub;
    out[7] = h->flags;
    cl_put_u64(out + 8, h->run);
    cl_put_u64(out + 16, h->comm);
    cl_put_u64(out + 24, h->epoch);
    cl_put_u64(out + 32, h->seq);
    cl_put_u32(out + 40, h->signature);
    cl_put_u32(out + 44, h->part);
    cl_put_u32(out + 48, h->chunk);
    cl_put_u32(out + 52, h->aux);
    cl_put_u64(out + 56, h->length);
}

static bool type_known(int t)
{
    switch (t) {
    case CL_MSG_HELLO:
    case CL_MSG_WELCOME:
    case CL_MSG_REFUSE:
    case CL_MSG_AUTH:
    case CL_MSG_JOIN:
    case CL_MSG_JOIN_REPLY:
    case CL_MSG_VIEW:
    case CL_MSG_HEARTBEAT:
    case CL_MSG_SUSPECT:
    case CL_MSG_GOODBYE:
    case CL_MSG_MATCH:
    case CL_MSG_UPDATE:
    case CL_MSG_BYE_ACK:
    case CL_MSG_REPORT:
    case CL_MSG_COLL:
    case CL_MSG_P2P:
    case CL_MSG_ELASTIC:
    case CL_MSG_P2P_CTL:
    case CL_MSG_RELAYED:
    case CL_MSG_FENCE:
        return true;
    default:
        return false;
    }
}

int cl_wire_msg_version(const cl_wire_hdr_t *h, int link)
{
    if (h->type == CL_MSG_JOIN || h->type == CL_MSG_VIEW)
        return link >= 7 ? 7 : 5;
    if (h->type == CL_MSG_UPDATE)
        return link >= CL_WIRE_FIGURE_VERSION ? CL_WIRE_FIGURE_VERSION : 5;
    if (h->type == CL_MSG_FENCE)
        return CL_WIRE_STRIPE_VERSION;
    return h->type == CL_MSG_P2P_CTL && h->sub == CL_P2P_CREDIT ? 6 : 5;
}

int cl_wire_hdr_decode(const uint8_t *buf, size_t len, cl_wire_hdr_t *h)
{
    memset(h, 0, sizeof *h);
    if (buf == NULL || len != CL_WIRE_HDR_SIZE)
        return CL_WIRE_ESIZE;
    if (memcmp(buf, s_magic, 4) != 0)
        return CL_WIRE_EMAGIC;
    h->version = buf[4];
    h->type = buf[5];
    h->sub = buf[6];
    h->flags = buf[7];
    h->run = cl_get_u64(buf + 8);
    h->comm = cl_get_u64(buf + 16);
    h->epoch = cl_get_u64(buf + 24);
    h->seq = cl_get_u64(buf + 32);
    h->signature = cl_get_u32(buf + 40);
    h->part = cl_get_u32(buf + 44);
    h->chunk = cl_get_u32(buf + 48);
    h->aux = cl_get_u32(buf + 52);
    h->length = cl_get_u64(buf + 56);
    if (!type_known(h->type))
        return CL_WIRE_ETYPE;
    /* HELLO and REFUSE have a frozen layout: any version may send them. */
    bool frozen = h->type == CL_MSG_HELLO || h->type == CL_MSG_REFUSE;
    if (h->version < 1 ||
        (!frozen && (h->version < CL_WIRE_MIN_VERSION || h->version > CL_WIRE_VERSION)))
        return CL_WIRE_EVERSION;
    if (h->flags != 0)
        return CL_WIRE_EFLAGS;
    if (h->type == CL_MSG_P2P && h->aux > CL_WIRE_TAG_MAX)
        return CL_WIRE_EBODY;
    if (h->type == CL_MSG_P2P && h->part > (uint32_t)INT32_MAX)
        return CL_WIRE_EBODY;
    if (h->type == CL_MSG_P2P && !(h->sub == CL_P2P_STANDARD && h->seq == 0) &&
        !(h->sub == CL_P2P_SYNC && h->seq >= 1))
        return CL_WIRE_EBODY;
    if (h->type == CL_MSG_P2P_CTL && h->sub != CL_P2P_CREDIT &&
        (h->sub < CL_P2P_MATCHED || h->sub > CL_P2P_CANCELLED || h->seq == 0))
        return CL_WIRE_EBODY;
    /* FENCE exists from version 12 on: a count in seq, nothing else. */
    if (h->type == CL_MSG_FENCE &&
        (h->version < CL_WIRE_STRIPE_VERSION || h->sub != 0 || h->comm != 0 || h->epoch != 0 ||
         h->seq == 0 || h->signature != 0 || h->part != 0 || h->chunk != 0 || h->aux != 0 ||
         h->length != 0))
        return CL_WIRE_EBODY;
    /* CREDIT exists from version 6 on, and names no send. */
    if (h->type == CL_MSG_P2P_CTL && h->sub == CL_P2P_CREDIT &&
        (h->version < 6 || h->comm != 0 || h->seq != 0))
        return CL_WIRE_EBODY;
    return CL_WIRE_OK;
}

/* ---------------------------------------------------------------------- */
/* Bodies. */

/* The settings block of JOIN, JOIN_REPLY and VIEW (cl_wire_settings_t):
   the same bytes in all three, read and written here only. */
enum settings_form {
    SETTINGS_FIXED,    /* VIEW: the values themselves */
    SETTINGS_OPTIONAL, /* JOIN: 0 not given; aggregation and verify 1 + the value */
    SETTINGS_OR_NONE,  /* JOIN_REPLY: as JOIN, or world size and target group 0 (none) */
};

static bool settings_ok(const cl_wire_settings_t *s, enum settings_form form)
{
    int32_t least = form == SETTINGS_OR_NONE ? 0 : 1;
    unsigned given = form == SETTINGS_FIXED ? 0 : 1; /* the optional form's offset */
    return s->world_size >= least && s->world_size <= CL_WIRE_WORLD_MAX && s->strict <= 1 &&
           s->compression <= CL_WIRE_COMPRESSION_MAX && s->target_group >= least &&
           s->target_group <= CL_WIRE_WORLD_MAX && s->aggregation <= 2 + given &&
           s->robust_min <= CL_WIRE_ROBUST_MIN_MAX &&
           s->max_weight_ratio <= CL_WIRE_WEIGHT_RATIO_MAX && s->verify <= 1 + given;
}

static void rd_settings(cl_rd_t *r, cl_wire_settings_t *s, enum settings_form form)
{
    s->world_size = cl_rd_i32(r);
    s->strict = cl_rd_u8(r);
    s->compression = cl_rd_u8(r);
    s->target_group = cl_rd_i32(r);
    s->aggregation = cl_rd_u8(r);
    s->robust_min = cl_rd_u32(r);
    s->max_weight_ratio = cl_rd_u32(r);
    s->verify = cl_rd_u8(r);
    cl_rd_check(r, settings_ok(s, form));
}

static void wr_settings(cl_wr_t *w, const cl_wire_settings_t *s, enum settings_form form)
{
    cl_wr_check(w, settings_ok(s, form));
    cl_wr_u32(w, (uint32_t)s->world_size);
    cl_wr_u8(w, s->strict);
    cl_wr_u8(w, s->compression);
    cl_wr_u32(w, (uint32_t)s->target_group);
    cl_wr_u8(w, s->aggregation);
    cl_wr_u32(w, s->robust_min);
    cl_wr_u32(w, s->max_weight_ratio);
    cl_wr_u8(w, s->verify);
}

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, 32);
}

/* Entry i of a view (members[0 .. i-1] already read): a monitor entry
   (rank -1, no other flag, an address) before every ranked entry and
   after monitors of lower keys; a ranked entry after lower ranks. */
static bool member_entry_ok(const cl_wire_view_t *v, uint32_t i, int32_t rank, uint8_t flags,
                            size_t addrlen)
{
    const cl_wire_member_t *prev = i > 0 ? &v->members[i - 1] : NULL;
    if (flags & CL_MEMBER_MONITOR) {
        if ((flags & ~CL_MEMBER_RELAY) != CL_MEMBER_MONITOR || rank != -1 || addrlen == 0)
            return false;
        return prev == NULL || ((prev->flags & CL_MEMBER_MONITOR) != 0 &&
                                memcmp(prev->key, v->members[i].key, 32) < 0);
    }
    if ((flags & ~(CL_MEMBER_CLIENT | CL_MEMBER_IN_GROUP)) != 0)
        return false;
    if (rank < 0 || rank >= v->settings.world_size)
        return false;
    return prev == NULL || (prev->flags & CL_MEMBER_MONITOR) != 0 || prev->rank < rank;
}

static int decode_view(cl_rd_t *r, cl_wire_view_t *v, int version)
{
    v->epoch = cl_rd_u64(r);
    v->group_epoch = cl_rd_u64(r);
    rd_settings(r, &v->settings, SETTINGS_FIXED);
    v->flags = cl_rd_u8(r);
    v->count = cl_rd_u32(r);
    cl_rd_check(r, v->epoch >= 1);
    cl_rd_check(r, v->group_epoch >= 1 && v->group_epoch <= v->epoch);
    cl_rd_check(r, (v->flags & ~CL_VIEW_GROUP_CLOSED) == 0);
    cl_rd_check(r, v->count >= 1 && v->count <= CL_WIRE_VIEW_MAX);
    /* Each entry is at least 32+4+1+8+2 = 47 bytes: refuse counts the body
       cannot hold before allocating anything. */
    cl_rd_check(r, (uint64_t)v->count * 47u <= r->left);
    if (r->bad) {
        v->count = 0;
        return CL_WIRE_EBODY;
    }
    /* One block: entries, then their NUL-terminated addresses. */
    size_t strbytes = r->left + v->count; /* upper bound: every byte left, plus NULs */
    size_t total = (size_t)v->count * sizeof(cl_wire_member_t) + strbytes;
    uint8_t *block = malloc(total);
    if (block == NULL) {
        v->count = 0;
        return CL_WIRE_ENOMEM;
    }
    v->members = (cl_wire_member_t *)block;
    char *strs = (char *)(block + (size_t)v->count * sizeof(cl_wire_member_t));
    size_t used = 0;
    uint32_t nmon = 0;
    for (uint32_t i = 0; i < v->count && !r->bad; i++) {
        cl_wire_member_t *m = &v->members[i];
        cl_rd_bytes(r, m->key, 32);
        m->rank = cl_rd_i32(r);
        m->flags = cl_rd_u8(r);
        m->weight = cl_rd_f64(r);
        const uint8_t *s;
        size_t n;
        rd_str_ref(r, &s, &n);
        m->bandwidth = version >= 7 ? cl_rd_u32(r) : 0;
        if (r->bad)
            break;
        cl_rd_check(r, (m->flags & CL_MEMBER_MONITOR) == 0 || m->bandwidth == 0);
        cl_rd_check(r, member_entry_ok(v, i, m->rank, m->flags, n));
        cl_rd_check(r, weight_ok(m->weight));
        nmon += (m->flags & CL_MEMBER_MONITOR) != 0;
        if (used + n + 1 > strbytes) { /* cannot happen given the bound */
            r->bad = true;
            break;
        }
        memcpy(strs + used, s, n);
        strs[used + n] = '\0';
        m->address = strs + used;
        used += n + 1;
    }
    cl_rd_check(r, nmon <= CL_WIRE_MONITORS_MAX);
    /* Keys unique: sort-free check is quadratic, so compare over a copy
       sorted by key only when the count is large. */
    if (!r->bad && v->count > 1) {
        if (v->count <= 64) {
            for (uint32_t i = 0; i < v->count && !r->bad; i++)
                for (uint32_t j = i + 1; j < v->count; j++)
                    if (memcmp(v->members[i].key, v->members[j].key, 32) == 0) {
                        r->bad = true;
                        break;
                    }
        } else {
            uint8_t *keys = malloc((size_t)v->count * 32);
            if (keys == NULL) {
                free(v->members);
                v->members = NULL;
                v->count = 0;
                return CL_WIRE_ENOMEM;
            }
            for (uint32_t i = 0; i < v->count; i++)
                memcpy(keys + (size_t)i * 32, v->members[i].key, 32);
            qsort(keys, v->count, 32, cmp_key);
            for (uint32_t i = 1; i < v->count; i++)
                if (memcmp(keys + (size_t)(i - 1) * 32, keys + (size_t)i * 32, 32) == 0) {
                    r->bad = true;
                    break;
                }
            free(keys);
        }
    }
    if (r->bad) {
        free(v->members);
        v->members = NULL;
        v->count = 0;
        return CL_WIRE_EBODY;
    }
    return CL_WIRE_OK;
}

bool cl_wire_report_name_ok(const char *name)
{
    size_t n = 0;
    for (; name[n] != '\0'; n++) {
        char c = name[n];
        if (n >= CL_WIRE_REPORT_NAME_MAX || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                              (c >= '0' && c <= '9') || c == '_' || c == '.'))
            return false;
    }
    return n > 0;
}

static bool seconds_ok(double s)
{
    return isfinite(s) && s >= 0;
}

static void decode_report(cl_rd_t *r, cl_wire_report_t *p)
{
    p->rank = cl_rd_i32(r);
    p->flags = cl_rd_u8(r);
    p->compression = cl_rd_u8(r);
    p->steps = cl_rd_u64(r);
    p->collectives = cl_rd_u64(r);
    p->weight = cl_rd_f64(r);
    p->bytes_sent = cl_rd_u64(r);
    p->bytes_recv = cl_rd_u64(r);
    p->group_size = cl_rd_u32(r);
    p->coll_seconds = cl_rd_f64(r);
    p->wait_seconds = cl_rd_f64(r);
    p->failures = cl_rd_u32(r);
    p->joins = cl_rd_u32(r);
    p->nlinks = cl_rd_u16(r);
    cl_rd_check(r, p->rank >= 0 && p->rank < CL_WIRE_WORLD_MAX);
    cl_rd_check(r, (p->flags & ~(CL_REPORT_CLIENT | CL_REPORT_IN_GROUP)) == 0);
    cl_rd_check(r, p->compression <= CL_WIRE_COMPRESSION_MAX && weight_ok(p->weight));
    cl_rd_check(r, p->group_size <= CL_WIRE_WORLD_MAX);
    cl_rd_check(r, seconds_ok(p->coll_seconds) && seconds_ok(p->wait_seconds));
    cl_rd_check(r, p->nlinks <= CL_WIRE_REPORT_LINKS);
    for (uint16_t i = 0; i < p->nlinks && !r->bad; i++) {
        p->links[i].rank = cl_rd_i32(r);
        p->links[i].bandwidth = cl_rd_f64(r);
        cl_rd_check(r, p->links[i].rank >= 0 && p->links[i].rank < CL_WIRE_WORLD_MAX);
        cl_rd_check(r, seconds_ok(p->links[i].bandwidth));
    }
    p->nvalues = cl_rd_u8(r);
    cl_rd_check(r, p->nvalues <= CL_WIRE_REPORT_VALUES);
    for (uint8_t i = 0; i < p->nvalues && !r->bad; i++) {
        const uint8_t *s;
        size_t n;
        rd_str_ref(r, &s, &n);
        cl_rd_check(r, n >= 1 && n <= CL_WIRE_REPORT_NAME_MAX);
        if (r->bad)
            break;
        memcpy(p->values[i].name, s, n);
        p->values[i].name[n] = '\0';
        p->values[i].value = cl_rd_f64(r);
        cl_rd_check(r, cl_wire_report_name_ok(p->values[i].name));
        cl_rd_check(r, isfinite(p->values[i].value));
    }
}

static void encode_report(cl_wr_t *w, const cl_wire_report_t *p)
{
    cl_wr_check(w, p->rank >= 0 && p->rank < CL_WIRE_WORLD_MAX);
    cl_wr_check(w, (p->flags & ~(CL_REPORT_CLIENT | CL_REPORT_IN_GROUP)) == 0);
    cl_wr_check(w, p->compression <= CL_WIRE_COMPRESSION_MAX && weight_ok(p->weight));
    cl_wr_check(w, p->group_size <= CL_WIRE_WORLD_MAX);
    cl_wr_check(w, seconds_ok(p->coll_seconds) && seconds_ok(p->wait_seconds));
    cl_wr_check(w, p->nlinks <= CL_WIRE_REPORT_LINKS && p->nvalues <= CL_WIRE_REPORT_VALUES);
    cl_wr_u32(w, (uint32_t)p->rank);
    cl_wr_u8(w, p->flags);
    cl_wr_u8(w, p->compression);
    cl_wr_u64(w, p->steps);
    cl_wr_u64(w, p->collectives);
    cl_wr_f64(w, p->weight);
    cl_wr_u64(w, p->bytes_sent);
    cl_wr_u64(w, p->bytes_recv);
    cl_wr_u32(w, p->group_size);
    cl_wr_f64(w, p->coll_seconds);
    cl_wr_f64(w, p->wait_seconds);
    cl_wr_u32(w, p->failures);
    cl_wr_u32(w, p->joins);
    cl_wr_u16(w, p->nlinks);
    for (uint16_t i = 0; i < p->nlinks && i < CL_WIRE_REPORT_LINKS; i++) {
        cl_wr_check(w, p->links[i].rank >= 0 && p->links[i].rank < CL_WIRE_WORLD_MAX);
        cl_wr_check(w, seconds_ok(p->links[i].bandwidth));
        cl_wr_u32(w, (uint32_t)p->links[i].rank);
        cl_wr_f64(w, p->links[i].bandwidth);
    }
    cl_wr_u8(w, p->nvalues);
    for (uint8_t i = 0; i < p->nvalues && i < CL_WIRE_REPORT_VALUES; i++) {
        cl_wr_check(w, cl_wire_report_name_ok(p->values[i].name));
        cl_wr_check(w, isfinite(p->values[i].value));
        wr_str(w, p->values[i].name);
        cl_wr_f64(w, p->values[i].value);
    }
}

int cl_wire_decode(const uint8_t *hdr, size_t hlen, const uint8_t *body, size_t blen,
                   cl_wire_msg_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = cl_wire_hdr_decode(hdr, hlen, &out->hdr);
    if (rc != CL_WIRE_OK)
        return rc;
    if (out->hdr.length != (uint64_t)blen)
        return CL_WIRE_ELENGTH;
    if (blen > 0 && body == NULL)
        return CL_WIRE_ELENGTH;
    cl_rd_t r = {body, blen, false};
    cl_rd_t *rp = &r;
    switch (out->hdr.type) {
    case CL_MSG_HELLO: {
        cl_wire_hello_t *h = &out->u.hello;
        h->max_version = cl_rd_u16(rp);
        h->min_version = cl_rd_u16(rp);
        cl_rd_bytes(rp, h->key, 32);
        cl_rd_bytes(rp, h->nonce, 32);
        h->flags = cl_rd_u8(rp);
        rd_str(rp, h->address);
        cl_rd_check(rp, h->min_version >= 1 && h->min_version <= h->max_version);
        cl_rd_check(rp, (h->flags & ~(CL_HELLO_CLIENT | CL_HELLO_STRIPE)) == 0);
        break;
    }
    case CL_MSG_WELCOME:
        out->u.welcome.version = cl_rd_u16(rp);
        cl_rd_bytes(rp, out->u.welcome.nonce, 32);
        cl_rd_bytes(rp, out->u.welcome.mac, 32);
        cl_rd_check(rp, out->u.welcome.version >= 1);
        break;
    case CL_MSG_REFUSE: {
        cl_wire_refuse_t *f = &out->u.refuse;
        f->reason = cl_rd_u16(rp);
        f->max_version = cl_rd_u16(rp);
        f->min_version = cl_rd_u16(rp);
        rd_str(rp, f->text);
        cl_rd_check(rp, f->reason >= CL_REFUSE_VERSION && f->reason <= CL_REFUSE_BUSY);
        cl_rd_check(rp, f->min_version >= 1 && f->min_version <= f->max_version);
        break;
    }
    case CL_MSG_AUTH:
        cl_rd_bytes(rp, out->u.auth.mac, 32);
        break;
    case CL_MSG_JOIN: {
        cl_wire_join_t *j = &out->u.join;
        j->rank = cl_rd_i32(rp);
        j->weight = cl_rd_f64(rp);
        j->flags = cl_rd_u8(rp);
        rd_settings(rp, &j->settings, SETTINGS_OPTIONAL);
        j->incarnation = cl_rd_u64(rp);
        rd_str(rp, j->address);
        j->bandwidth = out->hdr.version >= 7 ? cl_rd_u32(rp) : 0;
        cl_rd_check(rp, j->rank >= -1 && j->rank < CL_WIRE_WORLD_MAX);
        cl_rd_check(rp, weight_ok(j->weight));
        cl_rd_check(rp, ((j->flags & CL_JOIN_RELAY) == 0 || (j->flags & CL_JOIN_MONITOR) != 0) &&
                            ((j->flags & CL_JOIN_RANK_REQUIRED) == 0 || j->rank >= 0));
        cl_rd_check(
            rp, (j->flags & CL_JOIN_MONITOR) == 0 ||
                    (j->rank == -1 && (j->flags & CL_JOIN_CLIENT) == 0 && j->address[0] != '\0'));
        break;
    }
    case CL_MSG_JOIN_REPLY: {
        cl_wire_join_reply_t *j = &out->u.join_reply;
        j->status = cl_rd_u8(rp);
        cl_rd_bytes(rp, j->key, 32);
        rd_str(rp, j->address);
        rd_settings(rp, &j->settings, SETTINGS_OR_NONE);
        cl_rd_check(rp, j->status >= CL_JOIN_NOT_MEMBER && j->status <= CL_JOIN_NO_PATH);
        cl_rd_check(rp, j->status != CL_JOIN_REDIRECT || j->address[0] != '\0');
        break;
    }
    case CL_MSG_VIEW:
        rc = decode_view(rp, &out->u.view, out->hdr.version);
        if (rc == CL_WIRE_ENOMEM) {
            cl_wire_msg_clear(out);
            return rc;
        }
        break;
    case CL_MSG_HEARTBEAT:
        out->u.heartbeat.epoch = cl_rd_u64(rp);
        out->u.heartbeat.progress = cl_rd_u64(rp);
        break;
    case CL_MSG_SUSPECT:
        cl_rd_bytes(rp, out->u.suspect.key, 32);
        out->u.suspect.reason = cl_rd_u8(rp);
        cl_rd_check(rp, out->u.suspect.reason >= CL_SUSPECT_SILENT &&
                            out->u.suspect.reason <= CL_SUSPECT_CORRUPT);
        break;
    case CL_MSG_GOODBYE: {
        /* An empty body (a peer that entered no collective, or abort)
           names no communicator. */
        cl_wire_goodbye_t *g = &out->u.goodbye;
        bool named = rp->left > 0;
        g->count = named ? cl_rd_u16(rp) : 0;
        g->comms = NULL;
        /* A count of 0 is written as an empty body, never as a 0: one
           encoding per message (found by fuzz_wire). */
        cl_rd_check(rp, g->count <= CL_WIRE_GOODBYE_MAX && (!named || g->count > 0));
        if (g->count > 0 && !rp->bad) {
            g->comms = calloc(g->count, sizeof *g->comms);
            if (g->comms == NULL)
                return CL_WIRE_ENOMEM;
        }
        for (uint32_t i = 0; i < g->count && !rp->bad; i++) {
            g->comms[i].comm = cl_rd_u64(rp);
            g->comms[i].entered = cl_rd_u64(rp);
            for (uint32_t k = 0; k < i; k++)
                cl_rd_check(rp, g->comms[k].comm != g->comms[i].comm);
        }
        break;
    }
    case CL_MSG_P2P_CTL:
        if (out->hdr.sub == CL_P2P_CREDIT) {
            cl_wire_credit_t *c = &out->u.credit;
            c->incarnation = cl_rd_u64(rp);
            cl_rd_check(rp, c->incarnation != 0);
            for (int k = 0; k < CL_CREDIT_CLASSES; k++) {
                c->cls[k].consumed_msgs = cl_rd_u64(rp);
                c->cls[k].consumed_bytes = cl_rd_u64(rp);
                c->cls[k].limit_msgs = cl_rd_u64(rp);
                c->cls[k].limit_bytes = cl_rd_u64(rp);
            }
        }
        break;
    case CL_MSG_MATCH:
    case CL_MSG_BYE_ACK:
    case CL_MSG_FENCE:
        break;
    case CL_MSG_UPDATE:
        out->u.update.weight = cl_rd_f64(rp);
        if (out->hdr.version >= CL_WIRE_FIGURE_VERSION) {
            out->u.update.bandwidth = cl_rd_u32(rp);
            cl_rd_check(rp, out->u.update.weight == 0.0 || weight_ok(out->u.update.weight));
        } else {
            cl_rd_check(rp, weight_ok(out->u.update.weight));
        }
        break;
    case CL_MSG_REPORT:
        decode_report(rp, &out->u.report);
        break;
    case CL_MSG_RELAYED:
        cl_rd_bytes(rp, out->u.relay.dst, 32);
        cl_rd_bytes(rp, out->u.relay.src, 32);
        out->u.relay.counter = cl_rd_u64(rp);
        /* The box: a sealed header frame at least (opened by the receiver). */
        cl_rd_check(rp, rp->left >= CL_WIRE_RELAY_MAC + CL_WIRE_HDR_SIZE &&
                            memcmp(out->u.relay.dst, out->u.relay.src, 32) != 0);
        if (!rp->bad) {
            out->payload = body + CL_WIRE_RELAY_FIXED;
            out->payload_len = rp->left;
            rp->left = 0;
        }
        break;
    case CL_MSG_COLL:
    case CL_MSG_P2P:
    case CL_MSG_ELASTIC: /* the body is checked by cl_elmsg_decode */
        out->payload = body;
        out->payload_len = blen;
        rp->left = 0;
        break;
    default:
        return CL_WIRE_ETYPE; /* unreachable: the header check knows the types */
    }
    if (rp->bad || rp->left != 0) {
        cl_wire_msg_clear(out);
        return CL_WIRE_EBODY;
    }
    return CL_WIRE_OK;
}

void cl_wire_msg_clear(cl_wire_msg_t *m)
{
    if (m == NULL)
        return;
    if (m->hdr.type == CL_MSG_VIEW)
        free(m->u.view.members);
    if (m->hdr.type == CL_MSG_GOODBYE)
        free(m->u.goodbye.comms);
    memset(m, 0, sizeof *m);
}

static void encode_view(cl_wr_t *w, const cl_wire_view_t *v, int version)
{
    cl_wr_check(w, v->epoch >= 1);
    cl_wr_check(w, v->group_epoch >= 1 && v->group_epoch <= v->epoch);
    cl_wr_check(w, (v->flags & ~CL_VIEW_GROUP_CLOSED) == 0);
    cl_wr_check(w, v->count >= 1 && v->count <= CL_WIRE_VIEW_MAX && v->members != NULL);
    cl_wr_u64(w, v->epoch);
    cl_wr_u64(w, v->group_epoch);
    wr_settings(w, &v->settings, SETTINGS_FIXED);
    cl_wr_u8(w, v->flags);
    cl_wr_u32(w, v->count);
    uint32_t nmon = 0;
    for (uint32_t i = 0; i < v->count && !w->bad && !w->oom; i++) {
        const cl_wire_member_t *m = &v->members[i];
        cl_wr_check(w, m->address != NULL &&
                           member_entry_ok(v, i, m->rank, m->flags, strlen(m->address)));
        cl_wr_check(w, weight_ok(m->weight));
        cl_wr_check(w, (m->flags & CL_MEMBER_MONITOR) == 0 || m->bandwidth == 0);
        nmon += (m->flags & CL_MEMBER_MONITOR) != 0;
        cl_wr_check(w, nmon <= CL_WIRE_MONITORS_MAX);
        cl_wr_bytes(w, m->key, 32);
        cl_wr_u32(w, (uint32_t)m->rank);
        cl_wr_u8(w, m->flags);
        cl_wr_f64(w, m->weight);
        wr_str(w, m->address);
        if (version >= 7)
            cl_wr_u32(w, m->bandwidth);
    }
}

int cl_wire_encode_body(const cl_wire_msg_t *m, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    cl_wr_t w = {0};
    switch (m->hdr.type) {
    case CL_MSG_HELLO: {
        const cl_wire_hello_t *h = &m->u.hello;
        cl_wr_check(&w, h->min_version >= 1 && h->min_version <= h->max_version);
        cl_wr_check(&w, (h->flags & ~(CL_HELLO_CLIENT | CL_HELLO_STRIPE)) == 0);
        cl_wr_u16(&w, h->max_version);
        cl_wr_u16(&w, h->min_version);
        cl_wr_bytes(&w, h->key, 32);
        cl_wr_bytes(&w, h->nonce, 32);
        cl_wr_u8(&w, h->flags);
        wr_str(&w, h->address);
        break;
    }
    case CL_MSG_WELCOME:
        cl_wr_check(&w, m->u.welcome.version >= 1);
        cl_wr_u16(&w, m->u.welcome.version);
        cl_wr_bytes(&w, m->u.welcome.nonce, 32);
        cl_wr_bytes(&w, m->u.welcome.mac, 32);
        break;
    case CL_MSG_REFUSE: {
        const cl_wire_refuse_t *f = &m->u.refuse;
        cl_wr_check(&w, f->reason >= CL_REFUSE_VERSION && f->reason <= CL_REFUSE_BUSY);
        cl_wr_check(&w, f->min_version >= 1 && f->min_version <= f->max_version);
        cl_wr_u16(&w, f->reason);
        cl_wr_u16(&w, f->max_version);
        cl_wr_u16(&w, f->min_version);
        wr_str(&w, f->text);
        break;
    }
    case CL_MSG_AUTH:
        cl_wr_bytes(&w, m->u.auth.mac, 32);
        break;
    case CL_MSG_JOIN: {
        const cl_wire_join_t *j = &m->u.join;
        cl_wr_check(&w, j->rank >= -1 && j->rank < CL_WIRE_WORLD_MAX);
        cl_wr_check(&w, weight_ok(j->weight));
        cl_wr_check(&w, ((j->flags & CL_JOIN_RELAY) == 0 || (j->flags & CL_JOIN_MONITOR) != 0) &&
                            ((j->flags & CL_JOIN_RANK_REQUIRED) == 0 || j->rank >= 0));
        cl_wr_check(
            &w, (j->flags & CL_JOIN_MONITOR) == 0 ||
                    (j->rank == -1 && (j->flags & CL_JOIN_CLIENT) == 0 && j->address[0] != '\0'));
        cl_wr_u32(&w, (uint32_t)j->rank);
        cl_wr_f64(&w, j->weight);
        cl_wr_u8(&w, j->flags);
        wr_settings(&w, &j->settings, SETTINGS_OPTIONAL);
        cl_wr_u64(&w, j->incarnation);
        wr_str(&w, j->address);
        if (m->hdr.version >= 7)
            cl_wr_u32(&w, j->bandwidth);
        break;
    }
    case CL_MSG_JOIN_REPLY: {
        const cl_wire_join_reply_t *j = &m->u.join_reply;
        cl_wr_check(&w, j->status >= CL_JOIN_NOT_MEMBER && j->status <= CL_JOIN_NO_PATH);
        cl_wr_check(&w, j->status != CL_JOIN_REDIRECT || j->address[0] != '\0');
        cl_wr_u8(&w, j->status);
        cl_wr_bytes(&w, j->key, 32);
        wr_str(&w, j->address);
        wr_settings(&w, &j->settings, SETTINGS_OR_NONE);
        break;
    }
    case CL_MSG_VIEW:
        encode_view(&w, &m->u.view, m->hdr.version);
        break;
    case CL_MSG_HEARTBEAT:
        cl_wr_u64(&w, m->u.heartbeat.epoch);
        cl_wr_u64(&w, m->u.heartbeat.progress);
        break;
    case CL_MSG_SUSPECT:
        cl_wr_check(&w, m->u.suspect.reason >= CL_SUSPECT_SILENT &&
                            m->u.suspect.reason <= CL_SUSPECT_CORRUPT);
        cl_wr_bytes(&w, m->u.suspect.key, 32);
        cl_wr_u8(&w, m->u.suspect.reason);
        break;
    case CL_MSG_GOODBYE:
        cl_wr_check(&w, m->u.goodbye.count <= CL_WIRE_GOODBYE_MAX &&
                            (m->u.goodbye.count == 0 || m->u.goodbye.comms != NULL));
        if (m->u.goodbye.count > 0 && !w.bad) {
            cl_wr_u16(&w, (uint16_t)m->u.goodbye.count);
            for (uint32_t i = 0; i < m->u.goodbye.count; i++) {
                cl_wr_u64(&w, m->u.goodbye.comms[i].comm);
                cl_wr_u64(&w, m->u.goodbye.comms[i].entered);
            }
        }
        break;
    case CL_MSG_P2P_CTL:
        if (m->hdr.sub == CL_P2P_CREDIT) {
            const cl_wire_credit_t *c = &m->u.credit;
            cl_wr_check(&w, c->incarnation != 0);
            cl_wr_u64(&w, c->incarnation);
            for (int k = 0; k < CL_CREDIT_CLASSES; k++) {
                cl_wr_u64(&w, c->cls[k].consumed_msgs);
                cl_wr_u64(&w, c->cls[k].consumed_bytes);
                cl_wr_u64(&w, c->cls[k].limit_msgs);
                cl_wr_u64(&w, c->cls[k].limit_bytes);
            }
        }
        break;
    case CL_MSG_MATCH:
    case CL_MSG_BYE_ACK:
    case CL_MSG_FENCE:
        break;
    case CL_MSG_UPDATE:
        if (m->hdr.version >= CL_WIRE_FIGURE_VERSION) {
            cl_wr_check(&w, m->u.update.weight == 0.0 || weight_ok(m->u.update.weight));
            cl_wr_f64(&w, m->u.update.weight);
            cl_wr_u32(&w, m->u.update.bandwidth);
        } else {
            cl_wr_check(&w, weight_ok(m->u.update.weight) && m->u.update.bandwidth == 0);
            cl_wr_f64(&w, m->u.update.weight);
        }
        break;
    case CL_MSG_REPORT:
        encode_report(&w, &m->u.report);
        break;
    case CL_MSG_RELAYED:
        cl_wr_check(&w, m->payload != NULL &&
                            m->payload_len >= CL_WIRE_RELAY_MAC + CL_WIRE_HDR_SIZE &&
                            memcmp(m->u.relay.dst, m->u.relay.src, 32) != 0);
        cl_wr_bytes(&w, m->u.relay.dst, 32);
        cl_wr_bytes(&w, m->u.relay.src, 32);
        cl_wr_u64(&w, m->u.relay.counter);
        cl_wr_bytes(&w, m->payload, m->payload_len);
        break;
    case CL_MSG_COLL:
    case CL_MSG_P2P:
    case CL_MSG_ELASTIC:
        cl_wr_check(&w, m->payload != NULL || m->payload_len == 0);
        cl_wr_bytes(&w, m->payload, m->payload_len);
        break;
    default:
        w.bad = true;
        break;
    }
    if (w.oom || w.bad) {
        free(w.data);
        return w.oom ? CL_WIRE_ENOMEM : CL_WIRE_EBODY;
    }
    *out = w.data;
    *outlen = w.len;
    return CL_WIRE_OK;
}

const char *cl_wire_strerror(int err)
{
    switch (err) {
    case CL_WIRE_OK:
        return "ok";
    case CL_WIRE_ESIZE:
        return "header frame has the wrong size";
    case CL_WIRE_EMAGIC:
        return "wrong magic";
    case CL_WIRE_EVERSION:
        return "unsupported protocol version";
    case CL_WIRE_ETYPE:
        return "unknown message type";
    case CL_WIRE_EFLAGS:
        return "reserved header bits set";
    case CL_WIRE_ELENGTH:
        return "length field differs from the body size";
    case CL_WIRE_EBODY:
        return "malformed body";
    case CL_WIRE_ENOMEM:
        return "out of memory";
    default:
        return "unknown wire error";
    }
}

const char *cl_wire_type_name(int type)
{
    switch (type) {
    case CL_MSG_HELLO:
        return "HELLO";
    case CL_MSG_WELCOME:
        return "WELCOME";
    case CL_MSG_REFUSE:
        return "REFUSE";
    case CL_MSG_AUTH:
        return "AUTH";
    case CL_MSG_JOIN:
        return "JOIN";
    case CL_MSG_JOIN_REPLY:
        return "JOIN_REPLY";
    case CL_MSG_VIEW:
        return "VIEW";
    case CL_MSG_HEARTBEAT:
        return "HEARTBEAT";
    case CL_MSG_SUSPECT:
        return "SUSPECT";
    case CL_MSG_GOODBYE:
        return "GOODBYE";
    case CL_MSG_MATCH:
        return "MATCH";
    case CL_MSG_UPDATE:
        return "UPDATE";
    case CL_MSG_BYE_ACK:
        return "BYE_ACK";
    case CL_MSG_REPORT:
        return "REPORT";
    case CL_MSG_COLL:
        return "COLL";
    case CL_MSG_P2P:
        return "P2P";
    case CL_MSG_ELASTIC:
        return "ELASTIC";
    case CL_MSG_P2P_CTL:
        return "P2P_CTL";
    case CL_MSG_RELAYED:
        return "RELAY";
    case CL_MSG_FENCE:
        return "FENCE";
    default:
        return "unknown";
    }
}

uint64_t cl_wire_run_hash(const char *run_id)
{
    uint8_t h[32];
    const char *s = run_id != NULL ? run_id : "";
    crypto_generichash(h, sizeof h, (const uint8_t *)s, strlen(s), NULL, 0);
    return cl_get_u64(h);
}
