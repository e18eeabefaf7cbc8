/*  cli_p2p.c - point-to-point communication.

    Messages move count * extent bytes through the core (collab_send /
    collab_recv), which works between live ranks and fails with
    COLLAB_ERR_PROC_FAILED (MPIX_ERR_PROC_FAILED) instead of hanging when
    the peer is gone.  MPI_PROC_NULL completes at once with the standard's
    status (source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0).  Ssend and
    Issend are synchronous (collab_ssend): they complete only once the
    receiver has matched the message, and a pending one can be cancelled.
    Rsend and Bsend are carried out as standard sends, which the core
    completes once the data is handed over (both modes only add
    constraints on the program).  MPI_Buffer_attach keeps the buffer for
    MPI_Buffer_detach but Bsend never needs it.
*/
#include "cli.h"
#include "cli_impl.h"
#include "cli_stage.h"

#include <stdlib.h>
#include <string.h>

static cli_type_t *cli_dt(MPI_Datatype h)
{
    int why = 0;
    return cli_type_lookup(h, &why);
}

static int cli_bytes(cli_call_t *call, MPI_Datatype dt, MPI_Count count, size_t *out)
{
    MPI_Count b = cli_type_bytes(cli_dt(dt), count);
    if (b < 0)
        return cli_err(call, MPI_ERR_COUNT, "count", "%lld elements overflow the message size",
                       (long long)count);
    *out = (size_t)b;
    return MPI_SUCCESS;
}

static int cli_src(int source)
{
    return source == MPI_ANY_SOURCE ? COLLAB_ANY_SOURCE : source;
}

static int cli_tag(int tag)
{
    return tag == MPI_ANY_TAG ? COLLAB_ANY_TAG : tag;
}

static const collab_status_info_t cli_procnull_info = {.source = MPI_PROC_NULL, .tag = MPI_ANY_TAG};

/* Core status info -> MPI status values (core reports its own wildcards). */
static void cli_info_to_mpi(collab_status_info_t *st)
{
    if (st->tag == COLLAB_ANY_TAG && st->bytes == 0 && st->source < 0)
        st->tag = MPI_ANY_TAG;
    if (st->source < 0)
        st->source = MPI_ANY_SOURCE;
}

/* ---------------------------------------------------------------------- */
/* Sends. */

static int cli_send_mode(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                         int dest, int tag, MPI_Request *request, int sync)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (dest == MPI_PROC_NULL) {
        if (request == NULL)
            return MPI_SUCCESS;
        return cli_req_done(call, CLI_REQ_SEND, call->comm, COLLAB_OK, NULL, request);
    }
    size_t bytes = 0;
    if ((rc = cli_bytes(call, datatype, count, &bytes)) != MPI_SUCCESS)
        return rc;
    cli_stage_t *stage = NULL; /* a non-contiguous type travels packed */
    if (cli_dt(datatype)->map != NULL && count > 0) {
        if ((stage = cli_stage_one(cli_dt(datatype), buf, count)) == NULL)
            return cli_stage_fail(call, "out of memory to pack the message");
        cli_stage_pack(stage);
        buf = stage->tmp;
        bytes = (size_t)stage->bytes;
    }
    collab_request_t *req = NULL;
    int st = (sync ? collab_ssend : collab_send)(call->comm->core, buf, bytes, dest, tag,
                                                 request ? &req : NULL);
    if (st != COLLAB_OK || request == NULL)
        cli_stage_destroy(&stage);
    if (st != COLLAB_OK)
        return cli_err_core(call, st, "sending");
    if (request == NULL)
        return MPI_SUCCESS;
    return cli_req_start(call, CLI_REQ_SEND, call->comm, req, stage ? cli_stage_finish : NULL,
                         stage, request);
}

static int cli_send(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                    int dest, int tag, MPI_Request *request)
{
    return cli_send_mode(call, buf, count, datatype, dest, tag, request, 0);
}

int cli_impl_Send_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                    int dest, int tag, MPI_Comm comm)
{
    (void)comm;
    return cli_send(call, buf, count, datatype, dest, tag, NULL);
}

int cli_impl_Ssend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm)
{
    (void)comm;
    return cli_send_mode(call, buf, count, datatype, dest, tag, NULL, 1);
}

int cli_impl_Rsend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm)
{
    (void)comm;
    return cli_send(call, buf, count, datatype, dest, tag, NULL);
}

int cli_impl_Bsend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm)
{
    (void)comm;
    return cli_send(call, buf, count, datatype, dest, tag, NULL);
}

int cli_impl_Isend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_send(call, buf, count, datatype, dest, tag, request);
}

int cli_impl_Issend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_send_mode(call, buf, count, datatype, dest, tag, request, 1);
}

