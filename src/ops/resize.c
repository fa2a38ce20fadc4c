/*
 * resize.c - changing spatial sizes: interpolate (upsample), pixel_shuffle,
 * pixel_unshuffle, pad.
 *
 * interpolate follows torch.nn.functional.interpolate (its checks and
 * messages, in its order), then the upsample kernels' meta functions
 * (aten/src/ATen/native/UpSample*.cpp): output sizes are the given size, or
 * trunc(size * scale_factor) (floor when recompute_scale_factor), each > 0.
 * "area" is adaptive_avg_pool1d/2d/3d, run as that operator. pad follows
 * at::pad (PadNd.cpp): constant_pad_nd, reflection_pad1d/2d/3d,
 * replication_pad1d/2d/3d (ReflectionPad.cpp, ReplicationPadding.cpp, and
 * torch/_meta_registrations.py for reflection_pad2d, whose meta function is
 * Python's) and _pad_circular. pixel_shuffle follows PixelShuffle.cpp.
 *
 * Layout: the 2-D and 3-D upsample kernels, constant padding and the pixel
 * shuffles keep a channels_last input channels_last (suggest_memory_format);
 * everything else is contiguous, as on the meta device.
 *
 * Counting: interpolation is a weighted sum of neighbours per output element:
 * linear, bilinear and trilinear take 2^d of them, bicubic 4^d, each one
 * multiply-accumulate (bilinear: 4 MACs per output element); nearest and
 * nearest-exact copy (0); area counts as adaptive_avg_pool. Padding and
 * pixel shuffles copy: free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/tables.h"

static bool dim_is(ti_dim d, int64_t v)
{
	return ti_dim_is_int(d) && d.value == v;
}

/* A factor or count must be a number: a symbolic size there is a bad description. */
static ti_status need_int(const char *what, ti_dim d, int64_t *out, ti_error *err)
{
	char buf[64];
	if (!ti_dim_is_int(d))
		return TI_FAIL(err, TI_E_CORRUPT, "argument '%s' must be an integer, not the symbolic size %s",
		               what, ti_dim_format(d, buf, sizeof(buf)));
	*out = d.value;
	return TI_OK;
}

/* ---- layouts ---- */

/*
 * c10 is_channels_last_strides_2d_s4 / _3d_s5 (c10/core/MemoryFormat.h):
 * strides that increase in the order C, W, H, (D,) N. What cannot be decided
 * for symbolic strides is taken as not channels_last.
 */
static bool is_channels_last(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	static const int order4[] = {1, 3, 2, 0}, order5[] = {1, 4, 3, 2, 0};
	const int *order = t->ndim == 4 ? order4 : order5;
	if ((t->ndim != 4 && t->ndim != 5) || dim_is(t->stride[1], 0))
		return false;
	ti_dim min = ti_dim_int(0);
	for (int i = 0; i < t->ndim; i++) {
		int d = order[i];
		if (dim_is(t->shape[d], 0) || ti_dim_compare(ctx->sym, t->stride[d], TI_CMP_GE, min) != TI_TRUE)
			return false;
		/* N111 with equal strides is ambiguous: NCHW by default */
		if (d == 0 && ti_dim_same(min, t->stride[1]))
			return false;
		min = t->stride[d];
		if (!dim_is(t->shape[d], 1))
			min = ti_dim_mul(ctx->sym, min, t->shape[d]);
	}
	return true;
}

/* A new tensor like base; channels_last strides (c10 get_channels_last_strides_2d/3d) when asked. */
static ti_status output_new(ti_op_call *call, const ti_meta_tensor *base, int ndim, const ti_dim *shape,
                            bool channels_last, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_meta_tensor *t = ti_meta_new(ctx, base->dtype, ndim, shape);
	if (t && channels_last && (ndim == 4 || ndim == 5)) {
		ti_dim stride[TI_META_MAX_DIMS];
		stride[1] = ti_dim_int(1);
		ti_dim acc = shape[1];
		for (int d = ndim - 1; d >= 2; d--) {
			stride[d] = acc;
			acc = ti_dim_mul(ctx->sym, acc, shape[d]);
		}
		stride[0] = acc;
		t = ti_meta_view(ctx, t, ndim, shape, stride);
	}
	if (t)
		t->requires_grad = base->requires_grad;
	return ti_call_output_tensor(call, t, err);
}

