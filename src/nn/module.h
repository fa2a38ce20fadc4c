/*
 * module.h - torch.nn modules: constructor arguments, parameters, forward.
 *
 * A module type is one row in one file under src/nn/: its constructor
 * signature (PyTorch's __init__, same names and defaults), its forward
 * signature, an init function that declares parameters and buffers under the
 * names the PyTorch state_dict uses, and a forward function that computes
 * outputs from the forward arguments and the parameters, usually by running
 * operators with ti_call_op so that their shape checks and counts apply.
 *
 * Containers (Sequential, ModuleList, ModuleDict, and "Module" for any other
 * class an exporter met) and composite types from a description's `defs` have no row: the model code (src/model/) builds them.
 * Modules live in the run's arena.
 */
#ifndef TINSPECT_NN_MODULE_H
#define TINSPECT_NN_MODULE_H

#include "ops/op.h"

typedef struct ti_module ti_module;
typedef struct ti_module_rule ti_module_rule;

/* A parameter or buffer a module owns itself (children's are in the children). */
typedef struct ti_module_tensor {
	const char *name;        /* local name: "weight", "running_mean", "weight_ih_l0_reverse" */
	ti_meta_tensor *tensor;
	bool buffer;             /* register_buffer, not nn.Parameter */
	bool persistent;         /* buffers: in the state_dict */
	bool trainable;          /* parameters: requires_grad */
	const char *tied_to;     /* full name of the parameter this one is tied to, or NULL */
	bool quantized;          /* the module's state_dict holds it as its stored tensors instead (ti_module.stored) */
} ti_module_tensor;

/*
 * A tensor a quantized layer's state_dict holds in place of its weight (a
 * GPTQ qweight, a bitsandbytes weight.absmax): model/quantized.c fills them
 * from the description's "quantization".
 */
typedef struct ti_module_stored {
	const char *name;        /* local: "qweight", "weight.absmax" */
	ti_dtype dtype;
	int ndim;
	int64_t shape[2];
} ti_module_stored;

typedef enum ti_module_kind {
	TI_MODULE_LEAF,       /* a row of the registry */
	TI_MODULE_SEQUENTIAL, /* calling it applies its children in order */
	TI_MODULE_LIST,       /* ModuleList: the same when called, as descriptions allow */
	TI_MODULE_DICT,       /* ModuleDict: not callable */
	TI_MODULE_PLAIN,      /* "Module": any other nn.Module, holding children and tensors; not callable */
	TI_MODULE_COMPOSITE   /* a type from `defs`: its own graph */
} ti_module_kind;

struct ti_module {
	ti_shape_ctx *ctx;
	const char *path;      /* dotted path from the root: "layer1.0" ("" for the root) */
	const char *type;      /* "Conv2d", "Sequential", a defs name */
	ti_module_kind kind;
	const ti_module_rule *rule; /* leaves only */
	ti_bound ctor;              /* leaves: the constructor arguments, bound */
	ti_module_tensor *tensors;
	int tensor_count, tensor_capacity;
	ti_module **children;
	const char **child_names;
	int child_count, child_capacity;
	const void *composite;      /* TI_MODULE_COMPOSITE: the model code's definition */
	const ti_module_stored *stored; /* a quantized layer's state_dict tensors in place of its weight, or NULL */
	int stored_count;
};

typedef ti_status (*ti_module_init_fn)(ti_module *m, ti_error *err);
typedef ti_status (*ti_module_forward_fn)(ti_op_call *call, const ti_module *m, ti_error *err);

struct ti_module_rule {
	const char *signature;  /* constructor: "Linear(int in_features, int out_features, bool bias=True, *, ScalarType? dtype=None)" */
	const char *forward;    /* "forward(Tensor input)" */
	ti_module_init_fn init;
	ti_module_forward_fn run;
	ti_count_kind counting;
	ti_signature *parsed_ctor, *parsed_forward; /* filled on first use */
};

/* Looks a module type up by its torch.nn class name ("Conv2d"); NULL if unknown. */
const ti_module_rule *ti_module_find(const char *type);
/* The known type (torch.nn class or container) nearest to a misspelt one, in buf; NULL when none is close. */
const char *ti_module_closest(const char *type, char *buf, size_t size);
/* Calls fn for every module row, in registry order (tinspect ops). */
void ti_module_each(void (*fn)(void *user, const ti_module_rule *rule), void *user);
/* The class's _version, as state_dict()._metadata records it: 1 unless the class sets another. */
int64_t ti_module_version(const char *type);

/* For init functions: declares a parameter (trainable) or buffer of the given shape. */
ti_status ti_module_add_param(ti_module *m, const char *name, ti_dtype dtype, int ndim,
                              const int64_t *shape, ti_error *err);
ti_status ti_module_add_buffer(ti_module *m, const char *name, ti_dtype dtype, int ndim,
                               const int64_t *shape, bool persistent, ti_error *err);
/* The factory dtype: the constructor's dtype argument if it has one and it is set, else the default. */
ti_dtype ti_module_dtype(const ti_module *m);

/* For forward functions: a parameter or buffer by local name; NULL if the module has none (bias=False). */
const ti_meta_tensor *ti_module_tensor_get(const ti_module *m, const char *name);

/* Constructor arguments, by name (see ti_bound_*). */
#define ti_module_dim(m, n) ti_bound_dim(&(m)->ctor, (n))
#define ti_module_list(m, n, count) ti_bound_list(&(m)->ctor, (n), (count))
#define ti_module_float(m, n) ti_bound_float(&(m)->ctor, (n))
#define ti_module_bool(m, n) ti_bound_bool(&(m)->ctor, (n))
#define ti_module_str(m, n) ti_bound_str(&(m)->ctor, (n))
#define ti_module_is_none(m, n) ti_bound_is_none(&(m)->ctor, (n))
#define ti_module_given(m, n) ti_bound_given(&(m)->ctor, (n))
#define ti_module_arg(m, n) ti_bound_get(&(m)->ctor, (n))

/*
 * Makes a leaf module of a registry type from bound constructor arguments
 * and runs its init. Used by the model code and by tests.
 */
ti_status ti_module_new_leaf(ti_shape_ctx *ctx, const char *path, const char *type,
                             const ti_arg *args, int nargs, ti_module **out, ti_error *err);
/* Runs a leaf module's forward on bound forward arguments. */
ti_status ti_module_call(ti_shape_ctx *ctx, const ti_module *m, const ti_arg *args, int nargs,
                         ti_op_call *result, ti_error *err);

#endif
