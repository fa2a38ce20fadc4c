/*
 * index.c - indexing: narrow, select, index_select, gather, take_along_dim,
 * embedding, embedding_bag.
 *
 * narrow and select are views (TensorShape.cpp); index_select, gather and
 * take_along_dim make new contiguous tensors (TensorAdvancedIndexing.cpp,
 * whose CPU checks the rules apply, since the meta kernels skip some).
 * embedding follows torch.nn.functional.embedding and at::embedding
 * (Embedding.cpp); embedding_bag follows torch.nn.functional.embedding_bag
 * and its meta function (torch/_meta_registrations.py).
 *
 * Counting: gathers do no arithmetic (free); embedding_bag adds up its bags:
 * indices.numel() * embedding_dim flops, or as many multiply-accumulates
 * when per_sample_weights scale each row.
 */
#include <string.h>

#include "ops/tables.h"

static bool dim_is(ti_dim d, int64_t v)
{
	return ti_dim_is_int(d) && d.value == v;
}

/* An axis or index must be a number: a symbolic size there is a bad description. */
static ti_status need_int(const char *what, ti_dim d, int64_t *out, ti_error *err)
{
	char buf[64];
	if (!ti_dim_is_int(d))
		return TI_FAIL(err, TI_E_CORRUPT, "argument '%s' must be an integer, not the symbolic size %s",
		               what, ti_dim_format(d, buf, sizeof(buf)));
	*out = d.value;
	return TI_OK;
}

static ti_status wrap_arg(const char *what, ti_dim d, int ndim, int *out, ti_error *err)
{
	int64_t v = 0;
	ti_status st = need_int(what, d, &v, err);
	return st ? st : ti_wrap_dim(v, ndim, out, err);
}

/* A new contiguous tensor from base: base's dtype and requires_grad. */
static ti_status output_new(ti_op_call *call, const ti_meta_tensor *base, int ndim, const ti_dim *shape,
                            ti_error *err)
{
	ti_meta_tensor *t = ti_meta_new(call->ctx, base->dtype, ndim, shape);
	if (t)
		t->requires_grad = base->requires_grad;
	return ti_call_output_tensor(call, t, err);
}

/* "torch.FloatTensor": Tensor::toString() in a checkScalarTypes message. */
static const char *tensor_type_name(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	return ti_arena_printf(ctx->arena, "torch.%sTensor", ti_dtype_torch_name(t->dtype));
}

/* "torch.Size([2, 5])": a shape as Python prints it in a message. */
static const char *python_size(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	return ti_arena_printf(ctx->arena, "torch.Size(%s)", ti_meta_shape_str(ctx, t));
}

static bool is_index_dtype(ti_dtype dt)
{
	return dt == TI_DT_INT64 || dt == TI_DT_INT32;
}

/* ---- views ---- */

/* narrow (TensorShape.cpp, 2.x): length >= 0, start in [-size, size], start + length <= size. */
static ti_status run_narrow(ti_op_call *call, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	ti_dim start = ti_call_dim(call, "start"), length = ti_call_dim(call, "length");
	char a[64], b[64], c[64];
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "narrow() cannot be applied to a 0-dim tensor.");
	if (!ti_dim_assume(s, length, TI_CMP_GE, ti_dim_int(0)))
		return TI_FAIL(err, TI_E_SHAPE, "narrow(): length must be non-negative.");
	int dim;
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	ti_dim size = t->shape[dim], minus_size = ti_dim_sub(s, ti_dim_int(0), size);
	if (!ti_dim_assume(s, minus_size, TI_CMP_LE, start) || !ti_dim_assume(s, start, TI_CMP_LE, size))
		return TI_FAIL(err, TI_E_SHAPE, "start out of range (expected to be in range of [%s, %s], but got %s)",
		               ti_dim_format(minus_size, a, sizeof(a)), ti_dim_format(size, b, sizeof(b)),
		               ti_dim_format(start, c, sizeof(c)));
	if (ti_dim_is_int(start) && start.value < 0)
		start = ti_dim_add(s, start, size);
	if (!ti_dim_assume(s, start, TI_CMP_LE, ti_dim_sub(s, size, length)))
		return TI_FAIL(err, TI_E_SHAPE, "start (%s) + length (%s) exceeds dimension size (%s).",
		               ti_dim_format(start, a, sizeof(a)), ti_dim_format(length, b, sizeof(b)),
		               ti_dim_format(size, c, sizeof(c)));
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	shape[dim] = length;
	return ti_call_output_tensor(call, ti_meta_view(call->ctx, t, t->ndim, shape, t->stride), err);
}

