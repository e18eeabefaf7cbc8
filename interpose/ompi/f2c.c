/*  f2c.c - MPI_<Kind>_c2f / MPI_<Kind>_f2c of the Open MPI face.

    Open MPI exports these conversions as functions (MPICH 4.0.2 has them
    as macros), and mpi4py calls them (Comm.py2f / f2py ...).  A Fortran
    handle is a small integer: predefined objects have the numbers of Open
    MPI's mpif-handles.h (MPI_COMM_WORLD 0, MPI_DOUBLE 46, MPI_SUM 3, ...);
    an object created at run time gets a fixed base per kind plus its index
    in the common glue's table.  c2f of an invalid handle returns -1;
    f2c of a number that names no live object returns the kind's null
    handle, as Open MPI does.  None of these calls reports an error,
    except the status conversions, which reject the IGNORE sentinels.
*/
#include "cli.h"
#include "cli_impl.h"

#include <string.h>

/* First Fortran number of objects created at run time, per kind. */
enum {
    F_COMM_DYN = 3,   /* 0 world, 1 self, 2 null */
    F_GROUP_DYN = 2,  /* 0 null, 1 empty */
    F_TYPE_DYN = 100, /* predefined types use 0..74 */
    F_OP_DYN = CL_OMPI_OP_COUNT,
    F_ERRH_DYN = 4, /* 0 null, 1 fatal, 2 return, 3 C++ exceptions */
    F_INFO_DYN = 2, /* 0 null, 1 env */
    F_MSG_DYN = 2,  /* 0 null, 1 no_proc */
    F_REQ_DYN = 1   /* 0 null */
};

/* Fortran number of a table index, or -1 past the range of MPI_Fint. */
static MPI_Fint f_of_index(int base, int index)
{
    return index <= 0x7fffffff - base ? (MPI_Fint)(base + index) : -1;
}

/* ---------------------------------------------------------------------- */
/* Communicators. */

MPI_Fint cli_impl_Comm_c2f(cli_call_t *call, MPI_Comm comm)
{
    (void)call;
    int id = 0;
    switch (cli_abi_comm_decode(comm, &id)) {
    case CLI_H_NULL:
        return 2;
    case CLI_H_PREDEF:
        return id == CLI_COMM_WORLD ? 0 : 1;
    case CLI_H_DYN:
        return f_of_index(F_COMM_DYN, id);
    default:
        return -1;
    }
}

MPI_Comm cli_impl_Comm_f2c(cli_call_t *call, MPI_Fint comm)
{
    (void)call;
    if (comm == 0)
        return MPI_COMM_WORLD;
    if (comm == 1)
        return MPI_COMM_SELF;
    if (comm < F_COMM_DYN)
        return MPI_COMM_NULL;
    int why;
    MPI_Comm h = cli_abi_comm_dyn(comm - F_COMM_DYN);
    return cli_comm_lookup(h, &why) != NULL ? h : MPI_COMM_NULL;
}

/* ---------------------------------------------------------------------- */
/* Groups. */

MPI_Fint cli_impl_Group_c2f(cli_call_t *call, MPI_Group group)
{
    (void)call;
    int id = 0;
    switch (cli_abi_group_decode(group, &id)) {
    case CLI_H_NULL:
        return 0;
    case CLI_H_PREDEF:
        return 1;
    case CLI_H_DYN:
        return f_of_index(F_GROUP_DYN, id);
    default:
        return -1;
    }
}

MPI_Group cli_impl_Group_f2c(cli_call_t *call, MPI_Fint group)
{
    (void)call;
    if (group == 1)
        return MPI_GROUP_EMPTY;
    if (group < F_GROUP_DYN)
        return MPI_GROUP_NULL;
    int why;
    MPI_Group h = cli_abi_group_dyn(group - F_GROUP_DYN);
    return cli_group_lookup(h, &why) != NULL ? h : MPI_GROUP_NULL;
}

/* ---------------------------------------------------------------------- */
/* Datatypes: predefined ones by the Fortran column of objects.h. */

#define TYPE_FORTRAN_(sym, idx, name, cli, fortran) [idx] = (short)(fortran),
static const short type_fortran[CL_OMPI_DATATYPE_COUNT] = {CL_OMPI_FOREACH_DATATYPE(TYPE_FORTRAN_)};

