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
 * Tensor|Scalar, int[N]|str, int|int[] (split sizes), Any (a Python object:
 * whatever is given, None included, a name of a graph value resolved to that
 * value, in lists and slices too; Python-level ops). A trailing `?` admits
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
#include "shapes/meta.h"

/* Parses text once for the life of the process and keeps it in *slot (a table row's cache). */
ti_status ti_signature_cached(const char *text, ti_signature **slot, ti_error *err);

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
	/* the same work as other tools count it (see ti_call_count_as) */
	ti_dim flops_torch; /* torch.utils.flop_counter.FlopCounterMode: 2 per MAC of a matrix product */
	ti_dim flops_fvcore;/* fvcore's FlopCountAnalysis: 1 per such MAC, and its norm/upsample/pool rules */
	bool counted;       /* a counting rule ran (zero is a count too) */
	bool uncounted_part;/* some sub-call had no counting rule */
};

/* What a rule returns through: adds one output (a tensor, or a list for tensor lists). */
ti_status ti_call_output(ti_op_call *call, ti_arg value, ti_error *err);
ti_status ti_call_output_tensor(ti_op_call *call, const ti_meta_tensor *t, ti_error *err);
/*
 * Counts: macs adds to MACs and 2*macs to FLOPs; flops adds to FLOPs only.
 * Both mark the call counted. ti_call_macs is for matrix products (matmul,
 * convolution, attention, gates), which PyTorch's FlopCounterMode counts as 2
 * FLOPs and fvcore as 1 per MAC; ti_call_macs_only counts MACs those tools do
 * not (interpolation weights, weighted bags), and ti_call_count_as adds what
 * they count beyond that (fvcore's norms, a causal product counted in full).
 */
void ti_call_macs(ti_op_call *call, ti_dim macs);
void ti_call_macs_only(ti_op_call *call, ti_dim macs);
void ti_call_flops(ti_op_call *call, ti_dim flops);
void ti_call_count_as(ti_op_call *call, ti_dim flops_torch, ti_dim flops_fvcore);

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
/* The known operator name nearest to a misspelt one, in buf; NULL when none is close. */
const char *ti_op_closest(const char *name, char *buf, size_t size);
/* Calls fn for every row of every table, in registry order (tinspect ops). */
void ti_op_each(void (*fn)(void *user, const ti_op_rule *rule), void *user);


#endif
