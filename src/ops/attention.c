/*
 * attention.c - scaled_dot_product_attention, as PyTorch 2.5 computes it on
 * the meta device: validate_sdpa_input, then the math path
 * _scaled_dot_product_attention_math (aten/src/ATen/native/transformers/
 * attention.cpp), whose two at::matmul calls give the shape rules and the
 * messages: batch dims broadcast, a 2-d operand is folded into a matrix.
 *
 * Counting, per batch element (the product of the output's batch dims, heads
 * included): MACs = P * (E + Ev), for Q @ K^T and for the weights @ V, where
 * P = L * S scores, or (L * S) // 2 when is_causal (half of them are masked);
 * FLOPs add 4 per score (scaling 1, softmax 3: exp, sum, divide) and 1 more
 * per score when a mask (attn_mask, or the causal one) is added.
 */
#include <stdio.h>
#include <string.h>

#include "ops/tables.h"

enum { FLOPS_PER_SCORE = 4 };

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

/* How c10 prints a caffe2::TypeMeta in messages: the C++ type name. */
static const char *type_meta_name(ti_dtype dt)
{
	static const struct {
		ti_dtype dtype;
		const char *name;
	} names[] = {
		{TI_DT_FLOAT32, "float"}, {TI_DT_FLOAT64, "double"}, {TI_DT_FLOAT16, "c10::Half"},
		{TI_DT_BFLOAT16, "c10::BFloat16"}, {TI_DT_INT64, "long int"}, {TI_DT_INT32, "int"},
		{TI_DT_INT16, "short int"}, {TI_DT_INT8, "signed char"}, {TI_DT_UINT8, "unsigned char"},
		{TI_DT_BOOL, "bool"}, {TI_DT_COMPLEX32, "c10::complex<c10::Half>"},
		{TI_DT_COMPLEX64, "c10::complex<float>"}, {TI_DT_COMPLEX128, "c10::complex<double>"},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].dtype == dt)
			return names[i].name;
	return ti_dtype_name(dt);
}

static ti_dim product(ti_shape_ctx *ctx, const ti_dim *shape, int n)
{
	ti_dim p = ti_dim_int(1);
	for (int i = 0; i < n; i++)
		p = ti_dim_mul(ctx->sym, p, shape[i]);
	return p;
}

/* at::mm's check. */
static ti_status check_mm(ti_shape_ctx *ctx, ti_dim rows, ti_dim inner1, ti_dim inner2, ti_dim cols, ti_error *err)
{
	if (ti_dim_assume(ctx->sym, inner1, TI_CMP_EQ, inner2))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 shapes cannot be multiplied (%sx%s and %sx%s)", dim_text(ctx, rows),
	               dim_text(ctx, inner1), dim_text(ctx, inner2), dim_text(ctx, cols));
}

/*
 * The shape of at::matmul(a, b) for operands of rank 2 or more (LinearAlgebra.cpp
 * _matmul_impl): two matrices go to mm; a batched a with a matrix b is folded
 * to one mm (the math path's operands are fresh, foldable tensors); otherwise
 * the batch dims broadcast (infer_size) and bmm checks the inner sizes.
 */
static ti_status matmul_shape(ti_shape_ctx *ctx, int na, const ti_dim *a, int nb, const ti_dim *b, int *nout,
                              ti_dim *out, ti_error *err)
{
	ti_dim n = a[na - 2], m1 = a[na - 1], m2 = b[nb - 2], p = b[nb - 1];
	ti_status st;
	if (nb == 2) {
		ti_dim rows = product(ctx, a, na - 1);
		if ((st = check_mm(ctx, rows, m1, m2, p, err)))
			return st;
		memcpy(out, a, (size_t)(na - 1) * sizeof(ti_dim));
		out[na - 1] = p;
		*nout = na;
		return TI_OK;
	}
	int nbatch;
	if ((st = ti_broadcast(ctx, na - 2, a, nb - 2, b, &nbatch, out, err)))
		return st;
	if (!ti_dim_assume(ctx->sym, m1, TI_CMP_EQ, m2)) {
		const char *batch = dim_text(ctx, product(ctx, out, nbatch));
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected size for first two dimensions of batch2 tensor to be: [%s, %s] but got: [%s, %s].",
		               batch, dim_text(ctx, m1), batch, dim_text(ctx, m2));
	}
	out[nbatch] = n;
	out[nbatch + 1] = p;
	*nout = nbatch + 2;
	return TI_OK;
}

/* validate_sdpa_input: one dtype for query, key and value; rank 2 or more; a bool, float or query-typed mask. */
static ti_status validate_input(const ti_meta_tensor *q, const ti_meta_tensor *k, const ti_meta_tensor *v,
                                const ti_meta_tensor *mask, ti_error *err)
{
	if (q->dtype != k->dtype || q->dtype != v->dtype)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected query, key, and value to have the same dtype, but got query.dtype: %s key.dtype: %s "
		               "and value.dtype: %s instead.", type_meta_name(q->dtype), type_meta_name(k->dtype),
		               type_meta_name(v->dtype));
	if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: %d "
		               "key.dim: %d and value.dim: %d instead.", q->ndim, k->ndim, v->ndim);
	if (mask && mask->dtype != TI_DT_BOOL && mask->dtype != TI_DT_FLOAT32 && mask->dtype != q->dtype)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
		               "attn_mask.dtype: %s and  query.dtype: %s instead.", type_meta_name(mask->dtype),
		               type_meta_name(q->dtype));
	return TI_OK;
}

