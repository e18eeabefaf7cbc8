/*  process.c - process-level conventions of the Open MPI face.

    Fatal errors and MPI_Abort end this peer only (the rest of the swarm
    sees a departure), with the exit status Open MPI 4.1 gives: the error
    class for a fatal error, the error code for MPI_Abort.  Both print the
    banner Open MPI users know, reworded where the swarm behaves
    differently (only this peer ends).  The foreign-ABI check stops a
    program built for MPICH that preloaded this face by mistake, and
    reserves the address ranges of run-time handles so that a failure to
    do so stops MPI_Init cleanly instead of surfacing later.
*/
#define _GNU_SOURCE
#include "abi.h"

#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Writes one formatted chunk to stderr with a single write(), so that the
   lines of several peers sharing a terminal do not interleave. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

/* "[host:pid]", the prefix of Open MPI's error banner. */
static void banner_prefix(char *out, size_t len)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    char *dot = strchr(host, '.');
    if (dot != NULL)
        *dot = '\0';
    snprintf(out, len, "[%s:%d]", host, (int)getpid());
}

void cli_abi_fatal(int code, const char *call, const char *comm_name, const char *line)
{
    /* Error_class / Error_string below report through the error handler
       themselves; a failure there must not recurse into this function, and
       a second thread failing at the same time just ends the process. */
    static int in_fatal;
    if (__atomic_fetch_add(&in_fatal, 1, __ATOMIC_SEQ_CST) != 0) {
        if (line != NULL) /* NULL: the cause was already reported */
            say("[collab] %s\n", line);
        _exit(code > 0 && (code & 0xff) != 0 ? code & 0xff : 1);
    }
    int cls = code;
    char desc[MPI_MAX_ERROR_STRING] = "";
    int dlen = 0;
    if (PMPI_Error_class(code, &cls) != MPI_SUCCESS)
        cls = code;
    if (PMPI_Error_string(code, desc, &dlen) != MPI_SUCCESS || dlen <= 0)
        snprintf(desc, sizeof desc, "error code %d", code);
    char pre[300];
    banner_prefix(pre, sizeof pre);
    if (call == NULL || *call == '\0')
        call = "an MPI call";
    if (comm_name == NULL || *comm_name == '\0')
        comm_name = "MPI_COMM_WORLD";
    int status = cls & 0xff;
    if (status == 0)
        status = 1; /* an error never exits 0, whatever the code's class */
    char who[64] = "before MPI_Init completed";
    if (collab_initialized())
        snprintf(who, sizeof who, "rank %d", collab_world_rank());
    if (line != NULL) /* NULL: the cause was already reported (MPI_Init's network errors) */
        say("[collab] %s\n", line);
    say("%s *** An error occurred in %s\n"
        "%s *** reported by process [%s]\n"
        "%s *** on communicator %s\n"
        "%s *** %s\n"
        "%s *** MPI_ERRORS_ARE_FATAL (this peer leaves the swarm and exits with status %d;\n"
        "%s ***    the other peers go on without it)\n",
        pre, call, pre, who, pre, comm_name, pre, desc, pre, status, pre);
    if (collab_initialized() && !collab_finalized())
        collab_abort(status);
    _exit(status);
}

void cli_abi_abort(int errorcode, const char *comm_name, int rank)
{
    say("--------------------------------------------------------------------------\n"
        "MPI_ABORT was invoked on rank %d in communicator %s\n"
        "with errorcode %d.\n"
        "\n"
        "NOTE: in a swarm, MPI_ABORT ends this peer only; the other peers see it\n"
        "leave and go on.\n"
        "--------------------------------------------------------------------------\n",
        rank, comm_name != NULL ? comm_name : "MPI_COMM_WORLD", errorcode);
    if (collab_initialized() && !collab_finalized())
        collab_abort(errorcode);
    _exit(errorcode);
}

/* ---------------------------------------------------------------------- */
/* Foreign-ABI check. */

typedef struct {
    const char *found; /* basename of an MPICH-ABI library, or NULL */
} foreign_scan_t;

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    foreign_scan_t *scan = data;
    const char *path = info->dlpi_name;
    if (path == NULL || *path == '\0')
        return 0;
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    static const char *const mpich_libs[] = {"libmpich.so.12", "libmpi.so.12"};
    for (size_t i = 0; i < sizeof mpich_libs / sizeof mpich_libs[0]; i++) {
        size_t n = strlen(mpich_libs[i]);
        if (strncmp(base, mpich_libs[i], n) == 0 && (base[n] == '\0' || base[n] == '.')) {
            scan->found = mpich_libs[i];
            return 1;
        }
    }
    return 0;
}

const char *cli_abi_foreign_check(void)
{
    static char msg[512];
    foreign_scan_t scan = {NULL};
    dl_iterate_phdr(scan_object, &scan);
    if (scan.found != NULL) {
        snprintf(msg, sizeof msg,
                 "this program was built for the MPICH ABI (it loaded %s) but the Open MPI "
                 "face libmpicollab-ompi.so is preloaded; preload libmpicollab.so instead",
                 scan.found);
        return msg;
    }
    if (cl_ompi_dyn_reserve() != 0) {
        snprintf(msg, sizeof msg,
                 "cannot reserve address space for MPI handles (%s); raise the "
                 "address-space limit (ulimit -v)",
                 strerror(errno));
        return msg;
    }
    return NULL;
}
