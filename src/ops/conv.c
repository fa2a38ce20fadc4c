/*
 * conv.c - convolutions: conv1d/2d/3d and conv_transpose1d/2d/3d.
 *
 * The checks run in PyTorch 2.x's order (aten/src/ATen/native/Convolution.cpp):
 * batchify (an unbatched input gains a batch of one), the padding string
 * ('same' or 'valid', _convolution_mode and convolution_same), _convolution's
 * parameter expansion (expand_param_if_needed), check_shape_forward, the
 * backend choice (empty inputs), the dtype check of
 * check_input_same_type_as_parameters, and last the shape checks of the CPU
 * kernels (slow_conv2d, slow_conv_dilated, slow_conv_transpose2d/3d), which
 * see a 1-d convolution as a 2-d one of height 1.
 *
 * Output sizes (ConvUtils.h conv_output_size, conv_input_size):
 *   convolution  (L + 2p - d(k - 1) - 1) // s + 1
 *   transposed   (L - 1)s - 2p + d(k - 1) + output_padding + 1
 * padding='same' pads d(k - 1) in all, the odd one on the right, so the
 * output keeps the input's size; it needs stride 1.
 *
 * Counting: a convolution is out_numel * (in_channels / groups) * prod(kernel)
 * MACs, a transposed one in_numel * (out_channels / groups) * prod(kernel)
 * (each input element scatters through the kernel), and a bias adds one flop
 * per output element.
 *
 * A batched 2-d input in channels-last layout gives a channels-last output,
 * as PyTorch's meta kernel picks (_meta_registrations.py meta_conv); other
 * outputs are contiguous. An output requires grad when an input does.
 */
#include <string.h>

#include "ops/tables.h"

#define CONV_MAX_SPATIAL 3

typedef struct conv_spec {
	const char *name;  /* "conv2d": for batchify's message */
	int spatial;       /* 1, 2 or 3 */
	bool transposed;
} conv_spec;

/* The parameters after expansion: one entry per spatial dimension of the weight. */
typedef struct conv_params {
	int dims;
	ti_dim stride[TI_META_MAX_DIMS], padding[TI_META_MAX_DIMS], dilation[TI_META_MAX_DIMS];
	ti_dim output_padding[TI_META_MAX_DIMS];
	ti_dim groups;
	bool transposed;
} conv_params;

/* The tensors as _convolution sees them: input batched (and padded for an odd 'same'). */
typedef struct conv_operands {
	const ti_meta_tensor *input, *weight, *bias;
	int ndim;                      /* input rank, batched */
	ti_dim shape[TI_META_MAX_DIMS]; /* input shape, batched */
} conv_operands;

static const char *dim_text(ti_shape_ctx *ctx, ti_dim d) { return ti_dim_str(ctx->sym, d); }
static bool is_size(ti_dim d, int64_t v) { return ti_dim_is_int(d) && d.value == v; }
static bool holds(ti_shape_ctx *ctx, ti_dim a, ti_cmp cmp, ti_dim b) { return ti_dim_assume(ctx->sym, a, cmp, b); }
/* Provably so (a parameter is an integer in practice; a symbolic one is taken as valid). */
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

/* "(2 x 2)": the per-channel sizes in the kernels' messages. */
static const char *sizes_text(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	char buf[512];
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && used < sizeof(buf) - 1; i++) {
		const char *sep = i ? " x " : "";
		size_t len = strlen(sep) + strlen(dim_text(ctx, dims[i]));
		if (used + len >= sizeof(buf))
			break;
		strcat(strcat(buf + used, sep), dim_text(ctx, dims[i]));
		used += len;
	}
	return ti_arena_printf(ctx->arena, "(%s)", buf);
}

/* "stride_height: 1 stride_width: 1" (sep " ") or "dilation_depth: 1, ..." (sep ", "), for 2 or 3 dims. */
static const char *named_sizes(ti_shape_ctx *ctx, const char *what, const ti_dim *dims, int n, const char *sep)
{
	static const char *const names[] = {"depth", "height", "width"};
	char *text = ti_arena_strdup(ctx->arena, "");
	for (int i = 0; i < n && text; i++)
		text = ti_arena_printf(ctx->arena, "%s%s%s_%s: %s", text, i ? sep : "", what, names[3 - n + i],
		                       dim_text(ctx, dims[i]));
	return text ? text : "";
}

