/*
 * index.c - copies that pick elements, and the small products: flip, roll,
 * repeat, tile, repeat_interleave, index_select, gather, take_along_dim,
 * getitem (Tensor.__getitem__), dot, mv, outer (ger), einsum.
 *
 * Most of them are one rt_remap: per output dim, the input index each output
 * index reads (flip: n-1-i, roll: (i-shift) mod n, repeat: i mod n,
 * index_select: the index's values), so one strided loop copies them all and
 * pad (resize.c) too. gather and take_along_dim read an index per element.
 * getitem makes the view Tensor.__getitem__ makes (ints select, slices step,
 * None unsqueezes, Ellipsis skips), or copies when one integer tensor
 * indexes (aten::index: negative indices count from the end).
 *
 * einsum contracts its operands left to right as at::einsum does: each
 * operand is read through strides over the equation's labels (a repeated
 * label is a diagonal: its strides add; a size-1 dim broadcasts with stride
 * 0), labels no later operand and not the output needs are summed first,
 * and each pair is one batched sgemm: batch labels (both operands and kept),
 * rows (the left only), columns (the right only), summed (both, not kept).
 * Sums accumulate in double.
 */
#include <ctype.h>
#include <string.h>

#include "run/run_internal.h"

static int wrap(int64_t d, int nd) { return (int)(d < 0 ? d + (nd ? nd : 1) : d); }

/* An int or a list of ints (int|int[]): the count, or -1 when more than max. */
static int ints_of(const ti_arg *a, int64_t *out, int max)
{
	if (!a || a->kind == TI_ARG_NONE || a->kind == TI_ARG_ABSENT)
		return 0;
	if (a->kind == TI_ARG_INT) {
		out[0] = a->as.dim.value;
		return 1;
	}
	if (a->kind != TI_ARG_LIST || a->as.list.count > max)
		return -1;
	for (int i = 0; i < a->as.list.count; i++)
		out[i] = a->as.list.items[i].kind == TI_ARG_INT ? a->as.list.items[i].as.dim.value : 0;
	return a->as.list.count;
}

/* A tensor of one dim viewed from t's storage: t's elements in order (t contiguous). */
static rt_tensor flat_of(const rt_tensor *t)
{
	rt_tensor f = *t;
	f.ndim = 1;
	f.shape[0] = rt_numel(t);
	f.stride[0] = 1;
	return f;
}

/* ---- the remap loop ---- */

/* Index tables: int64 tensors the kernel holds until it returns. */
typedef struct tables {
	rt_tensor *held[RT_MAX_DIMS + 1];
	int count;
} tables;

static ti_status table_new(rt_call *c, tables *tb, int64_t n, int64_t **out, ti_error *err)
{
	rt_tensor *t;
	if (tb->count == RT_MAX_DIMS + 1)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d index tables", RT_MAX_DIMS + 1);
	ti_status st = rt_new(c, TI_DT_INT64, 1, &n, &t, err);
	if (st)
		return st;
	tb->held[tb->count++] = t;
	*out = rt_i64(t);
	return TI_OK;
}

static void tables_release(rt_call *c, tables *tb)
{
	for (int i = 0; i < tb->count; i++)
		rt_release(c->ex, tb->held[i]);
	tb->count = 0;
}

typedef struct remap_job {
	const rt_tensor *in;
	rt_tensor *out;
	const rt_remap *map;
	size_t es;
	union { float f; int64_t i; bool b; unsigned char bytes[8]; } fill;
} remap_job;

static void remap_rows(void *user, int64_t begin, int64_t end)
{
	const remap_job *j = user;
	const rt_tensor *out = j->out;
	const rt_remap *m = j->map;
	int nd = out->ndim;
	size_t es = j->es;
	int64_t inner = nd ? out->shape[nd - 1] : 1, ls = nd ? m->stride[nd - 1] : 0;
	const int64_t *last = nd ? m->source[nd - 1] : NULL;
	const char *in = j->in->storage->data;
	char *dst = (char *)out->storage->data + (size_t)out->offset * es;
	for (int64_t row = begin; row < end; row++) {
		int64_t rem = row, off = j->in->offset;
		bool fill = false;
		for (int d = nd - 2; d >= 0; d--) {
			int64_t i = rem % out->shape[d];
			rem /= out->shape[d];
			int64_t s = m->source[d] ? m->source[d][i] : i;
			fill |= s < 0;
			off += s * m->stride[d];
		}
		char *o = dst + (size_t)(row * inner) * es;
		if (!fill && !last && es == 4) {
			const uint32_t *x = (const uint32_t *)in + off;
			for (int64_t i = 0; i < inner; i++)
				((uint32_t *)o)[i] = x[i * ls];
			continue;
		}
		for (int64_t i = 0; i < inner; i++) {
			int64_t s = last ? last[i] : i;
			const void *from = fill || s < 0 ? (const void *)j->fill.bytes : in + (size_t)(off + s * ls) * es;
			memcpy(o + (size_t)i * es, from, es);
		}
	}
}

void rt_remap_copy(rt_call *c, const rt_tensor *in, rt_tensor *out, const rt_remap *map)
{
	remap_job j = {.in = in, .out = out, .map = map, .es = ti_dtype_size(in->dtype)};
	if (in->dtype == TI_DT_FLOAT32)
		j.fill.f = (float)map->fill;
	else if (in->dtype == TI_DT_INT64)
		j.fill.i = (int64_t)map->fill;
	else if (in->dtype == TI_DT_BOOL)
		j.fill.b = map->fill != 0;
	int64_t inner = out->ndim ? out->shape[out->ndim - 1] : 1, rows = inner ? rt_numel(out) / inner : 0;
	rt_parallel(c, rows, inner ? (1 << 15) / inner + 1 : 1, remap_rows, &j);
}

