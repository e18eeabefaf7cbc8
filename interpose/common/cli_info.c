/*  cli_info.c - info objects (key/value hints).

    An info object is an ordered list of (key, value) strings.  Keys are
    at most MPI_MAX_INFO_KEY and values MPI_MAX_INFO_VAL characters of
    the face's ABI.  MPI_INFO_ENV is a read-only predefined object that
    holds "command", "argv", "maxprocs" and "thread_level" once MPI_Init
    has run (cli_info_env_fill).
*/
#include "cli.h"
#include "cli_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cli_info_t cli_info_env = {.predef = CLI_INFO_ENV, .index = -1};

void cli_info_free(cli_info_t *i)
{
    if (i == NULL || i->predef >= 0)
        return;
    for (int k = 0; k < i->nkeys; k++) {
        free(i->keys[k]);
        free(i->vals[k]);
    }
    free(i->keys);
    free(i->vals);
    free(i);
}

/* Sets key to val in i (cli.lock held or i private).  Returns 0 or -1. */
static int cli_info_put(cli_info_t *i, const char *key, const char *val)
{
    for (int k = 0; k < i->nkeys; k++) {
        if (strcmp(i->keys[k], key) == 0) {
            char *v = strdup(val);
            if (v == NULL)
                return -1;
            free(i->vals[k]);
            i->vals[k] = v;
            return 0;
        }
    }
    char **nk = realloc(i->keys, (size_t)(i->nkeys + 1) * sizeof(char *));
    if (nk == NULL)
        return -1;
    i->keys = nk;
    char **nv = realloc(i->vals, (size_t)(i->nkeys + 1) * sizeof(char *));
    if (nv == NULL)
        return -1;
    i->vals = nv;
    char *k = strdup(key), *v = strdup(val);
    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return -1;
    }
    i->keys[i->nkeys] = k;
    i->vals[i->nkeys] = v;
    i->nkeys++;
    return 0;
}

cli_info_t *cli_info_copy(const cli_info_t *src)
{
    cli_info_t *i = calloc(1, sizeof *i);
    if (i == NULL)
        return NULL;
    i->predef = -1;
    i->index = -1;
    for (int k = 0; k < src->nkeys; k++) {
        if (cli_info_put(i, src->keys[k], src->vals[k]) != 0) {
            cli_info_free(i);
            return NULL;
        }
    }
    return i;
}

/* Fills MPI_INFO_ENV at MPI_Init. */
void cli_info_env_fill(int argc, char **argv, int thread_level)
{
    static const char *const levels[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED",
                                         "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE"};
    char buf[64];
    cli_lock();
    if (argc > 0 && argv != NULL && argv[0] != NULL) {
        cli_info_put(&cli_info_env, "command", argv[0]);
        size_t len = 1;
        for (int a = 1; a < argc && argv[a] != NULL; a++)
            len += strlen(argv[a]) + 1;
        char *all = calloc(len, 1);
        if (all != NULL) {
            for (int a = 1; a < argc && argv[a] != NULL; a++) {
                if (a > 1)
                    strcat(all, " ");
                strcat(all, argv[a]);
            }
            cli_info_put(&cli_info_env, "argv", all);
            free(all);
        }
    }
    snprintf(buf, sizeof buf, "%d", collab_world_size());
    cli_info_put(&cli_info_env, "maxprocs", buf);
    if (thread_level >= 0 && thread_level <= 3)
        cli_info_put(&cli_info_env, "thread_level", levels[thread_level]);
    cli_unlock();
}

static int cli_info_arg(cli_call_t *call, MPI_Info h, int writable, cli_info_t **out)
{
    int why = 0;
    *out = cli_info_lookup(h, &why);
    if (*out == NULL)
        return cli_err(call, MPI_ERR_INFO, "info", "%s",
                       why == CLI_H_NULL ? "MPI_INFO_NULL is not a valid info object"
                                         : "not an info handle");
    if (writable && (*out)->predef >= 0)
        return cli_err(call, MPI_ERR_INFO, "info", "MPI_INFO_ENV cannot be modified");
    return MPI_SUCCESS;
}

static int cli_key_arg(cli_call_t *call, const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > MPI_MAX_INFO_KEY)
        return cli_err(call, MPI_ERR_INFO_KEY, "key", "length %zu is not in [1, %d]", n,
                       MPI_MAX_INFO_KEY);
    return MPI_SUCCESS;
}

int cli_impl_Info_create(cli_call_t *call, MPI_Info *info)
{
    cli_info_t *i = calloc(1, sizeof *i);
    if (i == NULL)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    i->predef = -1;
    if (cli_info_register(i, info) != MPI_SUCCESS) {
        free(i);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of info handles");
    }
    return MPI_SUCCESS;
}

int cli_impl_Info_create_env(cli_call_t *call, int argc, char *argv[], MPI_Info *info)
{
    (void)argc;
    (void)argv;
    return cli_impl_Info_dup(call, cli_info_handle(&cli_info_env), info);
}

