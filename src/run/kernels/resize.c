/*
 * resize.c - pad (constant, reflect, replicate, circular), interpolate and
 * its aliases (upsample, upsample_nearest, upsample_bilinear; modes nearest,
 * nearest-exact, linear, bilinear, bicubic, trilinear, area), pixel_shuffle,
 * pixel_unshuffle. The padding and Upsample modules run through their parts.
 *
 * pad is one rt_remap (index.c): each padded dim reads, per output index o,
 * input index i = o - pad_before, reflected (-i, 2(n-1)-i), clamped or
 * wrapped (mod n) into the input, or the fill value outside it for
 * "constant"; a negative pad is the same formula, a crop (circular wraps
 * around the cropped input, as _pad_circular copies it).
 *
 * interpolate computes source indices and weights as PyTorch 1.13's CPU
 * kernels (aten/src/ATen/native/UpSample.h, cpu/UpSampleKernel.cpp), in
 * their types, so that the indices are the same: the scale is a float,
 * 1/scale_factor when one was given (and not recomputed) else in/out
 * (align_corners: (in-1)/(out-1)); nearest reads floorf(i * scale) (i >> 1
 * when out = 2 in, i when out = in), nearest-exact floorf((i + 0.5) *
 * scale); linear modes take the double source index scale * (i + 0.5) - 0.5
 * clamped at 0, its integer part and a float weight, and a dim whose size
 * does not change copies; bicubic takes four neighbours clamped into the
 * input with the A = -0.75 convolution weights, the float source index
 * unclamped. "area" is adaptive average pooling: windows floor(i*in/out) to
 * ceil((i+1)*in/out), computed in float as PyTorch does.
 */
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

/* ---- pad ---- */

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR } pad_mode;

static const char *const pad_modes[] = {"constant", "reflect", "replicate", "circular"};

/*
 * The input index output index o reads, or -1 for the fill value. Circular
 * (_pad_circular) first copies the input cropped by negative pads, then
 * wraps around that: the pads repeat the cropped part.
 */
static int64_t pad_source(pad_mode mode, int64_t o, int64_t before, int64_t after, int64_t n)
{
	int64_t i = o - before;
	switch (mode) {
	case PAD_CONSTANT: return i >= 0 && i < n ? i : -1;
	case PAD_REFLECT: return i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
	case PAD_REPLICATE: return i < 0 ? 0 : i >= n ? n - 1 : i;
	case PAD_CIRCULAR: {
		int64_t cut = before < 0 ? -before : 0, kept = n - cut - (after < 0 ? -after : 0);
		int64_t j = o - (before > 0 ? before : 0);
		return kept > 0 ? cut + ((j % kept) + kept) % kept : -1;
	}
	}
	return -1;
}

