/*  cl_config_doc.c - keeps the documentation of COLLAB_* variables honest.

    cl_config_doc --markdown        prints the variable table (name, default,
                                    meaning) from cl_config_table() as
                                    Markdown (HTML-escaped), for the docs;
    cl_config_doc --check FILE      checks FILE's Markdown table rows: every
                                    variable of cl_config_table() appears in
                                    one, and every COLLAB_* name in them is a
                                    real variable; a row whose first cell is
                                    a single variable must also show its
                                    default (second cell, backticks ignored);
    cl_config_doc --check-optional FILE
                                    the same, but exits 77 (CTest's SKIP) when
                                    FILE is missing or has no COLLAB_ table
                                    yet; only names are compared there.

    In table rows, "`COLLAB_SWARM_KEY` / `_FILE`" counts for both names.
*/
#include "util/cl_config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

static size_t s_n;
static const cl_config_entry_t *s_table;
static bool *s_seen;

static int s_index(const char *name)
{
    for (size_t i = 0; i < s_n; i++) {
        if (strcmp(s_table[i].name, name) == 0)
            return (int)i;
    }
    return -1;
}

/* Copies the text of table cell `col` (0-based) of row into out, trimmed
   and without backticks.  Returns 0, or -1 if the row has fewer cells. */
static int s_cell(const char *row, int col, char *out, size_t len)
{
    const char *p = strchr(row, '|');
    for (int c = 0; p != NULL && c < col; c++)
        p = strchr(p + 1, '|');
    if (p == NULL)
        return -1;
    const char *end = strchr(p + 1, '|');
    if (end == NULL)
        return -1;
    size_t o = 0;
    for (const char *q = p + 1; q < end && o + 1 < len; q++) {
        if (*q != '`')
            out[o++] = *q;
    }
    out[o] = '\0';
    size_t start = strspn(out, " \t");
    memmove(out, out + start, o - start + 1);
    o -= start;
    while (o > 0 && isspace((unsigned char)out[o - 1]))
        out[--o] = '\0';
    return 0;
}

/* Checks one table row; returns the number of problems found. */
static int s_check_row(const char *file, int lineno, const char *row, bool defaults)
{
    int problems = 0;
    char last[128] = "";
    for (const char *p = strchr(row, '`'); p != NULL;) {
        const char *end = strchr(p + 1, '`');
        if (end == NULL)
            break;
        char token[128];
        size_t n = 0;
        for (const char *q = p + 1;
             q < end && n + 1 < sizeof token &&
             (isupper((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '_');
             q++)
            token[n++] = *q;
        token[n] = '\0';
        char name[256] = "";
        if (strncmp(token, "COLLAB_", 7) == 0) {
            snprintf(name, sizeof name, "%s", token);
            snprintf(last, sizeof last, "%s", token);
        } else if (token[0] == '_' && last[0] != '\0') {
            snprintf(name, sizeof name, "%s%s", last, token);
        }
        if (name[0] != '\0') {
            int i = s_index(name);
            if (i < 0) {
                fprintf(stderr, "%s:%d: %s is not a variable of cl_config_table()\n", file, lineno,
                        name);
                problems++;
            } else {
                s_seen[i] = true;
            }
        }
        p = strchr(end + 1, '`');
    }
    char first[256], second[512];
    if (defaults && s_cell(row, 0, first, sizeof first) == 0 && s_index(first) >= 0 &&
        s_cell(row, 1, second, sizeof second) == 0) {
        const char *want = s_table[s_index(first)].default_text;
        if (strcmp(second, want) != 0) {
            fprintf(stderr, "%s:%d: default of %s is \"%s\", the table says \"%s\"\n", file, lineno,
                    first, second, want);
            problems++;
        }
    }
    return problems;
}

static int s_check(const char *file, bool optional)
{
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        if (optional) {
            printf("SKIP: %s does not exist yet\n", file);
            return SKIP;
        }
        perror(file);
        return 1;
    }
    char line[4096];
    int lineno = 0, rows = 0, problems = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        const char *p = line + strspn(line, " \t");
        if (*p != '|' || strstr(p, "`COLLAB_") == NULL)
            continue;
        rows++;
        problems += s_check_row(file, lineno, p, !optional);
    }
    fclose(f);
    if (rows == 0) {
        if (optional) {
            printf("SKIP: %s has no table of COLLAB_ variables yet\n", file);
            return SKIP;
        }
        fprintf(stderr, "%s: no table of COLLAB_ variables\n", file);
        return 1;
    }
    for (size_t i = 0; i < s_n; i++) {
        if (!s_seen[i]) {
            fprintf(stderr, "%s: %s is missing from the table of variables\n", file,
                    s_table[i].name);
            problems++;
        }
    }
    if (problems > 0) {
        fprintf(stderr, "%s: %d problem(s); cl_config_doc --markdown prints the table\n", file,
                problems);
        return 1;
    }
    printf("%s: all %zu variables documented\n", file, s_n);
    return 0;
}

int main(int argc, char **argv)
{
    s_table = cl_config_table(&s_n);
    s_seen = calloc(s_n, sizeof *s_seen);
    if (s_seen == NULL)
        return 1;
    int rc = 2;
    if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
        printf("| variable | default | meaning |\n|---|---|---|\n");
        for (size_t i = 0; i < s_n; i++) {
            printf("| `%s` | %s | ", s_table[i].name, s_table[i].default_text);
            for (const char *h = s_table[i].help; *h != '\0'; h++) {
                if (*h == '<' || *h == '>' || *h == '|')
                    printf("&%s;", *h == '<' ? "lt" : *h == '>' ? "gt" : "#124");
                else
                    putchar(*h);
            }
            printf(" |\n");
        }
        rc = 0;
    } else if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        rc = s_check(argv[2], false);
    } else if (argc == 3 && strcmp(argv[1], "--check-optional") == 0) {
        rc = s_check(argv[2], true);
    } else {
        fprintf(stderr, "usage: %s --markdown | --check FILE | --check-optional FILE\n", argv[0]);
    }
    free(s_seen);
    return rc;
}
