/*
 * activation.c - torch.nn.functional activations: relu ... softplus, prelu,
 * softmax and log_softmax, glu; the functional dropouts, and torchvision's
 * stochastic_depth (torchvision/ops/stochastic_depth.py).
 *
 * Rules follow aten/src/ATen/native/Activation.cpp, SoftMax.cpp,
 * GatedLinearUnit.cpp, Dropout.cpp and torch/nn/functional.py.
 *
 * Counting (flops per element):
 *   pointwise activations (relu, gelu, silu, sigmoid, prelu ...)  1 per output element
 *   softmax, log_softmax, softmin                                3 per element (exp, sum, divide)
 *   glu                                                          2 per output element (sigmoid, multiply)
 *   dropout and its variants                                     none (free: identity in eval)
 *   stochastic_depth in training with p > 0                      1 per element (input * noise); else free
 */
#include <string.h>

#include "ops/elementwise.h"
#include "ops/tables.h"
#include "tinspect/value.h"

/* ---- pointwise activations ---- */

/* One output like the input in layout, of dtype, one flop per element. */
static ti_status pointwise(ti_op_call *call, ti_dtype dtype, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_meta_tensor *out;
	ti_status st = ti_elementwise_new(call->ctx, &input, 1, dtype, &out, err);
	return st ? st : ti_elementwise_output(call, out, 1, err);
}

static ti_dtype input_dtype(ti_op_call *call) { return ti_call_tensor(call, "input")->dtype; }

/* relu, elu, gelu, silu ...: the input's dtype, integers included (as the meta kernels allow). */
static ti_status same_dtype(ti_op_call *call, ti_error *err) { return pointwise(call, input_dtype(call), err); }

/* tanh, sigmoid, softsign: integers compute in the default float dtype. */
static ti_status float_dtype(ti_op_call *call, ti_error *err)
{
	return pointwise(call, ti_dtype_to_float(call->ctx, input_dtype(call)), err);
}

/* hardtanh and relu6 (hardtanh(input, 0, 6)) refuse bool: Activation.cpp. */
static ti_status hardtanh_rule(ti_op_call *call, ti_error *err)
{
	if (input_dtype(call) == TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "Bool inputs not supported for hardtanh");
	return same_dtype(call, err);
}

static ti_status gelu_rule(ti_op_call *call, ti_error *err)
{
	const char *approximate = ti_call_str(call, "approximate");
	if (strcmp(approximate, "none") && strcmp(approximate, "tanh"))
		return TI_FAIL(err, TI_E_SHAPE, "approximate argument must be either none or tanh.");
	return same_dtype(call, err);
}

static ti_status softshrink_rule(ti_op_call *call, ti_error *err)
{
	double lambd = ti_call_float(call, "lambd");
	if (lambd < 0)
		return TI_FAIL(err, TI_E_SHAPE, "lambda must be greater or equal to 0, but found to be %g.", lambd);
	return same_dtype(call, err);
}

/* logsigmoid computes -softplus(-x) and tanhshrink x - tanh(x): bool inputs meet the operators' refusals. */
static ti_status logsigmoid_rule(ti_op_call *call, ti_error *err)
{
	if (input_dtype(call) == TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "Negation, the `-` operator, on a bool tensor is not supported. "
		               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	return same_dtype(call, err);
}

static ti_status tanhshrink_rule(ti_op_call *call, ti_error *err)
{
	if (input_dtype(call) == TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "Subtraction, the `-` operator, with a bool tensor is not supported. "
		               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	return float_dtype(call, err);
}

/* Activation.cpp prelu (2.x): one weight, or one per channel (dim 1); the same dtype as the input. */
static ti_status prelu_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input"), *weight = ti_call_tensor(call, "weight");
	ti_shape_ctx *ctx = call->ctx;
	if (input->dtype != weight->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "prelu: Type promoting not supported. Got %s and %s",
		               ti_dtype_torch_name(input->dtype), ti_dtype_torch_name(weight->dtype));
	ti_dim count = ti_meta_numel(ctx, weight);
	if (!(ti_dim_is_int(count) && count.value == 1)) {
		if (input->ndim == 0)
			return TI_FAIL(err, TI_E_SHAPE, "Not allow zero-dim input tensor.");
		ti_dim channels = input->ndim > 1 ? input->shape[1] : ti_dim_int(1);
		if (!ti_dim_assume(ctx->sym, channels, TI_CMP_EQ, count)) {
			char a[64], b[64];
			return TI_FAIL(err, TI_E_SHAPE, "Mismatch of parameter numbers and input channel size. "
			               "Found parameter numbers = %s and channel size = %s.",
			               ti_dim_format(count, a, sizeof(a)), ti_dim_format(channels, b, sizeof(b)));
		}
	}
	if (weight->ndim > 1)
		return TI_FAIL(err, TI_E_SHAPE, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = %d",
		               weight->ndim);
	/* _prelu_kernel writes into empty_like(input) */
	ti_meta_tensor *out = ti_meta_like(ctx, input, input->dtype);
	if (!out)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	out->requires_grad = input->requires_grad || weight->requires_grad;
	return ti_elementwise_output(call, out, 1, err);
}

/* ---- softmax family ---- */

/* A dim argument: a number, even where sizes may be symbolic. */
static ti_status dim_arg(ti_op_call *call, int64_t *out, ti_error *err)
{
	ti_dim d = ti_call_dim(call, "dim");
	if (!ti_dim_is_int(d))
		return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument 'dim' must be a number, not a symbolic size",
		               call->rule->parsed->name);
	*out = d.value;
	return TI_OK;
}

