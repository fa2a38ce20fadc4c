/*
 * pool.c - max_pool2d, avg_pool2d (count_include_pad, ceil_mode,
 * divisor_override), adaptive_avg_pool2d, adaptive_max_pool2d without
 * indices; 1-d forms as a height of 1 are not wired yet. Output sizes are
 * the propagated ones (ceil_mode's rule is the shape rule's).
 */
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

static int64_t pick(const int64_t *v, int n, int i, int64_t fallback) { return n == 0 ? fallback : n == 1 ? v[0] : v[i]; }

typedef struct pool_job {
	const float *x;
	float *y;
	int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
	bool max, include_pad, adaptive;
	int64_t divisor;
} pool_job;

static void pool_planes(void *user, int64_t begin, int64_t end)
{
	pool_job *j = user;
	for (int64_t p = begin; p < end; p++) {
		const float *x = j->x + p * j->h * j->w;
		float *y = j->y + p * j->oh * j->ow;
		for (int64_t oi = 0; oi < j->oh; oi++)
			for (int64_t oj = 0; oj < j->ow; oj++) {
				int64_t h0, h1, w0, w1;
				if (j->adaptive) { /* PyTorch's start = floor(i * in / out), end = ceil((i + 1) * in / out) */
					h0 = oi * j->h / j->oh, h1 = ((oi + 1) * j->h + j->oh - 1) / j->oh;
					w0 = oj * j->w / j->ow, w1 = ((oj + 1) * j->w + j->ow - 1) / j->ow;
				} else {
					h0 = oi * j->sh - j->ph, w0 = oj * j->sw - j->pw;
					h1 = h0 + (j->kh - 1) * j->dh + 1, w1 = w0 + (j->kw - 1) * j->dw + 1;
				}
				if (j->max) {
					float m = -INFINITY;
					for (int64_t a = h0; a < h1; a += j->adaptive ? 1 : j->dh)
						for (int64_t b = w0; b < w1; b += j->adaptive ? 1 : j->dw)
							if (a >= 0 && a < j->h && b >= 0 && b < j->w) {
								float v = x[a * j->w + b];
								if (v > m || v != v)
									m = v;
							}
					y[oi * j->ow + oj] = m;
					continue;
				}
				/* the padded window, clipped to input + padding, counts when count_include_pad */
				int64_t ph1 = h1 < j->h + j->ph ? h1 : j->h + j->ph, pw1 = w1 < j->w + j->pw ? w1 : j->w + j->pw;
				int64_t padded = (ph1 - h0) * (pw1 - w0);
				int64_t a0 = h0 > 0 ? h0 : 0, b0 = w0 > 0 ? w0 : 0;
				int64_t a1 = h1 < j->h ? h1 : j->h, b1 = w1 < j->w ? w1 : j->w;
				double sum = 0;
				for (int64_t a = a0; a < a1; a++)
					for (int64_t b = b0; b < b1; b++)
						sum += x[a * j->w + b];
				int64_t count = j->divisor ? j->divisor
				                           : j->adaptive || !j->include_pad ? (a1 - a0) * (b1 - b0) : padded;
				y[oi * j->ow + oj] = (float)(sum / (double)(count ? count : 1));
			}
	}
}

static ti_status pool(rt_call *c, bool max, bool adaptive, ti_error *err)
{
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	if (in->dtype != TI_DT_FLOAT32 || in->ndim < 3)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this pooling on %s", ti_dtype_name(in->dtype));
	const ti_arg *indices = ti_bound_get(&c->call->in, "return_indices");
	if (indices && indices->kind == TI_ARG_BOOL && indices->as.boolean)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for pooling with return_indices=True");
	const ti_arg *o = &c->call->outputs[0];
	if (o->kind != TI_ARG_TENSOR)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this pooling");
	const ti_meta_tensor *m = o->as.tensor;
	pool_job j = {.max = max, .adaptive = adaptive, .h = in->shape[in->ndim - 2], .w = in->shape[in->ndim - 1],
	              .oh = m->shape[m->ndim - 2].value, .ow = m->shape[m->ndim - 1].value, .dh = 1, .dw = 1};
	if (!adaptive) {
		int64_t k[2], s[2], p[2], d[2];
		int nk = rt_ints(c, "kernel_size", k, 2), ns = rt_ints(c, "stride", s, 2), np = rt_ints(c, "padding", p, 2);
		j.kh = pick(k, nk, 0, 1), j.kw = pick(k, nk, 1, 1);
		j.sh = pick(s, ns, 0, j.kh), j.sw = pick(s, ns, 1, j.kw);
		j.ph = pick(p, np, 0, 0), j.pw = pick(p, np, 1, 0);
		if (max) {
			int nd = rt_ints(c, "dilation", d, 2);
			j.dh = pick(d, nd, 0, 1), j.dw = pick(d, nd, 1, 1);
		} else {
			j.include_pad = ti_bound_bool(&c->call->in, "count_include_pad");
			const ti_arg *div = ti_bound_get(&c->call->in, "divisor_override");
			j.divisor = div && div->kind == TI_ARG_INT ? div->as.dim.value : 0;
		}
	}
	int64_t shape[RT_MAX_DIMS];
	memcpy(shape, in->shape, sizeof(shape));
	shape[in->ndim - 2] = j.oh;
	shape[in->ndim - 1] = j.ow;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, TI_DT_FLOAT32, in->ndim, shape, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	j.x = rt_f32(xc);
	j.y = rt_f32(y);
	int64_t planes = (j.h * j.w) != 0 ? rt_numel(in) / (j.h * j.w) : 0;
	rt_parallel(c, planes, 4, pool_planes, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

static ti_status k_max_pool2d(rt_call *c, ti_error *err) { return pool(c, true, false, err); }
static ti_status k_avg_pool2d(rt_call *c, ti_error *err) { return pool(c, false, false, err); }
static ti_status k_adaptive_avg_pool2d(rt_call *c, ti_error *err) { return pool(c, false, true, err); }
static ti_status k_adaptive_max_pool2d(rt_call *c, ti_error *err) { return pool(c, true, true, err); }

const rt_kernel rt_kernels_pool[] = {
	{"max_pool2d", false, k_max_pool2d, false},
	{"avg_pool2d", false, k_avg_pool2d, false},
	{"adaptive_avg_pool2d", false, k_adaptive_avg_pool2d, false},
	{"adaptive_max_pool2d", false, k_adaptive_max_pool2d, false},
	{NULL, false, NULL, false},
};
