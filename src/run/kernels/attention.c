/*
 * attention.c - scaled_dot_product_attention and the MultiheadAttention
 * module: per (batch, head), scores = scale * Q K^T by sgemm (Q and K read
 * in place through their leading dimensions, no head split copies), the
 * mask (bool: True attends; float: added; is_causal: the upper triangle
 * masked), a stable softmax per row, then P V by sgemm into the output's
 * layout. Dropout on the weights only at p = 0 (eval).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* A mask read through broadcast strides over [batch..., L, S]. */
typedef struct mask_view {
	const rt_tensor *t;
	int nd;                       /* of the scores */
	int64_t stride[RT_MAX_DIMS];
} mask_view;

typedef struct head {
	const float *q, *k, *v;       /* this head's first row */
	int64_t ldq, ldk, ldv;
	float *o;
	int64_t ldo;
	int64_t mask_offset;          /* of this batch in the mask */
	float *weights;               /* need_weights: [L, S] accumulated (divided by heads later), or NULL */
} head;

typedef struct attention {
	int64_t L, S, E, Ev;
	float scale;
	bool causal;
	const mask_view *mask;
} attention;

/* One head; scores is [L, S] scratch. */
static void attend(const attention *a, const head *h, float *scores)
{
	int64_t L = a->L, S = a->S;
	rt_sgemm(false, true, L, S, a->E, a->scale, h->q, h->ldq, h->k, h->ldk, 0.0f, scores, S);
	const mask_view *m = a->mask;
	for (int64_t i = 0; i < L; i++) {
		float *row = scores + i * S;
		for (int64_t j = 0; j < S; j++) {
			if (a->causal && j > i)
				row[j] = -INFINITY;
			if (m && m->t) {
				int64_t off = h->mask_offset + i * m->stride[m->nd - 2] + j * m->stride[m->nd - 1];
				if (m->t->dtype == TI_DT_BOOL) {
					if (!rt_bool(m->t)[off])
						row[j] = -INFINITY;
				} else {
					row[j] += rt_f32(m->t)[off];
				}
			}
		}
		float mx = -INFINITY;
		for (int64_t j = 0; j < S; j++)
			if (row[j] > mx)
				mx = row[j];
		double sum = 0;
		for (int64_t j = 0; j < S; j++) {
			float e = mx == -INFINITY ? 0.0f : expf(row[j] - mx);
			row[j] = e;
			sum += e;
		}
		/* a row masked out entirely: PyTorch's softmax gives NaN there */
		float inv = sum > 0 ? (float)(1.0 / sum) : NAN;
		for (int64_t j = 0; j < S; j++)
			row[j] *= inv;
		if (h->weights)
			for (int64_t j = 0; j < S; j++)
				h->weights[i * S + j] += row[j];
	}
	rt_sgemm(false, false, L, a->Ev, S, 1.0f, scores, S, h->v, h->ldv, 0.0f, h->o, h->ldo);
}

static void mask_strides(mask_view *m, const rt_tensor *t, int nd, const int64_t *shape)
{
	m->t = t;
	m->nd = nd;
	for (int d = 0; d < nd; d++) {
		int k = d - (nd - (t ? t->ndim : 0));
		m->stride[d] = t && k >= 0 && t->shape[k] != 1 ? t->stride[k] : 0;
		(void)shape;
	}
}

