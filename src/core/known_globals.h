/*
 * known_globals.h - the globals we understand, one table (library-internal).
 *
 * A pickle names Python objects by module and name. The few that torch.save
 * writes are listed here with what they mean; the rest stay opaque. Rows
 * with a call function are interpreted when a pickle calls them; the others
 * (dtypes, storage classes, qschemes, classes) are recognised as arguments.
 */
#ifndef TINSPECT_KNOWN_GLOBALS_H
#define TINSPECT_KNOWN_GLOBALS_H

#include "core/known_global.h"

/* The row for module.name, or NULL. Never allocates. */
const struct ti_known_global *ti_known_global_find(const char *module, const char *name);

#endif
