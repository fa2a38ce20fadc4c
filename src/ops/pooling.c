/*
 * pooling.c - max_pool1d/2d/3d, avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d,
 * adaptive_max_pool1d/2d/3d.
 *
 * Shapes and checks follow PyTorch 2.x: aten/src/ATen/native/Pool.h
 * (pooling_output_shape, pool2d_shape_check, pool3d_shape_check), the meta
 * functions of DilatedMaxPool2d.cpp, AveragePool2d.cpp, AveragePool3d.cpp,
 * DilatedMaxPool3d.cpp, AdaptiveAveragePooling(3d).cpp and
 * AdaptiveMaxPooling2d/3d.cpp, and Pooling.cpp, where a 1-d pool is the 2-d
 * pool of input.unsqueeze(-2) with a kernel of height 1. The 1-d max pool
 * takes the path every non-CPU tensor takes (max_pool1d_with_indices).
 *
 * Output size per dimension (pooling_output_shape):
 *   (L + 2p - d(k - 1) - 1 [+ s - 1 in ceil mode]) // s + 1,
 * less one in ceil mode when the last window would start past the input and
 * its left padding; a symbolic size assumes it does not (the assumption is
 * recorded). Adaptive pools give output_size, an adaptive avg pool to 1x1
 * (1x1x1) being input.mean(spatial dims, keepdim=True) as in PyTorch.
 *
 * Counting: a pool is one flop per output element per kernel element
 * (output numel * prod(kernel)); an adaptive pool takes ceil(L / out) per
 * dimension as its kernel (its window when out divides L; PyTorch's windows
 * vary by one around it otherwise). return_indices adds
 * an int64 tensor of the output's shape. Outputs are contiguous and require
 * grad when the input does.
 */
#include <string.h>

#include "ops/tables.h"

#define POOL_MAX_DIMS 3

typedef enum pool_kind { POOL_MAX, POOL_AVG } pool_kind;

/* One pool family: its rank and the wording of its argument-length checks (they differ a little). */
typedef struct pool_spec {
	pool_kind kind;
	int dims; /* 2 or 3: 1-d pools run as 2-d */
	const char *kernel_msg, *stride_msg, *padding_msg, *dilation_msg;
} pool_spec;

static const pool_spec max_pool2d_spec = {
	POOL_MAX, 2, "max_pool2d: kernel_size must either be a single int, or a tuple of two ints",
	"max_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
	"max_pool2d: padding must either be a single int, or a tuple of two ints",
	"max_pool2d: dilation must be either a single int, or a tuple of two ints",
};
static const pool_spec avg_pool2d_spec = {
	POOL_AVG, 2, "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints",
	"avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
	"avg_pool2d: padding must either be a single int, or a tuple of two ints", NULL,
};
static const pool_spec max_pool3d_spec = {
	POOL_MAX, 3, "max_pool3d: kernel_size must either be a single int, or a tuple of three ints",
	"max_pool3d: stride must either be omitted, a single int, or a tuple of three ints",
	"max_pool3d: padding must either be a single int, or a tuple of three ints",
	"max_pool3d: dilation must be either a single int, or a tuple of three ints",
};
static const pool_spec avg_pool3d_spec = {
	POOL_AVG, 3, "avg_pool3d: kernel_size must be a single int, or a tuple of three ints",
	"avg_pool3d: stride must be omitted, a single int, or a tuple of three ints",
	"avg_pool3d: padding must be a single int, or a tuple of three ints", NULL,
};

/* The window parameters after their lengths are checked, one per pooled dimension. */
typedef struct pool_window {
	ti_dim kernel[POOL_MAX_DIMS], stride[POOL_MAX_DIMS], padding[POOL_MAX_DIMS], dilation[POOL_MAX_DIMS];
	bool ceil_mode;
} pool_window;

static const char *dim_text(ti_shape_ctx *ctx, ti_dim d) { return ti_dim_str(ctx->sym, d); }
static bool is_size(ti_dim d, int64_t v) { return ti_dim_is_int(d) && d.value == v; }
static bool surely(ti_shape_ctx *ctx, ti_dim a, ti_cmp cmp, int64_t b)
{
	return ti_dim_compare(ctx->sym, a, cmp, ti_dim_int(b)) == TI_TRUE;
}

static ti_dim product(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	ti_dim p = ti_dim_int(1);
	for (int i = 0; i < n; i++)
		p = ti_dim_mul(ctx->sym, p, dims[i]);
	return p;
}

