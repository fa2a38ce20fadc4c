/*
 * conv.c - convolutions and the other contractions with a weight:
 * conv1d/2d/3d, conv_transpose1d/2d/3d (Conv*, ConvTranspose* run through
 * them) and bilinear (Bilinear).
 *
 * Every convolution is a 3-d one, a lower rank taking size 1, kernel 1,
 * stride 1, padding 0 and dilation 1 in its leading spatial dimensions.
 * A convolution is im2col and one sgemm per image and group (zero padding,
 * stride, dilation, groups; padding='same' pads d(k - 1) / 2 on the left,
 * the odd one falling off the right as PyTorch's). A 1x1 convolution with
 * stride 1 and no padding reads the input as the column matrix itself.
 *
 * A transposed convolution is the convolution's adjoint: per image and
 * group one sgemm, columns = W^T x ([out_channels / groups * prod(kernel),
 * prod(input)]), then col2im adds each column into the output pixel
 * o = i * stride - padding + k * dilation it reaches (output_padding only
 * widens the output). Columns are built, and added back, in parallel over
 * channels (each channel's pixels are its own); sgemm threads itself.
 *
 * bilinear is y[b, o] = x1[b]^T A[o] x2[b] + bias[o]: one sgemm
 * U = x2 A^T ([batch, out * in1], A read as [out * in1, in2]), then a dot
 * of each U[b, o, :] with x1[b].
 */
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

#define CONV_DIMS 3 /* conv3d's; conv1d and conv2d are 3-d with leading size 1 */

/*
 * One group's image against its column matrix. For a convolution the image
 * is the input and the columns' plane the output; for a transposed one the
 * image is the output and the plane the input (col2im walks the same map).
 */
typedef struct geometry {
	int64_t channels;                /* image channels in one group */
	int64_t image[CONV_DIMS];        /* image sizes */
	int64_t kernel[CONV_DIMS], stride[CONV_DIMS], padding[CONV_DIMS], dilation[CONV_DIMS];
	int64_t plane[CONV_DIMS];        /* column plane sizes */
} geometry;

static int64_t product(const int64_t *v, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= v[i];
	return p;
}

typedef struct cols_job {
	const geometry *g;
	float *image;   /* the group's first channel: read (im2col) or added into (col2im) */
	float *cols;    /* [channels * prod(kernel), prod(plane)], rows ld apart */
	int64_t ld;     /* 0: prod(plane); several images side by side: their planes together */
} cols_job;

/*
 * One row of the columns: kernel offset (kd, kh, kw) of channel ch, over
 * the plane's (pd, ph) line of width plane[2]. to_image adds the row into
 * the image (col2im); otherwise the row is read from it (im2col).
 */
static void cols_line(const geometry *g, float *image, float *row, const int64_t k[CONV_DIMS], int64_t pd, int64_t ph,
                      bool to_image)
{
	int64_t width = g->plane[2];
	int64_t id = pd * g->stride[0] - g->padding[0] + k[0] * g->dilation[0];
	int64_t ih = ph * g->stride[1] - g->padding[1] + k[1] * g->dilation[1];
	if (id < 0 || id >= g->image[0] || ih < 0 || ih >= g->image[1]) {
		if (!to_image)
			memset(row, 0, (size_t)width * sizeof(*row));
		return;
	}
	float *line = image + (id * g->image[1] + ih) * g->image[2];
	int64_t base = k[2] * g->dilation[2] - g->padding[2], sw = g->stride[2];
	if (!to_image && sw == 1 && base >= 0 && base + width <= g->image[2]) {
		memcpy(row, line + base, (size_t)width * sizeof(*row));
		return;
	}
	for (int64_t w = 0; w < width; w++) {
		int64_t iw = w * sw + base;
		bool inside = iw >= 0 && iw < g->image[2];
		if (to_image) {
			if (inside)
				line[iw] += row[w];
		} else {
			row[w] = inside ? line[iw] : 0.0f;
		}
	}
}

