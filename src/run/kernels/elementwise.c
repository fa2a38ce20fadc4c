/*
 * elementwise.c - arithmetic and comparisons with broadcasting (add, sub,
 * mul, div and its rounding modes, remainder, masked_fill, gt, lt, ...),
 * activations, softmax, log_softmax and softmin; where, clamp, prelu, glu;
 * unary math on any held dtype (one table row per operator: sin, log1p,
 * round, sign, elu, softplus, nan_to_num ...); dtype casts (to, type, float).
 *
 * Binary ops broadcast as torch.broadcast_shapes: each operand is read
 * through strides with 0 on broadcast dimensions, so neither is expanded in
 * memory; Python numbers are operands of zero dimensions. Long loops are
 * split over the run's threads by rows of the output. Outside the float32
 * fast paths values are computed in double and stored as the propagated
 * dtype (type promotion is the shape rule's).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

typedef enum binop {
	B_ADD, B_SUB, B_MUL, B_DIV, B_GT, B_LT, B_GE, B_LE, B_EQ, B_NE, B_MAXIMUM, B_MINIMUM, B_POW, B_DIV_TRUNC, B_DIV_FLOOR,
	B_REMAINDER, B_FMOD
} binop;

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
	case B_DIV_TRUNC: return trunc(x / y);
	case B_DIV_FLOOR: return floor(x / y); /* BinaryOps.h div_floor: floor of the quotient (Python's //) */
	case B_REMAINDER: { /* Python's %: the sign of the divisor */
		double mod = fmod(x, y);
		return mod != 0 && (y < 0) != (mod < 0) ? mod + y : mod;
	}
	case B_FMOD: return fmod(x, y);
	}
	return 0;
}