static const char *list_text(ti_shape_ctx *ctx, const ti_arg *items, int n)
{
	ti_dim dims[TI_META_MAX_DIMS];
	for (int i = 0; i < n && i < TI_META_MAX_DIMS; i++)
		dims[i] = items[i].as.dim;
	return ti_shape_str(ctx, n < TI_META_MAX_DIMS ? n : TI_META_MAX_DIMS, dims);
}

/* Python's binding repeats a single int to the convolution's rank (int[2]); lists pass as given. */
static const ti_arg *param_list(ti_op_call *call, const char *name, int rank, int *count)
{
	const ti_arg *items = ti_call_list(call, name, count);
	if (*count != 1 || rank < 2)
		return items;
	ti_arg *repeated = ti_arena_calloc(call->ctx->arena, (size_t)rank, sizeof(*repeated));
	if (!repeated)
		return items;
	for (int i = 0; i < rank; i++)
		repeated[i] = items[0];
	*count = rank;
	return repeated;
}

/* expand_param_if_needed: one value for every dimension, or a list of exactly dims. */
static ti_status expand_param(ti_shape_ctx *ctx, const char *name, const ti_arg *items, int n, int dims,
                              ti_dim *out, ti_error *err)
{
	if (n != 1 && n != dims)
		return TI_FAIL(err, TI_E_SHAPE,
		               "expected %s to be a single integer value or a list of %d values to match the convolution "
		               "dimensions, but got %s=%s", name, dims, name, list_text(ctx, items, n));
	for (int i = 0; i < dims; i++)
		out[i] = items[n == 1 ? 0 : i].as.dim;
	return TI_OK;
}

/* caffe2::TypeMeta names, which conv2d's bias check prints ("float", "double"). */
static const char *typemeta_name(ti_dtype dt)
{
	static const char *const names[TI_DT_COUNT] = {
		[TI_DT_FLOAT32] = "float", [TI_DT_FLOAT64] = "double", [TI_DT_FLOAT16] = "c10::Half",
		[TI_DT_BFLOAT16] = "c10::BFloat16", [TI_DT_INT64] = "long int", [TI_DT_INT32] = "int",
		[TI_DT_INT16] = "short int", [TI_DT_INT8] = "signed char", [TI_DT_UINT8] = "unsigned char",
		[TI_DT_BOOL] = "bool", [TI_DT_COMPLEX32] = "c10::complex<c10::Half>",
		[TI_DT_COMPLEX64] = "c10::complex<float>", [TI_DT_COMPLEX128] = "c10::complex<double>",
	};
	return (unsigned)dt < TI_DT_COUNT && names[dt] ? names[dt] : ti_dtype_torch_name(dt);
}

/* Python's "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same". */
static ti_status check_same_type(const ti_meta_tensor *input, const ti_meta_tensor *other, const char *what,
                                 ti_error *err)
{
	if (!other || other->dtype == input->dtype)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "Input type (torch.%sTensor) and %s type (torch.%sTensor) should be the same",
	               ti_dtype_torch_name(input->dtype), what, ti_dtype_torch_name(other->dtype));
}

/* ---- check_shape_forward ---- */

static ti_status check_groups(ti_shape_ctx *ctx, const ti_meta_tensor *w, ti_dim groups, ti_error *err)
{
	const char *shape = ti_meta_shape_str(ctx, w), *g = dim_text(ctx, groups);
	if (!holds(ctx, w->shape[0], TI_CMP_GE, groups))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Given groups=%s, expected weight to be at least %s at dimension 0, but got weight of size %s instead",
		               g, g, shape);
	if (!holds(ctx, ti_dim_mod(ctx->sym, w->shape[0], groups), TI_CMP_EQ, ti_dim_int(0)))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Given groups=%s, expected weight to be divisible by %s at dimension 0, but got weight of size [%s] instead",
		               g, g, shape);
	return TI_OK;
}

static ti_status check_bias(ti_shape_ctx *ctx, const conv_operands *o, ti_dim want, const char *given,
                            ti_error *err)
{
	const ti_meta_tensor *b = o->bias;
	if (!b || (b->ndim == 1 && holds(ctx, b->shape[0], TI_CMP_EQ, want)))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE,
	               "Given %sweight of size %s, expected bias to be 1-dimensional with %s elements, but got bias of size %s instead",
	               given, ti_meta_shape_str(ctx, o->weight), dim_text(ctx, want), ti_meta_shape_str(ctx, b));
}

