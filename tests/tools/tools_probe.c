/*  tools_probe.c - a small non-MPI program that collab-run's tests start
    as peers.  Each subcommand does one observable thing:

      ticks COUNT MS [err]   prints "tick I t=SECONDS" (CLOCK_MONOTONIC)
                             every MS milliseconds, on stdout or stderr
      exit CODES             exits with CODES[COLLAB_RANK] (comma list);
                             an entry "sig:N" raises signal N instead
      lines COUNT            prints COUNT long lines, each written in
                             several pieces with pauses in between; every
                             tenth line goes to stderr
      env MS                 prints the variables collab-run sets, the
                             identity file's mode and peer id, sleeps MS
      sleep MS               sleeps MS milliseconds
      ignore-term MS         ignores SIGTERM, prints "ready", sleeps MS
      partial                prints "no newline at the end" without '\n'
*/
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *rank_text(void)
{
    const char *r = getenv("COLLAB_RANK");
    return r != NULL ? r : "?";
}

static void put(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            exit(99);
        s += w;
        n -= (size_t)w;
    }
}

static int cmd_ticks(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int count = atoi(argv[0]);
    long ms = atol(argv[1]);
    int fd = argc > 2 && strcmp(argv[2], "err") == 0 ? 2 : 1;
    for (int i = 1; i <= count; i++) {
        char line[128];
        int n = snprintf(line, sizeof line, "tick %d t=%.6f\n", i, now_s());
        put(fd, line, (size_t)n);
        if (i < count)
            sleep_ms(ms);
    }
    return 0;
}

static int cmd_exit(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    const char *r = getenv("COLLAB_RANK");
    int rank = r != NULL ? atoi(r) : 0;
    char *list = strdup(argv[0]);
    char *save = NULL;
    char *tok = strtok_r(list, ",", &save);
    for (int i = 0; tok != NULL && i < rank; i++)
        tok = strtok_r(NULL, ",", &save);
    if (tok == NULL)
        return 0;
    if (strncmp(tok, "sig:", 4) == 0) {
        int sig = atoi(tok + 4);
        signal(sig, SIG_DFL);
        raise(sig);
        return 98;
    }
    return atoi(tok);
}

static int cmd_lines(int argc, char **argv)
{
    if (argc < 1)
        return 2;
    int count = atoi(argv[0]);
    const char *rank = rank_text();
    for (int i = 0; i < count; i++) {
        char line[512];
        int fd = i % 10 == 9 ? 2 : 1;
        int n =
            snprintf(line, sizeof line, "rank %s %s %d %s end\n", rank, fd == 2 ? "err" : "line", i,
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        /* Three pieces with pauses, so that pieces of different peers
           reach collab-run interleaved. */
        int a = n / 3, b = 2 * n / 3;
        put(fd, line, (size_t)a);
        usleep(300);
        put(fd, line + a, (size_t)(b - a));
        usleep(300);
        put(fd, line + b, (size_t)(n - b));
    }
    return 0;
}

static void print_var(const char *name)
{
    const char *v = getenv(name);
    if (v != NULL)
        printf("%s=%s\n", name, v);
    else
        printf("%s unset\n", name);
}

static int cmd_env(int argc, char **argv)
{
    long ms = argc > 0 ? atol(argv[0]) : 0;
    static const char *names[] = {"COLLAB_RANK",
                                  "COLLAB_WORLD_SIZE",
                                  "COLLAB_IDENTITY",
                                  "COLLAB_LISTEN",
                                  "COLLAB_MATCHMAKING_TIME",
                                  "COLLAB_INITIAL_PEERS",
                                  "COLLAB_ANNOUNCE",
                                  "LD_PRELOAD",
                                  "LD_LIBRARY_PATH",
                                  "MPI_LOCALRANKID",
                                  "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "LOCAL_RANK",
                                  "LOCAL_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        print_var(names[i]);
    const char *key = getenv("COLLAB_IDENTITY");
    struct stat st;
    if (key != NULL && stat(key, &st) == 0) {
        printf("IDENTITY_MODE=%03o\n", (unsigned)(st.st_mode & 0777));
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", key);
        char *slash = strrchr(dir, '/');
        if (slash != NULL) {
            *slash = '\0';
            struct stat ds;
            if (stat(dir, &ds) == 0)
                printf("IDENTITY_DIR_MODE=%03o\n", (unsigned)(ds.st_mode & 0777));
        }
        FILE *f = fopen(key, "r");
        char buf[256];
        while (f != NULL && fgets(buf, sizeof buf, f) != NULL) {
            char *p = strstr(buf, "peer-id = \"");
            if (p != NULL) {
                p += strlen("peer-id = \"");
                char *q = strchr(p, '"');
                if (q != NULL)
                    *q = '\0';
                printf("IDENTITY_PEER_ID=%s\n", p);
            }
        }
        if (f != NULL)
            fclose(f);
    } else {
        printf("IDENTITY_MODE=missing\n");
    }
    fflush(stdout);
    sleep_ms(ms);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: tools_probe COMMAND ARGS...\n");
        return 2;
    }
    const char *cmd = argv[1];
    argc -= 2;
    argv += 2;
    if (strcmp(cmd, "ticks") == 0)
        return cmd_ticks(argc, argv);
    if (strcmp(cmd, "exit") == 0)
        return cmd_exit(argc, argv);
    if (strcmp(cmd, "lines") == 0)
        return cmd_lines(argc, argv);
    if (strcmp(cmd, "env") == 0)
        return cmd_env(argc, argv);
    if (strcmp(cmd, "sleep") == 0) {
        sleep_ms(argc > 0 ? atol(argv[0]) : 0);
        return 0;
    }
    if (strcmp(cmd, "ignore-term") == 0) {
        signal(SIGTERM, SIG_IGN);
        put(1, "ready\n", 6);
        sleep_ms(argc > 0 ? atol(argv[0]) : 0);
        return 0;
    }
    if (strcmp(cmd, "partial") == 0) {
        put(1, "no newline at the end", 21);
        return 0;
    }
    fprintf(stderr, "tools_probe: unknown command %s\n", cmd);
    return 2;
}
