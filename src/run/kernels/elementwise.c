/*
 * elementwise.c - arithmetic and comparisons with broadcasting (add, sub,
 * mul, div, masked_fill, gt, lt, ...), activations, softmax and log_softmax.
 *
 * Binary ops broadcast as torch.broadcast_shapes: each operand is read
 * through strides with 0 on broadcast dimensions, so neither is expanded in
 * memory; Python numbers are operands of zero dimensions. Long loops are
 * split over the run's threads by rows of the output.
 */
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

typedef enum binop { B_ADD, B_SUB, B_MUL, B_DIV, B_GT, B_LT, B_GE, B_LE, B_EQ, B_NE, B_MAXIMUM, B_MINIMUM, B_POW } binop;

/* An operand: a tensor read through broadcast strides, or a number. */
typedef struct operand {
	const rt_tensor *t;
	double number;
	int64_t stride[RT_MAX_DIMS];
} operand;

typedef struct binary_job {
	binop op;
	double alpha;
	operand a, b;
	int nd;
	int64_t shape[RT_MAX_DIMS];
	rt_tensor *out;
} binary_job;

static inline double read_at(const rt_tensor *t, int64_t off)
{
	switch (t->dtype) {
	case TI_DT_FLOAT32: return rt_f32(t)[off];
	case TI_DT_INT64: return (double)rt_i64(t)[off];
	case TI_DT_BOOL: return rt_bool(t)[off];
	default: return 0;
	}
}

static inline double apply(binop op, double x, double y, double alpha)
{
	switch (op) {
	case B_ADD: return x + alpha * y;
	case B_SUB: return x - alpha * y;
	case B_MUL: return x * y;
	case B_DIV: return x / y;
	case B_GT: return x > y;
	case B_LT: return x < y;
	case B_GE: return x >= y;
	case B_LE: return x <= y;
	case B_EQ: return x == y;
	case B_NE: return x != y;
	case B_MAXIMUM: return x > y || x != x ? x : y;
	case B_MINIMUM: return x < y || x != x ? x : y;
	case B_POW: return pow(x, y);
	}
	return 0;
}

static void binary_rows(void *user, int64_t begin, int64_t end)
{
	binary_job *j = user;
	int nd = j->nd;
	int64_t inner = nd ? j->shape[nd - 1] : 1;
	int64_t sa = j->a.t && nd ? j->a.stride[nd - 1] : 0, sb = j->b.t && nd ? j->b.stride[nd - 1] : 0;
	bool fast = j->out->dtype == TI_DT_FLOAT32 && (!j->a.t || j->a.t->dtype == TI_DT_FLOAT32) &&
	            (!j->b.t || j->b.t->dtype == TI_DT_FLOAT32);
	for (int64_t row = begin; row < end; row++) {
		int64_t rem = row, oa = 0, ob = 0;
		for (int d = nd - 2; d >= 0; d--) {
			int64_t i = rem % j->shape[d];
			rem /= j->shape[d];
			oa += i * j->a.stride[d];
			ob += i * j->b.stride[d];
		}
		int64_t base = row * inner;
		if (fast) {
			const float *pa = j->a.t ? rt_f32(j->a.t) + oa : NULL, *pb = j->b.t ? rt_f32(j->b.t) + ob : NULL;
			float ca = (float)j->a.number, cb = (float)j->b.number, al = (float)j->alpha;
			float *po = rt_f32(j->out) + base;
			switch (j->op) {
			case B_ADD:
				for (int64_t i = 0; i < inner; i++)
					po[i] = (pa ? pa[i * sa] : ca) + al * (pb ? pb[i * sb] : cb);
				continue;
			case B_MUL:
				for (int64_t i = 0; i < inner; i++)
					po[i] = (pa ? pa[i * sa] : ca) * (pb ? pb[i * sb] : cb);
				continue;
			case B_SUB:
				for (int64_t i = 0; i < inner; i++)
					po[i] = (pa ? pa[i * sa] : ca) - al * (pb ? pb[i * sb] : cb);
				continue;
			case B_DIV:
				for (int64_t i = 0; i < inner; i++)
					po[i] = (pa ? pa[i * sa] : ca) / (pb ? pb[i * sb] : cb);
				continue;
			default:
				break;
			}
		}
		for (int64_t i = 0; i < inner; i++) {
			double x = j->a.t ? read_at(j->a.t, oa + i * sa) : j->a.number;
			double y = j->b.t ? read_at(j->b.t, ob + i * sb) : j->b.number;
			double v = apply(j->op, x, y, j->alpha);
			switch (j->out->dtype) {
			case TI_DT_FLOAT32: rt_f32(j->out)[base + i] = (float)v; break;
			case TI_DT_INT64: rt_i64(j->out)[base + i] = (int64_t)v; break;
			case TI_DT_BOOL: rt_bool(j->out)[base + i] = v != 0; break;
			default: break;
			}
		}
	}
}