static void cols_channels(cols_job *j, int64_t begin, int64_t end, bool to_image)
{
	const geometry *g = j->g;
	int64_t plane = product(g->plane, CONV_DIMS), taps = product(g->kernel, CONV_DIMS);
	int64_t pixels = product(g->image, CONV_DIMS);
	for (int64_t ch = begin; ch < end; ch++) {
		float *image = j->image + ch * pixels;
		for (int64_t t = 0; t < taps; t++) {
			int64_t k[CONV_DIMS] = {t / (g->kernel[1] * g->kernel[2]), t / g->kernel[2] % g->kernel[1],
			                        t % g->kernel[2]};
			float *rows = j->cols + (ch * taps + t) * (j->ld ? j->ld : plane);
			for (int64_t pd = 0; pd < g->plane[0]; pd++)
				for (int64_t ph = 0; ph < g->plane[1]; ph++)
					cols_line(g, image, rows + (pd * g->plane[1] + ph) * g->plane[2], k, pd, ph, to_image);
		}
	}
}

static void im2col_range(void *user, int64_t begin, int64_t end) { cols_channels(user, begin, end, false); }
static void col2im_range(void *user, int64_t begin, int64_t end) { cols_channels(user, begin, end, true); }

/*
 * A list argument, one value per spatial dim (a single one repeats), into
 * the last dims of out; the leading dims of a lower rank, and an empty
 * list, take neutral (1 for stride and dilation, 0 for paddings).
 */
static void spatial_ints(rt_call *c, const char *name, int spatial, int64_t neutral, int64_t out[CONV_DIMS])
{
	int64_t v[CONV_DIMS];
	int n = rt_ints(c, name, v, CONV_DIMS);
	for (int i = 0; i < CONV_DIMS; i++) {
		int at = i - (CONV_DIMS - spatial);
		out[i] = at < 0 || n <= 0 ? neutral : n == 1 ? v[0] : v[at];
	}
}

/* The operands of a convolution call: input, weight, bias, their checks. */
typedef struct conv_operands {
	rt_tensor *input, *weight, *bias;
	int spatial;
	bool batched;
} conv_operands;

