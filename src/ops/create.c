/*
 * create.c - tensor creation and conversion: arange, zeros/ones/empty/full,
 * rand/randn/randint/randperm, eye, linspace, the *_like and new_* families,
 * to/type and the dtype shorthands (float(), half() ...), clone.
 *
 * Rules follow aten/src/ATen/native/TensorFactories.cpp, RangeFactories.cpp
 * and torch/_refs/__init__.py (arange, as the meta device runs it). Every
 * operator here is free: creation and conversion count no arithmetic.
 */
#include <math.h>
#include <string.h>

#include "ops/elementwise.h"
#include "ops/tables.h"
#include "tinspect/value.h"

/* ---- shared ---- */

/* Adds t (NULL: out of memory) as the output, with requires_grad as the call asks. */
static ti_status output(ti_op_call *call, ti_meta_tensor *t, ti_error *err)
{
	if (!t)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a new tensor");
	if (ti_call_given(call, "requires_grad"))
		t->requires_grad = ti_call_bool(call, "requires_grad");
	return ti_call_output_tensor(call, t, err);
}

/* The dtype argument, or fallback when it is None. */
static ti_dtype dtype_or(ti_op_call *call, ti_dtype fallback)
{
	ti_dtype dt = ti_call_dtype(call, "dtype");
	return dt ? dt : fallback;
}

/* A size list: TensorFactories.cpp check_size_nonnegative. */
static ti_status read_size(ti_op_call *call, const char *name, int *ndim, ti_dim *shape, ti_error *err)
{
	int count;
	const ti_arg *items = ti_call_list(call, name, &count);
	if (count > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "%d dimensions: more than PyTorch's %d", count, TI_META_MAX_DIMS);
	for (int i = 0; i < count; i++)
		shape[i] = items[i].as.dim;
	for (int i = 0; i < count; i++)
		if (ti_dim_is_int(shape[i]) && shape[i].value < 0)
			return TI_FAIL(err, TI_E_SHAPE, "Trying to create tensor with negative dimension %lld: %s",
			               (long long)shape[i].value, ti_shape_str(call->ctx, count, shape));
	*ndim = count;
	return TI_OK;
}

static ti_status new_of_size(ti_op_call *call, const char *size, ti_dtype dtype, ti_error *err)
{
	ti_dim shape[TI_META_MAX_DIMS];
	int ndim = 0;
	ti_status st = read_size(call, size, &ndim, shape, err);
	return st ? st : output(call, ti_meta_new(call->ctx, dtype, ndim, shape), err);
}

/* uniform_ dispatches on floating types only (DistributionTemplates.h check_uniform_bounds). */
static ti_status check_uniform(ti_dtype dtype, ti_error *err)
{
	if (!ti_dtype_is_floating(dtype))
		return TI_FAIL(err, TI_E_SHAPE, "\"check_uniform_bounds\" not implemented for '%s'", ti_dtype_torch_name(dtype));
	return TI_OK;
}

/* The dtype torch.full infers from its fill value: bool, int64, or the default. */
static ti_dtype scalar_dtype(const ti_shape_ctx *ctx, const ti_arg *value)
{
	return value->kind == TI_ARG_BOOL ? TI_DT_BOOL : value->kind == TI_ARG_INT ? TI_DT_INT64 : ctx->default_dtype;
}

/* ---- arange ---- */

static bool is_integer_arg(const ti_arg *a) { return a->kind == TI_ARG_INT || a->kind == TI_ARG_BOOL; }

/* A Scalar as a size: bools are 0 and 1, floats truncate toward zero (Python's int()). */
static ti_dim scalar_dim(const ti_arg *a)
{
	if (a->kind == TI_ARG_INT)
		return a->as.dim;
	if (a->kind == TI_ARG_BOOL)
		return ti_dim_int(a->as.boolean);
	return ti_dim_int((int64_t)a->as.real);
}

static double scalar_value(const ti_arg *a)
{
	return a->kind == TI_ARG_FLOAT ? a->as.real : (double)scalar_dim(a).value;
}

static const char *scalar_repr(ti_shape_ctx *ctx, const ti_arg *a)
{
	char buf[64];
	if (a->kind == TI_ARG_FLOAT)
		ti_format_float(a->as.real, buf, sizeof(buf));
	else
		ti_dim_format(scalar_dim(a), buf, sizeof(buf));
	return ti_arena_strdup(ctx->arena, buf);
}