int cli_impl_Info_set(cli_call_t *call, MPI_Info info, const char *key, const char *value)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 1, &i);
    if (rc == MPI_SUCCESS)
        rc = cli_key_arg(call, key);
    if (rc != MPI_SUCCESS)
        return rc;
    size_t n = strlen(value);
    if (n == 0 || n > MPI_MAX_INFO_VAL)
        return cli_err(call, MPI_ERR_INFO_VALUE, "value", "length %zu is not in [1, %d]", n,
                       MPI_MAX_INFO_VAL);
    cli_lock();
    rc = cli_info_put(i, key, value);
    cli_unlock();
    if (rc != 0)
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    return MPI_SUCCESS;
}

/* Finds key; returns its value (cli.lock held) or NULL. */
static const char *cli_info_find(const cli_info_t *i, const char *key)
{
    for (int k = 0; k < i->nkeys; k++)
        if (strcmp(i->keys[k], key) == 0)
            return i->vals[k];
    return NULL;
}

int cli_impl_Info_get(cli_call_t *call, MPI_Info info, const char *key, int valuelen, char *value,
                      int *flag)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 0, &i);
    if (rc == MPI_SUCCESS)
        rc = cli_key_arg(call, key);
    if (rc != MPI_SUCCESS)
        return rc;
    if (valuelen < 0)
        return cli_err(call, MPI_ERR_ARG, "valuelen", "%d is negative", valuelen);
    cli_lock();
    const char *v = cli_info_find(i, key);
    *flag = v != NULL;
    if (v != NULL && value != NULL) {
        size_t n = strlen(v);
        if (n > (size_t)valuelen)
            n = (size_t)valuelen;
        memcpy(value, v, n);
        value[n] = '\0';
    }
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Info_get_string(cli_call_t *call, MPI_Info info, const char *key, int *buflen,
                             char *value, int *flag)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 0, &i);
    if (rc == MPI_SUCCESS)
        rc = cli_key_arg(call, key);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    const char *v = cli_info_find(i, key);
    *flag = v != NULL;
    if (v != NULL) {
        int need = (int)strlen(v) + 1;
        if (*buflen > 0 && value != NULL) {
            int n = need <= *buflen ? need - 1 : *buflen - 1;
            memcpy(value, v, (size_t)n);
            value[n] = '\0';
        }
        *buflen = need;
    }
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Info_get_valuelen(cli_call_t *call, MPI_Info info, const char *key, int *valuelen,
                               int *flag)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 0, &i);
    if (rc == MPI_SUCCESS)
        rc = cli_key_arg(call, key);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    const char *v = cli_info_find(i, key);
    *flag = v != NULL;
    if (v != NULL)
        *valuelen = (int)strlen(v);
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Info_delete(cli_call_t *call, MPI_Info info, const char *key)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 1, &i);
    if (rc == MPI_SUCCESS)
        rc = cli_key_arg(call, key);
    if (rc != MPI_SUCCESS)
        return rc;
    int found = 0;
    cli_lock();
    for (int k = 0; k < i->nkeys && !found; k++) {
        if (strcmp(i->keys[k], key) == 0) {
            free(i->keys[k]);
            free(i->vals[k]);
            memmove(&i->keys[k], &i->keys[k + 1], (size_t)(i->nkeys - k - 1) * sizeof(char *));
            memmove(&i->vals[k], &i->vals[k + 1], (size_t)(i->nkeys - k - 1) * sizeof(char *));
            i->nkeys--;
            found = 1;
        }
    }
    cli_unlock();
    if (!found)
        return cli_err(call, MPI_ERR_INFO_NOKEY, "key", "\"%s\" is not set", key);
    return MPI_SUCCESS;
}

int cli_impl_Info_dup(cli_call_t *call, MPI_Info info, MPI_Info *newinfo)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 0, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    cli_info_t *c = cli_info_copy(i);
    cli_unlock();
    if (c == NULL || cli_info_register(c, newinfo) != MPI_SUCCESS) {
        cli_info_free(c);
        return cli_err(call, MPI_ERR_NO_MEM, NULL, "out of memory");
    }
    return MPI_SUCCESS;
}

int cli_impl_Info_free(cli_call_t *call, MPI_Info *info)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, *info, 1, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    cli_table_remove(&cli.infos, i->index);
    cli_unlock();
    cli_info_free(i);
    *info = cli_abi_info_null();
    return MPI_SUCCESS;
}

int cli_impl_Info_get_nkeys(cli_call_t *call, MPI_Info info, int *nkeys)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 0, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    *nkeys = i->nkeys;
    cli_unlock();
    return MPI_SUCCESS;
}

int cli_impl_Info_get_nthkey(cli_call_t *call, MPI_Info info, int n, char *key)
{
    cli_info_t *i;
    int rc = cli_info_arg(call, info, 0, &i);
    if (rc != MPI_SUCCESS)
        return rc;
    cli_lock();
    int ok = n >= 0 && n < i->nkeys;
    if (ok)
        snprintf(key, MPI_MAX_INFO_KEY + 1, "%s", i->keys[n]);
    int nk = i->nkeys;
    cli_unlock();
    if (!ok)
        return cli_err(call, MPI_ERR_ARG, "n", "%d is not in [0, %d)", n, nk);
    return MPI_SUCCESS;
}