static ti_status operands(rt_call *c, conv_operands *o, ti_error *err)
{
	ti_status st = rt_arg(c, "input", &o->input, err);
	if (!st)
		st = rt_arg(c, "weight", &o->weight, err);
	if (!st)
		st = rt_arg(c, "bias", &o->bias, err);
	if (st)
		return st;
	if (o->input->dtype != TI_DT_FLOAT32 || o->weight->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for convolutions on %s",
		               ti_dtype_name(o->input->dtype));
	o->spatial = o->weight->ndim - 2;
	if (o->spatial < 1 || o->spatial > CONV_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a convolution of %d spatial dims", o->spatial);
	o->batched = o->input->ndim == o->spatial + 2;
	return TI_OK;
}

/* The output [images?, channels, *spatial] (no batch dim for an unbatched input). */
static ti_status new_output(rt_call *c, const conv_operands *o, int64_t channels, const int64_t sizes[CONV_DIMS],
                            rt_tensor **y, ti_error *err)
{
	int64_t shape[CONV_DIMS + 2];
	int n = 0;
	if (o->batched)
		shape[n++] = o->input->shape[0];
	shape[n++] = channels;
	for (int i = CONV_DIMS - o->spatial; i < CONV_DIMS; i++)
		shape[n++] = sizes[i];
	return rt_new(c, TI_DT_FLOAT32, n, shape, y, err);
}

/* Each of the channels planes of dst (plane elements apart) starts as bias[first + o], or 0 without one. */
static void fill_bias(float *dst, const rt_tensor *bias, int64_t first, int64_t channels, int64_t plane)
{
	for (int64_t o = 0; o < channels; o++) {
		float v = bias ? rt_f32(bias)[(first + o) * bias->stride[0]] : 0.0f;
		for (int64_t p = 0; p < plane; p++)
			dst[o * plane + p] = v;
	}
}

/* A convolution call read once: operands, geometry, and what oneDNN would be asked (onednn.c). */
typedef struct conv_setup {
	conv_operands o;
	geometry g;
	int64_t groups, images, out_channels;
	rt_dnnl_conv dnnl;
	bool by_dnnl; /* the shape oneDNN is worth asking (onednn_worth); whether it is here is another matter */
} conv_setup;

/*
 * Which convolutions go to oneDNN (docs/run-kernels.md has the
 * measurements, ResNet-50's shapes at batch 8 on two threads):
 *  - a kernel wider than 1 in some dim: im2col writes, and sgemm reads,
 *    kernel-size copies of the input; oneDNN's direct kernel ran the 3x3
 *    and 7x7 shapes 1.2 to 2x faster, reorders to and from its blocked
 *    layout included;
 *  - a pointwise one (kernel 1, stride 1, no padding, one group) on a
 *    plane of ONEDNN_MIN_PLANE positions or more: oneDNN's matmul on our
 *    layout, no reorder, in about 0.8x OpenBLAS's time. Below that plane
 *    our sgemm over images side by side was faster; with stride, ours
 *    gathers a copy of the output's size and wins too;
 *  - and ONEDNN_MIN_WORK multiply-adds or more: below it compiling a new
 *    shape's kernel (about half a millisecond) costs more than it saves.
 */
#define ONEDNN_MIN_WORK ((int64_t)1 << 25)
#define ONEDNN_MIN_PLANE 128

static bool onednn_worth(const conv_setup *s)
{
	const geometry *g = &s->g;
	int64_t taps = product(g->kernel, CONV_DIMS), plane = product(g->plane, CONV_DIMS);
	bool pointwise = s->groups == 1 && plane >= ONEDNN_MIN_PLANE;
	for (int i = 0; i < CONV_DIMS; i++)
		pointwise = pointwise && g->kernel[i] == 1 && g->stride[i] == 1 && g->padding[i] == 0;
	if ((taps == 1 && !pointwise) || s->images < 1 || s->out_channels < 1 || g->channels < 1 || plane < 1)
		return false;
	/* images * out * plane * (in / groups) * taps, in double: no overflow whatever the model says */
	double work = (double)s->images * (double)s->out_channels * (double)plane * (double)g->channels * (double)taps;
	return work >= (double)ONEDNN_MIN_WORK;
}

static ti_status setup(rt_call *c, conv_setup *s, ti_error *err)
{
	memset(s, 0, sizeof(*s));
	conv_operands *o = &s->o;
	ti_status st = operands(c, o, err);
	if (st)
		return st;
	rt_tensor *in = o->input, *w = o->weight;
	geometry *g = &s->g;
	int lead = CONV_DIMS - o->spatial;
	s->groups = rt_int(c, "groups");
	if (s->groups < 1)
		s->groups = 1;
	g->channels = in->shape[o->batched ? 1 : 0] / s->groups;
	for (int i = 0; i < CONV_DIMS; i++) {
		g->image[i] = i < lead ? 1 : in->shape[in->ndim - CONV_DIMS + i];
		g->kernel[i] = i < lead ? 1 : w->shape[2 + i - lead];
	}
	spatial_ints(c, "stride", o->spatial, 1, g->stride);
	spatial_ints(c, "dilation", o->spatial, 1, g->dilation);
	const char *mode = ti_bound_str(&c->call->in, "padding");
	bool same = mode && !strcmp(mode, "same");
	int64_t pad_right[CONV_DIMS];
	if (same) { /* PyTorch puts the odd one on the right: out = in at stride 1 */
		for (int i = 0; i < CONV_DIMS; i++) {
			g->padding[i] = g->dilation[i] * (g->kernel[i] - 1) / 2;
			pad_right[i] = g->dilation[i] * (g->kernel[i] - 1) - g->padding[i];
		}
	} else {
		if (mode) /* 'valid' */
			memset(g->padding, 0, sizeof(g->padding));
		else
			spatial_ints(c, "padding", o->spatial, 0, g->padding);
		memcpy(pad_right, g->padding, sizeof(pad_right));
	}
	for (int i = 0; i < CONV_DIMS; i++)
		g->plane[i] = same ? g->image[i]
		                   : (g->image[i] + 2 * g->padding[i] - g->dilation[i] * (g->kernel[i] - 1) - 1) / g->stride[i] + 1;
	s->images = o->batched ? in->shape[0] : 1;
	s->out_channels = w->shape[0];
	s->by_dnnl = onednn_worth(s);
	rt_dnnl_conv *d = &s->dnnl;
	*d = (rt_dnnl_conv){.spatial = o->spatial, .images = s->images, .in_channels = g->channels * s->groups,
	                    .out_channels = s->out_channels, .groups = s->groups, .bias = o->bias != NULL};
	for (int i = 0; i < o->spatial; i++) {
		d->image[i] = g->image[lead + i];
		d->kernel[i] = g->kernel[lead + i];
		d->stride[i] = g->stride[lead + i];
		d->dilation[i] = g->dilation[lead + i];
		d->pad_left[i] = g->padding[lead + i];
		d->pad_right[i] = pad_right[lead + i];
		d->plane[i] = g->plane[lead + i];
	}
	return TI_OK;
}

/*
 * The bytes a convolution holds beside its operands while it runs: our
 * im2col columns, (C_in / groups) * kernel elements by output plane, for
 * as many images as one sgemm takes (rt_conv_images_per_gemm), and then
 * the product before it is laid out image by image (a 1x1 kernel of
 * stride 1 without padding needs columns only when several images share
 * an sgemm). A convolution oneDNN is worth asking (onednn_worth) gets
 * the size of its weights besides, room for oneDNN's copy of them in its
 * layout (or the matmul's scratchpad): oneDNN then runs as many images a
 * call as these bytes hold, so the plan is the same whether oneDNN is
 * installed or not.
 */
static int64_t scratch_of(const conv_setup *s)
{
	const geometry *g = &s->g;
	int64_t plane = product(g->plane, CONV_DIMS), k = g->channels * product(g->kernel, CONV_DIMS);
	bool direct = true;
	for (int i = 0; i < CONV_DIMS; i++)
		direct = direct && g->kernel[i] == 1 && g->stride[i] == 1 && g->padding[i] == 0;
	int64_t chunk = s->groups == 1 ? rt_conv_images_per_gemm(s->images, plane) : 1;
	int64_t cols = !direct || chunk > 1 ? k * plane * chunk : 0;
	int64_t wide = chunk > 1 ? s->out_channels * plane * chunk + 1 : 0;
	int64_t weights = s->by_dnnl ? s->out_channels * k : 0;
	return (cols + wide + weights) * (int64_t)sizeof(float);
}

/* The scratch of conv1d/2d/3d (scratch_of). */
static int64_t conv_scratch(rt_call *c)
{
	conv_setup s;
	ti_error ignored;
	ti_error_clear(&ignored);
	if (setup(c, &s, &ignored))
		return 0;
	if (s.by_dnnl)
		rt_dnnl_loaded(); /* loaded while the run is planned, not in the forward's time */
	return scratch_of(&s);
}

ti_status rt_k_conv(rt_call *c, ti_error *err)
{
	conv_setup s;
	ti_status st = setup(c, &s, err);
	if (st)
		return st;
	conv_operands o = s.o;
	geometry g = s.g;
	rt_tensor *in = o.input, *w = o.weight;
	int64_t groups = s.groups, images = s.images, out_ch = s.out_channels, per_group = out_ch / groups;
	int64_t k = g.channels * product(g.kernel, CONV_DIMS), plane = product(g.plane, CONV_DIMS);
	int64_t pixels = product(g.image, CONV_DIMS);
	bool direct = true;
	for (int i = 0; i < CONV_DIMS; i++)
		direct = direct && g.kernel[i] == 1 && g.stride[i] == 1 && g.padding[i] == 0;
	rt_tensor *xc, *wc = NULL, *y = NULL, *bc = NULL;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_contiguous(c, w, &wc, err)) || (st = new_output(c, &o, out_ch, g.plane, &y, err)))
		goto done;
	if (s.by_dnnl) {
		/* oneDNN within the scratch the plan counted (scratch_of): as many images a call as fit */
		int64_t per_call = rt_dnnl_conv_images(&s.dnnl, scratch_of(&s));
		if (per_call > 0 && o.bias && (st = rt_contiguous(c, o.bias, &bc, err)))
			goto done;
		size_t held = 0;
		bool ran = per_call > 0 && rt_dnnl_conv_run(&s.dnnl, per_call, c->threads, rt_f32(xc), rt_f32(wc),
		                                            bc ? rt_f32(bc) : NULL, rt_f32(y), &held);
		rt_scratch_note(c, held);
		if (ran)
			goto made;
		/* oneDNN is not here, refused the shape, or needs more memory than that: our own kernel */
	}
	/* small planes: several images' columns side by side, one wider sgemm (see rt_conv_images_per_gemm) */
	int64_t chunk = groups == 1 ? rt_conv_images_per_gemm(images, plane) : 1;
	float *cols = NULL, *wide = NULL;
	size_t col_count = (size_t)((k * plane * chunk) != 0 ? k * plane * chunk : 1);
	if ((!direct || chunk > 1) && !(cols = rt_scratch_alloc(c, col_count * sizeof(*cols), false))) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the convolution's columns");
		goto done;
	}
	if (chunk > 1 && !(wide = rt_scratch_alloc(c, (size_t)(out_ch * plane * chunk + 1) * sizeof(*wide), false))) {
		rt_scratch_free(c, cols);
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the convolution's columns");
		goto done;
	}
	float *x = rt_f32(xc), *out = rt_f32(y);
	const float *wt = rt_f32(wc);
	for (int64_t first = 0; chunk > 1 && first < images; first += chunk) {
		int64_t n = images - first < chunk ? images - first : chunk, ld = n * plane;
		for (int64_t i = 0; i < n; i++) {
			float *image = x + (first + i) * g.channels * pixels;
			if (direct) { /* the image is its own columns: copied into its place among the others */
				for (int64_t ch = 0; ch < g.channels; ch++)
					memcpy(cols + ch * ld + i * plane, image + ch * pixels, (size_t)plane * sizeof(*cols));
			} else {
				cols_job j = {.g = &g, .image = image, .cols = cols + i * plane, .ld = ld};
				rt_parallel(c, g.channels, 1, im2col_range, &j);
			}
		}
		if (o.bias)
			fill_bias(wide, o.bias, 0, out_ch, ld);
		rt_sgemm(false, false, out_ch, ld, k, 1.0f, wt, k, cols, ld, o.bias ? 1.0f : 0.0f, wide, ld);
		for (int64_t i = 0; i < n; i++)
			for (int64_t ch = 0; ch < out_ch; ch++)
				memcpy(out + ((first + i) * out_ch + ch) * plane, wide + ch * ld + i * plane,
				       (size_t)plane * sizeof(*out));
	}
	for (int64_t img = 0; chunk == 1 && img < images; img++)
		for (int64_t grp = 0; grp < groups; grp++) {
			float *image = x + (img * groups + grp) * g.channels * pixels;
			float *dst = out + (img * out_ch + grp * per_group) * plane;
			if (o.bias)
				fill_bias(dst, o.bias, grp * per_group, per_group, plane);
			const float *colmat = image;
			if (!direct) {
				cols_job j = {.g = &g, .image = image, .cols = cols};
				rt_parallel(c, g.channels, 1, im2col_range, &j);
				colmat = cols;
			}
			rt_sgemm(false, false, per_group, plane, k, 1.0f, wt + grp * per_group * k, k, colmat, plane,
			         o.bias ? 1.0f : 0.0f, dst, plane);
		}
	rt_scratch_free(c, cols);
	rt_scratch_free(c, wide);
