/*  cr_elf.c - program lookup and MPI ABI detection from DT_NEEDED.

    The ELF file is read through a small bounds-checked accessor (pread on
    a file, or a memory image in tests), so that a truncated or hostile
    file yields an error, never a crash and never a read of the whole of a
    large binary.  The parser follows the program headers, as the dynamic
    loader does: PT_DYNAMIC gives the dynamic section, its DT_STRTAB (a
    virtual address) is mapped to a file offset through the PT_LOAD
    segments, and every DT_NEEDED entry is an offset into that table.
*/
#include "cr_elf.h"
#include "cr_output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CR_ELF_MAX_PHDRS 4096  /* far above any real program */
#define CR_ELF_MAX_DYN 65536   /* dynamic entries we are willing to scan */
#define CR_ELF_MAX_NEEDED 1024 /* DT_NEEDED entries kept */
#define CR_ELF_MAX_NAME 4096   /* longest library name read */

enum { PT_LOAD_ = 1, PT_DYNAMIC_ = 2 };
enum { DT_NULL_ = 0, DT_NEEDED_ = 1, DT_STRTAB_ = 5, DT_STRSZ_ = 10 };

typedef struct {
    const unsigned char *mem; /* memory image, or NULL when reading fd */
    int fd;                   /* file descriptor when mem == NULL */
    uint64_t size;            /* bytes available */
    int is64;                 /* ELFCLASS64 */
    int big;                  /* ELFDATA2MSB */
} elf_src_t;

typedef struct {
    uint64_t offset, vaddr, filesz;
} elf_load_t;

const char *cr_abi_name(cr_abi_t abi)
{
    switch (abi) {
    case CR_ABI_MPICH:
        return "mpich";
    case CR_ABI_OMPI:
        return "ompi";
    default:
        return "unknown";
    }
}

