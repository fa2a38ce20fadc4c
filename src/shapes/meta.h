/*
 * meta.h - tensors on the meta device and the arguments of a call, below the
 * operator rules: the meta tensor, the propagation context, argument values,
 * PyTorch signatures and binding a call to one, and the shape helpers every
 * rule uses. The rules themselves and their registry are in ops/op.h, which
 * builds on this; nothing here knows an operator.
 */
#ifndef TINSPECT_SHAPES_META_H
#define TINSPECT_SHAPES_META_H

#include <stdbool.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/symdim.h"

#define TI_META_MAX_DIMS 64  /* PyTorch's hard limit on a tensor's rank */
#define TI_OP_MAX_PARAMS 24  /* arguments in one signature */
#define TI_OP_MAX_OUTPUTS 16 /* outputs a rule may add before it must use a tensor list */

/* A tensor on the meta device while shapes propagate. Immutable once made. */
typedef struct ti_meta_tensor {
	ti_dtype dtype;
	int ndim;
	const ti_dim *shape;  /* ndim sizes */
	const ti_dim *stride; /* ndim strides, in elements */
	bool requires_grad;
} ti_meta_tensor;

typedef struct ti_arg ti_arg;
struct ti_op_call;

/*
 * Watches a run (memory simulation, src/memory/): enter before each operator
 * or module call, leave after it succeeded with its bound arguments and
 * outputs (NULL for a container or composite module, whose parts are
 * watched themselves). Calls nest: an operator a rule runs is entered and
 * left inside its caller. module is a ti_module (nn/module.h), or NULL for
 * an operator, whose name op gives.
 */
typedef struct ti_run_observer {
	void (*enter)(void *user, const char *op, const void *module);
	void (*leave)(void *user, const struct ti_op_call *call);
	/*
	 * A graph's name lets go of value: the name is bound again, or its
	 * forward returns. Until then Python holds the value (a description's
	 * graph is a forward's body).
	 */
	void (*release)(void *user, const ti_arg *value);
	void *user;
} ti_run_observer;

/* The run's context: one arena and one symbol context for a whole propagation. */
typedef struct ti_shape_ctx {
	ti_arena *arena;
	ti_symctx *sym;
	ti_dtype default_dtype; /* torch.get_default_dtype(): float32 */
	ti_dtype cast_dtype;    /* model.to(DT): the parameters and buffers of every module that names no dtype
	                           (one that does, as peft's float32 adapters, keeps it); 0: none */
	/*
	 * Where a Tensor is expected and a name (str) is given, binding asks
	 * this: the graph's values by name. NULL: names are not tensors.
	 */
	ti_status (*resolve)(void *user, const char *name, ti_arg *out, ti_error *err);
	void *resolve_user;
	const ti_run_observer *observer; /* NULL: nobody watches */
	bool training;                   /* modules run as after model.train() (else eval()) */
	bool mode_dependent;             /* set by a rule whose result depends on training */
} ti_shape_ctx;

/* ---- values: arguments bound to a signature, and what steps produce ---- */

typedef enum ti_arg_kind {
	TI_ARG_ABSENT,  /* not given and no default: only optional parameters */
	TI_ARG_NONE,
	TI_ARG_TENSOR,
	TI_ARG_LIST,    /* a tuple or list: tensors, ints, floats or nested lists */
	TI_ARG_INT,     /* a ti_dim */
	TI_ARG_FLOAT,
	TI_ARG_BOOL,
	TI_ARG_STR,
	TI_ARG_DTYPE,
	/*
	 * A Python slice: as.list holds exactly three items, start, stop and
	 * step, each a TI_ARG_INT or TI_ARG_NONE (a graph name, a TI_ARG_STR,
	 * until bound). A description writes {"slice": [start, stop, step]};
	 * Ellipsis is the str "...".
	 */
	TI_ARG_SLICE
} ti_arg_kind;

