/*
 * attention.c - MultiheadAttention (torch/nn/modules/activation.py, and
 * torch/nn/functional.py multi_head_attention_forward, PyTorch 2.x).
 *
 * Parameters as PyTorch registers them: in_proj_weight [3E, E] when kdim and
 * vdim are E, else q_proj_weight, k_proj_weight, v_proj_weight; in_proj_bias
 * [3E]; bias_k and bias_v [1, 1, E] with add_bias_kv; then the child
 * out_proj's weight and bias, declared here as "out_proj.weight" and
 * "out_proj.bias", the state_dict names.
 *
 * Forward runs in eval mode and follows the functional's checks in order.
 * With need_weights it returns the attention weights, averaged over heads
 * (N, L, S) or per head (N, num_heads, L, S), without N when unbatched;
 * otherwise None. S counts the bias_k and zero-attention columns.
 *
 * Counting: MACs L*N*E*E (query projection) + S*N*kdim*E + S*N*vdim*E (key
 * and value projections) + L*N*E*E (output projection), bias additions not
 * counted; the attention itself is counted by scaled_dot_product_attention
 * on (N, num_heads, L, E/num_heads) heads, causal only where PyTorch takes
 * that path (need_weights=False, no key_padding_mask).
 */
#include <string.h>

#include "nn/tables.h"

typedef struct mha_config {
	int64_t embed, heads, kdim, vdim;
	bool packed; /* one in_proj_weight: kdim == vdim == embed_dim */
	bool bias, batch_first;
} mha_config;

static int64_t dim_or(const ti_module *m, const char *name, int64_t fallback)
{
	return ti_module_is_none(m, name) ? fallback : ti_module_dim(m, name).value;
}

static mha_config config_of(const ti_module *m)
{
	mha_config c = {
		.embed = ti_module_dim(m, "embed_dim").value,
		.heads = ti_module_dim(m, "num_heads").value,
		.bias = ti_module_bool(m, "bias"),
		.batch_first = ti_module_bool(m, "batch_first"),
	};
	c.kdim = dim_or(m, "kdim", c.embed);
	c.vdim = dim_or(m, "vdim", c.embed);
	c.packed = c.kdim == c.embed && c.vdim == c.embed;
	return c;
}

/* ---- construction ---- */