/* The padded input must hold the dilated kernel. */
static ti_status check_kernel_fits(ti_shape_ctx *ctx, const conv_operands *o, const conv_params *p, ti_error *err)
{
	ti_dim padded[TI_META_MAX_DIMS], kernel[TI_META_MAX_DIMS];
	bool fits = true;
	for (int i = 0; i < p->dims; i++) {
		padded[i] = ti_dim_add(ctx->sym, o->shape[i + 2], ti_dim_mul(ctx->sym, ti_dim_int(2), p->padding[i]));
		kernel[i] = ti_dim_add(ctx->sym, ti_dim_mul(ctx->sym, p->dilation[i],
		                                           ti_dim_sub(ctx->sym, o->weight->shape[i + 2], ti_dim_int(1))),
		                       ti_dim_int(1));
	}
	for (int i = 0; i < p->dims && fits; i++)
		fits = holds(ctx, padded[i], TI_CMP_GE, kernel[i]);
	if (fits)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE,
	               "Calculated padded input size per channel: %s. Kernel size: %s. Kernel size can't be greater than actual input size",
	               sizes_text(ctx, padded, p->dims), sizes_text(ctx, kernel, p->dims));
}

static ti_status check_shape_forward(ti_shape_ctx *ctx, const conv_operands *o, const conv_params *p, ti_error *err)
{
	const ti_meta_tensor *w = o->weight;
	for (int i = 0; i < p->dims; i++)
		if (surely(ctx, p->padding[i], TI_CMP_LT, 0))
			return TI_FAIL(err, TI_E_SHAPE, "negative padding is not supported");
	for (int i = 0; i < p->dims; i++)
		if (surely(ctx, p->output_padding[i], TI_CMP_LT, 0))
			return TI_FAIL(err, TI_E_SHAPE, "negative output_padding is not supported");
	for (int i = 0; i < p->dims; i++)
		if (surely(ctx, p->stride[i], TI_CMP_LE, 0))
			return TI_FAIL(err, TI_E_SHAPE, "non-positive stride is not supported");
	if (w->ndim != o->ndim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional input of size %s instead",
		               w->ndim, w->ndim, ti_meta_shape_str(ctx, w), o->ndim, ti_shape_str(ctx, o->ndim, o->shape));
	ti_status st = check_groups(ctx, w, p->groups, err);
	if (st)
		return st;
	const char *input = ti_shape_str(ctx, o->ndim, o->shape);
	if (p->transposed) {
		if (!holds(ctx, o->shape[1], TI_CMP_EQ, w->shape[0]))
			return TI_FAIL(err, TI_E_SHAPE,
			               "Given transposed=1, weight of size %s, expected input%s to have %s channels, but got %s channels instead",
			               ti_meta_shape_str(ctx, w), input, dim_text(ctx, w->shape[0]), dim_text(ctx, o->shape[1]));
		return check_bias(ctx, o, ti_dim_mul(ctx->sym, w->shape[1], p->groups), "transposed=1, ", err);
	}
	ti_dim channels = ti_dim_mul(ctx->sym, w->shape[1], p->groups);
	if (!holds(ctx, o->shape[1], TI_CMP_EQ, channels))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Given groups=%s, weight of size %s, expected input%s to have %s channels, but got %s channels instead",
		               dim_text(ctx, p->groups), ti_meta_shape_str(ctx, w), input, dim_text(ctx, channels),
		               dim_text(ctx, o->shape[1]));
	if ((st = check_bias(ctx, o, w->shape[0], "", err)))
		return st;
	return check_kernel_fits(ctx, o, p, err);
}

/* ---- the CPU kernels' own checks, on the 2-d view of a 1-d convolution ---- */

typedef struct kernel_view {
	int dims; /* 2 or 3 */
	ti_dim input[CONV_MAX_SPATIAL], kernel[CONV_MAX_SPATIAL], stride[CONV_MAX_SPATIAL];
	ti_dim padding[CONV_MAX_SPATIAL], dilation[CONV_MAX_SPATIAL], output_padding[CONV_MAX_SPATIAL];
	ti_dim output[CONV_MAX_SPATIAL];
} kernel_view;

