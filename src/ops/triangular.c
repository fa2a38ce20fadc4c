/*
 * triangular.c - triu and tril: the input's shape, contiguous, the lower or
 * upper triangle kept. Needs at least 2 dims (torch/_meta_registrations.py
 * triu/tril in 2.x; 1.13's meta kernel skipped the check). No arithmetic.
 */
#include "ops/tables.h"

static ti_status triangle(ti_op_call *call, const char *name, ti_error *err)
{
	const ti_meta_tensor *x = ti_call_tensor(call, "input");
	if (x->ndim < 2)
		return TI_FAIL(err, TI_E_SHAPE, "%s: input tensor must have at least 2 dimensions", name);
	return ti_call_output_tensor(call, ti_meta_new(call->ctx, x->dtype, x->ndim, x->shape), err);
}

static ti_status triu(ti_op_call *call, ti_error *err) { return triangle(call, "triu", err); }
static ti_status tril(ti_op_call *call, ti_error *err) { return triangle(call, "tril", err); }

ti_op_rule ti_ops_triangular[] = {
	{"triu(Tensor input, int diagonal=0)", triu, TI_COUNT_FREE, NULL},
	{"tril(Tensor input, int diagonal=0)", tril, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
