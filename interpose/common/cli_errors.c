/*  cli_errors.c - error classes, error strings and error handlers.

    Every error the face reports goes through cli_err(): it builds one line
    naming the call, the argument and the problem, and invokes the error
    handler of the call's communicator (MPI_COMM_WORLD's for a bad handle
    or before MPI_Init).  MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT print
    the line and end this peer with the ABI's exit convention
    (cli_abi_fatal); MPI_ERRORS_RETURN returns the code; a user handler is
    called with the communicator and the code, and the call then returns
    the code.  Error codes are the ABI's error classes, plus the codes and
    classes made by MPI_Add_error_code/_class, which start at
    CLI_ABI_FIRST_USER_CLASS and share one counter.  Core statuses become
    classes only here (cli_class_of_status).
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cli_errh_t cli_errh_predef[CLI_ERRH_PREDEF_COUNT] = {
    [CLI_ERRH_FATAL] = {.predef = CLI_ERRH_FATAL, .index = -1, .refs = 1},
    [CLI_ERRH_RETURN] = {.predef = CLI_ERRH_RETURN, .index = -1, .refs = 1},
    [CLI_ERRH_ABORT] = {.predef = CLI_ERRH_ABORT, .index = -1, .refs = 1},
};

/* ---------------------------------------------------------------------- */
/* Predefined classes of this ABI. */

typedef struct {
    int cls;
    const char *name;
    const char *desc;
} cli_class_desc_t;

#define C_(n, d)                                                                                   \
    {                                                                                              \
        n, #n, d                                                                                   \
    }