/* The operand's strides against the output's shape: 0 where it broadcasts. */
static void broadcast_strides(operand *o, int nd, const int64_t *shape)
{
	for (int d = 0; d < nd; d++) {
		int k = d - (nd - (o->t ? o->t->ndim : 0));
		o->stride[d] = o->t && k >= 0 && o->t->shape[k] != 1 ? o->t->stride[k] : 0;
		(void)shape;
	}
}

static ti_status operand_of(rt_call *c, const ti_arg *a, operand *o, ti_error *err)
{
	memset(o, 0, sizeof(*o));
	if (a && a->kind == TI_ARG_TENSOR) {
		rt_tensor *t;
		ti_status st = rt_of(c, a->as.tensor, &t, err);
		o->t = t;
		return st;
	}
	if (!rt_scalar(a, &o->number))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "an operand that is neither a tensor nor a number");
	return TI_OK;
}

/* out = a op b, out's dtype the propagated one (type promotion is the shape rule's). */
static ti_status binary(rt_call *c, binop op, const ti_arg *x, const ti_arg *y, double alpha, ti_error *err)
{
	binary_job j = {.op = op, .alpha = alpha};
	ti_status st = operand_of(c, x, &j.a, err);
	if (!st)
		st = operand_of(c, y, &j.b, err);
	if (st)
		return st;
	int na = j.a.t ? j.a.t->ndim : 0, nb = j.b.t ? j.b.t->ndim : 0;
	j.nd = na > nb ? na : nb;
	for (int d = 0; d < j.nd; d++) {
		int ia = d - (j.nd - na), ib = d - (j.nd - nb);
		int64_t da = ia >= 0 ? j.a.t->shape[ia] : 1, db = ib >= 0 ? j.b.t->shape[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return TI_FAIL(err, TI_E_SHAPE, "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
			               "non-singleton dimension %d", (long long)da, (long long)db, d);
		j.shape[d] = da == 1 ? db : da;
	}
	broadcast_strides(&j.a, j.nd, j.shape);
	broadcast_strides(&j.b, j.nd, j.shape);
	const ti_meta_tensor *meta = c->call->outputs[0].kind == TI_ARG_TENSOR ? c->call->outputs[0].as.tensor : NULL;
	ti_dtype dt = meta ? meta->dtype : TI_DT_FLOAT32;
	if ((st = rt_new(c, dt, j.nd, j.shape, &j.out, err)))
		return st;
	int64_t inner = j.nd ? j.shape[j.nd - 1] : 1, rows = inner ? rt_numel(j.out) / inner : 0;
	rt_parallel(c, rows, inner ? (1 << 15) / inner + 1 : 1, binary_rows, &j);
	return rt_output(c, j.out, err);
}

#define ARG(c, n) ti_bound_get(&(c)->call->in, (n))

static double alpha_of(rt_call *c)
{
	double a = 1;
	const ti_arg *x = ARG(c, "alpha");
	if (x && x->kind != TI_ARG_ABSENT)
		rt_scalar(x, &a);
	return a;
}

static ti_status k_add(rt_call *c, ti_error *err) { return binary(c, B_ADD, ARG(c, "input"), ARG(c, "other"), alpha_of(c), err); }
static ti_status k_sub(rt_call *c, ti_error *err) { return binary(c, B_SUB, ARG(c, "input"), ARG(c, "other"), alpha_of(c), err); }
static ti_status k_mul(rt_call *c, ti_error *err) { return binary(c, B_MUL, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_div(rt_call *c, ti_error *err)
{
	const char *mode = ti_bound_str(&c->call->in, "rounding_mode");
	if (mode)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'div' with rounding_mode='%s'", mode);
	return binary(c, B_DIV, ARG(c, "input"), ARG(c, "other"), 1, err);
}
static ti_status k_gt(rt_call *c, ti_error *err) { return binary(c, B_GT, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_lt(rt_call *c, ti_error *err) { return binary(c, B_LT, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_ge(rt_call *c, ti_error *err) { return binary(c, B_GE, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_le(rt_call *c, ti_error *err) { return binary(c, B_LE, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_eq(rt_call *c, ti_error *err) { return binary(c, B_EQ, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_ne(rt_call *c, ti_error *err) { return binary(c, B_NE, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_maximum(rt_call *c, ti_error *err) { return binary(c, B_MAXIMUM, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_minimum(rt_call *c, ti_error *err) { return binary(c, B_MINIMUM, ARG(c, "input"), ARG(c, "other"), 1, err); }
static ti_status k_pow(rt_call *c, ti_error *err) { return binary(c, B_POW, ARG(c, "input"), ARG(c, "exponent"), 1, err); }

/* masked_fill(input, mask, value): where mask, value; else input. */
static ti_status k_masked_fill(rt_call *c, ti_error *err)
{
	rt_tensor *in, *mask;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "mask", &mask, err);
	if (st)
		return st;
	double value = 0;
	const ti_arg *v = ARG(c, "value");
	if (!rt_scalar(v, &value)) {
		rt_tensor *vt;
		if ((st = rt_of(c, v->as.tensor, &vt, err)))
			return st;
		value = read_at(vt, 0);
	}
	if (mask->dtype != TI_DT_BOOL)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'masked_fill' with a %s mask",
		               ti_dtype_name(mask->dtype));
	rt_tensor *x, *xc;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, in->dtype, in->ndim, in->shape, &x, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	int64_t n = rt_numel(x);
	/* the mask broadcasts to the input's shape (masked_fill keeps the input's shape) */
	operand om = {.t = mask};
	broadcast_strides(&om, in->ndim, in->shape);
	int64_t idx[RT_MAX_DIMS] = {0};
	for (int64_t i = 0; i < n; i++) {
		int64_t off = 0;
		for (int d = 0; d < in->ndim; d++)
			off += idx[d] * om.stride[d];
		bool hit = rt_bool(mask)[off];
		if (x->dtype == TI_DT_FLOAT32)
			rt_f32(x)[i] = hit ? (float)value : rt_f32(xc)[i];
		else if (x->dtype == TI_DT_INT64)
			rt_i64(x)[i] = hit ? (int64_t)value : rt_i64(xc)[i];
		else
			rt_bool(x)[i] = hit ? value != 0 : rt_bool(xc)[i];
		for (int d = in->ndim - 1; d >= 0; d--) {
			if (++idx[d] < in->shape[d])
				break;
			idx[d] = 0;
		}
	}
	rt_release(c->ex, xc);
	return rt_output(c, x, err);
}

/* ---- activations: y = f(x), elementwise, float32 ---- */

typedef enum unop { U_RELU, U_GELU, U_GELU_TANH, U_SILU, U_SIGMOID, U_TANH, U_EXP, U_NEG, U_SQRT, U_RSQRT, U_ABS, U_IDENTITY, U_CLAMP, U_LEAKY, U_HARDSWISH, U_HARDSIGMOID } unop;

typedef struct unary_job {
	unop op;
	const float *x;
	float *y;
	float lo, hi;  /* U_CLAMP's bounds; U_LEAKY's slope in lo */
} unary_job;

static void unary_range(void *user, int64_t begin, int64_t end)
{
	unary_job *j = user;
	const float *x = j->x;
	float *y = j->y;
	switch (j->op) {
	case U_RELU:
		for (int64_t i = begin; i < end; i++)
			y[i] = x[i] > 0 ? x[i] : (x[i] != x[i] ? x[i] : 0);
		break;
	case U_GELU: /* x * Phi(x), as PyTorch's erf form */
		for (int64_t i = begin; i < end; i++)
			y[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] * 0.70710678118654752440)));
		break;
	case U_GELU_TANH:
		for (int64_t i = begin; i < end; i++) {
			double v = x[i];
			y[i] = (float)(0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v))));
		}
		break;
	case U_SILU:
		for (int64_t i = begin; i < end; i++)
			y[i] = (float)(x[i] / (1.0 + exp(-(double)x[i])));
		break;
	case U_SIGMOID:
		for (int64_t i = begin; i < end; i++)
			y[i] = (float)(1.0 / (1.0 + exp(-(double)x[i])));
		break;
	case U_TANH:
		for (int64_t i = begin; i < end; i++)
			y[i] = tanhf(x[i]);
		break;
	case U_EXP:
		for (int64_t i = begin; i < end; i++)
			y[i] = expf(x[i]);
		break;
	case U_NEG:
		for (int64_t i = begin; i < end; i++)
			y[i] = -x[i];
		break;
	case U_SQRT:
		for (int64_t i = begin; i < end; i++)
			y[i] = sqrtf(x[i]);
		break;
	case U_RSQRT:
		for (int64_t i = begin; i < end; i++)
			y[i] = 1.0f / sqrtf(x[i]);
		break;
	case U_ABS:
		for (int64_t i = begin; i < end; i++)
			y[i] = fabsf(x[i]);
		break;
	case U_IDENTITY:
		memcpy(y + begin, x + begin, (size_t)(end - begin) * sizeof(*y));
		break;
	case U_CLAMP: /* NaN passes through, as in PyTorch's hardtanh */
		for (int64_t i = begin; i < end; i++)
			y[i] = x[i] < j->lo ? j->lo : x[i] > j->hi ? j->hi : x[i];
		break;
	case U_LEAKY:
		for (int64_t i = begin; i < end; i++)
			y[i] = x[i] > 0 ? x[i] : x[i] * j->lo;
		break;
	case U_HARDSWISH: /* x * relu6(x + 3) / 6 */
		for (int64_t i = begin; i < end; i++) {
			float r = x[i] + 3.0f;
			r = r < 0 ? 0 : r > 6 ? 6 : r;
			y[i] = x[i] * r / 6.0f;
		}
		break;
	case U_HARDSIGMOID:
		for (int64_t i = begin; i < end; i++) {
			float r = x[i] / 6.0f + 0.5f;
			y[i] = r < 0 ? 0 : r > 1 ? 1 : r;
		}
		break;
	}
}

static ti_status unary_with(rt_call *c, unop op, float lo, float hi, ti_error *err)
{
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	if (in->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this activation on %s", ti_dtype_name(in->dtype));
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, TI_DT_FLOAT32, in->ndim, in->shape, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	unary_job j = {op, rt_f32(xc), rt_f32(y), lo, hi};
	rt_parallel(c, rt_numel(y), 1 << 15, unary_range, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

static ti_status unary(rt_call *c, unop op, ti_error *err) { return unary_with(c, op, 0, 0, err); }

static ti_status k_relu(rt_call *c, ti_error *err) { return unary(c, U_RELU, err); }
static ti_status k_relu6(rt_call *c, ti_error *err) { return unary_with(c, U_CLAMP, 0, 6, err); }
static ti_status k_hardtanh(rt_call *c, ti_error *err)
{
	return unary_with(c, U_CLAMP, (float)rt_float(c, "min_val"), (float)rt_float(c, "max_val"), err);
}
static ti_status k_leaky_relu(rt_call *c, ti_error *err)
{
	return unary_with(c, U_LEAKY, (float)rt_float(c, "negative_slope"), 0, err);
}
static ti_status k_hardswish(rt_call *c, ti_error *err) { return unary(c, U_HARDSWISH, err); }
static ti_status k_hardsigmoid(rt_call *c, ti_error *err) { return unary(c, U_HARDSIGMOID, err); }
static ti_status k_gelu(rt_call *c, ti_error *err)
{
	const char *approximate = c->module ? NULL : ti_bound_str(&c->call->in, "approximate");
	return unary(c, approximate && !strcmp(approximate, "tanh") ? U_GELU_TANH : U_GELU, err);
}
static ti_status k_silu(rt_call *c, ti_error *err) { return unary(c, U_SILU, err); }
static ti_status k_sigmoid(rt_call *c, ti_error *err) { return unary(c, U_SIGMOID, err); }
static ti_status k_tanh(rt_call *c, ti_error *err) { return unary(c, U_TANH, err); }
static ti_status k_exp(rt_call *c, ti_error *err) { return unary(c, U_EXP, err); }
static ti_status k_neg(rt_call *c, ti_error *err) { return unary(c, U_NEG, err); }
static ti_status k_sqrt(rt_call *c, ti_error *err) { return unary(c, U_SQRT, err); }
static ti_status k_rsqrt(rt_call *c, ti_error *err) { return unary(c, U_RSQRT, err); }
static ti_status k_abs(rt_call *c, ti_error *err) { return unary(c, U_ABS, err); }

/* ---- softmax over one dimension: max subtracted first, sums in double ---- */

typedef struct softmax_job {
	const float *x;
	float *y;
	int64_t outer, len, inner;
	bool log;
} softmax_job;

static void softmax_range(void *user, int64_t begin, int64_t end)
{
	softmax_job *j = user;
	for (int64_t r = begin; r < end; r++) {
		int64_t o = r / j->inner, i = r % j->inner;
		const float *x = j->x + o * j->len * j->inner + i;
		float *y = j->y + o * j->len * j->inner + i;
		float mx = -INFINITY;
		for (int64_t k = 0; k < j->len; k++)
			if (x[k * j->inner] > mx)
				mx = x[k * j->inner];
		double sum = 0;
		for (int64_t k = 0; k < j->len; k++)
			sum += exp((double)x[k * j->inner] - mx);
		if (j->log) {
			double lse = log(sum);
			for (int64_t k = 0; k < j->len; k++)
				y[k * j->inner] = (float)((double)x[k * j->inner] - mx - lse);
		} else {
			for (int64_t k = 0; k < j->len; k++)
				y[k * j->inner] = (float)(exp((double)x[k * j->inner] - mx) / sum);
		}
	}
}

static ti_status softmax_of(rt_call *c, bool log, ti_error *err)
{
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	if (in->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for softmax on %s", ti_dtype_name(in->dtype));
	int64_t dim = c->module ? ti_bound_dim(&c->module->ctor, "dim").value : rt_int(c, "dim");
	const ti_arg *d = c->module ? ti_bound_get(&c->module->ctor, "dim") : ti_bound_get(&c->call->in, "dim");
	if (d->kind != TI_ARG_INT) /* dim=None: PyTorch's legacy choice, 0 for 0-, 1- and 3-d inputs, else 1 */
		dim = in->ndim == 0 || in->ndim == 1 || in->ndim == 3 ? 0 : 1;
	if (dim < 0)
		dim += in->ndim;
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, TI_DT_FLOAT32, in->ndim, in->shape, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	softmax_job j = {rt_f32(xc), rt_f32(y), 1, in->ndim ? in->shape[dim] : 1, 1, log};
	for (int k = 0; k < in->ndim; k++) {
		if (k < dim)
			j.outer *= in->shape[k];
		else if (k > dim)
			j.inner *= in->shape[k];
	}
	rt_parallel(c, j.outer * j.inner, j.len ? (1 << 14) / j.len + 1 : 1, softmax_range, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

static ti_status k_softmax(rt_call *c, ti_error *err) { return softmax_of(c, false, err); }
static ti_status k_log_softmax(rt_call *c, ti_error *err) { return softmax_of(c, true, err); }

const rt_kernel rt_kernels_elementwise[] = {
	{"add", false, k_add, false}, {"sub", false, k_sub, false}, {"mul", false, k_mul, false},
	{"div", false, k_div, false}, {"gt", false, k_gt, false}, {"lt", false, k_lt, false},
	{"ge", false, k_ge, false}, {"le", false, k_le, false}, {"eq", false, k_eq, false},
	{"ne", false, k_ne, false}, {"maximum", false, k_maximum, false}, {"minimum", false, k_minimum, false},
	{"pow", false, k_pow, false}, {"masked_fill", false, k_masked_fill, false},
	{"relu", false, k_relu, false}, {"relu6", false, k_relu6, false}, {"hardtanh", false, k_hardtanh, false},
	{"leaky_relu", false, k_leaky_relu, false}, {"hardswish", false, k_hardswish, false},
	{"hardsigmoid", false, k_hardsigmoid, false}, {"gelu", false, k_gelu, false}, {"silu", false, k_silu, false},
	{"sigmoid", false, k_sigmoid, false}, {"tanh", false, k_tanh, false}, {"exp", false, k_exp, false},
	{"neg", false, k_neg, false}, {"sqrt", false, k_sqrt, false}, {"rsqrt", false, k_rsqrt, false},
	{"abs", false, k_abs, false}, {"softmax", false, k_softmax, false}, {"log_softmax", false, k_log_softmax, false},
	{NULL, false, NULL, false},
};
