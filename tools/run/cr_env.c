/*  cr_env.c - environment blocks for execve().

    A plain array of malloc'ed "NAME=value" strings kept NULL-terminated;
    peers are few and variables a few hundred, so linear search is fine.
*/
#include "cr_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cr_env {
    char **vars; /* NULL-terminated, each malloc'ed */
    size_t n;    /* entries before the NULL */
    size_t cap;  /* allocated entries, including room for the NULL */
};

static int grow(cr_env_t *self)
{
    if (self->n + 1 < self->cap)
        return 0;
    size_t cap = self->cap < 16 ? 16 : self->cap * 2;
    char **v = realloc(self->vars, cap * sizeof *v);
    if (v == NULL)
        return -1;
    self->vars = v;
    self->cap = cap;
    return 0;
}

cr_env_t *cr_env_new(char *const *base)
{
    cr_env_t *self = calloc(1, sizeof *self);
    if (self == NULL || grow(self) != 0)
        goto fail;
    self->vars[0] = NULL;
    for (size_t i = 0; base != NULL && base[i] != NULL; i++) {
        if (strchr(base[i], '=') == NULL)
            continue; /* not a variable: execve would pass it, but nobody reads it */
        if (grow(self) != 0)
            goto fail;
        self->vars[self->n] = strdup(base[i]);
        if (self->vars[self->n] == NULL)
            goto fail;
        self->n++;
        self->vars[self->n] = NULL;
    }
    return self;
fail:
    cr_env_destroy(&self);
    return NULL;
}

void cr_env_destroy(cr_env_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    cr_env_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++)
        free(self->vars[i]);
    free(self->vars);
    free(self);
    *self_p = NULL;
}

static long find(const cr_env_t *self, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < self->n; i++)
        if (strncmp(self->vars[i], name, len) == 0 && self->vars[i][len] == '=')
            return (long)i;
    return -1;
}

const char *cr_env_get(const cr_env_t *self, const char *name)
{
    long i = find(self, name);
    return i < 0 ? NULL : self->vars[i] + strlen(name) + 1;
}

void cr_env_unset(cr_env_t *self, const char *name)
{
    long i;
    while ((i = find(self, name)) >= 0) {
        free(self->vars[i]);
        memmove(&self->vars[i], &self->vars[i + 1], (self->n - (size_t)i) * sizeof(char *));
        self->n--;
    }
}

int cr_env_set(cr_env_t *self, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *v = malloc(len);
    if (v == NULL)
        return -1;
    snprintf(v, len, "%s=%s", name, value);
    long i = find(self, name);
    if (i >= 0) {
        free(self->vars[i]);
        self->vars[i] = v;
        return 0;
    }
    if (grow(self) != 0) {
        free(v);
        return -1;
    }
    self->vars[self->n++] = v;
    self->vars[self->n] = NULL;
    return 0;
}

int cr_env_prepend(cr_env_t *self, const char *name, const char *value, char sep)
{
    const char *old = cr_env_get(self, name);
    if (old == NULL || old[0] == '\0')
        return cr_env_set(self, name, value);
    size_t len = strlen(value) + strlen(old) + 2;
    char *joined = malloc(len);
    if (joined == NULL)
        return -1;
    snprintf(joined, len, "%s%c%s", value, sep, old);
    int rc = cr_env_set(self, name, joined);
    free(joined);
    return rc;
}

char **cr_env_array(cr_env_t *self)
{
    return self->vars;
}
