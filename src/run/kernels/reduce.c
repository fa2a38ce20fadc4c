/*
 * reduce.c - reductions (sum, mean, prod, amax, max with indices, argmax,
 * var, std, norm, logsumexp, all, any, count_nonzero ...), scans (cumsum,
 * cumprod, logcumsumexp, cummax, cummin), orderings (sort, argsort, msort,
 * topk, kthvalue, median, nanmedian). F.normalize is norm.c's.
 *
 * Every kernel starts the same way: the input is gathered into doubles with
 * the dims it works on moved last, so each output element (a reduction) or
 * each line along dim (a scan, a sort) reads one contiguous row. Sums run in
 * double, as PyTorch's CPU scans accumulate (at::acc_type of float is
 * double); int64 values beyond 2^53 lose precision there. Output shapes and
 * dtypes are the propagated ones (keepdim is the shape rule's business).
 *
 * Ties and NaN follow PyTorch's CPU kernels: max/min/argmax/argmin take the
 * first extreme and NaN as the extreme (ReduceOpsUtils.h); cummax/cummin the
 * last (cummax_cummin_helper compares with >=); sorting puts NaN above every
 * number and is stable, which sort(stable=True) promises and the others only
 * happen to be on data without ties.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "run/run_internal.h"

#define ARG(c, n) ti_bound_get(&(c)->call->in, (n))

static const char *op_name(rt_call *c) { return c->call->rule->parsed->name; }

/* The k-th propagated output tensor (lists flattened), or NULL. */
static const ti_meta_tensor *meta_out(rt_call *c, int k)
{
	int n = 0;
	for (int i = 0; i < c->call->output_count; i++) {
		const ti_arg *a = &c->call->outputs[i];
		if (a->kind == TI_ARG_TENSOR && n++ == k)
			return a->as.tensor;
		for (int j = 0; a->kind == TI_ARG_LIST && j < a->as.list.count; j++)
			if (a->as.list.items[j].kind == TI_ARG_TENSOR && n++ == k)
				return a->as.list.items[j].as.tensor;
	}
	return NULL;
}

/* A new contiguous output of the k-th propagated output's shape and dtype. */
static ti_status new_output(rt_call *c, int k, rt_tensor **out, ti_error *err)
{
	const ti_meta_tensor *m = meta_out(c, k);
	if (!m)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' with these outputs", op_name(c));
	int64_t shape[RT_MAX_DIMS];
	if (m->ndim > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for tensors of %d dimensions", m->ndim);
	for (int d = 0; d < m->ndim; d++)
		shape[d] = m->shape[d].value;
	return rt_new(c, m->dtype, m->ndim, shape, out, err);
}

static inline double load(const rt_tensor *t, int64_t off)
{
	switch (t->dtype) {
	case TI_DT_FLOAT32: return rt_f32(t)[off];
	case TI_DT_INT64: return (double)rt_i64(t)[off];
	case TI_DT_BOOL: return rt_bool(t)[off];
	default: return 0;
	}
}

/* int64 from a double as x86's cvttsd2si gives it (what PyTorch's casts give): out of range is INT64_MIN. */
static inline int64_t to_int64(double v)
{
	return v == v && v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
}

static inline void store(rt_tensor *t, int64_t i, double v)
{
	switch (t->dtype) {
	case TI_DT_FLOAT32: rt_f32(t)[i] = (float)v; break;
	case TI_DT_INT64: rt_i64(t)[i] = to_int64(v); break;
	case TI_DT_BOOL: rt_bool(t)[i] = v != 0; break;
	default: break;
	}
}

/* ---- gathering: the input as rows of doubles, chosen dims last ---- */

typedef struct gather_job {
	const rt_tensor *t;
	int nd;
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS]; /* the permuted view */
	int64_t inner;
	bool truncate;                                   /* a dtype= that casts to an integer first */
	double *out;
} gather_job;

