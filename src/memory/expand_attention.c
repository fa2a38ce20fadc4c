/*
 * expand_attention.c - attention as PyTorch 1.13 runs it, for the ledger:
 * nn.MultiheadAttention (F.multi_head_attention_forward), the
 * nn.TransformerEncoderLayer / TransformerEncoder built on it, and
 * F.scaled_dot_product_attention by its math kernel.
 *
 * multi_head_attention_forward, training path (no fast path):
 *   batch_first: query.transpose(1, 0)                 views
 *   self-attention: proj = linear(q, in_proj)          [T, B, 3E], saves q
 *     proj.unflatten(-1, (3, E))...contiguous()         a copy; q, k, v its views
 *   else: linear(q), linear(k), linear(v)               [T|S, B, E] each
 *   q, k, v .view(T, B*H, hd).transpose(0, 1)          views
 *   q / sqrt(hd)                                        new
 *   bmm(q, k^T) (baddbmm with a mask)                  [B*H, T, S], saves both
 *   softmax                                             new, saves its result
 *   dropout (training, p > 0)                           mask and output [B*H, T, S]
 *   bmm(attn, v)                                        [B*H, T, hd], saves both
 *   .transpose(0, 1).contiguous()                       a copy [T*B, E]
 *   linear(out_proj)                                    [T, B, E], saves its input
 *   need_weights: the weights averaged over heads       [B, T, S]
 */
#include <stdio.h>
#include <string.h>

#include "memory/memory_internal.h"

static int64_t f32(const mem_builder *b, int64_t elements)
{
	(void)b;
	int64_t bytes;
	return mem_mul(elements, 4, &bytes) ? bytes : -1;
}

typedef struct attn_shape {
	int64_t batch, target, source, embed, heads, vdim;
	int64_t elsize;
	bool folds; /* batch_first, more than one row of each: the input projections read [T, B, E] transposed views,
	               which linear's matmul copies to rows (and saves the copy in place of the input) */
} attn_shape;

static int64_t bytes_of(const attn_shape *s, int64_t a, int64_t b, int64_t c)
{
	int64_t n;
	if (!mem_mul(a, b, &n) || !mem_mul(n, c, &n) || !mem_mul(n, s->elsize, &n))
		return -1;
	return n;
}

/*
 * The core: q, k, v already projected and laid out [B*H, T|S, hd]; returns
 * the attention output [B*H, T, hd]. p is the dropout probability in force.
 */
static int attention_core(mem_builder *b, const attn_shape *s, int q, int k, int v, int mask, double p, bool scale_k,
                          int64_t v_repeat, const char *v_repeat_op, int hold, bool keep_scores, int *weights,
                          int *scaled, ti_error *err)
{
	int64_t bh = s->batch * s->heads, hd = s->embed / s->heads;
	int in[3] = {q};
	int qs = mem_step(b, "div", in, 1, 0, bytes_of(s, bh, s->target, hd), MEM_OUT_NEW, false, 0, err);
	if (qs < 0)
		return -1;
	*scaled = qs;
	int kt_in[1] = {k};
	int kt = mem_step(b, "transpose", kt_in, 1, 0, bytes_of(s, bh, hd, s->source), MEM_OUT_VIEW, false, 0, err);
	if (kt < 0)
		return -1;
	if (scale_k) { /* 2.x's math kernel scales both: q * sqrt(scale) @ (k^T * sqrt(scale)) */
		int ks_in[1] = {kt};
		if ((kt = mem_step(b, "mul", ks_in, 1, 0, bytes_of(s, bh, hd, s->source), MEM_OUT_NEW, false, 0, err)) < 0)
			return -1;
	}
	int mm_in[3] = {qs, kt, mask};
	int scores = mem_step(b, mask >= 0 ? "baddbmm" : "bmm", mm_in, 3, 3u, bytes_of(s, bh, s->target, s->source),
	                      MEM_OUT_NEW, false, 0, err);
	if (scores < 0)
		return -1;
	int sm_in[1] = {scores};
	int attn = mem_step(b, "softmax", sm_in, 1, 0, bytes_of(s, bh, s->target, s->source), MEM_OUT_NEW, true, 0, err);
	if (attn < 0)
		return -1;
	if (p > 0) {
		int d_in[1] = {attn};
		int64_t n = bytes_of(s, bh, s->target, s->source);
		attn = mem_step(b, "dropout", d_in, 1, 0, n, MEM_OUT_NEW, false, mem_dropout_saved(b, n, s->elsize, true), err);
		if (attn < 0)
			return -1;
	}
	*weights = attn;
	if (v_repeat > 0) { /* v copied (to the query's heads, or contiguous) only now: by the matmul that reads it */
		int r_in[1] = {v};
		if ((v = mem_step(b, v_repeat_op, r_in, 1, 0, v_repeat, MEM_OUT_NEW, false, 0, err)) < 0)
			return -1;
	}
	int o_in[2] = {attn, v};
	int out = mem_step(b, "bmm", o_in, 2, 3u, bytes_of(s, bh, s->target, s->vdim / s->heads), MEM_OUT_NEW, false, 0,
	                   err);
	/* hold: a tensor the caller's function keeps to its end, and with keep_scores the scores before the softmax,
	   which eager code keeps in a variable of their own: let go only now (read, not saved, no gradient) */
	mem_unit u;
	memset(&u, 0, sizeof(u));
	if (hold >= 0)
		u.in[u.nin++] = hold;
	if (keep_scores)
		u.in[u.nin++] = scores;
	if (out < 0 || !u.nin)
		return out;
	u.label = "(the attention's locals let go)";
	u.op = "release";
	u.module = b->module;
	u.fwd_scratch_grad = -1;
	u.release = true;
	return mem_emit(b, &u, err) ? -1 : out;
}