/* The length of an integer range: (end - start + step - sign(step)) // step, torch/_refs arange. */
static ti_status integer_length(ti_op_call *call, ti_dim start, ti_dim end, ti_dim step, ti_dim *length,
                                ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	if (!ti_dim_is_int(step))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "arange(): a symbolic step is not supported");
	if (step.value == 0)
		return TI_FAIL(err, TI_E_SHAPE, "step must be nonzero");
	bool up = step.value > 0;
	if (!ti_dim_assume(s, end, up ? TI_CMP_GE : TI_CMP_LE, start))
		return TI_FAIL(err, TI_E_SHAPE, "upper bound and larger bound inconsistent with step sign");
	/* floor division by a negative step is floor division of the negations */
	ti_dim span = up ? ti_dim_sub(s, end, start) : ti_dim_sub(s, start, end);
	int64_t size = up ? step.value : -step.value;
	*length = ti_dim_floordiv(s, ti_dim_add(s, span, ti_dim_int(size - 1)), ti_dim_int(size));
	return TI_OK;
}

static ti_status arange_rule(ti_op_call *call, ti_error *err)
{
	static const ti_arg zero = {TI_ARG_INT, {.dim = {0, NULL}}, NULL};
	const ti_arg *start = ti_call_arg(call, "start"), *end = ti_call_arg(call, "end");
	const ti_arg *step = ti_call_arg(call, "step");
	bool no_start = ti_call_is_none(call, "start"), no_end = ti_call_is_none(call, "end");
	if (no_start && no_end)
		return TI_FAIL(err, TI_E_CORRUPT, "arange() missing required argument 'end'");
	if (no_end) { /* torch.arange(5) */
		end = start;
		start = &zero;
	} else if (no_start) {
		start = &zero;
	}
	bool integer_args = is_integer_arg(start) && is_integer_arg(end) && is_integer_arg(step);
	ti_dtype dtype = dtype_or(call, integer_args ? TI_DT_INT64 : call->ctx->default_dtype);
	ti_dim length;
	ti_status st;
	if (integer_args || dtype == TI_DT_INT64) {
		/* int64 ranges truncate their ends first, as RangeFactories.cpp computes in int64 */
		st = integer_length(call, scalar_dim(start), scalar_dim(end), scalar_dim(step), &length, err);
	} else {
		if (!ti_dim_is_int(scalar_dim(start)) || !ti_dim_is_int(scalar_dim(end)) || !ti_dim_is_int(scalar_dim(step)))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "arange(): symbolic bounds need integer arguments");
		double a = scalar_value(start), b = scalar_value(end), h = scalar_value(step);
		if (h == 0)
			return TI_FAIL(err, TI_E_SHAPE, "step must be nonzero");
		if ((h > 0 && b < a) || (h < 0 && b > a))
			return TI_FAIL(err, TI_E_SHAPE, "upper bound and larger bound inconsistent with step sign");
		if (!isfinite(a) || !isfinite(b))
			return TI_FAIL(err, TI_E_SHAPE, "unsupported range: %s -> %s", scalar_repr(call->ctx, start),
			               scalar_repr(call->ctx, end));
		if (!isfinite(h))
			return TI_FAIL(err, TI_E_SHAPE, "step must be finite but got %s", scalar_repr(call->ctx, step));
		double n = (b - a) / h; /* ceil by hand, so this file needs no libm */
		if (!(n <= 9.2e18))
			return TI_FAIL(err, TI_E_SHAPE, "invalid size, possible overflow?");
		length = ti_dim_int((int64_t)n + ((double)(int64_t)n < n));
		st = TI_OK;
	}
	return st ? st : output(call, ti_meta_new(call->ctx, dtype, 1, &length), err);
}

/* ---- factories from a size ---- */

static ti_status zeros_rule(ti_op_call *call, ti_error *err)
{
	return new_of_size(call, "size", dtype_or(call, call->ctx->default_dtype), err);
}

static ti_status rand_rule(ti_op_call *call, ti_error *err)
{
	ti_dtype dtype = dtype_or(call, call->ctx->default_dtype);
	ti_status st = check_uniform(dtype, err);
	return st ? st : new_of_size(call, "size", dtype, err);
}