/* Copies len bytes at off into out; -1 when the range is outside the file. */
static int src_read(const elf_src_t *s, uint64_t off, size_t len, void *out)
{
    if (off > s->size || len > s->size - off)
        return -1;
    if (s->mem != NULL) {
        memcpy(out, s->mem + off, len);
        return 0;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(s->fd, (char *)out + done, len - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static uint64_t get_u(const elf_src_t *s, const unsigned char *p, size_t width)
{
    uint64_t v = 0;
    for (size_t i = 0; i < width; i++) {
        size_t idx = s->big ? i : width - 1 - i;
        v = (v << 8) | p[idx];
    }
    return v;
}

/* Reads a NUL-terminated string at off, bounded by limit (absolute file
   offset one past the last byte allowed). */
static char *read_string(const elf_src_t *s, uint64_t off, uint64_t limit)
{
    if (limit > s->size)
        limit = s->size;
    if (off >= limit)
        return NULL;
    uint64_t avail = limit - off;
    size_t cap = avail < CR_ELF_MAX_NAME ? (size_t)avail : CR_ELF_MAX_NAME;
    char *buf = malloc(cap + 1);
    if (buf == NULL)
        return NULL;
    if (src_read(s, off, cap, buf) != 0) {
        free(buf);
        return NULL;
    }
    buf[cap] = '\0';
    if (strlen(buf) == cap) { /* no terminator inside the bound */
        free(buf);
        return NULL;
    }
    return buf;
}

void cr_elf_free_names(char **names, size_t count)
{
    if (names == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

static int parse(const elf_src_t *in, char ***names_p, size_t *count, char *err, size_t errlen)
{
    elf_src_t s = *in;
    unsigned char ident[64];
    if (src_read(&s, 0, 16, ident) != 0 || memcmp(ident, "\177ELF", 4) != 0) {
        unsigned char two[2];
        if (src_read(&s, 0, 2, two) == 0 && two[0] == '#' && two[1] == '!')
            cr_set_err(err, errlen, "it is a script, not an ELF program");
        else
            cr_set_err(err, errlen, "it is not an ELF program");
        return -1;
    }
    if (ident[4] != 1 && ident[4] != 2) {
        cr_set_err(err, errlen, "unknown ELF class %u", ident[4]);
        return -1;
    }
    if (ident[5] != 1 && ident[5] != 2) {
        cr_set_err(err, errlen, "unknown ELF byte order %u", ident[5]);
        return -1;
    }
    s.is64 = ident[4] == 2;
    s.big = ident[5] == 2;
    size_t w = s.is64 ? 8 : 4; /* width of addresses and offsets */

    unsigned char eh[64];
    size_t ehsize = s.is64 ? 64 : 52;
    if (src_read(&s, 0, ehsize, eh) != 0) {
        cr_set_err(err, errlen, "truncated ELF header");
        return -1;
    }
    uint64_t phoff = get_u(&s, eh + (s.is64 ? 0x20 : 0x1c), w);
    uint64_t phentsize = get_u(&s, eh + (s.is64 ? 0x36 : 0x2a), 2);
    uint64_t phnum = get_u(&s, eh + (s.is64 ? 0x38 : 0x2c), 2);
    size_t min_phent = s.is64 ? 56 : 32;
    if (phnum == 0) {
        cr_set_err(err, errlen, "no program headers (not an executable)");
        return -1;
    }
    if (phnum > CR_ELF_MAX_PHDRS || phentsize < min_phent || phentsize > 1024) {
        cr_set_err(err, errlen, "malformed program header table");
        return -1;
    }

    elf_load_t *loads = calloc(phnum, sizeof *loads);
    if (loads == NULL) {
        cr_set_err(err, errlen, "out of memory");
        return -1;
    }
    size_t nloads = 0;
    int have_dyn = 0;
    uint64_t dyn_off = 0, dyn_size = 0;
    for (uint64_t i = 0; i < phnum; i++) {
        unsigned char ph[64];
        if (phoff > UINT64_MAX - i * phentsize ||
            src_read(&s, phoff + i * phentsize, min_phent, ph) != 0) {
            free(loads);
            cr_set_err(err, errlen, "truncated program header table");
            return -1;
        }
        uint64_t type = get_u(&s, ph, 4);
        uint64_t off, vaddr, filesz;
        if (s.is64) {
            off = get_u(&s, ph + 8, 8);
            vaddr = get_u(&s, ph + 16, 8);
            filesz = get_u(&s, ph + 32, 8);
        } else {
            off = get_u(&s, ph + 4, 4);
            vaddr = get_u(&s, ph + 8, 4);
            filesz = get_u(&s, ph + 16, 4);
        }
        if (type == PT_LOAD_) {
            loads[nloads].offset = off;
            loads[nloads].vaddr = vaddr;
            loads[nloads].filesz = filesz;
            nloads++;
        } else if (type == PT_DYNAMIC_ && !have_dyn) {
            have_dyn = 1;
            dyn_off = off;
            dyn_size = filesz;
        }
    }
    if (!have_dyn) {
        free(loads);
        cr_set_err(err, errlen, "it is statically linked");
        return -1;
    }

    size_t dent = 2 * w;
    uint64_t ndyn = dyn_size / dent;
    if (ndyn > CR_ELF_MAX_DYN)
        ndyn = CR_ELF_MAX_DYN;
    uint64_t strtab_addr = 0, strsz = 0;
    int have_strtab = 0;
    uint64_t *needed = malloc(CR_ELF_MAX_NEEDED * sizeof *needed);
    size_t nneeded = 0;
    if (needed == NULL) {
        free(loads);
        cr_set_err(err, errlen, "out of memory");
        return -1;
    }
    for (uint64_t i = 0; i < ndyn; i++) {
        unsigned char d[16];
        if (dyn_off > UINT64_MAX - i * dent || src_read(&s, dyn_off + i * dent, dent, d) != 0) {
            free(loads);
            free(needed);
            cr_set_err(err, errlen, "truncated dynamic section");
            return -1;
        }
        uint64_t tag = get_u(&s, d, w);
        uint64_t val = get_u(&s, d + w, w);
        if (tag == DT_NULL_)
            break;
        if (tag == DT_NEEDED_ && nneeded < CR_ELF_MAX_NEEDED)
            needed[nneeded++] = val;
        else if (tag == DT_STRTAB_) {
            strtab_addr = val;
            have_strtab = 1;
        } else if (tag == DT_STRSZ_)
            strsz = val;
    }

    char **names = NULL;
    if (nneeded > 0) {
        if (!have_strtab) {
            free(loads);
            free(needed);
            cr_set_err(err, errlen, "dynamic section has no string table");
            return -1;
        }
        /* Map the string table's address to a file offset. */
        uint64_t str_off = 0, str_end = 0;
        int mapped = 0;
        for (size_t i = 0; i < nloads; i++) {
            if (strtab_addr >= loads[i].vaddr && strtab_addr - loads[i].vaddr < loads[i].filesz) {
                str_off = loads[i].offset + (strtab_addr - loads[i].vaddr);
                str_end = loads[i].offset + loads[i].filesz;
                if (str_off < loads[i].offset || str_end < loads[i].offset)
                    continue; /* overflow: treat as unmapped */
                mapped = 1;
                break;
            }
        }
        if (!mapped) {
            free(loads);
            free(needed);
            cr_set_err(err, errlen, "string table outside the loaded segments");
            return -1;
        }
        if (strsz > 0 && str_off + strsz > str_off && str_off + strsz < str_end)
            str_end = str_off + strsz;
        names = calloc(nneeded, sizeof *names);
        if (names == NULL) {
            free(loads);
            free(needed);
            cr_set_err(err, errlen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < nneeded; i++) {
            char *n = NULL;
            if (needed[i] < str_end - str_off)
                n = read_string(&s, str_off + needed[i], str_end);
            if (n == NULL) {
                cr_elf_free_names(names, i);
                free(loads);
                free(needed);
                cr_set_err(err, errlen, "malformed DT_NEEDED entry");
                return -1;
            }
            names[i] = n;
        }
    }
    free(loads);
    free(needed);
    *names_p = names;
    *count = nneeded;
    return 0;
}

int cr_elf_needed_mem(const unsigned char *data, size_t size, char ***names_p, size_t *count,
                      char *err, size_t errlen)
{
    elf_src_t s = {.mem = data, .fd = -1, .size = size};
    if (data == NULL)
        s.size = 0;
    return parse(&s, names_p, count, err, errlen);
}

int cr_elf_needed(const char *path, char ***names_p, size_t *count, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cr_set_err(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        cr_set_err(err, errlen, "it is not a regular file");
        return -1;
    }
    elf_src_t s = {.mem = NULL, .fd = fd, .size = (uint64_t)st.st_size};
    int rc = parse(&s, names_p, count, err, errlen);
    close(fd);
    return rc;
}

cr_abi_t cr_detect_abi(const char *path, char *err, size_t errlen)
{
    char **names = NULL;
    size_t n = 0;
    char why[256];
    if (cr_elf_needed(path, &names, &n, why, sizeof why) != 0) {
        cr_set_err(err, errlen, "%s", why);
        return CR_ABI_UNKNOWN;
    }
    int mpich = 0, ompi = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], "libmpich.so.12") == 0 || strcmp(names[i], "libmpi.so.12") == 0)
            mpich = 1;
        else if (strcmp(names[i], "libmpi.so.40") == 0)
            ompi = 1;
    }
    cr_elf_free_names(names, n);
    if (mpich && ompi) {
        cr_set_err(err, errlen, "it links both MPICH (libmpi.so.12) and Open MPI (libmpi.so.40)");
        return CR_ABI_UNKNOWN;
    }
    if (mpich)
        return CR_ABI_MPICH;
    if (ompi)
        return CR_ABI_OMPI;
    cr_set_err(err, errlen,
               "it does not link libmpich.so.12, libmpi.so.12 or libmpi.so.40 directly");
    return CR_ABI_UNKNOWN;
}

/* Checks that path names an executable regular file. */
static int usable(const char *path, int *why)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *why = errno;
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
        return 0;
    }
    if (access(path, X_OK) != 0) {
        *why = errno;
        return 0;
    }
    return 1;
}

