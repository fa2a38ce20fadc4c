/*
 * scratch.c - the temporaries a kernel holds beside its inputs and outputs
 * (convolution's columns, attention's scores and projections), for the
 * plan's peak: the walk without data adds them to what is live while the
 * kernel runs, so a run that would pass the ceiling is refused before
 * anything is allocated. One row per kernel that takes scratch, sized from
 * the call's shapes exactly as the kernel sizes its buffers; a kernel
 * without a row takes none worth counting (a few rows of a loop).
 */
#include <string.h>

#include "run/run_internal.h"

typedef int64_t (*scratch_fn)(rt_call *c);

static const rt_tensor *arg(rt_call *c, const char *name)
{
	ti_error ignored;
	ti_error_clear(&ignored);
	rt_tensor *t = NULL;
	return rt_arg(c, name, &t, &ignored) ? NULL : t;
}

static int64_t dim(const ti_module *m, const char *name) { return ti_bound_dim(&m->ctor, name).value; }

static int64_t prod(const int64_t *v, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= v[i];
	return p;
}

/* conv1d/conv2d/conv3d: conv.c sizes them, as it sizes its buffers (its columns, oneDNN's copies). */
static int64_t conv(rt_call *c) { return rt_conv_scratch_bytes(c); }

/* conv_transpose1d/2d/3d: the columns W^T x of one group of one image, (C_out / groups) * kernel by input plane. */
static int64_t conv_transpose(rt_call *c)
{
	const rt_tensor *x = arg(c, "input"), *w = arg(c, "weight");
	if (!x || !w || w->ndim < 3 || x->ndim < w->ndim - 2)
		return 0;
	int spatial = w->ndim - 2;
	return w->shape[1] * prod(w->shape + 2, spatial) * prod(x->shape + x->ndim - spatial, spatial) *
	       (int64_t)sizeof(float);
}

/* bilinear: x2 A^T, batch by out * in1. */
static int64_t bilinear(rt_call *c)
{
	const rt_tensor *x1 = arg(c, "input1"), *w = arg(c, "weight");
	if (!x1 || !w || w->ndim != 3)
		return 0;
	return prod(x1->shape, x1->ndim) * w->shape[0] * (int64_t)sizeof(float);
}


/* scaled_dot_product_attention: one [L, S] score matrix. */
static int64_t sdpa(rt_call *c)
{
	const rt_tensor *q = arg(c, "query"), *k = arg(c, "key");
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

/* The (L, N) of a sequence argument: [L, N, E], [N, L, E] when batch_first, [L, E] unbatched. */
static void sequence(const rt_tensor *x, bool batch_first, int64_t *L, int64_t *N)
{
	bool batched = x->ndim == 3;
	*L = x->shape[batched && batch_first ? 1 : 0];
	*N = batched ? x->shape[batch_first ? 0 : 1] : 1;
}

static int64_t mha(rt_call *c)
{
	const rt_tensor *q = arg(c, "query"), *k = arg(c, "key");
	if (!q || !k || !c->module)
		return 0;
	bool bf = ti_bound_bool(&c->module->ctor, "batch_first");
	int64_t L, S, N, n;
	sequence(q, bf, &L, &N);
	sequence(k, bf, &S, &n);
	S += (ti_module_tensor_get(c->module, "bias_k") ? 1 : 0) + (ti_bound_bool(&c->module->ctor, "add_zero_attn") ? 1 : 0);
	bool masked = arg(c, "attn_mask") || arg(c, "key_padding_mask");
	return attention_core(L, S, N, dim(c->module, "embed_dim"), dim(c->module, "num_heads"), masked);
}

/*
 * The Transformer modules: for the longest sequence, two rows-by-E buffers
 * and the feed-forward's rows-by-F, and the largest of the attentions,
 * which run one after the other (self, to the memory, the encoder's).
 */
static int64_t transformer(rt_call *c)
{
	const ti_module *m = c->module;
	if (!m)
		return 0;
	bool whole = !strcmp(m->type, "Transformer"), bf = ti_bound_bool(&m->ctor, "batch_first");
	const rt_tensor *x = arg(c, whole || strstr(m->type, "Decoder") ? "tgt" : "src");
	const rt_tensor *mem = whole ? arg(c, "src") : arg(c, "memory");
	if (!x)
		return 0;
	int64_t L, N, S = 0, n;
	sequence(x, bf, &L, &N);
	if (mem)
		sequence(mem, bf, &S, &n);
	int64_t E = dim(m, "d_model"), H = dim(m, "nhead"), F = dim(m, "dim_feedforward");
	int64_t rows = (L > S ? L : S) * N, most = attention_core(L, L, N, E, H, true);
	if (mem && attention_core(L, S, N, E, H, true) > most)
		most = attention_core(L, S, N, E, H, true);
	if (whole && attention_core(S, S, N, E, H, true) > most)
		most = attention_core(S, S, N, E, H, true);
	return (2 * rows * E + rows * F + 3) * (int64_t)sizeof(float) + most;
}

/*
 * RNN, LSTM, GRU: two layers' outputs (one for a single layer), the input
 * gates of the whole sequence, one step's hidden gates, and the state.
 */
static int64_t rnn(rt_call *c)
{
	const rt_tensor *x = arg(c, "input");
	const ti_module *m = c->module;
	if (!x || !m || (x->ndim != 2 && x->ndim != 3))
		return 0;
	int64_t L, N;
	sequence(x, ti_bound_bool(&m->ctor, "batch_first"), &L, &N);
	int64_t H = dim(m, "hidden_size"), layers = dim(m, "num_layers");
	int64_t proj = !strcmp(m->type, "LSTM") ? dim(m, "proj_size") : 0, R = proj > 0 ? proj : H;
	int64_t G = !strcmp(m->type, "LSTM") ? 4 : !strcmp(m->type, "GRU") ? 3 : 1;
	int64_t width = (ti_bound_bool(&m->ctor, "bidirectional") ? 2 : 1) * R, rows = L * N;
	int64_t floats = (layers > 1 ? 2 : 1) * (rows * width + 1) + rows * G * H + N * G * H + 3 * N * H + 4;
	return floats * (int64_t)sizeof(float);
}

static const struct {
	const char *name;
	bool module;
	scratch_fn bytes;
} rows[] = {
	{"conv1d", false, conv},
	{"conv2d", false, conv},
	{"conv3d", false, conv},
	{"conv_transpose1d", false, conv_transpose},
	{"conv_transpose2d", false, conv_transpose},
	{"conv_transpose3d", false, conv_transpose},
	{"bilinear", false, bilinear},
	{"scaled_dot_product_attention", false, sdpa},
	{"MultiheadAttention", true, mha},
	{"TransformerEncoderLayer", true, transformer},
	{"TransformerDecoderLayer", true, transformer},
	{"TransformerEncoder", true, transformer},
	{"TransformerDecoder", true, transformer},
	{"Transformer", true, transformer},
	{"RNN", true, rnn},
	{"LSTM", true, rnn},
	{"GRU", true, rnn},
};

int64_t rt_scratch_bytes(rt_call *c, const char *name, bool module)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].module == module && !strcmp(rows[i].name, name)) {
			int64_t n = rows[i].bytes(c);
			return n > 0 ? n : 0;
		}
	return 0;
}
