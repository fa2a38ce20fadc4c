/*
 * embedding.c - torch.nn.Embedding and torch.nn.EmbeddingBag
 * (torch/nn/modules/sparse.py).
 *
 * Each owns one parameter, "weight" [num_embeddings, embedding_dim], of the
 * factory dtype or of _weight's when one is given (frozen when _freeze).
 * Forward is F.embedding / F.embedding_bag (src/ops/index.c) with the
 * constructor's arguments; padding_idx goes there already wrapped, as the
 * constructor stores it.
 */
#include <inttypes.h>

#include "nn/tables.h"

/* The constructor's assert: a padding_idx, when given, is a row, counted from the end when negative. */
static bool padding_idx_fits(const ti_module *m)
{
	const ti_arg *given = ti_module_arg(m, "padding_idx");
	if (given->kind != TI_ARG_INT)
		return true;
	int64_t p = given->as.dim.value, n = ti_module_dim(m, "num_embeddings").value;
	return p == 0 || (p < n && p >= -n);
}

/* padding_idx as the constructor stores it: wrapped into [0, num_embeddings), or None. */
static ti_arg padding_idx_arg(const ti_module *m)
{
	const ti_arg *given = ti_module_arg(m, "padding_idx");
	if (given->kind != TI_ARG_INT || given->as.dim.value >= 0)
		return *given;
	return ti_arg_int(ti_module_dim(m, "num_embeddings").value + given->as.dim.value);
}

/* weight [num_embeddings, embedding_dim]: _weight's shape must be that, and its dtype is kept. */
static ti_status add_weight(ti_module *m, ti_error *err)
{
	int64_t shape[2] = {ti_module_dim(m, "num_embeddings").value, ti_module_dim(m, "embedding_dim").value};
	const ti_arg *given = ti_module_arg(m, "_weight");
	ti_dtype dtype = ti_module_dtype(m);
	if (given->kind == TI_ARG_TENSOR) {
		const ti_meta_tensor *w = given->as.tensor;
		bool same = w->ndim == 2;
		for (int i = 0; same && i < 2; i++)
			same = ti_dim_is_int(w->shape[i]) && w->shape[i].value == shape[i];
		if (!same)
			return TI_FAIL(err, TI_E_SHAPE, "Shape of weight does not match num_embeddings and embedding_dim");
		dtype = w->dtype;
	}
	ti_status st = ti_module_add_param(m, "weight", dtype, 2, shape, err);
	if (st || !ti_module_bool(m, "_freeze"))
		return st;
	m->tensors[m->tensor_count - 1].trainable = false;
	m->tensors[m->tensor_count - 1].tensor->requires_grad = false;
	return TI_OK;
}

/*
 * padding_idx 0 passes the assert whatever num_embeddings is; with no rows,
 * reset_parameters' weight[padding_idx].fill_(0) then raises, on the meta
 * device too.
 */
static ti_status padding_row_exists(const ti_module *m, ti_error *err)
{
	const ti_arg *given = ti_module_arg(m, "padding_idx");
	if (given->kind == TI_ARG_INT && ti_module_dim(m, "num_embeddings").value == 0)
		return TI_FAIL(err, TI_E_SHAPE, "index %" PRId64 " is out of bounds for dimension 0 with size 0",
		               given->as.dim.value);
	return TI_OK;
}

/* Embedding and EmbeddingBag word the padding_idx assert differently ("Padding_idx", "padding_idx"). */
static ti_status init_embedding(ti_module *m, ti_error *err)
{
	if (!padding_idx_fits(m))
		return TI_FAIL(err, TI_E_SHAPE, "Padding_idx must be within num_embeddings");
	if (padding_row_exists(m, err))
		return err->code;
	return add_weight(m, err);
}

static ti_status init_embedding_bag(ti_module *m, ti_error *err)
{
	if (!padding_idx_fits(m))
		return TI_FAIL(err, TI_E_SHAPE, "padding_idx must be within num_embeddings");
	if (padding_row_exists(m, err))
		return err->code;
	return add_weight(m, err);
}

/*
 * Embedding.forward: F.embedding(input, self.weight, self.padding_idx,
 * self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse)
 */
static ti_status forward_embedding(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		*ti_call_arg(call, "input"), ti_arg_tensor(ti_module_tensor_get(m, "weight")), padding_idx_arg(m),
		*ti_module_arg(m, "max_norm"), *ti_module_arg(m, "norm_type"), *ti_module_arg(m, "scale_grad_by_freq"),
		*ti_module_arg(m, "sparse"),
	};
	return ti_call_forward(call, "embedding", args, 7, err);
}

/*
 * EmbeddingBag.forward: F.embedding_bag(input, self.weight, offsets,
 * self.max_norm, self.norm_type, self.scale_grad_by_freq, self.mode,
 * self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)
 */
static ti_status forward_embedding_bag(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		*ti_call_arg(call, "input"), ti_arg_tensor(ti_module_tensor_get(m, "weight")), *ti_call_arg(call, "offsets"),
		*ti_module_arg(m, "max_norm"), *ti_module_arg(m, "norm_type"), *ti_module_arg(m, "scale_grad_by_freq"),
		*ti_module_arg(m, "mode"), *ti_module_arg(m, "sparse"), *ti_call_arg(call, "per_sample_weights"),
		*ti_module_arg(m, "include_last_offset"), padding_idx_arg(m),
	};
	return ti_call_forward(call, "embedding_bag", args, 11, err);
}

ti_module_rule ti_nn_embedding[] = {
	{"Embedding(int num_embeddings, int embedding_dim, int? padding_idx=None, float? max_norm=None, "
	 "float norm_type=2.0, bool scale_grad_by_freq=False, bool sparse=False, Tensor? _weight=None, "
	 "bool _freeze=False, str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input)", init_embedding, forward_embedding, TI_COUNT_FREE, NULL, NULL},
	{"EmbeddingBag(int num_embeddings, int embedding_dim, float? max_norm=None, float norm_type=2.0, "
	 "bool scale_grad_by_freq=False, str mode='mean', bool sparse=False, Tensor? _weight=None, "
	 "bool include_last_offset=False, int? padding_idx=None, str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input, Tensor? offsets=None, Tensor? per_sample_weights=None)", init_embedding_bag,
	 forward_embedding_bag, TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