int cli_impl_Irsend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_send(call, buf, count, datatype, dest, tag, request);
}

int cli_impl_Ibsend_c(cli_call_t *call, const void *buf, MPI_Count count, MPI_Datatype datatype,
                      int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_send(call, buf, count, datatype, dest, tag, request);
}

/* ---------------------------------------------------------------------- */
/* Receives. */

static int cli_recv(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                    int tag, MPI_Status *status, MPI_Request *request)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (source == MPI_PROC_NULL) {
        if (request != NULL)
            return cli_req_done(call, CLI_REQ_RECV, call->comm, COLLAB_OK, &cli_procnull_info,
                                request);
        cli_status_proc_null(status);
        return MPI_SUCCESS;
    }
    size_t bytes = 0;
    if ((rc = cli_bytes(call, datatype, count, &bytes)) != MPI_SUCCESS)
        return rc;
    cli_stage_t *stage = NULL; /* a non-contiguous type arrives packed */
    if (cli_dt(datatype)->map != NULL && count > 0) {
        if ((stage = cli_stage_one(cli_dt(datatype), buf, count)) == NULL)
            return cli_stage_fail(call, "out of memory to unpack the message");
        stage->unpack = 1;
        buf = stage->tmp;
        bytes = (size_t)stage->bytes;
    }
    collab_request_t *req = NULL;
    collab_status_info_t st = {.source = -1, .tag = -1};
    int s = collab_recv(call->comm->core, buf, bytes, cli_src(source), cli_tag(tag), &st,
                        request ? &req : NULL);
    if (request != NULL) {
        if (s != COLLAB_OK) {
            cli_stage_destroy(&stage);
            return cli_err_core(call, s, "receiving");
        }
        return cli_req_start(call, CLI_REQ_RECV, call->comm, req, stage ? cli_stage_finish : NULL,
                             stage, request);
    }
    if (stage != NULL) {
        if (s == COLLAB_OK)
            cli_stage_unpack_part(stage, (MPI_Count)st.bytes);
        cli_stage_destroy(&stage);
    }
    cli_info_to_mpi(&st);
    cli_status_fill(status, CLI_REQ_RECV, s, &st);
    if (s != COLLAB_OK)
        return cli_err_core(call, s, "receiving");
    return MPI_SUCCESS;
}

int cli_impl_Recv_c(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                    int tag, MPI_Comm comm, MPI_Status *status)
{
    (void)comm;
    return cli_recv(call, buf, count, datatype, source, tag, status, NULL);
}

int cli_impl_Irecv_c(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                     int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_recv(call, buf, count, datatype, source, tag, NULL, request);
}

/* ---------------------------------------------------------------------- */
/* Send-receive. */

/* The send half of an Isendrecv, completed by the receive's finish hook. */
typedef struct {
    MPI_Request send;
    void *tmp; /* Isendrecv_replace's copy of the outgoing data */
} cli_sendrecv_aux_t;

static int cli_sendrecv_finish(cli_req_t *r, int status, collab_status_info_t *st)
{
    (void)st;
    cli_sendrecv_aux_t *a = r->aux;
    if (a == NULL)
        return status;
    cli_call_t call;
    cli_call_init(&call, "MPI_Isendrecv");
    int why = 0;
    cli_req_t *s = cli_req_lookup(a->send, &why);
    int sst = COLLAB_OK;
    if (s != NULL) {
        if (!s->done && s->core != NULL)
            sst = collab_wait(&s->core, NULL);
        else
            sst = s->status;
        cli_lock();
        cli_table_remove(&cli.reqs, s->index);
        cli_unlock();
        free(s);
    }
    free(a->tmp);
    free(a);
    r->aux = NULL;
    return status != COLLAB_OK ? status : sst;
}

