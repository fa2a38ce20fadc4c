/*
 * pool.c - max_pool1d/2d/3d, avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d,
 * adaptive_max_pool1d/2d/3d, with return_indices where the op has it.
 *
 * One kernel for every rank: the pooled dims are the input's last 1, 2 or
 * 3, a lower rank taking size 1, kernel 1, stride 1 and no padding in the
 * leading ones, and each plane (the dims before) is pooled on its own, in
 * parallel. Output sizes are the propagated ones (ceil_mode's rule is the
 * shape rule's); windows are PyTorch's CPU kernels' (MaxPoolKernel.cpp,
 * AvgPoolKernel.cpp, AdaptivePooling.h):
 *   max  start = o * s - p, taps start + t * d inside the input; the index
 *        (flat in the pooled dims) starts at the first tap inside and moves
 *        to a larger value or a NaN;
 *   avg  [o * s - p, + k) clipped to input + padding is the padded window
 *        (count_include_pad), clipped to the input the summed one; a
 *        divisor_override divides instead;
 *   adaptive  [floor(o * in / out), ceil((o + 1) * in / out)).
 */
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

#define POOL_DIMS 3

typedef struct pool_job {
	const float *x;
	float *y;
	int64_t *indices;    /* NULL without return_indices */
	int64_t in[POOL_DIMS], out[POOL_DIMS];
	int64_t kernel[POOL_DIMS], stride[POOL_DIMS], padding[POOL_DIMS], dilation[POOL_DIMS];
	bool max, include_pad, adaptive;
	int64_t divisor;     /* divisor_override, 0: none */
} pool_job;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Dim i's window of output position o: taps lo, lo + step, ... below hi, in input coordinates (may lie outside). */
static void window(const pool_job *j, int i, int64_t o, int64_t *lo, int64_t *hi, int64_t *step)
{
	if (j->adaptive) {
		*lo = o * j->in[i] / j->out[i];
		*hi = ((o + 1) * j->in[i] + j->out[i] - 1) / j->out[i];
		*step = 1;
		return;
	}
	*lo = o * j->stride[i] - j->padding[i];
	*hi = *lo + (j->kernel[i] - 1) * j->dilation[i] + 1;
	*step = j->dilation[i];
}

/* The first tap of [lo, hi) by step that lies inside [0, size), and the end of the inside taps. */
static void inside(int64_t lo, int64_t hi, int64_t step, int64_t size, int64_t *first, int64_t *end)
{
	*first = lo;
	while (*first < 0)
		*first += step;
	*end = min64(hi, size);
}

static void max_at(const pool_job *j, const float *x, const int64_t o[POOL_DIMS], float *y, int64_t *index)
{
	int64_t first[POOL_DIMS], end[POOL_DIMS], step[POOL_DIMS];
	for (int i = 0; i < POOL_DIMS; i++) {
		int64_t lo, hi;
		window(j, i, o[i], &lo, &hi, &step[i]);
		inside(lo, hi, step[i], j->in[i], &first[i], &end[i]);
	}
	float m = -INFINITY;
	int64_t at = (first[0] * j->in[1] + first[1]) * j->in[2] + first[2];
	for (int64_t a = first[0]; a < end[0]; a += step[0])
		for (int64_t b = first[1]; b < end[1]; b += step[1])
			for (int64_t c = first[2]; c < end[2]; c += step[2]) {
				int64_t k = (a * j->in[1] + b) * j->in[2] + c;
				float v = x[k];
				if (v > m || v != v) {
					m = v;
					at = k;
				}
			}
	*y = m;
	if (index)
		*index = at;
}

static float avg_at(const pool_job *j, const float *x, const int64_t o[POOL_DIMS])
{
	int64_t first[POOL_DIMS], end[POOL_DIMS], padded = 1, summed = 1;
	for (int i = 0; i < POOL_DIMS; i++) {
		int64_t lo, hi, step;
		window(j, i, o[i], &lo, &hi, &step);
		if (!j->adaptive)
			padded *= min64(hi, j->in[i] + j->padding[i]) - lo;
		first[i] = max64(lo, 0);
		end[i] = min64(hi, j->in[i]);
		if (first[i] >= end[i])
			return 0.0f; /* a window wholly in the padding: PyTorch writes 0 */
		summed *= end[i] - first[i];
	}
	double sum = 0;
	for (int64_t a = first[0]; a < end[0]; a++)
		for (int64_t b = first[1]; b < end[1]; b++)
			for (int64_t c = first[2]; c < end[2]; c++)
				sum += x[(a * j->in[1] + b) * j->in[2] + c];
	int64_t count = j->divisor ? j->divisor : j->adaptive || !j->include_pad ? summed : padded;
	return (float)(sum / (double)count);
}