static ti_status full_rule(ti_op_call *call, ti_error *err)
{
	return new_of_size(call, "size", dtype_or(call, scalar_dtype(call->ctx, ti_call_arg(call, "fill_value"))), err);
}

/* randint(high, size) or randint(low, high, size): the size is the last list given. */
static ti_status randint_rule(ti_op_call *call, ti_error *err)
{
	const ti_arg *high = ti_call_arg(call, "high");
	const char *size = "size";
	if (ti_call_is_none(call, "size")) {
		if (high->kind != TI_ARG_LIST)
			return TI_FAIL(err, TI_E_CORRUPT, "randint() missing required argument 'size'");
		size = "high";
	} else if (high->kind != TI_ARG_INT) {
		return TI_FAIL(err, TI_E_CORRUPT, "randint(): argument 'high' must be int");
	} else if (!ti_call_is_none(call, "low")) {
		/* random_'s check_from_to, on the numbers given */
		ti_dim from = ti_call_dim(call, "low"), to = high->as.dim;
		if (ti_dim_is_int(from) && ti_dim_is_int(to) && from.value >= to.value)
			return TI_FAIL(err, TI_E_SHAPE, "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
			               (long long)from.value, (long long)to.value);
	}
	return new_of_size(call, size, dtype_or(call, TI_DT_INT64), err);
}

static ti_status randperm_rule(ti_op_call *call, ti_error *err)
{
	return new_of_size(call, "n", dtype_or(call, TI_DT_INT64), err);
}

static ti_status eye_rule(ti_op_call *call, ti_error *err)
{
	ti_dim shape[2] = {ti_call_dim(call, "n"), ti_call_dim(call, "m")};
	if (ti_call_is_none(call, "m"))
		shape[1] = shape[0];
	for (int i = 0; i < 2; i++)
		if (ti_dim_is_int(shape[i]) && shape[i].value < 0)
			return TI_FAIL(err, TI_E_SHAPE, "%s must be greater or equal to 0, got %lld", i ? "m" : "n",
			               (long long)shape[i].value);
	return output(call, ti_meta_new(call->ctx, dtype_or(call, call->ctx->default_dtype), 2, shape), err);
}

static ti_status linspace_rule(ti_op_call *call, ti_error *err)
{
	ti_dim steps = ti_call_dim(call, "steps");
	if (ti_dim_is_int(steps) && steps.value < 0)
		return TI_FAIL(err, TI_E_SHAPE, "number of steps must be non-negative");
	return output(call, ti_meta_new(call->ctx, dtype_or(call, call->ctx->default_dtype), 1, &steps), err);
}

/* ---- memory formats, *_like, new_* ---- */

typedef enum memory_format { FORMAT_PRESERVE, FORMAT_CONTIGUOUS, FORMAT_CHANNELS_LAST, FORMAT_CHANNELS_LAST_3D } memory_format;

static const struct {
	const char *name;
	memory_format format;
	int rank; /* the rank the format needs; 0 for any */
} formats[] = {
	{"preserve_format", FORMAT_PRESERVE, 0}, {"contiguous_format", FORMAT_CONTIGUOUS, 0},
	{"channels_last", FORMAT_CHANNELS_LAST, 4}, {"channels_last_3d", FORMAT_CHANNELS_LAST_3D, 5},
};

/* A tensor like t, of dtype, in the memory_format argument's layout (empty_like). */
static ti_status like(ti_op_call *call, const ti_meta_tensor *t, ti_dtype dtype, ti_meta_tensor **out, ti_error *err)
{
	const char *name = ti_call_str(call, "memory_format");
	if (!name) {
		*out = ti_meta_like(call->ctx, t, dtype);
		return TI_OK;
	}
	if (!strncmp(name, "torch.", 6))
		name += 6;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(formats[i].name, name))
			continue;
		if (formats[i].rank && t->ndim != formats[i].rank)
			return TI_FAIL(err, TI_E_SHAPE, "required rank %d tensor to use %s format", formats[i].rank, name);
		switch (formats[i].format) {
		case FORMAT_PRESERVE: *out = ti_meta_like(call->ctx, t, dtype); break;
		case FORMAT_CONTIGUOUS: *out = ti_meta_new(call->ctx, dtype, t->ndim, t->shape); break;
		default: *out = ti_meta_new_channels_last(call->ctx, dtype, t->ndim, t->shape); break;
		}
		return TI_OK;
	}
	return TI_FAIL(err, TI_E_CORRUPT, "%s(): unknown memory_format '%s'", call->rule->parsed->name, name);
}

