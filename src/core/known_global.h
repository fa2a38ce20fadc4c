/*
 * known_global.h - a row of the known-globals table (known_globals.c) and
 * what can be read off a row without the table: types only, so that the
 * calls the rows name (torch_calls.c) can check their arguments' roles
 * without depending on the table that names them (library-internal).
 */
#ifndef TINSPECT_KNOWN_GLOBAL_H
#define TINSPECT_KNOWN_GLOBAL_H

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

/* For printing: "torch.dtype", "function"; NULL for unknown globals. (The row's own field: no table code.) */
static inline const char *ti_known_global_type_name(const struct ti_known_global *known)
{
	return known ? known->type_name : NULL;
}
/* True if the global's row says it is of this role. */
static inline int ti_global_is(const ti_value *v, ti_global_role role)
{
	return v && v->kind == TI_GLOBAL && v->as.global->known && v->as.global->known->role == role;
}

#endif