static void gather_rows(void *user, int64_t begin, int64_t end)
{
	gather_job *j = user;
	int64_t idx[RT_MAX_DIMS], off = 0, flat = begin * j->inner, n = (end - begin) * j->inner;
	for (int d = j->nd - 1; d >= 0; d--) {
		idx[d] = flat % j->shape[d];
		flat /= j->shape[d];
		off += idx[d] * j->stride[d];
	}
	double *o = j->out + begin * j->inner;
	for (int64_t i = 0; i < n; i++) {
		o[i] = j->truncate ? trunc(load(j->t, off)) : load(j->t, off);
		for (int d = j->nd - 1; d >= 0; d--) {
			off += j->stride[d];
			if (++idx[d] < j->shape[d])
				break;
			off -= j->stride[d] * j->shape[d];
			idx[d] = 0;
		}
	}
}

/*
 * t's values as doubles (a FLOAT64 temporary for the caller to release),
 * the dims with last[d] set moved after the others, both groups in order:
 * *rows rows of *inner values. A zero-dim t is one row of one value.
 */
typedef struct rows {
	rt_tensor *tmp;
	const double *x;
	int64_t count, len;
} rows;

static ti_status gather(rt_call *c, const rt_tensor *t, const bool *last, bool truncate, rows *r, ti_error *err)
{
	gather_job j = {.t = t, .truncate = truncate};
	int64_t numel = rt_numel(t);
	r->count = r->len = 1;
	for (int pass = 0; pass < 2; pass++)
		for (int d = 0; d < t->ndim; d++)
			if (last[d] == (pass == 1)) {
				j.shape[j.nd] = t->shape[d];
				j.stride[j.nd++] = t->stride[d];
				*(pass ? &r->len : &r->count) *= t->shape[d];
			}
	int64_t shape[1] = {numel};
	ti_status st = rt_new_exact(c, TI_DT_FLOAT64, 1, shape, &r->tmp, err);
	if (st)
		return st;
	j.out = (double *)r->tmp->storage->data;
	j.inner = r->len;
	r->x = j.out;
	if (numel) /* else rows of nothing: an empty dim reduced (sum 0, prod 1, ...), or no rows */
		rt_parallel(c, r->count, (1 << 14) / r->len + 1, gather_rows, &j);
	return TI_OK;
}

/* The input tensor and one dim ("dim", wrapped; 0 for a zero-dim input) moved last. */
static ti_status gather_along(rt_call *c, rt_tensor *in, int64_t dim, rows *r, int64_t *after, ti_error *err)
{
	bool last[RT_MAX_DIMS] = {false};
	if (in->ndim) {
		if (dim < 0)
			dim += in->ndim;
		if (dim < 0 || dim >= in->ndim)
			return TI_FAIL(err, TI_E_INVALID, "dim %lld out of range for %d dimensions", (long long)dim, in->ndim);
		last[dim] = true;
	}
	*after = 1;
	for (int d = (int)dim + 1; d < in->ndim; d++)
		*after *= in->shape[d];
	return gather(c, in, last, false, r, err);
}

/* Position of element k of row r of a line-by-line result (dim of size len, *after elements behind it). */
static inline int64_t line_at(int64_t r, int64_t k, int64_t len, int64_t after)
{
	return (r / after) * len * after + k * after + r % after;
}

/* ---- reductions ---- */

typedef enum reducer {
	R_SUM, R_NANSUM, R_MEAN, R_NANMEAN, R_PROD, R_AMAX, R_AMIN, R_ALL, R_ANY, R_COUNT_NONZERO, R_LOGSUMEXP,
	R_NORM, R_VAR, R_STD, R_ARGMAX, R_ARGMIN
} reducer;

typedef struct reduce_job {
	reducer op;
	rows r;
	double p;          /* R_NORM's order */
	double correction; /* R_VAR, R_STD */
	rt_tensor *value, *index, *mean; /* index: argmax's only output, or max(dim)'s second; mean: var_mean's */
} reduce_job;

/* a > b as max() orders: NaN above everything, and the first NaN stays */
static inline bool beats(double a, double b, bool largest)
{
	if (b != b)
		return false;
	if (a != a)
		return true;
	return largest ? a > b : a < b;
}

