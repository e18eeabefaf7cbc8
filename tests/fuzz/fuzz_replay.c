/*  fuzz_replay.c - runs a fuzz target over its corpus without libFuzzer.

    Linked with a file that defines LLVMFuzzerTestOneInput, this main()
    feeds it every regular file named on the command line or found in a
    directory named there (in name order, so runs are reproducible), each
    in a buffer of exactly its size so that AddressSanitizer builds catch
    reads past the end.  CTest runs it on the corpus of each target: every
    input that once crashed stays a regression test, with any compiler.
    It fails when it finds no input at all, so a moved corpus is noticed.
*/
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

#define REPLAY_MAX_INPUT (16u << 20) /* larger files are not fuzz inputs */

/* Runs one file; returns 0, or -1 when it cannot be read. */
static int s_run_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > REPLAY_MAX_INPUT) {
        fprintf(stderr, "%s: not a regular file of at most %u bytes\n", path, REPLAY_MAX_INPUT);
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size > 0 ? size : 1);
    size_t got = 0;
    while (data != NULL && got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (data == NULL || got != size) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(data);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int s_by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int s_not_hidden(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    int inputs = 0, errors = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            errors++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            errors += s_run_file(argv[i]) != 0;
            inputs++;
            continue;
        }
        struct dirent **names = NULL;
        int n = scandir(argv[i], &names, s_not_hidden, s_by_name);
        if (n < 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            errors++;
            continue;
        }
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            errors += s_run_file(path) != 0;
            inputs++;
            free(names[k]);
        }
        free(names);
    }
    if (inputs == 0) {
        fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...: no inputs found\n", argv[0]);
        return 1;
    }
    printf("replayed %d inputs, %d unreadable\n", inputs, errors);
    return errors > 0 ? 1 : 0;
}
