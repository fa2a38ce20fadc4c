/*
 * linear.c - Linear, Bilinear, Identity, Flatten, Unflatten
 * (torch/nn/modules/linear.py, flatten.py).
 *
 * Parameters carry the state_dict names and shapes PyTorch gives them:
 * Linear's weight is [out_features, in_features], Bilinear's
 * [out_features, in1_features, in2_features], each bias [out_features].
 * Forward runs the functional operators (linear, bilinear in
 * src/ops/linalg.c; flatten, unflatten in src/ops/shape.c), so their checks
 * and counts apply; Identity returns its input itself.
 */
#include "nn/tables.h"

static ti_arg tensor_or_none(const ti_meta_tensor *t) { return t ? ti_arg_tensor(t) : ti_arg_none(); }

/* weight of the given shape, and bias [out] when the constructor asks for one. */
static ti_status add_weight_and_bias(ti_module *m, int ndim, const int64_t *weight_shape, ti_error *err)
{
	ti_dtype dtype = ti_module_dtype(m);
	ti_status st = ti_module_add_param(m, "weight", dtype, ndim, weight_shape, err);
	if (!st && ti_module_bool(m, "bias"))
		st = ti_module_add_param(m, "bias", dtype, 1, weight_shape, err);
	return st;
}

static ti_status init_linear(ti_module *m, ti_error *err)
{
	int64_t shape[2] = {ti_module_dim(m, "out_features").value, ti_module_dim(m, "in_features").value};
	return add_weight_and_bias(m, 2, shape, err);
}

static ti_status linear_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[3] = {
		ti_arg_tensor(ti_call_tensor(call, "input")),
		ti_arg_tensor(ti_module_tensor_get(m, "weight")),
		tensor_or_none(ti_module_tensor_get(m, "bias")),
	};
	return ti_call_forward(call, "linear", args, 3, err);
}

static ti_status init_bilinear(ti_module *m, ti_error *err)
{
	int64_t shape[3] = {ti_module_dim(m, "out_features").value, ti_module_dim(m, "in1_features").value,
	                    ti_module_dim(m, "in2_features").value};
	return add_weight_and_bias(m, 3, shape, err);
}

static ti_status bilinear_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[4] = {
		ti_arg_tensor(ti_call_tensor(call, "input1")),
		ti_arg_tensor(ti_call_tensor(call, "input2")),
		ti_arg_tensor(ti_module_tensor_get(m, "weight")),
		tensor_or_none(ti_module_tensor_get(m, "bias")),
	};
	return ti_call_forward(call, "bilinear", args, 4, err);
}

static ti_status identity_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	(void)m;
	return ti_call_output(call, *ti_call_arg(call, "input"), err);
}

static ti_status flatten_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[3] = {
		ti_arg_tensor(ti_call_tensor(call, "input")),
		ti_arg_dim(ti_module_dim(m, "start_dim")),
		ti_arg_dim(ti_module_dim(m, "end_dim")),
	};
	return ti_call_forward(call, "flatten", args, 3, err);
}

static ti_status unflatten_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[3] = {
		ti_arg_tensor(ti_call_tensor(call, "input")),
		ti_arg_dim(ti_module_dim(m, "dim")),
		*ti_module_arg(m, "unflattened_size"),
	};
	return ti_call_forward(call, "unflatten", args, 3, err);
}

ti_module_rule ti_nn_linear[] = {
	{"Linear(int in_features, int out_features, bool bias=True, str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input)", init_linear, linear_forward, TI_COUNT_RULE, NULL, NULL},
	{"Bilinear(int in1_features, int in2_features, int out_features, bool bias=True, str? device=None, "
	 "ScalarType? dtype=None)",
	 "forward(Tensor input1, Tensor input2)", init_bilinear, bilinear_forward, TI_COUNT_RULE, NULL, NULL},
	/* Identity(*args, **kwargs) ignores its arguments: none are required */
	{"Identity()", "forward(Tensor input)", NULL, identity_forward, TI_COUNT_FREE, NULL, NULL},
	{"Flatten(int start_dim=1, int end_dim=-1)", "forward(Tensor input)", NULL, flatten_forward, TI_COUNT_FREE,
	 NULL, NULL},
	{"Unflatten(int dim, int[] unflattened_size)", "forward(Tensor input)", NULL, unflatten_forward, TI_COUNT_FREE,
	 NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
