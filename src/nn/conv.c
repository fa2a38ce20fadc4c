/*
 * conv.c - Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch/nn/modules/conv.py).
 *
 * _ConvNd.__init__'s checks and messages; weight [out, in / groups, *kernel]
 * ([in, out / groups, *kernel] when transposed), bias [out]. Forward runs the
 * functional convolutions (src/ops/conv.c). A padding_mode other than
 * 'zeros' pads first (F.pad with _reversed_padding_repeated_twice, the
 * 'same' amounts when padding='same') and convolves with padding 0, as
 * _conv_forward does. ConvTranspose's forward(input, output_size) turns a
 * requested output size into output_padding (_output_padding).
 *
 * Python prints the sets of valid strings in hash order, which changes from
 * run to run; the messages list them in conv.py's source order.
 */
#include <stdio.h>
#include <string.h>

#include "nn/tables.h"

/* Each type: its spatial rank, whether it is transposed, and the functional op it runs. */
typedef struct conv_type {
	const char *name, *op;
	int spatial;
	bool transposed;
} conv_type;

static const conv_type conv_types[] = {
	{"Conv1d", "conv1d", 1, false},
	{"Conv2d", "conv2d", 2, false},
	{"Conv3d", "conv3d", 3, false},
	{"ConvTranspose1d", "conv_transpose1d", 1, true},
	{"ConvTranspose2d", "conv_transpose2d", 2, true},
	{"ConvTranspose3d", "conv_transpose3d", 3, true},
};

static const conv_type *type_of(const ti_module *m)
{
	for (size_t i = 0; i < sizeof(conv_types) / sizeof(conv_types[0]); i++)
		if (!strcmp(conv_types[i].name, m->type))
			return &conv_types[i];
	return &conv_types[0];
}

static ti_arg tensor_or_none(const ti_meta_tensor *t) { return t ? ti_arg_tensor(t) : ti_arg_none(); }

/*
 * A constructor argument as ints: _single/_pair/_triple repeat a single int
 * to the spatial rank and keep a tuple as it is. Returns the count.
 */
static int module_ints(const ti_module *m, const char *name, int spatial, int64_t *out)
{
	int n;
	const ti_arg *items = ti_module_list(m, name, &n);
	int count = n == 1 ? spatial : n < TI_META_MAX_DIMS - 2 ? n : TI_META_MAX_DIMS - 2;
	for (int i = 0; i < count; i++)
		out[i] = items[n == 1 ? 0 : i].as.dim.value;
	return count;
}

/* _ConvNd.__init__'s checks, in its order. */
static ti_status check_init(const ti_module *m, const conv_type *t, ti_error *err)
{
	int64_t groups = ti_module_dim(m, "groups").value;
	if (groups <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "groups must be a positive integer");
	if (ti_module_dim(m, "in_channels").value % groups)
		return TI_FAIL(err, TI_E_SHAPE, "in_channels must be divisible by groups");
	if (ti_module_dim(m, "out_channels").value % groups)
		return TI_FAIL(err, TI_E_SHAPE, "out_channels must be divisible by groups");
	const char *padding = ti_module_str(m, "padding");
	int64_t stride[TI_META_MAX_DIMS];
	if (padding && strcmp(padding, "same") && strcmp(padding, "valid"))
		return TI_FAIL(err, TI_E_SHAPE, "Invalid padding string '%s', should be one of {'valid', 'same'}", padding);
	int strides = module_ints(m, "stride", t->spatial, stride);
	for (int i = 0; padding && !strcmp(padding, "same") && i < strides; i++)
		if (stride[i] != 1)
			return TI_FAIL(err, TI_E_SHAPE, "padding='same' is not supported for strided convolutions");
	const char *mode = ti_module_str(m, "padding_mode");
	static const char *const modes[] = {"zeros", "reflect", "replicate", "circular"};
	bool known = false;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		known |= !strcmp(mode, modes[i]);
	if (!known)
		return TI_FAIL(err, TI_E_SHAPE,
		               "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got padding_mode='%s'",
		               mode);
	if (t->transposed && strcmp(mode, "zeros"))
		return TI_FAIL(err, TI_E_SHAPE, "Only \"zeros\" padding mode is supported for %s", m->type);
	return TI_OK;
}