/* view1d_as_2d: a height of 1 with stride 1, padding 0, dilation 1. */
static void view_as_kernel(const conv_operands *o, const conv_params *p, const ti_dim *output, kernel_view *v)
{
	int lead = p->dims == 1 ? 1 : 0;
	v->dims = p->dims + lead;
	v->input[0] = v->kernel[0] = v->stride[0] = v->dilation[0] = v->output[0] = ti_dim_int(1);
	v->padding[0] = v->output_padding[0] = ti_dim_int(0);
	for (int i = 0; i < p->dims; i++) {
		v->input[i + lead] = o->shape[i + 2];
		v->kernel[i + lead] = o->weight->shape[i + 2];
		v->stride[i + lead] = p->stride[i];
		v->padding[i + lead] = p->padding[i];
		v->dilation[i + lead] = p->dilation[i];
		v->output_padding[i + lead] = p->output_padding[i];
		v->output[i + lead] = output[i];
	}
}

static bool all_positive(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	for (int i = 0; i < n; i++)
		if (surely(ctx, dims[i], TI_CMP_LE, 0))
			return false;
	return true;
}

/* slow_conv_transpose2d/3d_shape_check. */
static ti_status check_transposed_kernel(ti_shape_ctx *ctx, const kernel_view *v, ti_error *err)
{
	int n = v->dims;
	if (!all_positive(ctx, v->kernel, n))
		return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got %s",
		               named_sizes(ctx, "kernel", v->kernel, n, " "));
	if (!all_positive(ctx, v->dilation, n))
		return TI_FAIL(err, TI_E_SHAPE, "dilation should be greater than zero, but got %s",
		               named_sizes(ctx, "dilation", v->dilation, n, ", "));
	for (int i = 0; i < n; i++) {
		if (holds(ctx, v->output_padding[i], TI_CMP_LT, v->stride[i]) ||
		    holds(ctx, v->output_padding[i], TI_CMP_LT, v->dilation[i]))
			continue;
		return TI_FAIL(err, TI_E_SHAPE, "output padding must be smaller than either stride or dilation, but got %s %s %s",
		               named_sizes(ctx, "output_padding", v->output_padding, n, " "),
		               named_sizes(ctx, "stride", v->stride, n, " "), named_sizes(ctx, "dilation", v->dilation, n, " "));
	}
	for (int i = 0; i < n; i++)
		if (!holds(ctx, v->output[i], TI_CMP_GE, ti_dim_int(1)))
			return TI_FAIL(err, TI_E_SHAPE,
			               "Given input size per channel: %s. Calculated output size per channel: %s. Output size is too small",
			               sizes_text(ctx, v->input, n), sizes_text(ctx, v->output, n));
	return TI_OK;
}

/* slow_conv2d / slow_conv3d, or slow_conv_dilated2d/3d when a dilation is not 1. */
static ti_status check_forward_kernel(ti_shape_ctx *ctx, const kernel_view *v, ti_error *err)
{
	int n = v->dims;
	bool dilated = false;
	for (int i = 0; i < n; i++)
		dilated |= !is_size(v->dilation[i], 1);
	if (dilated && !all_positive(ctx, v->kernel, n))
		return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got %s",
		               ti_shape_str(ctx, n, v->kernel));
	if (dilated && !all_positive(ctx, v->dilation, n))
		return TI_FAIL(err, TI_E_SHAPE, "dilation should be greater than zero, but got %s",
		               ti_shape_str(ctx, n, v->dilation));
	if (dilated || all_positive(ctx, v->kernel, n))
		return TI_OK;
	if (n == 3)
		return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got: %s x %s x %s (TxHxW)",
		               dim_text(ctx, v->kernel[0]), dim_text(ctx, v->kernel[1]), dim_text(ctx, v->kernel[2]));
	return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got %s",
	               named_sizes(ctx, "kernel", v->kernel, n, " "));
}

/* ---- the convolution ---- */

/* Output spatial sizes (conv_output_size / conv_input_size). */
static void output_sizes(ti_shape_ctx *ctx, const conv_operands *o, const conv_params *p, ti_dim *out)
{
	ti_symctx *s = ctx->sym;
	for (int i = 0; i < p->dims; i++) {
		ti_dim reach = ti_dim_mul(s, p->dilation[i], ti_dim_sub(s, o->weight->shape[i + 2], ti_dim_int(1)));
		ti_dim L = o->shape[i + 2];
		if (p->transposed)
			out[i] = ti_dim_add(s, ti_dim_add(s, ti_dim_sub(s, ti_dim_mul(s, ti_dim_sub(s, L, ti_dim_int(1)), p->stride[i]),
			                                              ti_dim_mul(s, ti_dim_int(2), p->padding[i])),
			                                  reach),
			                    ti_dim_add(s, p->output_padding[i], ti_dim_int(1)));
		else
			out[i] = ti_dim_add(s, ti_dim_floordiv(s, ti_dim_sub(s, ti_dim_add(s, L, ti_dim_mul(s, ti_dim_int(2), p->padding[i])),
			                                                     ti_dim_add(s, reach, ti_dim_int(1))),
			                                       p->stride[i]),
			                    ti_dim_int(1));
	}
}

