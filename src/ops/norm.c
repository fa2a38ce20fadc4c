/*
 * norm.c - normalization: batch_norm, instance_norm, layer_norm, group_norm,
 * rms_norm, normalize, local_response_norm.
 *
 * Checks and messages follow torch/nn/functional.py (the Python-side
 * _verify_batch_size / _verify_spatial_size) and
 * aten/src/ATen/native/Normalization.cpp, layer_norm.cpp, group_norm.cpp.
 *
 * Counting (FLOPs; none of these has multiply-accumulates):
 *   statistics taken from the input (batch_norm training, instance_norm with
 *   use_input_stats, layer_norm, group_norm): 5 per element (mean 1,
 *   variance 2, normalize 2), plus 1 per element for a weight and 1 for a bias;
 *   running statistics (batch_norm eval, instance_norm without input stats):
 *   2 per element, weight and bias folded into one scale and one shift;
 *   rms_norm: 3 per element (square, accumulate, scale), plus 1 for a weight;
 *   normalize: 3 per element (|x|^p, accumulate, divide);
 *   local_response_norm: size + 5 per element (square, window sum of size,
 *   scale, offset, power, divide).
 */
#include <stdio.h>
#include <string.h>

#include "ops/tables.h"

enum {
	FLOPS_FROM_INPUT = 5,
	FLOPS_RUNNING = 2,
	FLOPS_RMS = 3,
	FLOPS_NORMALIZE = 3,
	FLOPS_LRN_EXTRA = 5,
};

/* ---- helpers ---- */

static const char *dim_text(ti_shape_ctx *ctx, ti_dim d)
{
	const char *s = ti_dim_str(ctx->sym, d);
	return s ? s : "?";
}

static const char *shape_text(ti_shape_ctx *ctx, int ndim, const ti_dim *shape)
{
	const char *s = ti_shape_str(ctx, ndim, shape);
	return s ? s : "[?]";
}

/* What Python prints for a torch.Size: "torch.Size([1, 4])". */
static const char *torch_size_text(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	const char *s = ti_arena_printf(ctx->arena, "torch.Size(%s)", shape_text(ctx, t->ndim, t->shape));
	return s ? s : "torch.Size([?])";
}

static bool is_value(ti_dim d, int64_t v) { return ti_dim_is_int(d) && d.value == v; }

static bool has_zero_size(const ti_meta_tensor *t)
{
	for (int i = 0; i < t->ndim; i++)
		if (is_value(t->shape[i], 0))
			return true;
	return false;
}

static ti_dim product(ti_shape_ctx *ctx, const ti_dim *shape, int from, int to)
{
	ti_dim p = ti_dim_int(1);
	for (int i = from; i < to; i++)
		p = ti_dim_mul(ctx->sym, p, shape[i]);
	return p;
}

/* Same rank and sizes; undecidable sizes are assumed equal. */
static bool same_shape(ti_shape_ctx *ctx, int na, const ti_dim *a, int nb, const ti_dim *b)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (!ti_dim_assume(ctx->sym, a[i], TI_CMP_EQ, b[i]))
			return false;
	return true;
}

/* c10 infer_dense_strides: -1 puts dim a before dim b (smaller stride), 1 after, 0 is undecided. */
static int stride_order(ti_shape_ctx *ctx, const ti_meta_tensor *t, int a, int b)
{
	ti_dim sa = t->stride[a], sb = t->stride[b];
	if (is_value(sa, 0) || is_value(sb, 0))
		return 0;
	if (ti_dim_compare(ctx->sym, sa, TI_CMP_LT, sb) == TI_TRUE)
		return -1;
	if (ti_dim_compare(ctx->sym, sa, TI_CMP_GT, sb) == TI_TRUE)
		return 1;
	/* equal strides: the smaller size goes first */
	if (ti_dim_compare(ctx->sym, sa, TI_CMP_EQ, sb) == TI_TRUE &&
	    ti_dim_compare(ctx->sym, t->shape[a], TI_CMP_GT, t->shape[b]) == TI_TRUE)
		return 1;
	return 0;
}

