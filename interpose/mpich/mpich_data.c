/*  mpich_data.c - the data objects and helper function the MPICH ABI
    exports besides the MPI functions (ABI-NOTES 1.1), at MPICH's sizes.

    Programs reach them rarely (graph topologies, Fortran statuses); they
    are defined so that such programs load.  MPIR_Dup_fn is what the
    MPI_COMM_DUP_FN / MPI_TYPE_DUP_FN macros name.
*/
#include <mpi.h>

#define CLI_DATA __attribute__((visibility("default")))

/* Sentinels behind MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY (8 bytes each). */
CLI_DATA void *MPIR_C_MPI_UNWEIGHTED;
CLI_DATA void *MPIR_C_MPI_WEIGHTS_EMPTY;
CLI_DATA int *const MPI_UNWEIGHTED = (int *)&MPIR_C_MPI_UNWEIGHTED;
CLI_DATA int *const MPI_WEIGHTS_EMPTY = (int *)&MPIR_C_MPI_WEIGHTS_EMPTY;

/* Fortran sentinels. */
static MPI_Fint cli_f_status_ignore[MPI_F_STATUS_SIZE];
static MPI_Fint cli_f_statuses_ignore[MPI_F_STATUS_SIZE];
CLI_DATA MPI_Fint *MPI_F_STATUS_IGNORE = cli_f_status_ignore;
CLI_DATA MPI_Fint *MPI_F_STATUSES_IGNORE = cli_f_statuses_ignore;
CLI_DATA MPI_F08_status MPIR_F08_MPI_STATUS_IGNORE_OBJ;
CLI_DATA MPI_F08_status MPIR_F08_MPI_STATUSES_IGNORE_OBJ[1];
CLI_DATA int MPIR_F08_MPI_IN_PLACE;
CLI_DATA int MPIR_F08_MPI_BOTTOM;
CLI_DATA MPI_F08_status *MPI_F08_STATUS_IGNORE = &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
CLI_DATA MPI_F08_status *MPI_F08_STATUSES_IGNORE = MPIR_F08_MPI_STATUSES_IGNORE_OBJ;

/* The "all handles" sentinel of the tool interface. */
static char cli_pvar_all;
CLI_DATA struct MPIR_T_pvar_handle_s *const MPI_T_PVAR_ALL_HANDLES =
    (struct MPIR_T_pvar_handle_s *)&cli_pvar_all;

/* MPI_COMM_DUP_FN and friends: copy the attribute value. */
CLI_DATA int MPIR_Dup_fn(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in,
                         void *attribute_val_out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra_state;
    *(void **)attribute_val_out = attribute_val_in;
    *flag = 1;
    return MPI_SUCCESS;
}