static int cli_sendrecv(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                        MPI_Status *status, MPI_Request *request, void *tmp)
{
    MPI_Request sreq = cli_abi_req_null();
    int rc = cli_send(call, sendbuf, sendcount, sendtype, dest, sendtag, &sreq);
    if (rc != MPI_SUCCESS) {
        free(tmp);
        return rc;
    }
    if (request != NULL) {
        cli_sendrecv_aux_t *a = calloc(1, sizeof *a);
        MPI_Request rreq = cli_abi_req_null();
        if (a == NULL) {
            cli_impl_Wait(call, &sreq, MPI_STATUS_IGNORE);
            free(tmp);
            return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
        }
        a->send = sreq;
        a->tmp = tmp;
        rc = cli_recv(call, recvbuf, recvcount, recvtype, source, recvtag, NULL, &rreq);
        if (rc != MPI_SUCCESS) {
            cli_impl_Wait(call, &sreq, MPI_STATUS_IGNORE);
            free(tmp);
            free(a);
            return rc;
        }
        int why = 0;
        cli_req_t *r = cli_req_lookup(rreq, &why);
        if (r->done) {
            collab_status_info_t st = r->st;
            r->aux = a;
            r->status = cli_sendrecv_finish(r, r->status, &st);
        } else {
            r->finish = cli_sendrecv_finish;
            r->aux = a;
        }
        *request = rreq;
        return MPI_SUCCESS;
    }
    rc = cli_recv(call, recvbuf, recvcount, recvtype, source, recvtag, status, NULL);
    int rc2 = cli_impl_Wait(call, &sreq, MPI_STATUS_IGNORE);
    free(tmp);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int cli_impl_Sendrecv_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                        MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                        MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                        MPI_Comm comm, MPI_Status *status)
{
    (void)comm;
    return cli_sendrecv(call, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                        recvtype, source, recvtag, status, NULL, NULL);
}

int cli_impl_Isendrecv_c(cli_call_t *call, const void *sendbuf, MPI_Count sendcount,
                         MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                         MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                         MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_sendrecv(call, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                        recvtype, source, recvtag, NULL, request, NULL);
}