static double norm_row(const double *x, int64_t n, double p)
{
	double acc = 0;
	if (p == 0) {
		for (int64_t i = 0; i < n; i++)
			acc += x[i] != 0;
		return acc;
	}
	if (isinf(p)) {
		acc = n ? fabs(x[0]) : 0;
		for (int64_t i = 0; i < n; i++)
			if (fabs(x[i]) != fabs(x[i]) || (p > 0 ? fabs(x[i]) > acc : fabs(x[i]) < acc))
				acc = fabs(x[i]);
		return acc;
	}
	if (p == 1) {
		for (int64_t i = 0; i < n; i++)
			acc += fabs(x[i]);
		return acc;
	}
	if (p == 2) {
		for (int64_t i = 0; i < n; i++)
			acc += x[i] * x[i];
		return sqrt(acc);
	}
	for (int64_t i = 0; i < n; i++)
		acc += pow(fabs(x[i]), p);
	return pow(acc, 1 / p);
}

/* One row's result; *index the position of the extreme for max/min/argmax. */
static double reduce_row(const reduce_job *j, const double *x, int64_t n, int64_t *index, double *mean)
{
	double acc = 0;
	int64_t count = 0;
	*index = 0;
	switch (j->op) {
	case R_SUM:
	case R_MEAN:
		for (int64_t i = 0; i < n; i++)
			acc += x[i];
		return j->op == R_MEAN ? acc / (double)n : acc;
	case R_NANSUM:
	case R_NANMEAN:
		for (int64_t i = 0; i < n; i++)
			if (x[i] == x[i]) {
				acc += x[i];
				count++;
			}
		return j->op == R_NANMEAN ? acc / (double)count : acc;
	case R_PROD:
		acc = 1;
		for (int64_t i = 0; i < n; i++)
			acc *= x[i];
		return acc;
	case R_AMAX:
	case R_AMIN:
	case R_ARGMAX:
	case R_ARGMIN: {
		bool largest = j->op == R_AMAX || j->op == R_ARGMAX;
		for (int64_t i = 1; i < n; i++)
			if (beats(x[i], x[*index], largest))
				*index = i;
		return n ? x[*index] : NAN;
	}
	case R_ALL:
		for (int64_t i = 0; i < n; i++)
			if (x[i] == 0)
				return 0;
		return 1;
	case R_ANY:
		for (int64_t i = 0; i < n; i++)
			if (x[i] != 0)
				return 1;
		return 0;
	case R_COUNT_NONZERO:
		for (int64_t i = 0; i < n; i++)
			count += x[i] != 0;
		return (double)count;
	case R_LOGSUMEXP: { /* ReduceOps.cpp logsumexp: an infinite maximum is not subtracted */
		double m = -INFINITY;
		for (int64_t i = 0; i < n; i++)
			if (x[i] > m || x[i] != x[i])
				m = x[i];
		if (isinf(m))
			m = 0;
		for (int64_t i = 0; i < n; i++)
			acc += exp(x[i] - m);
		return log(acc) + m;
	}
	case R_NORM:
		return norm_row(x, n, j->p);
	case R_VAR:
	case R_STD: {
		for (int64_t i = 0; i < n; i++)
			acc += x[i];
		double mu = acc / (double)n, m2 = 0;
		for (int64_t i = 0; i < n; i++)
			m2 += (x[i] - mu) * (x[i] - mu);
		double divisor = (double)n - j->correction;
		double var = m2 / (divisor > 0 ? divisor : 0);
		*mean = mu;
		return j->op == R_STD ? sqrt(var) : var;
	}
	}
	return 0;
}

static void reduce_rows(void *user, int64_t begin, int64_t end)
{
	reduce_job *j = user;
	for (int64_t r = begin; r < end; r++) {
		int64_t index;
		double mean = 0;
		double v = reduce_row(j, j->r.x + r * j->r.len, j->r.len, &index, &mean);
		if (j->value)
			store(j->value, r, v);
		if (j->index)
			rt_i64(j->index)[r] = index;
		if (j->mean)
			store(j->mean, r, mean);
	}
}

/* How each operator reads its arguments into a reduction. */
typedef enum reduce_form {
	F_PLAIN,   /* dim (int, list or None), keepdim */
	F_CAST,    /* sum, nansum, prod: a dtype= that is an integer casts the input first */
	F_VAR,     /* unbiased / correction; var_mean and std_mean also return the mean */
	F_NORM,    /* p: a number, 'fro', 'inf', '-inf' */
	F_INDEX,   /* argmax, argmin: the index is the output */
	F_EXTREMA, /* max, min: one value without dim, values and indices with one, maximum() with a tensor */
} reduce_form;

