/*
 * scan.c - cumulative operators: cumsum, cumprod, logcumsumexp, cummax,
 * cummin. The output has the input's shape, contiguous; cumsum and cumprod
 * of an integral or bool input give int64 unless dtype says otherwise
 * (aten/src/ATen/native/ReduceOps.cpp, meta_func cumsum). One flop per
 * element; cummax/cummin also return int64 indices.
 */
#include "ops/tables.h"

static ti_status scan_output(ti_op_call *call, ti_dtype dtype, int outputs, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	int dim;
	if (!ti_dim_is_int(ti_call_dim(call, "dim")))
		return TI_FAIL(err, TI_E_SHAPE, "dim must be a number, not a symbolic size");
	ti_status st = ti_wrap_dim(ti_call_dim(call, "dim").value, x->ndim, &dim, err);
	if (st)
		return st;
	for (int i = 0; i < outputs && !st; i++)
		st = ti_call_output_tensor(call, ti_meta_new(call->ctx, i ? TI_DT_INT64 : dtype, x->ndim, x->shape), err);
	if (!st)
		ti_call_flops(call, ti_meta_numel(call->ctx, x));
	return st;
}

static ti_status cumulative(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	ti_dtype dtype = ti_call_dtype(call, "dtype");
	if (!dtype)
		dtype = ti_dtype_is_integral(x->dtype, true) ? TI_DT_INT64 : x->dtype;
	return scan_output(call, dtype, 1, err);
}

static ti_status logcumsumexp(ti_op_call *call, ti_error *err)
{
	return scan_output(call, ti_call_tensor(call, "input")->dtype, 1, err);
}

static ti_status cumulative_extreme(ti_op_call *call, ti_error *err)
{
	return scan_output(call, ti_call_tensor(call, "input")->dtype, 2, err);
}

ti_op_rule ti_ops_scan[] = {
	{"cumsum(Tensor input, int dim, *, ScalarType? dtype=None)", cumulative, TI_COUNT_RULE, NULL},
	{"cumprod(Tensor input, int dim, *, ScalarType? dtype=None)", cumulative, TI_COUNT_RULE, NULL},
	{"logcumsumexp(Tensor input, int dim)", logcumsumexp, TI_COUNT_RULE, NULL},
	{"cummax(Tensor input, int dim)", cumulative_extreme, TI_COUNT_RULE, NULL},
	{"cummin(Tensor input, int dim)", cumulative_extreme, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