static ti_status init_mha(ti_module *m, ti_error *err)
{
	mha_config c = config_of(m);
	if (c.embed <= 0 || c.heads <= 0)
		return TI_FAIL(err, TI_E_SHAPE,
		               "embed_dim and num_heads must be greater than 0, got embed_dim=%lld and num_heads=%lld instead",
		               (long long)c.embed, (long long)c.heads);
	if (c.embed % c.heads)
		return TI_FAIL(err, TI_E_SHAPE, "embed_dim must be divisible by num_heads");
	int64_t e = c.embed;
	bool bias_kv = ti_module_bool(m, "add_bias_kv");
	const int64_t packed[2] = {3 * e, e}, square[2] = {e, e}, key[2] = {e, c.kdim}, value[2] = {e, c.vdim},
	              packed_bias[1] = {3 * e}, bias_kv_shape[3] = {1, 1, e};
	/* in registration order; out_proj's come last, as the child's in the state_dict */
	const struct {
		const char *name;
		bool wanted;
		int ndim;
		const int64_t *shape;
	} params[] = {
		{"in_proj_weight", c.packed, 2, packed}, {"q_proj_weight", !c.packed, 2, square},
		{"k_proj_weight", !c.packed, 2, key},    {"v_proj_weight", !c.packed, 2, value},
		{"in_proj_bias", c.bias, 1, packed_bias}, {"bias_k", bias_kv, 3, bias_kv_shape},
		{"bias_v", bias_kv, 3, bias_kv_shape},   {"out_proj.weight", true, 2, square},
		{"out_proj.bias", c.bias, 1, square},
	};
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		if (!params[i].wanted)
			continue;
		ti_status st = ti_module_add_param(m, params[i].name, ti_module_dtype(m), params[i].ndim, params[i].shape, err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* ---- messages ---- */

static const char *dim_text(ti_shape_ctx *ctx, ti_dim d)
{
	const char *s = ti_dim_str(ctx->sym, d);
	return s ? s : "?";
}

/* What Python prints for a torch.Size. */
static const char *torch_size_text(ti_shape_ctx *ctx, int n, const ti_dim *dims)
{
	const char *shape = ti_shape_str(ctx, n, dims);
	const char *s = shape ? ti_arena_printf(ctx->arena, "torch.Size(%s)", shape) : NULL;
	return s ? s : "torch.Size([?])";
}

static bool same_sizes(ti_shape_ctx *ctx, int n, const ti_dim *a, const ti_dim *b)
{
	for (int i = 0; i < n; i++)
		if (!ti_dim_assume(ctx->sym, a[i], TI_CMP_EQ, b[i]))
			return false;
	return true;
}

/* ---- forward ---- */

/* The forward's arguments, and their shapes once batched and sequence-first. */
typedef struct mha_inputs {
	const ti_meta_tensor *query, *key, *value, *key_padding_mask, *attn_mask;
	bool batched, need_weights, causal;
	ti_dim q[3], k[3], v[3]; /* (L, N, E), (S, N, kdim), (S, N, vdim) */
	ti_dim kpm[2];           /* (N, S) */
} mha_inputs;

/* _canonical_mask: masks are bool or floating. */
static ti_status check_mask_dtype(const ti_meta_tensor *mask, const char *name, ti_error *err)
{
	if (!mask || mask->dtype == TI_DT_BOOL || ti_dtype_is_floating(mask->dtype))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "only bool and floating types of %s are supported", name);
}

/* _mha_shape_check: batched 3-d or unbatched 2-d inputs, and masks of matching ranks. */
static ti_status check_ranks(ti_shape_ctx *ctx, const mha_inputs *in, int64_t heads, ti_error *err)
{
	const ti_meta_tensor *q = in->query, *k = in->key, *v = in->value, *kpm = in->key_padding_mask,
	                     *mask = in->attn_mask;
	if (q->ndim != 2 && q->ndim != 3)
		return TI_FAIL(err, TI_E_SHAPE, "query should be unbatched 2D or batched 3D tensor but received %d-D query tensor",
		               q->ndim);
	int rank = q->ndim;
	const char *what = rank == 3 ? "batched (3-D)" : "unbatched (2-D)";
	if (k->ndim != rank || v->ndim != rank)
		return TI_FAIL(err, TI_E_SHAPE,
		               "For %s `query`, expected `key` and `value` to be %d-D but found %d-D and %d-D tensors "
		               "respectively", what, rank, k->ndim, v->ndim);
	if (kpm && kpm->ndim != rank - 1)
		return TI_FAIL(err, TI_E_SHAPE,
		               "For %s `query`, expected `key_padding_mask` to be `None` or %d-D but found %d-D tensor instead",
		               what, rank - 1, kpm->ndim);
	if (mask && mask->ndim != 2 && mask->ndim != 3)
		return TI_FAIL(err, TI_E_SHAPE,
		               "For %s `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found %d-D tensor instead",
		               what, mask->ndim);
	if (rank == 2 && mask && mask->ndim == 3) {
		ti_dim want[3] = {ti_dim_int(heads), q->shape[0], k->shape[0]};
		if (!same_sizes(ctx, 3, mask->shape, want))
			return TI_FAIL(err, TI_E_SHAPE, "Expected `attn_mask` shape to be (%lld, %s, %s) but got %s", (long long)heads,
			               dim_text(ctx, want[1]), dim_text(ctx, want[2]), torch_size_text(ctx, 3, mask->shape));
	}
	return TI_OK;
}

/* (L, N, E) from a batched (L, N, E), batch_first (N, L, E) or unbatched (L, E) tensor. */
static void sequence_first(const ti_meta_tensor *t, bool batched, bool batch_first, ti_dim out[3])
{
	if (!batched) {
		out[0] = t->shape[0];
		out[1] = ti_dim_int(1);
		out[2] = t->shape[1];
		return;
	}
	memcpy(out, t->shape, 3 * sizeof(ti_dim));
	if (batch_first) {
		out[0] = t->shape[1];
		out[1] = t->shape[0];
	}
}

static ti_status gather_inputs(ti_op_call *call, const mha_config *c, mha_inputs *in, ti_error *err)
{
	memset(in, 0, sizeof(*in));
	in->query = ti_call_tensor(call, "query");
	in->key = ti_call_tensor(call, "key");
	in->value = ti_call_tensor(call, "value");
	in->key_padding_mask = ti_call_tensor(call, "key_padding_mask");
	in->attn_mask = ti_call_tensor(call, "attn_mask");
	in->need_weights = ti_call_bool(call, "need_weights");
	in->causal = ti_call_bool(call, "is_causal");
	ti_status st = check_mask_dtype(in->key_padding_mask, "key_padding_mask", err);
	if (!st)
		st = check_mask_dtype(in->attn_mask, "attn_mask", err);
	if (st)
		return st;
	in->batched = in->query->ndim == 3;
	/* batch_first: query, key and value are transposed (1, 0) before anything is checked */
	const ti_meta_tensor *qkv[3] = {in->query, in->key, in->value};
	int at;
	for (int i = 0; c->batch_first && in->batched && i < 3; i++)
		if ((st = ti_wrap_dim(1, qkv[i]->ndim, &at, err)))
			return st;
	if ((st = check_ranks(call->ctx, in, c->heads, err)))
		return st;
	sequence_first(in->query, in->batched, c->batch_first, in->q);
	sequence_first(in->key, in->batched, c->batch_first, in->k);
	sequence_first(in->value, in->batched, c->batch_first, in->v);
	if (in->key_padding_mask) { /* unbatched: unsqueezed at 0 */
		const ti_meta_tensor *kpm = in->key_padding_mask;
		in->kpm[0] = in->batched ? kpm->shape[0] : ti_dim_int(1);
		in->kpm[1] = kpm->shape[kpm->ndim - 1];
	}
	return TI_OK;
}

/* mm's dtype check, for input @ weight^T. */
static ti_status check_dtype(const ti_meta_tensor *input, ti_dtype weight, ti_error *err)
{
	if (input->dtype == weight)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 must have the same dtype, but got %s and %s",
	               ti_dtype_torch_name(input->dtype), ti_dtype_torch_name(weight));
}