static int make_absolute(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
    if (path[0] == '/') {
        if (strlen(path) >= outlen) {
            cr_set_err(err, errlen, "%s: path too long", path);
            return -1;
        }
        strcpy(out, path);
        return 0;
    }
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL) {
        cr_set_err(err, errlen, "cannot read the current directory: %s", strerror(errno));
        return -1;
    }
    const char *p = path;
    while (p[0] == '.' && p[1] == '/')
        p += 2;
    if ((size_t)snprintf(out, outlen, "%s/%s", cwd, p) >= outlen) {
        cr_set_err(err, errlen, "%s: path too long", path);
        return -1;
    }
    return 0;
}

int cr_resolve_program(const char *prog, char *out, size_t outlen, char *err, size_t errlen)
{
    if (prog == NULL || prog[0] == '\0') {
        cr_set_err(err, errlen, "empty program name");
        return -1;
    }
    int why = ENOENT;
    if (strchr(prog, '/') != NULL) {
        if (!usable(prog, &why)) {
            cr_set_err(err, errlen, "%s: %s", prog, strerror(why));
            return -1;
        }
        return make_absolute(prog, out, outlen, err, errlen);
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    int saw_eacces = 0;
    const char *p = path;
    for (;;) {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char cand[PATH_MAX];
        int n;
        if (len == 0)
            n = snprintf(cand, sizeof cand, "%s", prog);
        else
            n = snprintf(cand, sizeof cand, "%.*s/%s", (int)len, p, prog);
        if (n > 0 && (size_t)n < sizeof cand) {
            if (usable(cand, &why))
                return make_absolute(cand, out, outlen, err, errlen);
            if (why == EACCES)
                saw_eacces = 1;
        }
        if (end == NULL)
            break;
        p = end + 1;
    }
    cr_set_err(err, errlen, "%s: %s", prog,
               saw_eacces ? "found in PATH but not executable" : "command not found in PATH");
    return -1;
}