/* c10's channels-last test for a 4-d tensor: NHWC strides, size-1 dimensions aside, and not NCHW. */
static bool is_channels_last(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	if (t->ndim != 4 || ti_meta_is_contiguous(ctx, t))
		return false;
	static const int order[4] = {1, 3, 2, 0}; /* innermost first */
	ti_dim expected = ti_dim_int(1);
	for (int i = 0; i < 4; i++) {
		int d = order[i];
		if (is_size(t->shape[d], 1))
			continue;
		if (!ti_dim_same(t->stride[d], expected))
			return false;
		expected = ti_dim_mul(ctx->sym, expected, t->shape[d]);
	}
	return true;
}

/* The result: [N, C_out, *spatial], channels-last when the input is; unbatched drops N. */
static ti_status add_output(ti_op_call *call, const conv_operands *o, const ti_dim *shape, bool batched,
                            ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n = o->ndim;
	ti_meta_tensor *t = batched ? ti_meta_new(ctx, o->input->dtype, n, shape)
	                            : ti_meta_new(ctx, o->input->dtype, n - 1, shape + 1);
	if (t && batched && is_channels_last(ctx, o->input)) {
		ti_dim stride[4];
		stride[1] = ti_dim_int(1);
		stride[3] = shape[1];
		stride[2] = ti_dim_mul(ctx->sym, shape[3], shape[1]);
		stride[0] = ti_dim_mul(ctx->sym, shape[2], stride[2]);
		t = ti_meta_view(ctx, t, n, shape, stride);
	}
	if (t) /* only floating and complex tensors can require grad */
		t->requires_grad = (o->input->requires_grad || o->weight->requires_grad || (o->bias && o->bias->requires_grad)) &&
		                   (ti_dtype_is_floating(t->dtype) || ti_dtype_is_complex(t->dtype));
	return ti_call_output_tensor(call, t, err);
}

/* at::_convolution after the parameters are expanded: checks, output, counts. */
static ti_status convolution(ti_op_call *call, const conv_operands *o, const conv_params *p, bool batched,
                             ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_status st = check_shape_forward(ctx, o, p, err);
	if (st)
		return st;
	ti_dim shape[TI_META_MAX_DIMS], spatial[TI_META_MAX_DIMS];
	output_sizes(ctx, o, p, spatial);
	bool empty = is_size(o->shape[0], 0) || is_size(o->shape[1], 0);
	if (!empty) {
		for (int i = 2; i < o->ndim; i++)
			if (is_size(o->shape[i], 0)) {
				kernel_view v;
				view_as_kernel(o, p, spatial, &v);
				int lead = v.dims - p->dims;
				ti_dim viewed[TI_META_MAX_DIMS] = {o->shape[0], o->shape[1], ti_dim_int(1)};
				memcpy(viewed + 2 + lead, o->shape + 2, (size_t)p->dims * sizeof(ti_dim));
				return TI_FAIL(err, TI_E_SHAPE, "Only zero batch or zero channel inputs are supported, but got input shape: %s",
				               ti_shape_str(ctx, o->ndim + lead, viewed));
			}
		if ((st = check_same_type(o->input, o->weight, "weight", err)) ||
		    (st = check_same_type(o->input, o->bias, "bias", err)))
			return st;
		kernel_view v;
		view_as_kernel(o, p, spatial, &v);
		if ((st = p->transposed ? check_transposed_kernel(ctx, &v, err) : check_forward_kernel(ctx, &v, err)))
			return st;
	}
	shape[0] = o->shape[0];
	shape[1] = p->transposed ? ti_dim_mul(ctx->sym, o->weight->shape[1], p->groups) : o->weight->shape[0];
	if (!p->transposed && is_size(o->shape[1], 0))
		shape[1] = ti_dim_int(0); /* calc_output_size: an input without channels gives none */
	memcpy(shape + 2, spatial, (size_t)p->dims * sizeof(ti_dim));
	for (int i = 0; i < o->ndim; i++)
		if (surely(ctx, shape[i], TI_CMP_LT, 0))
			return TI_FAIL(err, TI_E_SHAPE, "Trying to create tensor with negative dimension %s: %s",
			               dim_text(ctx, shape[i]), ti_shape_str(ctx, o->ndim, shape));
	/* per output (input, when transposed) element: one MAC per weight of one group's channels */
	ti_dim per = product(ctx, o->weight->shape + 1, o->weight->ndim - 1);
	ti_dim elements = p->transposed ? product(ctx, o->shape, o->ndim) : product(ctx, shape, o->ndim);
	ti_call_macs(call, ti_dim_mul(ctx->sym, elements, per));
	if (o->bias)
		ti_call_flops(call, product(ctx, shape, o->ndim));
	return add_output(call, o, shape, batched, err);
}