/* A list of 1 or n values (a single int repeats); NULL or empty takes fallback (stride=None). */
static bool take_list(const ti_arg *items, int count, int n, const ti_dim *fallback, ti_dim *out)
{
	if (count == 0 && fallback) {
		memcpy(out, fallback, (size_t)n * sizeof(*out));
		return true;
	}
	if (count != 1 && count != n)
		return false;
	for (int i = 0; i < n; i++)
		out[i] = items[count == 1 ? 0 : i].as.dim;
	return true;
}

/* pooling_output_shape, with its checks of stride and padding. */
static ti_status output_size(ti_shape_ctx *ctx, ti_dim in, ti_dim k, ti_dim p, ti_dim s, ti_dim d, bool ceil_mode,
                             ti_dim *out, ti_error *err)
{
	ti_symctx *sym = ctx->sym;
	if (is_size(s, 0))
		return TI_FAIL(err, TI_E_SHAPE, "stride should not be zero");
	if (surely(ctx, p, TI_CMP_LT, 0))
		return TI_FAIL(err, TI_E_SHAPE, "pad must be non-negative, but got pad: %s", dim_text(ctx, p));
	ti_dim reach = ti_dim_mul(sym, ti_dim_sub(sym, k, ti_dim_int(1)), d); /* d(k - 1) */
	ti_dim half = ti_dim_floordiv(sym, ti_dim_add(sym, reach, ti_dim_int(1)), ti_dim_int(2));
	if (!ti_dim_assume(sym, p, TI_CMP_LE, half))
		return TI_FAIL(err, TI_E_SHAPE,
		               "pad should be at most half of effective kernel size, but got pad=%s, kernel_size=%s and dilation=%s",
		               dim_text(ctx, p), dim_text(ctx, k), dim_text(ctx, d));
	ti_dim span = ti_dim_sub(sym, ti_dim_add(sym, in, ti_dim_mul(sym, ti_dim_int(2), p)), ti_dim_add(sym, reach, ti_dim_int(1)));
	if (ceil_mode)
		span = ti_dim_add(sym, span, ti_dim_sub(sym, s, ti_dim_int(1)));
	*out = ti_dim_add(sym, ti_dim_floordiv(sym, span, s), ti_dim_int(1));
	/* the last window must start inside the input or its left padding */
	ti_dim last_start = ti_dim_mul(sym, ti_dim_sub(sym, *out, ti_dim_int(1)), s);
	if (ceil_mode && !ti_dim_assume(sym, last_start, TI_CMP_LT, ti_dim_add(sym, in, p)))
		*out = ti_dim_sub(sym, *out, ti_dim_int(1));
	return TI_OK;
}

static bool all_positive(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	for (int i = 0; i < n; i++)
		if (surely(ctx, dims[i], TI_CMP_LE, 0))
			return false;
	return true;
}

/* "(3x8x8)": sizes joined by x, as Pool.h prints them. */
static const char *x_joined(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	char *text = ti_arena_strdup(ctx->arena, "(");
	for (int i = 0; i < n && text; i++)
		text = ti_arena_printf(ctx->arena, "%s%s%s", text, i ? "x" : "", dim_text(ctx, dims[i]));
	return text ? ti_arena_printf(ctx->arena, "%s)", text) : "()";
}

/* pool2d_shape_check; in and out are (planes, height, width). */
static ti_status pool2d_shape_check(ti_shape_ctx *ctx, const ti_meta_tensor *input, const pool_window *w,
                                    const ti_dim *in, const ti_dim *out, ti_error *err)
{
	const ti_dim *k = w->kernel, *s = w->stride, *d = w->dilation, *p = w->padding;
	if (!all_positive(ctx, k, 2))
		return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got kH: %s kW: %s",
		               dim_text(ctx, k[0]), dim_text(ctx, k[1]));
	if (!all_positive(ctx, s, 2))
		return TI_FAIL(err, TI_E_SHAPE, "stride should be greater than zero, but got dH: %s dW: %s",
		               dim_text(ctx, s[0]), dim_text(ctx, s[1]));
	if (!all_positive(ctx, d, 2))
		return TI_FAIL(err, TI_E_SHAPE, "dilation should be greater than zero, but got dilationH: %s dilationW: %s",
		               dim_text(ctx, d[0]), dim_text(ctx, d[1]));
	int n = input->ndim;
	bool nonzero = !is_size(input->shape[1], 0) && !is_size(input->shape[2], 0);
	if (!((n == 3 && !is_size(input->shape[0], 0) && nonzero) || (n == 4 && nonzero && !is_size(input->shape[3], 0))))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s",
		               ti_meta_shape_str(ctx, input));
	for (int i = 0; i < 2; i++)
		if (!ti_dim_assume(ctx->sym, ti_dim_floordiv(ctx->sym, k[i], ti_dim_int(2)), TI_CMP_GE, p[i]))
			return TI_FAIL(err, TI_E_SHAPE,
			               "pad should be smaller than or equal to half of kernel size, but got padW = %s, padH = %s, kW = %s, kH = %s",
			               dim_text(ctx, p[1]), dim_text(ctx, p[0]), dim_text(ctx, k[1]), dim_text(ctx, k[0]));
	for (int i = 1; i < 3; i++)
		if (!ti_dim_assume(ctx->sym, out[i], TI_CMP_GE, ti_dim_int(1))) {
			ti_dim shown[3] = {in[0], out[1], out[2]};
			return TI_FAIL(err, TI_E_SHAPE, "Given input size: %s. Calculated output size: %s. Output size is too small",
			               x_joined(ctx, in, 3), x_joined(ctx, shown, 3));
		}
	return TI_OK;
}

