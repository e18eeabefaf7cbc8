/*  p2p_bench.c - point-to-point latency and streaming rate between two
    ranks, OSU-style.

    An ordinary MPI program (built with MPICH's mpicc), so the same binary
    measures MPICH and any build of mpicollab.  Two measurements per size:

      pingpong  rank 0 sends, rank 1 sends back; latency = half the round
                trip (osu_latency).
      stream    rank 0 sends --window messages with MPI_Isend, rank 1
                receives them with MPI_Irecv posted after a barrier (so
                they arrive unexpected) and answers one byte; the time per
                message of the whole window (osu_bw, but with the
                receives late: what flow control holds back).

    Each runs a warm-up, then as many iterations as fill about --time
    seconds (rank 0 picks the count and broadcasts it).  Every message's
    first and last byte are checked.

    The stream relies on the library buffering a window of unexpected
    messages: MPICH does only below its eager limit (about 64 KiB), so a
    stream of larger messages waits forever there.  --pingpong-only
    leaves it out (for runs on MPICH).

    usage: p2p_bench [--time S] [--window N] [--sizes "8 65536 ..."]
                     [--pingpong-only]
    Output (rank 0), one line per measurement and size:
        bench: pingpong|stream <bytes> <iterations> <us per message> ok|WRONG
*/
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int s_wrong = 0;
static MPI_Status *s_st; /* window statuses (MPI_STATUSES_IGNORE upsets GCC with MPICH) */

static void pingpong(int rank, char *buf, long bytes, int iters)
{
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            buf[0] = (char)i;
            MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            s_wrong += buf[0] != (char)(i + 1);
        } else {
            MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            buf[0] = (char)(buf[0] + 1);
            MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
    }
}

static void stream(int rank, char *buf, long bytes, int window, int iters, MPI_Request *req)
{
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            for (int k = 0; k < window; k++) {
                buf[(size_t)k * (size_t)bytes] = (char)k;
                buf[(size_t)k * (size_t)bytes + (size_t)bytes - 1] = (char)(k + i);
                MPI_Isend(buf + (size_t)k * (size_t)bytes, (int)bytes, MPI_BYTE, 1, 3,
                          MPI_COMM_WORLD, &req[k]);
            }
            MPI_Waitall(window, req, s_st);
            MPI_Barrier(MPI_COMM_WORLD);
            char ack;
            MPI_Recv(&ack, 1, MPI_BYTE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            for (int k = 0; k < window; k++)
                MPI_Irecv(buf + (size_t)k * (size_t)bytes, (int)bytes, MPI_BYTE, 0, 3,
                          MPI_COMM_WORLD, &req[k]);
            MPI_Waitall(window, req, s_st);
            for (int k = 0; k < window; k++)
                s_wrong += buf[(size_t)k * (size_t)bytes] != (char)k ||
                           buf[(size_t)k * (size_t)bytes + (size_t)bytes - 1] != (char)(k + i);
            char ack = 1;
            MPI_Send(&ack, 1, MPI_BYTE, 0, 4, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv)
{
    double want = 0.5;
    int window = 256;
    char sizes_buf[256] = "8 1024 65536 1048576";
    int kinds = 2;
    for (int k = 1; k < argc; k++) {
        if (strcmp(argv[k], "--pingpong-only") == 0) {
            kinds = 1;
            continue;
        }
        if (k + 1 >= argc)
            break;
        if (strcmp(argv[k], "--time") == 0)
            want = atof(argv[k + 1]);
        else if (strcmp(argv[k], "--window") == 0)
            window = atoi(argv[k + 1]);
        else if (strcmp(argv[k], "--sizes") == 0)
            snprintf(sizes_buf, sizeof sizes_buf, "%s", argv[k + 1]);
        k++; /* the option's value */
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || window < 1 || want <= 0) {
        if (rank == 0)
            fprintf(stderr, "p2p_bench: needs 2 ranks, --window >= 1, --time > 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Request *req = malloc((size_t)window * sizeof *req);
    s_st = malloc((size_t)window * sizeof *s_st);
    if (s_st == NULL)
        MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 0)
        printf("bench: # kind bytes iterations us_per_message check (window %d)\n", window);
    for (char *tok = strtok(sizes_buf, " "); tok != NULL; tok = strtok(NULL, " ")) {
        long bytes = atol(tok);
        if (bytes < 2)
            continue;
        long sbytes = bytes * (long)window > (256L << 20) ? (256L << 20) / window : bytes;
        char *buf = malloc((size_t)(bytes > sbytes * window ? bytes : sbytes * window));
        if (buf == NULL || req == NULL || sbytes < 2)
            MPI_Abort(MPI_COMM_WORLD, 3);
        memset(buf, 0, (size_t)bytes);
        for (int kind = 0; kind < kinds; kind++) {
            long b = kind == 0 ? bytes : sbytes;
            /* Warm up, then find how many iterations fill the time. */
            int iters = 2;
            double t0 = MPI_Wtime();
            if (kind == 0)
                pingpong(rank, buf, b, iters);
            else
                stream(rank, buf, b, window, iters, req);
            double per = (MPI_Wtime() - t0) / iters;
            iters = per > 0 ? (int)(want / per) : 1000;
            iters = iters < 1 ? 1 : iters > 100000 ? 100000 : iters;
            MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            if (kind == 0)
                pingpong(rank, buf, b, iters);
            else
                stream(rank, buf, b, window, iters, req);
            double t = MPI_Wtime() - t0;
            int wrong = 0;
            MPI_Reduce(&s_wrong, &wrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0)
                printf("bench: %s %ld %d %.3f %s\n", kind == 0 ? "pingpong" : "stream", b, iters,
                       kind == 0 ? t / iters / 2 * 1e6 : t / iters / window * 1e6,
                       wrong == 0 ? "ok" : "WRONG");
            fflush(stdout);
        }
        free(buf);
    }
    free(req);
    free(s_st);
    MPI_Finalize();
    return 0;
}