static ti_status like_of(ti_op_call *call, ti_dtype dtype, ti_error *err)
{
	ti_meta_tensor *out;
	ti_status st = like(call, ti_call_tensor(call, "input"), dtype, &out, err);
	return st ? st : output(call, out, err);
}

static ti_dtype input_dtype(ti_op_call *call) { return ti_call_tensor(call, "input")->dtype; }

/* zeros_like, ones_like, empty_like, randn_like, randint_like: the input's dtype unless given. */
static ti_status zeros_like_rule(ti_op_call *call, ti_error *err)
{
	return like_of(call, dtype_or(call, input_dtype(call)), err);
}

static ti_status rand_like_rule(ti_op_call *call, ti_error *err)
{
	ti_dtype dtype = dtype_or(call, input_dtype(call));
	ti_status st = check_uniform(dtype, err);
	return st ? st : like_of(call, dtype, err);
}

/* new_zeros, new_ones, new_empty, new_full: a new contiguous size, the input's dtype unless given. */
static ti_status new_zeros_rule(ti_op_call *call, ti_error *err)
{
	return new_of_size(call, "size", dtype_or(call, input_dtype(call)), err);
}

/* ---- conversion ---- */

/*
 * Tensor.to: the input itself when nothing changes and no copy is asked for,
 * else a converted copy in the input's layout (memory_format=preserve).
 */
static ti_status convert(ti_op_call *call, ti_dtype dtype, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	if (dtype == input->dtype && !ti_call_bool(call, "copy") && !ti_call_str(call, "memory_format"))
		return ti_call_output_tensor(call, input, err);
	ti_meta_tensor *out;
	ti_status st = like(call, input, dtype, &out, err);
	if (st || !out)
		return st ? st : TI_FAIL(err, TI_E_NOMEM, "out of memory");
	out->requires_grad = input->requires_grad && (ti_dtype_is_floating(dtype) || ti_dtype_is_complex(dtype));
	return ti_call_output_tensor(call, out, err);
}

static ti_status to_rule(ti_op_call *call, ti_error *err) { return convert(call, dtype_or(call, input_dtype(call)), err); }

static ti_status type_rule(ti_op_call *call, ti_error *err)
{
	if (ti_call_is_none(call, "dtype"))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "type() without a dtype gives a str, not a tensor");
	return to_rule(call, err);
}

static ti_status type_as_rule(ti_op_call *call, ti_error *err)
{
	return convert(call, ti_call_tensor(call, "other")->dtype, err);
}

/* Tensor.float() and friends: to() with the dtype their name says. */
static const struct {
	const char *name;
	ti_dtype dtype;
} shorthands[] = {
	{"float", TI_DT_FLOAT32}, {"double", TI_DT_FLOAT64}, {"half", TI_DT_FLOAT16},
	{"bfloat16", TI_DT_BFLOAT16}, {"long", TI_DT_INT64}, {"int", TI_DT_INT32}, {"short", TI_DT_INT16},
	{"char", TI_DT_INT8}, {"byte", TI_DT_UINT8}, {"bool", TI_DT_BOOL}, {"cfloat", TI_DT_COMPLEX64},
	{"cdouble", TI_DT_COMPLEX128},
};

static ti_status shorthand_rule(ti_op_call *call, ti_error *err)
{
	const char *name = call->rule->parsed->name;
	for (size_t i = 0; i < sizeof(shorthands) / sizeof(shorthands[0]); i++)
		if (!strcmp(shorthands[i].name, name))
			return convert(call, shorthands[i].dtype, err);
	return TI_FAIL(err, TI_E_INVALID, "no dtype for %s()", name);
}

static ti_status clone_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_meta_tensor *out;
	ti_status st = like(call, input, input->dtype, &out, err);
	if (st || !out)
		return st ? st : TI_FAIL(err, TI_E_NOMEM, "out of memory");
	out->requires_grad = input->requires_grad;
	return ti_call_output_tensor(call, out, err);
}

