/*
 * norm.c - batch_norm (eval: running statistics), layer_norm, group_norm,
 * rms_norm, in float32 with sums in double.
 */
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

static ti_status args4(rt_call *c, const char *n0, rt_tensor **x, rt_tensor **w, rt_tensor **b, ti_error *err)
{
	ti_status st = rt_arg(c, n0, x, err);
	if (!st)
		st = rt_arg(c, "weight", w, err);
	if (!st)
		st = rt_arg(c, "bias", b, err);
	if (!st && (*x)->dtype != TI_DT_FLOAT32)
		st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for norms on %s", ti_dtype_name((*x)->dtype));
	return st;
}

static ti_status prepared(rt_call *c, rt_tensor *in, rt_tensor **xc, rt_tensor **y, ti_error *err)
{
	ti_status st = rt_contiguous(c, in, xc, err);
	if (!st && (st = rt_new(c, TI_DT_FLOAT32, in->ndim, in->shape, y, err)))
		rt_release(c->ex, *xc);
	return st;
}

static float at(const rt_tensor *t, int64_t i) { return t ? rt_f32(t)[i * t->stride[0]] : 0.0f; }

static ti_status k_batch_norm(rt_call *c, ti_error *err)
{
	rt_tensor *in, *w, *b, *mean, *var, *xc, *y;
	ti_status st = args4(c, "input", &in, &w, &b, err);
	if (!st)
		st = rt_arg(c, "running_mean", &mean, err);
	if (!st)
		st = rt_arg(c, "running_var", &var, err);
	if (st)
		return st;
	if (ti_bound_bool(&c->call->in, "training") || !mean || !var)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for batch_norm with batch statistics (training)");
	double eps = rt_float(c, "eps");
	if ((st = prepared(c, in, &xc, &y, err)))
		return st;
	int64_t n = in->shape[0], ch = in->ndim > 1 ? in->shape[1] : 1, inner = 1;
	for (int d = 2; d < in->ndim; d++)
		inner *= in->shape[d];
	const float *x = rt_f32(xc);
	float *o = rt_f32(y);
	for (int64_t k = 0; k < ch; k++) {
		float scale = (float)((w ? at(w, k) : 1.0f) / sqrt((double)at(var, k) + eps));
		float shift = (b ? at(b, k) : 0.0f) - at(mean, k) * scale;
		for (int64_t i = 0; i < n; i++) {
			const float *src = x + (i * ch + k) * inner;
			float *dst = o + (i * ch + k) * inner;
			for (int64_t p = 0; p < inner; p++)
				dst[p] = src[p] * scale + shift;
		}
	}
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

typedef struct rows_job {
	const float *x;
	float *y;
	const rt_tensor *w, *b;
	int64_t len;
	double eps;
	bool rms;
} rows_job;

static void norm_rows(void *user, int64_t begin, int64_t end)
{
	rows_job *j = user;
	for (int64_t r = begin; r < end; r++) {
		const float *x = j->x + r * j->len;
		float *y = j->y + r * j->len;
		double sum = 0, sq = 0;
		for (int64_t i = 0; i < j->len; i++)
			sum += x[i];
		double mean = j->rms ? 0 : sum / (double)j->len;
		for (int64_t i = 0; i < j->len; i++)
			sq += (x[i] - mean) * (x[i] - mean);
		/*
		 * As PyTorch's kernel: rstd in float, then y = x * rstd + (-mean * rstd)
		 * rounded once (a fused multiply-add; the product of two floats is
		 * exact in double). Over one element x - mean is 0, but PyTorch gives
		 * the rounding residue of mean * rstd (about 1e-5), and so does this.
		 */
		float scale = 1.0f / sqrtf((float)(sq / (double)j->len) + (float)j->eps);
		float bias = -scale * (float)mean;
		for (int64_t i = 0; i < j->len; i++) {
			float v = (float)((double)x[i] * scale + bias);
			if (j->w)
				v *= rt_f32(j->w)[i];
			if (j->b)
				v += rt_f32(j->b)[i];
			y[i] = v;
		}
	}
}

/* layer_norm and rms_norm: over the last dims of normalized_shape (weight and bias contiguous, that shape). */
static ti_status last_dims(rt_call *c, bool rms, ti_error *err)
{
	rt_tensor *in, *w, *b = NULL, *xc, *y, *wc = NULL, *bc = NULL;
	ti_status st = rms ? rt_arg(c, "input", &in, err) : args4(c, "input", &in, &w, &b, err);
	if (!st && rms)
		st = rt_arg(c, "weight", &w, err);
	if (st)
		return st;
	int64_t dims[RT_MAX_DIMS];
	int nd = rt_ints(c, "normalized_shape", dims, RT_MAX_DIMS);
	int64_t len = 1;
	for (int i = 0; i < nd; i++)
		len *= dims[i];
	const ti_arg *e = ti_bound_get(&c->call->in, "eps");
	double eps = e && e->kind == TI_ARG_FLOAT ? e->as.real : rms ? 1.1920928955078125e-07 : 1e-5; /* rms: finfo.eps */
	if ((st = prepared(c, in, &xc, &y, err)))
		return st;
	if (w && (st = rt_contiguous(c, w, &wc, err)))
		goto done;
	if (b && (st = rt_contiguous(c, b, &bc, err)))
		goto done;
	rows_job j = {rt_f32(xc), rt_f32(y), wc, bc, len, eps, rms};
	rt_parallel(c, len ? rt_numel(y) / len : 0, len ? 4096 / len + 1 : 1, norm_rows, &j);
done:
	rt_release(c->ex, xc);
	rt_release(c->ex, wc);
	rt_release(c->ex, bc);
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

static ti_status k_layer_norm(rt_call *c, ti_error *err) { return last_dims(c, false, err); }
static ti_status k_rms_norm(rt_call *c, ti_error *err) { return last_dims(c, true, err); }

static ti_status k_group_norm(rt_call *c, ti_error *err)
{
	rt_tensor *in, *w, *b, *xc, *y;
	ti_status st = args4(c, "input", &in, &w, &b, err);
	if (st)
		return st;
	int64_t groups = rt_int(c, "num_groups");
	double eps = rt_float(c, "eps");
	if ((st = prepared(c, in, &xc, &y, err)))
		return st;
	int64_t n = in->shape[0], ch = in->shape[1], inner = 1;
	for (int d = 2; d < in->ndim; d++)
		inner *= in->shape[d];
	int64_t per = ch / groups;
	rows_job j = {rt_f32(xc), rt_f32(y), NULL, NULL, per * inner, eps, false};
	rt_parallel(c, n * groups, 1, norm_rows, &j);
	float *o = rt_f32(y);
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = 0; k < ch; k++) {
			float scale = w ? at(w, k) : 1.0f, shift = b ? at(b, k) : 0.0f;
			for (int64_t p = 0; p < inner; p++)
				o[(i * ch + k) * inner + p] = o[(i * ch + k) * inner + p] * scale + shift;
		}
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

const rt_kernel rt_kernels_norm[] = {
	{"batch_norm", false, k_batch_norm, false},
	{"layer_norm", false, k_layer_norm, false},
	{"rms_norm", false, k_rms_norm, false},
	{"group_norm", false, k_group_norm, false},
	{NULL, false, NULL, false},
};