static ti_status k_sdpa(rt_call *c, ti_error *err)
{
	rt_tensor *q, *k, *v, *mask, *qc = NULL, *kc = NULL, *vc = NULL, *y = NULL;
	ti_status st = rt_arg(c, "query", &q, err);
	if (!st)
		st = rt_arg(c, "key", &k, err);
	if (!st)
		st = rt_arg(c, "value", &v, err);
	if (!st)
		st = rt_arg(c, "attn_mask", &mask, err);
	if (st)
		return st;
	if (rt_float(c, "dropout_p") > 0 || ti_bound_bool(&c->call->in, "enable_gqa"))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for attention with dropout_p > 0 or enable_gqa");
	if (q->dtype != TI_DT_FLOAT32 || q->ndim < 2 || k->ndim != q->ndim || v->ndim != q->ndim)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this attention");
	int nd = q->ndim;
	attention a = {.L = q->shape[nd - 2], .S = k->shape[nd - 2], .E = q->shape[nd - 1], .Ev = v->shape[nd - 1],
	               .causal = ti_bound_bool(&c->call->in, "is_causal")};
	const ti_arg *scale = ti_bound_get(&c->call->in, "scale");
	a.scale = scale && scale->kind == TI_ARG_FLOAT ? (float)scale->as.real : (float)(1.0 / sqrt((double)a.E));
	int64_t batches = (a.L * a.E) != 0 ? rt_numel(q) / (a.L * a.E) : 0;
	int64_t kb = (a.S * a.E) != 0 ? rt_numel(k) / (a.S * a.E) : 0;
	if (kb != batches)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for attention with broadcast keys");
	int64_t shape[RT_MAX_DIMS], scores_shape[RT_MAX_DIMS];
	memcpy(shape, q->shape, sizeof(shape));
	shape[nd - 1] = a.Ev;
	memcpy(scores_shape, q->shape, sizeof(scores_shape));
	scores_shape[nd - 1] = a.S;
	mask_view m;
	mask_strides(&m, mask, nd, scores_shape);
	a.mask = mask ? &m : NULL;
	float *scores = malloc((size_t)((a.L * a.S) != 0 ? a.L * a.S : 1) * sizeof(float));
	if (!scores)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for attention scores");
	if ((st = rt_contiguous(c, q, &qc, err)) || (st = rt_contiguous(c, k, &kc, err)) ||
	    (st = rt_contiguous(c, v, &vc, err)) || (st = rt_new(c, TI_DT_FLOAT32, nd, shape, &y, err)))
		goto done;
	for (int64_t b = 0; b < batches; b++) {
		int64_t rem = b, moff = 0;
		for (int d = nd - 3; d >= 0; d--) {
			moff += (rem % q->shape[d]) * m.stride[d];
			rem /= q->shape[d];
		}
		head h = {rt_f32(qc) + b * a.L * a.E, rt_f32(kc) + b * a.S * a.E, rt_f32(vc) + b * a.S * a.Ev,
		          a.E, a.E, a.Ev, rt_f32(y) + b * a.L * a.Ev, a.Ev, moff, NULL};
		attend(&a, &h, scores);
	}
	st = rt_output(c, y, err);
	y = NULL;
done:
	free(scores);
	rt_release(c->ex, qc);
	rt_release(c->ex, kc);
	rt_release(c->ex, vc);
	rt_release(c->ex, y);
	return st;
}

/* rows [n, E] = x [n, in] W[E, in]^T + b, W's rows from first. */
static void project(const float *x, int64_t n, int64_t in, const float *w, const float *b, int64_t e, float *out)
{
	float beta = 0;
	if (b) {
		for (int64_t i = 0; i < n; i++)
			memcpy(out + i * e, b, (size_t)e * sizeof(float));
		beta = 1;
	}
	rt_sgemm(false, true, n, e, in, 1.0f, x, in, w, in, beta, out, e);
}

/*
 * Self- or cross-attention of packed projections on rows in the input's own
 * order (batch_first: n*L + l, else l*N + n): q [L*N, E], k and v [S*N, E]
 * in, out [L*N, E]; weights (or NULL) [N, L, S] averaged over heads.
 */
typedef struct mha_shape {
	int64_t E, H, L, S, N;
	bool batch_first, causal;
	const mask_view *mask;     /* [N*H or 1, L, S] broadcast, or NULL */
} mha_shape;

