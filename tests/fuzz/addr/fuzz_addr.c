/*  fuzz_addr.c - fuzz target for the multiaddr parser (cl_addr) and the
    base58 decoder behind peer ids.

    Beyond "no crash, no hang, no sanitizer report" it checks invariants:
    an accepted address formats, parses back to the same fields and has a
    ZeroMQ endpoint; a refused one comes with a one-line reason; a list
    parse agrees with its own count; base58 that decodes re-encodes to the
    same text (the decoder accepts only canonical text).
*/
#include "util/cl_addr.h"
#include "util/cl_identity.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int s_same(const cl_addr_t *a, const cl_addr_t *b)
{
    return a->family == b->family && strcmp(a->host, b->host) == 0 && a->port == b->port &&
           a->has_key == b->has_key && (!a->has_key || memcmp(a->key, b->key, 32) == 0) &&
           (a->family != CL_ADDR_DNS || a->dns_version == b->dns_version);
}

static void s_check_error(const char *err)
{
    if (err[0] == '\0' || strchr(err, '\n') != NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[512], out[CL_ADDR_TEXT_MAX + 1], endpoint[CL_ADDR_TEXT_MAX];

    cl_addr_t a, b;
    err[0] = '\0';
    if (cl_addr_parse(text, &a, err, sizeof err) == 0) {
        if (cl_addr_format(&a, out, sizeof out) != 0)
            abort();
        if (cl_addr_parse(out, &b, err, sizeof err) != 0 || !s_same(&a, &b))
            abort();
        if (cl_addr_endpoint(&a, endpoint, sizeof endpoint) != 0)
            abort();
    } else {
        s_check_error(err);
    }

    for (int require_key = 0; require_key < 2; require_key++) {
        cl_addr_t *list = NULL;
        size_t n = 0;
        err[0] = '\0';
        if (cl_addr_parse_list(text, require_key, &list, &n, err, sizeof err) == 0) {
            if ((n == 0) != (list == NULL) || n > CL_ADDR_LIST_MAX)
                abort();
            for (size_t i = 0; i < n; i++) {
                if (require_key && (!list[i].has_key || list[i].port == 0))
                    abort();
                if (cl_addr_format(&list[i], out, sizeof out) != 0)
                    abort();
            }
            free(list);
        } else {
            s_check_error(err);
        }
    }

    uint8_t key[32];
    char id[CL_PEER_ID_MAX];
    if (cl_base58_decode(text, key, sizeof key) == 0) {
        if (cl_base58_encode(key, sizeof key, id, sizeof id) != 0 || strcmp(id, text) != 0)
            abort();
    }
    free(text);
    return 0;
}
