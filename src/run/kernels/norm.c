/*
 * norm.c - batch_norm (running statistics, or the batch's), instance_norm
 * (the input's statistics, or running ones), layer_norm, group_norm,
 * rms_norm, local_response_norm, normalize, in float32 with sums in double.
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

/*
 * Per channel k of x viewed as [n, channels, inner]: y = x * scale + shift,
 * scale = weight / sqrt(var + eps), shift = bias - mean * scale, as
 * PyTorch's batch_norm_cpu_collect_linear_and_constant_terms folds them.
 * mean and var are the running statistics, or (mean NULL) the channel's own
 * over n and inner, the variance biased. instance_norm is this on
 * [1, n * C, inner] with each per-channel tensor repeated n times (at k % C).
 */
typedef struct channels_job {
	const float *x;
	float *y;
	const rt_tensor *mean, *var, *w, *b;
	int64_t n, channels, inner, per; /* per: the per-channel tensors' length */
	double eps;
} channels_job;

static void norm_channels(void *user, int64_t begin, int64_t end)
{
	channels_job *j = user;
	for (int64_t k = begin; k < end; k++) {
		int64_t at_k = k % j->per;
		double mean, var;
		if (j->mean) {
			mean = at(j->mean, at_k), var = at(j->var, at_k);
		} else {
			double sum = 0, sq = 0, count = (double)(j->n * j->inner);
			for (int64_t i = 0; i < j->n; i++) {
				const float *src = j->x + (i * j->channels + k) * j->inner;
				for (int64_t p = 0; p < j->inner; p++)
					sum += src[p];
			}
			mean = count > 0 ? sum / count : 0;
			for (int64_t i = 0; i < j->n; i++) {
				const float *src = j->x + (i * j->channels + k) * j->inner;
				for (int64_t p = 0; p < j->inner; p++)
					sq += (src[p] - mean) * (src[p] - mean);
			}
			var = count > 0 ? sq / count : 0;
		}
		float scale = (float)((j->w ? at(j->w, at_k) : 1.0f) / sqrt(var + j->eps));
		float shift = (float)((j->b ? at(j->b, at_k) : 0.0f) - mean * scale);
		for (int64_t i = 0; i < j->n; i++) {
			const float *src = j->x + (i * j->channels + k) * j->inner;
			float *dst = j->y + (i * j->channels + k) * j->inner;
			for (int64_t p = 0; p < j->inner; p++)
				dst[p] = src[p] * scale + shift;
		}
	}
}

/* The tensors and settings of a batch or instance norm, however the call gives them. */
typedef struct channel_norm_args {
	rt_tensor *input, *mean, *var, *weight, *bias;
	bool from_input, instance;
	bool unbatched; /* an InstanceNorm module's input without its batch dim */
	double eps;
} channel_norm_args;