static ti_status init_conv(ti_module *m, ti_error *err)
{
	const conv_type *t = type_of(m);
	ti_status st = check_init(m, t, err);
	if (st)
		return st;
	int64_t in = ti_module_dim(m, "in_channels").value, out = ti_module_dim(m, "out_channels").value;
	int64_t groups = ti_module_dim(m, "groups").value, shape[TI_META_MAX_DIMS];
	shape[0] = t->transposed ? in : out;
	shape[1] = (t->transposed ? out : in) / groups;
	int kernel = module_ints(m, "kernel_size", t->spatial, shape + 2); /* a wrong length fails in forward */
	ti_dtype dtype = ti_module_dtype(m);
	if ((st = ti_module_add_param(m, "weight", dtype, 2 + kernel, shape, err)))
		return st;
	return ti_module_bool(m, "bias") ? ti_module_add_param(m, "bias", dtype, 1, &out, err) : TI_OK;
}

/*
 * _reversed_padding_repeated_twice: per spatial dim, last first, (left,
 * right); 'same' splits d(k - 1) with the odd one on the right.
 */
static ti_arg reversed_padding(ti_op_call *call, const ti_module *m, int spatial)
{
	int64_t kernel[TI_META_MAX_DIMS], dilation[TI_META_MAX_DIMS], padding[TI_META_MAX_DIMS] = {0};
	module_ints(m, "kernel_size", spatial, kernel);
	module_ints(m, "dilation", spatial, dilation);
	const char *mode = ti_module_str(m, "padding");
	ti_arg *amounts = ti_arena_calloc(call->ctx->arena, (size_t)(2 * spatial), sizeof(*amounts));
	if (!amounts)
		return ti_arg_none();
	if (!mode)
		module_ints(m, "padding", spatial, padding);
	for (int i = 0; i < spatial; i++) {
		int64_t total = mode && !strcmp(mode, "same") ? dilation[i] * (kernel[i] - 1) : 0;
		int64_t left = mode ? total / 2 : padding[i], right = mode ? total - total / 2 : padding[i];
		amounts[2 * (spatial - 1 - i)] = ti_arg_int(left);
		amounts[2 * (spatial - 1 - i) + 1] = ti_arg_int(right);
	}
	return ti_arg_list(amounts, 2 * spatial);
}

static ti_status conv_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	const conv_type *t = type_of(m);
	ti_arg input = ti_arg_tensor(ti_call_tensor(call, "input"));
	const char *mode = ti_module_str(m, "padding_mode");
	ti_arg padding = *ti_module_arg(m, "padding");
	if (strcmp(mode, "zeros")) {
		ti_arg pad_args[3] = {input, reversed_padding(call, m, t->spatial), ti_arg_str(mode)};
		if (pad_args[1].kind != TI_ARG_LIST)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for %s", m->path);
		ti_op_call padded;
		ti_status st = ti_call_op(call, "pad", pad_args, 3, &padded, err);
		if (st)
			return st;
		input = padded.outputs[0];
		padding = ti_arg_int(0);
	}
	ti_arg args[7] = {
		input, ti_arg_tensor(ti_module_tensor_get(m, "weight")), tensor_or_none(ti_module_tensor_get(m, "bias")),
		*ti_module_arg(m, "stride"), padding, *ti_module_arg(m, "dilation"), ti_arg_dim(ti_module_dim(m, "groups")),
	};
	return ti_call_forward(call, t->op, args, 7, err);
}

/* "[17, 17]": a list of sizes as Python prints it. */
static const char *sizes_text(ti_shape_ctx *ctx, const ti_dim *dims, int n) { return ti_shape_str(ctx, n, dims); }

/*
 * _ConvTransposeNd._output_padding: a requested output size (the spatial
 * sizes, or with the batch and channel dims too) must lie in
 * [min, min + stride - 1]; the difference from min is the output_padding.
 */
