/*  threads.c - MPI_THREAD_MULTIPLE on one peer: several threads create and
    free communicators, datatypes, keyvals and requests and exchange
    messages with themselves at the same time, so that the face's tables
    are used concurrently.  Prints "threads ok" when every result is right.
*/
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 4
#define ROUNDS 200

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(int t, int line)
{
    pthread_mutex_lock(&fail_lock);
    if (failures++ < 10)
        printf("threads FAIL thread %d line %d\n", t, line);
    pthread_mutex_unlock(&fail_lock);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fail(t, __LINE__);                                                                     \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

static int deleted[NTHREADS];

static int del_fn(MPI_Comm comm, int kv, void *val, void *extra)
{
    (void)comm;
    (void)kv;
    (void)extra;
    __atomic_add_fetch(&deleted[*(int *)val], 1, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm comm;
    /* Each thread works on its own communicator (MPI requires collectives
       on one communicator to be issued in the same order everywhere). */
    CHECK(MPI_Comm_dup(MPI_COMM_SELF, &comm) == MPI_SUCCESS);
    int kv;
    CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_fn, &kv, NULL) == MPI_SUCCESS);
    for (int r = 0; r < ROUNDS; r++) {
        MPI_Comm c2;
        CHECK(MPI_Comm_dup(comm, &c2) == MPI_SUCCESS);
        CHECK(MPI_Comm_set_attr(c2, kv, &t) == MPI_SUCCESS);
        MPI_Datatype dt;
        CHECK(MPI_Type_contiguous(r % 4 + 2, MPI_INT, &dt) == MPI_SUCCESS);
        CHECK(MPI_Type_commit(&dt) == MPI_SUCCESS);
        int in[5] = {t, r, 1, 2, 3}, out[5] = {0};
        MPI_Request req;
        CHECK(MPI_Isend(in, 1, dt, 0, r, c2, &req) == MPI_SUCCESS);
        MPI_Status st;
        CHECK(MPI_Recv(out, 1, dt, 0, r, c2, &st) == MPI_SUCCESS);
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(out[0] == t && out[1] == r && st.MPI_TAG == r);
        int sum = 0;
        CHECK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c2) == MPI_SUCCESS && sum == r);
        CHECK(MPI_Type_free(&dt) == MPI_SUCCESS);
        CHECK(MPI_Comm_free(&c2) == MPI_SUCCESS);
    }
    CHECK(MPI_Comm_free_keyval(&kv) == MPI_SUCCESS);
    CHECK(MPI_Comm_free(&comm) == MPI_SUCCESS);
    CHECK(__atomic_load_n(&deleted[t], __ATOMIC_RELAXED) == ROUNDS);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        printf("threads FAIL: provided %d\n", provided);
        return 1;
    }
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    MPI_Finalize();
    if (failures == 0)
        printf("threads ok\n");
    return failures ? 1 : 0;
}
