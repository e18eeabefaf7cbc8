/*  cl_addr.c - parse and format peer addresses in multiaddr style.

    A multiaddr is a sequence of /protocol/value pairs.  We accept exactly
    one host pair (/ip4, /ip6, /dns, /dns4, /dns6), then /tcp/<port>, then
    optionally /p2p/<peer id>, and nothing else: no empty parts, no trailing
    slash, no leading zeros in ports or IPv4 octets (they read as octal to
    some tools).  The text is split in a bounded local copy, every value is
    checked before it is stored, and the output is written only once the
    whole address has been accepted.  Errors quote the offending part
    through cl_text_quote, so a hostile address cannot garble the log.
*/
#include "util/cl_addr.h"

#include "util/cl_identity.h"
#include "util/cl_text.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CL_QUOTE_MAX 64 /* characters of user text quoted in an error */

/* Quotes a piece of user text for an error message. */
#define Q(text)                                                                                    \
    cl_text_quote((text), CL_QUOTE_MAX, (char[CL_QUOTE_MAX * 4 + 8]){0}, CL_QUOTE_MAX * 4 + 8)

/* Strict decimal number of 1..maxdigits digits without leading zeros
   (a lone "0" is fine) and at most max.  Returns 0 or -1. */
static int s_parse_decimal(const char *s, size_t maxdigits, unsigned long max, unsigned long *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > maxdigits || (n > 1 && s[0] == '0'))
        return -1;
    unsigned long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

static int s_valid_ip4(const char *s)
{
    char copy[16];
    if (strlen(s) >= sizeof copy)
        return 0;
    strcpy(copy, s);
    int parts = 0;
    char *save = NULL;
    /* strtok_r would merge empty parts; count the dots first. */
    for (const char *p = s; *p != '\0'; p++)
        parts += *p == '.';
    if (parts != 3)
        return 0;
    parts = 0;
    for (char *tok = strtok_r(copy, ".", &save); tok != NULL; tok = strtok_r(NULL, ".", &save)) {
        unsigned long v;
        if (s_parse_decimal(tok, 3, 255, &v) != 0)
            return 0;
        parts++;
    }
    return parts == 4;
}

/* RFC 1123 host name: dot-separated labels of 1-63 letters, digits and
   hyphens, not starting or ending with a hyphen, 253 characters at most. */
static int s_valid_dns(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return 0;
    size_t label = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (label == 0 || label > 63 || s[i - 1] == '-')
                return 0;
            label = 0;
            continue;
        }
        int ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        if (!ok || (label == 0 && c == '-'))
            return 0;
        label++;
    }
    return 1;
}