static ti_status k_pad(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y, *held[RT_MAX_DIMS];
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	const char *name = ti_bound_str(&c->call->in, "mode");
	int mode = -1, nheld = 0;
	for (int i = 0; i < 4 && name; i++)
		if (!strcmp(name, pad_modes[i]))
			mode = i;
	int64_t pad[2 * RT_MAX_DIMS];
	int npad = rt_ints(c, "pad", pad, 2 * RT_MAX_DIMS);
	if (mode < 0 || npad < 0 || npad / 2 > in->ndim)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this padding");
	if ((st = rt_new_out(c, in->dtype, &y, err)))
		return st;
	rt_remap map;
	memset(&map, 0, sizeof(map));
	memcpy(map.stride, in->stride, sizeof(map.stride));
	if (!ti_bound_is_none(&c->call->in, "value"))
		map.fill = rt_float(c, "value");
	for (int k = 0; k < npad / 2 && !st; k++) {
		int d = in->ndim - 1 - k;
		int64_t n = y->shape[d], before = pad[2 * k];
		if ((st = rt_new(c, TI_DT_INT64, 1, &n, &held[nheld], err)))
			break;
		int64_t *t = rt_i64(held[nheld++]);
		for (int64_t o = 0; o < n; o++)
			t[o] = pad_source((pad_mode)mode, o, before, pad[2 * k + 1], in->shape[d]);
		map.source[d] = t;
	}
	if (!st)
		rt_remap_copy(c, in, y, &map);
	for (int i = 0; i < nheld; i++)
		rt_release(c->ex, held[i]);
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

/* ---- pixel_shuffle, pixel_unshuffle: a strided view of the input copied, then shaped as the output ---- */

static ti_status shuffle(rt_call *c, const char *factor_name, bool up, ti_error *err)
{
	rt_tensor *in, *v, *vc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	int64_t r = rt_int(c, factor_name);
	int n = in->ndim, lead = n - 3;
	if (n + 2 > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for tensors of %d dimensions", n + 2);
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	memcpy(shape, in->shape, sizeof(int64_t) * (size_t)lead);
	memcpy(stride, in->stride, sizeof(int64_t) * (size_t)lead);
	int64_t sc = in->stride[n - 3], sh = in->stride[n - 2], sw = in->stride[n - 1];
	int64_t *s = shape + lead, *t = stride + lead;
	if (up) { /* (C r r, H, W) read as (C, H, r, W, r) */
		int64_t ch = in->shape[n - 3] / (r * r), h = in->shape[n - 2], w = in->shape[n - 1];
		const int64_t sizes[5] = {ch, h, r, w, r}, strides[5] = {sc * r * r, sh, sc * r, sw, sc};
		memcpy(s, sizes, sizeof(sizes));
		memcpy(t, strides, sizeof(strides));
	} else { /* (C, H r, W r) read as (C, r, r, H, W) */
		int64_t ch = in->shape[n - 3], h = in->shape[n - 2] / r, w = in->shape[n - 1] / r;
		const int64_t sizes[5] = {ch, r, r, h, w}, strides[5] = {sc, sh, sw, sh * r, sw * r};
		memcpy(s, sizes, sizeof(sizes));
		memcpy(t, strides, sizeof(strides));
	}
	if ((st = rt_view(c, in, n + 2, shape, stride, in->offset, &v, err)))
		return st;
	st = rt_contiguous(c, v, &vc, err);
	rt_release(c->ex, v);
	if (st)
		return st;
	const ti_meta_tensor *m = rt_meta_out(c);
	int64_t out_shape[RT_MAX_DIMS], out_stride[RT_MAX_DIMS];
	for (int i = 0; i < m->ndim; i++)
		out_shape[i] = m->shape[i].value;
	rt_contiguous_strides(m->ndim, out_shape, out_stride);
	st = rt_view(c, vc, m->ndim, out_shape, out_stride, vc->offset, &y, err);
	rt_release(c->ex, vc);
	return st ? st : rt_output(c, y, err);
}

static ti_status k_pixel_shuffle(rt_call *c, ti_error *err) { return shuffle(c, "upscale_factor", true, err); }
static ti_status k_pixel_unshuffle(rt_call *c, ti_error *err) { return shuffle(c, "downscale_factor", false, err); }

/* ---- interpolate ---- */

typedef enum interp_kind { I_NEAREST, I_NEAREST_EXACT, I_LINEAR, I_CUBIC, I_AREA } interp_kind;

static const struct {
	const char *name;
	interp_kind kind;
} interp_modes[] = {
	{"nearest", I_NEAREST}, {"nearest-exact", I_NEAREST_EXACT}, {"linear", I_LINEAR}, {"bilinear", I_LINEAR},
	{"trilinear", I_LINEAR}, {"bicubic", I_CUBIC}, {"area", I_AREA},
};

/* One spatial dim: per output index, the input indices read and their weights. */
typedef struct axis {
	int64_t in, out;
	int64_t *index[4]; /* nearest: index[0]; linear: index[0..1]; cubic: index[0..3]; area: [start, end) in 0, 1 */
	float *weight[4];
} axis;

/* compute_scales_value<float>: 1/scale when one was given, else in/out. */
static float scale_value(bool has_scale, double scale, int64_t in, int64_t out)
{
	return has_scale && scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* area_pixel_compute_scale<float>. */
static float pixel_scale(int64_t in, int64_t out, bool align_corners, bool has_scale, double scale)
{
	if (align_corners)
		return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
	return scale_value(has_scale, scale, in, out);
}

static void axis_fill(axis *a, interp_kind kind, bool align_corners, bool has_scale, double scale)
{
	int64_t in = a->in, out = a->out;
	for (int64_t o = 0; o < out; o++) {
		switch (kind) {
		case I_NEAREST: { /* nearest_idx */
			int64_t i = o;
			if (out == 2 * in) {
				i = o >> 1;
			} else if (out != in) {
				float s = scale_value(has_scale, scale, in, out);
				i = (int64_t)floorf((float)o * s);
			}
			a->index[0][o] = i < in - 1 ? i : in - 1;
			break;
		}
		case I_NEAREST_EXACT: { /* nearest_exact_idx: the product in double, floorf of it as a float */
			float s = scale_value(has_scale, scale, in, out);
			int64_t i = (int64_t)floorf((float)(((double)o + 0.5) * s));
			a->index[0][o] = i < in - 1 ? i : in - 1;
			break;
		}
		case I_LINEAR: { /* compute_source_index_and_lambda, the index in double (acc_type of float) */
			if (out == in) {
				a->index[0][o] = a->index[1][o] = o;
				a->weight[0][o] = 1.0f, a->weight[1][o] = 0.0f;
				break;
			}
			double s = pixel_scale(in, out, align_corners, has_scale, scale);
			double real = align_corners ? s * (double)o : s * ((double)o + 0.5) - 0.5;
			if (!align_corners && real < 0)
				real = 0;
			int64_t i0 = (int64_t)real;
			a->index[0][o] = i0;
			a->index[1][o] = i0 + (i0 < in - 1 ? 1 : 0);
			a->weight[1][o] = (float)(real - (double)i0);
			a->weight[0][o] = 1.0f - a->weight[1][o];
			break;
		}
		case I_CUBIC: { /* the float source index, not clamped; four neighbours clamped into the input */
			float s = pixel_scale(in, out, align_corners, has_scale, scale);
			float real = align_corners ? s * (float)o : s * ((float)o + 0.5f) - 0.5f;
			int64_t i = (int64_t)floorf(real);
			float t = real - (float)i, A = -0.75f, x;
			x = t + 1.0f;
			a->weight[0][o] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
			x = t;
			a->weight[1][o] = ((A + 2) * x - (A + 3)) * x * x + 1;
			x = 1.0f - t;
			a->weight[2][o] = ((A + 2) * x - (A + 3)) * x * x + 1;
			x = (1.0f - t) + 1.0f;
			a->weight[3][o] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
			for (int k = 0; k < 4; k++) {
				int64_t j = i - 1 + k;
				a->index[k][o] = j < 0 ? 0 : j > in - 1 ? in - 1 : j;
			}
			break;
		}
		case I_AREA: /* adaptive pooling's start_index and end_index */
			a->index[0][o] = (int64_t)floorf((float)(o * in) / (float)out);
			a->index[1][o] = (int64_t)ceilf((float)((o + 1) * in) / (float)out);
			break;
		}
	}
}

typedef struct interp_job {
	interp_kind kind;
	int dims;           /* spatial dims: 1, 2 or 3 */
	axis ax[3];         /* depth, height, width; a missing one has in = out = 1 */
	const float *x;
	float *y;
} interp_job;

static inline float lerp_w(const float *row, const axis *w, int64_t o)
{
	return row[w->index[0][o]] * w->weight[0][o] + row[w->index[1][o]] * w->weight[1][o];
}

/* Linear in each spatial dim, the outer dim last: (row at h0) * w0 + (row at h1) * w1, as PyTorch nests it. */
static float linear_at(const interp_job *j, const float *x, int64_t od, int64_t oh, int64_t ow)
{
	const axis *D = &j->ax[0], *H = &j->ax[1], *W = &j->ax[2];
	if (j->dims == 1)
		return lerp_w(x, W, ow);
	float v[2];
	for (int a = 0; a < 2; a++) {
		const float *p = x + (j->dims == 3 ? D->index[a][od] * H->in * W->in : 0);
		float r0 = lerp_w(p + H->index[0][oh] * W->in, W, ow), r1 = lerp_w(p + H->index[1][oh] * W->in, W, ow);
		v[a] = r0 * H->weight[0][oh] + r1 * H->weight[1][oh];
		if (j->dims == 2)
			return v[0];
	}
	return v[0] * D->weight[0][od] + v[1] * D->weight[1][od];
}

static float cubic_at(const interp_job *j, const float *x, int64_t oh, int64_t ow)
{
	const axis *H = &j->ax[1], *W = &j->ax[2];
	float out = 0;
	for (int a = 0; a < 4; a++) {
		const float *row = x + H->index[a][oh] * W->in;
		float t = row[W->index[0][ow]] * W->weight[0][ow];
		for (int b = 1; b < 4; b++)
			t += row[W->index[b][ow]] * W->weight[b][ow];
		out = a ? out + t * H->weight[a][oh] : t * H->weight[a][oh];
	}
	return out;
}

static float area_at(const interp_job *j, const float *x, int64_t od, int64_t oh, int64_t ow)
{
	const axis *D = &j->ax[0], *H = &j->ax[1], *W = &j->ax[2];
	double sum = 0;
	int64_t d0 = D->index[0][od], d1 = D->index[1][od], h0 = H->index[0][oh], h1 = H->index[1][oh];
	int64_t w0 = W->index[0][ow], w1 = W->index[1][ow];
	for (int64_t d = d0; d < d1; d++)
		for (int64_t h = h0; h < h1; h++)
			for (int64_t w = w0; w < w1; w++)
				sum += x[(d * H->in + h) * W->in + w];
	return (float)(sum / (double)((d1 - d0) * (h1 - h0) * (w1 - w0)));
}

static void interp_planes(void *user, int64_t begin, int64_t end)
{
	const interp_job *j = user;
	const axis *D = &j->ax[0], *H = &j->ax[1], *W = &j->ax[2];
	int64_t in_plane = D->in * H->in * W->in, out_plane = D->out * H->out * W->out;
	for (int64_t p = begin; p < end; p++) {
		const float *x = j->x + p * in_plane;
		float *y = j->y + p * out_plane;
		for (int64_t od = 0; od < D->out; od++)
			for (int64_t oh = 0; oh < H->out; oh++)
				for (int64_t ow = 0; ow < W->out; ow++) {
					float v = 0;
					if (j->kind == I_LINEAR)
						v = linear_at(j, x, od, oh, ow);
					else if (j->kind == I_CUBIC)
						v = cubic_at(j, x, oh, ow);
					else
						v = area_at(j, x, od, oh, ow);
					*y++ = v;
				}
	}
}

/* What was asked: the mode, align_corners and the scale factors the kernel is given. */
typedef struct interp_request {
	interp_kind kind;
	bool align_corners, has_scale;
	double scale[3];
} interp_request;

static ti_status read_request(rt_call *c, int spatial, interp_request *rq, ti_error *err)
{
	const char *op = c->call->in.sig->name, *mode = "nearest";
	memset(rq, 0, sizeof(*rq));
	if (!strcmp(op, "upsample_bilinear")) {
		mode = "bilinear";
		rq->align_corners = true;
	} else if (strcmp(op, "upsample_nearest")) {
		mode = ti_bound_str(&c->call->in, "mode");
		rq->align_corners = ti_bound_bool(&c->call->in, "align_corners");
		if (ti_bound_bool(&c->call->in, "antialias"))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for interpolate with antialias=True");
	}
	int found = -1;
	for (size_t i = 0; mode && i < sizeof(interp_modes) / sizeof(interp_modes[0]); i++)
		if (!strcmp(interp_modes[i].name, mode))
			found = (int)i;
	if (found < 0)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for interpolate mode '%s'", mode ? mode : "?");
	rq->kind = interp_modes[found].kind;
	/* F.interpolate hands the kernel its scale factors unless it recomputes them (always for area) */
	int count = 0;
	const ti_arg *scales = ti_bound_list(&c->call->in, "scale_factor", &count);
	const ti_arg *recompute = ti_bound_get(&c->call->in, "recompute_scale_factor");
	bool recomputed = recompute && recompute->kind == TI_ARG_BOOL && recompute->as.boolean;
	if (count && !recomputed && rq->kind != I_AREA) {
		rq->has_scale = true;
		for (int i = 0; i < spatial; i++)
			rt_scalar(&scales[count == 1 ? 0 : i], &rq->scale[i]);
	}
	return TI_OK;
}

static ti_status k_interpolate(rt_call *c, ti_error *err)
{
	rt_tensor *in, *xc = NULL, *y = NULL, *held[8];
	int nheld = 0;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	int spatial = in->ndim - 2;
	interp_request rq;
	if (in->dtype != TI_DT_FLOAT32 || spatial < 1 || spatial > 3)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for interpolate on this input");
	if ((st = read_request(c, spatial, &rq, err)))
		return st;
	if ((st = rt_new_out(c, TI_DT_FLOAT32, &y, err)))
		return st;
	interp_job j = {.kind = rq.kind, .dims = spatial};
	int tables = rq.kind == I_CUBIC ? 4 : rq.kind == I_LINEAR || rq.kind == I_AREA ? 2 : 1;
	for (int a = 0; a < 3; a++) {
		int d = in->ndim - 3 + a;
		j.ax[a].in = a < 3 - spatial ? 1 : in->shape[d];
		j.ax[a].out = a < 3 - spatial ? 1 : y->shape[d];
	}
	/* every axis gets tables, a missing one (in = out = 1) the identity, so the loops need no cases */
	for (int a = 0; a < 3 && !st; a++) {
		axis *ax = &j.ax[a];
		int64_t n = ax->out * tables;
		if ((st = rt_new(c, TI_DT_INT64, 1, &n, &held[nheld], err)))
			break;
		int64_t *ix = rt_i64(held[nheld++]);
		if ((st = rt_new(c, TI_DT_FLOAT32, 1, &n, &held[nheld], err)))
			break;
		float *w = rt_f32(held[nheld++]);
		for (int k = 0; k < tables; k++) {
			ax->index[k] = ix + k * ax->out;
			ax->weight[k] = w + k * ax->out;
		}
		bool real = a >= 3 - spatial;
		axis_fill(ax, rq.kind, rq.align_corners, rq.has_scale && real, real ? rq.scale[a - (3 - spatial)] : 1.0);
	}
	if (!st && (rq.kind == I_NEAREST || rq.kind == I_NEAREST_EXACT)) {
		rt_remap map;
		memset(&map, 0, sizeof(map));
		memcpy(map.stride, in->stride, sizeof(map.stride));
		for (int a = 3 - spatial; a < 3; a++)
			map.source[in->ndim - 3 + a] = j.ax[a].index[0];
		rt_remap_copy(c, in, y, &map);
	} else if (!st && !(st = rt_contiguous(c, in, &xc, err))) {
		/* the area and linear modes: one job per (batch, channel) plane */
		j.x = rt_f32(xc);
		j.y = rt_f32(y);
		int64_t planes = in->shape[0] * in->shape[1];
		rt_parallel(c, planes, 1, interp_planes, &j);
		rt_release(c->ex, xc);
	}
	for (int i = 0; i < nheld; i++)
		rt_release(c->ex, held[i]);
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

const rt_kernel rt_kernels_resize[] = {
	{"pad", false, k_pad, false},
	{"interpolate", false, k_interpolate, false},
	{"upsample", false, k_interpolate, false},
	{"upsample_nearest", false, k_interpolate, false},
	{"upsample_bilinear", false, k_interpolate, false},
	{"pixel_shuffle", false, k_pixel_shuffle, false},
	{"pixel_unshuffle", false, k_pixel_unshuffle, false},
	{NULL, false, NULL, false},
};