/*
 * The in-projection: _in_projection_packed runs linear on the key with the
 * key (and, when key is value, the value) rows of in_proj_weight, so a
 * wrong key size is mm's error; _in_projection asserts the weights' shapes.
 */
static ti_status check_projection(ti_shape_ctx *ctx, const ti_module *m, const mha_config *c, const mha_inputs *in,
                                  ti_error *err)
{
	ti_symctx *s = ctx->sym;
	ti_dim e = ti_dim_int(c->embed);
	ti_status st;
	if (!c->packed) {
		static const char *const names[2] = {"key", "value"};
		const ti_dim *sizes[2] = {in->k, in->v};
		const int64_t dims[2] = {c->kdim, c->vdim};
		for (int i = 0; i < 2; i++)
			if (!ti_dim_assume(s, sizes[i][2], TI_CMP_EQ, ti_dim_int(dims[i])))
				return TI_FAIL(err, TI_E_SHAPE, "expecting %s weights shape of (%lld, %s), but got torch.Size([%lld, %lld])",
				               names[i], (long long)c->embed, dim_text(ctx, sizes[i][2]), (long long)c->embed,
				               (long long)dims[i]);
	} else if (in->query != in->key && !ti_dim_assume(s, in->k[2], TI_CMP_EQ, e)) {
		int64_t rows = in->key == in->value ? 2 * c->embed : c->embed;
		return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 shapes cannot be multiplied (%sx%s and %lldx%lld)",
		               dim_text(ctx, ti_dim_mul(s, in->k[0], in->k[1])), dim_text(ctx, in->k[2]), (long long)c->embed,
		               (long long)rows);
	}
	const ti_meta_tensor *weight = ti_module_tensor_get(m, c->packed ? "in_proj_weight" : "q_proj_weight");
	const ti_meta_tensor *operands[3] = {in->query, in->key, in->value};
	for (int i = 0; i < 3; i++)
		if ((st = check_dtype(operands[i], weight->dtype, err)))
			return st;
	return TI_OK;
}

/* The 2-d attn_mask is (L, S), the 3-d one (N * num_heads, L, S). */
static ti_status check_attn_mask(ti_shape_ctx *ctx, const mha_config *c, const mha_inputs *in, ti_error *err)
{
	const ti_meta_tensor *mask = in->attn_mask;
	if (!mask)
		return TI_OK;
	ti_dim length = in->q[0], source = in->k[0];
	ti_dim want[3] = {ti_dim_mul(ctx->sym, in->q[1], ti_dim_int(c->heads)), length, source};
	int skip = mask->ndim == 2;
	if (same_sizes(ctx, mask->ndim, mask->shape, want + skip))
		return TI_OK;
	const char *shape = torch_size_text(ctx, mask->ndim, mask->shape);
	if (skip)
		return TI_FAIL(err, TI_E_SHAPE, "The shape of the 2D attn_mask is %s, but should be (%s, %s).", shape,
		               dim_text(ctx, length), dim_text(ctx, source));
	return TI_FAIL(err, TI_E_SHAPE, "The shape of the 3D attn_mask is %s, but should be (%s, %s, %s).", shape,
	               dim_text(ctx, want[0]), dim_text(ctx, length), dim_text(ctx, source));
}