static const cli_class_desc_t cli_classes[] = {
    C_(MPI_SUCCESS, "no errors"),
    C_(MPI_ERR_BUFFER, "invalid buffer pointer"),
    C_(MPI_ERR_COUNT, "invalid count argument"),
    C_(MPI_ERR_TYPE, "invalid datatype"),
    C_(MPI_ERR_TAG, "invalid tag"),
    C_(MPI_ERR_COMM, "invalid communicator"),
    C_(MPI_ERR_RANK, "invalid rank"),
    C_(MPI_ERR_REQUEST, "invalid request"),
    C_(MPI_ERR_ROOT, "invalid root"),
    C_(MPI_ERR_GROUP, "invalid group"),
    C_(MPI_ERR_OP, "invalid reduce operation"),
    C_(MPI_ERR_TOPOLOGY, "invalid communicator topology"),
    C_(MPI_ERR_DIMS, "invalid dimension argument"),
    C_(MPI_ERR_ARG, "invalid argument of some other kind"),
    C_(MPI_ERR_UNKNOWN, "unknown error"),
    C_(MPI_ERR_TRUNCATE, "message truncated"),
    C_(MPI_ERR_OTHER, "known error not in this list"),
    C_(MPI_ERR_INTERN, "internal error"),
    C_(MPI_ERR_IN_STATUS, "error code is in status"),
    C_(MPI_ERR_PENDING, "pending request"),
    C_(MPI_ERR_ACCESS, "permission denied"),
    C_(MPI_ERR_AMODE, "invalid amode argument"),
    C_(MPI_ERR_ASSERT, "invalid assert argument"),
    C_(MPI_ERR_BAD_FILE, "invalid file name"),
    C_(MPI_ERR_BASE, "invalid base argument"),
    C_(MPI_ERR_CONVERSION, "error in data conversion"),
    C_(MPI_ERR_DISP, "invalid displacement argument"),
    C_(MPI_ERR_DUP_DATAREP, "data representation identifier already registered"),
    C_(MPI_ERR_FILE_EXISTS, "file exists"),
    C_(MPI_ERR_FILE_IN_USE, "file operation could not be completed: file in use"),
    C_(MPI_ERR_FILE, "invalid file handle"),
    C_(MPI_ERR_INFO_KEY, "invalid info key"),
    C_(MPI_ERR_INFO_NOKEY, "info key not defined"),
    C_(MPI_ERR_INFO_VALUE, "invalid info value"),
    C_(MPI_ERR_INFO, "invalid info object"),
    C_(MPI_ERR_IO, "input/output error"),
    C_(MPI_ERR_KEYVAL, "invalid attribute key"),
    C_(MPI_ERR_LOCKTYPE, "invalid locktype argument"),
    C_(MPI_ERR_NAME, "invalid service name"),
    C_(MPI_ERR_NO_MEM, "out of memory"),
    C_(MPI_ERR_NOT_SAME, "collective argument not identical on all processes"),
    C_(MPI_ERR_NO_SPACE, "not enough space"),
    C_(MPI_ERR_NO_SUCH_FILE, "file does not exist"),
    C_(MPI_ERR_PORT, "invalid port name"),
    C_(MPI_ERR_QUOTA, "quota exceeded"),
    C_(MPI_ERR_READ_ONLY, "read-only file or file system"),
    C_(MPI_ERR_RMA_CONFLICT, "conflicting accesses to window"),
    C_(MPI_ERR_RMA_SYNC, "erroneous RMA synchronization"),
    C_(MPI_ERR_SERVICE, "invalid service name"),
    C_(MPI_ERR_SIZE, "invalid size argument"),
    C_(MPI_ERR_SPAWN, "could not spawn processes"),
    C_(MPI_ERR_UNSUPPORTED_DATAREP, "unsupported data representation"),
    C_(MPI_ERR_UNSUPPORTED_OPERATION, "operation not supported"),
    C_(MPI_ERR_WIN, "invalid window"),
    C_(MPI_ERR_RMA_RANGE, "target memory is outside the window"),
    C_(MPI_ERR_RMA_ATTACH, "memory cannot be attached"),
    C_(MPI_ERR_RMA_FLAVOR, "passed window has the wrong flavor"),
    C_(MPI_ERR_RMA_SHARED, "memory cannot be shared"),
#ifdef MPI_ERR_SESSION
    C_(MPI_ERR_SESSION, "invalid session"),
#endif
#ifdef MPI_ERR_PROC_ABORTED
    C_(MPI_ERR_PROC_ABORTED, "operation with an aborted process"),
#endif
#ifdef MPI_ERR_VALUE_TOO_LARGE
    C_(MPI_ERR_VALUE_TOO_LARGE, "value is too large to store"),
#endif
    {CLI_ABI_ERR_PROC_FAILED, "MPIX_ERR_PROC_FAILED", "a peer taking part in the operation failed"},
    {CLI_ABI_ERR_REVOKED, "MPIX_ERR_REVOKED", "the communicator was revoked"},
#ifdef MPIX_ERR_PROC_FAILED_PENDING
    C_(MPIX_ERR_PROC_FAILED_PENDING, "a failure left the request pending"),
#endif
#ifdef MPIX_ERR_EAGAIN
    C_(MPIX_ERR_EAGAIN, "operation could not be issued"),
#endif
#ifdef MPIX_ERR_NOREQ
    C_(MPIX_ERR_NOREQ, "cannot allocate request"),
#endif
    C_(MPI_T_ERR_MEMORY, "out of memory (tool interface)"),
    C_(MPI_T_ERR_NOT_INITIALIZED, "tool interface not initialized"),
    C_(MPI_T_ERR_CANNOT_INIT, "tool interface cannot be initialized"),
    C_(MPI_T_ERR_INVALID_INDEX, "invalid index (tool interface)"),
    C_(MPI_T_ERR_INVALID_ITEM, "invalid item (tool interface)"),
    C_(MPI_T_ERR_INVALID_HANDLE, "invalid handle (tool interface)"),
    C_(MPI_T_ERR_OUT_OF_HANDLES, "out of handles (tool interface)"),
    C_(MPI_T_ERR_OUT_OF_SESSIONS, "out of sessions (tool interface)"),
    C_(MPI_T_ERR_INVALID_SESSION, "invalid session (tool interface)"),
    C_(MPI_T_ERR_CVAR_SET_NOT_NOW, "control variable cannot be set now"),
    C_(MPI_T_ERR_CVAR_SET_NEVER, "control variable cannot be set"),
    C_(MPI_T_ERR_PVAR_NO_STARTSTOP, "performance variable cannot be started or stopped"),
    C_(MPI_T_ERR_PVAR_NO_WRITE, "performance variable cannot be written"),
    C_(MPI_T_ERR_PVAR_NO_ATOMIC, "performance variable cannot be read and written atomically"),
#ifdef MPI_T_ERR_INVALID_NAME
    C_(MPI_T_ERR_INVALID_NAME, "invalid name (tool interface)"),
#endif
#ifdef MPI_T_ERR_INVALID
    C_(MPI_T_ERR_INVALID, "invalid use of the tool interface"),
#endif
#ifdef MPI_T_ERR_NOT_SUPPORTED
    C_(MPI_T_ERR_NOT_SUPPORTED, "not supported (tool interface)"),
#endif
};
#undef C_

