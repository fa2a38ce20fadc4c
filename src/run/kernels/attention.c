/*
 * attention.c - scaled_dot_product_attention, the MultiheadAttention module
 * and the Transformer layers and stacks built on it: per (batch, head),
 * scores = scale * Q K^T by sgemm (Q and K read in place through their
 * leading dimensions, no head split copies), the mask (SDPA's bool: True
 * attends; MultiheadAttention's bool: True masks out; float: added;
 * is_causal: the upper triangle masked), a stable softmax per row, then P V
 * by sgemm into the output's layout. Dropout on the weights only at p = 0
 * (eval).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* A mask read through broadcast strides over [batch..., L, S]: additive floats, or bools where True attends. */
typedef struct mask_view {
	const float *add;
	const bool *keep;
	int nd;                       /* of the scores */
	int64_t stride[RT_MAX_DIMS];
} mask_view;

typedef struct head {
	const float *q, *k, *v;       /* this head's first row */
	int64_t ldq, ldk, ldv;
	float *o;
	int64_t ldo;
	int64_t mask_offset;          /* of this batch in the mask */
	float *weights;               /* need_weights: [L, S] accumulated, or NULL */
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
	if (!L || !S || !a->Ev) {
		for (int64_t i = 0; i < L; i++)
			memset(h->o + i * h->ldo, 0, (size_t)a->Ev * sizeof(float));
		return;
	}
	if (a->E)
		rt_sgemm(false, true, L, S, a->E, a->scale, h->q, h->ldq, h->k, h->ldk, 0.0f, scores, S);
	else
		memset(scores, 0, (size_t)(L * S) * sizeof(float));
	const mask_view *m = a->mask;
	for (int64_t i = 0; i < L; i++) {
		float *row = scores + i * S;
		for (int64_t j = 0; j < S; j++) {
			if (a->causal && j > i)
				row[j] = -INFINITY;
			if (m) {
				int64_t off = h->mask_offset + i * m->stride[m->nd - 2] + j * m->stride[m->nd - 1];
				if (m->keep && !m->keep[off])
					row[j] = -INFINITY;
				else if (m->add)
					row[j] += m->add[off];
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

/* SDPA's mask over scores of nd dims: broadcast strides (0 where the mask has size 1 or lacks the dim). */
static void mask_strides(mask_view *m, const rt_tensor *t, int nd)
{
	m->add = t && t->dtype != TI_DT_BOOL ? rt_f32(t) : NULL;
	m->keep = t && t->dtype == TI_DT_BOOL ? rt_bool(t) : NULL;
	m->nd = nd;
	for (int d = 0; d < nd; d++) {
		int k = d - (nd - (t ? t->ndim : 0));
		m->stride[d] = t && k >= 0 && t->shape[k] != 1 ? t->stride[k] : 0;
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
	int64_t shape[RT_MAX_DIMS];
	memcpy(shape, q->shape, sizeof(shape));
	shape[nd - 1] = a.Ev;
	mask_view m;
	mask_strides(&m, mask, nd);
	a.mask = mask ? &m : NULL;
	float *scores = rt_scratch_alloc(c, (size_t)((a.L * a.S) != 0 ? a.L * a.S : 1) * sizeof(float), false);
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
	rt_scratch_free(c, scores);
	rt_release(c->ex, qc);
	rt_release(c->ex, kc);
	rt_release(c->ex, vc);
	rt_release(c->ex, y);
	return st;
}

/* rows [n, e] = x [n, in] W[e, in]^T + b */
static void project(const float *x, int64_t n, int64_t in, const float *w, const float *b, int64_t e, float *out)
{
	if (!n || !e)
		return;
	float beta = 0;
	if (b) {
		for (int64_t i = 0; i < n; i++)
			memcpy(out + i * e, b, (size_t)e * sizeof(float));
		beta = 1;
	}
	if (in)
		rt_sgemm(false, true, n, e, in, 1.0f, x, in, w, in, beta, out, e);
	else if (!b)
		memset(out, 0, (size_t)(n * e) * sizeof(float));
}

/* The weights of one MultiheadAttention: packed rows of in_proj_weight, or q/k/v_proj_weight. */
typedef struct mha_params {
	const float *w_q, *w_k, *w_v;     /* [E, E], [E, kdim], [E, vdim] */
	const float *b_in;                /* [3E] or NULL */
	const float *bias_k, *bias_v;     /* [E] each (add_bias_kv) or NULL */
	const float *w_out, *b_out;
	int64_t kdim, vdim;
	bool zero_attn;
} mha_params;

/*
 * The sizes of a call, rows in the input's own order (batch_first: n*L + l,
 * else l*N + n): query [L*N, E], key [S*N, kdim], value [S*N, vdim].
 */
typedef struct mha_shape {
	int64_t E, H, L, S, N;
	bool batch_first;
} mha_shape;

/* multi_head_attention_forward's masks: attn_mask [L, S] or [N*H, L, S], key_padding_mask [N, S] or [S]. */
typedef struct mha_masks {
	const rt_tensor *attn, *padding;
	bool causal;                      /* the is_causal hint */
} mha_masks;

/* What the caller wants back: the attention weights [N, H?, L, S'] (NULL: none), averaged over heads or not. */
typedef struct mha_weights_out {
	float *data;
	bool average;
} mha_weights_out;

/* A bool mask masks out where True, a float one is added (_canonical_mask). */
static float mask_value(const rt_tensor *t, int64_t off)
{
	if (t->dtype == TI_DT_BOOL)
		return rt_bool(t)[off] ? -INFINITY : 0.0f;
	return rt_f32(t)[off];
}

/*
 * The merged additive mask over [N*H or 1, L, S'] (S' = S plus the bias_k
 * and zero-attention columns, which the masks pad with 0), or NULL when
 * nothing masks; *per_head tells the first dimension.
 */
static float *merged_mask(rt_call *c, const mha_shape *sh, const mha_masks *mk, int64_t S2, bool *per_head,
                          ti_error *err)
{
	const rt_tensor *attn = mk->attn, *pad = mk->padding;
	*per_head = (attn && attn->ndim == 3 && attn->shape[0] != 1) || pad;
	int64_t blocks = *per_head ? sh->N * sh->H : 1, L = sh->L, S = sh->S;
	float *m = rt_scratch_alloc(c, (size_t)(blocks * L * S2 + 1) * sizeof(float), false);
	if (!m) {
		TI_FAIL(err, TI_E_NOMEM, "out of memory for an attention mask");
		return NULL;
	}
	for (int64_t b = 0; b < blocks; b++)
		for (int64_t i = 0; i < L; i++)
			for (int64_t j = 0; j < S2; j++) {
				float v = 0;
				if (attn && j < S) {
					int nd = attn->ndim;
					int64_t off = (nd == 3 && attn->shape[0] != 1 ? b * attn->stride[0] : 0) + i * attn->stride[nd - 2] +
					              j * attn->stride[nd - 1];
					v += mask_value(attn, off);
				}
				if (pad && j < S) {
					int64_t n = b / sh->H;
					int64_t off = (pad->ndim == 2 ? n * pad->stride[0] : 0) + j * pad->stride[pad->ndim - 1];
					v += mask_value(pad, off);
				}
				m[(b * L + i) * S2 + j] = v;
			}
	return m;
}

/*
 * Projected keys (or values) into [N, S', E] batch-major rows: the
 * projection of the input's rows, then bias_k and a zero row when asked.
 */
static void keys_batch_major(const mha_shape *sh, const float *proj, const float *bias_row, bool zero_row, int64_t S2,
                             float *out)
{
	int64_t E = sh->E, S = sh->S, N = sh->N;
	for (int64_t n = 0; n < N; n++) {
		for (int64_t s = 0; s < S; s++) {
			int64_t row = sh->batch_first ? n * S + s : s * N + n;
			memcpy(out + (n * S2 + s) * E, proj + row * E, (size_t)E * sizeof(float));
		}
		int64_t s = S;
		if (bias_row)
			memcpy(out + (n * S2 + s++) * E, bias_row, (size_t)E * sizeof(float));
		if (zero_row)
			memset(out + (n * S2 + s) * E, 0, (size_t)E * sizeof(float));
	}
}

/* multi_head_attention_forward in eval mode: the projections, the heads, the output projection into out [L*N, E]. */
static ti_status mha_core(rt_call *c, const mha_shape *sh, const mha_params *p, const mha_masks *mk, bool need_weights,
                          const float *query, const float *key, const float *value, float *out,
                          const mha_weights_out *weights, ti_error *err)
{
	int64_t E = sh->E, H = sh->H, L = sh->L, S = sh->S, N = sh->N, hd = E / H;
	int64_t S2 = S + (p->bias_k ? 1 : 0) + (p->zero_attn ? 1 : 0);
	/* the hint replaces the mask only where SDPA would take it: no padding mask, no weights */
	bool causal = mk->causal && !mk->padding && !need_weights, per_head = false;
	float *mask = NULL;
	if (!causal && (mk->attn || mk->padding) && !(mask = merged_mask(c, sh, mk, S2, &per_head, err)))
		return TI_E_NOMEM;
	float *pq = rt_scratch_alloc(c, (size_t)(L * N * E + 1) * sizeof(float), false);
	float *tmp = rt_scratch_alloc(c, (size_t)(S * N * E + 1) * sizeof(float), false);
	float *pk = rt_scratch_alloc(c, (size_t)(N * S2 * E + 1) * sizeof(float), false);
	float *pv = rt_scratch_alloc(c, (size_t)(N * S2 * E + 1) * sizeof(float), false);
	float *scores = rt_scratch_alloc(c, (size_t)(L * S2 + 1) * sizeof(float), false);
	float *ctx = rt_scratch_alloc(c, (size_t)(L * N * E + 1) * sizeof(float), false);
	float *const held[] = {mask, pq, tmp, pk, pv, scores, ctx};
	if (!pq || !tmp || !pk || !pv || !scores || !ctx) {
		for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
			rt_scratch_free(c, held[i]);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for attention");
	}
	const float *b_in = p->b_in;
	project(query, L * N, E, p->w_q, b_in, E, pq);
	project(key, S * N, p->kdim, p->w_k, b_in ? b_in + E : NULL, E, tmp);
	keys_batch_major(sh, tmp, p->bias_k, p->zero_attn, S2, pk);
	project(value, S * N, p->vdim, p->w_v, b_in ? b_in + 2 * E : NULL, E, tmp);
	keys_batch_major(sh, tmp, p->bias_v, p->zero_attn, S2, pv);
	mask_view m = {.add = mask, .nd = 3, .stride = {per_head ? L * S2 : 0, S2, 1}};
	attention a = {.L = L, .S = S2, .E = hd, .Ev = hd, .scale = (float)(1.0 / sqrt((double)hd)), .causal = causal,
	               .mask = mask ? &m : NULL};
	int64_t row_q = sh->batch_first ? E : N * E;
	float *w = weights ? weights->data : NULL;
	if (w)
		memset(w, 0, (size_t)(N * (weights->average ? 1 : H) * L * S2) * sizeof(float));
	for (int64_t n = 0; n < N; n++)
		for (int64_t h = 0; h < H; h++) {
			int64_t q0 = (sh->batch_first ? n * L * E : n * E) + h * hd, k0 = n * S2 * E + h * hd;
			float *wh = !w ? NULL : weights->average ? w + n * L * S2 : w + (n * H + h) * L * S2;
			head hh = {pq + q0, pk + k0, pv + k0, row_q, E, E, ctx + q0, row_q, (n * H + h) * m.stride[0], wh};
			attend(&a, &hh, scores);
		}
	if (w && weights->average)
		for (int64_t i = 0; i < N * L * S2; i++)
			w[i] /= (float)H;
	project(ctx, L * N, E, p->w_out, p->b_out, E, out);
	for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
		rt_scratch_free(c, held[i]);
	return TI_OK;
}

/* A module parameter as contiguous float32 (NULL when absent); the reference is kept in *hold. */
static const float *param_f32(rt_call *c, const char *name, rt_tensor **hold, ti_status *st, ti_error *err)
{
	rt_tensor *t = NULL;
	*hold = NULL;
	if (!*st)
		*st = rt_param(c, name, &t, err);
	if (!*st && t && t->dtype != TI_DT_FLOAT32)
		*st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a %s '%s'", ti_dtype_name(t->dtype), name);
	if (!*st && t)
		*st = rt_contiguous(c, t, hold, err);
	return !*st && *hold ? rt_f32(*hold) : NULL;
}

#define MAX_HELD 32 /* parameters one layer holds */

/* The parameters a kernel holds while it runs. */
typedef struct held {
	rt_tensor *t[MAX_HELD];
	int n;
} held;

/* "<prefix><name>" as contiguous float32, held until release_held; NULL when absent. */
static const float *held_param(rt_call *c, held *hd, const char *prefix, const char *name, ti_status *st,
                               ti_error *err)
{
	char full[256];
	snprintf(full, sizeof(full), "%s%s", prefix, name);
	if (!*st && hd->n == MAX_HELD)
		*st = TI_FAIL(err, TI_E_LIMIT, "more than %d parameters in one attention kernel", MAX_HELD);
	rt_tensor *t = NULL;
	const float *p = param_f32(c, full, &t, st, err);
	if (t)
		hd->t[hd->n++] = t;
	return p;
}

static void release_held(rt_call *c, held *hd)
{
	for (int i = 0; i < hd->n; i++)
		rt_release(c->ex, hd->t[i]);
	hd->n = 0;
}

/* The parameters of the MultiheadAttention under prefix ("" or "self_attn."): packed or separate projections. */
static void mha_params_of(rt_call *c, held *hd, const char *prefix, int64_t E, mha_params *p, ti_status *st,
                          ti_error *err)
{
	memset(p, 0, sizeof(*p));
	p->kdim = p->vdim = E;
	const float *packed = held_param(c, hd, prefix, "in_proj_weight", st, err);
	if (packed) {
		p->w_q = packed;
		p->w_k = packed + E * E;
		p->w_v = packed + 2 * E * E;
	} else {
		p->w_q = held_param(c, hd, prefix, "q_proj_weight", st, err);
		p->w_k = held_param(c, hd, prefix, "k_proj_weight", st, err);
		p->w_v = held_param(c, hd, prefix, "v_proj_weight", st, err);
	}
	p->b_in = held_param(c, hd, prefix, "in_proj_bias", st, err);
	p->bias_k = held_param(c, hd, prefix, "bias_k", st, err);
	p->bias_v = held_param(c, hd, prefix, "bias_v", st, err);
	p->w_out = held_param(c, hd, prefix, "out_proj.weight", st, err);
	p->b_out = held_param(c, hd, prefix, "out_proj.bias", st, err);
	if (!*st && (!p->w_q || !p->w_k || !p->w_v || !p->w_out))
		*st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for attention without its projection weights");
}

/*
 * nn.MultiheadAttention.forward in eval mode: the projections (packed or
 * kdim/vdim), bias_k/bias_v and a zero key appended, the merged masks, the
 * heads read in place, the output projection; with need_weights the
 * weights averaged over heads or per head.
 */
static ti_status k_mha(rt_call *c, ti_error *err)
{
	const ti_module *mod = c->module;
	rt_tensor *query, *key, *value, *kpm, *mask;
	ti_status st = rt_arg(c, "query", &query, err);
	if (!st)
		st = rt_arg(c, "key", &key, err);
	if (!st)
		st = rt_arg(c, "value", &value, err);
	if (!st)
		st = rt_arg(c, "key_padding_mask", &kpm, err);
	if (!st)
		st = rt_arg(c, "attn_mask", &mask, err);
	if (st)
		return st;
	if (query->dtype != TI_DT_FLOAT32 || key->dtype != TI_DT_FLOAT32 || value->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'MultiheadAttention' on %s",
		               ti_dtype_name(query->dtype));
	int64_t E = ti_bound_dim(&mod->ctor, "embed_dim").value, H = ti_bound_dim(&mod->ctor, "num_heads").value;
	bool batch_first = ti_bound_bool(&mod->ctor, "batch_first"), batched = query->ndim == 3;
	bool need_weights = ti_bound_bool(&c->call->in, "need_weights");
	bool average = ti_bound_bool(&c->call->in, "average_attn_weights");
	mha_shape sh = {E, H, query->shape[batched && batch_first ? 1 : 0], key->shape[batched && batch_first ? 1 : 0],
	                batched ? query->shape[batch_first ? 0 : 1] : 1, batch_first};
	held hd = {.n = 0};
	mha_params p;
	mha_params_of(c, &hd, "", E, &p, &st, err);
	p.zero_attn = ti_bound_bool(&mod->ctor, "add_zero_attn");
	p.kdim = key->shape[key->ndim - 1];
	p.vdim = value->shape[value->ndim - 1];
	rt_tensor *qc = NULL, *kc = NULL, *vc = NULL, *y = NULL, *weights = NULL;
	if (st || (st = rt_contiguous(c, query, &qc, err)) || (st = rt_contiguous(c, key, &kc, err)) ||
	    (st = rt_contiguous(c, value, &vc, err)))
		goto done;
	int64_t S2 = sh.S + (p.bias_k ? 1 : 0) + (p.zero_attn ? 1 : 0);
	if (need_weights) {
		int64_t shape[4];
		int n = 0;
		if (batched)
			shape[n++] = sh.N;
		if (!average)
			shape[n++] = H;
		shape[n++] = sh.L;
		shape[n++] = S2;
		if ((st = rt_new(c, TI_DT_FLOAT32, n, shape, &weights, err)))
			goto done;
	}
	if ((st = rt_new(c, TI_DT_FLOAT32, query->ndim, query->shape, &y, err)))
		goto done;
	mha_masks mk = {mask, kpm, ti_bound_bool(&c->call->in, "is_causal")};
	mha_weights_out wo = {weights ? rt_f32(weights) : NULL, average};
	if ((st = mha_core(c, &sh, &p, &mk, need_weights, rt_f32(qc), rt_f32(kc), rt_f32(vc), rt_f32(y),
	                   weights ? &wo : NULL, err)))
		goto done;
	st = rt_output(c, y, err);
	y = NULL;
	if (!st && weights) {
		st = rt_output(c, weights, err);
		weights = NULL;
	}
done:
	release_held(c, &hd);
	rt_release(c->ex, qc);
	rt_release(c->ex, kc);
	rt_release(c->ex, vc);
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

/* The settings every layer of a Transformer module shares. */
typedef struct tx_config {
	int64_t E, H, F;
	double eps;
	bool norm_first, gelu, batch_first;
} tx_config;

/* One run of layers over a sequence x [L*N, E] (rows in the input's order); scratch for the blocks. */
typedef struct tx_run {
	rt_call *c;
	tx_config cfg;
	int64_t N;
	float *h, *t, *ff;   /* [rows, E], [rows, E], [rows, F] for the longest sequence */
	held hd;
} tx_run;

static ti_status tx_begin(rt_call *c, tx_run *r, int64_t N, int64_t rows, ti_error *err)
{
	const ti_module *m = c->module;
	const char *act = ti_bound_str(&m->ctor, "activation");
	memset(r, 0, sizeof(*r));
	r->c = c;
	r->N = N;
	r->cfg = (tx_config){
		.E = ti_bound_dim(&m->ctor, "d_model").value,
		.H = ti_bound_dim(&m->ctor, "nhead").value,
		.F = ti_bound_dim(&m->ctor, "dim_feedforward").value,
		.eps = ti_bound_float(&m->ctor, "layer_norm_eps"),
		.norm_first = ti_bound_bool(&m->ctor, "norm_first"),
		.gelu = act && !strcmp(act, "gelu"),
		.batch_first = ti_bound_bool(&m->ctor, "batch_first"),
	};
	if (act && !r->cfg.gelu && strcmp(act, "relu"))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' with activation '%s'", m->type, act);
	r->h = rt_scratch_alloc(c, (size_t)(rows * r->cfg.E + 1) * sizeof(float), false);
	r->t = rt_scratch_alloc(c, (size_t)(rows * r->cfg.E + 1) * sizeof(float), false);
	r->ff = rt_scratch_alloc(c, (size_t)(rows * r->cfg.F + 1) * sizeof(float), false);
	if (!r->h || !r->t || !r->ff)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a transformer layer");
	return TI_OK;
}

static void tx_end(tx_run *r)
{
	release_held(r->c, &r->hd);
	rt_scratch_free(r->c, r->h);
	rt_scratch_free(r->c, r->t);
	rt_scratch_free(r->c, r->ff);
}

/* "<prefix><norm>weight" and "bias" applied to rows of x into y. */
static ti_status norm_block(tx_run *r, const char *prefix, const char *norm, const float *x, int64_t rows, float *y,
                            ti_error *err)
{
	char name[256];
	ti_status st = TI_OK;
	snprintf(name, sizeof(name), "%s%sweight", prefix, norm);
	const float *w = held_param(r->c, &r->hd, name, "", &st, err);
	snprintf(name, sizeof(name), "%s%sbias", prefix, norm);
	const float *b = held_param(r->c, &r->hd, name, "", &st, err);
	if (!st)
		layer_norm_rows(x, rows, r->cfg.E, w, b, r->cfg.eps, y);
	return st;
}

/*
 * One residual block on x [L*N, E]: x + block(norm(x)) with norm_first,
 * else norm(x + block(x)). block is the attention "<prefix><attn>" over
 * memory [S*N, E] (NULL: self-attention) with masks, or the feed-forward
 * block when attn is NULL.
 */
static ti_status residual_block(tx_run *r, const char *prefix, const char *norm, const char *attn, float *x, int64_t L,
                                const float *memory, int64_t S, const mha_masks *masks, ti_error *err)
{
	const tx_config *cfg = &r->cfg;
	int64_t rows = L * r->N, E = cfg->E, F = cfg->F;
	ti_status st = TI_OK;
	const float *in = x;
	if (cfg->norm_first) {
		if ((st = norm_block(r, prefix, norm, x, rows, r->h, err)))
			return st;
		in = r->h;
	}
	if (attn) {
		char where[256];
		snprintf(where, sizeof(where), "%s%s", prefix, attn);
		mha_params p;
		mha_params_of(r->c, &r->hd, where, E, &p, &st, err);
		mha_shape sh = {E, cfg->H, L, memory ? S : L, r->N, cfg->batch_first};
		const float *kv = memory ? memory : in;
		if (!st)
			st = mha_core(r->c, &sh, &p, masks, false, in, kv, kv, r->t, NULL, err);
	} else {
		const float *w1 = held_param(r->c, &r->hd, prefix, "linear1.weight", &st, err),
		            *b1 = held_param(r->c, &r->hd, prefix, "linear1.bias", &st, err),
		            *w2 = held_param(r->c, &r->hd, prefix, "linear2.weight", &st, err),
		            *b2 = held_param(r->c, &r->hd, prefix, "linear2.bias", &st, err);
		if (!st && (!w1 || !w2))
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a transformer layer without its linear weights");
		if (!st) {
			project(in, rows, E, w1, b1, F, r->ff);
			float *ff = r->ff;
			for (int64_t i = 0; i < rows * F; i++)
				ff[i] = cfg->gelu ? (float)(0.5 * ff[i] * (1.0 + erf(ff[i] * 0.70710678118654752440)))
				                  : (ff[i] > 0 ? ff[i] : 0);
			project(ff, rows, F, w2, b2, E, r->t);
		}
	}
	if (st)
		return st;
	for (int64_t i = 0; i < rows * E; i++)
		x[i] += r->t[i];
	if (!cfg->norm_first)
		st = norm_block(r, prefix, norm, x, rows, x, err);
	return st;
}

/* An encoder layer, or with memory a decoder layer, under prefix; masks[1] are the cross-attention's. */
static ti_status run_layer(tx_run *r, const char *prefix, float *x, int64_t L, const float *memory, int64_t S,
                           const mha_masks masks[2], ti_error *err)
{
	ti_status st = residual_block(r, prefix, "norm1.", "self_attn.", x, L, NULL, 0, &masks[0], err);
	if (!st && memory)
		st = residual_block(r, prefix, "norm2.", "multihead_attn.", x, L, memory, S, &masks[1], err);
	if (!st)
		st = residual_block(r, prefix, memory ? "norm3." : "norm2.", NULL, x, L, NULL, 0, NULL, err);
	release_held(r->c, &r->hd);
	return st;
}

/*
 * TransformerEncoder's sparsity fast path (eval, no grad): with a key
 * padding mask, no attention mask, batch_first, post-norm, an even number
 * of heads, packed biased projections and padding only at the end of each
 * row, it runs on a nested tensor and pads the result with zeros: padded
 * positions come out 0 before the final norm.
 */
static bool nested_fast_path(const tx_run *r, const mha_masks *mk, bool batched, bool enabled, bool biased)
{
	const rt_tensor *pad = mk->padding;
	if (!enabled || !pad || mk->attn || !batched || !r->cfg.batch_first || r->cfg.norm_first || r->cfg.H % 2 || !biased)
		return false;
	for (int64_t n = 0; n < r->N; n++) {
		bool seen = false;
		for (int64_t s = 0; s < pad->shape[1]; s++) {
			bool padded = mask_value(pad, n * pad->stride[0] + s * pad->stride[1]) != 0;
			if (seen && !padded)
				return false; /* not left aligned: mask_check turns the path off */
			seen |= padded;
		}
	}
	return true;
}

static void zero_padded(const tx_run *r, const rt_tensor *pad, float *x, int64_t L)
{
	for (int64_t n = 0; n < r->N; n++)
		for (int64_t l = 0; l < L; l++)
			if (mask_value(pad, n * pad->stride[0] + l * pad->stride[1]) != 0)
				memset(x + (n * L + l) * r->cfg.E, 0, (size_t)r->cfg.E * sizeof(float));
}

/* "<prefix>layers.<i>." for i < count, then "<prefix>norm." when the stack has one. */
static ti_status run_stack(tx_run *r, const char *prefix, int64_t count, float *x, int64_t L, const float *memory,
                           int64_t S, const mha_masks masks[2], bool nested, ti_error *err)
{
	ti_status st = TI_OK;
	/* the nested tensor's rows hold no padded keys: the padding mask, kept, is the same attention */
	for (int64_t i = 0; i < count && !st; i++) {
		char layer[128];
		snprintf(layer, sizeof(layer), "%slayers.%lld.", prefix, (long long)i);
		st = run_layer(r, layer, x, L, memory, S, masks, err);
	}
	if (!st && nested)
		zero_padded(r, masks[0].padding, x, L);
	char norm[128];
	snprintf(norm, sizeof(norm), "%snorm.weight", prefix);
	rt_tensor *w;
	if (!st && !(st = rt_param(r->c, norm, &w, err)) && w) {
		snprintf(norm, sizeof(norm), "%snorm.", prefix);
		st = norm_block(r, "", norm, x, L * r->N, x, err);
		release_held(r->c, &r->hd);
	}
	return st;
}

/* A sequence argument as [L, N] rows, copied into a new output of its shape. */
static ti_status sequence_arg(rt_call *c, const char *name, bool batch_first, rt_tensor **out, int64_t *L, int64_t *N,
                              ti_error *err)
{
	rt_tensor *t, *tc;
	ti_status st = rt_arg(c, name, &t, err);
	if (st)
		return st;
	if (!t || t->dtype != TI_DT_FLOAT32 || (t->ndim != 2 && t->ndim != 3))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' on this '%s'", c->module->type, name);
	bool batched = t->ndim == 3;
	*L = t->shape[batched && batch_first ? 1 : 0];
	*N = batched ? t->shape[batch_first ? 0 : 1] : 1;
	if ((st = rt_contiguous(c, t, &tc, err)))
		return st;
	if (!(st = rt_new(c, TI_DT_FLOAT32, t->ndim, t->shape, out, err)))
		memcpy(rt_f32(*out), rt_f32(tc), (size_t)rt_numel(t) * sizeof(float));
	rt_release(c->ex, tc);
	return st;
}

/* The masks of one attention by their argument names (NULL: none), the causal hint by name. */
static ti_status masks_of(rt_call *c, const char *mask, const char *padding, const char *causal, mha_masks *out,
                          ti_error *err)
{
	rt_tensor *m = NULL, *p = NULL;
	ti_status st = mask ? rt_arg(c, mask, &m, err) : TI_OK;
	if (!st && padding)
		st = rt_arg(c, padding, &p, err);
	*out = (mha_masks){m, p, causal && ti_bound_bool(&c->call->in, causal)};
	return st;
}

/* The argument names of each Transformer module's forward. */
typedef struct tx_kind {
	const char *type;
	bool decoder, encoder, stack;             /* decoder: attends to memory; encoder: a TransformerEncoder part */
	const char *x, *mask, *padding, *causal;  /* the self-attention's */
} tx_kind;

static const tx_kind tx_kinds[] = {
	{"TransformerEncoderLayer", false, false, false, "src", "src_mask", "src_key_padding_mask", "is_causal"},
	{"TransformerDecoderLayer", true, false, false, "tgt", "tgt_mask", "tgt_key_padding_mask", "tgt_is_causal"},
	{"TransformerEncoder", false, true, true, "src", "mask", "src_key_padding_mask", "is_causal"},
	{"TransformerDecoder", true, false, true, "tgt", "tgt_mask", "tgt_key_padding_mask", "tgt_is_causal"},
	{"Transformer", true, true, true, "tgt", "tgt_mask", "tgt_key_padding_mask", "tgt_is_causal"},
};

/*
 * The Transformer modules in eval mode, as their Python forward computes
 * them: a layer, a stack of num_layers and its final norm, or
 * nn.Transformer's encoder stack on src (its output the memory) then its
 * decoder stack on tgt. Attention masks follow multi_head_attention_forward.
 */
static ti_status k_transformer(rt_call *c, ti_error *err)
{
	const ti_module *mod = c->module;
	const tx_kind *k = NULL;
	for (size_t i = 0; i < sizeof(tx_kinds) / sizeof(tx_kinds[0]) && !k; i++)
		if (!strcmp(tx_kinds[i].type, mod->type))
			k = &tx_kinds[i];
	if (!k)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s'", mod->type);
	bool whole = !strcmp(mod->type, "Transformer"), batch_first = ti_bound_bool(&mod->ctor, "batch_first");
	rt_tensor *y = NULL, *memory = NULL, *src = NULL;
	int64_t L, N, S = 0, SN = 0;
	mha_masks masks[2] = {{0}}, encoder_masks[2] = {{0}};
	tx_run r = {0};
	ti_status st = sequence_arg(c, k->x, batch_first, &y, &L, &N, err);
	if (!st)
		st = masks_of(c, k->mask, k->padding, k->causal, &masks[0], err);
	if (!st && k->decoder)
		st = masks_of(c, "memory_mask", "memory_key_padding_mask", "memory_is_causal", &masks[1], err);
	if (!st && whole)
		st = masks_of(c, "src_mask", "src_key_padding_mask", "src_is_causal", &encoder_masks[0], err);
	if (st)
		goto done;
	if (whole) {
		if ((st = sequence_arg(c, "src", batch_first, &src, &S, &SN, err)))
			goto done;
	} else if (k->decoder) {
		rt_tensor *mem;
		if ((st = rt_arg(c, "memory", &mem, err)) || (st = rt_contiguous(c, mem, &memory, err)))
			goto done;
		bool batched = mem->ndim == 3;
		S = mem->shape[batched && batch_first ? 1 : 0];
		SN = batched ? mem->shape[batch_first ? 0 : 1] : 1;
	}
	if (k->decoder && SN != N) {
		st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' with a memory of another batch", mod->type);
		goto done;
	}
	if ((st = tx_begin(c, &r, N, (L > S ? L : S) * N, err)))
		goto done;
	bool biased = ti_bound_bool(&mod->ctor, "bias");
	if (whole) {
		/* nn.Transformer's encoder: enable_nested_tensor and mask_check at their defaults */
		bool nested = nested_fast_path(&r, &encoder_masks[0], src->ndim == 3, true, biased);
		if ((st = run_stack(&r, "encoder.", ti_bound_dim(&mod->ctor, "num_encoder_layers").value, rt_f32(src), S, NULL,
		                    0, encoder_masks, nested, err)) ||
		    (st = run_stack(&r, "decoder.", ti_bound_dim(&mod->ctor, "num_decoder_layers").value, rt_f32(y), L,
		                    rt_f32(src), S, masks, false, err)))
			goto done;
	} else if (k->stack) {
		bool nested = k->encoder && nested_fast_path(&r, &masks[0], y->ndim == 3,
		                                             ti_bound_bool(&mod->ctor, "enable_nested_tensor"), biased);
		if ((st = run_stack(&r, "", ti_bound_dim(&mod->ctor, "num_layers").value, rt_f32(y), L,
		                    memory ? rt_f32(memory) : NULL, S, masks, nested, err)))
			goto done;
	} else if ((st = run_layer(&r, "", rt_f32(y), L, memory ? rt_f32(memory) : NULL, S, masks, err))) {
		goto done;
	}
	st = rt_output(c, y, err);
	y = NULL;
done:
	tx_end(&r);
	rt_release(c->ex, y);
	rt_release(c->ex, memory);
	rt_release(c->ex, src);
	return st;
}

/* ---- scratch: what each kernel above holds beside its operands, for the plan ---- */

/* scaled_dot_product_attention's scratch: one [L, S] score matrix. */
static int64_t sdpa_scratch(rt_call *c)
{
	const rt_tensor *q = rt_arg_or_null(c, "query"), *k = rt_arg_or_null(c, "key");
	if (!q || !k || q->ndim < 2 || k->ndim < 2)
		return 0;
	return q->shape[q->ndim - 2] * k->shape[k->ndim - 2] * (int64_t)sizeof(float);
}

/*
 * One multi-head attention of L queries over S2 keys and values (S plus
 * bias_k and the zero-attention column), batch N, width E, H heads: the
 * projected queries, the key rows before projection, projected keys and
 * values, one head's scores, the context, and the merged mask (per head:
 * N*H blocks) when masked.
 */
static int64_t attention_core(int64_t L, int64_t S2, int64_t N, int64_t E, int64_t H, bool masked)
{
	int64_t floats = L * N * E + S2 * N * E + 2 * N * S2 * E + L * S2 + L * N * E + 6;
	if (masked)
		floats += N * H * L * S2 + 1;
	return floats * (int64_t)sizeof(float);
}

static int64_t mha_scratch(rt_call *c)
{
	const rt_tensor *q = rt_arg_or_null(c, "query"), *k = rt_arg_or_null(c, "key");
	if (!q || !k || !c->module)
		return 0;
	bool bf = ti_bound_bool(&c->module->ctor, "batch_first");
	int64_t L, S, N, n;
	rt_sequence_dims(q, bf, &L, &N);
	rt_sequence_dims(k, bf, &S, &n);
	S += (ti_module_tensor_get(c->module, "bias_k") ? 1 : 0) + (ti_bound_bool(&c->module->ctor, "add_zero_attn") ? 1 : 0);
	bool masked = rt_arg_or_null(c, "attn_mask") || rt_arg_or_null(c, "key_padding_mask");
	return attention_core(L, S, N, rt_ctor_int(c->module, "embed_dim"), rt_ctor_int(c->module, "num_heads"), masked);
}

/*
 * The Transformer modules: for the longest sequence, two rows-by-E buffers
 * and the feed-forward's rows-by-F, and the largest of the attentions,
 * which run one after the other (self, to the memory, the encoder's).
 */
static int64_t transformer_scratch(rt_call *c)
{
	const ti_module *m = c->module;
	if (!m)
		return 0;
	bool whole = !strcmp(m->type, "Transformer"), bf = ti_bound_bool(&m->ctor, "batch_first");
	const rt_tensor *x = rt_arg_or_null(c, whole || strstr(m->type, "Decoder") ? "tgt" : "src");
	const rt_tensor *mem = whole ? rt_arg_or_null(c, "src") : rt_arg_or_null(c, "memory");
	if (!x)
		return 0;
	int64_t L, N, S = 0, n;
	rt_sequence_dims(x, bf, &L, &N);
	if (mem)
		rt_sequence_dims(mem, bf, &S, &n);
	int64_t E = rt_ctor_int(m, "d_model"), H = rt_ctor_int(m, "nhead"), F = rt_ctor_int(m, "dim_feedforward");
	int64_t rows = (L > S ? L : S) * N, most = attention_core(L, L, N, E, H, true);
	if (mem && attention_core(L, S, N, E, H, true) > most)
		most = attention_core(L, S, N, E, H, true);
	if (whole && attention_core(S, S, N, E, H, true) > most)
		most = attention_core(S, S, N, E, H, true);
	return (2 * rows * E + rows * F + 3) * (int64_t)sizeof(float) + most;
}

const rt_scratch rt_scratch_attention[] = {
	{k_sdpa, sdpa_scratch},
	{k_mha, mha_scratch},
	{k_transformer, transformer_scratch},
	{NULL, NULL},
};

const rt_kernel rt_kernels_attention[] = {
	{"scaled_dot_product_attention", false, k_sdpa, false},
	{"MultiheadAttention", true, k_mha, false},
	{"TransformerEncoderLayer", true, k_transformer, false},
	{"TransformerDecoderLayer", true, k_transformer, false},
	{"TransformerEncoder", true, k_transformer, false},
	{"TransformerDecoder", true, k_transformer, false},
	{"Transformer", true, k_transformer, false},
	{NULL, false, NULL, false},
};