/* Runs map from in into a new output of the propagated shape; releases the tables. */
static ti_status remap_out(rt_call *c, const rt_tensor *in, const rt_remap *map, tables *tb, ti_error *err)
{
	rt_tensor *y;
	ti_status st = rt_new_out(c, in->dtype, &y, err);
	if (!st)
		rt_remap_copy(c, in, y, map);
	tables_release(c, tb);
	return st ? st : rt_output(c, y, err);
}

/* The identity map of t: its strides, every output index reading its own. */
static rt_remap identity(const rt_tensor *t)
{
	rt_remap map;
	memset(&map, 0, sizeof(map));
	memcpy(map.stride, t->stride, sizeof(map.stride));
	return map;
}

/* ---- flip, roll, repeat, tile, repeat_interleave ---- */

static ti_status k_flip(rt_call *c, ti_error *err)
{
	rt_tensor *in;
	tables tb = {.count = 0};
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	int64_t dims[RT_MAX_DIMS];
	int n = rt_ints(c, "dims", dims, RT_MAX_DIMS);
	rt_remap map = identity(in);
	for (int k = 0; k < n && in->ndim && !st; k++) {
		int d = wrap(dims[k], in->ndim);
		int64_t *t, size = in->shape[d];
		if (map.source[d] || (st = table_new(c, &tb, size, &t, err)))
			continue; /* a dim named twice flips once (dim_list_to_bitset) */
		for (int64_t i = 0; i < size; i++)
			t[i] = size - 1 - i;
		map.source[d] = t;
	}
	if (st) {
		tables_release(c, &tb);
		return st;
	}
	return remap_out(c, in, &map, &tb, err);
}

/* (i - shift) mod size, for each i. */
static ti_status roll_table(rt_call *c, tables *tb, int64_t size, int64_t shift, const int64_t **out, ti_error *err)
{
	int64_t *t;
	ti_status st = table_new(c, tb, size, &t, err);
	if (st)
		return st;
	for (int64_t i = 0; i < size; i++)
		t[i] = (((i - shift) % size) + size) % size;
	*out = t;
	return TI_OK;
}

/* roll without dims: the flattened input rolls by shift, and keeps its shape. */
static ti_status roll_flat(rt_call *c, rt_tensor *in, int64_t shift, ti_error *err)
{
	rt_tensor *xc, *y = NULL;
	tables tb = {.count = 0};
	ti_status st = rt_contiguous(c, in, &xc, err);
	if (st)
		return st;
	rt_tensor flat_in = flat_of(xc);
	rt_remap map = identity(&flat_in);
	if (flat_in.shape[0])
		st = roll_table(c, &tb, flat_in.shape[0], shift, &map.source[0], err);
	if (!st && !(st = rt_new_out(c, in->dtype, &y, err))) {
		rt_tensor flat_out = flat_of(y);
		rt_remap_copy(c, &flat_in, &flat_out, &map);
		st = rt_output(c, y, err);
	}
	tables_release(c, &tb);
	rt_release(c->ex, xc);
	return st;
}

static ti_status k_roll(rt_call *c, ti_error *err)
{
	rt_tensor *in;
	tables tb = {.count = 0};
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	int64_t shifts[RT_MAX_DIMS], dims[RT_MAX_DIMS];
	int ns = ints_of(ti_bound_get(&c->call->in, "shifts"), shifts, RT_MAX_DIMS);
	int nd = ints_of(ti_bound_get(&c->call->in, "dims"), dims, RT_MAX_DIMS);
	if (ns < 1 || nd < 0)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for roll over more than %d dims", RT_MAX_DIMS);
	if (nd == 0)
		return roll_flat(c, in, shifts[0], err);
	int64_t shift[RT_MAX_DIMS] = {0};
	for (int k = 0; k < nd && k < ns; k++)
		shift[wrap(dims[k], in->ndim)] += shifts[k]; /* roll_common rolls dim by dim: shifts add */
	rt_remap map = identity(in);
	for (int d = 0; d < in->ndim && !st; d++)
		if (in->shape[d] && shift[d] % in->shape[d])
			st = roll_table(c, &tb, in->shape[d], shift[d], &map.source[d], err);
	if (st) {
		tables_release(c, &tb);
		return st;
	}
	return remap_out(c, in, &map, &tb, err);
}

/* repeat and tile: the output's shape is propagated; each dim reads i mod the input's size, new dims stride 0. */
static ti_status k_repeat(rt_call *c, ti_error *err)
{
	rt_tensor *in;
	tables tb = {.count = 0};
	const ti_arg *a = ti_bound_get(&c->call->in, "self");
	if (!a || a->kind != TI_ARG_TENSOR)
		a = ti_bound_get(&c->call->in, "input");
	ti_status st = rt_of(c, a->as.tensor, &in, err);
	const ti_meta_tensor *m = rt_meta_out(c);
	if (st)
		return st;
	rt_remap map;
	memset(&map, 0, sizeof(map));
	int lead = m->ndim - in->ndim;
	for (int i = 0; i < m->ndim && !st; i++) {
		int d = i - lead;
		int64_t size = m->shape[i].value, *t;
		if (d < 0)
			continue;
		map.stride[i] = in->stride[d];
		if (size == in->shape[d] || (st = table_new(c, &tb, size, &t, err)))
			continue;
		for (int64_t o = 0; o < size; o++)
			t[o] = o % in->shape[d];
		map.source[i] = t;
	}
	if (st) {
		tables_release(c, &tb);
		return st;
	}
	return remap_out(c, in, &map, &tb, err);
}

