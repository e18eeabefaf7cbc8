/*  cr_env.h - an environment block being prepared for one peer.

    A copy of collab-run's own environment in which variables are set,
    removed or prepended to; the result is handed to execve() as is.
*/
#ifndef CR_ENV_H_INCLUDED
#define CR_ENV_H_INCLUDED

#include <stddef.h>

typedef struct cr_env cr_env_t;

/* Copies a NULL-terminated "NAME=value" array.  Returns NULL when out of
   memory.  Caller owns the result. */
cr_env_t *cr_env_new(char *const *base);

/* Frees the block; nulls *self_p; accepts NULL. */
void cr_env_destroy(cr_env_t **self_p);

/* The value of name, or NULL when unset.  Valid until the next change. */
const char *cr_env_get(const cr_env_t *self, const char *name);

/* Sets name=value (replacing any previous value).  Returns 0 or -1. */
int cr_env_set(cr_env_t *self, const char *name, const char *value);

/* Sets name to value, followed by sep and the old value if there was a
   non-empty one ("LD_PRELOAD=ours:theirs").  Returns 0 or -1. */
int cr_env_prepend(cr_env_t *self, const char *name, const char *value, char sep);

/* Removes name (every occurrence).  */
void cr_env_unset(cr_env_t *self, const char *name);

/* The NULL-terminated array for execve; owned by the block. */
char **cr_env_array(cr_env_t *self);

#endif