/* select (TensorShape.cpp): index in [-size, size); dim removed. */
static ti_status run_select(ti_op_call *call, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	ti_dim index = ti_call_dim(call, "index");
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "select() cannot be applied to a 0-dim tensor.");
	int dim;
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	ti_dim size = t->shape[dim];
	if (!ti_dim_assume(s, ti_dim_sub(s, ti_dim_int(0), index), TI_CMP_LE, size) ||
	    !ti_dim_assume(s, index, TI_CMP_LT, size)) {
		char buf[64];
		return TI_FAIL(err, TI_E_SHAPE, "select(): index %s out of range for tensor of size %s at dimension %d",
		               ti_dim_format(index, buf, sizeof(buf)), ti_meta_shape_str(call->ctx, t), dim);
	}
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	for (int i = 0, n = 0; i < t->ndim; i++) {
		if (i == dim)
			continue;
		shape[n] = t->shape[i];
		stride[n++] = t->stride[i];
	}
	return ti_call_output_tensor(call, ti_meta_view(call->ctx, t, t->ndim - 1, shape, stride), err);
}

/* ---- gathers ---- */

/* index_select (index_select_out_cpu_): a 0-d or 1-D int32/int64 index replaces dim's size. */
static ti_status run_index_select(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input"), *index = ti_call_tensor(call, "index");
	int dim;
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	ti_dim numel = ti_meta_numel(call->ctx, index);
	if (index->ndim > 1)
		return TI_FAIL(err, TI_E_SHAPE, "index_select(): Index is supposed to be a vector");
	if (t->ndim == 0 && !dim_is(numel, 1)) {
		char buf[64];
		return TI_FAIL(err, TI_E_SHAPE, "index_select(): Index to scalar can have only 1 value, got %s value(s)",
		               ti_dim_format(numel, buf, sizeof(buf)));
	}
	if (!is_index_dtype(index->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "index_select(): Expected dtype int32 or int64 for index");
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	if (t->ndim > 0)
		shape[dim] = numel;
	return output_new(call, t, t->ndim, shape, err);
}

/* gather_shape_check (ScatterGatherChecks.h): same rank; index no larger than input apart from dim. */
static ti_status gather_shape_check(ti_shape_ctx *ctx, const ti_meta_tensor *t, int dim,
                                    const ti_meta_tensor *index, ti_error *err)
{
	int ndim = t->ndim ? t->ndim : 1;
	if (ndim != (index->ndim ? index->ndim : 1))
		return TI_FAIL(err, TI_E_SHAPE, "Index tensor must have the same number of dimensions as input tensor");
	for (int i = 0; i < ndim; i++) {
		ti_dim have = t->ndim ? t->shape[i] : ti_dim_int(1), want = index->ndim ? index->shape[i] : ti_dim_int(1);
		if (i != dim && !ti_dim_assume(ctx->sym, want, TI_CMP_LE, have))
			return TI_FAIL(err, TI_E_SHAPE,
			               "Size does not match at dimension %d expected index %s to be smaller than self %s apart "
			               "from dimension %d", i, ti_meta_shape_str(ctx, index), ti_meta_shape_str(ctx, t), dim);
	}
	return TI_OK;
}

/* gather's meta function (TensorAdvancedIndexing.cpp): an int64 index; the result has its shape. */
static ti_status run_gather(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input"), *index = ti_call_tensor(call, "index");
	int dim;
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	if (index->dtype != TI_DT_INT64)
		return TI_FAIL(err, TI_E_SHAPE, "gather(): Expected dtype int64 for index");
	/* pytorch/pytorch#57434: an empty index is not checked */
	if (!dim_is(ti_meta_numel(call->ctx, index), 0) && (st = gather_shape_check(call->ctx, t, dim, index, err)))
		return st;
	return output_new(call, t, index->ndim, index->shape, err);
}

/*
 * take_along_dim (TensorAdvancedIndexing.cpp): with a dim, input and indices
 * broadcast against each other apart from dim, then gather; without one,
 * a gather from the flattened input.
 */
static ti_status run_take_along_dim(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *t = ti_call_tensor(call, "input"), *indices = ti_call_tensor(call, "indices");
	if (ti_call_is_none(call, "dim")) {
		ti_dim numel = ti_meta_numel(ctx, indices);
		if (indices->dtype != TI_DT_INT64)
			return TI_FAIL(err, TI_E_SHAPE, "gather(): Expected dtype int64 for index");
		return output_new(call, t, 1, &numel, err);
	}
	int dim;
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	if (indices->dtype != TI_DT_INT64)
		return TI_FAIL(err, TI_E_SHAPE, "torch.take_along_dim(): dtype of indices should be Long but got %s",
		               ti_dtype_torch_name(indices->dtype));
	if (t->ndim != indices->ndim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
		               "%d dimensions for input, and %d dimensions for indices", t->ndim, indices->ndim);
	ti_dim self_sizes[TI_META_MAX_DIMS], shape[TI_META_MAX_DIMS];
	int n;
	memcpy(self_sizes, t->shape, (size_t)t->ndim * sizeof(*self_sizes));
	if (t->ndim > 0)
		self_sizes[dim] = indices->shape[dim];
	if ((st = ti_broadcast(ctx, t->ndim, self_sizes, indices->ndim, indices->shape, &n, shape, err)))
		return st;
	return output_new(call, t, n, shape, err);
}

/* ---- embeddings ---- */

/* A padding_idx, when given, is a row: within [-num_embeddings, num_embeddings). */
static bool padding_idx_fits(ti_shape_ctx *ctx, const ti_arg *padding_idx, ti_dim num_embeddings)
{
	if (padding_idx->kind != TI_ARG_INT)
		return true;
	ti_dim p = padding_idx->as.dim;
	return ti_dim_assume(ctx->sym, p, TI_CMP_LT, num_embeddings) &&
	       ti_dim_assume(ctx->sym, ti_dim_sub(ctx->sym, ti_dim_int(0), num_embeddings), TI_CMP_LE, p);
}

/* F.embedding, then at::embedding (Embedding.cpp): indices' shape + weight's row. */
static ti_status run_embedding(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input"), *weight = ti_call_tensor(call, "weight");
	/* F.embedding asserts this before anything else; it checks no bound for 0 */
	const ti_arg *padding_idx = ti_call_arg(call, "padding_idx");
	bool zero = padding_idx->kind == TI_ARG_INT && dim_is(padding_idx->as.dim, 0);
	if (weight->ndim > 0 && !zero && !padding_idx_fits(ctx, padding_idx, weight->shape[0]))
		return TI_FAIL(err, TI_E_SHAPE, "Padding_idx must be within num_embeddings");
	if (weight->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "'weight' must be 2-D");
	if (!is_index_dtype(input->dtype))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, "
		               "Int; but got %s instead (while checking arguments for embedding)",
		               tensor_type_name(ctx, input));
	if (input->ndim + 1 > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, input->shape, (size_t)input->ndim * sizeof(*shape));
	shape[input->ndim] = weight->shape[1];
	return output_new(call, weight, input->ndim + 1, shape, err);
}

