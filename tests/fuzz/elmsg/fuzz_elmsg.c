/*  fuzz_elmsg.c - libFuzzer target for the decoder of ELASTIC messages
    (src/engine/cl_elmsg.c): admission, state sync, probes.

    Input: the first byte is the message type (the header's `sub`), the
    rest the body.  A body that decodes must encode back to the same bytes
    (the decoder accepts exactly what the encoder writes).  The seed corpus
    is written by `cl_elmsg_test --write-corpus DIR`.
*/
#include "engine/cl_elmsg.h"
#include "mpi_collab.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    cl_elmsg_t m;
    int rc = cl_elmsg_decode(data[0], size > 1 ? data + 1 : NULL, size - 1, &m);
    if (rc == COLLAB_OK) {
        uint8_t *re = NULL;
        size_t rl = 0;
        if (cl_elmsg_encode(&m, &re, &rl) != COLLAB_OK || rl != size - 1 ||
            (rl > 0 && memcmp(re, data + 1, rl) != 0))
            abort();
        free(re);
        cl_elmsg_clear(&m);
    } else if (rc != COLLAB_ERR_ARG && rc != COLLAB_ERR_NO_MEM) {
        abort();
    }
    return 0;
}
