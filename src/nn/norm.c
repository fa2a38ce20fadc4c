/*
 * norm.c - normalization modules: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d,
 * LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm
 * (torch/nn/modules/batchnorm.py, instancenorm.py, normalization.py).
 *
 * Descriptions run in eval mode, as after model.eval(): a BatchNorm uses its
 * running statistics, or the batch's when it tracks none (PyTorch's
 * bn_training); an InstanceNorm uses the input's statistics unless it tracks
 * running ones. Forward runs the functional operators (src/ops/norm.c), so
 * their checks and counts apply.
 */
#include <string.h>

#include "nn/tables.h"

static ti_arg tensor_or_none(const ti_meta_tensor *t) { return t ? ti_arg_tensor(t) : ti_arg_none(); }

/* Runs op and returns its first output in *out. */
/* momentum=None means a cumulative average in PyTorch; the value never changes a shape. */
static double momentum_of(const ti_module *m)
{
	return ti_module_is_none(m, "momentum") ? 0.0 : ti_module_float(m, "momentum");
}

/* ---- BatchNorm and InstanceNorm: _NormBase ---- */

/* The input ranks each type accepts (its _check_input_dim). */
typedef struct rank_rule {
	const char *type;
	int lowest, highest;
	const char *expected;
	int unbatched; /* InstanceNorm: the rank of an input without a batch dim; 0: none */
} rank_rule;

static const rank_rule rank_rules[] = {
	{"BatchNorm1d", 2, 3, "2D or 3D", 0},     {"BatchNorm2d", 4, 4, "4D", 0},
	{"BatchNorm3d", 5, 5, "5D", 0},           {"InstanceNorm1d", 2, 3, "2D or 3D", 2},
	{"InstanceNorm2d", 3, 4, "3D or 4D", 3}, {"InstanceNorm3d", 4, 5, "4D or 5D", 4},
};

static const rank_rule *rank_rule_of(const ti_module *m)
{
	for (size_t i = 0; i < sizeof(rank_rules) / sizeof(rank_rules[0]); i++)
		if (!strcmp(rank_rules[i].type, m->type))
			return &rank_rules[i];
	return &rank_rules[0];
}

static ti_status check_rank(const rank_rule *rule, const ti_meta_tensor *input, ti_error *err)
{
	if (input->ndim >= rule->lowest && input->ndim <= rule->highest)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "expected %s input (got %dD input)", rule->expected, input->ndim);
}

/* _NormBase.__init__: weight and bias when affine; running statistics and a step counter when tracking. */
static ti_status init_norm_base(ti_module *m, ti_error *err)
{
	int64_t features = ti_module_dim(m, "num_features").value;
	ti_dtype dtype = ti_module_dtype(m);
	ti_status st = TI_OK;
	if (ti_module_bool(m, "affine") &&
	    ((st = ti_module_add_param(m, "weight", dtype, 1, &features, err)) ||
	     (st = ti_module_add_param(m, "bias", dtype, 1, &features, err))))
		return st;
	if (ti_module_bool(m, "track_running_stats") &&
	    ((st = ti_module_add_buffer(m, "running_mean", dtype, 1, &features, true, err)) ||
	     (st = ti_module_add_buffer(m, "running_var", dtype, 1, &features, true, err)) ||
	     (st = ti_module_add_buffer(m, "num_batches_tracked", TI_DT_INT64, 0, NULL, true, err))))
		return st;
	return TI_OK;
}

/*
 * _BatchNorm.forward: batch statistics in training (bn_training), and in
 * evaluation only when there are no running ones. Which it is depends on the
 * mode whenever running statistics are tracked.
 */
static ti_status batch_norm_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_status st = check_rank(rank_rule_of(m), input, err);
	if (st)
		return st;
	const ti_meta_tensor *mean = ti_module_tensor_get(m, "running_mean");
	const ti_meta_tensor *var = ti_module_tensor_get(m, "running_var");
	if (mean || var)
		call->ctx->mode_dependent = true;
	ti_arg args[] = {
		ti_arg_tensor(input), tensor_or_none(mean), tensor_or_none(var),
		tensor_or_none(ti_module_tensor_get(m, "weight")), tensor_or_none(ti_module_tensor_get(m, "bias")),
		ti_arg_bool(call->ctx->training || (!mean && !var)), ti_arg_float(momentum_of(m)),
		ti_arg_float(ti_module_float(m, "eps")),
	};
	return ti_call_forward(call, "batch_norm", args, (int)(sizeof(args) / sizeof(args[0])), err);
}