/* repeat_interleave: each index along dim (of the flattened input when dim is None) repeats its count. */
static ti_status k_repeat_interleave(rt_call *c, ti_error *err)
{
	rt_tensor *in, *xc, *y, *rep = NULL;
	tables tb = {.count = 0};
	ti_status st = rt_arg(c, "input", &in, err);
	if (st)
		return st;
	const ti_arg *ra = ti_bound_get(&c->call->in, "repeats");
	if (ra->kind == TI_ARG_TENSOR && (st = rt_of(c, ra->as.tensor, &rep, err)))
		return st;
	if (rep && rep->dtype != TI_DT_INT64)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for repeat_interleave with %s repeats",
		               ti_dtype_name(rep->dtype));
	bool flatten = ti_bound_is_none(&c->call->in, "dim");
	if ((st = rt_contiguous(c, in, &xc, err)))
		return st;
	rt_tensor src = flatten || xc->ndim == 0 ? flat_of(xc) : *xc;
	int dim = flatten ? 0 : wrap(rt_int(c, "dim"), src.ndim);
	if ((st = rt_new_out(c, in->dtype, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	int64_t size = src.shape[dim], out_size = y->shape[dim], *t = NULL;
	if (!(st = table_new(c, &tb, out_size, &t, err))) {
		int64_t at = 0;
		for (int64_t i = 0; i < size && !st; i++) {
			int64_t r = !rep ? ra->as.dim.value
			                 : rt_i64(rep)[rep->ndim && rep->shape[0] > 1 ? i * rep->stride[0] : 0];
			if (r < 0)
				st = TI_FAIL(err, TI_E_SHAPE, "repeats can not be negative");
			for (int64_t k = 0; k < r && at < out_size && !st; k++)
				t[at++] = i;
		}
		if (!st && at != out_size)
			st = TI_FAIL(err, TI_E_SHAPE, "repeat_interleave: Invalid output_size, expected %lld but got %lld",
			             (long long)at, (long long)out_size);
	}
	if (!st) {
		rt_remap map = identity(&src);
		map.source[dim] = t;
		rt_tensor dst = *y;
		if (flatten || xc->ndim == 0)
			dst = flat_of(y);
		rt_remap_copy(c, &src, &dst, &map);
	}
	tables_release(c, &tb);
	rt_release(c->ex, xc);
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

/* ---- index_select, gather, take_along_dim ---- */

/* Reads the k-th value of a 0-d or 1-d int64 index. */
static int64_t index_at(const rt_tensor *index, int64_t k) { return rt_i64(index)[index->ndim ? k * index->stride[0] : 0]; }

static ti_status k_index_select(rt_call *c, ti_error *err)
{
	rt_tensor *in, *index;
	tables tb = {.count = 0};
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "index", &index, err);
	if (st)
		return st;
	if (index->dtype != TI_DT_INT64)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for index_select with a %s index",
		               ti_dtype_name(index->dtype));
	int dim = in->ndim ? wrap(rt_int(c, "dim"), in->ndim) : 0;
	int64_t size = in->ndim ? in->shape[dim] : 1, n = rt_numel(index);
	for (int64_t k = 0; k < n; k++) {
		int64_t v = index_at(index, k);
		if (v < 0 || v >= size)
			return TI_FAIL(err, TI_E_SHAPE, "index out of range in self");
	}
	rt_remap map = identity(in);
	if (in->ndim) {
		int64_t *t;
		if ((st = table_new(c, &tb, n, &t, err)))
			return st;
		for (int64_t k = 0; k < n; k++)
			t[k] = index_at(index, k);
		map.source[dim] = t;
	}
	return remap_out(c, in, &map, &tb, err);
}

typedef struct gather_job {
	const rt_tensor *in, *index;
	rt_tensor *out;
	int64_t in_stride[RT_MAX_DIMS], index_stride[RT_MAX_DIMS];
	int64_t dim_size, dim_stride;
	size_t es;
} gather_job;

static void gather_rows(void *user, int64_t begin, int64_t end)
{
	const gather_job *j = user;
	int nd = j->out->ndim;
	size_t es = j->es;
	int64_t inner = nd ? j->out->shape[nd - 1] : 1;
	int64_t is = nd ? j->in_stride[nd - 1] : 0, xs = nd ? j->index_stride[nd - 1] : 0;
	const char *in = j->in->storage->data;
	const int64_t *index = rt_i64(j->index);
	char *dst = j->out->storage->data;
	for (int64_t row = begin; row < end; row++) {
		int64_t rem = row, io = j->in->offset, xo = 0;
		for (int d = nd - 2; d >= 0; d--) {
			int64_t i = rem % j->out->shape[d];
			rem /= j->out->shape[d];
			io += i * j->in_stride[d];
			xo += i * j->index_stride[d];
		}
		for (int64_t i = 0; i < inner; i++) {
			int64_t v = index[xo + i * xs];
			if (v < 0)
				v += j->dim_size;
			memcpy(dst + (size_t)(row * inner + i) * es, in + (size_t)(io + i * is + v * j->dim_stride) * es, es);
		}
	}
}

/*
 * out[p] = in[p with p[dim] = index[p]]: in_stride and index_stride are per
 * output dim (0 where one broadcasts; in_stride[dim] is not read). Indices
 * must lie in [0, size), or [-size, size) when negative ones count from the end.
 */
static ti_status gather_into(rt_call *c, const rt_tensor *in, const int64_t *in_stride, int dim,
                             const rt_tensor *index, const int64_t *index_stride, bool negative, rt_tensor *out,
                             ti_error *err)
{
	gather_job j = {.in = in, .index = index, .out = out, .es = ti_dtype_size(in->dtype)};
	j.dim_size = in->ndim ? in->shape[dim] : 1;
	j.dim_stride = in->ndim ? in->stride[dim] : 0;
	memcpy(j.in_stride, in_stride, sizeof(j.in_stride));
	memcpy(j.index_stride, index_stride, sizeof(j.index_stride));
	if (out->ndim)
		j.in_stride[dim] = 0;
	/* every index is checked before anything is copied: each is read where some output reads it */
	int64_t n = rt_numel(index), idx[RT_MAX_DIMS] = {0};
	for (int64_t k = 0; k < n; k++) {
		int64_t off = 0;
		for (int d = 0; d < index->ndim; d++)
			off += idx[d] * index->stride[d];
		int64_t v = rt_i64(index)[off];
		if (v >= j.dim_size || v < (negative ? -j.dim_size : 0))
			return TI_FAIL(err, TI_E_SHAPE, "index %lld is out of bounds for dimension %d with size %lld",
			               (long long)v, dim, (long long)j.dim_size);
		for (int d = index->ndim - 1; d >= 0; d--) {
			if (++idx[d] < index->shape[d])
				break;
			idx[d] = 0;
		}
	}
	int64_t inner = out->ndim ? out->shape[out->ndim - 1] : 1, rows = inner ? rt_numel(out) / inner : 0;
	rt_parallel(c, rows, inner ? (1 << 15) / inner + 1 : 1, gather_rows, &j);
	return TI_OK;
}

static ti_status gather_out(rt_call *c, const rt_tensor *in, const int64_t *in_stride, int dim,
                            const rt_tensor *index, const int64_t *index_stride, rt_tensor *y, ti_error *err)
{
	ti_status st = gather_into(c, in, in_stride, dim, index, index_stride, false, y, err);
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

static ti_status k_gather(rt_call *c, ti_error *err)
{
	rt_tensor *in, *index, *y;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "index", &index, err);
	if (!st)
		st = rt_new_out(c, in->dtype, &y, err);
	if (st)
		return st;
	return gather_out(c, in, in->stride, wrap(rt_int(c, "dim"), in->ndim), index, index->stride, y, err);
}

/* take_along_dim: input and indices broadcast apart from dim; without dim, a gather from the flattened input. */
static ti_status k_take_along_dim(rt_call *c, ti_error *err)
{
	rt_tensor *in, *index, *y, *xc, *ic;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "indices", &index, err);
	if (!st)
		st = rt_new_out(c, in->dtype, &y, err);
	if (st)
		return st;
	if (ti_bound_is_none(&c->call->in, "dim")) {
		if ((st = rt_contiguous(c, in, &xc, err)))
			goto fail;
		if ((st = rt_contiguous(c, index, &ic, err))) {
			rt_release(c->ex, xc);
			goto fail;
		}
		rt_tensor flat_in = flat_of(xc), flat_index = flat_of(ic);
		int64_t one[RT_MAX_DIMS] = {1};
		st = gather_out(c, &flat_in, one, 0, &flat_index, one, y, err);
		rt_release(c->ex, xc);
		rt_release(c->ex, ic);
		return st;
	}
	int dim = wrap(rt_int(c, "dim"), in->ndim);
	int64_t in_stride[RT_MAX_DIMS] = {0}, index_stride[RT_MAX_DIMS] = {0};
	for (int d = 0; d < y->ndim; d++) {
		in_stride[d] = in->shape[d] == y->shape[d] ? in->stride[d] : 0;
		index_stride[d] = index->shape[d] == y->shape[d] ? index->stride[d] : 0;
	}
	return gather_out(c, in, in_stride, dim, index, index_stride, y, err);
fail:
	rt_release(c->ex, y);
	return st;
}

