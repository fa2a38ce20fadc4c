/*
 * reduce.c - reductions: sum, mean, prod, amax/amin, max/min, argmax/argmin,
 * var/std (and their _mean forms), norm, all/any, logsumexp, count_nonzero,
 * median, mode.
 *
 * Rules follow aten/src/ATen/native/ReduceOps.cpp and ReduceOpsUtils.h
 * (dims, keepdim, the output dtypes and the empty-tensor checks), and for
 * torch.norm the 2.x torch/functional.py, which runs linalg.vector_norm.
 * Results are contiguous: the meta kernels allocate them with empty().
 *
 * Counting: one flop per input element, whatever the reduction.
 */
#include <string.h>

#include "ops/elementwise.h"
#include "ops/tables.h"

/* ---- dims ---- */

/* The dims a call reduces: reduced[d] for each dim of input. */
typedef struct reduction {
	const ti_meta_tensor *input;
	bool reduced[TI_META_MAX_DIMS];
	bool all;      /* no dim given (None, or an empty list where that means all) */
	int first_dim; /* the first dim given, wrapped; -1 if none */
} reduction;

static ti_status int_value(ti_op_call *call, const ti_arg *a, int64_t *out, ti_error *err)
{
	if (a->kind != TI_ARG_INT || !ti_dim_is_int(a->as.dim))
		return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument 'dim' must be a number, not a symbolic size",
		               call->rule->parsed->name);
	*out = a->as.dim.value;
	return TI_OK;
}

/* Reads the "dim" argument (None, an int, or a list) as ReduceOpsUtils.h make_dim_mask does. */
static ti_status reduction_dims(ti_op_call *call, reduction *r, ti_error *err)
{
	const ti_arg *dim = ti_call_arg(call, "dim");
	const ti_meta_tensor *input = r->input;
	memset(r->reduced, 0, sizeof(r->reduced));
	r->first_dim = -1;
	int count = dim->kind == TI_ARG_LIST ? dim->as.list.count : dim->kind == TI_ARG_INT;
	const ti_arg *items = dim->kind == TI_ARG_LIST ? dim->as.list.items : dim;
	r->all = count == 0;
	for (int i = 0; i < count; i++) {
		int64_t given = 0;
		int wrapped;
		ti_status st = int_value(call, &items[i], &given, err);
		if (st || (st = ti_wrap_dim(given, input->ndim, &wrapped, err)))
			return st;
		if (input->ndim == 0)
			continue; /* a zero-dim tensor takes dim 0 or -1, and has nothing to reduce */
		if (r->reduced[wrapped])
			return TI_FAIL(err, TI_E_SHAPE, "dim %d appears multiple times in the list of dims", wrapped);
		r->reduced[wrapped] = true;
		if (r->first_dim < 0)
			r->first_dim = wrapped;
	}
	for (int d = 0; r->all && d < input->ndim; d++)
		r->reduced[d] = true;
	return TI_OK;
}

static bool is_zero(ti_dim d) { return ti_dim_is_int(d) && d.value == 0; }

/* ReduceOpsUtils.h zero_numel_check_dims: max, argmax and friends have no identity for an empty dim. */
static ti_status check_nonempty(ti_op_call *call, const reduction *r, const char *extra, ti_error *err)
{
	const char *name = call->rule->parsed->name;
	const ti_meta_tensor *input = r->input;
	if (r->all && is_zero(ti_meta_numel(call->ctx, input)))
		return TI_FAIL(err, TI_E_SHAPE, "%s(): Expected reduction dim to be specified for input.numel() == 0.%s",
		               name, extra);
	for (int d = 0; !r->all && d < input->ndim; d++)
		if (r->reduced[d] && is_zero(input->shape[d]))
			return TI_FAIL(err, TI_E_SHAPE, "%s(): Expected reduction dim %d to have non-zero size.", name, d);
	return TI_OK;
}

static const char specify_dim[] = " Specify the reduction dim with the 'dim' argument.";

