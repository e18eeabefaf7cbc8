/*  cl_wire.h - the wire codec: the only code that reads network bytes.

    Encodes and decodes the messages of docs/wire.md: a fixed 64-byte
    header frame and a typed body frame.  Decoding checks every field
    before use and never trusts a length; anything that does not decode
    exactly is rejected with a reason code, and the caller drops the
    message and bans its sender.
*/
#ifndef CL_WIRE_H_INCLUDED
#define CL_WIRE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_WIRE_VERSION 12        /* the highest version this code speaks */
#define CL_WIRE_SIGNED_VERSION 10 /* a swarm that signs: every proof signed (docs/wire.md section 5) */
#define CL_WIRE_FIGURE_VERSION 11 /* UPDATE carries a bandwidth figure (measured ones) */
#define CL_WIRE_STRIPE_VERSION                                                                     \
    12 /* striped links: HELLO's stripe flag, FENCE (docs/wire.md section 1.1) */
#define CL_WIRE_MIN_VERSION 5     /* the lowest version this code reads (HELLO, REFUSE: any) */
#define CL_WIRE_HDR_SIZE 64       /* bytes of the header frame */
#define CL_WIRE_STR_MAX 512       /* longest str field, bytes */
#define CL_WIRE_VIEW_MAX 65536    /* most member entries in one VIEW */
#define CL_WIRE_WORLD_MAX (1 << 20) /* largest world size on the wire */
#define CL_WIRE_ROBUST_MIN_MAX 0x7fffffffu /* largest COLLAB_ROBUST_MIN on the wire */
#define CL_WIRE_WEIGHT_RATIO_MAX 65536u    /* largest COLLAB_MAX_WEIGHT_RATIO on the wire */
#define CL_WIRE_COMPRESSION_MAX 3 /* settings: 0 none, 1 fp16, 2 int8, 3 adaptive (version 8) */
#define CL_WIRE_TAG_MAX 0x7fffffffu /* largest P2P tag */
#define CL_WIRE_MONITORS_MAX 8     /* most monitor entries in one VIEW */
#define CL_WIRE_REPORT_LINKS 64    /* most links in one REPORT */
#define CL_WIRE_REPORT_VALUES 16   /* most named values in one REPORT */
#define CL_WIRE_REPORT_NAME_MAX 32 /* longest value name in a REPORT, bytes */

typedef enum {
    CL_MSG_HELLO = 1,
    CL_MSG_WELCOME = 2,
    CL_MSG_REFUSE = 3,
    CL_MSG_AUTH = 4,
    CL_MSG_JOIN = 10,
    CL_MSG_JOIN_REPLY = 11,
    CL_MSG_VIEW = 12,
    CL_MSG_HEARTBEAT = 13,
    CL_MSG_SUSPECT = 14,
    CL_MSG_GOODBYE = 15,
    CL_MSG_MATCH = 16,
    CL_MSG_UPDATE = 17,
    CL_MSG_BYE_ACK = 18, /* this engine holds everything the GOODBYE's sender sent it */
    CL_MSG_REPORT = 19, /* a member's statistics, to the monitors */
    CL_MSG_COLL = 20,
    CL_MSG_P2P = 21,
    CL_MSG_ELASTIC = 22, /* admission and state sync; body read by cl_elmsg.c */
    CL_MSG_P2P_CTL = 23, /* synchronous-send completion and cancellation */
    CL_MSG_RELAYED = 24,
    CL_MSG_FENCE = 25, /* a striped link: what follows waits for the stripes' messages sent before (seq: their count) */   /* a sealed message between two client members, through a monitor */
} cl_msg_type_t;

/* P2P sub: the send mode. */
enum { CL_P2P_STANDARD = 0, CL_P2P_SYNC = 1 };
/* P2P_CTL sub. */
enum { CL_P2P_MATCHED = 1, CL_P2P_CANCEL = 2, CL_P2P_CANCELLED = 3, CL_P2P_CREDIT = 4 };
/* Flow-control classes of a CREDIT (docs/wire.md section 10). */
enum { CL_CREDIT_P2P = 0, CL_CREDIT_EARLY = 1, CL_CREDIT_CLASSES = 2 };