/*
 * PyTorch 2.x runs F.scaled_dot_product_attention (and MultiheadAttention
 * without need_weights) by one of its kernels, chosen in
 * aten/src/ATen/native/transformers/cuda/sdp_utils.cpp and sdp_utils_cpp.cpp
 * (1.13 has the math kernel only):
 *   CUDA  flash (float16/bfloat16, no attention mask, head size <= 256),
 *         else memory-efficient (float16/bfloat16/float32, head size a
 *         multiple of 8 / 4; masks allowed), else math;
 *   CPU   flash (no dropout; float32, float64, bfloat16, float16), else math.
 * A fused kernel keeps no attention matrix: it saves q, k, v, its output
 * (laid out [B, T, H, hd]) and the rows' logsumexp in float32
 * ([B, H, T], the memory-efficient kernel's rounded up to 32 rows, made
 * only when a gradient is wanted). Its backward makes the gradients of q,
 * k and v and, beside them, float32 rows of its own: delta [B, H, T]
 * (memory-efficient), softmax_d and the float32 accumulator of dq
 * [B, T128, H, hd32] (flash), a block of scores and of their gradient
 * per thread (the CPU's, blocks of qSplit x kvSplit).
 */
typedef enum sdpa_kernel { SDPA_MATH, SDPA_FLASH, SDPA_EFFICIENT, SDPA_FLASH_CPU } sdpa_kernel;

static const char *const sdpa_kernel_op[] = {
	[SDPA_MATH] = "scaled_dot_product_attention",
	[SDPA_FLASH] = "_scaled_dot_product_flash_attention",
	[SDPA_EFFICIENT] = "_scaled_dot_product_efficient_attention",
	[SDPA_FLASH_CPU] = "_scaled_dot_product_flash_attention_for_cpu",
};

/* Whether F.scaled_dot_product_attention may run fused: PyTorch 2, or --attn sdpa|flash asks for it. */
static bool sdpa_fusable(const mem_builder *b)
{
	ti_memory_attention a = b->options->attention;
	return a == TI_ATTN_SDPA || a == TI_ATTN_FLASH || (a == TI_ATTN_DEFAULT && ti_memory_torch(b->options) == TI_TORCH_2);
}

static sdpa_kernel sdpa_choose(const mem_builder *b, const attn_shape *s, bool masked, double p)
{
	if (!sdpa_fusable(b))
		return SDPA_MATH;
	int64_t hd = s->embed / s->heads, vd = s->vdim / s->heads;
	/* flash-attn's own kernel: no scores whatever the dtype or mask (its sliding windows and masks are its own) */
	if (b->options->attention == TI_ATTN_FLASH)
		return b->options->device == TI_MEMORY_CPU ? SDPA_FLASH_CPU : SDPA_FLASH;
	if (b->options->device == TI_MEMORY_CPU)
		return p == 0 && hd == vd ? SDPA_FLASH_CPU : SDPA_MATH;
	bool half = s->elsize == 2;
	if (half && !masked && hd == vd && hd <= 256)
		return SDPA_FLASH;
	int align = half ? 8 : 4;
	if ((half || s->elsize == 4) && hd % align == 0 && vd % align == 0)
		return SDPA_EFFICIENT;
	return SDPA_MATH;
}

static int64_t round_up(int64_t n, int64_t to)
{
	return (n + to - 1) / to * to;
}

/* One fused attention kernel on q, k, v laid out [B*H, T|S, hd]: its output [B*H, T, hd]. */
static int sdpa_fused(mem_builder *b, const attn_shape *s, sdpa_kernel kern, int q, int k, int v, int mask,
                      bool causal, ti_error *err)
{
	int64_t bh = s->batch * s->heads, hd = s->embed / s->heads, vd = s->vdim / s->heads;
	bool train = mem_training(b);
	int64_t rows = bh * (kern == SDPA_EFFICIENT ? round_up(s->target, 32) : s->target);
	int64_t lse = kern == SDPA_EFFICIENT && !train ? 0 : f32(b, rows);
	int in[4] = {q, k, v, mask};
	int o = mem_step(b, sdpa_kernel_op[kern], in, mask >= 0 ? 4 : 3, mask >= 0 ? 0xfu : 0x7u,
	                 bytes_of(s, bh, s->target, vd), MEM_OUT_NEW, true, train ? lse : 0, err);
	if (o < 0)
		return -1;
	mem_unit *u = &b->units[b->unit_count - 1];
	u->causal = causal || mask >= 0;  /* for the KV cache: a decoder's attention (find_kv) */
	u->fwd_scratch = train ? 0 : lse; /* made and let go when no gradient is wanted */
	if (kern == SDPA_FLASH_CPU) {
		/* one thread's blocks (sdp_utils_cpp's split sizes; the figures are of one thread) */
		int64_t qs = s->target >= 768 ? 256 : s->target >= 192 ? 64 : 32, kvs = 512;
		qs = qs < s->target ? qs : s->target;
		kvs = kvs < s->source ? kvs : s->source;
		u->fwd_scratch += f32(b, qs * kvs + 2 * qs + qs * vd);
		u->bwd_scratch = f32(b, 2 * qs * kvs);
	} else if (kern == SDPA_FLASH) {
		int64_t t128 = round_up(s->target, 128);
		u->bwd_scratch = f32(b, bh * t128) + f32(b, bh * t128 * round_up(hd, 32));
	} else {
		u->bwd_scratch = f32(b, bh * s->target);
	}
	return o;
}