static const struct reduction {
	const char *name;
	reducer op;
	reduce_form form;
} reductions[] = {
	{"sum", R_SUM, F_CAST}, {"nansum", R_NANSUM, F_CAST}, {"prod", R_PROD, F_CAST},
	{"mean", R_MEAN, F_PLAIN}, {"nanmean", R_NANMEAN, F_PLAIN}, {"logsumexp", R_LOGSUMEXP, F_PLAIN},
	{"all", R_ALL, F_PLAIN}, {"any", R_ANY, F_PLAIN}, {"count_nonzero", R_COUNT_NONZERO, F_PLAIN},
	{"amax", R_AMAX, F_PLAIN}, {"amin", R_AMIN, F_PLAIN},
	{"argmax", R_ARGMAX, F_INDEX}, {"argmin", R_ARGMIN, F_INDEX},
	{"max", R_AMAX, F_EXTREMA}, {"min", R_AMIN, F_EXTREMA},
	{"var", R_VAR, F_VAR}, {"std", R_STD, F_VAR}, {"var_mean", R_VAR, F_VAR}, {"std_mean", R_STD, F_VAR},
	{"norm", R_NORM, F_NORM},
};

/* The dims "dim" names (an int or a list; None, absent or [] mean all), into reduced[]. */
static ti_status reduced_dims(rt_call *c, const rt_tensor *in, bool *reduced, ti_error *err)
{
	const ti_arg *dim = ARG(c, "dim");
	int count = dim->kind == TI_ARG_LIST ? dim->as.list.count : dim->kind == TI_ARG_INT;
	const ti_arg *items = dim->kind == TI_ARG_LIST ? dim->as.list.items : dim;
	for (int d = 0; d < in->ndim; d++)
		reduced[d] = count == 0;
	for (int i = 0; i < count && in->ndim; i++) {
		int64_t d = items[i].kind == TI_ARG_INT ? items[i].as.dim.value : 0;
		d += d < 0 ? in->ndim : 0;
		if (d < 0 || d >= in->ndim)
			return TI_FAIL(err, TI_E_INVALID, "%s(): dim %lld out of range", op_name(c), (long long)d);
		reduced[d] = true;
	}
	return TI_OK;
}

/*
 * norm's p: None is 2; 'fro' is 2 over the given dims (a vector norm), which
 * the binder holds as a symbol (a name where a Scalar goes is a symbolic
 * size); "inf" and "-inf" arrive as numbers.
 */
static ti_status norm_order(rt_call *c, double *p, ti_error *err)
{
	const ti_arg *a = ARG(c, "p");
	*p = 2;
	if (a->kind == TI_ARG_NONE || a->kind == TI_ARG_ABSENT)
		return TI_OK;
	char text[64] = "";
	if (a->kind == TI_ARG_STR)
		snprintf(text, sizeof(text), "%s", a->as.str);
	else if (a->kind == TI_ARG_INT && !ti_dim_is_int(a->as.dim))
		ti_dim_format(a->as.dim, text, sizeof(text));
	else if (rt_scalar(a, p))
		return TI_OK;
	if (!strcmp(text, "fro"))
		return TI_OK;
	return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'norm' with p='%s'", text);
}