/* Decoder results (0 = ok).  Every one but CL_WIRE_ENOMEM means the input
   is malformed. */
typedef enum {
    CL_WIRE_OK = 0,
    CL_WIRE_ESIZE = -1,    /* header frame is not CL_WIRE_HDR_SIZE bytes */
    CL_WIRE_EMAGIC = -2,   /* wrong magic */
    CL_WIRE_EVERSION = -3, /* version this code does not read */
    CL_WIRE_ETYPE = -4,    /* unknown message type */
    CL_WIRE_EFLAGS = -5,   /* reserved bits set */
    CL_WIRE_ELENGTH = -6,  /* length field differs from the body size */
    CL_WIRE_EBODY = -7,    /* body truncated, too long, or a field out of range */
    CL_WIRE_ENOMEM = -8,   /* allocation failed (not the sender's fault) */
} cl_wire_err_t;

/* REFUSE reasons. */
enum { CL_REFUSE_VERSION = 1, CL_REFUSE_RUN = 2, CL_REFUSE_AUTH = 3, CL_REFUSE_BANNED = 4,
       CL_REFUSE_BUSY = 5 };
/* JOIN_REPLY statuses. */
enum {
    CL_JOIN_NOT_MEMBER = 1,
    CL_JOIN_STANDBY = 2,
    CL_JOIN_REDIRECT = 3,
    CL_JOIN_CONFLICT = 4,
    CL_JOIN_UNREACHABLE = 5, /* the coordinator could not connect to the joiner's address */
    CL_JOIN_NO_PATH = 6, /* a client joiner could reach no other client member: no public
                            member and no relaying monitor (docs/monitor.md §8) */
};
/* SUSPECT reasons. */
enum { CL_SUSPECT_SILENT = 1, CL_SUSPECT_CLOSED = 2, CL_SUSPECT_STRAGGLER = 3,
       CL_SUSPECT_MISMATCH = 4, CL_SUSPECT_CORRUPT = 5 };
/* Flag bits. */
#define CL_HELLO_CLIENT 0x01u
#define CL_HELLO_STRIPE                                                                            \
    0x02u /* one more connection of a link that is up (COLL only; version 12)                      \
           */
#define CL_JOIN_CLIENT 0x01u
#define CL_JOIN_WORLD_SET 0x02u
#define CL_JOIN_STRICT_SET 0x04u
#define CL_JOIN_COMPRESSION_SET 0x08u
#define CL_JOIN_TARGET_GROUP_SET 0x10u
#define CL_JOIN_MONITOR 0x20u
#define CL_JOIN_RANK_REQUIRED 0x40u /* a peer rejoining: `rank` is the one its program holds */
#define CL_JOIN_RELAY 0x80u /* a monitor that relays between client members (with MONITOR) */
#define CL_VIEW_GROUP_CLOSED 0x01u
#define CL_MEMBER_CLIENT 0x01u
#define CL_MEMBER_IN_GROUP 0x02u
#define CL_MEMBER_MONITOR 0x04u
#define CL_MEMBER_RELAY 0x08u /* a monitor entry that relays (docs/monitor.md §8) */
#define CL_REPORT_CLIENT 0x01u
#define CL_REPORT_IN_GROUP 0x02u

typedef struct {
    uint8_t version;     /* protocol version of the message */
    uint8_t type;        /* cl_msg_type_t */
    uint8_t sub;         /* collective message type (COLL) */
    uint8_t flags;       /* reserved, 0 */
    uint64_t run;        /* run-id hash */
    uint64_t comm;       /* communicator id */
    uint64_t epoch;      /* sender's view epoch */
    uint64_t seq;        /* collective sequence number */
    uint32_t signature;  /* collective signature */
    uint32_t part;       /* part index / P2P source comm rank */
    uint32_t chunk;      /* chunk index */
    uint32_t aux;        /* algorithm field / P2P tag */
    uint64_t length;     /* body bytes */
} cl_wire_hdr_t;

