/*  fuzz_wire.c - libFuzzer target for the wire decoder (src/engine/cl_wire.c).

    Input layout: the first byte chooses where the header frame ends (its
    length is the byte's value when it is below 128, else exactly 64, the
    valid size, so most inputs reach the body decoders); the header frame
    follows, and every remaining byte is the body frame.  The length field
    is patched to the body size for half of the inputs (chosen by the low
    bit of byte 0) so the fuzzer spends its time inside the body decoders.
    A message that decodes must re-encode to the same bytes.
*/
#include "engine/cl_wire.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t hlen = data[0] < 128 ? data[0] : CL_WIRE_HDR_SIZE;
    bool patch = (data[0] & 1u) != 0 || data[0] >= 128;
    data++;
    size--;
    if (hlen > size)
        hlen = size;
    uint8_t hdr[256];
    memcpy(hdr, data, hlen);
    const uint8_t *body = data + hlen;
    size_t blen = size - hlen;
    if (patch && hlen == CL_WIRE_HDR_SIZE) {
        for (int i = 0; i < 8; i++)
            hdr[56 + i] = (uint8_t)((uint64_t)blen >> (8 * i));
    }
    cl_wire_msg_t m;
    int rc = cl_wire_decode(hdr, hlen, blen > 0 ? body : NULL, blen, &m);
    if (rc == CL_WIRE_OK) {
        uint8_t *re = NULL;
        size_t rl = 0;
        if (cl_wire_encode_body(&m, &re, &rl) != CL_WIRE_OK)
            abort();
        if (rl != blen || (rl > 0 && memcmp(re, body, rl) != 0))
            abort();
        free(re);
        uint8_t h2[CL_WIRE_HDR_SIZE];
        cl_wire_hdr_encode(&m.hdr, h2);
        if (memcmp(h2, hdr, CL_WIRE_HDR_SIZE) != 0)
            abort();
    }
    cl_wire_msg_clear(&m);
    return 0;
}