/*
 * Max pooling without indices, a row of outputs at a time: each output
 * still takes its taps in max_at's order (depth, row, then column), so
 * ties and NaN go the same way, but the loop over a row's outputs is
 * straight-line code the compiler vectorises, with no window arithmetic
 * per output (ResNet's max_pool2d took 30 ms at batch 8 element by element).
 */
static void max_rows(const pool_job *j, const float *x, float *y)
{
	int64_t width = j->out[2], s2 = j->stride[2], p2 = j->padding[2], d2 = j->dilation[2];
	for (int64_t o0 = 0; o0 < j->out[0]; o0++)
		for (int64_t o1 = 0; o1 < j->out[1]; o1++) {
			float *row = y + (o0 * j->out[1] + o1) * width;
			for (int64_t w = 0; w < width; w++)
				row[w] = -INFINITY;
			int64_t lo0, hi0, step0, lo1, hi1, step1, first0, end0, first1, end1;
			window(j, 0, o0, &lo0, &hi0, &step0);
			window(j, 1, o1, &lo1, &hi1, &step1);
			inside(lo0, hi0, step0, j->in[0], &first0, &end0);
			inside(lo1, hi1, step1, j->in[1], &first1, &end1);
			for (int64_t a = first0; a < end0; a += step0)
				for (int64_t b = first1; b < end1; b += step1) {
					const float *line = x + (a * j->in[1] + b) * j->in[2];
					for (int64_t k = 0; k < j->kernel[2]; k++) {
						/* outputs w whose tap k lies inside: 0 <= w * s2 - p2 + k * d2 < in[2] */
						int64_t shift = k * d2 - p2, w0 = 0, w1 = width;
						if (shift < 0)
							w0 = (-shift + s2 - 1) / s2;
						if (j->in[2] - shift <= 0)
							w1 = 0;
						else if ((j->in[2] - shift + s2 - 1) / s2 < w1)
							w1 = (j->in[2] - shift + s2 - 1) / s2;
						for (int64_t w = w0; w < w1; w++) {
							float v = line[w * s2 + shift], m = row[w];
							row[w] = v > m || v != v ? v : m;
						}
					}
				}
		}
}

static void pool_planes(void *user, int64_t begin, int64_t end)
{
	pool_job *j = user;
	int64_t in_plane = j->in[0] * j->in[1] * j->in[2], out_plane = j->out[0] * j->out[1] * j->out[2];
	for (int64_t p = begin; p < end; p++) {
		const float *x = j->x + p * in_plane;
		if (j->max && !j->adaptive && !j->indices) {
			max_rows(j, x, j->y + p * out_plane);
			continue;
		}
		int64_t o[POOL_DIMS];
		for (int64_t n = 0; n < out_plane; n++) {
			o[0] = n / (j->out[1] * j->out[2]), o[1] = n / j->out[2] % j->out[1], o[2] = n % j->out[2];
			int64_t at = p * out_plane + n;
			if (j->max)
				max_at(j, x, o, &j->y[at], j->indices ? &j->indices[at] : NULL);
			else
				j->y[at] = avg_at(j, x, o);
		}
	}
}

/* A window argument's value for pooled dim i of dims (one value repeats; none: fallback). */
static int64_t pick(const int64_t *v, int n, int i, int64_t fallback) { return n <= 0 ? fallback : n == 1 ? v[0] : v[i]; }