MPI_Fint cli_impl_Type_c2f(cli_call_t *call, MPI_Datatype datatype)
{
    (void)call;
    cl_ompi_kind_t kind;
    int index;
    if (cl_ompi_predefined_lookup(datatype, &kind, &index)) {
        if (kind != CL_OMPI_KIND_DATATYPE)
            return -1;
        if (type_fortran[index] >= 0)
            return type_fortran[index];
        /* An alias object (ompi_mpi_c_complex): the number of the object
           its id maps back to. */
        int id = 0;
        if (cli_abi_type_decode(datatype, &id) != CLI_H_PREDEF)
            return -1;
        if (!cl_ompi_predefined_lookup(cli_abi_type_predef(id), &kind, &index))
            return -1;
        return type_fortran[index];
    }
    int id = cl_ompi_dyn_index(CL_OMPI_DYN_TYPE, datatype);
    return id >= 0 ? f_of_index(F_TYPE_DYN, id) : -1;
}

MPI_Datatype cli_impl_Type_f2c(cli_call_t *call, MPI_Fint datatype)
{
    (void)call;
    if (datatype < 0)
        return MPI_DATATYPE_NULL;
    if (datatype < F_TYPE_DYN) {
        for (int i = 0; i < CL_OMPI_DATATYPE_COUNT; i++)
            if (type_fortran[i] == datatype)
                return (MPI_Datatype)cl_ompi_predefined_addr(CL_OMPI_KIND_DATATYPE, i);
        return MPI_DATATYPE_NULL;
    }
    int why;
    MPI_Datatype h = cli_abi_type_dyn(datatype - F_TYPE_DYN);
    return cli_type_lookup(h, &why) != NULL ? h : MPI_DATATYPE_NULL;
}

/* ---------------------------------------------------------------------- */
/* Ops: the index of objects.h is Open MPI's Fortran number. */

MPI_Fint cli_impl_Op_c2f(cli_call_t *call, MPI_Op op)
{
    (void)call;
    cl_ompi_kind_t kind;
    int index;
    if (cl_ompi_predefined_lookup(op, &kind, &index))
        return kind == CL_OMPI_KIND_OP ? index : -1;
    int id = cl_ompi_dyn_index(CL_OMPI_DYN_OP, op);
    return id >= 0 ? f_of_index(F_OP_DYN, id) : -1;
}

MPI_Op cli_impl_Op_f2c(cli_call_t *call, MPI_Fint op)
{
    (void)call;
    if (op < 0)
        return MPI_OP_NULL;
    if (op < F_OP_DYN)
        return (MPI_Op)cl_ompi_predefined_addr(CL_OMPI_KIND_OP, op);
    int why;
    MPI_Op h = cli_abi_op_dyn(op - F_OP_DYN);
    return cli_op_lookup(h, &why) != NULL ? h : MPI_OP_NULL;
}

/* ---------------------------------------------------------------------- */
/* Error handlers. */

MPI_Fint cli_impl_Errhandler_c2f(cli_call_t *call, MPI_Errhandler errhandler)
{
    (void)call;
    cl_ompi_kind_t kind;
    int index;
    if (cl_ompi_predefined_lookup(errhandler, &kind, &index))
        return kind == CL_OMPI_KIND_ERRHANDLER ? index : -1;
    int id = cl_ompi_dyn_index(CL_OMPI_DYN_ERRH, errhandler);
    return id >= 0 ? f_of_index(F_ERRH_DYN, id) : -1;
}

MPI_Errhandler cli_impl_Errhandler_f2c(cli_call_t *call, MPI_Fint errhandler)
{
    (void)call;
    if (errhandler < 0)
        return MPI_ERRHANDLER_NULL;
    if (errhandler < F_ERRH_DYN)
        return (MPI_Errhandler)cl_ompi_predefined_addr(CL_OMPI_KIND_ERRHANDLER, errhandler);
    int status;
    MPI_Errhandler h = cli_abi_errh_dyn(errhandler - F_ERRH_DYN);
    return cli_errh_lookup(h, &status) != NULL ? h : MPI_ERRHANDLER_NULL;
}

/* ---------------------------------------------------------------------- */
/* Info objects, messages, requests. */

MPI_Fint cli_impl_Info_c2f(cli_call_t *call, MPI_Info info)
{
    (void)call;
    int id = 0;
    switch (cli_abi_info_decode(info, &id)) {
    case CLI_H_NULL:
        return 0;
    case CLI_H_PREDEF:
        return 1;
    case CLI_H_DYN:
        return f_of_index(F_INFO_DYN, id);
    default:
        return -1;
    }
}