/* pool3d_shape_check; in and out are (planes, time, height, width). */
static ti_status pool3d_shape_check(ti_shape_ctx *ctx, const ti_meta_tensor *input, const pool_window *w,
                                    const ti_dim *in, const ti_dim *out, const char *fn, bool check_input_size,
                                    ti_error *err)
{
	const ti_dim *k = w->kernel, *s = w->stride, *d = w->dilation, *p = w->padding;
	if (!all_positive(ctx, k, 3))
		return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got kT: %s kH: %s kW: %s",
		               dim_text(ctx, k[0]), dim_text(ctx, k[1]), dim_text(ctx, k[2]));
	if (!all_positive(ctx, s, 3))
		return TI_FAIL(err, TI_E_SHAPE, "stride should be greater than zero, but got dT: %s dH: %s dW: %s",
		               dim_text(ctx, s[0]), dim_text(ctx, s[1]), dim_text(ctx, s[2]));
	if (!all_positive(ctx, d, 3))
		return TI_FAIL(err, TI_E_SHAPE,
		               "dilation should be greater than zero, but got dilationT: %s dilationH: %s dilationW: %s",
		               dim_text(ctx, d[0]), dim_text(ctx, d[1]), dim_text(ctx, d[2]));
	if (input->ndim != 4 && input->ndim != 5)
		return TI_FAIL(err, TI_E_SHAPE, "%s: Expected 4D or 5D tensor for input, but got: %s", fn,
		               ti_meta_shape_str(ctx, input));
	for (int i = input->ndim == 5 ? 1 : 0; i < input->ndim; i++)
		if (is_size(input->shape[i], 0))
			return TI_FAIL(err, TI_E_SHAPE,
			               "%s: Expected input's non-batch dimensions to have positive length, but input has a shape of %s and non-batch dimension 0 has length zero!",
			               fn, ti_meta_shape_str(ctx, input));
	bool fits = true;
	for (int i = 0; i < 3 && check_input_size; i++)
		fits = fits && ti_dim_assume(ctx->sym, in[i + 1], TI_CMP_GE, k[i]);
	if (!fits)
		return TI_FAIL(err, TI_E_SHAPE, "input image (T: %s H: %s W: %s) smaller than kernel size (kT: %s kH: %s kW: %s)",
		               dim_text(ctx, in[1]), dim_text(ctx, in[2]), dim_text(ctx, in[3]), dim_text(ctx, k[0]),
		               dim_text(ctx, k[1]), dim_text(ctx, k[2]));
	for (int i = 0; i < 3; i++)
		if (!ti_dim_assume(ctx->sym, ti_dim_floordiv(ctx->sym, k[i], ti_dim_int(2)), TI_CMP_GE, p[i]))
			return TI_FAIL(err, TI_E_SHAPE,
			               "pad should be smaller than or equal to half of kernel size, but got kT: %s kW: %s kH: %s padT: %s padW: %s padH: %s",
			               dim_text(ctx, k[0]), dim_text(ctx, k[2]), dim_text(ctx, k[1]), dim_text(ctx, p[0]),
			               dim_text(ctx, p[2]), dim_text(ctx, p[1]));
	for (int i = 1; i < 4; i++)
		if (!ti_dim_assume(ctx->sym, out[i], TI_CMP_GE, ti_dim_int(1)))
			return TI_FAIL(err, TI_E_SHAPE, "Given input size: %s. Calculated output size: %s. Output size is too small",
			               x_joined(ctx, in, 4), x_joined(ctx, out, 4));
	return TI_OK;
}