/*
 * empty_like(input) with the preserve memory format, as batch_norm's kernel
 * and TensorIterator outputs make it: the input's dimension order, densely
 * packed (c10 infer_dense_strides), so a channels_last input stays so.
 */
static ti_meta_tensor *new_like(ti_shape_ctx *ctx, const ti_meta_tensor *t, ti_dtype dtype)
{
	if (ti_meta_is_contiguous(ctx, t))
		return ti_meta_new(ctx, dtype, t->ndim, t->shape);
	int n = t->ndim, perm[TI_META_MAX_DIMS];
	for (int i = 0; i < n; i++)
		perm[i] = n - 1 - i;
	/* insertion sort by ascending stride, as c10 does, leaving undecided pairs in place */
	for (int i = 1; i < n; i++) {
		int d1 = i;
		for (int d0 = i - 1; d0 >= 0; d0--) {
			int order = stride_order(ctx, t, perm[d0], perm[d1]);
			if (order > 0) {
				int tmp = perm[d0];
				perm[d0] = perm[d1];
				perm[d1] = tmp;
				d1 = d0;
			} else if (order < 0) {
				break;
			}
		}
	}
	ti_dim stride[TI_META_MAX_DIMS], next = ti_dim_int(1);
	for (int i = 0; i < n; i++) {
		stride[perm[i]] = next;
		ti_dim size = t->shape[perm[i]];
		if (!(ti_dim_is_int(size) && size.value <= 1))
			next = ti_dim_mul(ctx->sym, next, size);
	}
	ti_meta_tensor *out = ti_meta_view(ctx, NULL, n, t->shape, stride);
	if (out)
		out->dtype = dtype;
	return out;
}

static void count_flops(ti_op_call *call, const ti_meta_tensor *t, int64_t per_element)
{
	ti_symctx *s = call->ctx->sym;
	ti_call_flops(call, ti_dim_mul(s, ti_meta_numel(call->ctx, t), ti_dim_int(per_element)));
}

/*
 * See the counting note at the top. fvcore's rules: a norm is 5 FLOPs per
 * element with an affine weight (else 4), except batch_norm in evaluation,
 * 2 (else 1); FlopCounterMode counts no norm.
 */
static void count_norm(ti_op_call *call, const ti_meta_tensor *input, bool from_input, bool weight, bool bias)
{
	count_flops(call, input, from_input ? FLOPS_FROM_INPUT + weight + bias : FLOPS_RUNNING);
	bool batch_eval = !from_input && !strcmp(call->rule->parsed->name, "batch_norm");
	int64_t fvcore = batch_eval ? 1 + weight : 4 + weight;
	ti_call_count_as(call, ti_dim_int(0), ti_dim_mul(call->ctx->sym, ti_meta_numel(call->ctx, input), ti_dim_int(fvcore)));
}

/*
 * functional.py _verify_batch_size / _verify_spatial_size: a statistic over a
 * single value is refused. A product that may be 1 is assumed not to be.
 */
static ti_status verify_more_than_one(ti_shape_ctx *ctx, ti_dim values, const char *what, const char *size_text,
                                      ti_error *err)
{
	if (ti_dim_assume(ctx->sym, values, TI_CMP_NE, ti_dim_int(1)))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "Expected more than 1 %s when training, got input size %s", what, size_text);
}

/* ---- batch_norm and instance_norm ---- */

static const char *const stat_names[] = {"running_mean", "running_var", "weight", "bias"};

/* running_mean, running_var, weight and bias, NULL where None. */
static void stat_tensors(ti_op_call *call, const ti_meta_tensor *tensors[4])
{
	for (int i = 0; i < 4; i++)
		tensors[i] = ti_call_tensor(call, stat_names[i]);
}

/*
 * _batch_norm_impl_index: each given statistic or affine tensor holds one
 * value per feature (instance_norm repeats them `repeat` times), and eval
 * mode needs the running statistics.
 */