made:
	st = rt_output(c, y, err);
	y = NULL;
done:
	rt_release(c->ex, y);
	rt_release(c->ex, xc);
	rt_release(c->ex, wc);
	rt_release(c->ex, bc);
	return st;
}

/*
 * How many images one sgemm of an ungrouped convolution takes: a plane of
 * fewer than CONV_WIDE_COLUMNS positions (ResNet's 28x28 to 7x7 stages)
 * makes a narrow product that sgemm runs far below its speed, so images
 * are put side by side up to that width; a wide plane goes one image at a
 * time. scratch_of sizes the plan's columns with the same answer.
 */
#define CONV_WIDE_COLUMNS 2048

int64_t rt_conv_images_per_gemm(int64_t images, int64_t plane)
{
	if (images <= 1 || plane <= 0 || plane >= CONV_WIDE_COLUMNS)
		return 1;
	int64_t n = (CONV_WIDE_COLUMNS + plane - 1) / plane;
	return n < images ? n : images;
}

/* conv_transpose: weight [in_channels, out_channels / groups, *kernel]. */
static ti_status k_conv_transpose(rt_call *c, ti_error *err)
{
	conv_operands o;
	ti_status st = operands(c, &o, err);
	if (st)
		return st;
	rt_tensor *in = o.input, *w = o.weight;
	int lead = CONV_DIMS - o.spatial;
	int64_t groups = rt_int(c, "groups"), in_ch = in->shape[o.batched ? 1 : 0];
	int64_t in_per_group = in_ch / groups, out_per_group = w->shape[1], out_ch = out_per_group * groups;
	int64_t output_padding[CONV_DIMS];
	geometry g = {.channels = out_per_group};
	spatial_ints(c, "stride", o.spatial, 1, g.stride);
	spatial_ints(c, "padding", o.spatial, 0, g.padding);
	spatial_ints(c, "dilation", o.spatial, 1, g.dilation);
	spatial_ints(c, "output_padding", o.spatial, 0, output_padding);
	for (int i = 0; i < CONV_DIMS; i++) {
		g.plane[i] = i < lead ? 1 : in->shape[in->ndim - CONV_DIMS + i];
		g.kernel[i] = i < lead ? 1 : w->shape[2 + i - lead];
		/* ConvUtils.h conv_input_size: (L - 1)s - 2p + d(k - 1) + output_padding + 1 */
		g.image[i] = (g.plane[i] - 1) * g.stride[i] - 2 * g.padding[i] + g.dilation[i] * (g.kernel[i] - 1) +
		             output_padding[i] + 1;
	}
	int64_t images = o.batched ? in->shape[0] : 1, rows = out_per_group * product(g.kernel, CONV_DIMS);
	int64_t plane = product(g.plane, CONV_DIMS), pixels = product(g.image, CONV_DIMS);
	rt_tensor *xc, *wc = NULL, *y = NULL;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_contiguous(c, w, &wc, err)) || (st = new_output(c, &o, out_ch, g.image, &y, err)))
		goto done;
	float *cols = rt_scratch_alloc(c, (size_t)((rows * plane) != 0 ? rows * plane : 1) * sizeof(*cols), false);
	if (!cols) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the transposed convolution's columns");
		goto done;
	}
	const float *x = rt_f32(xc), *wt = rt_f32(wc);
	float *out = rt_f32(y);
	for (int64_t img = 0; img < images; img++)
		for (int64_t grp = 0; grp < groups; grp++) {
			const float *src = x + (img * in_ch + grp * in_per_group) * plane;
			float *dst = out + (img * out_ch + grp * out_per_group) * pixels;
			fill_bias(dst, o.bias, grp * out_per_group, out_per_group, pixels);
			/* cols[rows, plane] = W_g^T [rows, in_per_group] x_g [in_per_group, plane] */
			rt_sgemm(true, false, rows, plane, in_per_group, 1.0f, wt + grp * in_per_group * rows, rows, src, plane,
			         0.0f, cols, plane);
			cols_job j = {.g = &g, .image = dst, .cols = cols};
			rt_parallel(c, out_per_group, 1, col2im_range, &j);
		}
	rt_scratch_free(c, cols);
	st = rt_output(c, y, err);
	y = NULL;
