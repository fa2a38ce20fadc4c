/*
 * sort.c - ordering operators: sort, argsort, msort, topk, kthvalue.
 * Values keep the input's dtype, indices are int64, both contiguous
 * (aten/src/ATen/native/Sorting.cpp and TensorCompare.cpp meta functions).
 * They compare rather than compute, and their cost depends on the
 * algorithm: they have no counting rule, and the report says so.
 */
#include "ops/tables.h"

/* Wraps the dim argument, refusing a symbolic one. */
static ti_status sort_dim(ti_op_call *call, const ti_meta_tensor *x, int *dim, ti_error *err)
{
	ti_dim d = ti_call_dim(call, "dim");
	if (!ti_dim_is_int(d))
		return TI_FAIL(err, TI_E_SHAPE, "dim must be a number, not a symbolic size");
	return ti_wrap_dim(d.value, x->ndim, dim, err);
}

static ti_status sort(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	int dim;
	ti_status st = sort_dim(call, x, &dim, err);
	if (!st)
		st = ti_call_output_tensor(call, ti_meta_new(call->ctx, x->dtype, x->ndim, x->shape), err);
	if (!st)
		st = ti_call_output_tensor(call, ti_meta_new(call->ctx, TI_DT_INT64, x->ndim, x->shape), err);
	return st;
}

static ti_status argsort(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	int dim;
	ti_status st = sort_dim(call, x, &dim, err);
	return st ? st : ti_call_output_tensor(call, ti_meta_new(call->ctx, TI_DT_INT64, x->ndim, x->shape), err);
}

static ti_status msort(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	return ti_call_output_tensor(call, ti_meta_new(call->ctx, x->dtype, x->ndim, x->shape), err);
}

/* topk and kthvalue: k picked along dim; topk keeps the dim with size k, kthvalue drops it unless keepdim. */
static ti_status pick(ti_op_call *call, bool keep_k, const char *name, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	int dim;
	ti_status st = sort_dim(call, x, &dim, err);
	if (st)
		return st;
	ti_symctx *s = call->ctx->sym;
	ti_dim k = ti_call_dim(call, "k");
	ti_dim size = x->ndim ? x->shape[dim] : ti_dim_int(1);
	bool in_range = keep_k ? ti_dim_assume(s, k, TI_CMP_GE, ti_dim_int(0)) && ti_dim_assume(s, k, TI_CMP_LE, size)
	                       : ti_dim_assume(s, k, TI_CMP_GE, ti_dim_int(1)) && ti_dim_assume(s, k, TI_CMP_LE, size);
	if (!in_range)
		return keep_k ? TI_FAIL(err, TI_E_SHAPE, "selected index k out of range")
		              : TI_FAIL(err, TI_E_SHAPE, "%s(): selected number k out of range for dimension %d", name, dim);
	ti_dim shape[TI_META_MAX_DIMS];
	int n = 0;
	for (int i = 0; i < x->ndim; i++) {
		if (i != dim)
			shape[n++] = x->shape[i];
		else if (keep_k)
			shape[n++] = k;
		else if (ti_call_bool(call, "keepdim"))
			shape[n++] = ti_dim_int(1);
	}
	st = ti_call_output_tensor(call, ti_meta_new(call->ctx, x->dtype, n, shape), err);
	return st ? st : ti_call_output_tensor(call, ti_meta_new(call->ctx, TI_DT_INT64, n, shape), err);
}

static ti_status topk(ti_op_call *call, ti_error *err) { return pick(call, true, "topk", err); }
static ti_status kthvalue(ti_op_call *call, ti_error *err) { return pick(call, false, "kthvalue", err); }

ti_op_rule ti_ops_sort[] = {
	{"sort(Tensor input, int dim=-1, bool descending=False, *, bool? stable=None)", sort, TI_COUNT_NONE, NULL},
	{"argsort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False)", argsort, TI_COUNT_NONE, NULL},
	{"msort(Tensor input)", msort, TI_COUNT_NONE, NULL},
	{"topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True)", topk, TI_COUNT_NONE, NULL},
	{"kthvalue(Tensor input, int k, int dim=-1, bool keepdim=False)", kthvalue, TI_COUNT_NONE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