static ti_status check_features(ti_shape_ctx *ctx, ti_dim features, const ti_meta_tensor *const tensors[4],
                                bool training, ti_dim repeat, ti_error *err)
{
	for (int i = 0; i < 4; i++) {
		if (!tensors[i]) {
			if (i < 2 && !training)
				return TI_FAIL(err, TI_E_SHAPE, "%s must be defined in evaluation mode", stat_names[i]);
			continue;
		}
		ti_dim numel = ti_dim_mul(ctx->sym, ti_meta_numel(ctx, tensors[i]), repeat);
		if (!ti_dim_assume(ctx->sym, numel, TI_CMP_EQ, features))
			return TI_FAIL(err, TI_E_SHAPE, "%s should contain %s elements not %s", stat_names[i],
			               dim_text(ctx, features), dim_text(ctx, numel));
	}
	return TI_OK;
}

static ti_status batch_norm(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const ti_meta_tensor *tensors[4];
	stat_tensors(call, tensors);
	bool training = ti_call_bool(call, "training");
	ti_status st;
	if (training) {
		if (input->ndim == 0)
			return TI_FAIL(err, TI_E_SHAPE, "tuple index out of range");
		/* size[0] times the sizes after the channel dim */
		ti_dim values = ti_dim_mul(ctx->sym, input->shape[0], product(ctx, input->shape, 2, input->ndim));
		if ((st = verify_more_than_one(ctx, values, "value per channel", torch_size_text(ctx, input), err)))
			return st;
	}
	/* an empty input is cloned before any check */
	if (!has_zero_size(input)) {
		/* input.sizes()[1] is read unchecked; torch 1.13 reads 0 for a 1-d input */
		ti_dim features = input->ndim >= 2 ? input->shape[1] : ti_dim_int(0);
		if ((st = check_features(ctx, features, tensors, training, ti_dim_int(1), err)))
			return st;
	}
	count_norm(call, input, training, tensors[2] != NULL, tensors[3] != NULL);
	return ti_call_output_tensor(call, new_like(ctx, input, input->dtype), err);
}

/*
 * Normalization.cpp instance_norm: the input is viewed as (1, N * C, *) and
 * batch-normalized with the statistics and affine tensors repeated N times.
 */
static ti_status instance_norm(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const ti_meta_tensor *tensors[4];
	stat_tensors(call, tensors);
	bool use_input_stats = ti_call_bool(call, "use_input_stats");
	ti_status st;
	if (use_input_stats &&
	    (st = verify_more_than_one(ctx, product(ctx, input->shape, 2, input->ndim), "spatial element",
	                               torch_size_text(ctx, input), err)))
		return st;
	if (!use_input_stats && !(tensors[0] && tensors[1]))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected running_mean and running_var to be defined when use_input_stats is false");
	if (input->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "Dimension specified as 0 but tensor has no dimensions");
	int channel_dim;
	if ((st = ti_wrap_dim(1, input->ndim, &channel_dim, err)))
		return st;
	if (!has_zero_size(input)) {
		ti_dim batch = input->shape[0];
		ti_dim features = ti_dim_mul(ctx->sym, batch, input->shape[channel_dim]);
		if ((st = check_features(ctx, features, tensors, use_input_stats, batch, err)))
			return st;
	}
	count_norm(call, input, use_input_stats, tensors[2] != NULL, tensors[3] != NULL);
	return ti_call_output_tensor(call, ti_meta_new(ctx, input->dtype, input->ndim, input->shape), err);
}

/* ---- layer_norm and rms_norm ---- */

/*
 * layer_norm.cpp _check_layer_norm_inputs (and _check_rms_norm_inputs, the
 * same without a bias): normalized_shape is the trailing shape of the input
 * and the shape of weight and bias.
 */
