/*  cr_elf.h - finds the program collab-run is asked to start and tells
    which MPI ABI it was linked against.

    The ABI is read from the program's own DT_NEEDED entries (parsed here,
    without running the program or the dynamic loader): libmpich.so.12 or
    libmpi.so.12 mean the MPICH ABI, libmpi.so.40 the Open MPI ABI.
*/
#ifndef CR_ELF_H_INCLUDED
#define CR_ELF_H_INCLUDED

#include <stddef.h>

typedef enum {
    CR_ABI_UNKNOWN = 0, /* not decided (no --abi given, nothing detected) */
    CR_ABI_MPICH = 1,   /* libmpich.so.12 / libmpi.so.12 */
    CR_ABI_OMPI = 2,    /* libmpi.so.40 */
} cr_abi_t;

/* "mpich", "ompi" or "unknown"; static. */
const char *cr_abi_name(cr_abi_t abi);

/* Resolves prog like execvp() does: a name with a '/' is taken as a path,
   otherwise each PATH entry is tried (an empty entry is the current
   directory; PATH unset means "/usr/local/bin:/usr/bin:/bin").  Writes an
   absolute path of an executable regular file into out and returns 0, or
   returns -1 with a one-line reason in err. */
int cr_resolve_program(const char *prog, char *out, size_t outlen, char *err, size_t errlen);

/* Reads the DT_NEEDED names of the ELF file at path (ELF32 or ELF64,
   either byte order).  On success returns 0, *names_p receives a malloc'ed
   array of *count malloc'ed strings (caller frees them with
   cr_elf_free_names).  Returns -1 with a reason in err for anything that
   is not a dynamically linked ELF file (a script, a static binary, a
   truncated or malformed file).  Every offset is bounds-checked. */
int cr_elf_needed(const char *path, char ***names_p, size_t *count, char *err, size_t errlen);

/* Same, parsing an ELF image already in memory (for tests and fuzzing). */
int cr_elf_needed_mem(const unsigned char *data, size_t size, char ***names_p, size_t *count,
                      char *err, size_t errlen);

/* Frees what cr_elf_needed returned; accepts NULL. */
void cr_elf_free_names(char **names, size_t count);

/* Detects the ABI of the program at path.  Returns CR_ABI_MPICH or
   CR_ABI_OMPI, or CR_ABI_UNKNOWN with the reason in err (not ELF, static,
   no MPI library among its direct dependencies, or both ABIs at once). */
cr_abi_t cr_detect_abi(const char *path, char *err, size_t errlen);

#endif
