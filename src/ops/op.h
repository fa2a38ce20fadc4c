/*
 * op.h - shape rules: what every operator file and module file sees.
 *
 * An operator is one table row (its PyTorch signature and a function) in one
 * file under src/ops/; a torch.nn module is one row in one file under src/nn/.
 * The signature is written as PyTorch writes it in native_functions.yaml, so
 * arguments bind by position or by name with PyTorch's names and defaults:
 *
 *     "chunk(Tensor input, int chunks, int dim=0)"
 *     "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1,
 *             int[2]|str padding=0, int[2] dilation=1, int groups=1)"
 *
 * Types: Tensor, Tensor[], int (a ti_dim: may be symbolic), int[] and int[N]
 * (a single int is repeated N times, as torch's _pair does), float, float[],
 * bool, str, ScalarType (a dtype name), Scalar (an int or float number),
 * Tensor|Scalar, int[N]|str, int|int[] (split sizes). A trailing `?` admits
 * None (`int?[]`: None as an item); `int[]...` also takes the rest of the positional ints (x.view(2, 3));
 * `*` starts keyword-only arguments.
 *
 * A rule reads its bound arguments through the ti_call_* accessors, checks
 * them as PyTorch's meta kernel does, and on success adds its outputs with
 * ti_call_output and its operation counts with ti_call_macs / ti_call_flops.
 * When PyTorch would raise, it returns TI_FAIL(err, TI_E_SHAPE, ...) with
 * PyTorch's message; the runner adds the step, module path and input shapes.
 * Everything a rule allocates comes from the run's arena (ctx->arena).
 */
#ifndef TINSPECT_OPS_OP_H
#define TINSPECT_OPS_OP_H

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

/* The run's context: one arena and one symbol context for a whole propagation. */
typedef struct ti_shape_ctx {
	ti_arena *arena;
	ti_symctx *sym;
	ti_dtype default_dtype; /* torch.get_default_dtype(): float32 */
	/*
	 * Where a Tensor is expected and a name (str) is given, binding asks
	 * this: the graph's values by name. NULL: names are not tensors.
	 */
	ti_status (*resolve)(void *user, const char *name, ti_arg *out, ti_error *err);
	void *resolve_user;
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
	TI_ARG_DTYPE
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
static inline ti_arg ti_arg_named(const char *name, ti_arg a) { a.name = name; return a; }

/* ---- signatures ---- */

typedef enum ti_param_type {
	TI_P_TENSOR, TI_P_TENSOR_LIST, TI_P_INT, TI_P_INT_LIST, TI_P_FLOAT, TI_P_FLOAT_LIST,
	TI_P_BOOL, TI_P_STR, TI_P_DTYPE, TI_P_SCALAR, TI_P_TENSOR_OR_SCALAR,
	TI_P_INT_LIST_OR_STR, TI_P_INT_OR_INT_LIST
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
/* Parses text once for the life of the process and keeps it in *slot (a table row's cache). */
ti_status ti_signature_cached(const char *text, ti_signature **slot, ti_error *err);

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

/* ---- a call of a rule ---- */

typedef struct ti_op_call ti_op_call;
typedef struct ti_op_rule ti_op_rule;

struct ti_op_call {
	ti_shape_ctx *ctx;
	const ti_op_rule *rule;
	ti_bound in;
	/* results */
	ti_arg outputs[TI_OP_MAX_OUTPUTS];
	int output_count;
	ti_dim macs, flops; /* multiply-accumulates; floating-point operations */
	bool counted;       /* a counting rule ran (zero is a count too) */
	bool uncounted_part;/* some sub-call had no counting rule */
};

/* What a rule returns through: adds one output (a tensor, or a list for tensor lists). */
ti_status ti_call_output(ti_op_call *call, ti_arg value, ti_error *err);
ti_status ti_call_output_tensor(ti_op_call *call, const ti_meta_tensor *t, ti_error *err);
/* Counts: macs adds to MACs and 2*macs to FLOPs; flops adds to FLOPs only. Both mark the call counted. */
void ti_call_macs(ti_op_call *call, ti_dim macs);
void ti_call_flops(ti_op_call *call, ti_dim flops);

/* Shorthands for ti_bound_* on call->in. */
#define ti_call_tensor(c, n) ti_bound_tensor(&(c)->in, (n))
#define ti_call_dim(c, n) ti_bound_dim(&(c)->in, (n))
#define ti_call_list(c, n, count) ti_bound_list(&(c)->in, (n), (count))
#define ti_call_float(c, n) ti_bound_float(&(c)->in, (n))
#define ti_call_bool(c, n) ti_bound_bool(&(c)->in, (n))
#define ti_call_str(c, n) ti_bound_str(&(c)->in, (n))
#define ti_call_dtype(c, n) ti_bound_dtype(&(c)->in, (n))
#define ti_call_is_none(c, n) ti_bound_is_none(&(c)->in, (n))
#define ti_call_given(c, n) ti_bound_given(&(c)->in, (n))
#define ti_call_arg(c, n) ti_bound_get(&(c)->in, (n))

/*
 * Runs another operator from inside a rule (a module's forward, a composite
 * op): binds args to the named op's signature, runs it, adds its counts to
 * call's, and leaves its outputs in *result (a call the caller provides).
 */
ti_status ti_call_op(ti_op_call *call, const char *op, const ti_arg *args, int nargs,
                     ti_op_call *result, ti_error *err);
/* Runs op as ti_call_op does and passes its outputs on as call's: a forward that is one operator. */
ti_status ti_call_forward(ti_op_call *call, const char *op, const ti_arg *args, int nargs, ti_error *err);
/* The same at top level (tests, the runner). */
ti_status ti_op_invoke(ti_shape_ctx *ctx, const char *op, const ti_arg *args, int nargs,
                       ti_op_call *result, ti_error *err);

/* ---- the operator registry ---- */

typedef enum ti_count_kind {
	TI_COUNT_RULE, /* the function counts (ti_call_macs / ti_call_flops) */
	TI_COUNT_FREE, /* no arithmetic: views, shape changes, creation */
	TI_COUNT_NONE  /* no counting rule: reported as such, never as zero */
} ti_count_kind;

typedef ti_status (*ti_op_fn)(ti_op_call *call, ti_error *err);

struct ti_op_rule {
	const char *signature;
	ti_op_fn run;
	ti_count_kind counting;
	ti_signature *parsed; /* filled on first use */
};

/*
 * Each operator file exports one table, ended by a row with a NULL
 * signature, and registry.c lists the tables. Names are looked up without
 * "torch.", "torch.nn.functional.", "F." or "Tensor." prefixes; a table may
 * list the same function under several names (aliases).
 */
const ti_op_rule *ti_op_find(const char *name);

/* ---- helpers every rule uses (src/shapes/meta_tensor.c) ---- */

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