/* The reduced shape, contiguous; keepdim keeps reduced dims as 1. */
static ti_meta_tensor *reduced_tensor(ti_op_call *call, const reduction *r, bool keepdim, ti_dtype dtype)
{
	ti_dim shape[TI_META_MAX_DIMS];
	int n = 0;
	for (int d = 0; d < r->input->ndim; d++) {
		if (!r->reduced[d])
			shape[n++] = r->input->shape[d];
		else if (keepdim)
			shape[n++] = ti_dim_int(1);
	}
	ti_meta_tensor *t = ti_meta_new(call->ctx, dtype, n, shape);
	if (t)
		t->requires_grad = r->input->requires_grad && (ti_dtype_is_floating(dtype) || ti_dtype_is_complex(dtype));
	return t;
}

/* Adds the reduced outputs (one dtype each) and counts one flop per input element. */
static ti_status finish(ti_op_call *call, const reduction *r, const ti_dtype *dtypes, int count, ti_error *err)
{
	bool keepdim = ti_call_bool(call, "keepdim");
	for (int i = 0; i < count; i++) {
		ti_status st = ti_call_output_tensor(call, reduced_tensor(call, r, keepdim, dtypes[i]), err);
		if (st)
			return st;
	}
	ti_call_flops(call, ti_meta_numel(call->ctx, r->input));
	return TI_OK;
}

/* Reads input and dims; the common start of every rule. */
static ti_status begin(ti_op_call *call, reduction *r, ti_error *err)
{
	r->input = ti_call_tensor(call, "input");
	return reduction_dims(call, r, err);
}

static ti_status reduce_to(ti_op_call *call, const reduction *r, ti_dtype dtype, ti_error *err)
{
	return finish(call, r, &dtype, 1, err);
}

/* ---- sums and means ---- */

/* sum, nansum, prod: integers and bool accumulate in int64 unless a dtype is given (get_dtype_from_self). */
static ti_status sum_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st)
		return st;
	ti_dtype dtype = ti_call_dtype(call, "dtype");
	if (!dtype)
		dtype = ti_dtype_is_integral(r.input->dtype, true) ? TI_DT_INT64 : r.input->dtype;
	return reduce_to(call, &r, dtype, err);
}

static bool is_inexact(ti_dtype dt) { return ti_dtype_is_floating(dt) || ti_dtype_is_complex(dt); }

static ti_status mean_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st)
		return st;
	ti_dtype dtype = ti_call_dtype(call, "dtype");
	/* ReduceOps.cpp mean meta: the dtype must be able to hold a mean */
	if (dtype && !is_inexact(dtype))
		return TI_FAIL(err, TI_E_SHAPE, "mean(): could not infer output dtype. Optional dtype must be either "
		               "a floating point or complex dtype. Got: %s", ti_dtype_torch_name(dtype));
	if (!dtype && !is_inexact(r.input->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "mean(): could not infer output dtype. Input dtype must be either "
		               "a floating point or complex dtype. Got: %s", ti_dtype_torch_name(r.input->dtype));
	return reduce_to(call, &r, dtype ? dtype : r.input->dtype, err);
}

static ti_status nanmean_rule(ti_op_call *call, ti_error *err)
{
	ti_dtype dt = ti_call_tensor(call, "input")->dtype;
	if (ti_dtype_is_integral(dt, true))
		return TI_FAIL(err, TI_E_SHAPE,
		               "nanmean(): integral types and 'Bool' are not supported for nanmean, even for empty tensors.");
	if (!is_inexact(dt))
		return TI_FAIL(err, TI_E_SHAPE, "nanmean(): expected input to have floating point or complex dtype but got %s",
		               ti_dtype_torch_name(dt));
	return sum_rule(call, err);
}

/* logsumexp: integers compute in the default float dtype. */
static ti_status logsumexp_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	return st ? st : reduce_to(call, &r, ti_dtype_to_float(call->ctx, r.input->dtype), err);
}

/* all, any: bool, except that uint8 stays uint8 (ReduceOps.cpp allany_meta). */
static ti_status all_any_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	return st ? st : reduce_to(call, &r, r.input->dtype == TI_DT_UINT8 ? TI_DT_UINT8 : TI_DT_BOOL, err);
}

static ti_status count_nonzero_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	return st ? st : reduce_to(call, &r, TI_DT_INT64, err);
}