static int linear(mem_builder *b, const ti_module *m, const char *weight, const char *bias, int x, int64_t out_bytes,
                  ti_error *err)
{
	int in[3] = {x, mem_param(b, m, weight), mem_param(b, m, bias)};
	return mem_step(b, "linear", in, 3, 3u, out_bytes, MEM_OUT_NEW, false, 0, err);
}

/*
 * An input projection: with s->folds its input is a transposed view that at::matmul copies to (T*B, E)
 * rows; mm saves the copy for the weight's gradient, not the input (measured on 1.13: a batch_first
 * MultiheadAttention keeps a [T*B, E] copy of its query in training).
 */
static int in_projection(mem_builder *b, const ti_module *m, const attn_shape *s, const char *weight, const char *bias,
                         int x, int64_t rows, int64_t out_bytes, ti_error *err)
{
	if (!s->folds)
		return linear(b, m, weight, bias, x, out_bytes, err);
	int in[3] = {x, mem_param(b, m, weight), mem_param(b, m, bias)};
	int64_t copy = bytes_of(s, rows, s->batch, s->embed);
	int y = mem_step(b, "linear", in, 3, 2u, out_bytes, MEM_OUT_NEW, false, 0, err);
	if (y >= 0) { /* kept while the weight wants a gradient */
		b->units[b->unit_count - 1].saved_cond = copy;
		b->units[b->unit_count - 1].saved_cond_if = 2u;
	}
	return y;
}

/* 1.13's linear(...).chunk(3, -1): three views of the projection made by one call, whose backward cats their
   gradients into one of the projection's size. */