/*
 * bias_k.repeat(1, bsz, 1) is concatenated to the key (one key more), which
 * is then viewed as (S, N * num_heads, head_dim): its batch must be the
 * query's. add_zero_attn adds another key. The key padding mask, padded
 * alike, must then be (N, S). *source is the final S.
 */
static ti_status check_keys(ti_shape_ctx *ctx, const ti_module *m, const mha_config *c, const mha_inputs *in,
                            ti_dim *source, ti_error *err)
{
	ti_symctx *s = ctx->sym;
	ti_dim batch = in->q[1];
	int bias_kv = ti_module_tensor_get(m, "bias_k") != NULL;
	ti_dim keys = ti_dim_add(s, in->k[0], ti_dim_int(bias_kv));
	if (bias_kv && !ti_dim_assume(s, in->k[1], TI_CMP_EQ, batch))
		return TI_FAIL(err, TI_E_SHAPE,
		               "Sizes of tensors must match except in dimension 0. Expected size %s but got size %s for tensor "
		               "number 1 in the list.", dim_text(ctx, in->k[1]), dim_text(ctx, batch));
	if (!ti_dim_assume(s, in->k[1], TI_CMP_EQ, batch))
		return TI_FAIL(err, TI_E_SHAPE, "shape '[%s, %s, %lld]' is invalid for input of size %s", dim_text(ctx, keys),
		               dim_text(ctx, ti_dim_mul(s, batch, ti_dim_int(c->heads))), (long long)(c->embed / c->heads),
		               dim_text(ctx, ti_dim_mul(s, ti_dim_mul(s, keys, in->k[1]), ti_dim_int(c->embed))));
	int extra = bias_kv + ti_module_bool(m, "add_zero_attn");
	*source = ti_dim_add(s, in->k[0], ti_dim_int(extra));
	if (!in->key_padding_mask)
		return TI_OK;
	const ti_dim got[2] = {in->kpm[0], ti_dim_add(s, in->kpm[1], ti_dim_int(extra))}, want[2] = {batch, *source};
	for (int i = 0; i < 2; i++)
		if (!ti_dim_assume(s, got[i], TI_CMP_EQ, want[i]))
			return TI_FAIL(err, TI_E_SHAPE, "Expected key_padded_mask.shape[%d] to be %s, but got %s", i,
			               dim_text(ctx, want[i]), dim_text(ctx, got[i]));
	return TI_OK;
}

/*
 * multi_head_attention_forward up to the attention, in its order: the
 * is_causal hint, the embedding size, key against value, the projection,
 * the attention mask, then the keys.
 */
static ti_status check_shapes(ti_shape_ctx *ctx, const ti_module *m, const mha_config *c, mha_inputs *in,
                              ti_dim *source, ti_error *err)
{
	if (in->causal && !in->attn_mask)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
		               "`generate_square_subsequent_mask` to create this mask.");
	if (in->causal && !in->key_padding_mask && !in->need_weights)
		in->attn_mask = NULL; /* SDPA applies the causal mask itself */
	else if (in->key_padding_mask)
		in->causal = false; /* merged with the padding mask, it is no longer causal */
	if (!ti_dim_assume(ctx->sym, in->q[2], TI_CMP_EQ, ti_dim_int(c->embed)))
		return TI_FAIL(err, TI_E_SHAPE, "was expecting embedding dimension of %lld, but got %s", (long long)c->embed,
		               dim_text(ctx, in->q[2]));
	int compared = c->packed ? 3 : 2;
	if (!same_sizes(ctx, compared, in->k, in->v))
		return TI_FAIL(err, TI_E_SHAPE, c->packed ? "key shape %s does not match value shape %s"
		                                           : "key's sequence and batch dims %s do not match value's %s",
		               torch_size_text(ctx, compared, in->k), torch_size_text(ctx, compared, in->v));
	ti_status st = check_projection(ctx, m, c, in, err);
	if (!st)
		st = check_attn_mask(ctx, c, in, err);
	return st ? st : check_keys(ctx, m, c, in, source, err);
}

/*
 * The attention proper, as scaled_dot_product_attention on the heads
 * (N, num_heads, L, E / num_heads) with the merged mask: its rule counts it.
 */