/* ---- extrema ---- */

/* amax, amin: the input's dtype; an empty reduced dim is an error (its message keeps the dim as given). */
static ti_status amax_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st)
		return st;
	int count;
	const ti_arg *dims = ti_call_list(call, "dim", &count);
	if (count == 0 && is_zero(ti_meta_numel(call->ctx, r.input)))
		return check_nonempty(call, &r, specify_dim, err);
	for (int i = 0; i < count && r.input->ndim > 0; i++) {
		int64_t given = dims[i].as.dim.value;
		int d = (int)(given < 0 ? given + r.input->ndim : given); /* begin() checked the range */
		if (is_zero(r.input->shape[d]))
			return TI_FAIL(err, TI_E_SHAPE, "%s(): Expected reduction dim %lld to have non-zero size.",
			               call->rule->parsed->name, (long long)given);
	}
	return reduce_to(call, &r, r.input->dtype, err);
}

/* argmax, argmin: int64 indices; without a dim, of the flattened input (all dims kept as 1 with keepdim). */
static ti_status argmax_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st || (st = check_nonempty(call, &r, "", err)))
		return st;
	return reduce_to(call, &r, TI_DT_INT64, err);
}

/* Values and int64 indices along one dim: max(dim), min(dim), median(dim), mode. */
static ti_status values_indices(ti_op_call *call, const reduction *r, ti_error *err)
{
	ti_dtype dtypes[2] = {r->input->dtype, TI_DT_INT64};
	return finish(call, r, dtypes, 2, err);
}

/*
 * max and min have three forms: max(input) (all elements), max(input, dim,
 * keepdim) (values and indices), max(input, other) (maximum).
 */
static ti_status max_rule(ti_op_call *call, ti_error *err)
{
	const char *name = call->rule->parsed->name;
	const ti_arg *dim = ti_call_arg(call, "dim");
	const ti_meta_tensor *other = dim->kind == TI_ARG_TENSOR ? dim->as.tensor : ti_call_tensor(call, "other");
	if (other) {
		ti_arg args[] = {*ti_call_arg(call, "input"), ti_arg_tensor(other)};
		return ti_call_forward(call, strcmp(name, "max") ? "minimum" : "maximum", args, 2, err);
	}
	if (dim->kind == TI_ARG_FLOAT || dim->kind == TI_ARG_BOOL)
		return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument 'dim' must be int, not %s", name,
		               dim->kind == TI_ARG_FLOAT ? "float" : "bool");
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st || (st = check_nonempty(call, &r, r.all ? specify_dim : "", err)))
		return st;
	if (r.all)
		return finish(call, &r, &r.input->dtype, 1, err);
	return values_indices(call, &r, err);
}

/* median, nanmedian, mode: one value without a dim, values and indices with one. */
static ti_status median_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st || (st = check_nonempty(call, &r, "", err)))
		return st;
	if (r.all)
		return finish(call, &r, &r.input->dtype, 1, err);
	return values_indices(call, &r, err);
}

/* ---- statistics and norms ---- */

/* The real dtype of a complex one (c10::toRealValueType). */
static ti_dtype real_dtype(ti_dtype dt)
{
	return dt == TI_DT_COMPLEX64 ? TI_DT_FLOAT32 : dt == TI_DT_COMPLEX128 ? TI_DT_FLOAT64
	       : dt == TI_DT_COMPLEX32 ? TI_DT_FLOAT16 : dt;
}

/* var, std, var_mean, std_mean (ReduceOps.cpp std_var_out / std_var_mean_out). */
static ti_status var_rule(ti_op_call *call, ti_error *err)
{
	const char *name = call->rule->parsed->name;
	bool with_mean = strstr(name, "_mean") != NULL;
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st)
		return st;
	if (!ti_call_is_none(call, "unbiased") && !ti_call_is_none(call, "correction"))
		return TI_FAIL(err, TI_E_CORRUPT, "%s(): cannot take both 'unbiased' and 'correction'", name);
	if (!is_inexact(r.input->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "%s only support floating point and complex dtypes",
		               with_mean ? name : "std and var");
	/* a complex input has a real variance and a complex mean */
	ti_dtype dtypes[2] = {real_dtype(r.input->dtype), r.input->dtype};
	return finish(call, &r, dtypes, with_mean ? 2 : 1, err);
}