static const cli_class_desc_t *cli_class_find(int cls)
{
    for (size_t i = 0; i < sizeof cli_classes / sizeof cli_classes[0]; i++)
        if (cli_classes[i].cls == cls)
            return &cli_classes[i];
    return NULL;
}

/* Classes and codes added by the program. */
typedef struct {
    int code;
    int cls; /* == code for a class */
    int deleted;
    char *str; /* owned, or NULL */
} cli_ecode_t;

static cli_ecode_t *cli_ecodes;
static int cli_necodes, cli_ecap;
static int cli_next_code = CLI_ABI_FIRST_USER_CLASS;
int cli_lastusedcode = CLI_ABI_FIRST_USER_CLASS - 1; /* MPI_LASTUSEDCODE attribute */

static cli_ecode_t *cli_ecode_find(int code) /* cli.lock held */
{
    for (int i = 0; i < cli_necodes; i++)
        if (cli_ecodes[i].code == code && !cli_ecodes[i].deleted)
            return &cli_ecodes[i];
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Logging and dispatch. */

void cli_log_line(const char *fmt, ...)
{
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "[collab] ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof buf - 2)
        len = sizeof buf - 2;
    buf[len++] = '\n';
    ssize_t w = write(2, buf, len);
    (void)w;
}

static const char *cli_class_name(int cls)
{
    const cli_class_desc_t *d = cli_class_find(cls);
    return d ? d->name : "user-defined error";
}

/* Invokes the handler of call->comm (or world) for code; msg names the
   argument and the problem. */
static int cli_dispatch(cli_call_t *call, int code, const char *msg)
{
    cli_comm_t *c = call->comm ? call->comm : &cli_world;
    cli_lock();
    cli_errh_t *e = c->errh;
    cli_errh_ref(e);
    cli_unlock();
    int predef = e->predef;
    MPI_Comm_errhandler_function *fn = e->fn;
    if (predef == CLI_ERRH_FATAL || predef == CLI_ERRH_ABORT) {
        char line[1024];
        int cls = code;
        if (code >= CLI_ABI_FIRST_USER_CLASS) {
            cli_lock();
            cli_ecode_t *ec = cli_ecode_find(code);
            cls = ec ? ec->cls : code;
            cli_unlock();
        }
        char comm_name[MPI_MAX_OBJECT_NAME + 16];
        cli_lock();
        if (c->name[0] != '\0')
            snprintf(comm_name, sizeof comm_name, "%s", c->name);
        else
            snprintf(comm_name, sizeof comm_name, "communicator %d", c->index);
        cli_unlock();
        if (collab_initialized() && !collab_finalized())
            snprintf(line, sizeof line, "rank %d: fatal error in %s: %s (%s)", collab_world_rank(),
                     call->name, msg, cli_class_name(cls));
        else
            snprintf(line, sizeof line, "fatal error in %s: %s (%s)", call->name, msg,
                     cli_class_name(cls));
        cli_abi_fatal(code, call->name, comm_name, line);
    }
    if (predef < 0 && fn != NULL) {
        MPI_Comm h = cli_comm_handle(c);
        int cc = code;
        fn(&h, &cc);
    }
    cli_lock();
    cli_errh_unref(e);
    cli_unlock();
    return code;
}

int cli_err(cli_call_t *call, int errclass, const char *arg, const char *fmt, ...)
{
    char detail[768], msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (arg != NULL)
        snprintf(msg, sizeof msg, "argument %s: %s", arg, detail);
    else
        snprintf(msg, sizeof msg, "%s", detail);
    return cli_dispatch(call, errclass, msg);
}

int cli_class_of_status(int status)
{
    switch (status) {
    case COLLAB_OK:
        return MPI_SUCCESS;
    case COLLAB_ERR_ARG:
        return MPI_ERR_ARG;
    case COLLAB_ERR_NO_MEM:
        return MPI_ERR_NO_MEM;
    case COLLAB_ERR_PROC_FAILED:
        return CLI_ABI_ERR_PROC_FAILED;
    case COLLAB_ERR_REVOKED:
        return CLI_ABI_ERR_REVOKED;
    case COLLAB_ERR_CONFIG:
        return MPI_ERR_OTHER;
    case COLLAB_ERR_NOT_INIT:
        return MPI_ERR_OTHER;
    case COLLAB_ERR_INTERNAL:
        return MPI_ERR_INTERN;
    case COLLAB_ERR_UNSUPPORTED:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    case COLLAB_ERR_TRUNCATE:
        return MPI_ERR_TRUNCATE;
    case COLLAB_ERR_RANK:
        return MPI_ERR_RANK;
    case COLLAB_ERR_ROOT:
        return MPI_ERR_ROOT;
    case COLLAB_ERR_COUNT:
        return MPI_ERR_COUNT;
    case COLLAB_ERR_TYPE:
        return MPI_ERR_TYPE;
    case COLLAB_ERR_OP:
        return MPI_ERR_OP;
    case COLLAB_ERR_TAG:
        return MPI_ERR_TAG;
    case COLLAB_ERR_COMM:
        return MPI_ERR_COMM;
    case COLLAB_ERR_REQUEST:
        return MPI_ERR_REQUEST;
    case COLLAB_ERR_NETWORK:
        return MPI_ERR_OTHER;
    case COLLAB_ERR_TIMEOUT:
    case COLLAB_ERR_MISMATCH:
    case COLLAB_ERR_LEFT:
        return MPI_ERR_OTHER;
    default:
        return MPI_ERR_INTERN;
    }
}

int cli_err_core(cli_call_t *call, int status, const char *what)
{
    const char *s = collab_strerror(status);
    return cli_err(call, cli_class_of_status(status), NULL, "%s failed: %s", what,
                   s ? s : "unknown status");
}

/* Unsupported calls: each name is logged once even when the handler
   returns, since programs often ignore return codes. */
static int cli_unsupported_seen(const char *name)
{
    static const char *seen[128];
    static int nseen;
    int found = 0;
    cli_lock();
    for (int i = 0; i < nseen; i++)
        if (seen[i] == name || strcmp(seen[i], name) == 0)
            found = 1;
    if (!found && nseen < 128)
        seen[nseen++] = name;
    cli_unlock();
    return found;
}

int cli_unsupported(cli_call_t *call, MPI_Comm comm, const char *reason)
{
    int why = 0;
    cli_comm_t *c = cli_comm_lookup(comm, &why);
    if (c != NULL)
        call->comm = c;
    int rc = cli_err(call, MPI_ERR_UNSUPPORTED_OPERATION, NULL, "not supported by mpicollab (%s)",
                     reason);
    /* The handler returned (a fatal one prints its own line). */
    if (!cli_unsupported_seen(call->name))
        cli_log_line("%s is not supported by mpicollab (%s)", call->name, reason);
    return rc;
}

int cli_unsupported_file(cli_call_t *call, const char *reason)
{
    /* Files use their own handler, MPI_ERRORS_RETURN by default; since no
       file can be opened, that is the handler in force. */
    if (!cli_unsupported_seen(call->name))
        cli_log_line("%s is not supported by mpicollab (%s)", call->name, reason);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int cli_unsupported_tool(cli_call_t *call, const char *name)
{
    cli_call_init(call, name);
    return CLI_ABI_T_ERR_NOT_SUPPORTED;
}

/* ---------------------------------------------------------------------- */
/* Error handler objects. */

void cli_errh_ref(cli_errh_t *e)
{
    e->refs++;
}

void cli_errh_unref(cli_errh_t *e)
{
    if (e->predef >= 0)
        return;
    if (--e->refs == 0) {
        cli_table_remove(&cli.errhs, e->index);
        free(e);
    }
}

int cli_impl_Comm_create_errhandler(cli_call_t *call, MPI_Comm_errhandler_function *fn,
                                    MPI_Errhandler *errhandler)
{
    cli_errh_t *e = calloc(1, sizeof *e);
    if (e == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    e->predef = -1;
    e->refs = 1;
    e->fn = fn;
    if (cli_errh_register(e, errhandler) != MPI_SUCCESS) {
        free(e);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of error handler handles");
    }
    return MPI_SUCCESS;
}

int cli_impl_Errhandler_create(cli_call_t *call, MPI_Comm_errhandler_function *fn,
                               MPI_Errhandler *errhandler)
{
    return cli_impl_Comm_create_errhandler(call, fn, errhandler);
}

int cli_impl_Comm_set_errhandler(cli_call_t *call, MPI_Comm comm, MPI_Errhandler errhandler)
{
    (void)comm;
    int why = 0;
    cli_errh_t *e = cli_errh_lookup(errhandler, &why);
    if (e == NULL)
        return cli_err(call, MPI_ERR_ARG, "errhandler", "%s is not a valid error handler",
                       why == CLI_H_NULL ? "MPI_ERRHANDLER_NULL" : "the handle");
    cli_lock();
    cli_errh_t *old = call->comm->errh;
    cli_errh_ref(e);
    call->comm->errh = e;
    cli_errh_unref(old);
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Errhandler_set(cli_call_t *call, MPI_Comm comm, MPI_Errhandler errhandler)
{
    return cli_impl_Comm_set_errhandler(call, comm, errhandler);
}

int cli_impl_Comm_get_errhandler(cli_call_t *call, MPI_Comm comm, MPI_Errhandler *errhandler)
{
    (void)comm;
    cli_lock();
    cli_errh_t *e = call->comm->errh;
    cli_errh_ref(e); /* the program must free the handle it gets */
    cli_unlock();
    *errhandler = cli_errh_handle(e);
    return MPI_SUCCESS;
}

int cli_impl_Errhandler_get(cli_call_t *call, MPI_Comm comm, MPI_Errhandler *errhandler)
{
    return cli_impl_Comm_get_errhandler(call, comm, errhandler);
}

int cli_impl_Errhandler_free(cli_call_t *call, MPI_Errhandler *errhandler)
{
    int why = 0;
    cli_errh_t *e = cli_errh_lookup(*errhandler, &why);
    if (e == NULL)
        return cli_err(call, MPI_ERR_ARG, "errhandler", "%s is not a valid error handler",
                       why == CLI_H_NULL ? "MPI_ERRHANDLER_NULL" : "the handle");
    cli_lock();
    cli_errh_unref(e);
    cli_unlock();
    *errhandler = cli_abi_errh_null();
    return MPI_SUCCESS;
}

int cli_impl_Comm_call_errhandler(cli_call_t *call, MPI_Comm comm, int errorcode)
{
    (void)comm;
    cli_dispatch(call, errorcode, "error raised by MPI_Comm_call_errhandler");
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Classes, codes, strings. */

int cli_impl_Error_class(cli_call_t *call, int errorcode, int *errorclass)
{
    if (errorclass == NULL)
        return cli_err(call, MPI_ERR_ARG, "errorclass", "must not be NULL");
    if (cli_class_find(errorcode) != NULL) {
        *errorclass = errorcode;
        return MPI_SUCCESS;
    }
    cli_lock();
    cli_ecode_t *ec = cli_ecode_find(errorcode);
    int cls = ec ? ec->cls : -1;
    cli_unlock();
    if (cls < 0)
        return cli_err(call, MPI_ERR_ARG, "errorcode", "%d is not a valid error code", errorcode);
    *errorclass = cls;
    return MPI_SUCCESS;
}

int cli_impl_Error_string(cli_call_t *call, int errorcode, char *string, int *resultlen)
{
    if (string == NULL || resultlen == NULL)
        return cli_err(call, MPI_ERR_ARG, string ? "resultlen" : "string", "must not be NULL");
    const cli_class_desc_t *d = cli_class_find(errorcode);
    int n;
    if (d != NULL) {
        n = snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", d->name, d->desc);
    } else {
        cli_lock();
        cli_ecode_t *ec = cli_ecode_find(errorcode);
        n = ec ? snprintf(string, MPI_MAX_ERROR_STRING, "%s", ec->str ? ec->str : "") : -1;
        cli_unlock();
        if (n < 0)
            return cli_err(call, MPI_ERR_ARG, "errorcode", "%d is not a valid error code",
                           errorcode);
    }
    *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
}

static int cli_add_code(cli_call_t *call, int cls, int *out)
{
    cli_lock();
    if (cli_necodes == cli_ecap) {
        int ncap = cli_ecap ? cli_ecap * 2 : 16;
        cli_ecode_t *n = realloc(cli_ecodes, (size_t)ncap * sizeof *n);
        if (n == NULL) {
            cli_unlock();
            return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
        }
        cli_ecodes = n;
        cli_ecap = ncap;
    }
    int code = cli_next_code++;
    cli_ecodes[cli_necodes++] = (cli_ecode_t){.code = code, .cls = cls < 0 ? code : cls};
    cli_lastusedcode = code;
    cli_unlock();
    *out = code;
    return MPI_SUCCESS;
}

int cli_impl_Add_error_class(cli_call_t *call, int *errorclass)
{
    return cli_add_code(call, -1, errorclass);
}

int cli_impl_Add_error_code(cli_call_t *call, int errorclass, int *errorcode)
{
    cli_lock();
    cli_ecode_t *ec = cli_ecode_find(errorclass);
    int ok = ec != NULL && ec->cls == ec->code;
    cli_unlock();
    if (!ok && cli_class_find(errorclass) == NULL)
        return cli_err(call, MPI_ERR_ARG, "errorclass", "%d is not a valid error class",
                       errorclass);
    return cli_add_code(call, errorclass, errorcode);
}

int cli_impl_Add_error_string(cli_call_t *call, int errorcode, const char *string)
{
    if (strlen(string) >= MPI_MAX_ERROR_STRING)
        return cli_err(call, MPI_ERR_ARG, "string", "longer than MPI_MAX_ERROR_STRING - 1");
    char *copy = strdup(string);
    if (copy == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    cli_lock();
    cli_ecode_t *ec = cli_ecode_find(errorcode);
    if (ec != NULL) {
        free(ec->str);
        ec->str = copy;
    }
    cli_unlock();
    if (ec == NULL) {
        free(copy);
        return cli_err(call, MPI_ERR_ARG, "errorcode",
                       "%d is not a code or class added by MPI_Add_error_code/_class", errorcode);
    }
    return MPI_SUCCESS;
}

static int cli_delete_code(cli_call_t *call, int code, int want_class, int only_string)
{
    cli_lock();
    cli_ecode_t *ec = cli_ecode_find(code);
    int ok = ec != NULL && (only_string || (ec->cls == ec->code) == want_class);
    if (ok) {
        free(ec->str);
        ec->str = NULL;
        if (!only_string)
            ec->deleted = 1;
    }
    cli_unlock();
    if (!ok)
        return cli_err(call, MPI_ERR_ARG, NULL, "%d is not a %s added by the program", code,
                       want_class ? "class" : "code");
    return MPI_SUCCESS;
}

int cli_impl_Delete_error_class(cli_call_t *call, int errorclass)
{
    return cli_delete_code(call, errorclass, 1, 0);
}

int cli_impl_Delete_error_code(cli_call_t *call, int errorcode)
{
    return cli_delete_code(call, errorcode, 0, 0);
}

int cli_impl_Delete_error_string(cli_call_t *call, int errorcode)
{
    return cli_delete_code(call, errorcode, 0, 1);
}
