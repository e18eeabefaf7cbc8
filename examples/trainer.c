/*  trainer.c - a small data-parallel trainer, written the way MPI users
    write one.  It knows nothing about mpicollab: built with MPICH's mpicc,
    it runs on real MPICH, and unchanged on an elastic mpicollab swarm.

    A three-layer perceptron (16 -> H -> H -> 1, tanh) learns a smooth
    synthetic function.  The data set is generated from a seed, so every
    rank holds the same samples and takes the shard i % size == rank.
    Rank 0 initialises the parameters and broadcasts them, and broadcasts
    the step counter too, so a peer that joins a running swarm starts
    where the swarm is (the library answers a late joiner's start-up
    broadcasts with the veterans' current buffers).  Each step computes
    the gradients of a minibatch of the local shard, all-reduces each of
    the six gradient tensors in place (three have the same size, H),
    divides by the world size and takes an SGD step.

    At the end every rank evaluates the loss on the whole data set and
    prints it with an FNV-1a checksum of the parameters' bytes: equal
    checksums on all ranks mean bitwise-identical models.

    usage: trainer [--steps N] [--sleep-ms MS] [--log-every K] [--log-all]
                   [--seed S] [--samples N] [--hidden H] [--batch B] [--lr LR]
                   [--mark-step S] [--avg-loss] [--scale-rank R --scale F] [--persistent]

    --sleep-ms adds simulated compute to every step (to make runs long
    enough for fault injection); --mark-step prints a line just before
    the all-reduces of step S, for tests that kill a peer inside one.
    --avg-loss averages the batch loss over the ranks each step with a
    one-element all-reduce, as collaborative-training tutorials do to
    log it (collab-monitor plots it with COLLAB_REPORT_LOSS=1).
    --scale-rank R --scale F makes rank R multiply its gradients by F
    before every all-reduce: a faulty or hostile member, for the tests
    of robust aggregation (COLLAB_AGGREGATION).
    --persistent reduces the gradients with MPI-4 persistent all-reduces
    (MPI_Allreduce_init once, MPI_Start each step), which odd ranks start
    in the reverse order: they match by initialisation order.
*/
#include <mpi.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NIN 16
#define NTENSORS 6

typedef struct {
    long steps;     /* total steps of the run */
    long sleep_ms;  /* simulated extra compute per step */
    long log_every; /* log every K steps (0: never) */
    int avg_loss;   /* all-reduce the batch loss every step */
    int persistent; /* persistent all-reduces, started in rank-dependent order */
    int log_all;    /* every rank logs, not only rank 0 */
    unsigned long seed;
    long samples;   /* size of the whole data set */
    long hidden;    /* width H of the two hidden layers */
    long batch;     /* minibatch per rank and step */
    double lr;      /* learning rate */
    long mark_step; /* announce entering the all-reduces of this step (-1: none) */
    long scale_rank; /* this rank scales its gradients by `scale` (-1: none) */
    double scale;    /* a faulty or hostile member's factor (robust aggregation tests) */
} opts_t;

/* Parameters (and gradients) as six tensors. */
typedef struct {
    float *t[NTENSORS];
    size_t n[NTENSORS];
} params_t;

enum { W1, B1, W2, B2, W3, B3 };
static const char *const tensor_names[NTENSORS] = {"w1", "b1", "w2", "b2", "w3", "b3"};