static ti_status check_normalized_shape(ti_op_call *call, const ti_meta_tensor *input, const ti_meta_tensor *weight,
                                        const ti_meta_tensor *bias, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n;
	const ti_arg *items = ti_call_list(call, "normalized_shape", &n);
	ti_dim shape[TI_META_MAX_DIMS];
	if (n > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "normalized_shape has more than %d sizes", TI_META_MAX_DIMS);
	for (int i = 0; i < n; i++)
		shape[i] = items[i].as.dim;
	const char *wanted = shape_text(ctx, n, shape);
	if (n < 1)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
		               "element, but got normalized_shape = %s", wanted);
	const ti_meta_tensor *affine[2] = {weight, bias};
	for (int i = 0; i < 2; i++)
		if (affine[i] && !same_shape(ctx, affine[i]->ndim, affine[i]->shape, n, shape))
			return TI_FAIL(err, TI_E_SHAPE,
			               "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
			               "normalized_shape = %s", stat_names[2 + i], stat_names[2 + i],
			               ti_meta_shape_str(ctx, affine[i]), wanted);
	int skip = input->ndim - n;
	if (skip < 0 || !same_shape(ctx, n, input->shape + skip, n, shape)) {
		char pattern[512] = "*";
		size_t used = 1;
		for (int i = 0; i < n && used < sizeof(pattern); i++)
			used += (size_t)snprintf(pattern + used, sizeof(pattern) - used, ", %s", dim_text(ctx, shape[i]));
		return TI_FAIL(err, TI_E_SHAPE, "Given normalized_shape=%s, expected input with shape [%s], but got input of size%s",
		               wanted, pattern, ti_meta_shape_str(ctx, input));
	}
	return TI_OK;
}

static ti_status layer_norm(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const ti_meta_tensor *weight = ti_call_tensor(call, "weight"), *bias = ti_call_tensor(call, "bias");
	ti_status st = check_normalized_shape(call, input, weight, bias, err);
	if (st)
		return st;
	count_norm(call, input, true, weight != NULL, bias != NULL);
	/* the kernel runs on input.contiguous() and writes a contiguous result of the input's dtype */
	return ti_call_output_tensor(call, ti_meta_new(call->ctx, input->dtype, input->ndim, input->shape), err);
}

/* layer_norm.cpp rms_norm (2.4): input * rsqrt(mean(input^2) + eps), cast back, times weight. */
static ti_status rms_norm(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const ti_meta_tensor *weight = ti_call_tensor(call, "weight");
	ti_status st = check_normalized_shape(call, input, weight, NULL, err);
	if (st)
		return st;
	count_flops(call, input, FLOPS_RMS + (weight != NULL));
	/* result.type_as(input).mul(weight) promotes: a half input with a float weight gives float */
	ti_dtype dtype = weight ? ti_promote_types(input->dtype, weight->dtype) : input->dtype;
	return ti_call_output_tensor(call, new_like(call->ctx, input, dtype), err);
}

/* ---- group_norm ---- */

/* functional.py group_norm, then group_norm.cpp check_group_norm_inputs. */
static ti_status group_norm(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const ti_meta_tensor *weight = ti_call_tensor(call, "weight"), *bias = ti_call_tensor(call, "bias");
	ti_dim groups = ti_call_dim(call, "num_groups");
	if (input->ndim < 2)
		return TI_FAIL(err, TI_E_SHAPE, "Expected at least 2 dimensions for input tensor but received %d", input->ndim);
	if (!ti_dim_is_int(groups))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "group_norm(): argument 'num_groups' must be a number, not a symbolic size");
	if (groups.value == 0)
		return TI_FAIL(err, TI_E_SHAPE, "integer division or modulo by zero");
	ti_symctx *s = ctx->sym;
	ti_dim channels = input->shape[1];
	ti_status st;
	/* _verify_batch_size([N * C // G, G] + spatial): a negative G can never make the product 1 */
	if (groups.value > 0) {
		ti_dim sizes[TI_META_MAX_DIMS];
		sizes[0] = ti_dim_floordiv(s, ti_dim_mul(s, input->shape[0], channels), groups);
		sizes[1] = groups;
		memcpy(sizes + 2, input->shape + 2, (size_t)(input->ndim - 2) * sizeof(ti_dim));
		ti_dim values = ti_dim_mul(s, sizes[0], product(ctx, sizes, 2, input->ndim));
		if ((st = verify_more_than_one(ctx, values, "value per channel", shape_text(ctx, input->ndim, sizes), err)))
			return st;
	}
	if (groups.value < 0)
		return TI_FAIL(err, TI_E_SHAPE, "Expected num groups to be greater than 0, got %lld", (long long)groups.value);
	const char *input_shape = ti_meta_shape_str(ctx, input);
	if (!ti_dim_assume(s, ti_dim_mod(s, channels, groups), TI_CMP_EQ, ti_dim_int(0)))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected number of channels in input to be divisible by num_groups, but got input of shape "
		               "%s and num_groups=%lld", input_shape, (long long)groups.value);
	const ti_meta_tensor *affine[2] = {weight, bias};
	/* PyTorch prints weight's shape in the bias message too ([0] without a weight) */
	const char *weight_shape = weight ? ti_meta_shape_str(ctx, weight) : "[0]";
	for (int i = 0; i < 2; i++)
		if (affine[i] && !(affine[i]->ndim == 1 && ti_dim_assume(s, affine[i]->shape[0], TI_CMP_EQ, channels)))
			return TI_FAIL(err, TI_E_SHAPE,
			               "Expected %s to be a vector of size equal to the number of channels in input, but got "
			               "%s of shape %s and input of shape %s", stat_names[2 + i], stat_names[2 + i],
			               weight_shape, input_shape);
	count_norm(call, input, true, weight != NULL, bias != NULL);
	return ti_call_output_tensor(call, ti_meta_new(ctx, input->dtype, input->ndim, input->shape), err);
}