MPI_Info cli_impl_Info_f2c(cli_call_t *call, MPI_Fint info)
{
    (void)call;
    if (info == 1)
        return MPI_INFO_ENV;
    if (info < F_INFO_DYN)
        return MPI_INFO_NULL;
    int why;
    MPI_Info h = cli_abi_info_dyn(info - F_INFO_DYN);
    return cli_info_lookup(h, &why) != NULL ? h : MPI_INFO_NULL;
}

MPI_Fint cli_impl_Message_c2f(cli_call_t *call, MPI_Message message)
{
    (void)call;
    int id = 0;
    switch (cli_abi_msg_decode(message, &id)) {
    case CLI_H_NULL:
        return 0;
    case CLI_H_PREDEF:
        return 1;
    case CLI_H_DYN:
        return f_of_index(F_MSG_DYN, id);
    default:
        return -1;
    }
}

MPI_Message cli_impl_Message_f2c(cli_call_t *call, MPI_Fint message)
{
    (void)call;
    if (message == 1)
        return MPI_MESSAGE_NO_PROC;
    if (message < F_MSG_DYN)
        return MPI_MESSAGE_NULL;
    int why;
    MPI_Message h = cli_abi_msg_dyn(message - F_MSG_DYN);
    return cli_msg_lookup(h, &why) != NULL ? h : MPI_MESSAGE_NULL;
}

MPI_Fint cli_impl_Request_c2f(cli_call_t *call, MPI_Request request)
{
    (void)call;
    int id = 0;
    switch (cli_abi_req_decode(request, &id)) {
    case CLI_H_NULL:
        return 0;
    case CLI_H_DYN:
        return f_of_index(F_REQ_DYN, id);
    default:
        return -1;
    }
}

MPI_Request cli_impl_Request_f2c(cli_call_t *call, MPI_Fint request)
{
    (void)call;
    if (request < F_REQ_DYN)
        return MPI_REQUEST_NULL;
    int why;
    MPI_Request h = cli_abi_req_dyn(request - F_REQ_DYN);
    return cli_req_lookup(h, &why) != NULL ? h : MPI_REQUEST_NULL;
}

/* ---------------------------------------------------------------------- */
/* Windows: one-sided communication is out of scope, so MPI_WIN_NULL is
   the only window there is. */

MPI_Fint cli_impl_Win_c2f(cli_call_t *call, MPI_Win win)
{
    (void)call;
    return win == MPI_WIN_NULL ? 0 : -1;
}

MPI_Win cli_impl_Win_f2c(cli_call_t *call, MPI_Fint win)
{
    (void)call;
    (void)win;
    return MPI_WIN_NULL;
}

/* ---------------------------------------------------------------------- */
/* Statuses.  Open MPI's Fortran status is MPI_STATUS_SIZE (6) integers
   holding the bytes of the C status: SOURCE, TAG, ERROR, _cancelled and
   the two halves of _ucount, so conversion is a copy both ways. */

_Static_assert(sizeof(MPI_Status) == 6 * sizeof(MPI_Fint), "Open MPI's MPI_STATUS_SIZE is 6");

int cli_impl_Status_c2f(cli_call_t *call, const MPI_Status *c_status, MPI_Fint *f_status)
{
    if (c_status == MPI_STATUS_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "c_status", "MPI_STATUS_IGNORE cannot be converted");
    if (f_status == NULL || f_status == MPI_F_STATUS_IGNORE || f_status == MPI_F_STATUSES_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "f_status", "must be a Fortran status array");
    memcpy(f_status, c_status, sizeof *c_status);
    return MPI_SUCCESS;
}

int cli_impl_Status_f2c(cli_call_t *call, const MPI_Fint *f_status, MPI_Status *c_status)
{
    if (f_status == NULL || f_status == MPI_F_STATUS_IGNORE || f_status == MPI_F_STATUSES_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "f_status", "MPI_F_STATUS_IGNORE cannot be converted");
    if (c_status == MPI_STATUS_IGNORE)
        return cli_err(call, MPI_ERR_ARG, "c_status", "must be a status");
    memcpy(c_status, f_status, sizeof *c_status);
    return MPI_SUCCESS;
}