static int chunk3(mem_builder *b, int proj, const attn_shape *s, const int64_t rows[3], int out[3], ti_error *err)
{
	int in[1] = {proj};
	out[0] = mem_step(b, "chunk", in, 1, 0, bytes_of(s, rows[0], s->batch, s->embed), MEM_OUT_VIEW, false, 0, err);
	if (out[0] < 0)
		return -1;
	mem_unit *u = &b->units[b->unit_count - 1];
	for (int i = 1; i < 3; i++) {
		out[i] = mem_tensor_view(b, proj, bytes_of(s, rows[i], s->batch, s->embed));
		if (out[i] < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger"), -1;
		b->tensors[out[i]].producer = (int)b->unit_count - 1;
		u->out[u->nout++] = out[i];
	}
	u->grad_view = 0;
	return 0;
}

/* One MultiheadAttention call of the module m (or a layer's part under prefix); returns the output tensor id. */
static int mha(mem_builder *b, const ti_module *m, const char *prefix, const attn_shape *s, int query, int key,
               int value, bool self, int mask, double p, bool need_weights, int *weights_out, ti_error *err)
{
	char w[96], bi[96];
	int64_t E = s->embed;
	int q, k, v;
	if (self) {
		snprintf(w, sizeof(w), "%sin_proj_weight", prefix);
		snprintf(bi, sizeof(bi), "%sin_proj_bias", prefix);
		int proj = in_projection(b, m, s, w, bi, query, s->target, bytes_of(s, s->target, s->batch, 3 * E), err);
		if (proj < 0)
			return -1;
		int c_in[1] = {proj};
		if (ti_memory_torch(b->options) != TI_TORCH_2) {
			/* 1.13: linear(...).chunk(3), then q, k and v each .contiguous(): three copies, the projection
			   let go after the last; the scaled q is saved, not q's copy (measured: a 2-head
			   self-attention in training keeps k's and v's copies only) */
			int64_t rows[3] = {s->target, s->source, s->source};
			int views[3], copies[3];
			if (chunk3(b, proj, s, rows, views, err))
				return -1;
			for (int i = 0; i < 3; i++) {
				int one[1] = {views[i]};
				copies[i] = mem_step(b, "contiguous", one, 1, 0, bytes_of(s, rows[i], s->batch, E), MEM_OUT_NEW,
				                     false, 0, err);
				if (copies[i] < 0)
					return -1;
				b->units[b->unit_count - 1].grad_view = 1u; /* CloneBackward hands the gradient on */
			}
			q = copies[0];
			k = copies[1];
			v = copies[2];
		} else {
			/* 2.x: the projection unflattened to (3, E) and made contiguous at once; q, k, v its views */
			int packed = mem_step(b, "contiguous", c_in, 1, 0, bytes_of(s, s->target, s->batch, 3 * E),
			                      MEM_OUT_NEW, false, 0, err);
			if (packed < 0)
				return -1;
			int v_in[1] = {packed};
			q = mem_step(b, "select", v_in, 1, 0, bytes_of(s, s->target, s->batch, E), MEM_OUT_VIEW, false, 0, err);
			k = mem_step(b, "select", v_in, 1, 0, bytes_of(s, s->source, s->batch, E), MEM_OUT_VIEW, false, 0, err);
			v = mem_step(b, "select", v_in, 1, 0, bytes_of(s, s->source, s->batch, E), MEM_OUT_VIEW, false, 0, err);
		}
	} else {
		const char *names[3][2] = {{"q_proj_weight", "in_proj_bias"}, {"k_proj_weight", "in_proj_bias"},
		                           {"v_proj_weight", "in_proj_bias"}};
		int64_t rows[3] = {s->target, s->source, s->source};
		int src[3] = {query, key, value};
		int outs[3];
		for (int i = 0; i < 3; i++) {
			snprintf(w, sizeof(w), "%s%s", prefix, mem_param(b, m, names[i][0]) >= 0 || *prefix ? names[i][0] : "in_proj_weight");
			snprintf(bi, sizeof(bi), "%s%s", prefix, names[i][1]);
			outs[i] = in_projection(b, m, s, w, bi, src[i], rows[i], bytes_of(s, rows[i], s->batch, E), err);
			if (outs[i] < 0)
				return -1;
		}
		q = outs[0];
		k = outs[1];
		v = outs[2];
	}
	if (q < 0 || k < 0 || v < 0)
		return -1;
	/* 2.x: without need_weights, F.scaled_dot_product_attention on q, k, v viewed [B, H, T, hd] */
	bool torch2 = ti_memory_torch(b->options) == TI_TORCH_2;
	sdpa_kernel kern = !need_weights ? sdpa_choose(b, s, mask >= 0, p) : SDPA_MATH;
	int weights = -1, scaled = -1;
	int o = kern != SDPA_MATH ? sdpa_fused(b, s, kern, q, k, v, mask, false, err)
	                          : attention_core(b, s, q, k, v, mask, p, torch2 && !need_weights, 0, NULL, -1, false, &weights, &scaled,
	                                          err);
	if (o < 0)
		return -1;
	/* [T, B, E] made contiguous: a copy, except a fused kernel's [B, T, H, hd] output at B = 1 */
	int c_in[1] = {o};
	int flat = mem_step(b, "contiguous", c_in, 1, 0, bytes_of(s, s->target, s->batch, E),
	                    kern != SDPA_MATH && s->batch == 1 ? MEM_OUT_VIEW : MEM_OUT_NEW, false, 0, err);
	if (flat < 0)
		return -1;
	snprintf(w, sizeof(w), "%sout_proj.weight", prefix);
	snprintf(bi, sizeof(bi), "%sout_proj.bias", prefix);
	int out = linear(b, m, w, bi, flat, bytes_of(s, s->target, s->batch, E), err);
	if (out < 0)
		return -1;
	*weights_out = -1;
	if (need_weights) {
		int a_in[1] = {weights};
		*weights_out = mem_step(b, "mean", a_in, 1, 0, bytes_of(s, s->batch, s->target, s->source), MEM_OUT_NEW, false,
		                        0, err);
		if (*weights_out < 0)
			return -1;
	}
	if (mem_training(b))
		return out; /* what backward needs is saved; the rest goes when autograd lets it */
	/*
	 * Inference: the function's locals live until it returns - q, k and v
	 * (the packed projection they view), the scaled q and, unless averaged
	 * away, the attention weights - beside the out-projection (measured on
	 * 1.13 with an odd head count, which takes this path: the peak above the
	 * input is max(6X + A, 4X + 2A) on 9 sizes).
	 */
	int keep[6] = {out, q, k, v, scaled, need_weights ? -1 : weights}, nkeep = 0;
	for (int i = 0; i < 6; i++)
		if (keep[i] >= 0)
			keep[nkeep++] = keep[i];
	return mem_step(b, "return", keep, nkeep, 0, bytes_of(s, s->target, s->batch, E), MEM_OUT_VIEW, false, 0, err);
}

/*
 * PyTorch 1.13's inference fast path (eval, no grad, batch_first,
 * self-attention, an even number of heads; MultiheadAttention also without
 * dropout or attn_mask): MultiheadAttention runs
 * _native_multi_head_attention and an encoder layer
 * _transformer_encoder_layer_fwd. native_multi_head_attention projects
 * qkv [B, T, 3E] and moves it into q_k_v [3, B, H, T, hd] (both live: 6X),
 * frees qkv, computes q k^T [B, H, T, T] and its softmax in place (3X + A),
 * writes the context into q's storage and projects it through a [B, T, E]
 * copy into the output (5X). The encoder layer adds its feed-forward's
 * hidden layer beside its input (F + 2X), and a pre-norm layer keeps its
 * norm's output beside the attention (X more); with need_weights q k^T is
 * kept through the projection (5X + A) and averaged over the heads
 * (4X + A + A/H). Measured with tests/tools/memshim.c on 1.13, the peak
 * above the input is exactly max(6X, A + 3X, F + 2X) (+ X pre-norm) on 15
 * sizes, and with need_weights max(6X, 5X + A, 4X + A + A/H) on 4. One unit each: a new output of the
 * input's size and the rest as scratch.
 */
static int fast_path(mem_builder *b, const char *op, int x, const attn_shape *s, int64_t ff, bool norm_first,
                     bool need_weights, ti_error *err)
{
	int64_t tok = bytes_of(s, s->batch, s->target, s->embed);
	int64_t a = bytes_of(s, s->batch * s->heads, s->target, s->source);
	int64_t hidden = ff ? bytes_of(s, s->batch, s->target, ff) : 0;
	if (tok < 0 || a < 0 || hidden < 0 || tok > TI_MEMORY_MAX_BYTES / 8)
		return TI_FAIL(err, TI_E_LIMIT, "attention past 2^62 bytes"), -1;
	int in[1] = {x};
	int out = mem_step(b, op, in, 1, 0, tok, MEM_OUT_NEW, false, 0, err);
	if (out < 0)
		return -1;
	mem_unit *u = &b->units[b->unit_count - 1];
	int64_t most = 5 * tok;
	if (a + 2 * tok > most)
		most = a + 2 * tok;
	if (ff && hidden + tok > most)
		most = hidden + tok;
	/* need_weights: q k^T is kept through the projection, then averaged over the heads beside the output */
	if (need_weights && 4 * tok + a > most)
		most = 4 * tok + a;
	if (need_weights && 3 * tok + a + a / s->heads > most)
		most = 3 * tok + a + a / s->heads;
	u->fwd_scratch = most + (norm_first ? tok : 0);
	return out;
}

/* 1.13's MultiheadAttention.forward and TransformerEncoderLayer.forward: why_not_fast_path is empty. */
static bool takes_fast_path(const mem_builder *b, const ti_module *m, int64_t heads, bool self, bool masked,
                            double dropout)
{
	return !mem_training(b) && self && !masked && ti_module_bool(m, "batch_first") && heads % 2 == 0 &&
	       dropout == 0;
}

static bool encoder_activation_fused(const ti_module *m)
{
	const char *act = ti_module_str(m, "activation");
	return !act || !strcmp(act, "relu") || !strcmp(act, "gelu");
}

/* The first tensor argument of a call by name, or NULL. */
static const ti_meta_tensor *arg_tensor(const ti_op_call *c, const char *name)
{
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, name))
			return c->in.args[i].kind == TI_ARG_TENSOR ? c->in.args[i].as.tensor : NULL;
	return NULL;
}