done:
	rt_release(c->ex, y);
	rt_release(c->ex, xc);
	rt_release(c->ex, wc);
	return st;
}

typedef struct bilinear_job {
	const float *u, *x1, *bias;
	float *y;
	int64_t out, in1, bias_stride;
} bilinear_job;

static void bilinear_rows(void *user, int64_t begin, int64_t end)
{
	bilinear_job *j = user;
	for (int64_t b = begin; b < end; b++)
		for (int64_t o = 0; o < j->out; o++) {
			const float *u = j->u + (b * j->out + o) * j->in1, *x1 = j->x1 + b * j->in1;
			double sum = j->bias ? j->bias[o * j->bias_stride] : 0.0;
			for (int64_t i = 0; i < j->in1; i++)
				sum += (double)u[i] * x1[i];
			j->y[b * j->out + o] = (float)sum;
		}
}

static ti_status k_bilinear(rt_call *c, ti_error *err)
{
	rt_tensor *x1, *x2, *w, *bias;
	ti_status st = rt_arg(c, "input1", &x1, err);
	if (!st)
		st = rt_arg(c, "input2", &x2, err);
	if (!st)
		st = rt_arg(c, "weight", &w, err);
	if (!st)
		st = rt_arg(c, "bias", &bias, err);
	if (st)
		return st;
	if (x1->dtype != TI_DT_FLOAT32 || w->ndim != 3 || c->call->outputs[0].kind != TI_ARG_TENSOR)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this bilinear");
	const ti_meta_tensor *m = c->call->outputs[0].as.tensor;
	int64_t out = w->shape[0], in1 = w->shape[1], in2 = w->shape[2];
	int64_t batch = in1 ? rt_numel(x1) / in1 : 0;
	int64_t shape[RT_MAX_DIMS];
	for (int i = 0; i < m->ndim && i < RT_MAX_DIMS; i++)
		shape[i] = m->shape[i].value;
	rt_tensor *a = NULL, *b = NULL, *wc = NULL, *y = NULL;
	float *u = NULL;
	if ((st = rt_contiguous(c, x1, &a, err)) || (st = rt_contiguous(c, x2, &b, err)) ||
	    (st = rt_contiguous(c, w, &wc, err)) || (st = rt_new(c, TI_DT_FLOAT32, m->ndim, shape, &y, err)))
		goto done;
	size_t products = (size_t)((batch * out * in1) != 0 ? batch * out * in1 : 1);
	if (!(u = rt_scratch_alloc(c, products * sizeof(*u), false))) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for bilinear's products");
		goto done;
	}
	/* U[batch, out * in1] = x2 [batch, in2] A^T, A read as [out * in1, in2] */
	rt_sgemm(false, true, batch, out * in1, in2, 1.0f, rt_f32(b), in2, rt_f32(wc), in2, 0.0f, u, out * in1);
	bilinear_job j = {u, rt_f32(a), bias ? rt_f32(bias) : NULL, rt_f32(y), out, in1, bias ? bias->stride[0] : 0};
	rt_parallel(c, batch, 16, bilinear_rows, &j);
	st = rt_output(c, y, err);
	y = NULL;