static ti_status softmax_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	/* torch/nn/functional.py _get_softmax_dim: the implicit-dim rule kept for old code */
	int64_t dim = input->ndim == 0 || input->ndim == 1 || input->ndim == 3 ? 0 : 1;
	int wrapped;
	ti_status st = ti_call_is_none(call, "dim") ? TI_OK : dim_arg(call, &dim, err);
	if (st || (st = ti_wrap_dim(dim, input->ndim, &wrapped, err)))
		return st;
	/* the dtype argument casts the input first; the output is contiguous (SoftMax.cpp meta) */
	ti_dtype dtype = ti_call_is_none(call, "dtype") ? input->dtype : ti_call_dtype(call, "dtype");
	ti_meta_tensor *out = ti_meta_new(call->ctx, dtype, input->ndim, input->shape);
	if (!out)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	out->requires_grad = input->requires_grad;
	return ti_elementwise_output(call, out, 3, err);
}

/* GatedLinearUnit.cpp: the halves of dim, first * sigmoid(second). */
static ti_status glu_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_shape_ctx *ctx = call->ctx;
	if (input->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "glu does not support scalars because halving size must be even");
	int64_t given = 0;
	int dim;
	ti_status st = dim_arg(call, &given, err);
	if (st || (st = ti_wrap_dim(given, input->ndim, &dim, err)))
		return st;
	ti_dim size = input->shape[dim];
	if (!ti_dim_assume(ctx->sym, ti_dim_mod(ctx->sym, size, ti_dim_int(2)), TI_CMP_EQ, ti_dim_int(0))) {
		char buf[64];
		return TI_FAIL(err, TI_E_SHAPE, "Halving dimension must be even, but dimension %d is size %s", dim,
		               ti_dim_format(size, buf, sizeof(buf)));
	}
	/* the halves are narrow() views: the input's strides, half the size */
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, input->shape, (size_t)input->ndim * sizeof(*shape));
	shape[dim] = ti_dim_floordiv(ctx->sym, size, ti_dim_int(2));
	const ti_meta_tensor *half = ti_meta_view(ctx, input, input->ndim, shape, input->stride);
	if (!half)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	const ti_meta_tensor *halves[2] = {half, half};
	ti_meta_tensor *out;
	if ((st = ti_elementwise_new(ctx, halves, 2, input->dtype, &out, err)))
		return st;
	return ti_elementwise_output(call, out, 2, err);
}

/* ---- dropout (functional; the modules are in src/nn/dropout.c) ---- */

typedef enum dropout_kind {
	DROPOUT_PLAIN,   /* dropout, alpha_dropout: one mask element per element */
	DROPOUT_FEATURE, /* dropout2d, feature_alpha_dropout: one per channel */
	DROPOUT_1D,      /* dropout1d: 2-d or 3-d input; a 2-d input is unbatched */
	DROPOUT_3D       /* dropout3d: a 4-d (or any non-5-d) input is unbatched */
} dropout_kind;

static const struct {
	const char *name;
	dropout_kind kind;
} dropout_kinds[] = {
	{"dropout", DROPOUT_PLAIN}, {"alpha_dropout", DROPOUT_PLAIN},
	{"dropout2d", DROPOUT_FEATURE}, {"feature_alpha_dropout", DROPOUT_FEATURE},
	{"dropout1d", DROPOUT_1D}, {"dropout3d", DROPOUT_3D},
};

static dropout_kind dropout_kind_of(const char *name)
{
	for (size_t i = 0; i < sizeof(dropout_kinds) / sizeof(dropout_kinds[0]); i++)
		if (!strcmp(dropout_kinds[i].name, name))
			return dropout_kinds[i].kind;
	return DROPOUT_PLAIN;
}

/*
 * The noise Dropout.cpp multiplies by in training: like the input, or
 * [N, C, 1, ...] for feature dropout (make_feature_noise), in the input's
 * own frame when functional.py unsqueezed an unbatched input.
 */