/* ---------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float rng_uniform(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * 0x1.0p-52 - 1.0);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        fprintf(stderr, "trainer: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.steps = 200,
                  .sleep_ms = 0,
                  .log_every = 20,
                  .log_all = 0,
                  .seed = 1,
                  .samples = 4096,
                  .hidden = 32,
                  .batch = 64,
                  .lr = 0.05,
                  .mark_step = -1,
                  .scale_rank = -1,
                  .scale = 1.0};
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
        long x;
        int bad = 0;
        if (strcmp(a, "--log-all") == 0) {
            o->log_all = 1;
            continue;
        }
        if (strcmp(a, "--avg-loss") == 0) {
            o->avg_loss = 1;
            continue;
        }
        if (strcmp(a, "--persistent") == 0) {
            o->persistent = 1;
            continue;
        }
        if (v == NULL) {
            fprintf(stderr, "trainer: %s needs a value\n", a);
            return -1;
        }
        if (strcmp(a, "--steps") == 0)
            bad = parse_long(v, 0, 100000000, &o->steps);
        else if (strcmp(a, "--sleep-ms") == 0)
            bad = parse_long(v, 0, 3600000, &o->sleep_ms);
        else if (strcmp(a, "--log-every") == 0)
            bad = parse_long(v, 0, 100000000, &o->log_every);
        else if (strcmp(a, "--seed") == 0)
            bad = parse_long(v, 0, 1L << 40, &x), o->seed = (unsigned long)x;
        else if (strcmp(a, "--samples") == 0)
            bad = parse_long(v, 1, 10000000, &o->samples);
        else if (strcmp(a, "--hidden") == 0)
            bad = parse_long(v, 1, 4096, &o->hidden);
        else if (strcmp(a, "--batch") == 0)
            bad = parse_long(v, 1, 1000000, &o->batch);
        else if (strcmp(a, "--mark-step") == 0)
            bad = parse_long(v, 0, 100000000, &o->mark_step);
        else if (strcmp(a, "--scale-rank") == 0)
            bad = parse_long(v, 0, 1000000, &o->scale_rank);
        else if (strcmp(a, "--scale") == 0) {
            char *end;
            o->scale = strtod(v, &end);
            bad = *end != '\0' || !(fabs(o->scale) < 1e30);
        } else if (strcmp(a, "--lr") == 0) {
            char *end;
            o->lr = strtod(v, &end);
            bad = *end != '\0' || !(o->lr > 0 && o->lr < 10);
        } else {
            fprintf(stderr, "trainer: unknown option %s\n", a);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "trainer: bad value for %s: '%s'\n", a, v);
            return -1;
        }
        k++;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Data: x uniform in [-1,1]^16, y a smooth function of x. */

static void make_data(const opts_t *o, float **xs, float **ys)
{
    uint64_t s = o->seed * 1000003u + 17;
    float a[4][NIN], c[4];
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < NIN; j++)
            a[k][j] = rng_uniform(&s) * 0.8f;
        c[k] = rng_uniform(&s);
    }
    *xs = xcalloc((size_t)o->samples * NIN, sizeof(float));
    *ys = xcalloc((size_t)o->samples, sizeof(float));
    for (long i = 0; i < o->samples; i++) {
        float *x = *xs + i * NIN, y = 0;
        for (int j = 0; j < NIN; j++)
            x[j] = rng_uniform(&s);
        for (int k = 0; k < 4; k++) {
            float d = 0;
            for (int j = 0; j < NIN; j++)
                d += a[k][j] * x[j];
            y += c[k] * sinf(d + (float)k);
        }
        (*ys)[i] = y;
    }
}

static void params_alloc(params_t *p, long h)
{
    size_t n[NTENSORS] = {(size_t)h * NIN, (size_t)h, (size_t)(h * h), (size_t)h, (size_t)h, 1};
    for (int k = 0; k < NTENSORS; k++) {
        p->n[k] = n[k];
        p->t[k] = xcalloc(n[k], sizeof(float));
    }
}

static void params_init(params_t *p, const opts_t *o)
{
    uint64_t s = o->seed * 7919u + 3;
    float fan_in[NTENSORS] = {NIN, 1, (float)o->hidden, 1, (float)o->hidden, 1};
    for (int k = 0; k < NTENSORS; k++) {
        float scale = (k == B1 || k == B2 || k == B3) ? 0.0f : 1.0f / sqrtf(fan_in[k]);
        for (size_t i = 0; i < p->n[k]; i++)
            p->t[k][i] = rng_uniform(&s) * scale;
    }
}