/* Output elements [begin, end): row by row of the last dim, a row's part at each end. */
static void binary_range(void *user, int64_t begin, int64_t end)
{
	binary_job *j = user;
	int nd = j->nd;
	int64_t inner = nd ? j->shape[nd - 1] : 1;
	int64_t sa = j->a.t && nd ? j->a.stride[nd - 1] : 0, sb = j->b.t && nd ? j->b.stride[nd - 1] : 0;
	bool fast = j->out->dtype == TI_DT_FLOAT32 && (!j->a.t || j->a.t->dtype == TI_DT_FLOAT32) &&
	            (!j->b.t || j->b.t->dtype == TI_DT_FLOAT32);
	for (int64_t at = begin; at < end;) {
		int64_t row = at / inner, first = at % inner, last = inner - first < end - at ? inner : first + (end - at);
		int64_t rem = row, oa = 0, ob = 0;
		for (int d = nd - 2; d >= 0; d--) {
			int64_t i = rem % j->shape[d];
			rem /= j->shape[d];
			oa += i * j->a.stride[d];
			ob += i * j->b.stride[d];
		}
		int64_t base = row * inner;
		at += last - first;
		if (fast) {
			const float *pa = j->a.t ? rt_f32(j->a.t) + oa : NULL, *pb = j->b.t ? rt_f32(j->b.t) + ob : NULL;
			float ca = (float)j->a.number, cb = (float)j->b.number, al = (float)j->alpha;
			float *po = rt_f32(j->out) + base;
			switch (j->op) {
			case B_ADD:
				if (pa && pb && sa == 1 && sb == 1) { /* the usual residual add: unit strides, vectorised */
					for (int64_t i = first; i < last; i++)
						po[i] = pa[i] + al * pb[i];
					continue;
				}
				for (int64_t i = first; i < last; i++)
					po[i] = (pa ? pa[i * sa] : ca) + al * (pb ? pb[i * sb] : cb);
				continue;
			case B_MUL:
				for (int64_t i = first; i < last; i++)
					po[i] = (pa ? pa[i * sa] : ca) * (pb ? pb[i * sb] : cb);
				continue;
			case B_SUB:
				for (int64_t i = first; i < last; i++)
					po[i] = (pa ? pa[i * sa] : ca) - al * (pb ? pb[i * sb] : cb);
				continue;
			case B_DIV:
				for (int64_t i = first; i < last; i++)
					po[i] = (pa ? pa[i * sa] : ca) / (pb ? pb[i * sb] : cb);
				continue;
			default:
				break;
			}
		}
		for (int64_t i = first; i < last; i++) {
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

/*
 * The job's dims merged where both operands step through them as through
 * one (dims of size 1 dropped): the output is contiguous, so a residual
 * add of two [8, 256, 56, 56] tensors is one row of 6.4 M elements, not
 * 114,688 rows of 56 whose index arithmetic cost as much as the adds.
 */
static void coalesce(binary_job *j)
{
	int n = 0;
	for (int d = 0; d < j->nd; d++) {
		if (j->shape[d] == 1)
			continue;
		if (n > 0 && j->a.stride[n - 1] == j->a.stride[d] * j->shape[d] &&
		    j->b.stride[n - 1] == j->b.stride[d] * j->shape[d]) {
			j->shape[n - 1] *= j->shape[d];
			j->a.stride[n - 1] = j->a.stride[d];
			j->b.stride[n - 1] = j->b.stride[d];
			continue;
		}
		j->shape[n] = j->shape[d];
		j->a.stride[n] = j->a.stride[d];
		j->b.stride[n] = j->b.stride[d];
		n++;
	}
	if (!n) { /* every dim 1 (or none): one element */
		j->shape[0] = 1;
		j->a.stride[0] = j->b.stride[0] = 0;
		n = j->nd ? 1 : 0;
	}
	j->nd = n;
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
	/* a residual add over the operand that dies here, as add_ (each element read before it is written) */
	if (!(j.out = rt_reuse(c, x && x->kind == TI_ARG_TENSOR ? x->as.tensor : NULL, dt, j.nd, j.shape)) &&
	    !(j.out = rt_reuse(c, y && y->kind == TI_ARG_TENSOR ? y->as.tensor : NULL, dt, j.nd, j.shape)) &&
	    (st = rt_new(c, dt, j.nd, j.shape, &j.out, err)))
		return st;
	int64_t numel = rt_numel(j.out);
	coalesce(&j);
	rt_parallel(c, numel, 1 << 15, binary_range, &j);
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
	binop op = !mode ? B_DIV : !strcmp(mode, "trunc") ? B_DIV_TRUNC : B_DIV_FLOOR; /* the rule allows no other */
	return binary(c, op, ARG(c, "input"), ARG(c, "other"), 1, err);
}
static ti_status k_floor_divide(rt_call *c, ti_error *err)
{
	return binary(c, B_DIV_FLOOR, ARG(c, "input"), ARG(c, "other"), 1, err);
}
static ti_status k_remainder(rt_call *c, ti_error *err)
{
	return binary(c, B_REMAINDER, ARG(c, "input"), ARG(c, "other"), 1, err);
}
static ti_status k_fmod(rt_call *c, ti_error *err) { return binary(c, B_FMOD, ARG(c, "input"), ARG(c, "other"), 1, err); }
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
	case U_RELU: /* clamp_min(x, 0) as std::max(x, 0): NaN and -0.0 pass; a form the compiler vectorises */
		for (int64_t i = begin; i < end; i++)
			y[i] = x[i] < 0 ? 0.0f : x[i];
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
	if ((y = rt_reuse(c, ti_bound_tensor(&c->call->in, "input"), TI_DT_FLOAT32, in->ndim, in->shape))) {
		xc = y; /* relu_ as PyTorch's inplace=True runs it: over the input, which nothing reads after */
		y->refs++;
	} else if ((st = rt_contiguous(c, in, &xc, err))) {
		return st;
	} else if ((st = rt_new(c, TI_DT_FLOAT32, in->ndim, in->shape, &y, err))) {
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
	bool log, negate;
} softmax_job;

static void softmax_range(void *user, int64_t begin, int64_t end)
{
	softmax_job *j = user;
	float sign = j->negate ? -1.0f : 1.0f; /* softmin is softmax(-x) */
	for (int64_t r = begin; r < end; r++) {
		int64_t o = r / j->inner, i = r % j->inner;
		const float *x = j->x + o * j->len * j->inner + i;
		float *y = j->y + o * j->len * j->inner + i;
		float mx = -INFINITY;
		for (int64_t k = 0; k < j->len; k++)
			if (sign * x[k * j->inner] > mx)
				mx = sign * x[k * j->inner];
		double sum = 0;
		for (int64_t k = 0; k < j->len; k++)
			sum += exp((double)(sign * x[k * j->inner]) - mx);
		if (j->log) {
			double lse = log(sum);
			for (int64_t k = 0; k < j->len; k++)
				y[k * j->inner] = (float)((double)(sign * x[k * j->inner]) - mx - lse);
		} else {
			for (int64_t k = 0; k < j->len; k++)
				y[k * j->inner] = (float)(exp((double)(sign * x[k * j->inner]) - mx) / sum);
		}
	}
}

static ti_status softmax_of(rt_call *c, bool log, bool negate, ti_error *err)
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
	softmax_job j = {rt_f32(xc), rt_f32(y), 1, in->ndim ? in->shape[dim] : 1, 1, log, negate};
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

static ti_status k_softmax(rt_call *c, ti_error *err) { return softmax_of(c, false, false, err); }
static ti_status k_log_softmax(rt_call *c, ti_error *err) { return softmax_of(c, true, false, err); }
static ti_status k_softmin(rt_call *c, ti_error *err) { return softmax_of(c, false, true, err); }

/* ---- maximum and minimum for max(input, other) and min(input, other) (reduce.c's max and min) ---- */

ti_status rt_k_maximum_of(rt_call *c, const ti_arg *a, const ti_arg *b, bool largest, ti_error *err)
{
	return binary(c, largest ? B_MAXIMUM : B_MINIMUM, a, b, 1, err);
}

/* rsub(input, other, alpha): other - alpha * input */
static ti_status k_rsub(rt_call *c, ti_error *err) { return binary(c, B_SUB, ARG(c, "other"), ARG(c, "input"), alpha_of(c), err); }

/* ---- unary math on any held dtype: computed in double, stored as the propagated dtype ---- */

/* A unary function of x with up to three parameters (NAN where the argument is None). */
typedef double (*math_fn)(double x, const double *p);

static double m_square(double x, const double *p) { (void)p; return x * x; }
static double m_sin(double x, const double *p) { (void)p; return sin(x); }
static double m_cos(double x, const double *p) { (void)p; return cos(x); }
static double m_tan(double x, const double *p) { (void)p; return tan(x); }
static double m_asin(double x, const double *p) { (void)p; return asin(x); }
static double m_acos(double x, const double *p) { (void)p; return acos(x); }
static double m_atan(double x, const double *p) { (void)p; return atan(x); }
static double m_sinh(double x, const double *p) { (void)p; return sinh(x); }
static double m_cosh(double x, const double *p) { (void)p; return cosh(x); }
static double m_asinh(double x, const double *p) { (void)p; return asinh(x); }
static double m_acosh(double x, const double *p) { (void)p; return acosh(x); }
static double m_atanh(double x, const double *p) { (void)p; return atanh(x); }
static double m_log(double x, const double *p) { (void)p; return log(x); }
static double m_log2(double x, const double *p) { (void)p; return log2(x); }
static double m_log10(double x, const double *p) { (void)p; return log10(x); }
static double m_log1p(double x, const double *p) { (void)p; return log1p(x); }
static double m_expm1(double x, const double *p) { (void)p; return expm1(x); }
static double m_exp2(double x, const double *p) { (void)p; return exp2(x); }
static double m_erf(double x, const double *p) { (void)p; return erf(x); }
static double m_erfc(double x, const double *p) { (void)p; return erfc(x); }
static double m_lgamma(double x, const double *p) { (void)p; return lgamma(x); }
static double m_reciprocal(double x, const double *p) { (void)p; return 1 / x; }
static double m_floor(double x, const double *p) { (void)p; return floor(x); }
static double m_ceil(double x, const double *p) { (void)p; return ceil(x); }
static double m_trunc(double x, const double *p) { (void)p; return trunc(x); }
static double m_frac(double x, const double *p) { (void)p; return x - trunc(x); }
static double m_positive(double x, const double *p) { (void)p; return x; }
#define PI 3.14159265358979323846
static double m_deg2rad(double x, const double *p) { (void)p; return x * (PI / 180); }
static double m_rad2deg(double x, const double *p) { (void)p; return x * (180 / PI); }
static double m_sinc(double x, const double *p) { (void)p; return x == 0 ? 1 : sin(PI * x) / (PI * x); }
static double m_softsign(double x, const double *p) { (void)p; return x / (1 + fabs(x)); }
static double m_tanhshrink(double x, const double *p) { (void)p; return x - tanh(x); }
/* (0 < x) - (x < 0): NaN has sign 0 */
static double m_sign(double x, const double *p) { (void)p; return (double)((0 < x) - (x < 0)); }
static double m_isnan(double x, const double *p) { (void)p; return x != x; }
static double m_isinf(double x, const double *p) { (void)p; return isinf(x); }
static double m_isposinf(double x, const double *p) { (void)p; return isinf(x) && x > 0; }
static double m_isneginf(double x, const double *p) { (void)p; return isinf(x) && x < 0; }
static double m_isfinite(double x, const double *p) { (void)p; return isfinite(x); }
static double m_signbit(double x, const double *p) { (void)p; return signbit(x) != 0; }
static double m_logical_not(double x, const double *p) { (void)p; return x == 0; }
/* selu's constants: torch/nn/functional.py (Klambauer et al.) */
static double m_selu(double x, const double *p)
{
	(void)p;
	return 1.0507009873554804934193349852946 * (x > 0 ? x : 1.6732632423543772848170429916717 * expm1(x));
}
static double m_elu(double x, const double *p) { return x > 0 ? x : p[0] * expm1(x); }
static double m_celu(double x, const double *p) { return x > 0 ? x : p[0] * expm1(x / p[0]); }
static double m_mish(double x, const double *p) { (void)p; return x * tanh(log1p(exp(x))); }
/* -softplus(-x), without overflow: min(x, 0) - log1p(exp(-|x|)) */
static double m_logsigmoid(double x, const double *p) { (void)p; return (x < 0 ? x : 0) - log1p(exp(-fabs(x))); }
/* softplus(beta, threshold): linear where beta * x passes threshold */
static double m_softplus(double x, const double *p) { return x * p[0] > p[1] ? x : log1p(exp(x * p[0])) / p[0]; }
static double m_hardshrink(double x, const double *p) { return x >= -p[0] && x <= p[0] ? 0 : x; }
static double m_softshrink(double x, const double *p) { return x > p[0] ? x - p[0] : x < -p[0] ? x + p[0] : 0; }
/* threshold(threshold, value): x <= threshold gives value, NaN stays */
static double m_threshold(double x, const double *p) { return x <= p[0] ? p[1] : x; }
/* logit(eps): the input clamped to [eps, 1 - eps] first when eps is given */
static double m_logit(double x, const double *p)
{
	if (p[0] == p[0])
		x = x < p[0] ? p[0] : x > 1 - p[0] ? 1 - p[0] : x;
	return log(x / (1 - x));
}
/* nan_to_num(nan, posinf, neginf): infinities become float32's extremes unless given (only float32 is held) */
static double m_nan_to_num(double x, const double *p)
{
	if (x != x)
		return p[0] == p[0] ? p[0] : 0;
	if (isinf(x))
		return x > 0 ? (p[1] == p[1] ? p[1] : FLT_MAX) : (p[2] == p[2] ? p[2] : -FLT_MAX);
	return x;
}
/* round(decimals): half to even, scaled by 10^decimals as UnaryOpsKernel.cpp does */
static double m_round(double x, const double *p)
{
	double d = p[0] == p[0] ? p[0] : 0;
	if (d == 0)
		return nearbyint(x);
	float scale = (float)pow(10, fabs(d)); /* PyTorch scales in the input's dtype */
	return d > 0 ? (float)nearbyint((float)x * scale) / scale : (float)nearbyint((float)x / scale) * scale;
}

static const struct math_op {
	const char *name;
	math_fn fn;
	const char *params[3];
} math_ops[] = {
	{"square", m_square, {0}}, {"sin", m_sin, {0}}, {"cos", m_cos, {0}}, {"tan", m_tan, {0}},
	{"asin", m_asin, {0}}, {"arcsin", m_asin, {0}}, {"acos", m_acos, {0}}, {"arccos", m_acos, {0}},
	{"atan", m_atan, {0}}, {"arctan", m_atan, {0}}, {"sinh", m_sinh, {0}}, {"cosh", m_cosh, {0}},
	{"asinh", m_asinh, {0}}, {"arcsinh", m_asinh, {0}}, {"acosh", m_acosh, {0}}, {"arccosh", m_acosh, {0}},
	{"atanh", m_atanh, {0}}, {"arctanh", m_atanh, {0}}, {"log", m_log, {0}}, {"log2", m_log2, {0}},
	{"log10", m_log10, {0}}, {"log1p", m_log1p, {0}}, {"expm1", m_expm1, {0}}, {"exp2", m_exp2, {0}},
	{"erf", m_erf, {0}}, {"erfc", m_erfc, {0}}, {"lgamma", m_lgamma, {0}}, {"reciprocal", m_reciprocal, {0}},
	{"floor", m_floor, {0}}, {"ceil", m_ceil, {0}}, {"trunc", m_trunc, {0}}, {"fix", m_trunc, {0}},
	{"frac", m_frac, {0}}, {"round", m_round, {"decimals"}}, {"sign", m_sign, {0}}, {"sgn", m_sign, {0}},
	{"positive", m_positive, {0}}, {"deg2rad", m_deg2rad, {0}}, {"rad2deg", m_rad2deg, {0}},
	{"sinc", m_sinc, {0}}, {"softsign", m_softsign, {0}}, {"tanhshrink", m_tanhshrink, {0}},
	{"isnan", m_isnan, {0}}, {"isinf", m_isinf, {0}}, {"isposinf", m_isposinf, {0}},
	{"isneginf", m_isneginf, {0}}, {"isfinite", m_isfinite, {0}}, {"signbit", m_signbit, {0}},
	{"logical_not", m_logical_not, {0}}, {"selu", m_selu, {0}}, {"elu", m_elu, {"alpha"}},
	{"celu", m_celu, {"alpha"}}, {"mish", m_mish, {0}}, {"logsigmoid", m_logsigmoid, {0}},
	{"softplus", m_softplus, {"beta", "threshold"}}, {"hardshrink", m_hardshrink, {"lambd"}},
	{"softshrink", m_softshrink, {"lambd"}}, {"threshold", m_threshold, {"threshold", "value"}},
	{"logit", m_logit, {"eps"}}, {"nan_to_num", m_nan_to_num, {"nan", "posinf", "neginf"}},
};

typedef struct math_job {
	math_fn fn;
	double p[3];
	const rt_tensor *x;
	rt_tensor *y;
} math_job;

static inline void store_at(rt_tensor *t, int64_t i, double v)
{
	switch (t->dtype) {
	case TI_DT_FLOAT32: rt_f32(t)[i] = (float)v; break;
	case TI_DT_INT64: rt_i64(t)[i] = v == v && fabs(v) < 9223372036854775808.0 ? (int64_t)v : INT64_MIN; break;
	case TI_DT_BOOL: rt_bool(t)[i] = v != 0; break;
	default: break;
	}
}

static void math_range(void *user, int64_t begin, int64_t end)
{
	math_job *j = user;
	for (int64_t i = begin; i < end; i++)
		store_at(j->y, i, j->fn(read_at(j->x, i), j->p));
}

/* The propagated dtype of the call's first output (float32 when it has none). */
static ti_dtype out_dtype(rt_call *c)
{
	const ti_arg *o = &c->call->outputs[0];
	return o->kind == TI_ARG_TENSOR ? o->as.tensor->dtype : TI_DT_FLOAT32;
}

/* Every unary math operator: its row found by the operator's name. */
static ti_status k_math(rt_call *c, ti_error *err)
{
	const char *name = c->call->rule->parsed->name;
	const struct math_op *op = NULL;
	for (size_t i = 0; i < sizeof(math_ops) / sizeof(math_ops[0]) && !op; i++)
		if (!strcmp(math_ops[i].name, name))
			op = &math_ops[i];
	if (!op)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s'", name);
	math_job j = {.fn = op->fn, .p = {NAN, NAN, NAN}};
	for (int k = 0; k < 3 && op->params[k]; k++)
		if (!rt_scalar(ARG(c, op->params[k]), &j.p[k]))
			j.p[k] = NAN;
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st || (st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, out_dtype(c), in->ndim, in->shape, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	j.x = xc;
	j.y = y;
	rt_parallel(c, rt_numel(y), 1 << 14, math_range, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

/* ---- several operands, broadcast to the propagated output: where, clamp, prelu, glu ---- */

typedef enum nary { N_WHERE, N_CLAMP, N_PRELU, N_GLU } nary;

typedef struct nary_job {
	nary op;
	operand in[3];  /* where: condition, input, other; clamp: input, min, max; prelu: input, weight; glu: halves */
	bool given[3];  /* clamp: which bounds there are */
	int count, nd;
	int64_t shape[RT_MAX_DIMS];
	rt_tensor *out;
} nary_job;

static inline double nary_apply(const nary_job *j, const double *v)
{
	switch (j->op) {
	case N_WHERE: return v[0] != 0 ? v[1] : v[2];
	case N_CLAMP: { /* TensorCompare.cpp: min(max(x, lo), hi); NaN anywhere gives NaN */
		double x = v[0];
		if (j->given[1])
			x = v[1] != v[1] ? v[1] : x < v[1] ? v[1] : x;
		if (j->given[2])
			x = v[2] != v[2] ? v[2] : x > v[2] ? v[2] : x;
		return x;
	}
	case N_PRELU: return v[0] > 0 ? v[0] : v[0] * v[1];
	case N_GLU: return v[0] / (1 + exp(-v[1]));
	}
	return 0;
}

static void nary_rows(void *user, int64_t begin, int64_t end)
{
	nary_job *j = user;
	int nd = j->nd;
	int64_t inner = nd ? j->shape[nd - 1] : 1;
	for (int64_t row = begin; row < end; row++) {
		int64_t rem = row, off[3] = {0, 0, 0};
		for (int d = nd - 2; d >= 0; d--) {
			int64_t i = rem % j->shape[d];
			rem /= j->shape[d];
			for (int k = 0; k < j->count; k++)
				off[k] += i * j->in[k].stride[d];
		}
		for (int64_t i = 0; i < inner; i++) {
			double v[3] = {0, 0, 0};
			for (int k = 0; k < j->count; k++)
				v[k] = j->in[k].t ? read_at(j->in[k].t, off[k] + i * (nd ? j->in[k].stride[nd - 1] : 0))
				                  : j->in[k].number;
			store_at(j->out, row * inner + i, nary_apply(j, v));
		}
	}
}

/* Runs j over the propagated output's shape; operands without preset strides broadcast to it. */
static ti_status nary_run(rt_call *c, nary_job *j, bool preset_strides, ti_error *err)
{
	const ti_arg *o = &c->call->outputs[0];
	if (o->kind != TI_ARG_TENSOR || o->as.tensor->ndim > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' with this output",
		               c->call->rule->parsed->name);
	j->nd = o->as.tensor->ndim;
	for (int d = 0; d < j->nd; d++)
		j->shape[d] = o->as.tensor->shape[d].value;
	for (int k = 0; k < j->count && !preset_strides; k++)
		broadcast_strides(&j->in[k], j->nd, j->shape);
	ti_status st = rt_new(c, o->as.tensor->dtype, j->nd, j->shape, &j->out, err);
	if (st)
		return st;
	int64_t inner = j->nd ? j->shape[j->nd - 1] : 1, rows = inner ? rt_numel(j->out) / inner : 0;
	rt_parallel(c, rows, inner ? (1 << 14) / inner + 1 : 1, nary_rows, j);
	return rt_output(c, j->out, err);
}

static ti_status k_where(rt_call *c, ti_error *err)
{
	nary_job j = {.op = N_WHERE, .count = 3};
	const ti_arg *args[3] = {ARG(c, "condition"), ARG(c, "input"), ARG(c, "other")};
	if (args[1]->kind == TI_ARG_NONE || args[2]->kind == TI_ARG_NONE || args[1]->kind == TI_ARG_ABSENT ||
	    args[2]->kind == TI_ARG_ABSENT)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'where' with a condition only (nonzero)");
	for (int k = 0; k < 3; k++) {
		ti_status st = operand_of(c, args[k], &j.in[k], err);
		if (st)
			return st;
	}
	return nary_run(c, &j, false, err);
}

/* clamp, clip (min, max), clamp_min (min), clamp_max (max): bounds are numbers or tensors. */
static ti_status k_clamp(rt_call *c, ti_error *err)
{
	nary_job j = {.op = N_CLAMP, .count = 3};
	const ti_arg *args[3] = {ARG(c, "input"), ARG(c, "min"), ARG(c, "max")};
	for (int k = 0; k < 3; k++) {
		j.given[k] = args[k] && args[k]->kind != TI_ARG_NONE && args[k]->kind != TI_ARG_ABSENT;
		ti_status st = j.given[k] ? operand_of(c, args[k], &j.in[k], err) : TI_OK;
		if (st)
			return st;
	}
	return nary_run(c, &j, false, err);
}

/* prelu(input, weight): one slope, or one per channel (dim 1). */
static ti_status k_prelu(rt_call *c, ti_error *err)
{
	nary_job j = {.op = N_PRELU, .count = 2};
	rt_tensor *in, *w;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "weight", &w, err);
	if (st)
		return st;
	j.in[0].t = in;
	j.in[1].t = w;
	broadcast_strides(&j.in[0], in->ndim, in->shape);
	memset(j.in[1].stride, 0, sizeof(j.in[1].stride));
	if (rt_numel(w) > 1 && in->ndim > 1)
		j.in[1].stride[1] = w->ndim ? w->stride[0] : 0;
	return nary_run(c, &j, true, err);
}

/* glu(input, dim): first half * sigmoid(second half), the halves views of the input. */
static ti_status k_glu(rt_call *c, ti_error *err)
{
	nary_job j = {.op = N_GLU, .count = 2};
	rt_tensor *in, *half[2] = {NULL, NULL};
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	int64_t dim = rt_int(c, "dim");
	dim += dim < 0 ? in->ndim : 0;
	if (dim < 0 || dim >= in->ndim)
		return TI_FAIL(err, TI_E_INVALID, "glu(): dim %lld out of range", (long long)dim);
	int64_t shape[RT_MAX_DIMS];
	memcpy(shape, in->shape, sizeof(shape));
	shape[dim] /= 2;
	for (int k = 0; k < 2 && !st; k++)
		st = rt_view(c, in, in->ndim, shape, in->stride, in->offset + k * shape[dim] * in->stride[dim], &half[k], err);
	for (int k = 0; k < 2 && !st; k++)
		j.in[k].t = half[k];
	if (!st)
		st = nary_run(c, &j, false, err);
	rt_release(c->ex, half[0]);
	rt_release(c->ex, half[1]);
	return st;
}

/* ---- dtype conversions: to, type, type_as, float, long, bool (the held dtypes; others are refused before) ---- */

typedef struct cast_job {
	const rt_tensor *x;
	rt_tensor *y;
} cast_job;

static void cast_range(void *user, int64_t begin, int64_t end)
{
	cast_job *j = user;
	const rt_tensor *x = j->x;
	rt_tensor *y = j->y;
	for (int64_t i = begin; i < end; i++) {
		if (y->dtype == TI_DT_INT64 && x->dtype == TI_DT_INT64)
			rt_i64(y)[i] = rt_i64(x)[i]; /* exact, not through a double */
		else
			store_at(y, i, read_at(x, i));
	}
}

static ti_status k_cast(rt_call *c, ti_error *err)
{
	ti_dtype dt = out_dtype(c); /* rt_new holds it (float16 as float32, rounded by the executor after) */
	rt_tensor *in, *xc, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st || (st = rt_contiguous(c, in, &xc, err)))
		return st;
	if ((st = rt_new(c, dt, in->ndim, in->shape, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	cast_job j = {xc, y};
	rt_parallel(c, rt_numel(y), 1 << 15, cast_range, &j);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

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
	{"softmin", false, k_softmin, false}, {"rsub", false, k_rsub, false}, {"divide", false, k_div, false},
	{"true_divide", false, k_div, false}, {"floor_divide", false, k_floor_divide, false},
	{"remainder", false, k_remainder, false}, {"fmod", false, k_fmod, false},
	{"where", false, k_where, false}, {"clamp", false, k_clamp, false}, {"clip", false, k_clamp, false},
	{"clamp_min", false, k_clamp, false}, {"clamp_max", false, k_clamp, false}, {"prelu", false, k_prelu, false},
	{"glu", false, k_glu, false},
	{"to", false, k_cast, false}, {"type", false, k_cast, false}, {"type_as", false, k_cast, false},
	{"float", false, k_cast, false}, {"long", false, k_cast, false}, {"bool", false, k_cast, false},
	{"square", false, k_math, false}, {"sin", false, k_math, false}, {"cos", false, k_math, false},
	{"tan", false, k_math, false}, {"asin", false, k_math, false}, {"arcsin", false, k_math, false},
	{"acos", false, k_math, false}, {"arccos", false, k_math, false}, {"atan", false, k_math, false},
	{"arctan", false, k_math, false}, {"sinh", false, k_math, false}, {"cosh", false, k_math, false},
	{"asinh", false, k_math, false}, {"arcsinh", false, k_math, false}, {"acosh", false, k_math, false},
	{"arccosh", false, k_math, false}, {"atanh", false, k_math, false}, {"arctanh", false, k_math, false},
	{"log", false, k_math, false}, {"log2", false, k_math, false}, {"log10", false, k_math, false},
	{"log1p", false, k_math, false}, {"expm1", false, k_math, false}, {"exp2", false, k_math, false},
	{"erf", false, k_math, false}, {"erfc", false, k_math, false}, {"lgamma", false, k_math, false},
	{"reciprocal", false, k_math, false}, {"floor", false, k_math, false}, {"ceil", false, k_math, false},
	{"trunc", false, k_math, false}, {"fix", false, k_math, false}, {"frac", false, k_math, false},
	{"round", false, k_math, false}, {"sign", false, k_math, false}, {"sgn", false, k_math, false},
	{"positive", false, k_math, false}, {"deg2rad", false, k_math, false}, {"rad2deg", false, k_math, false},
	{"sinc", false, k_math, false}, {"softsign", false, k_math, false}, {"tanhshrink", false, k_math, false},
	{"isnan", false, k_math, false}, {"isinf", false, k_math, false}, {"isposinf", false, k_math, false},
	{"isneginf", false, k_math, false}, {"isfinite", false, k_math, false}, {"signbit", false, k_math, false},
	{"logical_not", false, k_math, false}, {"selu", false, k_math, false}, {"elu", false, k_math, false},
	{"celu", false, k_math, false}, {"mish", false, k_math, false}, {"logsigmoid", false, k_math, false},
	{"softplus", false, k_math, false}, {"hardshrink", false, k_math, false}, {"softshrink", false, k_math, false},
	{"threshold", false, k_math, false}, {"logit", false, k_math, false}, {"nan_to_num", false, k_math, false},
	{NULL, false, NULL, false},
};
