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

#include "tinspect/error.h"
#include "tinspect/pickle.h"
#include "tinspect/value.h"

struct ti_torch;

typedef enum ti_global_role {
	TI_G_CALLABLE,      /* a function or class we interpret when called */
	TI_G_DTYPE,         /* torch.float32 ...: the name is the dtype */
	TI_G_STORAGE_CLASS, /* torch.FloatStorage ...: the name gives the dtype */
	TI_G_QSCHEME,       /* torch.per_tensor_affine ... */
	TI_G_TENSOR_CLASS,  /* torch.Tensor, torch.nn.parameter.Parameter */
} ti_global_role;

typedef ti_status (*ti_global_call_fn)(struct ti_torch *t, const ti_value *args,
                                       ti_call_kind how, ti_value **out, ti_error *err);

struct ti_known_global {
	const char *module, *name; /* NULL for the rows matched by pattern */
	ti_global_role role;
	const char *type_name;     /* Python type of the named object: "torch.dtype" */
	ti_global_call_fn call;
};

/* The row for module.name, or NULL. Never allocates. */
const struct ti_known_global *ti_known_global_find(const char *module, const char *name);

/* For printing: "torch.dtype", "function"; NULL for unknown globals. */
const char *ti_known_global_type_name(const struct ti_known_global *known);
/* True if the global's row says it is of this role. */
int ti_global_is(const ti_value *v, ti_global_role role);

#endif