static ti_status dropout_noise(ti_shape_ctx *ctx, const ti_meta_tensor *input, dropout_kind kind,
                               const ti_meta_tensor **noise, ti_error *err)
{
	if (kind == DROPOUT_PLAIN) {
		*noise = ti_meta_like(ctx, input, input->dtype);
		return *noise ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	bool unbatched = (kind == DROPOUT_1D && input->ndim == 2) || (kind == DROPOUT_3D && input->ndim != 5);
	int ndim = input->ndim + unbatched;
	if (ndim < 2)
		return TI_FAIL(err, TI_E_SHAPE, "Feature dropout requires at least 2 dimensions in the input");
	int kept = unbatched ? 1 : 2;
	ti_dim shape[TI_META_MAX_DIMS];
	for (int i = 0; i < input->ndim; i++)
		shape[i] = i < kept ? input->shape[i] : ti_dim_int(1);
	*noise = ti_meta_new(ctx, input->dtype, input->ndim, shape);
	return *noise ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory");
}

static ti_status dropout_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const char *name = call->rule->parsed->name;
	dropout_kind kind = dropout_kind_of(name);
	double p = ti_call_float(call, "p");
	if (p < 0 || p > 1) {
		char buf[32];
		ti_format_float(p, buf, sizeof(buf));
		return TI_FAIL(err, TI_E_SHAPE, "dropout probability has to be between 0 and 1, but got %s", buf);
	}
	if (kind == DROPOUT_1D && input->ndim != 2 && input->ndim != 3)
		return TI_FAIL(err, TI_E_SHAPE, "dropout1d: Expected 2D or 3D input, but received a %dD input. Note that "
		               "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
		               "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).", input->ndim);
	ti_dim numel = ti_meta_numel(call->ctx, input);
	/* Dropout.cpp _dropout_impl: in eval, with p == 0 or on an empty tensor, the input itself */
	if (!ti_call_bool(call, "training") || p == 0 || (ti_dim_is_int(numel) && numel.value == 0))
		return ti_call_output_tensor(call, input, err);
	const ti_meta_tensor *noise;
	ti_status st = dropout_noise(call->ctx, input, kind, &noise, err);
	if (st)
		return st;
	/* the noise is divided by 1 - p in place: an integer or bool noise cannot hold that */
	if (!ti_dtype_is_floating(input->dtype) && !ti_dtype_is_complex(input->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "result type Float can't be cast to the desired output type %s",
		               ti_dtype_torch_name(input->dtype));
	/* p == 1 multiplies by a zero-dim zeros({}) instead */
	const ti_meta_tensor *operands[2] = {input, p == 1 ? NULL : noise};
	ti_meta_tensor *out;
	if ((st = ti_elementwise_new(call->ctx, operands, 2, input->dtype, &out, err)))
		return st;
	return ti_call_output_tensor(call, out, err);
}

/*
 * torchvision.ops.stochastic_depth: checks p and mode; in eval or with p == 0
 * the input itself; else input * noise, the noise [N, 1, ...] ("row") or
 * [1, ...] ("batch") of the input's dtype, divided in place by 1 - p unless
 * that is 0 (which an integer noise cannot hold).
 */
static ti_status stochastic_depth_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	double p = ti_call_float(call, "p");
	const char *mode = ti_call_str(call, "mode");
	if (p < 0 || p > 1) {
		char buf[32];
		ti_format_float(p, buf, sizeof(buf));
		return TI_FAIL(err, TI_E_SHAPE, "drop probability has to be between 0 and 1, but got %s", buf);
	}
	if (strcmp(mode, "batch") != 0 && strcmp(mode, "row") != 0)
		return TI_FAIL(err, TI_E_SHAPE, "mode has to be either 'batch' or 'row', but got %s", mode);
	if (!ti_call_bool(call, "training") || p == 0) {
		ti_call_flops(call, ti_dim_int(0));
		return ti_call_output_tensor(call, input, err);
	}
	if (!strcmp(mode, "row") && input->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "tuple index out of range"); /* input.shape[0] */
	ti_dim shape[TI_META_MAX_DIMS];
	for (int i = 0; i < input->ndim; i++)
		shape[i] = i == 0 && !strcmp(mode, "row") ? input->shape[0] : ti_dim_int(1);
	const ti_meta_tensor *noise = ti_meta_new(call->ctx, input->dtype, input->ndim, shape);
	if (!noise)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	if (p < 1 && !ti_dtype_is_floating(input->dtype) && !ti_dtype_is_complex(input->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "result type Float can't be cast to the desired output type %s",
		               ti_dtype_torch_name(input->dtype));
	const ti_meta_tensor *operands[2] = {input, noise};
	ti_meta_tensor *out;
	ti_status st = ti_elementwise_new(call->ctx, operands, 2, input->dtype, &out, err);
	return st ? st : ti_elementwise_output(call, out, 1, err);
}

/* ---- the table ---- */

#define UNARY(name) name "(Tensor input)"
#define INPLACE(name) name "(Tensor input, bool inplace=False)"
#define STOCHASTIC_DEPTH(name) name "(Tensor input, float p, str mode, bool training=True)"
#define DROPOUT(name, training) name "(Tensor input, float p=0.5, bool training=" training ", bool inplace=False)"

ti_op_rule ti_ops_activation[] = {
	{INPLACE("relu"), same_dtype, TI_COUNT_RULE, NULL},
	{INPLACE("relu6"), hardtanh_rule, TI_COUNT_RULE, NULL},
	{"leaky_relu(Tensor input, float negative_slope=0.01, bool inplace=False)", same_dtype, TI_COUNT_RULE, NULL},
	{"elu(Tensor input, float alpha=1.0, bool inplace=False)", same_dtype, TI_COUNT_RULE, NULL},
	{"celu(Tensor input, float alpha=1.0, bool inplace=False)", same_dtype, TI_COUNT_RULE, NULL},
	{INPLACE("selu"), same_dtype, TI_COUNT_RULE, NULL},
	{"gelu(Tensor input, str approximate='none')", gelu_rule, TI_COUNT_RULE, NULL},
	{INPLACE("silu"), same_dtype, TI_COUNT_RULE, NULL},
	{INPLACE("mish"), same_dtype, TI_COUNT_RULE, NULL},
	{INPLACE("hardswish"), same_dtype, TI_COUNT_RULE, NULL},
	{INPLACE("hardsigmoid"), same_dtype, TI_COUNT_RULE, NULL},
	{"softplus(Tensor input, float beta=1.0, float threshold=20.0)", same_dtype, TI_COUNT_RULE, NULL},
	{"hardtanh(Tensor input, float min_val=-1.0, float max_val=1.0, bool inplace=False)", hardtanh_rule, TI_COUNT_RULE, NULL},
	{"threshold(Tensor input, float threshold, float value, bool inplace=False)", same_dtype, TI_COUNT_RULE, NULL},
	{"hardshrink(Tensor input, float lambd=0.5)", same_dtype, TI_COUNT_RULE, NULL},
	{"softshrink(Tensor input, float lambd=0.5)", softshrink_rule, TI_COUNT_RULE, NULL},
	{"rrelu(Tensor input, float lower=0.125, float upper=0.3333333333333333, bool training=False, bool inplace=False)",
	 same_dtype, TI_COUNT_RULE, NULL},
	{UNARY("logsigmoid"), logsigmoid_rule, TI_COUNT_RULE, NULL},
	{UNARY("tanh"), float_dtype, TI_COUNT_RULE, NULL},
	{UNARY("sigmoid"), float_dtype, TI_COUNT_RULE, NULL},
	{UNARY("softsign"), float_dtype, TI_COUNT_RULE, NULL},
	{UNARY("tanhshrink"), tanhshrink_rule, TI_COUNT_RULE, NULL},
	{"prelu(Tensor input, Tensor weight)", prelu_rule, TI_COUNT_RULE, NULL},
	{"softmax(Tensor input, int? dim=None, ScalarType? dtype=None)", softmax_rule, TI_COUNT_RULE, NULL},
	{"log_softmax(Tensor input, int? dim=None, ScalarType? dtype=None)", softmax_rule, TI_COUNT_RULE, NULL},
	{"softmin(Tensor input, int? dim=None, ScalarType? dtype=None)", softmax_rule, TI_COUNT_RULE, NULL},
	{"glu(Tensor input, int dim=-1)", glu_rule, TI_COUNT_RULE, NULL},
	{DROPOUT("dropout", "True"), dropout_rule, TI_COUNT_FREE, NULL},
	{DROPOUT("dropout1d", "True"), dropout_rule, TI_COUNT_FREE, NULL},
	{DROPOUT("dropout2d", "True"), dropout_rule, TI_COUNT_FREE, NULL},
	{DROPOUT("dropout3d", "True"), dropout_rule, TI_COUNT_FREE, NULL},
	{DROPOUT("alpha_dropout", "False"), dropout_rule, TI_COUNT_FREE, NULL},
	{DROPOUT("feature_alpha_dropout", "False"), dropout_rule, TI_COUNT_FREE, NULL},
	{STOCHASTIC_DEPTH("stochastic_depth"), stochastic_depth_rule, TI_COUNT_RULE, NULL},
	{STOCHASTIC_DEPTH("torchvision.ops.stochastic_depth"), stochastic_depth_rule, TI_COUNT_RULE, NULL},
	{STOCHASTIC_DEPTH("torchvision.ops.stochastic_depth.stochastic_depth"), stochastic_depth_rule, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