/* ---- interpolate ---- */

typedef struct interp_mode {
	const char *name;
	int ndim;           /* the input rank the mode takes; 0: 3, 4 or 5 */
	bool interpolating; /* takes align_corners */
	bool rank_message;  /* F.interpolate names the rank it needs ("Got 4D input, but linear mode needs 3D input") */
	int neighbours;     /* points per spatial dim weighted into an output element */
	bool keeps_layout;  /* the 2-D/3-D kernels keep channels_last */
} interp_mode;

static const interp_mode interp_modes[] = {
	{"nearest", 0, false, false, 1, true},
	{"nearest-exact", 0, false, false, 1, true},
	{"area", 0, false, false, 0, false},
	{"linear", 3, true, true, 2, false},
	{"bilinear", 4, true, true, 2, true},
	{"bicubic", 4, true, false, 4, true},
	{"trilinear", 5, true, true, 2, true},
};

static const interp_mode *find_mode(const char *name)
{
	for (size_t i = 0; i < sizeof(interp_modes) / sizeof(interp_modes[0]); i++)
		if (!strcmp(interp_modes[i].name, name))
			return &interp_modes[i];
	return NULL;
}

/* Python's repr of a float: the shortest text that reads back, with ".0" on integers. */
static void python_float(double v, char *buf, size_t size)
{
	for (int precision = 1; precision <= 17; precision++) {
		snprintf(buf, size, "%.*g", precision, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".enN"))
		strncat(buf, ".0", size - strlen(buf) - 1);
}

/* A Python tuple of the list argument's items: "(4, 4)", "(2.0,)". */
static const char *python_tuple(ti_shape_ctx *ctx, const ti_arg *items, int n)
{
	char buf[512], item[64];
	size_t used = 0;
	buf[used++] = '(';
	for (int i = 0; i < n && used < sizeof(buf) - 80; i++) {
		if (items[i].kind == TI_ARG_FLOAT)
			python_float(items[i].as.real, item, sizeof(item));
		else
			ti_dim_format(items[i].as.dim, item, sizeof(item));
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? ", " : "", item);
	}
	snprintf(buf + used, sizeof(buf) - used, "%s)", n == 1 ? "," : "");
	return ti_arena_strdup(ctx->arena, buf);
}

/*
 * size * scale, as a double product rounded down (or toward zero when
 * truncate). A scale is a binary fraction m / 2^k, so for a symbolic size
 * this is (size * m) // 2^k.
 */
static ti_status scaled_size(ti_shape_ctx *ctx, ti_dim size, double scale, bool truncate, ti_dim *out,
                             ti_error *err)
{
	char buf[64];
	if (ti_dim_is_int(size)) {
		double v = (double)size.value * scale;
		if (!(v > -9.2e18 && v < 9.2e18))
			return TI_FAIL(err, TI_E_SHAPE, "value cannot be converted to type int64_t without overflow");
		int64_t whole = (int64_t)v; /* toward zero */
		if (!truncate && (double)whole > v)
			whole--;
		*out = ti_dim_int(whole);
		return TI_OK;
	}
	double m = scale;
	int64_t denominator = 1;
	while (m > 0 && m < 1e9 && m != (double)(int64_t)m && denominator < (INT64_C(1) << 30)) {
		m *= 2;
		denominator *= 2;
	}
	if (!(m > 0 && m < 1e9) || m != (double)(int64_t)m)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "cannot scale the symbolic size %s by %g",
		               ti_dim_format(size, buf, sizeof(buf)), scale);
	ti_dim scaled = ti_dim_mul(ctx->sym, size, ti_dim_int((int64_t)m));
	*out = ti_dim_floordiv(ctx->sym, scaled, ti_dim_int(denominator));
	return TI_OK;
}