/* The mode names of F.embedding_bag, in its mode_enum order. */
static const char *const bag_modes[] = {"sum", "mean", "max"};

/* F.embedding_bag's checks before it calls torch.embedding_bag, in its order. */
static ti_status check_bag_arguments(ti_op_call *call, const ti_meta_tensor *input, const ti_meta_tensor *weight,
                                     const ti_meta_tensor *offsets, const ti_meta_tensor *per_sample_weights,
                                     int *mode, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	if (per_sample_weights) {
		bool same = per_sample_weights->ndim == input->ndim;
		for (int i = 0; same && i < input->ndim; i++)
			same = ti_dim_same(per_sample_weights->shape[i], input->shape[i]);
		if (!same)
			return TI_FAIL(err, TI_E_SHAPE, "embedding_bag: If per_sample_weights (%s) is not None, then it must have "
			               "the same shape as the input (%s)", python_size(ctx, per_sample_weights),
			               python_size(ctx, input));
	}
	if (weight->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "weight has to be a 2D Tensor, but got Tensor of dimension %d", weight->ndim);
	if (input->ndim == 2 && offsets)
		return TI_FAIL(err, TI_E_SHAPE, "if input is 2D, then offsets has to be None, as input is treated is a "
		               "mini-batch of fixed length sequences. However, found offsets of type <class 'torch.Tensor'>");
	if (input->ndim == 1 && !offsets)
		return TI_FAIL(err, TI_E_SHAPE, "offsets has to be a 1D Tensor but got None");
	if (input->ndim == 1 && offsets->ndim != 1)
		return TI_FAIL(err, TI_E_SHAPE, "offsets has to be a 1D Tensor");
	if (input->ndim != 1 && input->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "input has to be 1D or 2D Tensor, but got Tensor of dimension %d", input->ndim);
	const char *mode_name = ti_call_str(call, "mode");
	*mode = -1;
	for (int i = 0; i < 3; i++)
		if (!strcmp(mode_name, bag_modes[i]))
			*mode = i;
	if (*mode < 0)
		return TI_FAIL(err, TI_E_SHAPE, "mode has to be one of sum, mean or max");
	if (*mode == 2 && ti_call_bool(call, "scale_grad_by_freq"))
		return TI_FAIL(err, TI_E_SHAPE, "max mode does not support scaling the gradient by the frequency");
	if (*mode == 2 && ti_call_bool(call, "sparse"))
		return TI_FAIL(err, TI_E_SHAPE, "max mode does not support sparse weights");
	if (per_sample_weights && *mode != 0)
		return TI_FAIL(err, TI_E_SHAPE, "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
		               "supported for mode='sum' (got mode='%s'). Please open a feature request on GitHub.", mode_name);
	return TI_OK;
}