static bool arg_bool(const ti_op_call *c, const char *name, bool fallback)
{
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, name))
			return c->in.args[i].kind == TI_ARG_BOOL ? c->in.args[i].as.boolean : fallback;
	return fallback;
}

/* Binds the call's tensor outputs, in order, to ids (missing ones: new tensors of their own). */
static ti_status bind_outputs(mem_builder *b, const ti_op_call *c, const int *ids, int n, ti_error *err)
{
	int k = 0;
	for (int i = 0; i < c->output_count; i++) {
		const ti_arg *a = &c->outputs[i];
		const ti_arg *items = a->kind == TI_ARG_LIST ? a->as.list.items : a;
		int count = a->kind == TI_ARG_LIST ? a->as.list.count : 1;
		for (int j = 0; j < count; j++, k++) {
			if (items[j].kind != TI_ARG_TENSOR)
				continue;
			int id = k < n && ids[k] >= 0 ? ids[k] : -1;
			if (id < 0) {
				int in[1] = {-1};
				id = mem_step(b, "output", in, 0, 0, mem_meta_bytes(items[j].as.tensor), MEM_OUT_NEW, false, 0, err);
				if (id < 0)
					return err->code;
			}
			if (mem_tensor_bind(b, items[j].as.tensor, id))
				return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger");
		}
	}
	return TI_OK;
}

static ti_status shape_of(const ti_meta_tensor *q, const ti_meta_tensor *k, bool batch_first, int64_t heads,
                          attn_shape *s, ti_error *err)
{
	memset(s, 0, sizeof(*s));
	if (!q || q->ndim < 2 || !k || k->ndim < 2)
		return TI_FAIL(err, TI_E_INVALID, "attention: inputs of an unexpected rank");
	bool batched = q->ndim == 3;
	s->batch = batched ? q->shape[batch_first ? 0 : 1].value : 1;
	s->target = q->shape[batched && batch_first ? 1 : 0].value;
	s->source = k->shape[k->ndim == 3 && batch_first ? 1 : 0].value;
	s->folds = batched && batch_first && s->batch > 1 && s->target > 1;
	s->embed = q->shape[q->ndim - 1].value;
	s->vdim = s->embed;
	s->heads = heads > 0 ? heads : 1;
	s->elsize = (int64_t)ti_dtype_size(q->dtype);
	return TI_OK;
}

ti_status mem_expand_mha(mem_builder *b, const mem_event *ev, ti_error *err)
{
	const ti_op_call *c = ev->call;
	const ti_module *m = ev->module;
	const ti_meta_tensor *qm = arg_tensor(c, "query"), *km = arg_tensor(c, "key"), *vm = arg_tensor(c, "value");
	attn_shape s;
	ti_status st = shape_of(qm, km, ti_module_bool(m, "batch_first"), ti_module_dim(m, "num_heads").value, &s, err);
	if (st)
		return st;
	const ti_meta_tensor *mask = arg_tensor(c, "attn_mask");
	int q = mem_tensor_of(b, qm), k = mem_tensor_of(b, km), v = mem_tensor_of(b, vm);
	int mk = mask ? mem_tensor_of(b, mask) : -1;
	double p = mem_training(b) ? ti_module_float(m, "dropout") : 0;
	int weights = -1;
	bool self = qm == km && km == vm;
	int out = takes_fast_path(b, m, s.heads, self, mask != NULL, ti_module_float(m, "dropout"))
	        ? fast_path(b, "_native_multi_head_attention", q, &s, 0, false, arg_bool(c, "need_weights", true), err)
	        : mha(b, m, "", &s, q, k, v, self, mk, p, arg_bool(c, "need_weights", true), &weights, err);
	if (out < 0)
		return err->code;
	int ids[2] = {out, weights};
	return bind_outputs(b, c, ids, 2, err);
}