/* ---- getitem ---- */

static bool is_ellipsis(const ti_arg *a) { return a->kind == TI_ARG_STR && !strcmp(a->as.str, "..."); }

/* The geometry Tensor.__getitem__ builds, item by item (see src/ops/python.c). */
typedef struct item_view {
	int ndim;
	int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS], offset;
	const ti_meta_tensor *index; /* one integer tensor gathers along index_dim */
	int index_dim;
} item_view;

/* A slice's start, stop or step: a number, a bound symbol or formula ("T"), or none. */
static int64_t slice_bound(rt_call *c, const ti_arg *a, int64_t none)
{
	int64_t v;
	return rt_dim(c, a, &v) ? v : none;
}

/* at::slice: negative bounds from the end, then clamped into [0, size] with stop >= start. */
static void apply_slice(rt_call *c, item_view *v, int dim, const ti_arg *slice)
{
	int64_t size = v->shape[dim];
	int64_t start = slice_bound(c, &slice->as.list.items[0], 0), stop = slice_bound(c, &slice->as.list.items[1], size);
	int64_t step = slice_bound(c, &slice->as.list.items[2], 1);
	if (start < 0)
		start += size;
	if (stop < 0)
		stop += size;
	start = start < 0 ? 0 : start > size ? size : start;
	stop = stop < start ? start : stop > size ? size : stop;
	v->offset += start * v->stride[dim];
	v->shape[dim] = (stop - start + step - 1) / step;
	v->stride[dim] *= step;
}

static ti_status apply_items(rt_call *c, const rt_tensor *t, const ti_arg *items, int n, item_view *v, ti_error *err)
{
	int specified = 0;
	for (int i = 0; i < n; i++)
		specified += items[i].kind == TI_ARG_INT || items[i].kind == TI_ARG_SLICE || items[i].kind == TI_ARG_TENSOR ||
		             (items[i].kind == TI_ARG_STR && !is_ellipsis(&items[i]));
	int dim = 0;
	for (int i = 0; i < n; i++) {
		const ti_arg *a = &items[i];
		int64_t index;
		if ((a->kind == TI_ARG_INT || (a->kind == TI_ARG_STR && !is_ellipsis(a))) && rt_dim(c, a, &index)) {
			int64_t size = v->shape[dim];
			if (index < -size || index >= size)
				return TI_FAIL(err, TI_E_SHAPE, "index %lld is out of bounds for dimension %d with size %lld",
				               (long long)index, i, (long long)size);
			v->offset += (index < 0 ? index + size : index) * v->stride[dim];
			memmove(v->shape + dim, v->shape + dim + 1, (size_t)(v->ndim - dim - 1) * sizeof(*v->shape));
			memmove(v->stride + dim, v->stride + dim + 1, (size_t)(v->ndim - dim - 1) * sizeof(*v->stride));
			v->ndim--;
		} else if (a->kind == TI_ARG_SLICE) {
			apply_slice(c, v, dim++, a);
		} else if (a->kind == TI_ARG_NONE) {
			if (v->ndim == RT_MAX_DIMS)
				return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for more than %d dims", RT_MAX_DIMS);
			int64_t stride = dim >= v->ndim ? 1 : v->shape[dim] * v->stride[dim];
			memmove(v->shape + dim + 1, v->shape + dim, (size_t)(v->ndim - dim) * sizeof(*v->shape));
			memmove(v->stride + dim + 1, v->stride + dim, (size_t)(v->ndim - dim) * sizeof(*v->stride));
			v->shape[dim] = 1;
			v->stride[dim] = stride;
			v->ndim++;
			dim++;
		} else if (a->kind == TI_ARG_TENSOR && !v->index) {
			v->index = a->as.tensor;
			v->index_dim = dim++;
		} else if (is_ellipsis(a)) {
			dim += t->ndim - specified;
		} else {
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this index");
		}
	}
	return TI_OK;
}