/*
 * F.embedding_bag: a 2-D input is a batch of equal bags (offsets made by
 * arange, of the input's dtype); a 1-D input is cut at offsets. Then
 * _embedding_bag's meta function: one row of embedding_dim per bag.
 */
static ti_status run_embedding_bag(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input"), *weight = ti_call_tensor(call, "weight");
	const ti_meta_tensor *offsets = ti_call_tensor(call, "offsets");
	const ti_meta_tensor *per_sample_weights = ti_call_tensor(call, "per_sample_weights");
	/* the deprecated order embedding_bag(weight, input): F.embedding_bag swaps them back */
	if (weight->dtype == TI_DT_INT64 && ti_dtype_is_floating(input->dtype)) {
		const ti_meta_tensor *swap = weight;
		weight = input;
		input = swap;
	}
	int mode;
	ti_status st = check_bag_arguments(call, input, weight, offsets, per_sample_weights, &mode, err);
	if (st)
		return st;
	/* at::native::embedding_bag: padding_idx within the rows, before the meta function's checks */
	const ti_arg *padding_idx = ti_call_arg(call, "padding_idx");
	if (!padding_idx_fits(ctx, padding_idx, weight->shape[0])) {
		char a[64], b[64], c[64];
		ti_dim rows = weight->shape[0];
		return TI_FAIL(err, TI_E_SHAPE, "padding_idx must be within the number of embeddings, -%s through %s, "
		               "but got %s", ti_dim_format(rows, a, sizeof(a)),
		               ti_dim_format(ti_dim_sub(ctx->sym, rows, ti_dim_int(1)), b, sizeof(b)),
		               ti_dim_format(padding_idx->as.dim, c, sizeof(c)));
	}
	ti_dim bags = input->ndim == 2 ? input->shape[0] : offsets->shape[0];
	ti_dtype offsets_dtype = input->ndim == 2 ? input->dtype : offsets->dtype;
	if (!is_index_dtype(input->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "expected indices to be long or int, got torch.%s", ti_dtype_name(input->dtype));
	if (!is_index_dtype(offsets_dtype))
		return TI_FAIL(err, TI_E_SHAPE, "expected offsets to be long or int, got torch.%s", ti_dtype_name(offsets_dtype));
	if (!ti_dtype_is_floating(weight->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "expected weight to be floating point type, got torch.%s",
		               ti_dtype_name(weight->dtype));
	if (ti_call_bool(call, "include_last_offset")) {
		if (!ti_dim_assume(ctx->sym, bags, TI_CMP_GE, ti_dim_int(1)))
			return TI_FAIL(err, TI_E_SHAPE, "include_last_offset: numBags should be at least 1");
		bags = ti_dim_sub(ctx->sym, bags, ti_dim_int(1));
	}
	if (per_sample_weights && per_sample_weights->dtype != weight->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "expected weight (torch.%s) and per_sample_weights (torch.%s) to have same dtype",
		               ti_dtype_name(weight->dtype), ti_dtype_name(per_sample_weights->dtype));
	ti_dim shape[2] = {bags, weight->shape[1]};
	ti_dim gathered = ti_dim_mul(ctx->sym, ti_meta_numel(ctx, input), weight->shape[1]);
	if (per_sample_weights) /* gathered and summed, no matrix product: other tools count nothing */
		ti_call_macs_only(call, gathered);
	else
		ti_call_flops(call, gathered);
	return output_new(call, weight, 2, shape, err);
}

ti_op_rule ti_ops_index[] = {
	{"narrow(Tensor input, int dim, int start, int length)", run_narrow, TI_COUNT_FREE, NULL},
	{"select(Tensor input, int dim, int index)", run_select, TI_COUNT_FREE, NULL},
	{"index_select(Tensor input, int dim, Tensor index)", run_index_select, TI_COUNT_FREE, NULL},
	{"gather(Tensor input, int dim, Tensor index, *, bool sparse_grad=False)", run_gather, TI_COUNT_FREE, NULL},
	{"take_along_dim(Tensor input, Tensor indices, int? dim=None)", run_take_along_dim, TI_COUNT_FREE, NULL},
	{"embedding(Tensor input, Tensor weight, int? padding_idx=None, float? max_norm=None, float norm_type=2.0, "
	 "bool scale_grad_by_freq=False, bool sparse=False)", run_embedding, TI_COUNT_FREE, NULL},
	{"embedding_bag(Tensor input, Tensor weight, Tensor? offsets=None, float? max_norm=None, float norm_type=2.0, "
	 "bool scale_grad_by_freq=False, str mode='mean', bool sparse=False, Tensor? per_sample_weights=None, "
	 "bool include_last_offset=False, int? padding_idx=None)", run_embedding_bag, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