int cl_addr_parse(const char *text, cl_addr_t *out, char *err, size_t errlen)
{
    if (text == NULL || out == NULL)
        return cl_text_fail(err, errlen, "no address given");
    size_t len = strnlen(text, CL_ADDR_TEXT_MAX + 1);
    if (len == 0)
        return cl_text_fail(err, errlen, "empty address");
    if (len > CL_ADDR_TEXT_MAX)
        return cl_text_fail(err, errlen, "address longer than %d characters", CL_ADDR_TEXT_MAX);
    if (text[0] != '/')
        return cl_text_fail(
            err, errlen, "'%s' does not start with '/' (expected e.g. /ip4/203.0.113.7/tcp/31337)",
            Q(text));

    char copy[CL_ADDR_TEXT_MAX + 1];
    memcpy(copy, text, len + 1);
    /* Split at every '/', keeping empty parts so that "//" is caught. */
    char *part[8];
    size_t nparts = 0;
    char *p = copy + 1;
    for (;;) {
        if (nparts == 8)
            return cl_text_fail(err, errlen, "'%s' has too many parts", Q(text));
        part[nparts++] = p;
        char *slash = strchr(p, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
        p = slash + 1;
    }
    for (size_t i = 0; i < nparts; i++) {
        if (part[i][0] == '\0')
            return cl_text_fail(err, errlen, "'%s' has an empty part", Q(text));
    }
    if (nparts % 2 != 0)
        return cl_text_fail(err, errlen, "'%s': /%s has no value", Q(text), Q(part[nparts - 1]));

    cl_addr_t a;
    memset(&a, 0, sizeof a);
    const char *proto = part[0], *host = part[1];
    if (strcmp(proto, "ip4") == 0) {
        if (!s_valid_ip4(host))
            return cl_text_fail(err, errlen, "'%s' is not an IPv4 address (expected a dotted quad)",
                                Q(host));
        a.family = CL_ADDR_IP4;
        strcpy(a.host, host);
    } else if (strcmp(proto, "ip6") == 0) {
        struct in6_addr in6;
        if (strlen(host) >= INET6_ADDRSTRLEN || inet_pton(AF_INET6, host, &in6) != 1)
            return cl_text_fail(err, errlen, "'%s' is not an IPv6 address", Q(host));
        a.family = CL_ADDR_IP6;
        if (inet_ntop(AF_INET6, &in6, a.host, sizeof a.host) == NULL)
            return cl_text_fail(err, errlen, "'%s' is not an IPv6 address", Q(host));
    } else if (strcmp(proto, "dns") == 0 || strcmp(proto, "dns4") == 0 ||
               strcmp(proto, "dns6") == 0) {
        if (!s_valid_dns(host))
            return cl_text_fail(err, errlen,
                                "'%s' is not a host name (letters, digits, '-' and '.', labels of "
                                "1-63 characters)",
                                Q(host));
        a.family = CL_ADDR_DNS;
        a.dns_version = proto[3] == '4' ? 4 : proto[3] == '6' ? 6 : 0;
        strcpy(a.host, host);
    } else {
        return cl_text_fail(
            err, errlen, "'%s': unknown protocol /%s (expected /ip4, /ip6, /dns, /dns4 or /dns6)",
            Q(text), Q(proto));
    }

    if (nparts < 4 || strcmp(part[2], "tcp") != 0)
        return cl_text_fail(err, errlen, "'%s': expected /tcp/<port> after the host", Q(text));
    unsigned long port;
    if (s_parse_decimal(part[3], 5, 65535, &port) != 0)
        return cl_text_fail(err, errlen, "'%s' is not a port (expected 0 to 65535)", Q(part[3]));
    a.port = (uint16_t)port;

    if (nparts >= 6) {
        if (strcmp(part[4], "p2p") != 0)
            return cl_text_fail(err, errlen,
                                "'%s': expected /p2p/<peer id> after the port, not /%s", Q(text),
                                Q(part[4]));
        if (cl_base58_decode(part[5], a.key, sizeof a.key) != 0)
            return cl_text_fail(err, errlen,
                                "'%s' is not a peer id (expected the base58 text of a 32-byte key)",
                                Q(part[5]));
        a.has_key = true;
    }
    if (nparts > 6)
        return cl_text_fail(err, errlen, "'%s': unexpected /%s after the peer id", Q(text),
                            Q(part[6]));
    *out = a;
    return 0;
}

static int s_is_separator(char c)
{
    return c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '\r';
}

int cl_addr_parse_list(const char *text, bool require_key, cl_addr_t **out, size_t *n, char *err,
                       size_t errlen)
{
    if (text == NULL || out == NULL || n == NULL)
        return cl_text_fail(err, errlen, "no address list given");
    /* Count entries first so that one allocation suffices. */
    size_t count = 0;
    for (const char *p = text; *p != '\0';) {
        while (*p != '\0' && s_is_separator(*p))
            p++;
        if (*p == '\0')
            break;
        count++;
        while (*p != '\0' && !s_is_separator(*p))
            p++;
    }
    if (count > CL_ADDR_LIST_MAX)
        return cl_text_fail(err, errlen, "%zu addresses (at most %d)", count, CL_ADDR_LIST_MAX);
    if (count == 0) {
        *out = NULL;
        *n = 0;
        return 0;
    }
    cl_addr_t *list = calloc(count, sizeof *list);
    if (list == NULL)
        return cl_text_fail(err, errlen, "out of memory");
    size_t i = 0;
    char one[CL_ADDR_TEXT_MAX + 2];
    char why[512];
    for (const char *p = text; *p != '\0' && i < count;) {
        while (*p != '\0' && s_is_separator(*p))
            p++;
        const char *start = p;
        while (*p != '\0' && !s_is_separator(*p))
            p++;
        size_t len = (size_t)(p - start);
        if (len > CL_ADDR_TEXT_MAX) {
            cl_text_fail(err, errlen, "address %zu is longer than %d characters", i + 1,
                         CL_ADDR_TEXT_MAX);
            goto err_list;
        }
        memcpy(one, start, len);
        one[len] = '\0';
        if (cl_addr_parse(one, &list[i], why, sizeof why) != 0) {
            cl_text_fail(err, errlen, "address %zu: %s", i + 1, why);
            goto err_list;
        }
        if (require_key && !list[i].has_key) {
            cl_text_fail(err, errlen, "address %zu '%s' has no /p2p/<peer id>", i + 1, Q(one));
            goto err_list;
        }
        if (require_key && list[i].port == 0) {
            cl_text_fail(err, errlen, "address %zu '%s' has port 0 (a peer's port is needed)",
                         i + 1, Q(one));
            goto err_list;
        }
        i++;
    }
    *out = list;
    *n = count;
    return 0;
err_list:
    free(list);
    return -1;
}

int cl_addr_format(const cl_addr_t *a, char *out, size_t len)
{
    if (a == NULL || out == NULL || len == 0)
        return -1;
    const char *proto;
    switch (a->family) {
    case CL_ADDR_IP4:
        proto = "ip4";
        break;
    case CL_ADDR_IP6:
        proto = "ip6";
        break;
    case CL_ADDR_DNS:
        proto = a->dns_version == 4 ? "dns4" : a->dns_version == 6 ? "dns6" : "dns";
        break;
    default:
        return -1;
    }
    if (memchr(a->host, '\0', sizeof a->host) == NULL || a->host[0] == '\0')
        return -1;
    char id[CL_PEER_ID_MAX] = "";
    if (a->has_key && cl_base58_encode(a->key, sizeof a->key, id, sizeof id) != 0)
        return -1;
    int n = snprintf(out, len, "/%s/%s/tcp/%u%s%s", proto, a->host, (unsigned)a->port,
                     a->has_key ? "/p2p/" : "", id);
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int cl_addr_endpoint(const cl_addr_t *a, char *out, size_t len)
{
    if (a == NULL || out == NULL || len == 0)
        return -1;
    if (memchr(a->host, '\0', sizeof a->host) == NULL || a->host[0] == '\0')
        return -1;
    if (a->family != CL_ADDR_IP4 && a->family != CL_ADDR_IP6 && a->family != CL_ADDR_DNS)
        return -1;
    char port[8];
    if (a->port == 0)
        strcpy(port, "*");
    else
        snprintf(port, sizeof port, "%u", (unsigned)a->port);
    int n = a->family == CL_ADDR_IP6 ? snprintf(out, len, "tcp://[%s]:%s", a->host, port)
                                     : snprintf(out, len, "tcp://%s:%s", a->host, port);
    if (n < 0 || (size_t)n >= len) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}