struct ti_arg {
	ti_arg_kind kind;
	union {
		const ti_meta_tensor *tensor;
		struct { const ti_arg *items; int count; } list;
		ti_dim dim;
		double real;
		bool boolean;
		const char *str;
		ti_dtype dtype;
	} as;
	const char *name; /* for ti_call_op: bind by this keyword; NULL binds by position */
};

static inline ti_arg ti_arg_tensor(const ti_meta_tensor *t) { ti_arg a = {TI_ARG_TENSOR, {.tensor = t}, 0}; return a; }
static inline ti_arg ti_arg_dim(ti_dim d) { ti_arg a = {TI_ARG_INT, {.dim = d}, 0}; return a; }
static inline ti_arg ti_arg_int(int64_t v) { return ti_arg_dim(ti_dim_int(v)); }
static inline ti_arg ti_arg_float(double v) { ti_arg a = {TI_ARG_FLOAT, {.real = v}, 0}; return a; }
static inline ti_arg ti_arg_bool(bool v) { ti_arg a = {TI_ARG_BOOL, {.boolean = v}, 0}; return a; }
static inline ti_arg ti_arg_str(const char *s) { ti_arg a = {TI_ARG_STR, {.str = s}, 0}; return a; }
static inline ti_arg ti_arg_dtype(ti_dtype d) { ti_arg a = {TI_ARG_DTYPE, {.dtype = d}, 0}; return a; }
static inline ti_arg ti_arg_none(void) { ti_arg a = {TI_ARG_NONE, {.tensor = 0}, 0}; return a; }
static inline ti_arg ti_arg_list(const ti_arg *items, int n) { ti_arg a = {TI_ARG_LIST, {.list = {items, n}}, 0}; return a; }
/* slice(items[0], items[1], items[2]): the three items, kept by pointer. */
static inline ti_arg ti_arg_slice(const ti_arg *items) { ti_arg a = {TI_ARG_SLICE, {.list = {items, 3}}, 0}; return a; }
static inline ti_arg ti_arg_named(const char *name, ti_arg a) { a.name = name; return a; }

/* ---- signatures ---- */

typedef enum ti_param_type {
	TI_P_TENSOR, TI_P_TENSOR_LIST, TI_P_INT, TI_P_INT_LIST, TI_P_FLOAT, TI_P_FLOAT_LIST,
	TI_P_BOOL, TI_P_STR, TI_P_DTYPE, TI_P_SCALAR, TI_P_TENSOR_OR_SCALAR,
	TI_P_INT_LIST_OR_STR, TI_P_INT_OR_INT_LIST,
	TI_P_ANY /* any value, None included: a str naming a graph value is that value */
} ti_param_type;

typedef struct ti_param {
	const char *name;
	ti_param_type type;
	int list_size;      /* N of int[N]; 0 for int[] */
	bool optional;      /* `?`: None allowed */
	bool items_optional;/* `int?[]`: None allowed as an item (adaptive pools' output_size) */
	bool varargs;       /* `int[]...` */
	bool keyword_only;  /* after `*` */
	bool has_default;
	ti_arg default_value;
} ti_param;

typedef struct ti_signature {
	const char *name;   /* "conv2d", "Conv2d", "forward" */
	ti_param params[TI_OP_MAX_PARAMS];
	int count;
} ti_signature;

/* Parses one signature string (ours, from a table: a failure is our bug, reported as TI_E_INVALID). */
ti_status ti_signature_parse(ti_arena *arena, const char *text, ti_signature *sig, ti_error *err);

/* Arguments bound to a signature: args[i] is the value of sig->params[i]. */
typedef struct ti_bound {
	const ti_signature *sig;
	ti_arg args[TI_OP_MAX_PARAMS];
	bool given[TI_OP_MAX_PARAMS]; /* the caller passed it (not a default) */
} ti_bound;