/* x[index] on a tensor: a view, or with one integer tensor a gather (new memory) of the viewed dims. */
static ti_status k_getitem(rt_call *c, ti_error *err)
{
	const ti_arg *self = ti_bound_get(&c->call->in, "self"), *index = ti_bound_get(&c->call->in, "index");
	if (self->kind != TI_ARG_TENSOR)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for getitem on a sequence");
	rt_tensor *t, *y, *ix, *ic;
	ti_status st = rt_of(c, self->as.tensor, &t, err);
	if (st)
		return st;
	item_view v = {.ndim = t->ndim, .offset = t->offset};
	memcpy(v.shape, t->shape, sizeof(v.shape));
	memcpy(v.stride, t->stride, sizeof(v.stride));
	bool tuple = index->kind == TI_ARG_LIST;
	if ((st = apply_items(c, t, tuple ? index->as.list.items : index, tuple ? index->as.list.count : 1, &v, err)))
		return st;
	if (!v.index) {
		st = rt_view(c, t, v.ndim, v.shape, v.stride, v.offset, &y, err);
		return st ? st : rt_output(c, y, err);
	}
	if ((st = rt_of(c, v.index, &ix, err)))
		return st;
	if (ix->dtype != TI_DT_INT64)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for indexing with a %s tensor", ti_dtype_name(ix->dtype));
	if ((st = rt_contiguous(c, ix, &ic, err)))
		return st;
	/* the viewed input with the indexed dim replaced by the flattened index: index_select */
	rt_tensor viewed = *t, flat_index = flat_of(ic);
	viewed.ndim = v.ndim;
	memcpy(viewed.shape, v.shape, sizeof(v.shape));
	memcpy(viewed.stride, v.stride, sizeof(v.stride));
	viewed.offset = v.offset;
	if ((st = rt_new_out(c, t->dtype, &y, err))) {
		rt_release(c->ex, ic);
		return st;
	}
	rt_tensor dst = *y;
	dst.ndim = v.ndim;
	memcpy(dst.shape, v.shape, sizeof(v.shape));
	dst.shape[v.index_dim] = flat_index.shape[0];
	rt_contiguous_strides(dst.ndim, dst.shape, dst.stride);
	int64_t index_stride[RT_MAX_DIMS] = {0};
	index_stride[v.index_dim] = 1;
	st = gather_into(c, &viewed, viewed.stride, v.index_dim, &flat_index, index_stride, true, &dst, err);
	rt_release(c->ex, ic);
	if (st) {
		rt_release(c->ex, y);
		return st;
	}
	return rt_output(c, y, err);
}

/*
 * x[index] = value (Tensor.__setitem__), in place: the view getitem makes,
 * written with value broadcast to it (a number, or a tensor aligned on the
 * right, size-1 dims repeated) and cast as copy_ casts; x is the result,
 * so every view of x sees the change. The executor runs it although its
 * output (x itself) has a value already (rt_kernel_in_place).
 */
static double value_at(const rt_tensor *t, int64_t off);
static void store_at(rt_tensor *t, int64_t off, double v);

static ti_status k_setitem(rt_call *c, ti_error *err)
{
	const ti_arg *self = ti_bound_get(&c->call->in, "self"), *index = ti_bound_get(&c->call->in, "index");
	const ti_arg *value = ti_bound_get(&c->call->in, "value");
	if (self->kind != TI_ARG_TENSOR)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for setitem on a sequence");
	rt_tensor *t, *src = NULL;
	ti_status st = rt_of(c, self->as.tensor, &t, err);
	if (st)
		return st;
	item_view v = {.ndim = t->ndim, .offset = t->offset};
	memcpy(v.shape, t->shape, sizeof(v.shape));
	memcpy(v.stride, t->stride, sizeof(v.stride));
	bool tuple = index->kind == TI_ARG_LIST;
	if ((st = apply_items(c, t, tuple ? index->as.list.items : index, tuple ? index->as.list.count : 1, &v, err)))
		return st;
	if (v.index)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for setitem with a tensor index");
	double number = 0;
	int64_t vstride[RT_MAX_DIMS] = {0};
	if (value->kind == TI_ARG_TENSOR) {
		if ((st = rt_of(c, value->as.tensor, &src, err)))
			return st;
		if (src->ndim > v.ndim)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for setitem of a %d-d value into %d dims",
			               src->ndim, v.ndim);
		for (int d = 0; d < src->ndim; d++) /* aligned on the right; a size-1 dim repeats */
			vstride[v.ndim - src->ndim + d] = src->shape[d] == 1 ? 0 : src->stride[d];
	} else if (!rt_scalar(value, &number)) {
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for setitem of this value");
	}
	int64_t n = 1, idx[RT_MAX_DIMS] = {0};
	for (int d = 0; d < v.ndim; d++)
		n *= v.shape[d];
	for (int64_t k = 0; k < n; k++) {
		int64_t dst = v.offset - t->offset, from = src ? 0 : -1;
		for (int d = 0; d < v.ndim; d++) {
			dst += idx[d] * v.stride[d];
			if (src)
				from += idx[d] * vstride[d];
		}
		store_at(t, dst, src ? value_at(src, from) : number);
		for (int d = v.ndim - 1; d >= 0 && ++idx[d] == v.shape[d]; d--)
			idx[d] = 0;
	}
	t->refs++; /* x itself is the result */
	return rt_output(c, t, err);
}