/* "(H: 5, W: 7)": the spatial sizes with their letters, as the upsample checks print them. */
static const char *spatial_text(ti_shape_ctx *ctx, int n, const ti_dim *sizes)
{
	static const char *const letters[] = {"D", "H", "W"};
	char buf[256], item[64];
	size_t used = 0;
	buf[used++] = '(';
	for (int i = 0; i < n && used < sizeof(buf) - 80; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s: %s", i ? ", " : "", letters[3 - n + i],
		                         ti_dim_format(sizes[i], item, sizeof(item)));
	snprintf(buf + used, sizeof(buf) - used, ")");
	return ti_arena_strdup(ctx->arena, buf);
}

/*
 * upsample_1d/2d/3d_common_check and the meta functions' check for empty
 * non-batch dims (UpSample.h, UpSampleNearest2d.cpp ...): every input and
 * output spatial size > 0.
 */
static ti_status upsample_output(ti_op_call *call, const ti_meta_tensor *t, const ti_dim *out_sizes,
                                 const interp_mode *mode, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int spatial = t->ndim - 2;
	bool positive = true;
	for (int i = 0; i < spatial; i++)
		positive = positive && ti_dim_assume(ctx->sym, t->shape[2 + i], TI_CMP_GT, ti_dim_int(0)) &&
		           ti_dim_assume(ctx->sym, out_sizes[i], TI_CMP_GT, ti_dim_int(0));
	if (!positive)
		return TI_FAIL(err, TI_E_SHAPE, "Input and output sizes should be greater than 0, but got input %s%s output %s",
		               spatial_text(ctx, spatial, t->shape + 2), spatial == 1 ? " and" : "",
		               spatial_text(ctx, spatial, out_sizes));
	bool empty_inner = false;
	for (int i = 1; i < t->ndim; i++)
		empty_inner |= dim_is(t->shape[i], 0);
	if (empty_inner)
		return TI_FAIL(err, TI_E_SHAPE, "Non-empty %dD data tensor expected but got a tensor with sizes %s", t->ndim,
		               ti_meta_shape_str(ctx, t));
	ti_dim shape[5] = {t->shape[0], t->shape[1]};
	memcpy(shape + 2, out_sizes, (size_t)spatial * sizeof(*shape));
	ti_dim outputs = ti_dim_int(1);
	for (int i = 0; i < t->ndim; i++)
		outputs = ti_dim_mul(ctx->sym, outputs, shape[i]);
	int64_t weights = 1;
	for (int i = 0; i < spatial; i++)
		weights *= mode->neighbours;
	if (mode->neighbours > 1)
		ti_call_macs_only(call, ti_dim_mul(ctx->sym, outputs, ti_dim_int(weights)));
	else
		ti_call_flops(call, ti_dim_int(0));
	/* fvcore counts upsample_nearest2d as 1 and upsample_bilinear2d as 4 per output; FlopCounterMode nothing */
	if (spatial == 2 && (mode->neighbours == 1 || mode->neighbours == 2))
		ti_call_count_as(call, ti_dim_int(0), ti_dim_mul(ctx->sym, outputs, ti_dim_int(mode->neighbours == 1 ? 1 : 4)));
	return output_new(call, t, t->ndim, shape, mode->keeps_layout && is_channels_last(ctx, t), err);
}

/* "area": adaptive_avg_pool1d/2d/3d(input, output_size), run as that operator. */
static ti_status area_output(ti_op_call *call, const ti_meta_tensor *t, const ti_dim *out_sizes, ti_error *err)
{
	int spatial = t->ndim - 2;
	ti_arg sizes[3], args[2];
	for (int i = 0; i < spatial; i++)
		sizes[i] = ti_arg_dim(out_sizes[i]);
	args[0] = ti_arg_tensor(t);
	args[1] = ti_arg_list(sizes, spatial);
	static const char *const pools[] = {"adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"};
	ti_op_call pool;
	ti_status st = ti_call_op(call, pools[spatial - 1], args, 2, &pool, err);
	for (int i = 0; !st && i < pool.output_count; i++)
		st = ti_call_output(call, pool.outputs[i], err);
	return st;
}