static ti_status channel_norm(rt_call *c, const channel_norm_args *a, ti_error *err)
{
	rt_tensor *in = a->input, *xc, *y;
	if (in->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for norms on %s", ti_dtype_name(in->dtype));
	if (!a->from_input && (!a->mean || !a->var))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a norm without running statistics");
	int batch_dims = a->unbatched ? 0 : 1;
	if (in->ndim < batch_dims + 1)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a %d-d norm input", in->ndim);
	ti_status st = TI_OK;
	/* over the input when nothing reads it after (a convolution's output, in ResNet): each channel's
	   values are read, for its statistics too, before they are written */
	if ((y = rt_reuse(c, ti_bound_tensor(&c->call->in, "input"), TI_DT_FLOAT32, in->ndim, in->shape))) {
		xc = y;
		y->refs++;
	} else if ((st = prepared(c, in, &xc, &y, err))) {
		return st;
	}
	int64_t n = batch_dims ? in->shape[0] : 1, channels = in->shape[batch_dims], inner = 1;
	for (int d = batch_dims + 1; d < in->ndim; d++)
		inner *= in->shape[d];
	channels_job j = {rt_f32(xc), rt_f32(y), a->from_input ? NULL : a->mean, a->var, a->weight, a->bias, n,
	                  channels, inner, channels, a->eps};
	if (a->instance)
		j.n = 1, j.channels = n * channels;
	int64_t per_channel = j.n * inner;
	rt_parallel(c, j.channels, per_channel ? 4096 / per_channel + 1 : 1, norm_channels, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

/* batch_norm and instance_norm, the operators. */
static ti_status channel_norm_op(rt_call *c, bool instance, ti_error *err)
{
	channel_norm_args a = {.instance = instance};
	ti_status st = args4(c, "input", &a.input, &a.weight, &a.bias, err);
	if (!st)
		st = rt_arg(c, "running_mean", &a.mean, err);
	if (!st)
		st = rt_arg(c, "running_var", &a.var, err);
	if (st)
		return st;
	a.from_input = ti_bound_bool(&c->call->in, instance ? "use_input_stats" : "training");
	a.eps = rt_float(c, "eps");
	return channel_norm(c, &a, err);
}

static ti_status k_batch_norm(rt_call *c, ti_error *err) { return channel_norm_op(c, false, err); }
static ti_status k_instance_norm(rt_call *c, ti_error *err) { return channel_norm_op(c, true, err); }

/*
 * InstanceNorm1d/2d/3d as modules: their forward unsqueezes an unbatched
 * input into a view the executor never sees made, so the module runs
 * whole. Runs are in eval mode: running statistics when it tracks them.
 */
static ti_status k_instance_norm_module(rt_call *c, ti_error *err)
{
	const ti_module *m = c->module;
	channel_norm_args a = {.instance = true};
	ti_status st = rt_arg(c, "input", &a.input, err);
	if (!st)
		st = rt_param(c, "weight", &a.weight, err);
	if (!st)
		st = rt_param(c, "bias", &a.bias, err);
	if (!st)
		st = rt_param(c, "running_mean", &a.mean, err);
	if (!st)
		st = rt_param(c, "running_var", &a.var, err);
	if (st)
		return st;
	int spatial = m->type[strlen(m->type) - 2] - '0'; /* "InstanceNorm2d" */
	a.unbatched = a.input->ndim == spatial + 1;
	a.from_input = !ti_module_bool(m, "track_running_stats");
	a.eps = ti_module_float(m, "eps");
	return channel_norm(c, &a, err);
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

/*
 * F.local_response_norm: x / (k + alpha * avg)^beta, avg the mean of x^2
 * over channels c - size / 2 .. c + (size - 1) / 2 with zeros outside, the
 * divisor always size (functional.py pads, then avg_pool counts the pads).
 */
typedef struct lrn_job {
	const float *x;
	float *y;
	int64_t channels, inner, size;
	double alpha, beta, k;
} lrn_job;

static void lrn_rows(void *user, int64_t begin, int64_t end)
{
	lrn_job *j = user;
	for (int64_t r = begin; r < end; r++) {
		int64_t image = r / j->channels, ch = r % j->channels;
		int64_t lo = ch - j->size / 2, hi = ch + (j->size - 1) / 2;
		lo = lo > 0 ? lo : 0;
		hi = hi < j->channels - 1 ? hi : j->channels - 1;
		const float *x = j->x + r * j->inner;
		float *y = j->y + r * j->inner;
		for (int64_t p = 0; p < j->inner; p++) {
			double sq = 0;
			for (int64_t c = lo; c <= hi; c++) {
				double v = j->x[(image * j->channels + c) * j->inner + p];
				sq += v * v;
			}
			y[p] = (float)(x[p] / pow(sq / (double)j->size * j->alpha + j->k, j->beta));
		}
	}
}

static ti_status k_local_response_norm(rt_call *c, ti_error *err)
{
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	if (in->dtype != TI_DT_FLOAT32 || in->ndim < 2)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for local_response_norm on %s",
		               ti_dtype_name(in->dtype));
	if ((st = prepared(c, in, &xc, &y, err)))
		return st;
	lrn_job j = {rt_f32(xc), rt_f32(y), in->shape[1], 1, rt_int(c, "size"), rt_float(c, "alpha"),
	             rt_float(c, "beta"), rt_float(c, "k")};
	for (int d = 2; d < in->ndim; d++)
		j.inner *= in->shape[d];
	rt_parallel(c, in->shape[0] * j.channels, 1, lrn_rows, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

/*
 * F.normalize: x / max(||x||_p, eps) along dim, the norm
 * torch.linalg.vector_norm's: max |x| for p = inf, min for -inf, the count
 * of non-zeros for 0, (sum |x|^p)^(1/p) otherwise.
 */
typedef struct normalize_job {
	const float *x;
	float *y;
	int64_t len, inner;
	double p, eps;
} normalize_job;

static void normalize_lines(void *user, int64_t begin, int64_t end)
{
	normalize_job *j = user;
	for (int64_t l = begin; l < end; l++) {
		int64_t outer = l / j->inner, at = outer * j->len * j->inner + l % j->inner;
		const float *x = j->x + at;
		float *y = j->y + at;
		double norm = isinf(j->p) && j->p < 0 ? INFINITY : 0;
		for (int64_t i = 0; i < j->len; i++) {
			double v = fabs((double)x[i * j->inner]);
			if (isinf(j->p))
				norm = j->p > 0 ? (v > norm || v != v ? v : norm) : (v < norm || v != v ? v : norm);
			else if (j->p == 0)
				norm += v != 0;
			else if (j->p == 1)
				norm += v;
			else if (j->p == 2)
				norm += v * v;
			else
				norm += pow(v, j->p);
		}
		if (!isinf(j->p) && j->p != 0 && j->p != 1)
			norm = j->p == 2 ? sqrt(norm) : pow(norm, 1.0 / j->p);
		float denom = (float)(norm > j->eps || norm != norm ? norm : j->eps);
		for (int64_t i = 0; i < j->len; i++)
			y[i * j->inner] = x[i * j->inner] / denom;
	}
}

static ti_status k_normalize(rt_call *c, ti_error *err)
{
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	if (in->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for normalize on %s", ti_dtype_name(in->dtype));
	int64_t dim = rt_int(c, "dim");
	int ndim = in->ndim ? in->ndim : 1;
	dim = dim < 0 ? dim + ndim : dim;
	if ((st = prepared(c, in, &xc, &y, err)))
		return st;
	normalize_job j = {rt_f32(xc), rt_f32(y), in->ndim ? in->shape[dim] : 1, 1, rt_float(c, "p"),
	                   rt_float(c, "eps")};
	for (int d = (int)dim + 1; d < in->ndim; d++)
		j.inner *= in->shape[d];
	rt_parallel(c, j.len ? rt_numel(in) / j.len : 0, 64, normalize_lines, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

const rt_kernel rt_kernels_norm[] = {
	{"batch_norm", false, k_batch_norm, false},
	{"layer_norm", false, k_layer_norm, false},
	{"rms_norm", false, k_rms_norm, false},
	{"group_norm", false, k_group_norm, false},
	{"instance_norm", false, k_instance_norm, false},
	{"local_response_norm", false, k_local_response_norm, false},
	{"normalize", false, k_normalize, false},
	{"InstanceNorm1d", true, k_instance_norm_module, false},
	{"InstanceNorm2d", true, k_instance_norm_module, false},
	{"InstanceNorm3d", true, k_instance_norm_module, false},
	{NULL, false, NULL, false},
};