/* batchify: (C, *spatial) or (N, C, *spatial). */
static ti_status batchify(ti_shape_ctx *ctx, const conv_spec *spec, const ti_meta_tensor *input, conv_operands *o,
                          bool *batched, ti_error *err)
{
	int unbatched = spec->spatial + 1;
	*batched = input->ndim == unbatched + 1;
	if (input->ndim != unbatched && !*batched)
		return TI_FAIL(err, TI_E_SHAPE, "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
		               unbatched, unbatched + 1, spec->name, ti_meta_shape_str(ctx, input));
	o->input = input;
	o->ndim = unbatched + 1;
	o->shape[0] = ti_dim_int(1);
	memcpy(o->shape + (*batched ? 0 : 1), input->shape, (size_t)input->ndim * sizeof(ti_dim));
	return TI_OK;
}

/* The expansion of _convolution: weight rank, groups, then each parameter list. */
static ti_status expand_params(ti_op_call *call, const conv_operands *o, const ti_arg *const lists[4],
                               const int counts[4], conv_params *p, ti_error *err)
{
	static const char *const names[4] = {"stride", "padding", "dilation", "output_padding"};
	ti_dim *targets[4] = {p->stride, p->padding, p->dilation, p->output_padding};
	p->dims = o->weight->ndim - 2;
	if (p->dims <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "weight should have at least three dimensions");
	if (surely(call->ctx, p->groups, TI_CMP_LE, 0))
		return TI_FAIL(err, TI_E_SHAPE, "non-positive groups is not supported");
	for (int i = 0; i < 4; i++) {
		ti_status st = expand_param(call->ctx, names[i], lists[i], counts[i], p->dims, targets[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

/*
 * convolution_same: stride 1 everywhere; total padding d(k - 1) per dimension,
 * the left half on both sides, and an odd remainder padded onto the input's
 * right (constant_pad_nd) so the output keeps the input's size.
 */
static ti_status same_padding(ti_op_call *call, conv_operands *o, const ti_arg *stride, int nstride,
                              const ti_arg *dilation, int ndilation, ti_arg *padding, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *w = o->weight;
	int k = w->ndim, dims = k - 2;
	if (k <= 2)
		return TI_FAIL(err, TI_E_SHAPE, "weight should have at least three dimensions");
	if (k != o->ndim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected %d-dimensional input for %d-dimensional weight%s, but got %d-dimensional input of size %s instead",
		               k, k, ti_meta_shape_str(ctx, w), o->ndim, ti_shape_str(ctx, o->ndim, o->shape));
	if (nstride != dims && nstride != 1)
		return TI_FAIL(err, TI_E_SHAPE, "stride cannot broadcast to %d dimensions", dims);
	if (ndilation != dims && ndilation != 1)
		return TI_FAIL(err, TI_E_SHAPE, "dilation cannot broadcast to %d dimensions", dims);
	for (int i = 0; i < nstride; i++)
		if (!is_size(stride[i].as.dim, 1))
			return TI_FAIL(err, TI_E_SHAPE, "padding='same' is not supported for strided convolutions");
	ti_symctx *s = ctx->sym;
	for (int i = 0; i < dims; i++) {
		ti_dim d = dilation[ndilation == 1 ? 0 : i].as.dim;
		ti_dim total = ti_dim_mul(s, d, ti_dim_sub(s, w->shape[i + 2], ti_dim_int(1)));
		ti_dim left = ti_dim_floordiv(s, total, ti_dim_int(2));
		padding[i] = ti_arg_dim(left);
		o->shape[i + 2] = ti_dim_add(s, o->shape[i + 2], ti_dim_sub(s, total, ti_dim_mul(s, left, ti_dim_int(2))));
	}
	return TI_OK;
}

/* conv1d/2d/3d and conv_transpose1d/2d/3d: the functional entry points. */
static ti_status run_conv(ti_op_call *call, const conv_spec *spec, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	conv_operands o;
	conv_params p;
	memset(&o, 0, sizeof(o));
	memset(&p, 0, sizeof(p));
	o.weight = ti_call_tensor(call, "weight");
	o.bias = ti_call_tensor(call, "bias");
	p.groups = ti_call_dim(call, "groups");
	p.transposed = spec->transposed;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const char *mode = ti_call_str(call, "padding");
	/* conv2d(int[] padding) checks the bias dtype before anything else (Convolution.cpp conv2d) */
	if (spec->spatial == 2 && !spec->transposed && !mode && o.bias && o.bias->dtype != input->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "Input type (%s) and bias type (%s) should be the same",
		               typemeta_name(input->dtype), typemeta_name(o.bias->dtype));
	bool batched;
	ti_status st = batchify(ctx, spec, input, &o, &batched, err);
	if (st)
		return st;
	const ti_arg *lists[4];
	int counts[4] = {0, 0, 0, 0};
	lists[0] = param_list(call, "stride", spec->spatial, &counts[0]);
	lists[2] = param_list(call, "dilation", spec->spatial, &counts[2]);
	/* a convolution passes output_padding {0} per spatial dim ({0} alone for a padding string) */
	ti_arg zero = ti_arg_int(0), zeros[CONV_MAX_SPATIAL] = {zero, zero, zero}, padding[TI_META_MAX_DIMS];
	lists[3] = zeros, counts[3] = mode ? 1 : spec->spatial;
	if (spec->transposed)
		lists[3] = param_list(call, "output_padding", spec->spatial, &counts[3]);
	if (mode && !strcmp(mode, "same")) {
		if ((st = same_padding(call, &o, lists[0], counts[0], lists[2], counts[2], padding, err)))
			return st;
		lists[1] = padding, counts[1] = o.weight->ndim - 2;
	} else if (mode && !strcmp(mode, "valid")) {
		lists[1] = &zero, counts[1] = 1;
	} else if (mode) {
		return TI_FAIL(err, TI_E_SHAPE, "Invalid padding string: '%s'", mode);
	} else {
		lists[1] = param_list(call, "padding", spec->spatial, &counts[1]);
	}
	if ((st = expand_params(call, &o, lists, counts, &p, err)))
		return st;
	return convolution(call, &o, &p, batched, err);
}

#define CONV_RULE(fn, label, rank, transposed_)                                  \
	static ti_status fn(ti_op_call *call, ti_error *err)                         \
	{                                                                            \
		static const conv_spec spec = {label, rank, transposed_};            \
		return run_conv(call, &spec, err);                                   \
	}
CONV_RULE(run_conv1d, "conv1d", 1, false)
CONV_RULE(run_conv2d, "conv2d", 2, false)
CONV_RULE(run_conv3d, "conv3d", 3, false)
CONV_RULE(run_conv_transpose1d, "conv_transpose1d", 1, true)
CONV_RULE(run_conv_transpose2d, "conv_transpose2d", 2, true)
CONV_RULE(run_conv_transpose3d, "conv_transpose3d", 3, true)

#define CONV_ARGS "(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, int[]|str padding=0, " \
                  "int[] dilation=1, int groups=1)"
#define CONV_TRANSPOSE_ARGS "(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, int[] padding=0, " \
                            "int[] output_padding=0, int groups=1, int[] dilation=1)"

ti_op_rule ti_ops_conv[] = {
	{"conv1d" CONV_ARGS, run_conv1d, TI_COUNT_RULE, NULL},
	{"conv2d" CONV_ARGS, run_conv2d, TI_COUNT_RULE, NULL},
	{"conv3d" CONV_ARGS, run_conv3d, TI_COUNT_RULE, NULL},
	{"conv_transpose1d" CONV_TRANSPOSE_ARGS, run_conv_transpose1d, TI_COUNT_RULE, NULL},
	{"conv_transpose2d" CONV_TRANSPOSE_ARGS, run_conv_transpose2d, TI_COUNT_RULE, NULL},
	{"conv_transpose3d" CONV_TRANSPOSE_ARGS, run_conv_transpose3d, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