/* What F.interpolate is asked: the mode, and exactly one of the sizes and the scale factors. */
typedef struct interp_request {
	const interp_mode *mode; /* NULL: a mode F.interpolate does not know */
	const char *mode_name;
	bool align_corners_given;
	const ti_arg *size, *scale; /* TI_ARG_NONE/ABSENT when not given */
	bool recompute;
	bool antialias;
} interp_request;

static const char *rank_error =
	"Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: nearest | linear | "
	"bilinear | bicubic | trilinear | area | nearest-exact (got %s)";

/* F.interpolate's sizes: a size, or floor/trunc(input size * scale factor), one per spatial dim. */
static ti_status output_sizes(ti_shape_ctx *ctx, const ti_meta_tensor *t, const interp_request *rq,
                              ti_dim *out, ti_error *err)
{
	int dim = t->ndim - 2, spatial = dim > 0 ? dim : 0;
	const char *spatial_shape = ti_shape_str(ctx, spatial, t->shape + 2);
	bool has_size = rq->size->kind == TI_ARG_INT || rq->size->kind == TI_ARG_LIST;
	bool has_scale = rq->scale->kind == TI_ARG_LIST;
	if (has_size && has_scale)
		return TI_FAIL(err, TI_E_SHAPE, "only one of size or scale_factor should be defined");
	if (!has_size && !has_scale)
		return TI_FAIL(err, TI_E_SHAPE, "either size or scale_factor should be defined");
	const ti_arg *list = has_scale ? rq->scale : rq->size;
	const ti_arg *items = list->kind == TI_ARG_LIST ? list->as.list.items : list;
	int count = list->kind == TI_ARG_LIST ? list->as.list.count : 1;
	if (rq->size->kind == TI_ARG_LIST && count != dim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Input and output must have the same number of spatial dimensions, but got input with spatial "
		               "dimensions of %s and output size of %s. Please provide input tensor in (N, C, d1, d2, ...,dK) "
		               "format and output size in (o1, o2, ...,oK) format.", spatial_shape,
		               python_tuple(ctx, items, count));
	/* the binder makes a lone float a list of one, which F.interpolate repeats as a scalar */
	if (has_scale && count != 1 && count != dim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Input and scale_factor must have the same number of spatial dimensions, but got input with "
		               "spatial dimensions of %s and scale_factor of shape %s. Please provide input tensor in (N, C, "
		               "d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.", spatial_shape,
		               python_tuple(ctx, items, count));
	if (rq->recompute && has_size)
		return TI_FAIL(err, TI_E_SHAPE, "recompute_scale_factor is not meaningful with an explicit size.");
	/* "area" always takes an explicit size: scale factors are turned into one, as recompute does */
	bool recompute = rq->recompute || (rq->mode && !strcmp(rq->mode->name, "area"));
	for (int i = 0; i < spatial; i++) {
		if (has_size) {
			out[i] = rq->size->kind == TI_ARG_LIST ? items[i].as.dim : rq->size->as.dim;
			continue;
		}
		ti_status st = scaled_size(ctx, t->shape[2 + i], items[count == 1 ? 0 : i].as.real, !recompute, &out[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* torch.nn.functional.interpolate, then the upsample kernel its mode and rank pick. */
static ti_status interpolate(ti_op_call *call, const ti_meta_tensor *t, const interp_request *rq, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const interp_mode *mode = rq->mode;
	if (mode && !mode->interpolating && rq->align_corners_given)
		return TI_FAIL(err, TI_E_SHAPE, "align_corners option can only be set with the interpolating modes: linear | "
		               "bilinear | bicubic | trilinear");
	ti_dim out[TI_META_MAX_DIMS];
	ti_status st = output_sizes(ctx, t, rq, out, err);
	if (st)
		return st;
	bool antialias_ok = mode && (!strcmp(mode->name, "bilinear") || !strcmp(mode->name, "bicubic")) && t->ndim == 4;
	if (rq->antialias && !antialias_ok)
		return TI_FAIL(err, TI_E_SHAPE, "Anti-alias option is restricted to bilinear and bicubic modes and requires a "
		               "4-D tensor as input");
	bool rank_ok = t->ndim >= 3 && t->ndim <= 5;
	if (!mode || !rank_ok || (mode->ndim && mode->ndim != t->ndim && !mode->rank_message))
		return TI_FAIL(err, TI_E_SHAPE, rank_error, t->ndim, rq->mode_name);
	if (mode->ndim && mode->ndim != t->ndim)
		return TI_FAIL(err, TI_E_SHAPE, "Got %dD input, but %s mode needs %dD input", t->ndim, mode->name, mode->ndim);
	if (!strcmp(mode->name, "area"))
		return area_output(call, t, out, err);
	return upsample_output(call, t, out, mode, err);
}

static ti_status run_interpolate(ti_op_call *call, ti_error *err)
{
	const char *name = ti_call_str(call, "mode");
	const ti_arg *recompute = ti_call_arg(call, "recompute_scale_factor");
	interp_request rq = {
		.mode = find_mode(name), .mode_name = name,
		.align_corners_given = ti_call_arg(call, "align_corners")->kind == TI_ARG_BOOL,
		.size = ti_call_arg(call, "size"), .scale = ti_call_arg(call, "scale_factor"),
		.recompute = recompute->kind == TI_ARG_BOOL && recompute->as.boolean,
		.antialias = ti_call_bool(call, "antialias"),
	};
	return interpolate(call, ti_call_tensor(call, "input"), &rq, err);
}

/* F.upsample_nearest and F.upsample_bilinear (deprecated): interpolate, bilinear with align_corners=True. */
static ti_status run_upsample_fixed(ti_op_call *call, ti_error *err)
{
	bool bilinear = !strcmp(call->in.sig->name, "upsample_bilinear");
	interp_request rq = {
		.mode = find_mode(bilinear ? "bilinear" : "nearest"), .mode_name = bilinear ? "bilinear" : "nearest",
		.align_corners_given = bilinear,
		.size = ti_call_arg(call, "size"), .scale = ti_call_arg(call, "scale_factor"),
	};
	return interpolate(call, ti_call_tensor(call, "input"), &rq, err);
}

/* ---- pixel shuffles ---- */

/* size / factor, assumed exact for a symbolic size; false when it is proved not to be. */
static bool divide_exactly(ti_symctx *s, ti_dim size, int64_t factor, ti_dim *out)
{
	bool exact;
	*out = ti_dim_exactdiv(s, size, ti_dim_int(factor), &exact);
	if (exact)
		return true;
	if (ti_dim_is_int(size) || !ti_dim_assume(s, ti_dim_mod(s, size, ti_dim_int(factor)), TI_CMP_EQ, ti_dim_int(0)))
		return false;
	*out = ti_dim_floordiv(s, size, ti_dim_int(factor));
	return true;
}

/* check_pixel_shuffle_shapes and its unshuffle twin (PixelShuffle.cpp): rank >= 3, a positive factor. */
static ti_status shuffle_factor(ti_op_call *call, const char *op, const char *factor_name, const ti_meta_tensor *t,
                                int64_t *factor, ti_error *err)
{
	if (t->ndim < 3)
		return TI_FAIL(err, TI_E_SHAPE, "%s expects input to have at least 3 dimensions, but got input with %d "
		               "dimension(s)", op, t->ndim);
	ti_status st = need_int(factor_name, ti_call_dim(call, factor_name), factor, err);
	if (!st && *factor <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "%s expects a positive %s, but got %lld", op, factor_name, (long long)*factor);
	return st;
}

/* pixel_shuffle (PixelShuffle.cpp): (*, C*r*r, H, W) -> (*, C, H*r, W*r). */
static ti_status run_pixel_shuffle(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int64_t r = 0;
	char buf[64];
	ti_status st = shuffle_factor(call, "pixel_shuffle", "upscale_factor", t, &r, err);
	if (st)
		return st;
	ti_dim shape[TI_META_MAX_DIMS];
	int n = t->ndim;
	memcpy(shape, t->shape, (size_t)n * sizeof(*shape));
	if (!divide_exactly(ctx->sym, t->shape[n - 3], r * r, &shape[n - 3]))
		return TI_FAIL(err, TI_E_SHAPE, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
		               "square of upscale_factor, but input.size(-3)=%s is not divisible by %lld",
		               ti_dim_format(t->shape[n - 3], buf, sizeof(buf)), (long long)(r * r));
	shape[n - 2] = ti_dim_mul(ctx->sym, t->shape[n - 2], ti_dim_int(r));
	shape[n - 1] = ti_dim_mul(ctx->sym, t->shape[n - 1], ti_dim_int(r));
	return output_new(call, t, n, shape, is_channels_last(ctx, t), err);
}

/* pixel_unshuffle (PixelShuffle.cpp): (*, C, H*r, W*r) -> (*, C*r*r, H, W). */
static ti_status run_pixel_unshuffle(ti_op_call *call, ti_error *err)
{
	static const char *const names[] = {"height", "width"};
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int64_t r = 0;
	char buf[64];
	ti_status st = shuffle_factor(call, "pixel_unshuffle", "downscale_factor", t, &r, err);
	if (st)
		return st;
	ti_dim shape[TI_META_MAX_DIMS];
	int n = t->ndim;
	memcpy(shape, t->shape, (size_t)n * sizeof(*shape));
	for (int i = 0; i < 2; i++)
		if (!divide_exactly(ctx->sym, t->shape[n - 2 + i], r, &shape[n - 2 + i]))
			return TI_FAIL(err, TI_E_SHAPE, "pixel_unshuffle expects %s to be divisible by downscale_factor, but "
			               "input.size(%d)=%s is not divisible by %lld", names[i], i - 2,
			               ti_dim_format(t->shape[n - 2 + i], buf, sizeof(buf)), (long long)r);
	shape[n - 3] = ti_dim_mul(ctx->sym, t->shape[n - 3], ti_dim_int(r * r));
	return output_new(call, t, n, shape, is_channels_last(ctx, t), err);
}

/* ---- pad ---- */

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR } pad_mode;

static const char *const pad_modes[] = {"constant", "reflect", "replicate", "circular"};

/*
 * constant_pad_nd (PadNd.cpp): negative pads narrow first (narrow's checks);
 * the last len(pad)/2 dims grow by their pads, the last dim by pad[0] and
 * pad[1]. The result keeps a channels_last input's layout.
 */
static ti_status constant_pad(ti_op_call *call, const ti_meta_tensor *t, const ti_dim *pad, int npad, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	int first = t->ndim - npad / 2;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	for (int i = first; i < t->ndim; i++) {
		const ti_dim *p = &pad[2 * (t->ndim - i - 1)];
		for (int side = 0; side < 2; side++) {
			if (!(ti_dim_is_int(p[side]) && p[side].value < 0))
				continue;
			ti_dim length = ti_dim_add(s, shape[i], p[side]);
			if (!ti_dim_assume(s, length, TI_CMP_GE, ti_dim_int(0)))
				return TI_FAIL(err, TI_E_SHAPE, "narrow(): length must be non-negative.");
			shape[i] = length;
		}
	}
	for (int i = first; i < t->ndim; i++) {
		const ti_dim *p = &pad[2 * (t->ndim - i - 1)];
		ti_dim grown = ti_dim_add(s, ti_dim_add(s, t->shape[i], p[0]), p[1]);
		if (!ti_dim_assume(s, grown, TI_CMP_GE, ti_dim_int(0))) {
			char a[64], b[64], c[64];
			return TI_FAIL(err, TI_E_SHAPE, "The input size %s, plus negative padding %s and %s resulted in a negative "
			               "output size, which is invalid. Check dimension %d of your input.",
			               ti_dim_format(t->shape[i], a, sizeof(a)), ti_dim_format(p[0], b, sizeof(b)),
			               ti_dim_format(p[1], c, sizeof(c)), i);
		}
		shape[i] = grown;
	}
	return output_new(call, t, t->ndim, shape, is_channels_last(call->ctx, t), err);
}

/* padding::check_valid_input (Padding.h): a batch may be empty, no other dim. */
static ti_status check_valid_input(ti_shape_ctx *ctx, const ti_meta_tensor *t, int padded, bool python_shape,
                                   ti_error *err)
{
	bool batch_mode = t->ndim == padded + 2;
	bool valid = true;
	for (int d = batch_mode ? 1 : 0; d < t->ndim; d++)
		valid = valid && !dim_is(t->shape[d], 0);
	if (valid)
		return TI_OK;
	const char *shape = ti_meta_shape_str(ctx, t);
	return TI_FAIL(err, TI_E_SHAPE, "Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other "
	               "non-zero dimensions for input, but got: %s%s%s", padded + 1, padded + 2,
	               python_shape ? "torch.Size(" : "", shape, python_shape ? ")" : "");
}

/*
 * reflection_pad1d/2d/3d and replication_pad1d/2d/3d meta functions: each pad
 * of a reflection smaller than its dim, and outputs of at least 1
 * (reflection: in some dim; replication: in every dim).
 */
static ti_status reflect_or_replicate(ti_op_call *call, const ti_meta_tensor *t, const ti_dim *pad, int padded,
                                      bool reflect, ti_error *err)
{
	static const char *const letters[] = {"D", "H", "W"};
	ti_shape_ctx *ctx = call->ctx;
	ti_symctx *s = ctx->sym;
	/* reflection_pad2d's meta function is Python's: it prints shapes as torch.Size */
	bool python_shape = reflect && padded == 2;
	ti_status st = check_valid_input(ctx, t, padded, python_shape, err);
	if (st)
		return st;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	bool any_positive = false, all_positive = true;
	for (int k = 0; k < padded; k++) {
		int d = t->ndim - 1 - k;
		const ti_dim *p = &pad[2 * k];
		if (reflect && (!ti_dim_assume(s, p[0], TI_CMP_LT, t->shape[d]) || !ti_dim_assume(s, p[1], TI_CMP_LT, t->shape[d]))) {
			char a[64], b[64];
			const char *shape_text = ti_meta_shape_str(ctx, t);
			return TI_FAIL(err, TI_E_SHAPE, "Argument #%d: Padding size should be less than the corresponding input "
			               "dimension, but got: padding (%s, %s) at dimension %d of input %s%s%s", 4 + 2 * k,
			               ti_dim_format(p[0], a, sizeof(a)), ti_dim_format(p[1], b, sizeof(b)), d,
			               python_shape ? "torch.Size(" : "", shape_text, python_shape ? ")" : "");
		}
		shape[d] = ti_dim_add(s, ti_dim_add(s, t->shape[d], p[0]), p[1]);
		bool positive = ti_dim_assume(s, shape[d], TI_CMP_GE, ti_dim_int(1));
		any_positive |= positive;
		all_positive &= positive;
	}
	/* reflection_pad2d/3d want one output size >= 1, the others all of them */
	if (!(reflect && padded > 1 ? any_positive : all_positive)) {
		char in[192] = "", out[192] = "", item[64];
		const int first = t->ndim - padded;
		for (int k = 0; k < padded; k++) {
			/* the kernels separate input sizes differently: "H: 5 W: 7", "D: 3 H: 5, W: 7", "H: 5, W: 7" */
			const char *sep = k == 0 ? "" : reflect && !(padded == 3 && k == 2) ? " " : ", ";
			const char *letter = letters[3 - padded + k];
			snprintf(in + strlen(in), sizeof(in) - strlen(in), "%s%s: %s", sep, letter,
			         ti_dim_format(t->shape[first + k], item, sizeof(item)));
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s: %s", k ? " " : "", letter,
			         ti_dim_format(shape[first + k], item, sizeof(item)));
		}
		if (reflect || padded == 1)
			return TI_FAIL(err, TI_E_SHAPE, "input (%s) is too small. Calculated output %s", in, out);
		return TI_FAIL(err, TI_E_SHAPE, "Calculated output %s must be >= 1 in every dimension (input %s)", out, in);
	}
	for (int d = 0; d < t->ndim; d++)
		if (ti_dim_is_int(shape[d]) && shape[d].value < 0)
			return TI_FAIL(err, TI_E_SHAPE, "Trying to create tensor with negative dimension %lld: %s",
			               (long long)shape[d].value, ti_shape_str(ctx, t->ndim, shape));
	return output_new(call, t, t->ndim, shape, false, err);
}

/* _pad_circular (PadNd.cpp): pads at most one turn around, no dim below 0. */
static ti_status circular_pad(ti_op_call *call, const ti_meta_tensor *t, const ti_dim *pad, int padded, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	for (int i = 0; i < padded; i++) {
		int d = t->ndim - padded + i;
		const ti_dim *p = &pad[2 * (padded - i - 1)];
		shape[d] = ti_dim_add(s, ti_dim_add(s, t->shape[d], p[0]), p[1]);
		if (!ti_dim_assume(s, p[0], TI_CMP_LE, t->shape[d]) || !ti_dim_assume(s, p[1], TI_CMP_LE, t->shape[d]))
			return TI_FAIL(err, TI_E_SHAPE, "Padding value causes wrapping around more than once.");
		if (!ti_dim_assume(s, shape[d], TI_CMP_GE, ti_dim_int(0)))
			return TI_FAIL(err, TI_E_SHAPE, "Negative padding value is resulting in an empty dimension");
	}
	return output_new(call, t, t->ndim, shape, false, err);
}

/* at::pad (PadNd.cpp): the mode, the pad's length, then the kernel for the mode and rank. */
static ti_status run_pad(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	const char *mode_name = ti_call_str(call, "mode");
	int npad, mode = -1;
	const ti_arg *items = ti_call_list(call, "pad", &npad);
	for (int i = 0; i < 4; i++)
		if (!strcmp(mode_name, pad_modes[i]))
			mode = i;
	if (mode < 0)
		return TI_FAIL(err, TI_E_SHAPE, "Unrecognised padding mode %s", mode_name);
	if (npad % 2)
		return TI_FAIL(err, TI_E_SHAPE, "Padding length must be divisible by 2");
	if (npad > 2 * t->ndim)
		return TI_FAIL(err, TI_E_SHAPE, "Padding length should be less than or equal to two times the input "
		               "dimension but got padding length %d and input of dimension %d", npad, t->ndim);
	ti_dim pad[2 * TI_META_MAX_DIMS];
	for (int i = 0; i < npad; i++)
		pad[i] = items[i].as.dim;
	if (mode == PAD_CONSTANT)
		return constant_pad(call, t, pad, npad, err);
	if (!ti_call_is_none(call, "value") && ti_call_float(call, "value") != 0)
		return TI_FAIL(err, TI_E_SHAPE, "Padding mode \"%s\" doesn't take in value argument", mode_name);
	int padded = npad / 2;
	/* each kernel takes its own rank, or one more for a batch */
	if (padded < 1 || padded > 3 || t->ndim < padded + 1 || t->ndim > padded + 2)
		return TI_FAIL(err, TI_E_SHAPE, "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
	if (mode == PAD_CIRCULAR)
		return circular_pad(call, t, pad, padded, err);
	return reflect_or_replicate(call, t, pad, padded, mode == PAD_REFLECT, err);
}

ti_op_rule ti_ops_resize[] = {
	{"interpolate(Tensor input, int|int[]? size=None, float[]? scale_factor=None, str mode='nearest', "
	 "bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False)",
	 run_interpolate, TI_COUNT_RULE, NULL},
	{"upsample(Tensor input, int|int[]? size=None, float[]? scale_factor=None, str mode='nearest', "
	 "bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False)",
	 run_interpolate, TI_COUNT_RULE, NULL},
	{"upsample_nearest(Tensor input, int|int[]? size=None, float[]? scale_factor=None)", run_upsample_fixed,
	 TI_COUNT_RULE, NULL},
	{"upsample_bilinear(Tensor input, int|int[]? size=None, float[]? scale_factor=None)", run_upsample_fixed,
	 TI_COUNT_RULE, NULL},
	{"pixel_shuffle(Tensor input, int upscale_factor)", run_pixel_shuffle, TI_COUNT_FREE, NULL},
	{"pixel_unshuffle(Tensor input, int downscale_factor)", run_pixel_unshuffle, TI_COUNT_FREE, NULL},
	{"pad(Tensor input, int[] pad, str mode='constant', float? value=None)", run_pad, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