/*
 * _InstanceNorm.forward: the feature dim must hold num_features when affine
 * (PyTorch only warns otherwise); an unbatched input is run as a batch of one.
 */
static ti_status instance_norm_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const rank_rule *rule = rank_rule_of(m);
	ti_status st = check_rank(rule, input, err);
	if (st)
		return st;
	int feature_dim = input->ndim - rule->unbatched;
	ti_dim features = ti_module_dim(m, "num_features");
	ti_dim got = input->shape[feature_dim];
	if (ti_module_bool(m, "affine") && !ti_dim_assume(ctx->sym, got, TI_CMP_EQ, features))
		return TI_FAIL(err, TI_E_SHAPE, "expected input's size at dim=%d to match num_features (%lld), but got: %s.",
		               feature_dim, (long long)features.value, ti_dim_str(ctx->sym, got));
	bool unbatched = input->ndim == rule->unbatched;
	const ti_meta_tensor *batched = input;
	if (unbatched) { /* input.unsqueeze(0) */
		ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
		shape[0] = ti_dim_int(1);
		stride[0] = input->ndim ? ti_dim_mul(ctx->sym, input->shape[0], input->stride[0]) : ti_dim_int(1);
		memcpy(shape + 1, input->shape, (size_t)input->ndim * sizeof(ti_dim));
		memcpy(stride + 1, input->stride, (size_t)input->ndim * sizeof(ti_dim));
		if (!(batched = ti_meta_view(ctx, input, input->ndim + 1, shape, stride)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a view");
	}
	const ti_meta_tensor *mean = ti_module_tensor_get(m, "running_mean");
	if (mean)
		ctx->mode_dependent = true;
	ti_arg args[] = {
		ti_arg_tensor(batched), tensor_or_none(mean), tensor_or_none(ti_module_tensor_get(m, "running_var")),
		tensor_or_none(ti_module_tensor_get(m, "weight")), tensor_or_none(ti_module_tensor_get(m, "bias")),
		ti_arg_bool(call->ctx->training || !ti_module_bool(m, "track_running_stats")), ti_arg_float(momentum_of(m)),
		ti_arg_float(ti_module_float(m, "eps")),
	};
	ti_op_call result;
	if ((st = ti_call_op(call, "instance_norm", args, (int)(sizeof(args) / sizeof(args[0])), &result, err)))
		return st;
	const ti_meta_tensor *out = result.outputs[0].as.tensor;
	if (unbatched) /* .squeeze(0) of a contiguous result */
		out = ti_meta_view(ctx, out, out->ndim - 1, out->shape + 1, out->stride + 1);
	return ti_call_output_tensor(call, out, err);
}

/* ---- LayerNorm, RMSNorm, GroupNorm, LocalResponseNorm ---- */

/* normalized_shape as given: an int or a list of ints. */
static int normalized_shape_of(const ti_module *m, int64_t *shape)
{
	const ti_arg *a = ti_module_arg(m, "normalized_shape");
	if (a->kind == TI_ARG_INT) {
		shape[0] = a->as.dim.value;
		return 1;
	}
	int n = a->as.list.count < TI_META_MAX_DIMS ? a->as.list.count : TI_META_MAX_DIMS;
	for (int i = 0; i < n; i++)
		shape[i] = a->as.list.items[i].as.dim.value;
	return n;
}

/* LayerNorm and RMSNorm: a weight (and LayerNorm a bias, 2.1's bias=False aside) of normalized_shape. */
static ti_status init_elementwise_affine(ti_module *m, ti_error *err)
{
	if (!ti_module_bool(m, "elementwise_affine"))
		return TI_OK;
	int64_t shape[TI_META_MAX_DIMS];
	int n = normalized_shape_of(m, shape);
	ti_status st = ti_module_add_param(m, "weight", ti_module_dtype(m), n, shape, err);
	/* RMSNorm has no bias argument: ti_module_bool reads false */
	if (!st && ti_module_bool(m, "bias"))
		st = ti_module_add_param(m, "bias", ti_module_dtype(m), n, shape, err);
	return st;
}

static ti_status layer_norm_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		ti_arg_tensor(ti_call_tensor(call, "input")), *ti_module_arg(m, "normalized_shape"),
		tensor_or_none(ti_module_tensor_get(m, "weight")), tensor_or_none(ti_module_tensor_get(m, "bias")),
		ti_arg_float(ti_module_float(m, "eps")),
	};
	return ti_call_forward(call, "layer_norm", args, (int)(sizeof(args) / sizeof(args[0])), err);
}

