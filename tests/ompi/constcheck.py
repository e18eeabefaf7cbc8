#!/usr/bin/python3
"""constcheck.py - compares the Open MPI face's mpi.h with Open MPI's own.

Every constant Open MPI 4.1's mpi.h defines (object-like MPI_* / OMPI_*
macros and enum members, read from the real header with the preprocessor)
is printed by one generated C program, compiled twice: once with
mpicc.openmpi against Open MPI's header, once against interpose/ompi/mpi.h.
Integer constants print their value, handles print the name of the object
they point at (ompi_mpi_comm_world, ...), other pointers print their value.
The program also prints sizeof/offsetof of MPI_Status and the scalar types.
The test fails if a constant is missing from our header or differs.

Usage: constcheck.py --ours-include DIR [--ours-include DIR ...]
                     --ours-source objects.c [...] --workdir DIR
"""
import argparse
import os
import re
import subprocess
import sys

# Names of the real header that are not constants a program can evaluate.
SKIP = {
    "MPI_Fint",  # a type (#define MPI_Fint int)
    "MPI_UB", "MPI_LB",  # removed in MPI-3.0: a _Static_assert in C11 mode
    "MPI_COMBINER_HVECTOR_INTEGER", "MPI_COMBINER_HINDEXED_INTEGER",
    "MPI_COMBINER_STRUCT_INTEGER",
    "OMPI_MPI_H", "OMPI_BUILDING", "OMPI_DECLSPEC", "OMPI_OMIT_MPI1_COMPAT_DECLS",
    "OMPI_REMOVED_USE_STATIC_ASSERT", "OMPI_MPI_AINT_TYPE", "OMPI_MPI_COUNT_TYPE",
    "OMPI_MPI_OFFSET_TYPE", "OMPI_BUILD_CXX_BINDINGS", "OMPI_CXX_SUPPORTS_2D_CONST_CAST",
    "OMPI_HAVE_CXX_EXCEPTION_SUPPORT", "OMPI_WANT_MPI_CXX_SEEK",
    "OMPI_WANT_MPI_INTERFACE_WARNING", "OMPI_ENABLE_MPI1_COMPAT",
}

LAYOUT = r"""
    printf("sizeof(MPI_Status) %zu\n", sizeof(MPI_Status));
    printf("offsetof(MPI_SOURCE) %zu\n", offsetof(MPI_Status, MPI_SOURCE));
    printf("offsetof(MPI_TAG) %zu\n", offsetof(MPI_Status, MPI_TAG));
    printf("offsetof(MPI_ERROR) %zu\n", offsetof(MPI_Status, MPI_ERROR));
    printf("offsetof(_cancelled) %zu\n", offsetof(MPI_Status, _cancelled));
    printf("offsetof(_ucount) %zu\n", offsetof(MPI_Status, _ucount));
    printf("sizeof(_ucount) %zu\n", sizeof(((MPI_Status *)0)->_ucount));
    printf("sizeof(MPI_Aint) %zu signed %d\n", sizeof(MPI_Aint), (MPI_Aint)-1 < 0);
    printf("sizeof(MPI_Offset) %zu signed %d\n", sizeof(MPI_Offset), (MPI_Offset)-1 < 0);
    printf("sizeof(MPI_Count) %zu signed %d\n", sizeof(MPI_Count), (MPI_Count)-1 < 0);
    printf("sizeof(MPI_Fint) %zu\n", sizeof(MPI_Fint));
    printf("sizeof(MPI_Comm) %zu\n", sizeof(MPI_Comm));
    printf("sizeof(MPI_Datatype) %zu\n", sizeof(MPI_Datatype));
    printf("sizeof(MPI_Request) %zu\n", sizeof(MPI_Request));
"""

