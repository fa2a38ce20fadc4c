/*
 * shape.c - views and copies: view, reshape, flatten, unflatten, squeeze,
 * unsqueeze, expand, transpose, permute, contiguous, split, chunk, cat,
 * stack, triu, tril, ones_like, zeros_like, full_like, arange, the factories
 * (zeros, ones, empty, full, new_*, empty_like, eye, linspace, logspace), dropout
 * (eval: the input itself); expand_as, broadcast_to, swapaxes, swapdims,
 * movedim, moveaxis (views) and clone.
 *
 * Where PyTorch makes a view this makes one too (no copy): transpose,
 * permute, expand, split and chunk always; view and its kin when the input
 * is contiguous (else a contiguous copy, the values PyTorch's reshape
 * gives). Sizes that -1 or a rule infers are the propagated output's.
 */
#include <math.h>
#include <string.h>

#include "run/run_internal.h"

static const ti_meta_tensor *meta_out(rt_call *c, int k)
{
	int n = 0;
	for (int i = 0; i < c->call->output_count; i++) {
		const ti_arg *a = &c->call->outputs[i];
		if (a->kind == TI_ARG_TENSOR) {
			if (n++ == k)
				return a->as.tensor;
		} else if (a->kind == TI_ARG_LIST) {
			for (int j = 0; j < a->as.list.count; j++)
				if (a->as.list.items[j].kind == TI_ARG_TENSOR && n++ == k)
					return a->as.list.items[j].as.tensor;
		}
	}
	return NULL;
}

static int meta_out_count(rt_call *c)
{
	int n = 0;
	while (meta_out(c, n))
		n++;
	return n;
}

static int meta_shape(const ti_meta_tensor *m, int64_t *shape)
{
	for (int i = 0; i < m->ndim; i++)
		shape[i] = m->shape[i].value;
	return m->ndim;
}

static void copy_into(rt_tensor *dst, const rt_tensor *src);

static ti_status first_input(rt_call *c, rt_tensor **out, ti_error *err)
{
	static const char *const names[] = {"input", "self", "tensor"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const ti_arg *a = ti_bound_get(&c->call->in, names[i]);
		if (a && a->kind == TI_ARG_TENSOR)
			return rt_of(c, a->as.tensor, out, err);
	}
	return TI_FAIL(err, TI_E_UNSUPPORTED, "no tensor input");
}

