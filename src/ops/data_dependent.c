/*
 * data_dependent.c - operators whose output shape depends on the values in a
 * tensor: nonzero, argwhere, unique, masked_select, bincount, item, tolist,
 * and repeat_interleave with tensor repeats. Meta tensors have no values, so
 * PyTorch's meta device refuses them; so do we, with PyTorch's message and
 * the reason. repeat_interleave with a number of repeats, or with an
 * output_size, has a shape and is computed (as in ATen's Repeat.cpp).
 */
#include <string.h>

#include "ops/tables.h"

static const char because[] = ": the output shape depends on the values in the tensor, which meta tensors do not have";

/* What PyTorch 2.x says when each is run on the meta device. */
static const struct {
	const char *op;
	const char *message;
} refusals[] = {
	/* torch/_meta_registrations.py nonzero (torch.where(c) and argwhere run it too) */
	{"nonzero", "The register_meta function for torch.nonzero() raises unimplemented by default, "
	            "as a correct data-independent implementation does not exist"},
	{"argwhere", "The register_meta function for torch.nonzero() raises unimplemented by default, "
	             "as a correct data-independent implementation does not exist"},
	/* the meta fallback (aten/src/ATen/core/MetaFallbackKernel.cpp) */
	{"unique", "aten::_unique2: attempted to run this operator with Meta tensors"},
	{"unique_consecutive", "aten::unique_consecutive: attempted to run this operator with Meta tensors"},
	{"masked_select", "aten::masked_select: attempted to run this operator with Meta tensors"},
	{"bincount", "aten::bincount: attempted to run this operator with Meta tensors"},
	/* meta_local_scalar_dense, and Tensor.tolist's copy out */
	{"item", "Tensor.item() cannot be called on meta tensors"},
	{"tolist", "Cannot copy out of meta tensor; no data!"},
};

static ti_status refuse(ti_op_call *call, ti_error *err)
{
	const char *name = call->rule->parsed->name;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		if (!strcmp(refusals[i].op, name))
			return TI_FAIL(err, TI_E_SHAPE, "%s%s", refusals[i].message, because);
	return TI_FAIL(err, TI_E_SHAPE, "%s()%s", name, because);
}

/* item() first checks there is one element (Scalar.cpp). */
static ti_status item_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	ti_dim numel = ti_meta_numel(call->ctx, input);
	if (!ti_dim_assume(call->ctx->sym, numel, TI_CMP_EQ, ti_dim_int(1))) {
		char buf[64];
		return TI_FAIL(err, TI_E_SHAPE, "a Tensor with %s elements cannot be converted to Scalar",
		               ti_dim_format(numel, buf, sizeof(buf)));
	}
	return refuse(call, err);
}

/* ---- repeat_interleave ---- */

/* Repeat.cpp: repeats per element along dim (the flattened input when dim is None). */
static ti_status repeat_interleave_rule(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	const ti_arg *repeats = ti_call_arg(call, "repeats");
	bool flatten = ti_call_is_none(call, "dim");
	ti_dim shape[TI_META_MAX_DIMS];
	int ndim = flatten ? 1 : input->ndim, dim = 0;
	if (flatten) {
		shape[0] = ti_meta_numel(ctx, input);
	} else {
		ti_dim given = ti_call_dim(call, "dim");
		ti_status st = ti_wrap_dim(ti_dim_is_int(given) ? given.value : 0, input->ndim, &dim, err);
		if (st)
			return st;
		memcpy(shape, input->shape, (size_t)ndim * sizeof(*shape));
		if (ndim == 0) { /* a zero-dim input repeats as a 1-d one */
			ndim = 1;
			shape[0] = ti_dim_int(1);
		}
	}
	if (repeats->kind == TI_ARG_TENSOR) {
		const ti_meta_tensor *r = repeats->as.tensor;
		if (r->ndim > 1)
			return TI_FAIL(err, TI_E_SHAPE, "repeats must be 0-dim or 1-dim tensor");
		bool one = r->ndim == 0 || (ti_dim_is_int(r->shape[0]) && r->shape[0].value == 1);
		if (!one && !ti_dim_assume(ctx->sym, r->shape[0], TI_CMP_EQ, shape[dim])) {
			char a[64], b[64];
			return TI_FAIL(err, TI_E_SHAPE, "repeats must have the same size as input along dim, but got "
			               "repeats.size(0) = %s and input.size(%d) = %s", ti_dim_format(r->shape[0], a, sizeof(a)),
			               dim, ti_dim_format(shape[dim], b, sizeof(b)));
		}
		/* the total is a sum of values: only output_size can tell it (meta_repeat_interleave_Tensor) */
		if (ti_call_is_none(call, "output_size"))
			return TI_FAIL(err, TI_E_SHAPE, "cannot repeat_interleave a meta tensor without output_size%s", because);
		shape[dim] = ti_call_dim(call, "output_size");
	} else if (repeats->kind == TI_ARG_INT) {
		if (ti_dim_is_int(repeats->as.dim) && repeats->as.dim.value < 0)
			return TI_FAIL(err, TI_E_SHAPE, "Repeats must be non-negative");
		shape[dim] = ti_dim_mul(ctx->sym, shape[dim], repeats->as.dim);
		if (!ti_call_is_none(call, "output_size") &&
		    !ti_dim_assume(ctx->sym, ti_call_dim(call, "output_size"), TI_CMP_EQ, shape[dim])) {
			char a[64], b[64];
			return TI_FAIL(err, TI_E_SHAPE, "repeat_interleave: Invalid output_size, expected %s but got %s",
			               ti_dim_format(shape[dim], a, sizeof(a)),
			               ti_dim_format(ti_call_dim(call, "output_size"), b, sizeof(b)));
		}
	} else {
		return TI_FAIL(err, TI_E_CORRUPT, "repeat_interleave(): argument 'repeats' must be int or Tensor");
	}
	ti_meta_tensor *out = ti_meta_new(ctx, input->dtype, ndim, shape);
	if (!out)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	out->requires_grad = input->requires_grad;
	return ti_call_output_tensor(call, out, err);
}

ti_op_rule ti_ops_data_dependent[] = {
	{"nonzero(Tensor input, *, bool as_tuple=False)", refuse, TI_COUNT_NONE, NULL},
	{"argwhere(Tensor input)", refuse, TI_COUNT_NONE, NULL},
	{"unique(Tensor input, bool sorted=True, bool return_inverse=False, bool return_counts=False, int? dim=None)",
	 refuse, TI_COUNT_NONE, NULL},
	{"unique_consecutive(Tensor input, bool return_inverse=False, bool return_counts=False, int? dim=None)",
	 refuse, TI_COUNT_NONE, NULL},
	{"masked_select(Tensor input, Tensor mask)", refuse, TI_COUNT_NONE, NULL},
	{"bincount(Tensor input, Tensor? weights=None, int minlength=0)", refuse, TI_COUNT_NONE, NULL},
	{"item(Tensor input)", item_rule, TI_COUNT_NONE, NULL},
	{"tolist(Tensor input)", refuse, TI_COUNT_NONE, NULL},
	{"repeat_interleave(Tensor input, Tensor|Scalar repeats, int? dim=None, *, int? output_size=None)",
	 repeat_interleave_rule, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