/* layer_norm saves its input and per-row mean and rstd. */
static int norm(mem_builder *b, const ti_module *m, const char *prefix, const char *which, int input,
                const attn_shape *s, ti_error *err)
{
	char w[128], bi[128];
	snprintf(w, sizeof(w), "%s%s.weight", prefix, which);
	snprintf(bi, sizeof(bi), "%s%s.bias", prefix, which);
	int in[3] = {input, mem_param(b, m, w), mem_param(b, m, bi)};
	return mem_step(b, "layer_norm", in, 3, 3u, bytes_of(s, s->target, s->batch, s->embed), MEM_OUT_NEW, false,
	                f32(b, 2 * s->target * s->batch), err);
}

/* Dropout in training: its noise or mask saved beside a new output (mem_dropout_saved). */
static int drop(mem_builder *b, int input, int64_t bytes, int64_t elsize, double p, ti_error *err)
{
	if (p <= 0)
		return input;
	int in[1] = {input};
	return mem_step(b, "dropout", in, 1, 0, bytes, MEM_OUT_NEW, false, mem_dropout_saved(b, bytes, elsize, true), err);
}

/* One TransformerEncoderLayer's units under prefix ("" or "layers.3."): attention, feed-forward, norms. */
static int encoder_layer(mem_builder *b, const ti_module *m, const char *prefix, int x, const attn_shape *s,
                         int mask, ti_error *err)
{
	double p = mem_training(b) ? ti_module_float(m, "dropout") : 0;
	bool norm_first = ti_module_bool(m, "norm_first");
	const char *act = ti_module_str(m, "activation");
	int64_t ff = ti_module_dim(m, "dim_feedforward").value;
	int64_t tok_bytes = bytes_of(s, s->target, s->batch, s->embed);
	int64_t ff_bytes = bytes_of(s, s->target, s->batch, ff);
	char name[128], name2[128], pre[96];
	/* self-attention block */
	int h = norm_first ? norm(b, m, prefix, "norm1", x, s, err) : x;
	if (h < 0)
		return -1;
	snprintf(pre, sizeof(pre), "%sself_attn.", prefix);
	int weights;
	int a = mha(b, m, pre, s, h, h, h, true, mask, p, false, &weights, err);
	if (a < 0 || (a = drop(b, a, tok_bytes, s->elsize, p, err)) < 0)
		return -1;
	int add_in[2] = {x, a};
	int sum = mem_step(b, "add", add_in, 2, 0, tok_bytes, MEM_OUT_NEW, false, 0, err);
	if (sum < 0)
		return -1;
	x = norm_first ? sum : norm(b, m, prefix, "norm1", sum, s, err);
	if (x < 0)
		return -1;
	/* feed-forward block */
	h = norm_first ? norm(b, m, prefix, "norm2", x, s, err) : x;
	if (h < 0)
		return -1;
	snprintf(name, sizeof(name), "%slinear1.weight", prefix);
	snprintf(name2, sizeof(name2), "%slinear1.bias", prefix);
	int l1_in[3] = {h, mem_param(b, m, name), mem_param(b, m, name2)};
	int f = mem_step(b, "linear", l1_in, 3, 3u, ff_bytes, MEM_OUT_NEW, false, 0, err);
	if (f < 0)
		return -1;
	int act_in[1] = {f};
	bool gelu = act && !strcmp(act, "gelu");
	f = mem_step(b, gelu ? "gelu" : "relu", act_in, 1, gelu ? 1u : 0u, ff_bytes, MEM_OUT_NEW, !gelu, 0, err);
	if (f < 0 || (f = drop(b, f, ff_bytes, s->elsize, p, err)) < 0)
		return -1;
	snprintf(name, sizeof(name), "%slinear2.weight", prefix);
	snprintf(name2, sizeof(name2), "%slinear2.bias", prefix);
	int l2_in[3] = {f, mem_param(b, m, name), mem_param(b, m, name2)};
	int y = mem_step(b, "linear", l2_in, 3, 3u, tok_bytes, MEM_OUT_NEW, false, 0, err);
	if (y < 0 || (y = drop(b, y, tok_bytes, s->elsize, p, err)) < 0)
		return -1;
	int add2_in[2] = {x, y};
	sum = mem_step(b, "add", add2_in, 2, 0, tok_bytes, MEM_OUT_NEW, false, 0, err);
	if (sum < 0)
		return -1;
	return norm_first ? sum : norm(b, m, prefix, "norm2", sum, s, err);
}
static ti_status expand_encoder(mem_builder *b, const mem_event *ev, bool stack, ti_error *err)
{
	const ti_op_call *c = ev->call;
	const ti_module *m = ev->module;
	const ti_meta_tensor *xm = arg_tensor(c, "src");
	attn_shape s;
	ti_status st = shape_of(xm, xm, ti_module_bool(m, "batch_first"), ti_module_dim(m, "nhead").value, &s, err);
	if (st)
		return st;
	const ti_meta_tensor *mask = arg_tensor(c, stack ? "mask" : "src_mask");
	int x = mem_tensor_of(b, xm), mk = mask ? mem_tensor_of(b, mask) : -1;
	int64_t layers = stack ? ti_module_dim(m, "num_layers").value : 1;
	/* the encoder layer's fast path does not ask about dropout (inference has none) but wants relu or gelu */
	bool fast = takes_fast_path(b, m, s.heads, true, mask != NULL, 0) && encoder_activation_fused(m);
	for (int64_t i = 0; i < layers && x >= 0; i++) {
		char prefix[48];
		prefix[0] = '\0';
		if (stack)
			snprintf(prefix, sizeof(prefix), "layers.%lld.", (long long)i);
		x = fast ? fast_path(b, "_transformer_encoder_layer_fwd", x, &s, ti_module_dim(m, "dim_feedforward").value,
		                     ti_module_bool(m, "norm_first"), false, err)
		         : encoder_layer(b, m, prefix, x, &s, mk, err);
	}
	if (x >= 0 && stack && mem_param(b, m, "norm.weight") >= 0)
		x = norm(b, m, "", "norm", x, &s, err);
	if (x < 0)
		return err->code;
	int ids[1] = {x};
	return bind_outputs(b, c, ids, 1, err);
}

