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

/*
 * conv1d/conv2d/conv3d: im2col columns of one group of one image, (C_in /
 * groups) * kernel elements by output plane; none for a 1x1 kernel of
 * stride 1 without padding (the image is the matrix).
 */
static int64_t conv(rt_call *c)
{
	const rt_tensor *x = arg(c, "input"), *w = arg(c, "weight");
	if (!x || !w || c->call->output_count < 1 || c->call->outputs[0].kind != TI_ARG_TENSOR)
		return 0;
	const ti_meta_tensor *y = c->call->outputs[0].as.tensor;
	int spatial = w->ndim - 2;
	bool direct = true;
	for (int d = 0; d < spatial; d++)
		direct = direct && w->shape[2 + d] == 1 && y->shape[y->ndim - spatial + d].value == x->shape[x->ndim - spatial + d];
	if (direct)
		return 0;
	int64_t plane = 1;
	for (int d = 0; d < spatial; d++)
		plane *= y->shape[y->ndim - spatial + d].value;
	return w->shape[1] * prod(w->shape + 2, spatial) * plane * (int64_t)sizeof(float);
}

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

/* MultiheadAttention's core: projected q, k, v ((L + 2S) N E), one head's scores (L S), the context (L N E). */
static int64_t mha_core(int64_t L, int64_t S, int64_t N, int64_t E)
{
	return ((L + 2 * S) * N * E + L * S + L * N * E + 3) * (int64_t)sizeof(float);
}

static int64_t mha(rt_call *c)
{
	const rt_tensor *q = arg(c, "query"), *k = arg(c, "key");
	if (!q || !k || !c->module)
		return 0;
	bool bf = ti_bound_bool(&c->module->ctor, "batch_first"), batched = q->ndim == 3;
	int64_t L = q->shape[batched && bf ? 1 : 0], S = k->shape[batched && bf ? 1 : 0];
	int64_t N = batched ? q->shape[bf ? 0 : 1] : 1;
	return mha_core(L, S, N, dim(c->module, "embed_dim"));
}

/* TransformerEncoderLayer: two rows-by-E buffers and the feed-forward's rows-by-F, and its attention inside. */
static int64_t encoder_layer(rt_call *c)
{
	const rt_tensor *x = arg(c, "src");
	if (!x || !c->module)
		return 0;
	bool bf = ti_bound_bool(&c->module->ctor, "batch_first"), batched = x->ndim == 3;
	int64_t L = x->shape[batched && bf ? 1 : 0], N = batched ? x->shape[bf ? 0 : 1] : 1;
	int64_t E = dim(c->module, "d_model"), F = dim(c->module, "dim_feedforward");
	return (2 * L * N * E + L * N * F + 3) * (int64_t)sizeof(float) + mha_core(L, L, N, E);
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
	{"TransformerEncoderLayer", true, encoder_layer},
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