static ti_status k_reduce(rt_call *c, ti_error *err)
{
	const char *name = op_name(c);
	const struct reduction *row = NULL;
	for (size_t i = 0; i < sizeof(reductions) / sizeof(reductions[0]) && !row; i++)
		if (!strcmp(reductions[i].name, name))
			row = &reductions[i];
	if (!row)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s'", name);
	if (row->form == F_EXTREMA) {
		const ti_arg *dim = ARG(c, "dim"), *other = ARG(c, "other");
		if (dim->kind == TI_ARG_TENSOR)
			return rt_k_maximum_of(c, ARG(c, "input"), dim, row->op == R_AMAX, err);
		if (other->kind == TI_ARG_TENSOR)
			return rt_k_maximum_of(c, ARG(c, "input"), other, row->op == R_AMAX, err);
	}
	rt_tensor *in;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	reduce_job j = {.op = row->op, .p = 2, .correction = 1};
	bool reduced[RT_MAX_DIMS];
	if ((st = reduced_dims(c, in, reduced, err)))
		return st;
	if (row->form == F_NORM && (st = norm_order(c, &j.p, err)))
		return st;
	if (row->form == F_VAR) {
		const ti_arg *corr = ARG(c, "correction"), *unbiased = ARG(c, "unbiased");
		if (!rt_scalar(corr, &j.correction))
			j.correction = unbiased->kind == TI_ARG_BOOL && !unbiased->as.boolean ? 0 : 1;
	}
	const ti_meta_tensor *m0 = meta_out(c, 0);
	bool truncate = row->form == F_CAST && m0 && m0->dtype == TI_DT_INT64 && in->dtype == TI_DT_FLOAT32;
	if ((st = gather(c, in, reduced, truncate, &j.r, err)))
		return st;
	bool two = meta_out(c, 1) != NULL;
	if (row->form == F_INDEX) {
		st = new_output(c, 0, &j.index, err);
	} else {
		st = new_output(c, 0, &j.value, err);
		if (!st && two)
			st = new_output(c, 1, row->form == F_VAR ? &j.mean : &j.index, err);
	}
	if (!st)
		rt_parallel(c, j.r.count, j.r.len ? (1 << 14) / j.r.len + 1 : 1, reduce_rows, &j);
	rt_release(c->ex, j.r.tmp);
	if (!st && j.value)
		st = rt_output(c, j.value, err), j.value = NULL;
	if (!st && j.mean)
		st = rt_output(c, j.mean, err), j.mean = NULL;
	if (!st && j.index)
		st = rt_output(c, j.index, err), j.index = NULL;
	rt_release(c->ex, j.value);
	rt_release(c->ex, j.mean);
	rt_release(c->ex, j.index);
	return st;
}

/* ---- scans along one dim ---- */

typedef enum scanner { S_CUMSUM, S_CUMPROD, S_LOGCUMSUMEXP, S_CUMMAX, S_CUMMIN } scanner;

typedef struct scan_job {
	scanner op;
	rows r;
	int64_t after;
	rt_tensor *value, *index;
} scan_job;

/* log(exp(a) + exp(b)) as ReduceOps.cpp _log_add_exp_helper: equal infinities stay */
static double log_add_exp(double a, double b)
{
	double lo = a < b ? a : b, hi = a < b ? b : a;
	if (lo != hi || isfinite(lo))
		return hi + log1p(exp(lo - hi));
	return a;
}

static void scan_rows(void *user, int64_t begin, int64_t end)
{
	scan_job *j = user;
	int64_t len = j->r.len;
	for (int64_t r = begin; r < end; r++) {
		const double *x = j->r.x + r * len;
		double acc = j->op == S_CUMPROD ? 1 : j->op == S_LOGCUMSUMEXP ? -INFINITY : len ? x[0] : 0;
		int64_t best = 0;
		for (int64_t k = 0; k < len; k++) {
			switch (j->op) {
			case S_CUMSUM: acc = k ? acc + x[k] : x[k]; break;
			case S_CUMPROD: acc *= x[k]; break;
			case S_LOGCUMSUMEXP: acc = log_add_exp(acc, x[k]); break;
			case S_CUMMAX:
			case S_CUMMIN: /* cummax_cummin_helper: >= (<=), so ties move the index on; NaN sticks */
				if (x[k] != x[k] || (acc == acc && (j->op == S_CUMMAX ? x[k] >= acc : x[k] <= acc))) {
					acc = x[k];
					best = k;
				}
				break;
			}
			int64_t at = line_at(r, k, len, j->after);
			store(j->value, at, acc);
			if (j->index)
				rt_i64(j->index)[at] = best;
		}
	}
}

static const struct scan {
	const char *name;
	scanner op;
} scans[] = {
	{"cumsum", S_CUMSUM}, {"cumprod", S_CUMPROD}, {"logcumsumexp", S_LOGCUMSUMEXP},
	{"cummax", S_CUMMAX}, {"cummin", S_CUMMIN},
};