/* ---- outputs ---- */

/* The pooled output (and int64 indices); `squeeze` drops dimension -2 (a 1-d pool run as 2-d). */
static ti_status add_outputs(ti_op_call *call, const ti_meta_tensor *input, int ndim, const ti_dim *shape,
                             bool indices, bool squeeze, ti_dim window, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_dim dims[TI_META_MAX_DIMS];
	memcpy(dims, shape, (size_t)ndim * sizeof(*dims));
	if (squeeze)
		dims[ndim - 2] = dims[ndim - 1], ndim--;
	ti_call_flops(call, ti_dim_mul(ctx->sym, product(ctx, dims, ndim), window));
	for (int i = 0; i < (indices ? 2 : 1); i++) {
		ti_meta_tensor *t = ti_meta_new(ctx, i ? TI_DT_INT64 : input->dtype, ndim, dims);
		if (t)
			t->requires_grad = i == 0 && input->requires_grad;
		ti_status st = ti_call_output_tensor(call, t, err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* ---- max and avg pools ---- */

/* Reads kernel_size, stride (None: the kernel), padding and dilation with the spec's length checks. */
static ti_status read_window(ti_op_call *call, const pool_spec *spec, const ti_arg *const lists[4],
                             const int counts[4], pool_window *w, ti_error *err)
{
	int n = spec->dims;
	static const ti_dim one[POOL_MAX_DIMS] = {{1, NULL}, {1, NULL}, {1, NULL}};
	if (!take_list(lists[0], counts[0], n, NULL, w->kernel))
		return TI_FAIL(err, TI_E_SHAPE, "%s", spec->kernel_msg);
	if (!take_list(lists[1], counts[1], n, w->kernel, w->stride))
		return TI_FAIL(err, TI_E_SHAPE, "%s", spec->stride_msg);
	if (!take_list(lists[2], counts[2], n, NULL, w->padding))
		return TI_FAIL(err, TI_E_SHAPE, "%s", spec->padding_msg);
	if (!spec->dilation_msg)
		memcpy(w->dilation, one, sizeof(one));
	else if (!take_list(lists[3], counts[3], n, NULL, w->dilation))
		return TI_FAIL(err, TI_E_SHAPE, "%s", spec->dilation_msg);
	w->ceil_mode = ti_call_bool(call, "ceil_mode");
	return TI_OK;
}

/* The output sizes of the pooled (last spec->dims) dimensions of in[]. */
static ti_status window_outputs(ti_shape_ctx *ctx, const pool_window *w, int n, const ti_dim *in, ti_dim *out,
                                ti_error *err)
{
	for (int i = 0; i < n; i++) {
		ti_status st = output_size(ctx, in[i], w->kernel[i], w->padding[i], w->stride[i], w->dilation[i],
		                           w->ceil_mode, &out[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* "divisor must be not zero" (avg pools). */
static ti_status check_divisor(ti_op_call *call, ti_error *err)
{
	const ti_arg *divisor = ti_call_arg(call, "divisor_override");
	if (divisor->kind == TI_ARG_INT && is_size(divisor->as.dim, 0))
		return TI_FAIL(err, TI_E_SHAPE, "divisor must be not zero");
	return TI_OK;
}

/*
 * The 2-d pools' meta functions: planes, height and width are the last three
 * dimensions (max_pool2d checks the rank first; avg_pool2d reads size(-3)
 * first, which fails with an IndexError on a smaller input).
 */
static ti_status pool2d(ti_op_call *call, const pool_spec *spec, const ti_meta_tensor *input, const pool_window *w,
                        bool indices, bool squeeze, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n = input->ndim, unused;
	ti_status st;
	if (spec->kind == POOL_MAX && n != 3 && n != 4)
		return TI_FAIL(err, TI_E_SHAPE, "non-empty 3D or 4D (batch mode) tensor expected for input");
	if (spec->kind == POOL_AVG && ((st = check_divisor(call, err)) || (st = ti_wrap_dim(-3, n, &unused, err))))
		return st;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, input->shape, (size_t)n * sizeof(*shape));
	if ((st = window_outputs(ctx, w, 2, input->shape + n - 2, shape + n - 2, err)) ||
	    (st = pool2d_shape_check(ctx, input, w, input->shape + n - 3, shape + n - 3, err)))
		return st;
	return add_outputs(call, input, n, shape, indices, squeeze, product(ctx, w->kernel, 2), err);
}

static ti_status pool3d(ti_op_call *call, const pool_spec *spec, const ti_meta_tensor *input, const pool_window *w,
                        bool indices, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n = input->ndim;
	ti_status st;
	if (n != 4 && n != 5)
		return TI_FAIL(err, TI_E_SHAPE, "non-empty 4D or 5D (batch mode) tensor expected for input");
	if (spec->kind == POOL_AVG && (st = check_divisor(call, err)))
		return st;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, input->shape, (size_t)n * sizeof(*shape));
	bool avg = spec->kind == POOL_AVG;
	const char *fn = avg ? "avg_pool3d()" : "max_pool3d_with_indices_out_cpu_template()";
	if ((st = window_outputs(ctx, w, 3, input->shape + n - 3, shape + n - 3, err)) ||
	    (st = pool3d_shape_check(ctx, input, w, input->shape + n - 4, shape + n - 4, fn, avg, err)))
		return st;
	return add_outputs(call, input, n, shape, indices, false, product(ctx, w->kernel, 3), err);
}

/* The window arguments of a pool call: kernel_size, stride, padding, dilation (max pools only). */
static void window_lists(ti_op_call *call, const ti_arg *lists[4], int counts[4])
{
	static const char *const names[4] = {"kernel_size", "stride", "padding", "dilation"};
	for (int i = 0; i < 4; i++)
		lists[i] = ti_call_list(call, names[i], &counts[i]);
}

static ti_status run_pool(ti_op_call *call, const pool_spec *spec, ti_error *err)
{
	const ti_arg *lists[4];
	int counts[4];
	pool_window w;
	window_lists(call, lists, counts);
	ti_status st = read_window(call, spec, lists, counts, &w, err);
	if (st)
		return st;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	bool indices = ti_call_bool(call, "return_indices");
	return spec->dims == 2 ? pool2d(call, spec, input, &w, indices, false, err)
	                       : pool3d(call, spec, input, &w, indices, err);
}

static ti_status run_max_pool2d(ti_op_call *call, ti_error *err) { return run_pool(call, &max_pool2d_spec, err); }
static ti_status run_avg_pool2d(ti_op_call *call, ti_error *err) { return run_pool(call, &avg_pool2d_spec, err); }
static ti_status run_max_pool3d(ti_op_call *call, ti_error *err) { return run_pool(call, &max_pool3d_spec, err); }
static ti_status run_avg_pool3d(ti_op_call *call, ti_error *err) { return run_pool(call, &avg_pool3d_spec, err); }

/* ---- 1-d pools: checkDimRange and check1d, then the 2-d pool of input.unsqueeze(-2) ---- */

static ti_status check_dim_range(ti_shape_ctx *ctx, const char *fn, const ti_meta_tensor *input, ti_error *err)
{
	(void)ctx;
	if (input->ndim >= 2 && input->ndim <= 3)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE,
	               "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking arguments for %s)",
	               input->ndim, fn);
}

static ti_status check_1d(const char *fn, const char *arg, int count, ti_error *err)
{
	if (count == 1)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "%s() argument '%s' should contain one int (got %d)", fn, arg, count);
}

/* input.unsqueeze(-2): a view with a size-1 dimension before the last. */
static const ti_meta_tensor *unsqueeze_height(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	int n = t->ndim;
	memcpy(shape, t->shape, (size_t)n * sizeof(*shape));
	memcpy(stride, t->stride, (size_t)n * sizeof(*stride));
	shape[n] = shape[n - 1], stride[n] = stride[n - 1];
	shape[n - 1] = ti_dim_int(1);
	stride[n - 1] = ti_dim_mul(ctx->sym, stride[n], shape[n]);
	return ti_meta_view(ctx, t, n + 1, shape, stride);
}

static ti_status run_pool1d(ti_op_call *call, const pool_spec *spec, const char *fn, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_arg *lists[4];
	int counts[4];
	window_lists(call, lists, counts);
	if (counts[1] == 0) /* stride=None: the kernel */
		lists[1] = lists[0], counts[1] = counts[0];
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_status st = check_dim_range(ctx, fn, input, err);
	int checked = spec->kind == POOL_MAX ? 4 : 3;
	static const char *const names[4] = {"kernel_size", "stride", "padding", "dilation"};
	for (int i = 0; i < checked && !st; i++)
		st = check_1d(fn, names[i], counts[i], err);
	if (st)
		return st;
	pool_window w;
	ti_dim one = ti_dim_int(1), zero = ti_dim_int(0);
	w.kernel[0] = w.stride[0] = w.dilation[0] = w.dilation[1] = one;
	w.padding[0] = zero;
	w.kernel[1] = lists[0][0].as.dim;
	w.stride[1] = lists[1][0].as.dim;
	w.padding[1] = lists[2][0].as.dim;
	if (spec->kind == POOL_MAX)
		w.dilation[1] = lists[3][0].as.dim;
	w.ceil_mode = ti_call_bool(call, "ceil_mode");
	const ti_meta_tensor *unsqueezed = unsqueeze_height(ctx, input);
	if (!unsqueezed)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %s", fn);
	return pool2d(call, spec, unsqueezed, &w, ti_call_bool(call, "return_indices"), true, err);
}

static ti_status run_max_pool1d(ti_op_call *call, ti_error *err)
{
	return run_pool1d(call, &max_pool2d_spec, "max_pool1d", err);
}

static ti_status run_avg_pool1d(ti_op_call *call, ti_error *err)
{
	return run_pool1d(call, &avg_pool2d_spec, "avg_pool1d", err);
}

/* ---- adaptive pools ---- */

/* One adaptive family: its rank and names in messages. */
typedef struct adaptive_spec {
	pool_kind kind;
	int dims; /* 2 or 3 */
	const char *name; /* "adaptive_avg_pool2d" */
} adaptive_spec;

static const adaptive_spec adaptive_avg2d = {POOL_AVG, 2, "adaptive_avg_pool2d"};
static const adaptive_spec adaptive_avg3d = {POOL_AVG, 3, "adaptive_avg_pool3d"};
static const adaptive_spec adaptive_max2d = {POOL_MAX, 2, "adaptive_max_pool2d"};
static const adaptive_spec adaptive_max3d = {POOL_MAX, 3, "adaptive_max_pool3d"};

static const char *const rank_words[] = {"", "", "3D or 4D", "4D or 5D"};

/* The adaptive window counted: ceil(in / out) per dimension (none when an output size is 0). */
static ti_dim adaptive_window(ti_shape_ctx *ctx, const ti_dim *in, const ti_dim *out, int n)
{
	ti_dim window = ti_dim_int(1);
	for (int i = 0; i < n; i++) {
		if (!ti_dim_is_int(out[i]) || out[i].value <= 0)
			return ti_dim_int(0);
		window = ti_dim_mul(ctx->sym, window, ti_dim_ceildiv(ctx->sym, in[i], out[i]));
	}
	return window;
}

/* Every dimension from `from` on must be non-empty. */
static ti_status check_nonempty(ti_shape_ctx *ctx, const char *fn, const ti_meta_tensor *input, int from,
                                ti_error *err)
{
	for (int i = from; i < input->ndim; i++)
		if (is_size(input->shape[i], 0))
			return TI_FAIL(err, TI_E_SHAPE,
			               "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with dimension %d being empty",
			               fn, ti_meta_shape_str(ctx, input), i);
	return TI_OK;
}

/* adaptive_avg_pool to all ones: input.mean(last dims, keepdim=True), which needs a float input. */
static ti_status adaptive_mean(ti_op_call *call, const ti_meta_tensor *input, int dims, bool squeeze, ti_error *err)
{
	int unused;
	ti_status st = ti_wrap_dim(-dims, input->ndim, &unused, err);
	if (st)
		return st;
	if (!ti_dtype_is_floating(input->dtype) && !ti_dtype_is_complex(input->dtype))
		return TI_FAIL(err, TI_E_SHAPE,
		               "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s",
		               ti_dtype_torch_name(input->dtype));
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, input->shape, (size_t)input->ndim * sizeof(*shape));
	for (int i = input->ndim - dims; i < input->ndim; i++)
		shape[i] = ti_dim_int(1);
	ti_dim window = product(call->ctx, input->shape + input->ndim - dims, dims);
	return add_outputs(call, input, input->ndim, shape, false, squeeze, window, err);
}

/* The adaptive pools proper, after output_size has been checked: rank, empty dims, output. */
static ti_status adaptive_pool(ti_op_call *call, const adaptive_spec *spec, const ti_meta_tensor *input,
                               const ti_dim *out, bool indices, bool squeeze, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n = input->ndim, d = spec->dims;
	bool rank_ok = n == d + 1 || n == d + 2;
	ti_status st = TI_OK;
	/* avg 2-d checks rank then the pooled dims; avg 3-d the non-batch dims then rank; max: rank then non-batch */
	if (spec->kind == POOL_AVG && d == 3)
		st = check_nonempty(ctx, spec->name, input, 1, err);
	if (!st && !rank_ok)
		st = TI_FAIL(err, TI_E_SHAPE, "%s(): Expected %s tensor, but got%s %s", spec->name, rank_words[d],
		             spec->kind == POOL_MAX ? ":" : "", ti_meta_shape_str(ctx, input));
	if (!st && !(spec->kind == POOL_AVG && d == 3))
		st = check_nonempty(ctx, spec->name, input, spec->kind == POOL_AVG ? n - d : 1, err);
	if (st)
		return st;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, input->shape, (size_t)n * sizeof(*shape));
	memcpy(shape + n - d, out, (size_t)d * sizeof(*shape));
	for (int i = n - d; i < n; i++)
		if (surely(ctx, shape[i], TI_CMP_LT, 0))
			return TI_FAIL(err, TI_E_SHAPE, "Trying to create tensor with negative dimension %s: %s",
			               dim_text(ctx, shape[i]), ti_shape_str(ctx, n, shape));
	ti_dim window = adaptive_window(ctx, input->shape + n - d, out, d);
	return add_outputs(call, input, n, shape, indices, squeeze, window, err);
}

/* adaptive_avg_pool2d/3d: the size and sign checks, the mean shortcut, then the pool. */
static ti_status adaptive_avg(ti_op_call *call, const adaptive_spec *spec, const ti_meta_tensor *input,
                              const ti_arg *items, int count, bool squeeze, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int d = spec->dims;
	ti_dim out[POOL_MAX_DIMS];
	if (!take_list(items, count, d, NULL, out))
		return TI_FAIL(err, TI_E_SHAPE, "%s: output_size must be %d", spec->name, d);
	bool ones = true, negative = false;
	for (int i = 0; i < d; i++) {
		ones = ones && is_size(out[i], 1);
		negative = negative || surely(ctx, out[i], TI_CMP_LT, 0);
	}
	if (negative)
		return TI_FAIL(err, TI_E_SHAPE,
		               "%s: elements of output_size must be greater than or equal to 0 but received {%s%s%s%s%s}",
		               spec->name, dim_text(ctx, out[0]), ", ", dim_text(ctx, out[1]), d == 3 ? ", " : "",
		               d == 3 ? dim_text(ctx, out[2]) : "");
	if (d == 2) /* fvcore counts aten::adaptive_avg_pool2d as 1 per input element */
		ti_call_count_as(call, ti_dim_int(0), ti_meta_numel(ctx, input));
	if (ones)
		return adaptive_mean(call, input, d, squeeze, err);
	return adaptive_pool(call, spec, input, out, false, squeeze, err);
}

/*
 * F.adaptive_*_pool2d/3d pass a tuple output_size through
 * _list_with_default, which needs more input dims than the tuple has.
 */
static ti_status check_list_default(const ti_meta_tensor *input, int count, ti_error *err)
{
	if (count > 1 && input->ndim <= count)
		return TI_FAIL(err, TI_E_SHAPE, "Input dimension should be at least %d", count + 1);
	return TI_OK;
}

static ti_status run_adaptive(ti_op_call *call, const adaptive_spec *spec, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	int count;
	const ti_arg *given = ti_call_list(call, "output_size", &count);
	ti_status st = check_list_default(input, count, err);
	if (st)
		return st;
	/* _list_with_default: a None keeps the input's size in that place */
	ti_arg *items = ti_arena_calloc(call->ctx->arena, (size_t)count + 1, sizeof(*items));
	if (!items)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %s", spec->name);
	for (int i = 0; i < count; i++) {
		int at = input->ndim - count + i;
		items[i] = given[i].kind == TI_ARG_NONE && at >= 0 ? ti_arg_dim(input->shape[at]) : given[i];
	}
	if (spec->kind == POOL_AVG)
		return adaptive_avg(call, spec, input, items, count, false, err);
	ti_dim out[POOL_MAX_DIMS];
	bool sized = take_list(items, count, spec->dims, NULL, out);
	int n = input->ndim, d = spec->dims;
	if (sized || n < d + 1 || n > d + 2)
		return adaptive_pool(call, spec, input, out, ti_call_bool(call, "return_indices"), false, err);
	if ((st = check_nonempty(call->ctx, spec->name, input, 1, err)))
		return st;
	return TI_FAIL(err, TI_E_SHAPE, "%s(): internal error: output_size.size() must be %d", spec->name, d);
}

static ti_status run_adaptive_avg_pool2d(ti_op_call *call, ti_error *err) { return run_adaptive(call, &adaptive_avg2d, err); }
static ti_status run_adaptive_avg_pool3d(ti_op_call *call, ti_error *err) { return run_adaptive(call, &adaptive_avg3d, err); }
static ti_status run_adaptive_max_pool2d(ti_op_call *call, ti_error *err) { return run_adaptive(call, &adaptive_max2d, err); }
static ti_status run_adaptive_max_pool3d(ti_op_call *call, ti_error *err) { return run_adaptive(call, &adaptive_max3d, err); }

/* adaptive_avg_pool1d / adaptive_max_pool1d: the 2-d pool of input.unsqueeze(-2) to (1, L). */
static ti_status run_adaptive1d(ti_op_call *call, const adaptive_spec *spec2d, const char *fn, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	int count;
	const ti_arg *items = ti_call_list(call, "output_size", &count);
	ti_status st = check_dim_range(ctx, fn, input, err);
	if (!st)
		st = check_1d(fn, "output_size", count, err);
	if (!st && spec2d->kind == POOL_MAX)
		st = check_nonempty(ctx, fn, input, 1, err);
	if (st)
		return st;
	const ti_meta_tensor *unsqueezed = unsqueeze_height(ctx, input);
	if (!unsqueezed)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %s", fn);
	ti_arg sizes[2] = {ti_arg_int(1), items[0]};
	if (spec2d->kind == POOL_AVG)
		return adaptive_avg(call, spec2d, unsqueezed, sizes, 2, true, err);
	ti_dim out[2] = {ti_dim_int(1), items[0].as.dim};
	return adaptive_pool(call, spec2d, unsqueezed, out, ti_call_bool(call, "return_indices"), true, err);
}

static ti_status run_adaptive_avg_pool1d(ti_op_call *call, ti_error *err)
{
	return run_adaptive1d(call, &adaptive_avg2d, "adaptive_avg_pool1d", err);
}

static ti_status run_adaptive_max_pool1d(ti_op_call *call, ti_error *err)
{
	return run_adaptive1d(call, &adaptive_max2d, "adaptive_max_pool1d", err);
}

#define MAX_POOL_ARGS "(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, int[] dilation=1, " \
                      "bool ceil_mode=False, bool return_indices=False)"
#define AVG_POOL_ARGS "(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, " \
                      "bool count_include_pad=True, int? divisor_override=None)"

ti_op_rule ti_ops_pooling[] = {
	{"max_pool1d" MAX_POOL_ARGS, run_max_pool1d, TI_COUNT_RULE, NULL},
	{"max_pool2d" MAX_POOL_ARGS, run_max_pool2d, TI_COUNT_RULE, NULL},
	{"max_pool3d" MAX_POOL_ARGS, run_max_pool3d, TI_COUNT_RULE, NULL},
	{"avg_pool1d(Tensor input, int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, "
	 "bool count_include_pad=True)", run_avg_pool1d, TI_COUNT_RULE, NULL},
	{"avg_pool2d" AVG_POOL_ARGS, run_avg_pool2d, TI_COUNT_RULE, NULL},
	{"avg_pool3d" AVG_POOL_ARGS, run_avg_pool3d, TI_COUNT_RULE, NULL},
	{"adaptive_avg_pool1d(Tensor input, int[] output_size)", run_adaptive_avg_pool1d, TI_COUNT_RULE, NULL},
	{"adaptive_avg_pool2d(Tensor input, int?[] output_size)", run_adaptive_avg_pool2d, TI_COUNT_RULE, NULL},
	{"adaptive_avg_pool3d(Tensor input, int?[] output_size)", run_adaptive_avg_pool3d, TI_COUNT_RULE, NULL},
	{"adaptive_max_pool1d(Tensor input, int[] output_size, bool return_indices=False)", run_adaptive_max_pool1d,
	 TI_COUNT_RULE, NULL},
	{"adaptive_max_pool2d(Tensor input, int?[] output_size, bool return_indices=False)", run_adaptive_max_pool2d,
	 TI_COUNT_RULE, NULL},
	{"adaptive_max_pool3d(Tensor input, int?[] output_size, bool return_indices=False)", run_adaptive_max_pool3d,
	 TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