/* ---- normalize and local_response_norm ---- */

/* F.normalize: input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input). */
static ti_status normalize(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_dim dim = ti_call_dim(call, "dim");
	if (!ti_dtype_is_floating(input->dtype) && !ti_dtype_is_complex(input->dtype))
		return TI_FAIL(err, TI_E_SHAPE,
		               "linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s",
		               ti_dtype_torch_name(input->dtype));
	if (!ti_dim_is_int(dim))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "normalize(): argument 'dim' must be a number, not a symbolic size");
	int wrapped;
	ti_status st = ti_wrap_dim(dim.value, input->ndim, &wrapped, err);
	if (st)
		return st;
	count_flops(call, input, FLOPS_NORMALIZE);
	return ti_call_output_tensor(call, new_like(call->ctx, input, input->dtype), err);
}

/*
 * F.local_response_norm: the squared input averaged over a window of `size`
 * channels (avg_pool2d for 3-d and 4-d inputs, avg_pool3d above).
 */
static ti_status local_response_norm(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_dim size = ti_call_dim(call, "size");
	if (input->ndim < 3)
		return TI_FAIL(err, TI_E_SHAPE, "Expected 3D or higher dimensionality input (got %d dimensions)", input->ndim);
	if (has_zero_size(input)) /* returned as it is */
		return ti_call_output_tensor(call, input, err);
	if (!ti_dim_is_int(size))
		return TI_FAIL(err, TI_E_UNSUPPORTED,
		               "local_response_norm(): argument 'size' must be a number, not a symbolic size");
	if (size.value <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "kernel size should be greater than zero, but got %s: %lld %s",
		               input->ndim == 3 ? "kH" : "kT", (long long)size.value, input->ndim == 3 ? "kW: 1" : "kH: 1 kW: 1");
	count_flops(call, input, size.value + FLOPS_LRN_EXTRA);
	return ti_call_output_tensor(call, new_like(call->ctx, input, input->dtype), err);
}

ti_op_rule ti_ops_norm[] = {
	{"batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, "
	 "bool training=False, float momentum=0.1, float eps=1e-05)", batch_norm, TI_COUNT_RULE, NULL},
	{"instance_norm(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, "
	 "Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05)",
	 instance_norm, TI_COUNT_RULE, NULL},
	{"layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)",
	 layer_norm, TI_COUNT_RULE, NULL},
	{"group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05)",
	 group_norm, TI_COUNT_RULE, NULL},
	{"rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)",
	 rms_norm, TI_COUNT_RULE, NULL},
	{"normalize(Tensor input, float p=2.0, int dim=1, float eps=1e-12, Tensor? out=None)",
	 normalize, TI_COUNT_RULE, NULL},
	{"local_response_norm(Tensor input, int size, float alpha=0.0001, float beta=0.75, float k=1.0)",
	 local_response_norm, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