static ti_status k_scan(rt_call *c, ti_error *err)
{
	const char *name = op_name(c);
	scan_job j = {.op = S_CUMSUM};
	for (size_t i = 0; i < sizeof(scans) / sizeof(scans[0]); i++)
		if (!strcmp(scans[i].name, name))
			j.op = scans[i].op;
	rt_tensor *in;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = gather_along(c, in, rt_int(c, "dim"), &j.r, &j.after, err);
	if (st)
		return st;
	st = new_output(c, 0, &j.value, err);
	if (!st && (j.op == S_CUMMAX || j.op == S_CUMMIN))
		st = new_output(c, 1, &j.index, err);
	if (!st)
		rt_parallel(c, j.r.count, j.r.len ? (1 << 14) / j.r.len + 1 : 1, scan_rows, &j);
	rt_release(c->ex, j.r.tmp);
	if (!st)
		st = rt_output(c, j.value, err), j.value = NULL;
	if (!st && j.index)
		st = rt_output(c, j.index, err), j.index = NULL;
	rt_release(c->ex, j.value);
	rt_release(c->ex, j.index);
	return st;
}

/* ---- orderings along one dim ---- */

typedef enum order_kind { O_SORT, O_ARGSORT, O_MSORT, O_TOPK, O_KTHVALUE, O_MEDIAN, O_NANMEDIAN } order_kind;

typedef struct order_job {
	order_kind kind;
	rows r;
	int64_t after, k; /* topk's count, kthvalue's rank (1-based) */
	bool descending;
	int64_t *scratch; /* two index arrays per row */
	rt_tensor *value, *index;
} order_job;

/* a before b: ascending puts NaN last, descending first (NaN is above every number) */
static inline bool before(double a, double b, bool descending)
{
	if (descending)
		return (a != a && b == b) || a > b;
	return (b != b && a == a) || a < b;
}

/* Stable merge sort of idx[0..n) by x[idx], with tmp of n. */
static void merge_sort(const double *x, int64_t *idx, int64_t *tmp, int64_t n, bool descending)
{
	for (int64_t width = 1; width < n; width *= 2) {
		for (int64_t lo = 0; lo < n; lo += 2 * width) {
			int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
			int64_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				tmp[o++] = before(x[idx[b]], x[idx[a]], descending) ? idx[b++] : idx[a++];
			while (a < mid)
				tmp[o++] = idx[a++];
			while (b < hi)
				tmp[o++] = idx[b++];
		}
		memcpy(idx, tmp, (size_t)n * sizeof(*idx));
	}
}

static void order_rows(void *user, int64_t begin, int64_t end)
{
	order_job *j = user;
	int64_t len = j->r.len;
	for (int64_t r = begin; r < end; r++) {
		const double *x = j->r.x + r * len;
		int64_t *idx = j->scratch + 2 * r * len, *tmp = idx + len;
		for (int64_t k = 0; k < len; k++)
			idx[k] = k;
		merge_sort(x, idx, tmp, len, j->descending);
		if (j->kind == O_KTHVALUE || j->kind == O_MEDIAN || j->kind == O_NANMEDIAN) {
			/* medians: the lower middle; median's NaN (sorted last) wins, nanmedian's count is of numbers */
			int64_t numbers = len;
			while (numbers > 0 && x[idx[numbers - 1]] != x[idx[numbers - 1]])
				numbers--;
			int64_t at = j->kind == O_KTHVALUE ? j->k - 1
			             : j->kind == O_NANMEDIAN ? (numbers ? (numbers - 1) / 2 : 0)
			             : numbers < len ? numbers : (len - 1) / 2;
			if (at >= 0 && at < len) {
				store(j->value, r, x[idx[at]]);
				if (j->index)
					rt_i64(j->index)[r] = idx[at];
			}
			continue;
		}
		int64_t count = j->kind == O_TOPK ? j->k : len;
		for (int64_t k = 0; k < count && k < len; k++) {
			int64_t at = line_at(r, k, count, j->after);
			if (j->value)
				store(j->value, at, x[idx[k]]);
			if (j->index)
				rt_i64(j->index)[at] = idx[k];
		}
	}
}