static ti_status pool(rt_call *c, int dims, bool max, bool adaptive, ti_error *err)
{
	rt_tensor *in, *xc, *y = NULL, *idx = NULL;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	const ti_arg *o = &c->call->outputs[0];
	if (in->dtype != TI_DT_FLOAT32 || in->ndim < dims || o->kind != TI_ARG_TENSOR)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this pooling on %s", ti_dtype_name(in->dtype));
	const ti_meta_tensor *m = o->as.tensor;
	int lead = POOL_DIMS - dims;
	pool_job j = {.max = max, .adaptive = adaptive};
	for (int i = 0; i < POOL_DIMS; i++) {
		int at = i - lead;
		j.in[i] = at < 0 ? 1 : in->shape[in->ndim - dims + at];
		j.out[i] = at < 0 ? 1 : m->shape[m->ndim - dims + at].value;
		j.kernel[i] = j.stride[i] = j.dilation[i] = 1;
		j.padding[i] = 0;
	}
	if (!adaptive) {
		int64_t k[POOL_DIMS], s[POOL_DIMS], p[POOL_DIMS], d[POOL_DIMS];
		int nk = rt_ints(c, "kernel_size", k, POOL_DIMS), ns = rt_ints(c, "stride", s, POOL_DIMS);
		int np = rt_ints(c, "padding", p, POOL_DIMS), nd = max ? rt_ints(c, "dilation", d, POOL_DIMS) : 0;
		for (int i = lead; i < POOL_DIMS; i++) {
			j.kernel[i] = pick(k, nk, i - lead, 1);
			j.stride[i] = pick(s, ns, i - lead, j.kernel[i]); /* stride=None: the kernel */
			j.padding[i] = pick(p, np, i - lead, 0);
			j.dilation[i] = pick(d, nd, i - lead, 1);
		}
		if (!max) {
			j.include_pad = ti_bound_bool(&c->call->in, "count_include_pad");
			const ti_arg *div = ti_bound_get(&c->call->in, "divisor_override");
			j.divisor = div && div->kind == TI_ARG_INT ? div->as.dim.value : 0;
		}
	}
	int64_t shape[RT_MAX_DIMS];
	for (int i = 0; i < m->ndim && i < RT_MAX_DIMS; i++)
		shape[i] = m->shape[i].value;
	bool indices = c->call->output_count > 1;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, TI_DT_FLOAT32, m->ndim, shape, &y, err)) ||
	    (indices && (st = rt_new(c, TI_DT_INT64, m->ndim, shape, &idx, err))))
		goto done;
	j.x = rt_f32(xc);
	j.y = rt_f32(y);
	j.indices = idx ? rt_i64(idx) : NULL;
	int64_t pooled = j.in[0] * j.in[1] * j.in[2];
	rt_parallel(c, pooled ? rt_numel(in) / pooled : 0, 4, pool_planes, &j);
	st = rt_output(c, y, err);
	y = NULL;
	if (!st && idx) {
		st = rt_output(c, idx, err);
		idx = NULL;
	}
done:
	rt_release(c->ex, y);
	rt_release(c->ex, idx);
	rt_release(c->ex, xc);
	return st;
}

/* One row per operator: its pooled rank and kind. */
#define POOL_KERNEL(fn, dims, max, adaptive) \
	static ti_status fn(rt_call *c, ti_error *err) { return pool(c, dims, max, adaptive, err); }
POOL_KERNEL(k_max_pool1d, 1, true, false)
POOL_KERNEL(k_max_pool2d, 2, true, false)
POOL_KERNEL(k_max_pool3d, 3, true, false)
POOL_KERNEL(k_avg_pool1d, 1, false, false)
POOL_KERNEL(k_avg_pool2d, 2, false, false)
POOL_KERNEL(k_avg_pool3d, 3, false, false)
POOL_KERNEL(k_adaptive_avg_pool1d, 1, false, true)
POOL_KERNEL(k_adaptive_avg_pool2d, 2, false, true)
POOL_KERNEL(k_adaptive_avg_pool3d, 3, false, true)
POOL_KERNEL(k_adaptive_max_pool1d, 1, true, true)
POOL_KERNEL(k_adaptive_max_pool2d, 2, true, true)
POOL_KERNEL(k_adaptive_max_pool3d, 3, true, true)

const rt_kernel rt_kernels_pool[] = {
	{"max_pool1d", false, k_max_pool1d, false},
	{"max_pool2d", false, k_max_pool2d, false},
	{"max_pool3d", false, k_max_pool3d, false},
	{"avg_pool1d", false, k_avg_pool1d, false},
	{"avg_pool2d", false, k_avg_pool2d, false},
	{"avg_pool3d", false, k_avg_pool3d, false},
	{"adaptive_avg_pool1d", false, k_adaptive_avg_pool1d, false},
	{"adaptive_avg_pool2d", false, k_adaptive_avg_pool2d, false},
	{"adaptive_avg_pool3d", false, k_adaptive_avg_pool3d, false},
	{"adaptive_max_pool1d", false, k_adaptive_max_pool1d, false},
	{"adaptive_max_pool2d", false, k_adaptive_max_pool2d, false},
	{"adaptive_max_pool3d", false, k_adaptive_max_pool3d, false},
	{NULL, false, NULL, false},
};
