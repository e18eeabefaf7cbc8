/*  cl_status_test.c - selftest of collab_strerror and collab_version_string. */
#include "mpi_collab.h"
#include "util/cl_selftest.h"

int main(void)
{
    /* Every status code has its own text; anything else is "unknown". */
    const char *texts[32] = {0};
    for (int code = 0; code >= COLLAB_ERR_LEFT; code--) {
        const char *t = collab_strerror(code);
        CL_CHECK(t != NULL && t[0] != '\0');
        CL_CHECK(strstr(t, "unknown") == NULL);
        for (int k = 0; k < -code; k++)
            CL_CHECK(strcmp(texts[k], t) != 0);
        texts[-code] = t;
    }
    CL_CHECK_STREQ(collab_strerror(COLLAB_OK), "success");
    CL_CHECK_STREQ(collab_strerror(COLLAB_ERR_NO_MEM), "out of memory");
    CL_CHECK_STREQ(collab_strerror(1), "unknown status code");
    CL_CHECK_STREQ(collab_strerror(COLLAB_ERR_LEFT - 1), "unknown status code");
    CL_CHECK_STREQ(collab_strerror(-2147483647 - 1), "unknown status code");

    const char *v = collab_version_string();
    CL_CHECK(v != NULL && strncmp(v, "mpicollab ", 10) == 0);
    CL_CHECK_CONTAINS(v, COLLAB_TEST_PROJECT_VERSION);
    CL_CHECK_CONTAINS(v, "libzmq ");
    CL_CHECK_CONTAINS(v, "czmq ");
    CL_CHECK_CONTAINS(v, "libsodium ");
    CL_CHECK(collab_version_string() == v); /* static */
    return cl_selftest_end("cl_status_test");
}