static int cli_replace(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                       int dest, int sendtag, int source, int recvtag, MPI_Status *status,
                       MPI_Request *request)
{
    size_t bytes = 0;
    int rc = cli_bytes(call, datatype, count, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    void *tmp = malloc(bytes ? bytes : 1);
    if (tmp == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory for a %zu-byte copy", bytes);
    if (bytes > 0 && collab_memcpy(tmp, buf, bytes) != COLLAB_OK) { /* buf may be device memory */
        free(tmp);
        return cli_err(call, MPI_ERR_BUFFER, "buf", "cannot read the %zu-byte buffer", bytes);
    }
    return cli_sendrecv(call, tmp, count, datatype, dest, sendtag, buf, count, datatype, source,
                        recvtag, status, request, tmp);
}

int cli_impl_Sendrecv_replace_c(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                                int dest, int sendtag, int source, int recvtag, MPI_Comm comm,
                                MPI_Status *status)
{
    (void)comm;
    return cli_replace(call, buf, count, datatype, dest, sendtag, source, recvtag, status, NULL);
}

int cli_impl_Isendrecv_replace_c(cli_call_t *call, void *buf, MPI_Count count,
                                 MPI_Datatype datatype, int dest, int sendtag, int source,
                                 int recvtag, MPI_Comm comm, MPI_Request *request)
{
    (void)comm;
    return cli_replace(call, buf, count, datatype, dest, sendtag, source, recvtag, NULL, request);
}

/* ---------------------------------------------------------------------- */
/* Probes and matched receives. */

static int cli_probe(cli_call_t *call, int source, int tag, int blocking, int *flag,
                     MPI_Message *message, MPI_Status *status)
{
    int rc = cli_comm_check_live(call, call->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        if (message != NULL)
            *message = cli_abi_msg_predef(CLI_MSG_NO_PROC);
        cli_status_proc_null(status);
        return MPI_SUCCESS;
    }
    collab_status_info_t st = {.source = -1, .tag = -1};
    collab_message_t *msg = NULL;
    int s = collab_probe(call->comm->core, cli_src(source), cli_tag(tag), blocking, flag, &st,
                         message ? &msg : NULL);
    if (s != COLLAB_OK)
        return cli_err_core(call, s, "probing");
    if (!*flag)
        return MPI_SUCCESS;
    cli_info_to_mpi(&st);
    cli_status_fill(status, CLI_REQ_RECV, COLLAB_OK, &st);
    if (message != NULL) {
        cli_msg_t *m = calloc(1, sizeof *m);
        if (m == NULL || cli_msg_register(m, message) != MPI_SUCCESS) {
            free(m);
            collab_mrecv(&msg, NULL, 0, NULL); /* drop it rather than leak it */
            return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of message handles");
        }
        m->core = msg;
        m->comm = call->comm;
    }
    return MPI_SUCCESS;
}

int cli_impl_Probe(cli_call_t *call, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    (void)comm;
    int flag = 0;
    return cli_probe(call, source, tag, 1, &flag, NULL, status);
}

int cli_impl_Iprobe(cli_call_t *call, int source, int tag, MPI_Comm comm, int *flag,
                    MPI_Status *status)
{
    (void)comm;
    return cli_probe(call, source, tag, 0, flag, NULL, status);
}

int cli_impl_Mprobe(cli_call_t *call, int source, int tag, MPI_Comm comm, MPI_Message *message,
                    MPI_Status *status)
{
    (void)comm;
    int flag = 0;
    return cli_probe(call, source, tag, 1, &flag, message, status);
}

int cli_impl_Improbe(cli_call_t *call, int source, int tag, MPI_Comm comm, int *flag,
                     MPI_Message *message, MPI_Status *status)
{
    (void)comm;
    return cli_probe(call, source, tag, 0, flag, message, status);
}

static int cli_mrecv(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Message *message, MPI_Status *status, MPI_Request *request)
{
    int why = 0;
    cli_msg_t *m = cli_msg_lookup(*message, &why);
    if (m == NULL && why == CLI_H_PREDEF) { /* MPI_MESSAGE_NO_PROC */
        *message = cli_abi_msg_null();
        if (request != NULL)
            return cli_req_done(call, CLI_REQ_RECV, NULL, COLLAB_OK, &cli_procnull_info, request);
        cli_status_proc_null(status);
        return MPI_SUCCESS;
    }
    if (m == NULL)
        return cli_err(call, MPI_ERR_REQUEST, "message", "%s",
                       why == CLI_H_NULL ? "MPI_MESSAGE_NULL is not a matched message"
                                         : "not a message handle");
    call->comm = m->comm;
    size_t bytes = 0;
    int rc = cli_bytes(call, datatype, count, &bytes);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_stage_t *stage = NULL; /* a non-contiguous type arrives packed */
    if (cli_dt(datatype)->map != NULL && count > 0) {
        if ((stage = cli_stage_one(cli_dt(datatype), buf, count)) == NULL)
            return cli_stage_fail(call, "out of memory to unpack the message");
        buf = stage->tmp;
        bytes = (size_t)stage->bytes;
    }
    cli_lock();
    cli_table_remove(&cli.msgs, m->index);
    cli_unlock();
    collab_message_t *core = m->core;
    cli_comm_t *comm = m->comm;
    free(m);
    *message = cli_abi_msg_null();
    collab_status_info_t st = {.source = -1, .tag = -1};
    int s = collab_mrecv(&core, buf, bytes, &st);
    if (stage != NULL) {
        if (s == COLLAB_OK)
            cli_stage_unpack_part(stage, (MPI_Count)st.bytes);
        cli_stage_destroy(&stage);
    }
    cli_info_to_mpi(&st);
    /* The message is already here: Imrecv completes at once. */
    if (request != NULL) {
        rc = cli_req_done(call, CLI_REQ_RECV, comm, s, &st, request);
        return rc;
    }
    cli_status_fill(status, CLI_REQ_RECV, s, &st);
    if (s != COLLAB_OK)
        return cli_err_core(call, s, "receiving the matched message");
    return MPI_SUCCESS;
}

int cli_impl_Mrecv_c(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Message *message, MPI_Status *status)
{
    return cli_mrecv(call, buf, count, datatype, message, status, NULL);
}

int cli_impl_Imrecv_c(cli_call_t *call, void *buf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Message *message, MPI_Request *request)
{
    return cli_mrecv(call, buf, count, datatype, message, NULL, request);
}

/* ---------------------------------------------------------------------- */
/* Buffered-send buffer: kept only to be handed back. */

static void *cli_bsend_buf;
static MPI_Count cli_bsend_size;

int cli_impl_Buffer_attach_c(cli_call_t *call, void *buffer, MPI_Count size)
{
    if (size < 0)
        return cli_err(call, MPI_ERR_ARG, "size", "%lld is negative", (long long)size);
    cli_lock();
    int busy = cli_bsend_buf != NULL;
    if (!busy) {
        cli_bsend_buf = buffer;
        cli_bsend_size = size;
    }
    cli_unlock();
    if (busy)
        return cli_err(call, MPI_ERR_BUFFER, "buffer", "a buffer is already attached");
    return MPI_SUCCESS;
}

int cli_impl_Buffer_attach(cli_call_t *call, void *buffer, int size)
{
    return cli_impl_Buffer_attach_c(call, buffer, size);
}

int cli_impl_Buffer_detach_c(cli_call_t *call, void *buffer_addr, MPI_Count *size)
{
    if (buffer_addr == NULL || size == NULL)
        return cli_err(call, MPI_ERR_ARG, buffer_addr ? "size" : "buffer_addr", "must not be NULL");
    cli_lock();
    *(void **)buffer_addr = cli_bsend_buf;
    *size = cli_bsend_size;
    cli_bsend_buf = NULL;
    cli_bsend_size = 0;
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Buffer_detach(cli_call_t *call, void *buffer_addr, int *size)
{
    MPI_Count s = 0;
    int rc = cli_impl_Buffer_detach_c(call, buffer_addr, &s);
    if (rc == MPI_SUCCESS)
        *size = (int)s;
    return rc;
}