static ti_status mha_core(const mha_shape *sh, const float *query, const float *key, const float *value,
                          const float *w_in, const float *b_in, const float *w_out, const float *b_out, float *out,
                          float *weights, ti_error *err)
{
	int64_t E = sh->E, H = sh->H, L = sh->L, S = sh->S, N = sh->N, hd = E / H;
	float *proj = malloc((size_t)((L + 2 * S) * N * E + 1) * sizeof(float));
	float *scores = malloc((size_t)(L * S + 1) * sizeof(float));
	float *ctx = malloc((size_t)(L * N * E + 1) * sizeof(float));
	if (!proj || !scores || !ctx) {
		free(proj), free(scores), free(ctx);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for attention");
	}
	float *pq = proj, *pk = proj + L * N * E, *pv = pk + S * N * E;
	project(query, L * N, E, w_in, b_in, E, pq);
	project(key, S * N, E, w_in + E * E, b_in ? b_in + E : NULL, E, pk);
	project(value, S * N, E, w_in + 2 * E * E, b_in ? b_in + 2 * E : NULL, E, pv);
	attention a = {.L = L, .S = S, .E = hd, .Ev = hd, .scale = (float)(1.0 / sqrt((double)hd)), .causal = sh->causal,
	               .mask = sh->mask};
	int64_t row_q = sh->batch_first ? E : N * E;
	if (weights)
		memset(weights, 0, (size_t)(N * L * S) * sizeof(float));
	for (int64_t n = 0; n < N; n++)
		for (int64_t h = 0; h < H; h++) {
			int64_t q0 = (sh->batch_first ? n * L * E : n * E) + h * hd, k0 = (sh->batch_first ? n * S * E : n * E) + h * hd;
			head hh = {pq + q0, pk + k0, pv + k0, row_q, row_q, row_q, ctx + q0, row_q,
			           sh->mask ? (n * H + h) * sh->mask->stride[0] : 0, weights ? weights + n * L * S : NULL};
			attend(&a, &hh, scores);
		}
	if (weights)
		for (int64_t i = 0; i < N * L * S; i++)
			weights[i] /= (float)H;
	project(ctx, L * N, E, w_out, b_out, E, out);
	free(proj);
	free(scores);
	free(ctx);
	return TI_OK;
}

/*
 * nn.MultiheadAttention.forward (packed projection, no bias_k/bias_v, no
 * zero attention, no key padding mask): the projections, the heads read in
 * place from the projected rows, the output projection; with need_weights
 * the weights averaged over heads (average_attn_weights=True).
 */
static ti_status k_mha(rt_call *c, ti_error *err)
{
	const ti_module *mod = c->module;
	rt_tensor *query, *key, *value, *kpm, *mask, *w_in, *b_in, *w_out, *b_out;
	ti_status st = rt_arg(c, "query", &query, err);
	if (!st)
		st = rt_arg(c, "key", &key, err);
	if (!st)
		st = rt_arg(c, "value", &value, err);
	if (!st)
		st = rt_arg(c, "key_padding_mask", &kpm, err);
	if (!st)
		st = rt_arg(c, "attn_mask", &mask, err);
	if (!st)
		st = rt_param(c, "in_proj_weight", &w_in, err);
	if (!st)
		st = rt_param(c, "in_proj_bias", &b_in, err);
	if (!st)
		st = rt_param(c, "out_proj.weight", &w_out, err);
	if (!st)
		st = rt_param(c, "out_proj.bias", &b_out, err);
	if (st)
		return st;
	if (!w_in || kpm || ti_module_tensor_get(mod, "bias_k") || ti_bound_bool(&mod->ctor, "add_zero_attn") ||
	    query->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'MultiheadAttention' with separate projections, "
		               "bias_k, add_zero_attn or a key padding mask");
	if (!ti_bound_bool(&c->call->in, "average_attn_weights") && ti_bound_bool(&c->call->in, "need_weights"))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'MultiheadAttention' with average_attn_weights=False");
	int64_t E = ti_bound_dim(&mod->ctor, "embed_dim").value, H = ti_bound_dim(&mod->ctor, "num_heads").value;
	bool batch_first = ti_bound_bool(&mod->ctor, "batch_first"), batched = query->ndim == 3;
	bool need_weights = ti_bound_bool(&c->call->in, "need_weights");
	int64_t L = query->shape[batched && batch_first ? 1 : 0], S = key->shape[batched && batch_first ? 1 : 0];
	int64_t N = batched ? query->shape[batch_first ? 0 : 1] : 1;
	rt_tensor *qc = NULL, *kc = NULL, *vc = NULL, *wc = NULL, *woc = NULL, *y = NULL, *weights = NULL;
	if ((st = rt_contiguous(c, query, &qc, err)) || (st = rt_contiguous(c, key, &kc, err)) ||
	    (st = rt_contiguous(c, value, &vc, err)) || (st = rt_contiguous(c, w_in, &wc, err)) ||
	    (st = rt_contiguous(c, w_out, &woc, err)))
		goto done;
	int64_t shape[3];
	if (need_weights) {
		int n = 0;
		if (batched)
			shape[n++] = N;
		shape[n++] = L;
		shape[n++] = S;
		if ((st = rt_new(c, TI_DT_FLOAT32, n, shape, &weights, err)))
			goto done;
	}
	/* the mask: [L, S] for every batch and head, or [N * H, L, S] */
	mask_view m;
	int64_t mshape[3] = {N * H, L, S};
	mask_strides(&m, mask, 3, mshape);
	mha_shape sh = {E, H, L, S, N, batch_first, ti_bound_bool(&c->call->in, "is_causal") && !mask, mask ? &m : NULL};
	if ((st = rt_new(c, TI_DT_FLOAT32, query->ndim, query->shape, &y, err)))
		goto done;
	if ((st = mha_core(&sh, rt_f32(qc), rt_f32(kc), rt_f32(vc), rt_f32(wc), b_in ? rt_f32(b_in) : NULL, rt_f32(woc),
	                   b_out ? rt_f32(b_out) : NULL, rt_f32(y), weights ? rt_f32(weights) : NULL, err)))
		goto done;
	st = rt_output(c, y, err);
	y = NULL;
	if (!st && weights) {
		st = rt_output(c, weights, err);
		weights = NULL;
	}
done:
	rt_release(c->ex, qc);
	rt_release(c->ex, kc);
	rt_release(c->ex, vc);
	rt_release(c->ex, wc);
	rt_release(c->ex, woc);
	rt_release(c->ex, y);
	rt_release(c->ex, weights);
	return st;
}

