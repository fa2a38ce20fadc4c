/*
 * conv.c - conv1d and conv2d (Conv1d, Conv2d through their functional
 * operators): im2col and one sgemm per image and group, zero padding,
 * stride, dilation and groups. A 1x1 convolution with stride 1 and no
 * padding reads the input as the column matrix itself. conv1d is conv2d on
 * a height of 1. Columns are built in parallel over input channels; sgemm
 * threads itself.
 */
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

typedef struct geometry {
	int64_t channels, height, width;       /* of one group's input */
	int64_t kh, kw, sh, sw, ph, pw, dh, dw;
	int64_t out_h, out_w;
} geometry;

typedef struct im2col_job {
	const geometry *g;
	const float *image;   /* the group's first channel */
	float *cols;          /* [channels * kh * kw, out_h * out_w] */
} im2col_job;

static void im2col_range(void *user, int64_t begin, int64_t end)
{
	im2col_job *j = user;
	const geometry *g = j->g;
	int64_t plane = g->out_h * g->out_w;
	for (int64_t ch = begin; ch < end; ch++) {
		const float *src = j->image + ch * g->height * g->width;
		for (int64_t ki = 0; ki < g->kh; ki++)
			for (int64_t kj = 0; kj < g->kw; kj++) {
				float *dst = j->cols + ((ch * g->kh + ki) * g->kw + kj) * plane;
				for (int64_t oh = 0; oh < g->out_h; oh++) {
					int64_t ih = oh * g->sh - g->ph + ki * g->dh;
					float *row = dst + oh * g->out_w;
					if (ih < 0 || ih >= g->height) {
						memset(row, 0, (size_t)g->out_w * sizeof(*row));
						continue;
					}
					const float *in = src + ih * g->width;
					int64_t base = kj * g->dw - g->pw;
					if (g->sw == 1 && base >= 0 && base + g->out_w <= g->width) {
						memcpy(row, in + base, (size_t)g->out_w * sizeof(*row));
						continue;
					}
					for (int64_t ow = 0; ow < g->out_w; ow++) {
						int64_t iw = ow * g->sw + base;
						row[ow] = iw >= 0 && iw < g->width ? in[iw] : 0.0f;
					}
				}
			}
	}
}

static int64_t pick(const int64_t *v, int n, int i) { return n == 0 ? 0 : n == 1 ? v[0] : v[i]; }

ti_status rt_k_conv(rt_call *c, ti_error *err)
{
	rt_tensor *in, *w, *b;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "weight", &w, err);
	if (!st)
		st = rt_arg(c, "bias", &b, err);
	if (st)
		return st;
	if (in->dtype != TI_DT_FLOAT32 || w->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for convolutions on %s", ti_dtype_name(in->dtype));
	int spatial = w->ndim - 2;
	if (spatial != 1 && spatial != 2)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for conv%dd", spatial);
	bool batched = in->ndim == spatial + 2;
	int64_t stride[2], dilation[2], padding[2] = {0, 0};
	int ns = rt_ints(c, "stride", stride, 2), nd = rt_ints(c, "dilation", dilation, 2);
	int64_t groups = rt_int(c, "groups");
	int64_t ksize[2] = {spatial == 2 ? w->shape[2] : 1, w->shape[spatial + 1]};
	int64_t size[2] = {spatial == 2 ? in->shape[in->ndim - 2] : 1, in->shape[in->ndim - 1]};
	int64_t s[2] = {spatial == 2 ? pick(stride, ns, 0) : 1, pick(stride, ns, spatial - 1)};
	int64_t d[2] = {spatial == 2 ? pick(dilation, nd, 0) : 1, pick(dilation, nd, spatial - 1)};
	const char *mode = ti_bound_str(&c->call->in, "padding");
	if (mode && !strcmp(mode, "same")) { /* PyTorch puts the odd one on the right: out = in at stride 1 */
		for (int i = 0; i < 2; i++)
			padding[i] = d[i] * (ksize[i] - 1) / 2;
	} else if (!mode) {
		int64_t p[2];
		int np = rt_ints(c, "padding", p, 2);
		padding[0] = spatial == 2 ? pick(p, np, 0) : 0;
		padding[1] = pick(p, np, spatial - 1);
	}
	geometry g = {
		.channels = in->shape[batched ? 1 : 0] / groups, .height = size[0], .width = size[1],
		.kh = ksize[0], .kw = ksize[1], .sh = s[0], .sw = s[1], .ph = padding[0], .pw = padding[1],
		.dh = d[0], .dw = d[1],
	};
	if (mode && !strcmp(mode, "same")) {
		g.out_h = g.height;
		g.out_w = g.width;
	} else {
		g.out_h = (g.height + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
		g.out_w = (g.width + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
	}
	int64_t images = batched ? in->shape[0] : 1, out_ch = w->shape[0], per_group = out_ch / groups;
	int64_t shape[4], k = g.channels * g.kh * g.kw, plane = g.out_h * g.out_w;
	int n = 0;
	if (batched)
		shape[n++] = images;
	shape[n++] = out_ch;
	if (spatial == 2)
		shape[n++] = g.out_h;
	shape[n++] = g.out_w;
	rt_tensor *xc, *wc, *y;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_contiguous(c, w, &wc, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	if ((st = rt_new(c, TI_DT_FLOAT32, n, shape, &y, err)))
		goto done;
	bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && !g.ph && !g.pw;
	float *cols = NULL;
	if (!direct && !(cols = malloc((size_t)((k * plane) != 0 ? k * plane : 1) * sizeof(*cols)))) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the convolution's columns");
		rt_release(c->ex, y);
		goto done;
	}
	const float *x = rt_f32(xc), *wt = rt_f32(wc), *bias = b ? rt_f32(b) : NULL;
	float *out = rt_f32(y);
	for (int64_t img = 0; img < images; img++)
		for (int64_t grp = 0; grp < groups; grp++) {
			const float *image = x + (img * groups + grp) * g.channels * g.height * g.width;
			float *dst = out + (img * out_ch + grp * per_group) * plane;
			float beta = 0;
			if (bias) {
				for (int64_t o = 0; o < per_group; o++)
					for (int64_t p = 0; p < plane; p++)
						dst[o * plane + p] = bias[(grp * per_group + o) * b->stride[0]];
				beta = 1;
			}
			const float *colmat = image;
			if (!direct) {
				im2col_job j = {&g, image, cols};
				rt_parallel(c, g.channels, 1, im2col_range, &j);
				colmat = cols;
			}
			rt_sgemm(false, false, per_group, plane, k, 1.0f, wt + grp * per_group * k, k, colmat, plane, beta, dst,
			         plane);
		}
	free(cols);
	st = rt_output(c, y, err);
done:
	rt_release(c->ex, xc);
	rt_release(c->ex, wc);
	return st;
}