/* torch.norm in 2.x: linalg.vector_norm over dim (all dims when None). */
static ti_status norm_rule(ti_op_call *call, ti_error *err)
{
	reduction r;
	ti_status st = begin(call, &r, err);
	if (st)
		return st;
	if (!is_inexact(r.input->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s",
		               ti_dtype_torch_name(r.input->dtype));
	ti_dtype dtype = ti_call_dtype(call, "dtype");
	return reduce_to(call, &r, real_dtype(dtype ? dtype : r.input->dtype), err);
}

/* ---- the table ---- */

#define DIMS_KEEPDIM(name) name "(Tensor input, int[]? dim=None, bool keepdim=False"
/* torch.var(input, dim, unbiased, keepdim) and torch.var(input, dim, *, correction, keepdim) */
#define VARIANCE(name) name "(Tensor input, int[]? dim=None, bool? unbiased=None, bool keepdim=False, *, Scalar? correction=None)"

ti_op_rule ti_ops_reduce[] = {
	{DIMS_KEEPDIM("sum") ", *, ScalarType? dtype=None)", sum_rule, TI_COUNT_RULE, NULL},
	{DIMS_KEEPDIM("nansum") ", *, ScalarType? dtype=None)", sum_rule, TI_COUNT_RULE, NULL},
	{"prod(Tensor input, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None)", sum_rule, TI_COUNT_RULE, NULL},
	{DIMS_KEEPDIM("mean") ", *, ScalarType? dtype=None)", mean_rule, TI_COUNT_RULE, NULL},
	{DIMS_KEEPDIM("nanmean") ", *, ScalarType? dtype=None)", nanmean_rule, TI_COUNT_RULE, NULL},
	{"logsumexp(Tensor input, int[] dim, bool keepdim=False)", logsumexp_rule, TI_COUNT_RULE, NULL},
	{DIMS_KEEPDIM("all") ")", all_any_rule, TI_COUNT_RULE, NULL},
	{DIMS_KEEPDIM("any") ")", all_any_rule, TI_COUNT_RULE, NULL},
	{"count_nonzero(Tensor input, int[]? dim=None)", count_nonzero_rule, TI_COUNT_RULE, NULL},
	{"amax(Tensor input, int[] dim=[], bool keepdim=False)", amax_rule, TI_COUNT_RULE, NULL},
	{"amin(Tensor input, int[] dim=[], bool keepdim=False)", amax_rule, TI_COUNT_RULE, NULL},
	{"max(Tensor input, Tensor|Scalar? dim=None, bool keepdim=False, *, Tensor? other=None)", max_rule, TI_COUNT_RULE, NULL},
	{"min(Tensor input, Tensor|Scalar? dim=None, bool keepdim=False, *, Tensor? other=None)", max_rule, TI_COUNT_RULE, NULL},
	{"argmax(Tensor input, int? dim=None, bool keepdim=False)", argmax_rule, TI_COUNT_RULE, NULL},
	{"argmin(Tensor input, int? dim=None, bool keepdim=False)", argmax_rule, TI_COUNT_RULE, NULL},
	{"median(Tensor input, int? dim=None, bool keepdim=False)", median_rule, TI_COUNT_RULE, NULL},
	{"nanmedian(Tensor input, int? dim=None, bool keepdim=False)", median_rule, TI_COUNT_RULE, NULL},
	{"mode(Tensor input, int dim=-1, bool keepdim=False)", median_rule, TI_COUNT_RULE, NULL},
	{VARIANCE("var"), var_rule, TI_COUNT_RULE, NULL},
	{VARIANCE("std"), var_rule, TI_COUNT_RULE, NULL},
	{VARIANCE("var_mean"), var_rule, TI_COUNT_RULE, NULL},
	{VARIANCE("std_mean"), var_rule, TI_COUNT_RULE, NULL},
	{"norm(Tensor input, Scalar? p=None, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)",
	 norm_rule, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