/* rows [n, d] = LayerNorm(x) with weight and bias (eps), in place allowed. */
static void layer_norm_rows(const float *x, int64_t n, int64_t d, const float *w, const float *b, double eps, float *y)
{
	for (int64_t r = 0; r < n; r++) {
		const float *xr = x + r * d;
		float *yr = y + r * d;
		double sum = 0, sq = 0;
		for (int64_t i = 0; i < d; i++)
			sum += xr[i];
		double mean = sum / (double)d;
		for (int64_t i = 0; i < d; i++)
			sq += (xr[i] - mean) * (xr[i] - mean);
		double rstd = 1.0 / sqrt(sq / (double)d + eps);
		for (int64_t i = 0; i < d; i++)
			yr[i] = (float)((xr[i] - mean) * rstd) * (w ? w[i] : 1.0f) + (b ? b[i] : 0.0f);
	}
}

static const float *param_f32(rt_call *c, const char *name, ti_status *st, ti_error *err)
{
	rt_tensor *t = NULL;
	if (!*st)
		*st = rt_param(c, name, &t, err);
	if (!*st && t && !rt_is_contiguous(t))
		*st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a strided '%s'", name);
	return t ? rt_f32(t) : NULL;
}

/*
 * nn.TransformerEncoderLayer.forward in eval mode, as its Python path
 * computes it: x + SA(norm1(x)) then x + FF(norm2(x)) with norm_first, else
 * norm1(x + SA(x)) then norm2(x + FF(x)); SA is the packed self-attention
 * (src_mask as MultiheadAttention's attn_mask, is_causal), FF is
 * linear2(activation(linear1(x))) with relu or gelu. No key padding mask yet.
 */