typedef struct {
    uint16_t max_version;              /* highest version spoken */
    uint16_t min_version;              /* lowest version spoken */
    uint8_t key[32];                   /* sender's public key */
    uint8_t nonce[32];                 /* fresh random bytes */
    uint8_t flags;                     /* CL_HELLO_CLIENT */
    char address[CL_WIRE_STR_MAX + 1]; /* announced multiaddr, "" for clients */
} cl_wire_hello_t;

typedef struct {
    uint16_t version;  /* version chosen */
    uint8_t nonce[32]; /* server nonce */
    uint8_t mac[32];   /* server proof */
} cl_wire_welcome_t;

typedef struct {
    uint16_t reason;                /* CL_REFUSE_* */
    uint16_t max_version;           /* refuser's version range */
    uint16_t min_version;
    char text[CL_WIRE_STR_MAX + 1]; /* one line for the log */
} cl_wire_refuse_t;

typedef struct {
    uint8_t mac[32]; /* client proof */
} cl_wire_auth_t;

/* The swarm-wide settings a founder fixes, as JOIN, JOIN_REPLY and VIEW
   carry them: one block, one codec (cl_wire.c), the same bytes in all
   three.  A VIEW carries the values themselves (the fixed form); a JOIN
   carries what its peer's own configuration says, and a JOIN_REPLY the
   swarm's when it refuses or parks the joiner, both in the optional form:
   0 for "not given", aggregation and verify as 1 + the value. */
typedef struct {
    int32_t world_size;        /* 1 .. CL_WIRE_WORLD_MAX (JOIN_REPLY: 0 with no settings) */
    uint8_t strict;            /* 0 / 1 */
    uint8_t compression;       /* 0 / 1 / 2 */
    int32_t target_group;      /* 1 .. CL_WIRE_WORLD_MAX (JOIN_REPLY: 0 with no settings) */
    uint8_t aggregation;       /* COLLAB_AGGREGATION: 0 mean, 1 trimmed_mean, 2 centered_clip
                                  (optional form: 0 not given, else 1 + that) */
    uint32_t robust_min;       /* COLLAB_ROBUST_MIN, 0 .. CL_WIRE_ROBUST_MIN_MAX (0: not given;
                                  in a view, as 1) */
    uint32_t max_weight_ratio; /* COLLAB_MAX_WEIGHT_RATIO, 0 .. CL_WIRE_WEIGHT_RATIO_MAX
                                  (0: not given, or no cap) */
    uint8_t verify;            /* COLLAB_VERIFY: 0 / 1 (optional form: 0 not given, else 1 + that) */
} cl_wire_settings_t;

typedef struct {
    int32_t rank;                      /* preferred rank or -1 */
    double weight;                     /* > 0, finite */
    uint8_t flags;                     /* CL_JOIN_* */
    cl_wire_settings_t settings;       /* the optional form */
    uint64_t incarnation;              /* random per process: tells a restart from a retry */
    char address[CL_WIRE_STR_MAX + 1]; /* "" for clients */
    uint32_t bandwidth; /* COLLAB_BANDWIDTH_MBIT in kbit/s, 0 none (on the wire from version 7) */
} cl_wire_join_t;

typedef struct {
    uint8_t status;                    /* CL_JOIN_NOT_MEMBER ... */
    uint8_t key[32];                   /* coordinator (REDIRECT) */
    char address[CL_WIRE_STR_MAX + 1]; /* coordinator (REDIRECT) */
    cl_wire_settings_t settings;       /* the optional form; world_size 0 with none
                                          (only CONFLICT and STANDBY carry them) */
} cl_wire_join_reply_t;

typedef struct {
    uint8_t key[32];     /* public key */
    int32_t rank;        /* world rank; -1 for a monitor entry */
    uint8_t flags;       /* CL_MEMBER_* */
    double weight;       /* averaging weight */
    const char *address; /* NUL-terminated; owned by the view */
    uint32_t bandwidth;  /* bandwidth figure in kbit/s, 0 unknown (on the wire from version 7) */
} cl_wire_member_t;