ti_status mem_expand_encoder_layer(mem_builder *b, const mem_event *ev, ti_error *err)
{
	return expand_encoder(b, ev, false, err);
}

ti_status mem_expand_encoder(mem_builder *b, const mem_event *ev, ti_error *err)
{
	return expand_encoder(b, ev, true, err);
}

/* F.scaled_dot_product_attention, [..., L, E] inputs, by the kernel the version chooses (sdpa_choose). */
ti_status mem_expand_sdpa(mem_builder *b, const mem_event *ev, ti_error *err)
{
	const ti_op_call *c = ev->call;
	const ti_meta_tensor *qm = arg_tensor(c, "query"), *km = arg_tensor(c, "key"), *vm = arg_tensor(c, "value");
	if (!qm || !km || !vm || qm->ndim < 2)
		return mem_rule_default(b, ev, err);
	attn_shape s;
	memset(&s, 0, sizeof(s));
	s.elsize = (int64_t)ti_dtype_size(qm->dtype);
	s.batch = 1;
	for (int i = 0; i + 2 < qm->ndim; i++)
		s.batch *= qm->shape[i].value;
	s.heads = 1;
	s.target = qm->shape[qm->ndim - 2].value;
	s.source = km->shape[km->ndim - 2].value;
	s.embed = qm->shape[qm->ndim - 1].value;
	s.vdim = vm->shape[vm->ndim - 1].value;
	/* a decode step (kv_tokens): the new token attends over the cache, not over its own key alone */
	int64_t cached = b->options->kv_tokens, window = mem_kv_window(b);
	if (window > 0 && cached > window)
		cached = window;
	if (cached > s.source)
		s.source = cached;
	const ti_meta_tensor *mask = arg_tensor(c, "attn_mask");
	double p = 0;
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, "dropout_p") && c->in.args[i].kind == TI_ARG_FLOAT)
			p = c->in.args[i].as.real;
	int weights;
	int mask_id = mask ? mem_tensor_of(b, mask) : -1;
	/* code that runs its own matmul, softmax and matmul (the description's "attention": "eager") runs no fused
	   kernel unless --attn asks for one */
	unsigned eager = mem_attention(b);
	sdpa_kernel kern = (eager & TI_MODEL_ATTN_EAGER) && b->options->attention == TI_ATTN_DEFAULT
	                 ? SDPA_MATH : sdpa_choose(b, &s, mask_id >= 0, mem_training(b) ? p : 0);
	if (kern == SDPA_MATH && mask_id < 0 && arg_bool(c, "is_causal", false)) {
		/* the math kernel builds it, a bool [L, S] made for this call and let go after it */
		int none[1] = {-1};
		if ((mask_id = mem_step(b, "tril", none, 0, 0, s.target * s.source, MEM_OUT_NEW, false, 0, err)) < 0)
			return err->code;
	}
	int q = mem_tensor_of(b, qm), k = mem_tensor_of(b, km), v = mem_tensor_of(b, vm);
	if (cached > km->shape[km->ndim - 2].value && km->shape[km->ndim - 2].value > 0 &&
	    vm->shape[vm->ndim - 2].value > 0) {
		/*
		 * The cache grows by torch.cat (DynamicCache.update): the layer's keys at
		 * one token more are made while the old ones are held and replace them, then
		 * its values. The old keys go before the new values come unless they share
		 * the values' storage (measured on 1.13: GPT-2's first decode step, whose old
		 * keys and values view its fused projection, peaks at both new ones beside
		 * it; DeepSeek-V3's, whose keys are their own and values a view of kv_b_proj,
		 * at the new keys alone).
		 */
		int64_t kb = mem_meta_bytes(km) / km->shape[km->ndim - 2].value * (cached + 1);
		int64_t vb = mem_meta_bytes(vm) / vm->shape[vm->ndim - 2].value * (cached + 1);
		int64_t es = (int64_t)ti_dtype_size(km->dtype);
		if (b->options->kv_dtype && es > 0) { /* a cache in its own dtype grows in it */
			kb = kb / es * (int64_t)ti_dtype_size(b->options->kv_dtype);
			vb = vb / es * (int64_t)ti_dtype_size(b->options->kv_dtype);
		}
		int64_t grow = kb + vb;
		if (b->tensors[k].storage != b->tensors[v].storage) {
			int64_t old_keys = kb / (cached + 1) * cached;
			grow = kb + vb - old_keys > kb ? kb + vb - old_keys : kb;
		}
		int grow_in[2] = {k, v};
		if (mem_step(b, "cat", grow_in, 2, 0, grow, MEM_OUT_NEW, false, 0, err) < 0)
			return err->code;
	}
	int64_t v_repeat = 0;
	const char *v_repeat_op = "repeat_interleave";
	int held = -1; /* the repeated keys: a local of the function that made them, to its end */
	bool grouped = kern == SDPA_MATH && qm->ndim >= 3 && km->ndim == qm->ndim && vm->ndim == qm->ndim &&
	               km->shape[km->ndim - 3].value < qm->shape[qm->ndim - 3].value;
	if (kern == SDPA_MATH && !grouped && ti_memory_torch(b->options) == TI_TORCH_1_13 &&
	    cached <= km->shape[km->ndim - 2].value) {
		/*
		 * Eager attention's matmuls fold their batch dimensions with reshape, a
		 * copy when the keys or values are strided views (a fused projection's
		 * slices, a transposed [B, T, H, hd]); bmm saves the copy, and the
		 * projection's output can go (measured on 1.13: GPT-NeoX's training step
		 * keeps a copy of v, not the qkv it views).
		 */
		int k_in[1] = {k}, v_in[1] = {v};
		if (!ti_meta_is_contiguous(&b->model->ctx, km) &&
		    (k = mem_step(b, "contiguous", k_in, 1, 0, mem_meta_bytes(km), MEM_OUT_NEW, false, 0, err)) < 0)
			return err->code;
		/* without a graph the copy of v is the second matmul's, made when it runs (measured on 1.13: T5's
		   decode step copies its cross-attention's keys, then its values, never both at once) */
		if (!ti_meta_is_contiguous(&b->model->ctx, vm) && !mem_training(b)) {
			v_repeat = mem_meta_bytes(vm);
			v_repeat_op = "contiguous";
		} else if (!ti_meta_is_contiguous(&b->model->ctx, vm) &&
		           (v = mem_step(b, "contiguous", v_in, 1, 0, mem_meta_bytes(vm), MEM_OUT_NEW, false, 0, err)) < 0)
			return err->code;
	}
	if (kern == SDPA_MATH && qm->ndim >= 3 && km->ndim == qm->ndim && vm->ndim == qm->ndim &&
	    km->shape[km->ndim - 3].value < qm->shape[qm->ndim - 3].value) {
		/* grouped-query attention (enable_gqa, or Hugging Face's repeat_kv before an eager step): the math path
		   repeats k and v to the query's heads, copies as large as q's, let go after the call */
		int k_in[1] = {k}, v_in[1] = {v};
		/*
		 * One key/value head (multi-query) on 1.13: repeat_kv's reshape of the
		 * expand is a view, and each matmul copies its operand when it runs, the
		 * keys for the scores and the values after the softmax, one at a time
		 * (measured: Gemma with one KV head decodes with one copy live, not two).
		 */
		bool mqa = km->shape[km->ndim - 3].value == 1 && ti_memory_torch(b->options) == TI_TORCH_1_13;
		if ((k = mem_step(b, "repeat_interleave", k_in, 1, 0, bytes_of(&s, s.batch, s.source, s.embed), MEM_OUT_NEW,
		                  false, 0, err)) < 0)
			return err->code;
		/*
		 * Hugging Face's eager_attention_forward (and 2.x's math kernel) keeps the
		 * repeated keys in a local to its end, beside the scores and the repeated
		 * values (measured on 1.13: Qwen3-MoE's prefill peaks at q, both repeats and
		 * the scores twice).
		 */
		held = mqa ? -1 : k;
		if (mqa)
			v_repeat = bytes_of(&s, s.batch, s.source, s.vdim);
		else if ((v = mem_step(b, "repeat_interleave", v_in, 1, 0, bytes_of(&s, s.batch, s.source, s.vdim),
		                       MEM_OUT_NEW, false, 0, err)) < 0)
			return err->code;
	}
	int scaled;
	int out = kern != SDPA_MATH ? sdpa_fused(b, &s, kern, q, k, v, mask_id, arg_bool(c, "is_causal", false), err)
	                            : attention_core(b, &s, q, k, v, mask_id, p, ti_memory_torch(b->options) == TI_TORCH_2,
	                                             v_repeat, v_repeat_op, held, (eager & TI_MODEL_ATTN_KEEPS_SCORES) != 0,
	                                             &weights, &scaled, err);
	if (out < 0)
		return err->code;
	int ids[1] = {out};
	return bind_outputs(b, c, ids, 1, err);
}
