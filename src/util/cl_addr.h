/*  cl_addr.h - peer addresses in multiaddr style.

    /ip4/203.0.113.7/tcp/31337/p2p/<peer-id>, /ip6/::1/tcp/9/p2p/<id>,
    /dns/host.example/tcp/31337/p2p/<id> (also /dns4, /dns6).  The /p2p part
    is optional for listen addresses and required for COLLAB_INITIAL_PEERS.
*/
#ifndef CL_ADDR_H_INCLUDED
#define CL_ADDR_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CL_ADDR_IP4 = 4, CL_ADDR_IP6 = 6, CL_ADDR_DNS = 1 } cl_addr_family_t;

typedef struct {
    cl_addr_family_t family;
    char host[256];  /* dotted quad, IPv6 text (no brackets) or DNS name */
    uint16_t port;   /* 0 = ephemeral (listen only) */
    bool has_key;    /* /p2p/<id> present */
    uint8_t key[32]; /* public key decoded from the peer id */
    int dns_version; /* CL_ADDR_DNS only: 0 for /dns, 4 for /dns4, 6 for /dns6 */
} cl_addr_t;

#define CL_ADDR_TEXT_MAX 1024 /* longest multiaddr accepted (and ever formatted) */
#define CL_ADDR_LIST_MAX 1024 /* most entries cl_addr_parse_list accepts */

/* Parses one multiaddr.  Returns 0, or -1 with a reason in err (one line,
   naming the part that is wrong).  /ip4 takes a strict dotted quad, /ip6
   what inet_pton accepts (stored in canonical form, so formatting gives
   the canonical text), /dns* an RFC 1123 host name; /tcp a port 0-65535;
   /p2p a base58 peer id of exactly 32 bytes.  *out is written only on
   success; err may be NULL. */
int cl_addr_parse(const char *text, cl_addr_t *out, char *err, size_t errlen);

/* Parses a list separated by spaces and/or commas; *out is malloc'ed
   (caller frees), *n its length (0 for an empty list; *out is then NULL).
   Every entry must carry /p2p/<id> and a port other than 0 when
   require_key is true (such a list names peers to connect to).  At most
   CL_ADDR_LIST_MAX entries.  Errors name the entry (1-based). */
int cl_addr_parse_list(const char *text, bool require_key, cl_addr_t **out, size_t *n, char *err,
                       size_t errlen);

/* Formats as multiaddr (with /p2p/ when has_key).  Returns 0 or -1. */
int cl_addr_format(const cl_addr_t *a, char *out, size_t len);

/* ZeroMQ endpoint "tcp://host:port" ("tcp://[v6]:port").  Port 0 is
   written "*" (ephemeral: zsock_bind returns the port it chose).  An
   IPv6 address (or a /dns6 name) needs zsock_set_ipv6 on the socket.
   Returns 0, or -1 if out is too small or *a is invalid. */
int cl_addr_endpoint(const cl_addr_t *a, char *out, size_t len);

#endif
