/*  fuzz_replay.c - replays a fuzz corpus through LLVMFuzzerTestOneInput.

    Built with any C compiler (no libFuzzer needed): every file named on the
    command line, or every file inside a directory named there, is read and
    fed to the target once.  A crash or abort fails the test; the exit
    status is 0 when every input ran.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *b2 = realloc(buf, cap * 2);
            if (b2 == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b2;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "fuzz_replay: out of memory reading %s\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            while (d != NULL && (e = readdir(d)) != NULL) {
                if (e->d_name[0] == '.')
                    continue;
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
                if (run_file(path) != 0)
                    return 1;
                files++;
            }
            if (d != NULL)
                closedir(d);
        } else {
            if (run_file(argv[i]) != 0)
                return 1;
            files++;
        }
    }
    if (files == 0) {
        fprintf(stderr, "fuzz_replay: no inputs\n");
        return 1;
    }
    printf("fuzz_replay: %d inputs ran\n", files);
    return 0;
}