static const struct ordering {
	const char *name;
	order_kind kind;
} orderings[] = {
	{"sort", O_SORT}, {"argsort", O_ARGSORT}, {"msort", O_MSORT}, {"topk", O_TOPK}, {"kthvalue", O_KTHVALUE},
	{"median", O_MEDIAN}, {"nanmedian", O_NANMEDIAN},
};

static ti_status k_order(rt_call *c, ti_error *err)
{
	const char *name = op_name(c);
	order_job j = {.kind = O_SORT};
	for (size_t i = 0; i < sizeof(orderings) / sizeof(orderings[0]); i++)
		if (!strcmp(orderings[i].name, name))
			j.kind = orderings[i].kind;
	rt_tensor *in, *scratch = NULL;
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	j.descending = j.kind == O_TOPK ? ti_bound_bool(&c->call->in, "largest") : ti_bound_bool(&c->call->in, "descending");
	if (j.kind == O_TOPK || j.kind == O_KTHVALUE)
		j.k = rt_int(c, "k");
	bool median = j.kind == O_MEDIAN || j.kind == O_NANMEDIAN;
	bool all[RT_MAX_DIMS];
	for (int d = 0; d < in->ndim; d++)
		all[d] = true;
	if (median && ARG(c, "dim")->kind != TI_ARG_INT) /* no dim: the median of every element, no index */
		st = gather(c, in, all, false, &j.r, err);
	else
		st = gather_along(c, in, j.kind == O_MSORT ? 0 : rt_int(c, "dim"), &j.r, &j.after, err);
	if (st)
		return st;
	int64_t shape[1] = {2 * j.r.count * j.r.len};
	st = rt_new(c, TI_DT_INT64, 1, shape, &scratch, err);
	if (!st) {
		j.scratch = rt_i64(scratch);
		if (j.kind == O_ARGSORT) {
			st = new_output(c, 0, &j.index, err);
		} else {
			st = new_output(c, 0, &j.value, err);
			if (!st && j.kind != O_MSORT && meta_out(c, 1))
				st = new_output(c, 1, &j.index, err);
		}
	}
	if (!st)
		rt_parallel(c, j.r.count, j.r.len ? (1 << 12) / j.r.len + 1 : 1, order_rows, &j);
	rt_release(c->ex, j.r.tmp);
	rt_release(c->ex, scratch);
	if (!st && j.value)
		st = rt_output(c, j.value, err), j.value = NULL;
	if (!st && j.index)
		st = rt_output(c, j.index, err), j.index = NULL;
	rt_release(c->ex, j.value);
	rt_release(c->ex, j.index);
	return st;
}

const rt_kernel rt_kernels_reduce[] = {
	{"sum", false, k_reduce, false}, {"nansum", false, k_reduce, false}, {"prod", false, k_reduce, false},
	{"mean", false, k_reduce, false}, {"nanmean", false, k_reduce, false}, {"logsumexp", false, k_reduce, false},
	{"all", false, k_reduce, false}, {"any", false, k_reduce, false}, {"count_nonzero", false, k_reduce, false},
	{"amax", false, k_reduce, false}, {"amin", false, k_reduce, false}, {"max", false, k_reduce, false},
	{"min", false, k_reduce, false}, {"argmax", false, k_reduce, false}, {"argmin", false, k_reduce, false},
	{"var", false, k_reduce, false}, {"std", false, k_reduce, false}, {"var_mean", false, k_reduce, false},
	{"std_mean", false, k_reduce, false}, {"norm", false, k_reduce, false},
	{"cumsum", false, k_scan, false}, {"cumprod", false, k_scan, false}, {"logcumsumexp", false, k_scan, false},
	{"cummax", false, k_scan, false}, {"cummin", false, k_scan, false},
	{"sort", false, k_order, false}, {"argsort", false, k_order, false}, {"msort", false, k_order, false},
	{"topk", false, k_order, false}, {"kthvalue", false, k_order, false}, {"median", false, k_order, false},
	{"nanmedian", false, k_order, false},
	{NULL, false, NULL, false},
};