static ti_status output_padding_for(ti_op_call *call, const ti_module *m, const conv_type *t, ti_arg *out,
                                    ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_symctx *s = ctx->sym;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	int n;
	const ti_arg *sizes = ti_call_list(call, "output_size", &n);
	int spatial = t->spatial, leading = input->ndim == spatial + 2 ? 2 : 1;
	if (n == leading + spatial)
		sizes += leading, n = spatial;
	if (n != spatial)
		return TI_FAIL(err, TI_E_SHAPE, "ConvTranspose%dD: for %dD input, output_size must have %d or %d elements (got %d)",
		               spatial, input->ndim, spatial, leading + spatial, n);
	int64_t kernel[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS], padding[TI_META_MAX_DIMS];
	int64_t dilation[TI_META_MAX_DIMS];
	module_ints(m, "kernel_size", spatial, kernel);
	module_ints(m, "stride", spatial, stride);
	module_ints(m, "padding", spatial, padding);
	module_ints(m, "dilation", spatial, dilation);
	ti_dim low[3], high[3], want[3];
	bool fits = true;
	for (int d = 0; d < spatial; d++) {
		int at;
		ti_status st = ti_wrap_dim(d + leading, input->ndim, &at, err); /* input.size(d + leading) */
		if (st)
			return st;
		ti_dim in = input->shape[at];
		low[d] = ti_dim_add(s, ti_dim_mul(s, ti_dim_sub(s, in, ti_dim_int(1)), ti_dim_int(stride[d])),
		                    ti_dim_int(dilation[d] * (kernel[d] - 1) + 1 - 2 * padding[d]));
		high[d] = ti_dim_add(s, low[d], ti_dim_int(stride[d] - 1));
		want[d] = sizes[d].as.dim;
	}
	for (int d = 0; d < spatial && fits; d++)
		fits = ti_dim_assume(s, want[d], TI_CMP_GE, low[d]) && ti_dim_assume(s, want[d], TI_CMP_LE, high[d]);
	if (!fits) {
		int rest = input->ndim > 2 ? input->ndim - 2 : 0;
		return TI_FAIL(err, TI_E_SHAPE,
		               "requested an output size of %s, but valid sizes range from %s to %s (for an input of torch.Size(%s))",
		               sizes_text(ctx, want, spatial), sizes_text(ctx, low, spatial), sizes_text(ctx, high, spatial),
		               sizes_text(ctx, input->shape + input->ndim - rest, rest));
	}
	ti_arg *pads = ti_arena_calloc(ctx->arena, (size_t)spatial, sizeof(*pads));
	if (!pads)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %s", m->path);
	for (int d = 0; d < spatial; d++)
		pads[d] = ti_arg_dim(ti_dim_sub(s, want[d], low[d]));
	*out = ti_arg_list(pads, spatial);
	return TI_OK;
}

static ti_status conv_transpose_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	const conv_type *t = type_of(m);
	ti_arg output_padding = *ti_module_arg(m, "output_padding");
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	if (!ti_call_is_none(call, "output_size")) {
		ti_status st = output_padding_for(call, m, t, &output_padding, err);
		if (st)
			return st;
	}
	ti_arg args[8] = {
		ti_arg_tensor(input), ti_arg_tensor(ti_module_tensor_get(m, "weight")),
		tensor_or_none(ti_module_tensor_get(m, "bias")), *ti_module_arg(m, "stride"), *ti_module_arg(m, "padding"),
		output_padding, ti_arg_dim(ti_module_dim(m, "groups")), *ti_module_arg(m, "dilation"),
	};
	return ti_call_forward(call, t->op, args, 8, err);
}

#define CONV_ARGS                                                                                        \
	"(int in_channels, int out_channels, int[] kernel_size, int[] stride=1, int[]|str padding=0, "     \
	"int[] dilation=1, int groups=1, bool bias=True, str padding_mode='zeros', str? device=None, "      \
	"ScalarType? dtype=None)"
#define CONV_TRANSPOSE_ARGS                                                                              \
	"(int in_channels, int out_channels, int[] kernel_size, int[] stride=1, int[] padding=0, "         \
	"int[] output_padding=0, int groups=1, bool bias=True, int[] dilation=1, str padding_mode='zeros', " \
	"str? device=None, ScalarType? dtype=None)"
#define CONV_TRANSPOSE_FORWARD "forward(Tensor input, int[]? output_size=None)"

ti_module_rule ti_nn_conv[] = {
	{"Conv1d" CONV_ARGS, "forward(Tensor input)", init_conv, conv_forward, TI_COUNT_RULE, NULL, NULL},
	{"Conv2d" CONV_ARGS, "forward(Tensor input)", init_conv, conv_forward, TI_COUNT_RULE, NULL, NULL},
	{"Conv3d" CONV_ARGS, "forward(Tensor input)", init_conv, conv_forward, TI_COUNT_RULE, NULL, NULL},
	{"ConvTranspose1d" CONV_TRANSPOSE_ARGS, CONV_TRANSPOSE_FORWARD, init_conv, conv_transpose_forward,
	 TI_COUNT_RULE, NULL, NULL},
	{"ConvTranspose2d" CONV_TRANSPOSE_ARGS, CONV_TRANSPOSE_FORWARD, init_conv, conv_transpose_forward,
	 TI_COUNT_RULE, NULL, NULL},
	{"ConvTranspose3d" CONV_TRANSPOSE_ARGS, CONV_TRANSPOSE_FORWARD, init_conv, conv_transpose_forward,
	 TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