typedef struct {
    uint64_t epoch;             /* >= 1 */
    uint64_t group_epoch;       /* epoch at which the world group last changed, 1..epoch */
    cl_wire_settings_t settings; /* the fixed form */
    uint8_t flags;              /* CL_VIEW_GROUP_CLOSED */
    uint32_t count;             /* entries in members */
    cl_wire_member_t *members;  /* monitors by key, then members by rank; decoder-allocated
                                   (cl_wire_msg_clear) */
} cl_wire_view_t;

typedef struct {
    uint64_t epoch;    /* sender's view epoch */
    uint64_t progress; /* collectives completed */
} cl_wire_heartbeat_t;

typedef struct {
    uint8_t key[32]; /* suspected member */
    uint8_t reason;  /* CL_SUSPECT_* */
} cl_wire_suspect_t;

typedef struct {
    double weight;      /* > 0, finite; from version 11 also 0: unchanged */
    uint32_t bandwidth; /* the sender's new bandwidth figure, kbit/s, 0 unchanged
                           (on the wire from version 11) */
} cl_wire_update_t;

#define CL_WIRE_GOODBYE_MAX 64 /* most communicators one GOODBYE names */

/* One communicator of a GOODBYE: the sender took part in its collectives
   with sequence numbers below `entered` (0: none). */
typedef struct {
    uint64_t comm;    /* communicator id */
    uint64_t entered; /* collectives entered on it */
} cl_wire_bye_comm_t;

typedef struct {
    uint32_t count;             /* entries in comms, <= CL_WIRE_GOODBYE_MAX */
    cl_wire_bye_comm_t *comms;  /* distinct communicators; decoder-allocated (cl_wire_msg_clear) */
} cl_wire_goodbye_t;

/* REPORT (docs/wire.md): a member's totals, sent to the monitors. */
typedef struct {
    int32_t rank;          /* bandwidth measured from this world rank */
    double bandwidth;      /* bytes/s, >= 0 */
} cl_wire_link_t;

typedef struct {
    char name[CL_WIRE_REPORT_NAME_MAX + 1]; /* [A-Za-z0-9_.]{1,32} */
    double value;                           /* finite */
} cl_wire_value_t;

typedef struct {
    int32_t rank;          /* sender's world rank */
    uint8_t flags;         /* CL_REPORT_* */
    uint8_t compression;   /* 0 / 1 / 2 */
    uint64_t steps;        /* steps completed */
    uint64_t collectives;  /* collectives completed */
    double weight;         /* averaging weight (samples per step), > 0 */
    uint64_t bytes_sent;   /* collective bytes sent */
    uint64_t bytes_recv;   /* collective bytes received */
    uint32_t group_size;   /* contributors of the last world collective */
    double coll_seconds;   /* time inside collectives */
    double wait_seconds;   /* of which waiting for late members */
    uint32_t failures;     /* members seen failing */
    uint32_t joins;        /* peers seen joining */
    uint16_t nlinks;       /* 0 .. CL_WIRE_REPORT_LINKS */
    cl_wire_link_t links[CL_WIRE_REPORT_LINKS];
    uint8_t nvalues;       /* 0 .. CL_WIRE_REPORT_VALUES */
    cl_wire_value_t values[CL_WIRE_REPORT_VALUES];
} cl_wire_report_t;

/* RELAY (docs/wire.md §11): the fixed fields before the sealed box. */
#define CL_WIRE_RELAY_FIXED 72 /* dst 32 + src 32 + counter 8 */
#define CL_WIRE_RELAY_MAC 16   /* crypto_box_MACBYTES */
typedef struct {
    uint8_t dst[32];  /* the destination member's key */
    uint8_t src[32];  /* the sender member's key */
    uint64_t counter; /* the sender's counter for (src, dst): the nonce */
} cl_wire_relay_t;

/* True when name is a valid REPORT value name ([A-Za-z0-9_.], 1..32 bytes). */
bool cl_wire_report_name_ok(const char *name);