/* ---- the table ---- */

/* The keyword arguments every factory takes; device, layout and pin_memory change no shape. */
#define FACTORY "ScalarType? dtype=None, str? layout=None, str? device=None, bool requires_grad=False, bool pin_memory=False"
#define SIZED(name) name "(int[]... size, *, " FACTORY ")"
#define LIKE(name) name "(Tensor input, *, " FACTORY ", str? memory_format=None)"
#define NEW(name) name "(Tensor input, int[]... size, *, " FACTORY ")"
#define SHORTHAND(name) name "(Tensor input, *, str? memory_format=None)"

ti_op_rule ti_ops_create[] = {
	{"arange(Scalar? start=None, Scalar? end=None, Scalar step=1, *, " FACTORY ")", arange_rule, TI_COUNT_FREE, NULL},
	{SIZED("zeros"), zeros_rule, TI_COUNT_FREE, NULL},
	{SIZED("ones"), zeros_rule, TI_COUNT_FREE, NULL},
	{SIZED("empty"), zeros_rule, TI_COUNT_FREE, NULL},
	{SIZED("randn"), zeros_rule, TI_COUNT_FREE, NULL},
	{SIZED("rand"), rand_rule, TI_COUNT_FREE, NULL},
	{"full(int[] size, Scalar fill_value, *, " FACTORY ")", full_rule, TI_COUNT_FREE, NULL},
	{"randint(int? low=None, int|int[]? high=None, int[]? size=None, *, " FACTORY ")", randint_rule, TI_COUNT_FREE, NULL},
	{"randperm(int[1] n, *, " FACTORY ")", randperm_rule, TI_COUNT_FREE, NULL},
	{"eye(int n, int? m=None, *, " FACTORY ")", eye_rule, TI_COUNT_FREE, NULL},
	{"linspace(Scalar start, Scalar end, int steps, *, " FACTORY ")", linspace_rule, TI_COUNT_FREE, NULL},
	{"logspace(Scalar start, Scalar end, int steps, float base=10.0, *, " FACTORY ")", linspace_rule, TI_COUNT_FREE, NULL},
	{LIKE("zeros_like"), zeros_like_rule, TI_COUNT_FREE, NULL},
	{LIKE("ones_like"), zeros_like_rule, TI_COUNT_FREE, NULL},
	{LIKE("empty_like"), zeros_like_rule, TI_COUNT_FREE, NULL},
	{LIKE("randn_like"), zeros_like_rule, TI_COUNT_FREE, NULL},
	{LIKE("rand_like"), rand_like_rule, TI_COUNT_FREE, NULL},
	{"full_like(Tensor input, Scalar fill_value, *, " FACTORY ", str? memory_format=None)", zeros_like_rule, TI_COUNT_FREE, NULL},
	{"randint_like(Tensor input, int low, int? high=None, *, " FACTORY ", str? memory_format=None)", zeros_like_rule, TI_COUNT_FREE, NULL},
	{NEW("new_zeros"), new_zeros_rule, TI_COUNT_FREE, NULL},
	{NEW("new_ones"), new_zeros_rule, TI_COUNT_FREE, NULL},
	{NEW("new_empty"), new_zeros_rule, TI_COUNT_FREE, NULL},
	{"new_full(Tensor input, int[] size, Scalar fill_value, *, " FACTORY ")", new_zeros_rule, TI_COUNT_FREE, NULL},
	{"to(Tensor input, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, *, str? device=None, "
	 "str? memory_format=None)", to_rule, TI_COUNT_FREE, NULL},
	{"type(Tensor input, ScalarType? dtype=None, bool non_blocking=False)", type_rule, TI_COUNT_FREE, NULL},
	{"type_as(Tensor input, Tensor other)", type_as_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("float"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("double"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("half"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("bfloat16"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("long"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("int"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("short"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("char"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("byte"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("bool"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("cfloat"), shorthand_rule, TI_COUNT_FREE, NULL},
	{SHORTHAND("cdouble"), shorthand_rule, TI_COUNT_FREE, NULL},
	{"clone(Tensor input, *, str? memory_format=None)", clone_rule, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