/* ---- dot, mv, outer ---- */

static double value_at(const rt_tensor *t, int64_t off)
{
	switch (t->dtype) {
	case TI_DT_FLOAT32: return rt_f32(t)[off];
	case TI_DT_INT64: return (double)rt_i64(t)[off];
	case TI_DT_BOOL: return rt_bool(t)[off];
	default: return 0;
	}
}

static void store_at(rt_tensor *t, int64_t off, double v)
{
	switch (t->dtype) {
	case TI_DT_FLOAT32: rt_f32(t)[off] = (float)v; break;
	case TI_DT_INT64: rt_i64(t)[off] = (int64_t)v; break;
	case TI_DT_BOOL: rt_bool(t)[off] = v != 0; break;
	default: break;
	}
}

static ti_status two_args(rt_call *c, const char *a, const char *b, rt_tensor **x, rt_tensor **y, rt_tensor **out,
                          ti_error *err)
{
	ti_status st = rt_arg(c, a, x, err);
	if (!st)
		st = rt_arg(c, b, y, err);
	if (!st)
		st = rt_new_out(c, rt_meta_out(c) ? rt_meta_out(c)->dtype : TI_DT_FLOAT32, out, err);
	return st;
}

static ti_status k_dot(rt_call *c, ti_error *err)
{
	rt_tensor *a, *b, *y;
	ti_status st = two_args(c, "input", "tensor", &a, &b, &y, err);
	if (st)
		return st;
	double sum = 0;
	for (int64_t i = 0; i < a->shape[0]; i++)
		sum += value_at(a, i * a->stride[0]) * value_at(b, i * b->stride[0]);
	store_at(y, 0, sum);
	return rt_output(c, y, err);
}

static ti_status k_mv(rt_call *c, ti_error *err)
{
	rt_tensor *a, *x, *y;
	ti_status st = two_args(c, "input", "vec", &a, &x, &y, err);
	if (st)
		return st;
	for (int64_t i = 0; i < a->shape[0]; i++) {
		double sum = 0;
		for (int64_t k = 0; k < a->shape[1]; k++)
			sum += value_at(a, i * a->stride[0] + k * a->stride[1]) * value_at(x, k * x->stride[0]);
		store_at(y, i, sum);
	}
	return rt_output(c, y, err);
}

/* outer and ger: out[i, j] = a[i] * b[j], one rounding, as mul's. */
static ti_status k_outer(rt_call *c, ti_error *err)
{
	rt_tensor *a, *b, *y;
	ti_status st = two_args(c, "input", "vec2", &a, &b, &y, err);
	if (st)
		return st;
	int64_t n = a->shape[0], m = b->shape[0];
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++)
			store_at(y, i * m + j, value_at(a, i * a->stride[0]) * value_at(b, j * b->stride[0]));
	return rt_output(c, y, err);
}

/* ---- einsum ---- */

/* 'A'..'Z' are labels 0..25 and 'a'..'z' 26..51 (an implicit output lists capitals first); then the ellipsis dims. */
enum { EIN_LETTERS = 52, EIN_LABELS = EIN_LETTERS + RT_MAX_DIMS };

/* An operand over the labels: element = data[sum of index(l) * stride[l]], where has[l]. */
typedef struct ein_operand {
	const float *data;
	int64_t stride[EIN_LABELS];
	bool has[EIN_LABELS];
	rt_tensor *held; /* a temporary this kernel made, else NULL */
} ein_operand;

typedef struct ein {
	rt_call *c;
	int operands;
	int64_t size[EIN_LABELS];
	bool in_output[EIN_LABELS];
	int out_ndim, out_label[RT_MAX_DIMS];
} ein;

static int ein_label(char ch) { return isupper((unsigned char)ch) ? ch - 'A' : ch - 'a' + 26; }

/* One operand's subscripts (labels, -1 for "..."): the count. */
static int ein_subscripts(const char *s, size_t len, int *out)
{
	int n = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '.') {
			out[n++] = -1;
			i += 2;
		} else if (isalpha((unsigned char)s[i])) {
			out[n++] = ein_label(s[i]);
		}
	}
	return n;
}

