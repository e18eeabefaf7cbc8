/*  inert.c - a program that never calls MPI.  Run with the face preloaded,
    it checks that loading the library started nothing: one thread in
    /proc/self/task, no socket among its file descriptors, and the library
    really mapped (so the check is not vacuous).  Exit status 0 if so.
*/
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int count_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    char path[300], target[256];
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            if (strncmp(target, "socket:", 7) == 0)
                n++;
        }
    }
    closedir(d);
    return n;
}

static int library_mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    if (f == NULL)
        return 0;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "libmpicollab";
    usleep(200 * 1000); /* give a (wrongly) started thread time to appear */
    int threads = count_entries("/proc/self/task"), sockets = count_sockets();
    int mapped = library_mapped(lib);
    printf("threads %d, sockets %d, %s mapped: %s\n", threads, sockets, lib, mapped ? "yes" : "no");
    return threads == 1 && sockets == 0 && mapped ? 0 : 1;
}
