/*  cl_config_value.h - strict parsers for the values of COLLAB_* variables.

    Internal to cl_config.c (and its tests).  Each parser accepts exactly
    the documented syntax, independent of the C locale; on error it writes
    a reason starting with "expected" into why and returns -1.
*/
#ifndef CL_CONFIG_VALUE_H_INCLUDED
#define CL_CONFIG_VALUE_H_INCLUDED

#include <stdbool.h>
#include <stddef.h>

#define CL_CONFIG_VALUE_MAX 262144 /* longest value of any variable, in bytes */
#define CL_SWARM_KEY_MIN 32        /* shortest swarm key, in bytes */
#define CL_SWARM_KEY_MAX 4096      /* longest swarm key, in bytes */
#define CL_SECONDS_MIN 0.001       /* shortest duration */
#define CL_SECONDS_MAX 1000000.0   /* longest duration */

/* Decimal integer: digits only (no sign, no blanks), from min to max. */
int cl_config_value_int(const char *text, long min, long max, long *out, char *why, size_t whylen);

/* 1/0, true/false, yes/no, in any case. */
int cl_config_value_bool(const char *text, bool *out, char *why, size_t whylen);

/* Unsigned decimal number: digits, an optional fraction, an optional
   exponent ("1e-3").  No sign, blanks, hex, inf or nan.  Returns 0 or -1
   (no reason: callers say what range they expected). */
int cl_config_value_number(const char *text, double *out);

/* Duration: a number optionally followed by "s" or "ms", from
   CL_SECONDS_MIN to CL_SECONDS_MAX seconds; *out in seconds. */
int cl_config_value_seconds(const char *text, double *out, char *why, size_t whylen);

/* A swarm key given inline: CL_SWARM_KEY_MIN to CL_SWARM_KEY_MAX bytes.
   *out (malloc'ed, caller wipes and frees) replaces nothing: it must be
   NULL on entry. */
int cl_config_value_key(const char *text, char **out, char *why, size_t whylen);

/* A swarm key read from the file named by path: a regular file that group
   and others cannot access, whose trailing newline is dropped, holding
   CL_SWARM_KEY_MIN to CL_SWARM_KEY_MAX bytes and no NUL byte.  Never
   blocks on a FIFO or device.  *out as for cl_config_value_key. */
int cl_config_value_key_file(const char *path, char **out, char *why, size_t whylen);

#endif