/*
 * Binds positional and named arguments as Python binds a call: too many,
 * unknown, repeated or missing arguments and wrong kinds fail with
 * TI_E_CORRUPT (a bad description is bad input) and Python's wording ("conv2d() missing required argument
 * 'weight'"). int[N] repeats a single int; Scalar takes an int or a float.
 */
ti_status ti_bind(ti_shape_ctx *ctx, const ti_signature *sig, const ti_arg *args, int nargs,
                  ti_bound *out, ti_error *err);

/* Accessors by parameter name. A name missing from the signature is our bug: they return zero values. */
const ti_arg *ti_bound_get(const ti_bound *b, const char *name);
bool ti_bound_is_none(const ti_bound *b, const char *name); /* None or absent */
bool ti_bound_given(const ti_bound *b, const char *name);
const ti_meta_tensor *ti_bound_tensor(const ti_bound *b, const char *name); /* NULL if None */
ti_dim ti_bound_dim(const ti_bound *b, const char *name);
/* An int list (int[N] already expanded): items and count. */
const ti_arg *ti_bound_list(const ti_bound *b, const char *name, int *count);
double ti_bound_float(const ti_bound *b, const char *name);
bool ti_bound_bool(const ti_bound *b, const char *name);
const char *ti_bound_str(const ti_bound *b, const char *name); /* NULL if not a str */
ti_dtype ti_bound_dtype(const ti_bound *b, const char *name);  /* TI_DT_INVALID if None */

/* ---- helpers every rule uses (meta_tensor.c) ---- */

/* A contiguous tensor of the given shape (copied into the arena). NULL when out of memory. */
ti_meta_tensor *ti_meta_new(ti_shape_ctx *ctx, ti_dtype dtype, int ndim, const ti_dim *shape);
/* A view: shape and strides as given (copied). */
ti_meta_tensor *ti_meta_view(ti_shape_ctx *ctx, const ti_meta_tensor *base, int ndim,
                             const ti_dim *shape, const ti_dim *stride);
/* Product of the sizes (numel). */
ti_dim ti_meta_numel(ti_shape_ctx *ctx, const ti_meta_tensor *t);
bool ti_meta_is_contiguous(ti_shape_ctx *ctx, const ti_meta_tensor *t);
/* Fills stride[] with the contiguous strides of shape[]. */
void ti_contiguous_strides(ti_shape_ctx *ctx, int ndim, const ti_dim *shape, ti_dim *stride);
/* Wraps dim into [0, ndim) as maybe_wrap_dim does, or fails with PyTorch's IndexError text. */
ti_status ti_wrap_dim(int64_t dim, int ndim, int *out, ti_error *err);
/* Broadcasts two shapes as torch.broadcast_shapes, or fails with PyTorch's message. */
ti_status ti_broadcast(ti_shape_ctx *ctx, int na, const ti_dim *a, int nb, const ti_dim *b,
                       int *nout, ti_dim *out, ti_error *err);
/* "[2, 3, N]" (arena string). */
const char *ti_shape_str(ti_shape_ctx *ctx, int ndim, const ti_dim *shape);
const char *ti_meta_shape_str(ti_shape_ctx *ctx, const ti_meta_tensor *t);
/* PyTorch's dtype spelling in messages: "Float", "Long", "BFloat16". */
const char *ti_dtype_torch_name(ti_dtype dt);
bool ti_dtype_is_floating(ti_dtype dt);
bool ti_dtype_is_complex(ti_dtype dt);
bool ti_dtype_is_integral(ti_dtype dt, bool include_bool);
/* torch.promote_types. */
ti_dtype ti_promote_types(ti_dtype a, ti_dtype b);
/*
 * torch.result_type over tensors and Python scalars (TI_ARG_INT, _FLOAT,
 * _BOOL): dimensioned tensors outrank zero-dim tensors, which outrank scalars,
 * within the same category (bool < integer < floating < complex).
 */
ti_dtype ti_result_type(ti_shape_ctx *ctx, const ti_arg *operands, int count);

#endif