/* Reads the equation (the shape rule checked it) into labels, sizes and operand strides. */
static ti_status ein_parse(ein *e, const char *eq, rt_tensor *const *x, ein_operand *ops, ti_error *err)
{
	const char *arrow = strstr(eq, "->"), *p = eq, *lhs_end = arrow ? arrow : eq + strlen(eq);
	int subs[RT_MAX_DIMS + 1][EIN_LETTERS + 2], count[RT_MAX_DIMS + 1], ell_dims = 0, seen[EIN_LETTERS] = {0};
	for (int k = 0; k < e->operands; k++) {
		const char *comma = memchr(p, ',', (size_t)(lhs_end - p));
		const char *end = comma ? comma : lhs_end;
		if ((size_t)(end - p) > EIN_LETTERS + 2)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for einsum subscripts this long");
		count[k] = ein_subscripts(p, (size_t)(end - p), subs[k]);
		int named = 0;
		bool ellipsis = false;
		for (int j = 0; j < count[k]; j++) {
			if (subs[k][j] < 0)
				ellipsis = true;
			else
				named++, seen[subs[k][j]]++;
		}
		if (ellipsis && x[k]->ndim - named > ell_dims)
			ell_dims = x[k]->ndim - named;
		p = end + 1;
	}
	for (int l = 0; l < EIN_LABELS; l++)
		e->size[l] = 1;
	/* sizes: the largest of each label's (size 1 broadcasts) */
	for (int k = 0; k < e->operands; k++)
		for (int j = 0, d = 0; j < count[k]; j++) {
			if (subs[k][j] >= 0) {
				int64_t s = x[k]->shape[d++];
				if (s != 1)
					e->size[subs[k][j]] = s;
				continue;
			}
			int covered = x[k]->ndim - (count[k] - 1);
			for (int i = 0; i < covered; i++, d++)
				if (x[k]->shape[d] != 1)
					e->size[EIN_LETTERS + ell_dims - covered + i] = x[k]->shape[d];
		}
	for (int k = 0; k < e->operands; k++) {
		ein_operand *o = &ops[k];
		memset(o, 0, sizeof(*o));
		o->data = rt_f32(x[k]);
		for (int j = 0, d = 0; j < count[k]; j++) {
			int covered = subs[k][j] >= 0 ? 1 : x[k]->ndim - (count[k] - 1);
			for (int i = 0; i < covered; i++, d++) {
				int l = subs[k][j] >= 0 ? subs[k][j] : EIN_LETTERS + ell_dims - covered + i;
				if (x[k]->shape[d] != e->size[l])
					continue; /* broadcast: stride 0 */
				o->has[l] = true;
				o->stride[l] += x[k]->stride[d]; /* a repeated label: the diagonal */
			}
		}
	}
	/* the output: explicit, or the ellipsis then the labels seen once, in label order */
	int out[EIN_LABELS], n = 0;
	if (!arrow) {
		for (int i = 0; i < ell_dims; i++)
			out[n++] = EIN_LETTERS + i;
		for (int l = 0; l < EIN_LETTERS; l++)
			if (seen[l] == 1)
				out[n++] = l;
	} else {
		int subs_out[EIN_LETTERS + 2];
		size_t len = strlen(arrow + 2);
		if (len > EIN_LETTERS + 2)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for einsum subscripts this long");
		int ns = ein_subscripts(arrow + 2, len, subs_out);
		for (int j = 0; j < ns; j++) {
			if (subs_out[j] >= 0) {
				out[n++] = subs_out[j];
				continue;
			}
			for (int i = 0; i < ell_dims; i++)
				out[n++] = EIN_LETTERS + i;
		}
	}
	if (n > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for tensors of %d dimensions", n);
	e->out_ndim = n;
	for (int i = 0; i < n; i++) {
		e->out_label[i] = out[i];
		e->in_output[out[i]] = true;
	}
	return TI_OK;
}

static void ein_release(ein *e, ein_operand *o)
{
	rt_release(e->c->ex, o->held);
	o->held = NULL;
}

/* A temporary of n floats for an operand over labels (in order, the last fastest). */
static ti_status ein_temp(ein *e, const int *labels, int n, ein_operand *o, float **data, ti_error *err)
{
	int64_t total = 1;
	for (int i = 0; i < n; i++)
		total *= e->size[labels[i]];
	memset(o, 0, sizeof(*o));
	ti_status st = rt_new(e->c, TI_DT_FLOAT32, 1, &total, &o->held, err);
	if (st)
		return st;
	int64_t stride = 1;
	for (int i = n - 1; i >= 0; i--) {
		o->has[labels[i]] = true;
		o->stride[labels[i]] = stride;
		stride *= e->size[labels[i]];
	}
	*data = rt_f32(o->held);
	o->data = *data;
	return TI_OK;
}

/* dst = src summed over the labels sum, kept labels in order (the last fastest); sums in double. */
static void ein_sum(const ein *e, const ein_operand *src, const int *keep, int nk, const int *sum, int ns, float *dst)
{
	int64_t kept = 1, summed = 1, ki[EIN_LABELS] = {0}, si[EIN_LABELS], off = 0;
	for (int i = 0; i < nk; i++)
		kept *= e->size[keep[i]];
	for (int i = 0; i < ns; i++)
		summed *= e->size[sum[i]];
	for (int64_t p = 0; p < kept; p++) {
		double acc = 0;
		int64_t inner = off;
		memset(si, 0, sizeof(si));
		for (int64_t q = 0; q < summed; q++) {
			acc += src->data[inner];
			for (int i = ns - 1; i >= 0; i--) {
				inner += src->stride[sum[i]];
				if (++si[i] < e->size[sum[i]])
					break;
				inner -= src->stride[sum[i]] * e->size[sum[i]];
				si[i] = 0;
			}
		}
		dst[p] = ns ? (float)acc : src->data[off];
		for (int i = nk - 1; i >= 0; i--) {
			off += src->stride[keep[i]];
			if (++ki[i] < e->size[keep[i]])
				break;
			off -= src->stride[keep[i]] * e->size[keep[i]];
			ki[i] = 0;
		}
	}
}

/* o keeps only the labels in keep: the others it has are summed into a temporary. */
static ti_status ein_reduce(ein *e, ein_operand *o, const bool *keep, ti_error *err)
{
	int kept[EIN_LABELS], summed[EIN_LABELS], nk = 0, ns = 0;
	for (int l = 0; l < EIN_LABELS; l++) {
		if (o->has[l] && keep[l])
			kept[nk++] = l;
		else if (o->has[l] && e->size[l] != 1)
			summed[ns++] = l;
	}
	if (!ns) {
		for (int l = 0; l < EIN_LABELS; l++)
			o->has[l] = o->has[l] && keep[l]; /* size-1 labels not kept: index 0 */
		return TI_OK;
	}
	ein_operand r;
	float *data;
	ti_status st = ein_temp(e, kept, nk, &r, &data, err);
	if (st)
		return st;
	ein_sum(e, o, kept, nk, summed, ns, data);
	ein_release(e, o);
	*o = r;
	return TI_OK;
}

/* a and b (each holding only labels in keep or in the other) into one: a batched sgemm. */
static ti_status ein_contract(ein *e, ein_operand *a, ein_operand *b, const bool *keep, ti_error *err)
{
	int batch[EIN_LABELS], rows[EIN_LABELS], cols[EIN_LABELS], sum[EIN_LABELS], nb = 0, nr = 0, nc = 0, nsum = 0;
	int64_t B = 1, M = 1, N = 1, K = 1;
	for (int l = 0; l < EIN_LABELS; l++) {
		if (a->has[l] && b->has[l] && keep[l])
			batch[nb++] = l, B *= e->size[l];
		else if (a->has[l] && b->has[l])
			sum[nsum++] = l, K *= e->size[l];
		else if (a->has[l])
			rows[nr++] = l, M *= e->size[l];
		else if (b->has[l])
			cols[nc++] = l, N *= e->size[l];
	}
	int la[EIN_LABELS], lb[EIN_LABELS], lr[EIN_LABELS];
	/* a as [batch, rows, sum], b as [batch, sum, cols], the result [batch, rows, cols] */
	memcpy(la, batch, sizeof(int) * (size_t)nb), memcpy(la + nb, rows, sizeof(int) * (size_t)nr);
	memcpy(la + nb + nr, sum, sizeof(int) * (size_t)nsum);
	memcpy(lb, batch, sizeof(int) * (size_t)nb), memcpy(lb + nb, sum, sizeof(int) * (size_t)nsum);
	memcpy(lb + nb + nsum, cols, sizeof(int) * (size_t)nc);
	memcpy(lr, la, sizeof(int) * (size_t)(nb + nr)), memcpy(lr + nb + nr, cols, sizeof(int) * (size_t)nc);
	ein_operand pa, pb, r;
	float *da, *db, *dr;
	ti_status st = ein_temp(e, la, nb + nr + nsum, &pa, &da, err);
	if (!st && (st = ein_temp(e, lb, nb + nsum + nc, &pb, &db, err)))
		ein_release(e, &pa);
	if (!st && (st = ein_temp(e, lr, nb + nr + nc, &r, &dr, err))) {
		ein_release(e, &pa);
		ein_release(e, &pb);
	}
	if (st)
		return st;
	ein_sum(e, a, la, nb + nr + nsum, NULL, 0, da);
	ein_sum(e, b, lb, nb + nsum + nc, NULL, 0, db);
	for (int64_t i = 0; i < B && M && N; i++) {
		if (!K)
			memset(dr + i * M * N, 0, sizeof(float) * (size_t)(M * N));
		else
			rt_sgemm(false, false, M, N, K, 1.0f, da + i * M * K, K, db + i * K * N, N, 0.0f, dr + i * M * N, N);
	}
	ein_release(e, &pa);
	ein_release(e, &pb);
	ein_release(e, a);
	ein_release(e, b);
	*a = r;
	return TI_OK;
}

/* The labels the contraction must keep after operand k: the output's and those of later operands. */
static void ein_keep(const ein *e, const ein_operand *ops, int k, bool *keep)
{
	memcpy(keep, e->in_output, sizeof(e->in_output));
	for (int j = k + 1; j < e->operands; j++)
		for (int l = 0; l < EIN_LABELS; l++)
			keep[l] = keep[l] || ops[j].has[l];
}

static ti_status k_einsum(rt_call *c, ti_error *err)
{
	int n = 0;
	const ti_arg *items = ti_bound_list(&c->call->in, "tensors", &n);
	const char *eq = ti_bound_str(&c->call->in, "equation");
	rt_tensor *x[RT_MAX_DIMS + 1], *y;
	if (!eq || n < 1 || n > RT_MAX_DIMS + 1)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for einsum of %d operands", n);
	for (int k = 0; k < n; k++) {
		ti_status st = items[k].kind == TI_ARG_TENSOR ? rt_of(c, items[k].as.tensor, &x[k], err)
		                                              : TI_FAIL(err, TI_E_UNSUPPORTED, "an operand is not a tensor");
		if (st)
			return st;
		if (x[k]->dtype != TI_DT_FLOAT32)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for einsum on %s", ti_dtype_name(x[k]->dtype));
	}
	ein e = {.c = c, .operands = n};
	ein_operand ops[RT_MAX_DIMS + 1];
	ti_status st = ein_parse(&e, eq, x, ops, err);
	if (st)
		return st;
	bool keep[EIN_LABELS], with_other[EIN_LABELS];
	ein_keep(&e, ops, 0, keep);
	st = ein_reduce(&e, &ops[0], keep, err);
	for (int k = 1; k < n && !st; k++) {
		ein_keep(&e, ops, k, keep);
		for (int l = 0; l < EIN_LABELS; l++)
			with_other[l] = keep[l] || ops[0].has[l];
		if ((st = ein_reduce(&e, &ops[k], with_other, err)))
			break;
		for (int l = 0; l < EIN_LABELS; l++)
			with_other[l] = keep[l] || ops[k].has[l];
		if (!(st = ein_reduce(&e, &ops[0], with_other, err)))
			st = ein_contract(&e, &ops[0], &ops[k], keep, err);
	}
	if (!st && !(st = rt_new_out(c, TI_DT_FLOAT32, &y, err))) {
		ein_operand view = ops[0];
		for (int i = 0; i < e.out_ndim; i++)
			if (!view.has[e.out_label[i]])
				view.stride[e.out_label[i]] = 0;
		ein_sum(&e, &view, e.out_label, e.out_ndim, NULL, 0, rt_f32(y));
		st = rt_output(c, y, err);
	}
	for (int k = 0; k < n; k++)
		ein_release(&e, &ops[k]); /* temporaries left: the result, or all of them after a failure */
	return st;
}

const rt_kernel rt_kernels_index[] = {
	{"flip", false, k_flip, false},
	{"roll", false, k_roll, false},
	{"repeat", false, k_repeat, false},
	{"tile", false, k_repeat, false},
	{"repeat_interleave", false, k_repeat_interleave, false},
	{"index_select", false, k_index_select, false},
	{"gather", false, k_gather, false},
	{"take_along_dim", false, k_take_along_dim, false},
	{"getitem", false, k_getitem, true},
	{"setitem", false, k_setitem, true},
	{"operator.setitem", false, k_setitem, true},
	{"operator.getitem", false, k_getitem, true},
	{"dot", false, k_dot, false},
	{"mv", false, k_mv, false},
	{"outer", false, k_outer, false},
	{"ger", false, k_outer, false},
	{"einsum", false, k_einsum, false},
	{NULL, false, NULL, false},
};