static ti_status rms_norm_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		ti_arg_tensor(ti_call_tensor(call, "input")), *ti_module_arg(m, "normalized_shape"),
		tensor_or_none(ti_module_tensor_get(m, "weight")),
		ti_module_is_none(m, "eps") ? ti_arg_none() : ti_arg_float(ti_module_float(m, "eps")),
	};
	return ti_call_forward(call, "rms_norm", args, (int)(sizeof(args) / sizeof(args[0])), err);
}

/* GroupNorm.__init__: Python's num_channels % num_groups must be 0. */
static ti_status init_group_norm(ti_module *m, ti_error *err)
{
	int64_t groups = ti_module_dim(m, "num_groups").value, channels = ti_module_dim(m, "num_channels").value;
	if (groups == 0) /* Python's wording for % (// says "integer division or modulo by zero") */
		return TI_FAIL(err, TI_E_SHAPE, "integer modulo by zero");
	ti_dim rest = ti_dim_mod(m->ctx->sym, ti_dim_int(channels), ti_dim_int(groups));
	if (rest.value != 0)
		return TI_FAIL(err, TI_E_SHAPE, "num_channels must be divisible by num_groups");
	ti_status st = TI_OK;
	if (ti_module_bool(m, "affine") &&
	    ((st = ti_module_add_param(m, "weight", ti_module_dtype(m), 1, &channels, err)) ||
	     (st = ti_module_add_param(m, "bias", ti_module_dtype(m), 1, &channels, err))))
		return st;
	return TI_OK;
}

static ti_status group_norm_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		ti_arg_tensor(ti_call_tensor(call, "input")), ti_arg_dim(ti_module_dim(m, "num_groups")),
		tensor_or_none(ti_module_tensor_get(m, "weight")), tensor_or_none(ti_module_tensor_get(m, "bias")),
		ti_arg_float(ti_module_float(m, "eps")),
	};
	return ti_call_forward(call, "group_norm", args, (int)(sizeof(args) / sizeof(args[0])), err);
}

static ti_status local_response_norm_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		ti_arg_tensor(ti_call_tensor(call, "input")), ti_arg_dim(ti_module_dim(m, "size")),
		ti_arg_float(ti_module_float(m, "alpha")), ti_arg_float(ti_module_float(m, "beta")),
		ti_arg_float(ti_module_float(m, "k")),
	};
	return ti_call_forward(call, "local_response_norm", args, (int)(sizeof(args) / sizeof(args[0])), err);
}

#define BATCH_NORM_ARGS                                                                                   \
	"(int num_features, float eps=1e-05, float? momentum=0.1, bool affine=True, "                         \
	"bool track_running_stats=True, str? device=None, ScalarType? dtype=None)"
#define INSTANCE_NORM_ARGS                                                                                \
	"(int num_features, float eps=1e-05, float? momentum=0.1, bool affine=False, "                        \
	"bool track_running_stats=False, str? device=None, ScalarType? dtype=None)"

ti_module_rule ti_nn_norm[] = {
	{"BatchNorm1d" BATCH_NORM_ARGS, "forward(Tensor input)", init_norm_base, batch_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{"BatchNorm2d" BATCH_NORM_ARGS, "forward(Tensor input)", init_norm_base, batch_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{"BatchNorm3d" BATCH_NORM_ARGS, "forward(Tensor input)", init_norm_base, batch_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{"InstanceNorm1d" INSTANCE_NORM_ARGS, "forward(Tensor input)", init_norm_base, instance_norm_forward,
	 TI_COUNT_RULE, NULL, NULL},
	{"InstanceNorm2d" INSTANCE_NORM_ARGS, "forward(Tensor input)", init_norm_base, instance_norm_forward,
	 TI_COUNT_RULE, NULL, NULL},
	{"InstanceNorm3d" INSTANCE_NORM_ARGS, "forward(Tensor input)", init_norm_base, instance_norm_forward,
	 TI_COUNT_RULE, NULL, NULL},
	{"LayerNorm(int|int[] normalized_shape, float eps=1e-05, bool elementwise_affine=True, bool bias=True, "
	 "str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input)", init_elementwise_affine, layer_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{"RMSNorm(int|int[] normalized_shape, float? eps=None, bool elementwise_affine=True, str? device=None, "
	 "ScalarType? dtype=None)",
	 "forward(Tensor input)", init_elementwise_affine, rms_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{"GroupNorm(int num_groups, int num_channels, float eps=1e-05, bool affine=True, str? device=None, "
	 "ScalarType? dtype=None)",
	 "forward(Tensor input)", init_group_norm, group_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{"LocalResponseNorm(int size, float alpha=0.0001, float beta=0.75, float k=1.0)",
	 "forward(Tensor input)", NULL, local_response_norm_forward, TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