/* q_num_heads % heads == 0; a symbolic count can only be decided equal. */
static bool heads_divide(ti_symctx *s, ti_dim query_heads, ti_dim heads)
{
	if (!ti_dim_is_int(heads))
		return ti_dim_assume(s, query_heads, TI_CMP_EQ, heads);
	return heads.value > 0 && ti_dim_assume(s, ti_dim_mod(s, query_heads, heads), TI_CMP_EQ, ti_dim_int(0));
}

/*
 * pre_process_group_query_attention_input: with enable_gqa, key and value
 * heads (dim -3) are repeated up to the query's when they divide it.
 */
static ti_status expand_heads(ti_shape_ctx *ctx, const ti_meta_tensor *q, ti_dim *k_shape, int nk, ti_dim *v_shape,
                              int nv, ti_error *err)
{
	int at;
	ti_status st;
	const int ranks[3] = {q->ndim, nk, nv};
	for (int i = 0; i < 3; i++)
		if ((st = ti_wrap_dim(-3, ranks[i], &at, err)))
			return st;
	ti_dim hq = q->shape[q->ndim - 3], *hk = &k_shape[nk - 3], *hv = &v_shape[nv - 3];
	if (ti_dim_same(hq, *hk) && ti_dim_same(*hk, *hv))
		return TI_OK;
	if (!heads_divide(ctx->sym, hq, *hk) || !heads_divide(ctx->sym, hq, *hv))
		return TI_FAIL(err, TI_E_SHAPE, "Number of heads in key and value must divide the number of heads in ");
	*hk = hq;
	*hv = hq;
	return TI_OK;
}

/* attn.add_(mask): the mask broadcasts to the scores' shape without growing it. */
static ti_status check_mask(ti_shape_ctx *ctx, int ns, const ti_dim *scores, const ti_meta_tensor *mask, ti_error *err)
{
	ti_dim shape[TI_META_MAX_DIMS];
	int n;
	ti_status st = ti_broadcast(ctx, ns, scores, mask->ndim, mask->shape, &n, shape, err);
	if (st)
		return st;
	bool same = n == ns;
	for (int i = 0; same && i < n; i++)
		same = ti_dim_same(shape[i], scores[i]);
	if (same)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
	               shape_text(ctx, ns, scores), shape_text(ctx, n, shape));
}

static void count_attention(ti_op_call *call, int n, const ti_dim *out, ti_dim l, ti_dim s, ti_dim e, ti_dim ev,
                            bool causal, bool masked)
{
	ti_symctx *sym = call->ctx->sym;
	ti_dim scores = ti_dim_mul(sym, l, s);
	ti_dim full = ti_dim_mul(sym, ti_dim_mul(sym, scores, product(call->ctx, out, n - 2)), ti_dim_add(sym, e, ev));
	if (causal)
		scores = ti_dim_floordiv(sym, scores, ti_dim_int(2));
	scores = ti_dim_mul(sym, scores, product(call->ctx, out, n - 2));
	/* FlopCounterMode's sdpa rule counts every score, causal or not; fvcore has no rule for the op */
	ti_call_macs_only(call, ti_dim_mul(sym, scores, ti_dim_add(sym, e, ev)));
	ti_call_count_as(call, ti_dim_mul(sym, full, ti_dim_int(2)), ti_dim_int(0));
	ti_call_flops(call, ti_dim_mul(sym, scores, ti_dim_int(FLOPS_PER_SCORE + masked)));
}

static ti_status scaled_dot_product_attention(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *q = ti_call_tensor(call, "query"), *k = ti_call_tensor(call, "key"),
	                     *v = ti_call_tensor(call, "value"), *mask = ti_call_tensor(call, "attn_mask");
	bool causal = ti_call_bool(call, "is_causal");
	ti_status st = validate_input(q, k, v, mask, err);
	if (st)
		return st;
	if (causal && mask)
		return TI_FAIL(err, TI_E_SHAPE,
		               "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
	ti_dim k_shape[TI_META_MAX_DIMS], v_shape[TI_META_MAX_DIMS];
	memcpy(k_shape, k->shape, (size_t)k->ndim * sizeof(ti_dim));
	memcpy(v_shape, v->shape, (size_t)v->ndim * sizeof(ti_dim));
	if (ti_call_bool(call, "enable_gqa") && (st = expand_heads(ctx, q, k_shape, k->ndim, v_shape, v->ndim, err)))
		return st;
	/* scores = query @ key.transpose(-2, -1) */
	ti_dim key_t[TI_META_MAX_DIMS], scores[TI_META_MAX_DIMS], out[TI_META_MAX_DIMS];
	memcpy(key_t, k_shape, (size_t)k->ndim * sizeof(ti_dim));
	key_t[k->ndim - 2] = k_shape[k->ndim - 1];
	key_t[k->ndim - 1] = k_shape[k->ndim - 2];
	int ns, nout;
	if ((st = matmul_shape(ctx, q->ndim, q->shape, k->ndim, key_t, &ns, scores, err)))
		return st;
	if (mask && (st = check_mask(ctx, ns, scores, mask, err)))
		return st;
	if ((st = matmul_shape(ctx, ns, scores, v->ndim, v_shape, &nout, out, err)))
		return st;
	count_attention(call, nout, out, scores[ns - 2], scores[ns - 1], q->shape[q->ndim - 1], v_shape[v->ndim - 1],
	                causal, causal || mask);
	return ti_call_output_tensor(call, ti_meta_new(ctx, q->dtype, nout, out), err);
}

ti_op_rule ti_ops_attention[] = {
	{"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
	 "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False)",
	 scaled_dot_product_attention, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