/* Forward pass of one sample; keeps activations for the backward pass. */
static float forward(const params_t *p, long h, const float *x, float *a1, float *a2)
{
    for (long j = 0; j < h; j++) {
        float z = p->t[B1][j];
        for (int i = 0; i < NIN; i++)
            z += p->t[W1][j * NIN + i] * x[i];
        a1[j] = tanhf(z);
    }
    for (long j = 0; j < h; j++) {
        float z = p->t[B2][j];
        for (long i = 0; i < h; i++)
            z += p->t[W2][j * h + i] * a1[i];
        a2[j] = tanhf(z);
    }
    float out = p->t[B3][0];
    for (long i = 0; i < h; i++)
        out += p->t[W3][i] * a2[i];
    return out;
}

/* Gradients of the mean squared error over the given samples; returns
   the loss. */
static float gradients(const params_t *p, params_t *g, long h, const float *xs, const float *ys,
                       const long *idx, long nb, float *work)
{
    float *a1 = work, *a2 = work + h, *d2 = work + 2 * h, *d1 = work + 3 * h;
    float loss = 0;
    for (int k = 0; k < NTENSORS; k++)
        memset(g->t[k], 0, g->n[k] * sizeof(float));
    for (long b = 0; b < nb; b++) {
        const float *x = xs + idx[b] * NIN;
        float err = forward(p, h, x, a1, a2) - ys[idx[b]];
        loss += 0.5f * err * err;
        float dout = err / (float)nb;
        g->t[B3][0] += dout;
        for (long i = 0; i < h; i++) {
            g->t[W3][i] += dout * a2[i];
            d2[i] = dout * p->t[W3][i] * (1 - a2[i] * a2[i]);
        }
        for (long j = 0; j < h; j++) {
            g->t[B2][j] += d2[j];
            for (long i = 0; i < h; i++)
                g->t[W2][j * h + i] += d2[j] * a1[i];
        }
        for (long i = 0; i < h; i++) {
            float s = 0;
            for (long j = 0; j < h; j++)
                s += p->t[W2][j * h + i] * d2[j];
            d1[i] = s * (1 - a1[i] * a1[i]);
        }
        for (long j = 0; j < h; j++) {
            g->t[B1][j] += d1[j];
            for (int i = 0; i < NIN; i++)
                g->t[W1][j * NIN + i] += d1[j] * x[i];
        }
    }
    return loss / (float)nb;
}

static double full_loss(const params_t *p, long h, const float *xs, const float *ys, long n,
                        float *work)
{
    double loss = 0;
    for (long i = 0; i < n; i++) {
        float err = forward(p, h, xs + i * NIN, work, work + h) - ys[i];
        loss += 0.5 * (double)err * (double)err;
    }
    return loss / (double)n;
}

static uint64_t checksum(const params_t *p)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    for (int k = 0; k < NTENSORS; k++) {
        const unsigned char *b = (const unsigned char *)p->t[k];
        for (size_t i = 0; i < p->n[k] * sizeof(float); i++) {
            hash ^= b[i];
            hash *= 0x100000001b3ull;
        }
    }
    return hash;
}

/* ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    opts_t o;
    if (parse_opts(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: trainer [--steps N] [--sleep-ms MS] [--log-every K] [--log-all]\n"
                        "               [--seed S] [--samples N] [--hidden H] [--batch B] "
                        "[--lr LR]\n               [--mark-step S] [--avg-loss] "
                        "[--scale-rank R --scale F] [--persistent]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t0 = MPI_Wtime();

    float *xs, *ys;
    make_data(&o, &xs, &ys);
    long h = o.hidden;
    params_t p, g;
    params_alloc(&p, h);
    params_alloc(&g, h);
    float *work = xcalloc((size_t)(4 * h), sizeof(float));

    /* The shard of this rank and its minibatch schedule. */
    long shard = 0;
    for (long i = rank; i < o.samples; i += size)
        shard++;
    long *idx = xcalloc((size_t)o.batch, sizeof(long));

    /* Rank 0 initialises; everyone receives its parameters and step. */
    if (rank == 0)
        params_init(&p, &o);
    for (int k = 0; k < NTENSORS; k++)
        MPI_Bcast(p.t[k], (int)p.n[k], MPI_FLOAT, 0, MPI_COMM_WORLD);
    int step = 0;
    MPI_Bcast(&step, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int first = step;

    size_t nparams = 0;
    for (int k = 0; k < NTENSORS; k++)
        nparams += p.n[k];
    if (rank == 0) {
        printf("trainer: %zu parameters in %d tensors (", nparams, NTENSORS);
        for (int k = 0; k < NTENSORS; k++)
            printf("%s%s %zu", k ? ", " : "", tensor_names[k], p.n[k]);
        printf("), %ld samples over %d ranks, %ld steps\n", o.samples, size, o.steps);
    }
    printf("trainer: rank %d pid %d starts at step %d checksum %016llx\n", rank, (int)getpid(),
           step, (unsigned long long)checksum(&p));
    fflush(stdout);

    MPI_Request pers[NTENSORS];
    if (o.persistent)
        for (int k = 0; k < NTENSORS; k++)
            MPI_Allreduce_init(MPI_IN_PLACE, g.t[k], (int)g.n[k], MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &pers[k]);

    for (; step < o.steps; step++) {
        for (long b = 0; b < o.batch; b++) {
            long j = (long)((step * o.batch + b) % (shard > 0 ? shard : 1));
            idx[b] = rank + j * size;
        }
        float loss = shard > 0 ? gradients(&p, &g, h, xs, ys, idx, o.batch, work) : 0.0f;
        if (o.sleep_ms > 0)
            sleep_ms(o.sleep_ms);
        if (step == o.mark_step) {
            /* A line to trigger faults on, printed just before this rank
               enters the step's all-reduces. */
            printf("trainer: rank %d entering allreduce of step %d\n", rank, step);
            fflush(stdout);
        }
        if (rank == o.scale_rank)
            for (int k = 0; k < NTENSORS; k++)
                for (size_t i = 0; i < g.n[k]; i++)
                    g.t[k][i] = (float)(g.t[k][i] * o.scale);
        if (o.persistent) {
            for (int k = 0; k < NTENSORS; k++)
                MPI_Start(&pers[rank % 2 ? NTENSORS - 1 - k : k]);
            MPI_Status sts[NTENSORS];
            MPI_Waitall(NTENSORS, pers, sts);
        } else {
            for (int k = 0; k < NTENSORS; k++)
                MPI_Allreduce(MPI_IN_PLACE, g.t[k], (int)g.n[k], MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD);
        }
        for (int k = 0; k < NTENSORS; k++)
            for (size_t i = 0; i < p.n[k]; i++)
                p.t[k][i] -= (float)o.lr * (g.t[k][i] / (float)size);
        if (o.avg_loss) {
            MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            loss /= (float)size;
        }
        if (o.log_every > 0 && (step + 1) % o.log_every == 0 && (rank == 0 || o.log_all)) {
            printf("trainer: rank %d step %d batch loss %.6f wall %.3f\n", rank, step + 1,
                   (double)loss, wall_now());
            fflush(stdout);
        }
    }

    if (o.persistent)
        for (int k = 0; k < NTENSORS; k++)
            MPI_Request_free(&pers[k]);
    double loss = full_loss(&p, h, xs, ys, o.samples, work);
    printf("trainer: rank %d pid %d done steps %d..%ld final loss %.9g checksum %016llx "
           "elapsed %.2f s\n",
           rank, (int)getpid(), first, o.steps, loss, (unsigned long long)checksum(&p),
           MPI_Wtime() - t0);
    fflush(stdout);

    MPI_Finalize();
    for (int k = 0; k < NTENSORS; k++) {
        free(p.t[k]);
        free(g.t[k]);
    }
    free(xs);
    free(ys);
    free(work);
    free(idx);
    return 0;
}