PRELUDE = r"""
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* Prints the ompi_* / OMPI_C_* symbol named in a macro's expansion. */
static void show_symbol(const char *name, const char *text)
{
    const char *p = strstr(text, "ompi_");
    if (p == NULL)
        p = strstr(text, "OMPI_C_");
    if (p == NULL) {
        printf("%s <pointer %s>\n", name, text);
        return;
    }
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    printf("%s -> %.*s\n", name, (int)n, p);
}

static void show_int(const char *name, long long v) { printf("%s = %lld\n", name, v); }
static void show_ptr(const char *name, const char *text, const void *p)
{
    if (strstr(text, "ompi_") != NULL || strstr(text, "OMPI_C_") != NULL)
        show_symbol(name, text);
    else
        printf("%s = (pointer)%lld\n", name, (long long)(intptr_t)p);
}

#define SHOW(x)                                                                    \
    _Generic((x), char: show_int(#x, (long long)(x)), int: show_int(#x, (long long)(x)), \
             unsigned: show_int(#x, (long long)(x)), long: show_int(#x, (long long)(x)),  \
             long long: show_int(#x, (long long)(x)),                              \
             default: show_ptr(#x, STR(x), (const void *)(uintptr_t)(x)))
"""


def real_constants(mpicc):
    probe = "#include <mpi.h>\n"
    macros = subprocess.run([mpicc, "-E", "-dM", "-x", "c", "-"], input=probe,
                            capture_output=True, text=True, check=True).stdout
    names = set()
    for line in macros.splitlines():
        m = re.match(r"#define ((?:MPI|OMPI|MPIX)_[A-Za-z0-9_]*)(\s|$)", line)
        if m:
            names.add(m.group(1))
    pre = subprocess.run([mpicc, "-E", "-x", "c", "-"], input=probe, capture_output=True,
                         text=True, check=True).stdout
    for block in re.findall(r"enum\s*\{([^}]*)\}", pre):
        for item in block.split(","):
            item = item.strip()
            m = re.match(r"((?:MPI|OMPI|IMPI)_[A-Za-z0-9_]*)", item)
            if m and not m.group(1).startswith("OMPI_WAS_"):
                names.add(m.group(1))
    # Function-like names and the skip list are not constants.
    return sorted(n for n in names if n not in SKIP and not re.search(r"[a-z]", n.split("_", 1)[1][:1] or "x"))


def generate(names, path):
    with open(path, "w") as f:
        f.write(PRELUDE)
        f.write("int main(void)\n{\n")
        f.write(LAYOUT)
        for n in names:
            f.write("    SHOW(%s);\n" % n)
        f.write("    return 0;\n}\n")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write("command failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
        sys.exit(1)
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpicc", default="mpicc.openmpi")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--ours-include", action="append", required=True)
    ap.add_argument("--ours-source", action="append", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    names = real_constants(a.mpicc)
    if len(names) < 250:
        sys.exit("constcheck: found only %d constants in Open MPI's header" % len(names))
    src = os.path.join(a.workdir, "constcheck_gen.c")
    generate(names, src)
    real_exe = os.path.join(a.workdir, "constcheck_real")
    ours_exe = os.path.join(a.workdir, "constcheck_ours")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run([a.mpicc, "-std=gnu11", "-o", real_exe, src])
    inc = []
    for d in a.ours_include:
        inc += ["-I", d]
    run([a.cc, "-std=gnu11", "-Wall", "-o", ours_exe] + inc + [src] + a.ours_source +
        ["-lpthread"])
    real = run([real_exe], env=env).splitlines()
    ours = run([ours_exe], env=env).splitlines()
    rmap = {l.split(" ", 1)[0]: l for l in real}
    omap = {l.split(" ", 1)[0]: l for l in ours}
    bad = 0
    for key, line in rmap.items():
        if omap.get(key) != line:
            print("MISMATCH  open mpi: %-50s ours: %s" % (line, omap.get(key, "<missing>")))
            bad += 1
    print("constcheck: %d names and layout facts compared, %d mismatches" % (len(rmap), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