/* The input under the propagated output's shape: a view when contiguous, else a copy. */
static ti_status k_reshape(rt_call *c, ti_error *err)
{
	rt_tensor *in, *xc, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	const ti_meta_tensor *m = meta_out(c, 0);
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	if (!m || m->ndim > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this reshape");
	int nd = meta_shape(m, shape);
	int64_t n = 1;
	for (int i = 0; i < nd; i++)
		n *= shape[i];
	if (n != rt_numel(in))
		return TI_FAIL(err, TI_E_SHAPE, "shape '%lld elements' is invalid for input of size %lld", (long long)n,
		               (long long)rt_numel(in));
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	rt_contiguous_strides(nd, shape, stride);
	st = rt_view(c, xc, nd, shape, stride, xc->offset, &y, err);
	rt_release(c->ex, xc);
	return st ? st : rt_output(c, y, err);
}

static ti_status k_expand(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	const ti_meta_tensor *m = meta_out(c, 0);
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	int nd = meta_shape(m, shape);
	for (int d = 0; d < nd; d++) {
		int k = d - (nd - in->ndim);
		stride[d] = k >= 0 && in->shape[k] == shape[d] ? in->stride[k] : 0;
	}
	st = rt_view(c, in, nd, shape, stride, in->offset, &y, err);
	return st ? st : rt_output(c, y, err);
}

static int wrap(int64_t d, int nd) { return (int)(d < 0 ? d + nd : d); }

static ti_status k_transpose(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int a = wrap(rt_int(c, "dim0"), in->ndim), b = wrap(rt_int(c, "dim1"), in->ndim);
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	memcpy(shape, in->shape, sizeof(shape));
	memcpy(stride, in->stride, sizeof(stride));
	if (in->ndim) {
		shape[a] = in->shape[b], shape[b] = in->shape[a];
		stride[a] = in->stride[b], stride[b] = in->stride[a];
	}
	st = rt_view(c, in, in->ndim, shape, stride, in->offset, &y, err);
	return st ? st : rt_output(c, y, err);
}

static ti_status k_t(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int64_t shape[2] = {1, 1}, stride[2] = {0, 0};
	for (int i = 0; i < in->ndim; i++) {
		shape[in->ndim - 1 - i] = in->shape[i];
		stride[in->ndim - 1 - i] = in->stride[i];
	}
	st = rt_view(c, in, in->ndim, shape, stride, in->offset, &y, err);
	return st ? st : rt_output(c, y, err);
}

static ti_status k_permute(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int64_t dims[RT_MAX_DIMS], shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	int n = rt_ints(c, "dims", dims, RT_MAX_DIMS);
	if (n != in->ndim)
		return TI_FAIL(err, TI_E_SHAPE, "permute(): number of dims don't match");
	for (int i = 0; i < n; i++) {
		int d = wrap(dims[i], n);
		shape[i] = in->shape[d];
		stride[i] = in->stride[d];
	}
	st = rt_view(c, in, n, shape, stride, in->offset, &y, err);
	return st ? st : rt_output(c, y, err);
}

/* swapaxes(axis0, axis1) and swapdims(dim0, dim1): transpose, its dims read by position. */
static ti_status k_swap(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int a = wrap(c->call->in.args[1].as.dim.value, in->ndim), b = wrap(c->call->in.args[2].as.dim.value, in->ndim);
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	memcpy(shape, in->shape, sizeof(shape));
	memcpy(stride, in->stride, sizeof(stride));
	if (in->ndim) {
		shape[a] = in->shape[b], shape[b] = in->shape[a];
		stride[a] = in->stride[b], stride[b] = in->stride[a];
	}
	st = rt_view(c, in, in->ndim, shape, stride, in->offset, &y, err);
	return st ? st : rt_output(c, y, err);
}

/* An int or a list of ints (int|int[]) into out; the count, or -1 when more than max. */
static int ints_of(const ti_arg *a, int64_t *out, int max)
{
	if (a->kind == TI_ARG_INT) {
		out[0] = a->as.dim.value;
		return 1;
	}
	if (a->kind != TI_ARG_LIST || a->as.list.count > max)
		return a->kind == TI_ARG_LIST ? -1 : 0;
	for (int i = 0; i < a->as.list.count; i++)
		out[i] = a->as.list.items[i].as.dim.value;
	return a->as.list.count;
}

/* movedim and moveaxis: source dims go to destination, the others keep their order (a view). */
static ti_status k_movedim(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int64_t src[RT_MAX_DIMS], dst[RT_MAX_DIMS];
	int n = ints_of(&c->call->in.args[1], src, RT_MAX_DIMS), nd = in->ndim;
	if (n < 0 || ints_of(&c->call->in.args[2], dst, RT_MAX_DIMS) != n)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this movedim");
	int order[RT_MAX_DIMS];
	bool src_used[RT_MAX_DIMS] = {0}, dst_used[RT_MAX_DIMS] = {0};
	for (int i = 0; i < n && nd; i++) {
		int from = wrap(src[i], nd), to = wrap(dst[i], nd);
		order[to] = from;
		src_used[from] = dst_used[to] = true;
	}
	for (int i = 0, next = 0; i < nd; i++) {
		if (dst_used[i])
			continue;
		while (src_used[next])
			next++;
		order[i] = next++;
	}
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	for (int i = 0; i < nd; i++) {
		shape[i] = in->shape[order[i]];
		stride[i] = in->stride[order[i]];
	}
	st = rt_view(c, in, nd, shape, stride, in->offset, &y, err);
	return st ? st : rt_output(c, y, err);
}

/* clone: new memory, contiguous (the layout PyTorch preserves is not compared). */
static ti_status k_clone(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (!st)
		st = rt_new(c, in->dtype, in->ndim, in->shape, &y, err);
	if (st)
		return st;
	copy_into(y, in);
	return rt_output(c, y, err);
}

static ti_status k_contiguous(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (!st)
		st = rt_contiguous(c, in, &y, err);
	return st ? st : rt_output(c, y, err);
}

/* dropout and its kin in eval mode: the input itself (a new reference, no copy). */
static ti_status k_dropout(rt_call *c, ti_error *err)
{
	rt_tensor *in;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	const ti_arg *training = ti_bound_get(&c->call->in, "training");
	if (training && training->kind == TI_ARG_BOOL && training->as.boolean)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for dropout in training mode");
	in->refs++;
	return rt_output(c, in, err);
}

/* split, chunk, tensor_split, unbind: views of consecutive pieces along dim, sized as propagated. */
static ti_status k_pieces(rt_call *c, ti_error *err)
{
	rt_tensor *in;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int dim = wrap(rt_int(c, "dim"), in->ndim);
	bool drops = meta_out(c, 0) && meta_out(c, 0)->ndim < in->ndim; /* unbind */
	int64_t at = 0;
	for (int k = 0, n = meta_out_count(c); k < n && !st; k++) {
		const ti_meta_tensor *m = meta_out(c, k);
		int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
		int nd = meta_shape(m, shape);
		for (int d = 0, s = 0; d < in->ndim; d++) {
			if (drops && d == dim)
				continue;
			stride[s++] = in->stride[d];
		}
		rt_tensor *y;
		st = rt_view(c, in, nd, shape, stride, in->offset + at * in->stride[dim], &y, err);
		at += drops ? 1 : shape[dim];
		if (!st)
			st = rt_output(c, y, err);
	}
	return st;
}

/* select(input, dim, index): the view without dim, at index (negative from the end). */
static ti_status k_select(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int dim = wrap(rt_int(c, "dim"), in->ndim);
	int64_t index = rt_int(c, "index");
	if (index < 0)
		index += in->shape[dim];
	if (index < 0 || index >= in->shape[dim])
		return TI_FAIL(err, TI_E_SHAPE, "select(): index %lld out of range for tensor of size %lld at dimension %d",
		               (long long)rt_int(c, "index"), (long long)in->shape[dim], dim);
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
	for (int d = 0, k = 0; d < in->ndim; d++)
		if (d != dim) {
			shape[k] = in->shape[d];
			stride[k++] = in->stride[d];
		}
	st = rt_view(c, in, in->ndim - 1, shape, stride, in->offset + index * in->stride[dim], &y, err);
	return st ? st : rt_output(c, y, err);
}

/* narrow(input, dim, start, length): the view of length elements from start along dim. */
static ti_status k_narrow(rt_call *c, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (st)
		return st;
	int dim = wrap(rt_int(c, "dim"), in->ndim);
	int64_t start = rt_int(c, "start"), length = rt_int(c, "length");
	if (start < 0)
		start += in->shape[dim];
	if (start < 0 || length < 0 || start + length > in->shape[dim])
		return TI_FAIL(err, TI_E_SHAPE, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
		               (long long)start, (long long)length, (long long)in->shape[dim]);
	int64_t shape[RT_MAX_DIMS];
	memcpy(shape, in->shape, sizeof(shape));
	shape[dim] = length;
	st = rt_view(c, in, in->ndim, shape, in->stride, in->offset + start * in->stride[dim], &y, err);
	return st ? st : rt_output(c, y, err);
}

/* Copies src into dst elementwise (same shape, same element size, any strides). */
static void copy_into(rt_tensor *dst, const rt_tensor *src)
{
	size_t es = ti_dtype_size(src->dtype);
	int64_t n = rt_numel(src);
	int nd = src->ndim;
	int64_t idx[RT_MAX_DIMS] = {0};
	char *d0 = (char *)dst->storage->data + (size_t)dst->offset * es;
	const char *s0 = (const char *)src->storage->data + (size_t)src->offset * es;
	int64_t inner = nd ? src->shape[nd - 1] : 1;
	int64_t ss = nd ? src->stride[nd - 1] : 1, ds = nd ? dst->stride[nd - 1] : 1;
	for (int64_t done = 0; done < n; done += inner) {
		int64_t os = 0, od = 0;
		for (int d = 0; d < nd - 1; d++) {
			os += idx[d] * src->stride[d];
			od += idx[d] * dst->stride[d];
		}
		if (ss == 1 && ds == 1) {
			memcpy(d0 + (size_t)od * es, s0 + (size_t)os * es, (size_t)inner * es);
		} else {
			for (int64_t i = 0; i < inner; i++)
				memcpy(d0 + (size_t)(od + i * ds) * es, s0 + (size_t)(os + i * ss) * es, es);
		}
		for (int d = nd - 2; d >= 0; d--) {
			if (++idx[d] < src->shape[d])
				break;
			idx[d] = 0;
		}
	}
}

static ti_status join(rt_call *c, bool stack, ti_error *err)
{
	int count = 0;
	const ti_arg *items = ti_bound_list(&c->call->in, "tensors", &count);
	const ti_meta_tensor *m = meta_out(c, 0);
	int64_t shape[RT_MAX_DIMS];
	int nd = meta_shape(m, shape);
	const ti_arg *dim_arg = ti_bound_get(&c->call->in, stack ? "dim" : "dim");
	if (!dim_arg || dim_arg->kind != TI_ARG_INT)
		dim_arg = ti_bound_get(&c->call->in, "axis");
	int dim = wrap(dim_arg && dim_arg->kind == TI_ARG_INT ? dim_arg->as.dim.value : 0, nd);
	rt_tensor *y;
	ti_status st = rt_new(c, m->dtype, nd, shape, &y, err);
	if (st)
		return st;
	int64_t at = 0;
	for (int i = 0; i < count && !st; i++) {
		rt_tensor *x;
		if (items[i].kind != TI_ARG_TENSOR || (st = rt_of(c, items[i].as.tensor, &x, err)))
			break;
		if (x->ndim == 1 && x->shape[0] == 0 && nd != 1)
			continue; /* cat skips legacy empty tensors */
		rt_tensor slice = *y;
		slice.offset = at * y->stride[dim];
		if (stack) {
			for (int d = dim; d < nd - 1; d++) {
				slice.shape[d] = y->shape[d + 1];
				slice.stride[d] = y->stride[d + 1];
			}
			slice.ndim = nd - 1;
			at++;
		} else {
			slice.shape[dim] = x->shape[dim];
			at += x->shape[dim];
		}
		if (x->dtype != y->dtype) {
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for joining %s and %s", ti_dtype_name(x->dtype),
			             ti_dtype_name(y->dtype));
			break;
		}
		copy_into(&slice, x);
	}
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

static ti_status k_cat(rt_call *c, ti_error *err) { return join(c, false, err); }
static ti_status k_stack(rt_call *c, ti_error *err) { return join(c, true, err); }

static ti_status triangle(rt_call *c, bool upper, ti_error *err)
{
	rt_tensor *in, *y;
	ti_status st = first_input(c, &in, err);
	if (!st)
		st = rt_contiguous(c, in, &y, err);
	if (st)
		return st;
	if (y == in) { /* a contiguous input: copy it, the result is new memory */
		rt_release(c->ex, y);
		if ((st = rt_new(c, in->dtype, in->ndim, in->shape, &y, err)))
			return st;
		copy_into(y, in);
	}
	int64_t diag = rt_int(c, "diagonal"), rows = in->shape[in->ndim - 2], cols = in->shape[in->ndim - 1];
	int64_t mats = (rows * cols) != 0 ? rt_numel(y) / (rows * cols) : 0;
	size_t es = ti_dtype_size(y->dtype);
	char *p = (char *)y->storage->data + (size_t)y->offset * es;
	for (int64_t b = 0; b < mats; b++)
		for (int64_t i = 0; i < rows; i++)
			for (int64_t j = 0; j < cols; j++) {
				bool keep = upper ? j - i >= diag : j - i <= diag;
				if (!keep)
					memset(p + (size_t)((b * rows + i) * cols + j) * es, 0, es);
			}
	return rt_output(c, y, err);
}

static ti_status k_triu(rt_call *c, ti_error *err) { return triangle(c, true, err); }
static ti_status k_tril(rt_call *c, ti_error *err) { return triangle(c, false, err); }

/* A new tensor of the propagated shape and dtype, every element value. */
static ti_status filled(rt_call *c, double value, ti_error *err)
{
	const ti_meta_tensor *m = meta_out(c, 0);
	int64_t shape[RT_MAX_DIMS];
	int nd = meta_shape(m, shape);
	rt_tensor *y;
	ti_status st = rt_new(c, m->dtype, nd, shape, &y, err);
	if (st)
		return st;
	int64_t n = rt_numel(y);
	for (int64_t i = 0; i < n; i++) {
		if (y->dtype == TI_DT_FLOAT32)
			rt_f32(y)[i] = (float)value;
		else if (y->dtype == TI_DT_INT64)
			rt_i64(y)[i] = (int64_t)value;
		else
			rt_bool(y)[i] = value != 0;
	}
	return rt_output(c, y, err);
}

static ti_status k_zeros_like(rt_call *c, ti_error *err) { return filled(c, 0, err); }
static ti_status k_ones_like(rt_call *c, ti_error *err) { return filled(c, 1, err); }
static ti_status k_full_like(rt_call *c, ti_error *err)
{
	double v = 0;
	rt_scalar(ti_bound_get(&c->call->in, "fill_value"), &v);
	return filled(c, v, err);
}

static ti_status k_full(rt_call *c, ti_error *err)
{
	double v = 0;
	rt_scalar(ti_bound_get(&c->call->in, "fill_value"), &v);
	return filled(c, v, err);
}

/* eye(n, m): ones on the diagonal. */
static ti_status k_eye(rt_call *c, ti_error *err)
{
	ti_status st = filled(c, 0, err);
	if (st)
		return st;
	rt_tensor *y = c->out[0];
	int64_t rows = y->shape[0], cols = y->ndim > 1 ? y->shape[1] : 1;
	for (int64_t i = 0; i < rows && i < cols; i++) {
		if (y->dtype == TI_DT_FLOAT32)
			rt_f32(y)[i * cols + i] = 1;
		else if (y->dtype == TI_DT_INT64)
			rt_i64(y)[i * cols + i] = 1;
		else
			rt_bool(y)[i * cols + i] = true;
	}
	return TI_OK;
}

/*
 * linspace and logspace as PyTorch's CPU kernel computes them in float:
 * step = (end - start) / (steps - 1); the first half start + i * step, the
 * second end - (steps - 1 - i) * step, so both ends are exact (one step:
 * start); logspace raises base to each. PyTorch's vectorised loop adds the
 * step lane by lane from each vector's first value, which can differ in
 * the last bit.
 */
static ti_status k_linspace(rt_call *c, ti_error *err)
{
	double start = 0, end = 0;
	rt_scalar(ti_bound_get(&c->call->in, "start"), &start);
	rt_scalar(ti_bound_get(&c->call->in, "end"), &end);
	const ti_arg *base_arg = ti_bound_get(&c->call->in, "base");
	double base = 0;
	bool log = base_arg && rt_scalar(base_arg, &base);
	ti_status st = filled(c, 0, err);
	if (st)
		return st;
	rt_tensor *y = c->out[0];
	int64_t steps = rt_numel(y), half = steps / 2;
	float s = (float)start, e = (float)end, step = steps > 1 ? (e - s) / (float)(steps - 1) : 0;
	for (int64_t i = 0; i < steps; i++) {
		float v = steps == 1 ? s : i < half ? s + step * (float)i : e - step * (float)(steps - i - 1);
		double out = log ? pow(base, (double)v) : (double)v;
		if (y->dtype == TI_DT_FLOAT32)
			rt_f32(y)[i] = (float)out;
		else if (y->dtype == TI_DT_INT64)
			rt_i64(y)[i] = (int64_t)out;
	}
	return TI_OK;
}

static ti_status k_arange(rt_call *c, ti_error *err)
{
	double start = 0, end = 0, step = 1;
	bool has_start = rt_scalar(ti_bound_get(&c->call->in, "start"), &start);
	bool has_end = rt_scalar(ti_bound_get(&c->call->in, "end"), &end);
	rt_scalar(ti_bound_get(&c->call->in, "step"), &step);
	if (has_start && !has_end) { /* arange(end) */
		end = start;
		start = 0;
	}
	ti_status st = filled(c, 0, err);
	if (st)
		return st;
	rt_tensor *y = c->out[0];
	int64_t n = rt_numel(y);
	for (int64_t i = 0; i < n; i++) {
		double v = start + (double)i * step;
		if (y->dtype == TI_DT_FLOAT32)
			rt_f32(y)[i] = (float)v;
		else if (y->dtype == TI_DT_INT64)
			rt_i64(y)[i] = (int64_t)v;
	}
	return TI_OK;
}

const rt_kernel rt_kernels_shape[] = {
	{"view", false, k_reshape, true}, {"reshape", false, k_reshape, true}, {"flatten", false, k_reshape, true},
	{"unflatten", false, k_reshape, true}, {"squeeze", false, k_reshape, true}, {"unsqueeze", false, k_reshape, true},
	{"expand", false, k_expand, true}, {"transpose", false, k_transpose, true}, 
	{"t", false, k_t, true}, {"permute", false, k_permute, true}, {"contiguous", false, k_contiguous, false},
	{"dropout", false, k_dropout, true}, {"alpha_dropout", false, k_dropout, true}, {"dropout1d", false, k_dropout, true},
	{"dropout2d", false, k_dropout, true}, {"dropout3d", false, k_dropout, true},
	{"feature_alpha_dropout", false, k_dropout, true},
	{"split", false, k_pieces, true}, {"split_with_sizes", false, k_pieces, true}, {"chunk", false, k_pieces, true},
	{"tensor_split", false, k_pieces, true}, {"unbind", false, k_pieces, true},
	{"select", false, k_select, true}, {"narrow", false, k_narrow, true},
	{"cat", false, k_cat, false}, {"concat", false, k_cat, false}, {"concatenate", false, k_cat, false},
	{"stack", false, k_stack, false}, {"triu", false, k_triu, false}, {"tril", false, k_tril, false},
	{"zeros_like", false, k_zeros_like, false}, {"ones_like", false, k_ones_like, false},
	{"full_like", false, k_full_like, false}, {"arange", false, k_arange, false},
	/* empty and its kin hold whatever memory had in PyTorch: zeros here, as good an answer */
	{"zeros", false, k_zeros_like, false}, {"ones", false, k_ones_like, false}, {"empty", false, k_zeros_like, false},
	{"full", false, k_full, false}, {"empty_like", false, k_zeros_like, false},
	{"new_zeros", false, k_zeros_like, false}, {"new_ones", false, k_ones_like, false},
	{"new_empty", false, k_zeros_like, false}, {"new_full", false, k_full, false},
	{"eye", false, k_eye, false}, {"linspace", false, k_linspace, false}, {"logspace", false, k_linspace, false},
	{"expand_as", false, k_expand, true}, {"broadcast_to", false, k_expand, true},
	{"swapaxes", false, k_swap, true}, {"swapdims", false, k_swap, true},
	{"movedim", false, k_movedim, true}, {"moveaxis", false, k_movedim, true},
	{"clone", false, k_clone, false},
	{NULL, false, NULL, false},
};