/* P2P_CTL CREDIT (wire version 6, docs/wire.md section 10): the receiver's
   incarnation and, per class, cumulative counts since it began. */
typedef struct {
    uint64_t consumed_msgs, consumed_bytes; /* what the receiver consumed */
    uint64_t limit_msgs, limit_bytes;       /* what the sender may have sent */
} cl_wire_credit_class_t;

typedef struct {
    uint64_t incarnation; /* the receiver's, != 0 */
    cl_wire_credit_class_t cls[CL_CREDIT_CLASSES];
} cl_wire_credit_t;

/* The version a message is written with on a link negotiated at
   version `link` (0: not known yet): the lowest one that has its layout
   (5 for most, 6 for P2P_CTL CREDIT), so that a peer of version 5 reads
   every message a later peer sends it; JOIN and VIEW carry bandwidth
   figures from version 7 on, and are written with 7 on links of 7, else
   with 5 (without them); UPDATE carries a figure from version 11 on and
   is written with 11 on links of 11.  The body's layout follows
   hdr.version. */
int cl_wire_msg_version(const cl_wire_hdr_t *h, int link);

/* A decoded message.  For COLL and P2P, payload points into the caller's
   body buffer (valid as long as that buffer). */
typedef struct {
    cl_wire_hdr_t hdr;
    union {
        cl_wire_hello_t hello;
        cl_wire_welcome_t welcome;
        cl_wire_refuse_t refuse;
        cl_wire_auth_t auth;
        cl_wire_join_t join;
        cl_wire_join_reply_t join_reply;
        cl_wire_view_t view;
        cl_wire_heartbeat_t heartbeat;
        cl_wire_suspect_t suspect;
        cl_wire_update_t update;
        cl_wire_goodbye_t goodbye;

        cl_wire_report_t report;
        cl_wire_credit_t credit; /* P2P_CTL CREDIT */
        cl_wire_relay_t relay;
    } u;
    const uint8_t *payload; /* COLL / P2P / ELASTIC body, RELAY box */
    size_t payload_len;
} cl_wire_msg_t;

/* Writes the 64-byte header (h->length is written as given). */
void cl_wire_hdr_encode(const cl_wire_hdr_t *h, uint8_t out[CL_WIRE_HDR_SIZE]);

/* Checks and reads a header frame of len bytes.  Checks magic, version,
   type and flags, not the length field (see cl_wire_decode).  Returns 0 or
   a cl_wire_err_t. */
int cl_wire_hdr_decode(const uint8_t *buf, size_t len, cl_wire_hdr_t *h);

/* Decodes a whole message: header frame and body frame.  Returns 0 with
   *out filled (release with cl_wire_msg_clear), or a cl_wire_err_t with
   *out cleared.  Never reads outside the given buffers. */
int cl_wire_decode(const uint8_t *hdr, size_t hlen, const uint8_t *body, size_t blen,
                   cl_wire_msg_t *out);

/* Frees what cl_wire_decode allocated inside *m (view members); zeroes *m.
   Accepts a zeroed or already cleared message. */
void cl_wire_msg_clear(cl_wire_msg_t *m);

/* Encodes the body of m (by m->hdr.type) into a malloc'ed buffer that the
   caller owns (*out may be NULL when *outlen is 0).  For COLL and P2P the
   body is m->payload.  Returns 0, CL_WIRE_ENOMEM, or CL_WIRE_EBODY when a
   field is out of range (the encoder refuses to send what the decoder
   would reject). */
int cl_wire_encode_body(const cl_wire_msg_t *m, uint8_t **out, size_t *outlen);

/* Short English text for a cl_wire_err_t. */
const char *cl_wire_strerror(int err);

/* Name of a message type ("HELLO", ...) or "unknown". */
const char *cl_wire_type_name(int type);

/* The run hash of docs/wire.md: first 8 bytes (LE) of BLAKE2b-256(run_id). */
uint64_t cl_wire_run_hash(const char *run_id);

#endif