static ti_status k_encoder_layer(rt_call *c, ti_error *err)
{
	const ti_module *mod = c->module;
	rt_tensor *src, *mask, *kpm, *xc = NULL, *y = NULL;
	ti_status st = rt_arg(c, "src", &src, err);
	if (!st)
		st = rt_arg(c, "src_mask", &mask, err);
	if (!st)
		st = rt_arg(c, "src_key_padding_mask", &kpm, err);
	if (st)
		return st;
	const char *act = ti_bound_str(&mod->ctor, "activation");
	bool gelu = act && !strcmp(act, "gelu");
	if (kpm || src->dtype != TI_DT_FLOAT32 || (act && !gelu && strcmp(act, "relu")))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'TransformerEncoderLayer' with a key padding "
		               "mask or activation '%s'", act ? act : "?");
	const float *w_in = param_f32(c, "self_attn.in_proj_weight", &st, err),
	            *b_in = param_f32(c, "self_attn.in_proj_bias", &st, err),
	            *w_out = param_f32(c, "self_attn.out_proj.weight", &st, err),
	            *b_out = param_f32(c, "self_attn.out_proj.bias", &st, err),
	            *w1 = param_f32(c, "linear1.weight", &st, err), *b1 = param_f32(c, "linear1.bias", &st, err),
	            *w2 = param_f32(c, "linear2.weight", &st, err), *b2 = param_f32(c, "linear2.bias", &st, err),
	            *n1w = param_f32(c, "norm1.weight", &st, err), *n1b = param_f32(c, "norm1.bias", &st, err),
	            *n2w = param_f32(c, "norm2.weight", &st, err), *n2b = param_f32(c, "norm2.bias", &st, err);
	if (st)
		return st;
	int64_t E = ti_bound_dim(&mod->ctor, "d_model").value, H = ti_bound_dim(&mod->ctor, "nhead").value;
	int64_t F = ti_bound_dim(&mod->ctor, "dim_feedforward").value;
	double eps = ti_bound_float(&mod->ctor, "layer_norm_eps");
	bool batch_first = ti_bound_bool(&mod->ctor, "batch_first"), norm_first = ti_bound_bool(&mod->ctor, "norm_first");
	bool batched = src->ndim == 3;
	int64_t L = src->shape[batched && batch_first ? 1 : 0], N = batched ? src->shape[batch_first ? 0 : 1] : 1;
	int64_t rows = L * N;
	float *h = malloc((size_t)(rows * E + 1) * sizeof(float)), *t = malloc((size_t)(rows * E + 1) * sizeof(float));
	float *ff = malloc((size_t)(rows * F + 1) * sizeof(float));
	if (!h || !t || !ff) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for a transformer layer");
		goto done;
	}
	if ((st = rt_contiguous(c, src, &xc, err)) || (st = rt_new(c, TI_DT_FLOAT32, src->ndim, src->shape, &y, err)))
		goto done;
	float *x = rt_f32(y);
	memcpy(x, rt_f32(xc), (size_t)(rows * E) * sizeof(float));
	mask_view m;
	int64_t mshape[3] = {N * H, L, L};
	mask_strides(&m, mask, 3, mshape);
	mha_shape sh = {E, H, L, L, N, batch_first, ti_bound_bool(&c->call->in, "is_causal") && !mask, mask ? &m : NULL};
	/* self-attention block */
	const float *in = x;
	if (norm_first) {
		layer_norm_rows(x, rows, E, n1w, n1b, eps, h);
		in = h;
	}
	if ((st = mha_core(&sh, in, in, in, w_in, b_in, w_out, b_out, t, NULL, err)))
		goto done;
	for (int64_t i = 0; i < rows * E; i++)
		x[i] += t[i];
	if (!norm_first)
		layer_norm_rows(x, rows, E, n1w, n1b, eps, x);
	/* feed-forward block */
	in = x;
	if (norm_first) {
		layer_norm_rows(x, rows, E, n2w, n2b, eps, h);
		in = h;
	}
	project(in, rows, E, w1, b1, F, ff);
	for (int64_t i = 0; i < rows * F; i++)
		ff[i] = gelu ? (float)(0.5 * ff[i] * (1.0 + erf(ff[i] * 0.70710678118654752440))) : (ff[i] > 0 ? ff[i] : 0);
	/* linear2: [rows, F] -> [rows, E] */
	float beta = 0;
	if (b2) {
		for (int64_t r = 0; r < rows; r++)
			memcpy(t + r * E, b2, (size_t)E * sizeof(float));
		beta = 1;
	}
	rt_sgemm(false, true, rows, E, F, 1.0f, ff, F, w2, F, beta, t, E);
	for (int64_t i = 0; i < rows * E; i++)
		x[i] += t[i];
	if (!norm_first)
		layer_norm_rows(x, rows, E, n2w, n2b, eps, x);
	st = rt_output(c, y, err);
	y = NULL;
done:
	free(h);
	free(t);
	free(ff);
	rt_release(c->ex, xc);
	rt_release(c->ex, y);
	return st;
}

const rt_kernel rt_kernels_attention[] = {
	{"TransformerEncoderLayer", true, k_encoder_layer, false},
	{"scaled_dot_product_attention", false, k_sdpa, false},
	{"MultiheadAttention", true, k_mha, false},
	{NULL, false, NULL, false},
};