static ti_status count_attention(ti_op_call *call, const mha_config *c, const mha_inputs *in, ti_dim source,
                                 ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_dtype dtype = in->query->dtype;
	ti_dim heads = ti_dim_int(c->heads), head_dim = ti_dim_int(c->embed / c->heads), batch = in->q[1];
	ti_dim q_shape[4] = {batch, heads, in->q[0], head_dim}, kv_shape[4] = {batch, heads, source, head_dim};
	ti_dim mask_shape[4] = {batch, heads, in->q[0], source};
	bool masked = in->attn_mask || in->key_padding_mask;
	const ti_meta_tensor *q = ti_meta_new(ctx, dtype, 4, q_shape), *kv = ti_meta_new(ctx, dtype, 4, kv_shape);
	const ti_meta_tensor *mask = masked ? ti_meta_new(ctx, dtype, 4, mask_shape) : NULL;
	if (!q || !kv || (masked && !mask))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the attention heads");
	ti_arg args[] = {
		ti_arg_tensor(q), ti_arg_tensor(kv), ti_arg_tensor(kv), mask ? ti_arg_tensor(mask) : ti_arg_none(),
		ti_arg_float(0.0), ti_arg_bool(in->causal && !in->need_weights),
	};
	ti_op_call result;
	return ti_call_op(call, "scaled_dot_product_attention", args, (int)(sizeof(args) / sizeof(args[0])), &result, err);
}

static void count_projections(ti_op_call *call, const mha_config *c, const mha_inputs *in)
{
	ti_symctx *s = call->ctx->sym;
	ti_dim e = ti_dim_int(c->embed);
	ti_dim queries = ti_dim_mul(s, in->q[0], in->q[1]), keys = ti_dim_mul(s, in->k[0], in->k[1]);
	ti_dim inputs = ti_dim_add(s, ti_dim_mul(s, queries, ti_dim_int(2 * c->embed)),
	                           ti_dim_mul(s, keys, ti_dim_add(s, in->k[2], in->v[2])));
	ti_call_macs(call, ti_dim_mul(s, inputs, e));
}

static ti_status add_outputs(ti_op_call *call, const mha_config *c, const mha_inputs *in, ti_dim source, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_dtype dtype = in->query->dtype;
	ti_dim length = in->q[0], batch = in->q[1], e = ti_dim_int(c->embed);
	ti_meta_tensor *out;
	if (!in->batched) {
		out = ti_meta_new(ctx, dtype, 2, (ti_dim[]){length, e});
	} else {
		out = ti_meta_new(ctx, dtype, 3, (ti_dim[]){length, batch, e});
		if (out && c->batch_first) /* attn_output.transpose(1, 0) */
			out = ti_meta_view(ctx, out, 3, (ti_dim[]){batch, length, e},
			                   (ti_dim[]){out->stride[1], out->stride[0], out->stride[2]});
	}
	ti_status st = ti_call_output_tensor(call, out, err);
	if (st)
		return st;
	if (!in->need_weights)
		return ti_call_output(call, ti_arg_none(), err);
	/* (N, num_heads, L, S), averaged over heads or not, without N when unbatched */
	ti_dim weights[4] = {batch, ti_dim_int(c->heads), length, source};
	bool average = ti_call_bool(call, "average_attn_weights");
	if (average)
		memmove(weights + 1, weights + 2, 2 * sizeof(ti_dim));
	int n = average ? 3 : 4, skip = !in->batched;
	return ti_call_output_tensor(call, ti_meta_new(ctx, dtype, n - skip, weights + skip), err);
}

static ti_status mha_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	mha_config c = config_of(m);
	mha_inputs in;
	if (ti_module_float(m, "dropout") > 0) /* attention dropout: same shapes, more memory in training */
		call->ctx->mode_dependent = true;
	ti_dim source;
	ti_status st = gather_inputs(call, &c, &in, err);
	if (!st)
		st = check_shapes(call->ctx, m, &c, &in, &source, err);
	if (!st)
		st = count_attention(call, &c, &in, source, err);
	if (st)
		return st;
	count_projections(call, &c, &in);
	return add_outputs(call, &c, &in, source, err);
}

ti_module_rule ti_nn_attention[] = {
	{"MultiheadAttention(int embed_dim, int num_heads, float dropout=0.0, bool bias=True, bool add_bias_kv=False, "
	 "bool add_zero_attn=False, int? kdim=None, int? vdim=None, bool batch_first=False, str? device=None, "
	 "ScalarType? dtype=None)",
	 "forward(Tensor query, Tensor key, Tensor value, Tensor? key_padding_mask=None, bool need_weights=True, "
	 "Tensor? attn_mask=None, bool average_attn_weights=True, bool is_causal=False)",
	 init_mha, mha_forward, TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