done:
	rt_scratch_free(c, u);
	rt_release(c->ex, y);
	rt_release(c->ex, a);
	rt_release(c->ex, b);
	rt_release(c->ex, wc);
	return st;
}

/* ---- scratch: what each kernel above holds beside its operands, for the plan ---- */

/* The scratch of conv_transpose1d/2d/3d: the columns W^T x of one group of one image, (C_out / groups) * kernel by input plane. */
static int64_t conv_transpose_scratch(rt_call *c)
{
	const rt_tensor *x = rt_arg_or_null(c, "input"), *w = rt_arg_or_null(c, "weight");
	if (!x || !w || w->ndim < 3 || x->ndim < w->ndim - 2)
		return 0;
	int spatial = w->ndim - 2;
	return w->shape[1] * rt_prod(w->shape + 2, spatial) * rt_prod(x->shape + x->ndim - spatial, spatial) *
	       (int64_t)sizeof(float);
}

/* bilinear's scratch: x2 A^T, batch by out * in1. */
static int64_t bilinear_scratch(rt_call *c)
{
	const rt_tensor *x1 = rt_arg_or_null(c, "input1"), *w = rt_arg_or_null(c, "weight");
	if (!x1 || !w || w->ndim != 3)
		return 0;
	return rt_prod(x1->shape, x1->ndim) * w->shape[0] * (int64_t)sizeof(float);
}

const rt_scratch rt_scratch_conv[] = {
	{rt_k_conv, conv_scratch},
	{k_conv_transpose, conv_transpose_scratch},
	{k_bilinear, bilinear_scratch},
	{NULL, NULL},
};

const rt_kernel rt_kernels_conv[] = {
	{"conv1d", false, rt_k_conv, false},
	{"conv2d", false, rt_k_conv, false},
	{"conv3d", false, rt_k_conv, false},
	{"conv_transpose1d", false, k_conv_transpose, false},
	{"conv_transpose2d", false, k_conv_transpose, false},
	{"conv_transpose3d", false, k_conv_transpose, false},
	{"bilinear", false, k_bilinear, false},
	{NULL, false, NULL, false},
};
