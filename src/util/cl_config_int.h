/*  cl_config_int.h - what the table of variables (cl_config.c) and the
    loading (cl_config_load.c) share; included by nobody else.
*/
#ifndef CL_CONFIG_INT_H_INCLUDED
#define CL_CONFIG_INT_H_INCLUDED

#include "util/cl_config.h"

#include <stddef.h>

/* Runs the parser of variable i of cl_config_table on value: checks it
   and stores it in *cfg.  Returns 0, or -1 with the reason (starting
   with "expected") in why. */
int cl_config_parse_var(size_t i, const char *value, cl_config_t *cfg, char *why, size_t whylen);

#endif
