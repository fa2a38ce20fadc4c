/*
 * python.c - the Python-level operations a traced model records (torch.fx,
 * a torch-function recorder): a tensor's size, dim and numel; getitem on a
 * tuple or list and on a tensor; int arithmetic and comparisons as the
 * operator module names them; torch._assert.
 *
 * Values here are Python objects, so most parameters are `Any`: a graph name
 * arrives already resolved to its value (a tensor, the tuple size() gave, an
 * int an earlier operator.* gave), and a str that names nothing stays a str:
 * "..." is Ellipsis, an identifier or a formula ("N*197") a symbolic size.
 *
 * Indexing a tensor follows Tensor.__getitem__ (torch/csrc/autograd/
 * python_variable_indexing.cpp, aten/src/ATen/TensorIndexing.h): ints
 * select, slices slice as at::slice does (start and stop clamped into the
 * dim, size ceil((stop - start) / step), stride times step), None
 * unsqueezes, Ellipsis skips the dims the other items leave; the result is a
 * view of the input. One integer index tensor gathers (aten::index): a new
 * contiguous tensor whose indexed dim becomes the index's shape. A bool mask
 * keeps as many elements as it has true values, which a meta tensor cannot
 * know, so it is refused as data_dependent.c refuses nonzero. Storage
 * offsets are not part of a ti_meta_tensor, so a slice's or select's offset
 * is not recorded; sizes and strides are exact.
 *
 * Arithmetic is on ti_dims, so symbolic sizes stay symbolic: N * 197,
 * (T - 1) // 2. A comparison that cannot be decided is assumed true and
 * reported with the other assumptions (ti_dim_assume), as the shape rules
 * assume what they cannot prove. Python floats take part where that is
 * plain arithmetic; a float of a symbolic size has no value and is refused.
 *
 * None of these does tensor arithmetic except an index gather, which only
 * copies: every row is free.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/tables.h"
#include "tinspect/value.h"

/* ---- Python values ---- */

/* type(x).__name__ as Python's TypeErrors print it. */
static const char *py_type(const ti_arg *a)
{
	static const char *const names[] = {
		[TI_ARG_ABSENT] = "NoneType", [TI_ARG_NONE] = "NoneType", [TI_ARG_TENSOR] = "Tensor",
		[TI_ARG_LIST] = "tuple", [TI_ARG_INT] = "int", [TI_ARG_FLOAT] = "float",
		[TI_ARG_BOOL] = "bool", [TI_ARG_STR] = "str", [TI_ARG_DTYPE] = "torch.dtype",
		[TI_ARG_SLICE] = "slice",
	};
	if (a->kind == TI_ARG_STR && !strcmp(a->as.str, "..."))
		return "ellipsis";
	return names[a->kind];
}

static bool is_ellipsis(const ti_arg *a)
{
	return a->kind == TI_ARG_STR && !strcmp(a->as.str, "...");
}

static bool is_identifier(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* A Python number: an int (a ti_dim, maybe symbolic; bool counts as int) or a float. */
typedef struct number {
	bool is_float;
	ti_dim i;
	double f;
} number;

/* a as a number: an int, a bool, a float, a symbol's name or a formula of symbols ("N*197"). */
static bool to_number(ti_shape_ctx *ctx, const ti_arg *a, number *out)
{
	*out = (number){false, ti_dim_int(0), 0};
	switch (a->kind) {
	case TI_ARG_INT: out->i = a->as.dim; return true;
	case TI_ARG_BOOL: out->i = ti_dim_int(a->as.boolean); return true;
	case TI_ARG_FLOAT: out->is_float = true; out->f = a->as.real; return true;
	case TI_ARG_STR:
		if (is_identifier(a->as.str)) {
			out->i = ti_dim_symbol(ctx->sym, a->as.str);
			return true;
		}
		return ti_dim_parse(ctx->sym, a->as.str, &out->i);
	default: return false;
	}
}

/* n as a float: only an integer has one. */
static ti_status float_of(const number *n, double *out, ti_error *err)
{
	char buf[64];
	if (n->is_float) {
		*out = n->f;
		return TI_OK;
	}
	if (!ti_dim_is_int(n->i))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "the symbolic size %s has no float value",
		               ti_dim_format(n->i, buf, sizeof(buf)));
	*out = (double)n->i.value;
	return TI_OK;
}

static ti_status output_number(ti_op_call *call, const number *n, ti_error *err)
{
	return ti_call_output(call, n->is_float ? ti_arg_float(n->f) : ti_arg_dim(n->i), err);
}

/* An int that must be a plain integer (an index into a tuple, a dim). */
static ti_status need_int(const char *what, const ti_arg *a, int64_t *out, ti_error *err)
{
	char buf[64];
	if (a->kind == TI_ARG_BOOL) {
		*out = a->as.boolean;
		return TI_OK;
	}
	if (a->kind != TI_ARG_INT)
		return TI_FAIL(err, TI_E_CORRUPT, "%s must be an int, not %s", what, py_type(a));
	if (!ti_dim_is_int(a->as.dim))
		return TI_FAIL(err, TI_E_CORRUPT, "%s must be an integer, not the symbolic size %s", what,
		               ti_dim_format(a->as.dim, buf, sizeof(buf)));
	*out = a->as.dim.value;
	return TI_OK;
}

/* ---- size, dim, numel ---- */

/* x.size() is a torch.Size (a tuple of ints); x.size(d) one of them, d wrapped without a 0-d's scalar dim. */
static ti_status run_size(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "self");
	if (ti_call_is_none(call, "dim")) {
		ti_arg *items = ti_arena_calloc(call->ctx->arena, (size_t)t->ndim + 1, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a size");
		for (int i = 0; i < t->ndim; i++)
			items[i] = ti_arg_dim(t->shape[i]);
		return ti_call_output(call, ti_arg_list(items, t->ndim), err);
	}
	int64_t dim;
	ti_status st = need_int("dim", ti_call_arg(call, "dim"), &dim, err);
	if (st)
		return st;
	/* TensorImpl::size(d): maybe_wrap_dim(d, dim(), wrap_scalar=false) */
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
	int d;
	if ((st = ti_wrap_dim(dim, t->ndim, &d, err)))
		return st;
	return ti_call_output(call, ti_arg_dim(t->shape[d]), err);
}

static ti_status run_dim(ti_op_call *call, ti_error *err)
{
	return ti_call_output(call, ti_arg_int(ti_call_tensor(call, "self")->ndim), err);
}

static ti_status run_numel(ti_op_call *call, ti_error *err)
{
	return ti_call_output(call, ti_arg_dim(ti_meta_numel(call->ctx, ti_call_tensor(call, "self"))), err);
}

/* ---- getitem on a tuple or list ---- */

/* A slice's start, stop or step on a sequence: a plain int, or None (has = false). */
static ti_status slice_bound(const ti_arg *a, bool *has, int64_t *v, ti_error *err)
{
	*has = a->kind != TI_ARG_NONE;
	if (!*has)
		return TI_OK;
	if (a->kind != TI_ARG_INT && a->kind != TI_ARG_BOOL)
		return TI_FAIL(err, TI_E_CORRUPT, "slice indices must be integers or None or have an __index__ method");
	return need_int("a slice index", a, v, err);
}

/* PySlice_Unpack and PySlice_AdjustIndices: the items a Python slice takes from a sequence of length n. */
static ti_status sequence_slice(ti_op_call *call, const ti_arg *seq, const ti_arg *slice, ti_error *err)
{
	bool has[3];
	int64_t v[3] = {0, 0, 1}, n = seq->as.list.count;
	for (int i = 0; i < 3; i++) {
		ti_status st = slice_bound(&slice->as.list.items[i], &has[i], &v[i], err);
		if (st)
			return st;
	}
	int64_t step = has[2] ? v[2] : 1;
	if (step == 0)
		return TI_FAIL(err, TI_E_SHAPE, "slice step cannot be zero");
	int64_t start = has[0] ? v[0] : step < 0 ? INT64_MAX : 0;
	int64_t stop = has[1] ? v[1] : step < 0 ? INT64_MIN : INT64_MAX;
	int64_t *ends[2] = {&start, &stop};
	for (int i = 0; i < 2; i++) {
		int64_t *e = ends[i];
		if (*e < 0) {
			*e = *e < -n ? (step < 0 ? -1 : 0) : *e + n;
		} else if (*e >= n) {
			*e = step < 0 ? n - 1 : n;
		}
	}
	int64_t count = 0;
	if (step < 0 && stop < start)
		count = (start - stop - 1) / -step + 1;
	else if (step > 0 && start < stop)
		count = (stop - start - 1) / step + 1;
	ti_arg *items = ti_arena_calloc(call->ctx->arena, (size_t)count + 1, sizeof(*items));
	if (!items)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a slice");
	for (int64_t i = 0; i < count; i++)
		items[i] = seq->as.list.items[start + i * step];
	return ti_call_output(call, ti_arg_list(items, (int)count), err);
}

/* seq[index]: size()'s torch.Size, chunk's and split's tuples are tuples, hence "tuple index". */
static ti_status index_sequence(ti_op_call *call, const ti_arg *seq, const ti_arg *index, ti_error *err)
{
	if (index->kind == TI_ARG_SLICE)
		return sequence_slice(call, seq, index, err);
	if (index->kind != TI_ARG_INT && index->kind != TI_ARG_BOOL)
		return TI_FAIL(err, TI_E_CORRUPT, "tuple indices must be integers or slices, not %s", py_type(index));
	int64_t i;
	ti_status st = need_int("a tuple index", index, &i, err);
	if (st)
		return st;
	int64_t n = seq->as.list.count;
	if (i < -n || i >= n)
		return TI_FAIL(err, TI_E_SHAPE, "tuple index out of range");
	return ti_call_output(call, seq->as.list.items[i < 0 ? i + n : i], err);
}

/* ---- getitem on a tensor ---- */

/* The view being built: the input's geometry as each index item changes it. */
typedef struct view {
	int ndim;
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
} view;

/* An index tensor gathers: where it stands in the view, once the other items are applied. */
typedef struct gather {
	const ti_meta_tensor *index;
	int dim;
} gather;

/* applySelect: the index checked against the size (dim is the item's place in the index), then select. */
static ti_status apply_select(ti_shape_ctx *ctx, view *v, int dim, ti_dim index, int real_dim, ti_error *err)
{
	ti_symctx *s = ctx->sym;
	ti_dim size = v->shape[dim];
	if (!ti_dim_assume(s, ti_dim_sub(s, ti_dim_int(0), index), TI_CMP_LE, size) ||
	    !ti_dim_assume(s, index, TI_CMP_LT, size)) {
		char a[64], b[64];
		return TI_FAIL(err, TI_E_SHAPE, "index %s is out of bounds for dimension %d with size %s",
		               ti_dim_format(index, a, sizeof(a)), real_dim, ti_dim_format(size, b, sizeof(b)));
	}
	memmove(v->shape + dim, v->shape + dim + 1, (size_t)(v->ndim - dim - 1) * sizeof(*v->shape));
	memmove(v->stride + dim, v->stride + dim + 1, (size_t)(v->ndim - dim - 1) * sizeof(*v->stride));
	v->ndim--;
	return TI_OK;
}

/* A slice's start or stop on a tensor: an int (maybe symbolic), or None (has = false). */
static ti_status tensor_slice_bound(ti_shape_ctx *ctx, const ti_arg *a, bool *has, ti_dim *out, ti_error *err)
{
	number n;
	*has = a->kind != TI_ARG_NONE;
	if (!*has)
		return TI_OK;
	if (!to_number(ctx, a, &n) || n.is_float)
		return TI_FAIL(err, TI_E_CORRUPT, "slice indices must be integers or None or have an __index__ method");
	*out = n.i;
	return TI_OK;
}

/*
 * at::slice (TensorShape.cpp; _refs slice_forward): negative start and stop
 * count from the end, then both are clamped into [0, size] with stop >= start.
 * A clamp that depends on a symbolic size is assumed not to happen, and
 * recorded: x[:, :5] on T positions assumes T >= 5.
 */
static ti_status apply_slice(ti_shape_ctx *ctx, view *v, int dim, const ti_arg *slice, ti_error *err)
{
	ti_symctx *s = ctx->sym;
	bool has_start, has_stop, has_step;
	ti_dim start = ti_dim_int(0), stop = ti_dim_int(0), step = ti_dim_int(1);
	ti_status st = tensor_slice_bound(ctx, &slice->as.list.items[0], &has_start, &start, err);
	if (!st)
		st = tensor_slice_bound(ctx, &slice->as.list.items[1], &has_stop, &stop, err);
	if (!st)
		st = tensor_slice_bound(ctx, &slice->as.list.items[2], &has_step, &step, err);
	if (st)
		return st;
	if (!ti_dim_is_int(step))
		return TI_FAIL(err, TI_E_CORRUPT, "a slice's step must be an integer, not a symbolic size");
	/* PySlice_Unpack refuses a zero step; applySlice a negative one */
	if (step.value == 0)
		return TI_FAIL(err, TI_E_SHAPE, "slice step cannot be zero");
	if (step.value < 0)
		return TI_FAIL(err, TI_E_SHAPE, "step must be greater than zero");
	ti_dim size = v->shape[dim], zero = ti_dim_int(0);
	if (ti_dim_is_int(start) && start.value < 0)
		start = ti_dim_add(s, start, size);
	if (!has_stop)
		stop = size;
	else if (ti_dim_is_int(stop) && stop.value < 0)
		stop = ti_dim_add(s, stop, size);
	if (!ti_dim_assume(s, start, TI_CMP_GE, zero))
		start = zero;
	else if (!ti_dim_assume(s, start, TI_CMP_LE, size))
		start = size;
	if (!ti_dim_assume(s, stop, TI_CMP_GE, start))
		stop = start;
	else if (!ti_dim_assume(s, stop, TI_CMP_LE, size))
		stop = size;
	ti_dim len = ti_dim_sub(s, stop, start);
	v->shape[dim] = ti_dim_floordiv(s, ti_dim_add(s, len, ti_dim_int(step.value - 1)), step);
	v->stride[dim] = ti_dim_mul(s, v->stride[dim], step);
	return TI_OK;
}

/* unsqueeze at dim (inferUnsqueezeGeometry): the new dim's stride is the one that would follow it. */
static ti_status apply_none(ti_shape_ctx *ctx, view *v, int dim, ti_error *err)
{
	if (v->ndim == TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	ti_dim stride = dim >= v->ndim ? ti_dim_int(1) : ti_dim_mul(ctx->sym, v->shape[dim], v->stride[dim]);
	memmove(v->shape + dim + 1, v->shape + dim, (size_t)(v->ndim - dim) * sizeof(*v->shape));
	memmove(v->stride + dim + 1, v->stride + dim, (size_t)(v->ndim - dim) * sizeof(*v->stride));
	v->shape[dim] = ti_dim_int(1);
	v->stride[dim] = stride;
	v->ndim++;
	return TI_OK;
}

static const char because[] = ": the output shape depends on the values in the tensor, which meta tensors do not have";

/* An index tensor: integers gather (one such index is supported); a mask or a 0-d int needs the values. */
static ti_status apply_tensor(const ti_meta_tensor *index, int dim, gather *g, ti_error *err)
{
	ti_dtype dt = index->dtype;
	if (dt == TI_DT_BOOL || dt == TI_DT_UINT8)
		return TI_FAIL(err, TI_E_SHAPE, "indexing with a %s mask runs nonzero()%s",
		               dt == TI_DT_BOOL ? "bool" : "uint8", because);
	if (dt != TI_DT_INT64 && dt != TI_DT_INT32)
		return TI_FAIL(err, TI_E_SHAPE, "tensors used as indices must be long, int, byte or bool tensors");
	if (index->ndim == 0) /* handleDimInMultiDimIndexing selects at tensor.item() */
		return TI_FAIL(err, TI_E_SHAPE, "indexing with a 0-dim tensor selects at Tensor.item(), which meta "
		               "tensors do not have");
	if (g->index)
		return TI_FAIL(err, TI_E_CORRUPT, "unsupported index: more than one index tensor");
	g->index = index;
	g->dim = dim;
	return TI_OK;
}

/* A list of integers inside an index tuple (x[..., [-2], :]): PyTorch makes it a long tensor of its length. */
static bool is_int_list(const ti_arg *a)
{
	if (a->kind != TI_ARG_LIST || a->as.list.count < 1)
		return false;
	for (int i = 0; i < a->as.list.count; i++)
		if (a->as.list.items[i].kind != TI_ARG_INT)
			return false;
	return true;
}

/*
 * count_specified_dimensions: the dims the items consume (an int, a slice,
 * an integer tensor one each; a mask its own dims), so that Ellipsis can
 * skip the rest; -1 for an item that is no index.
 */
static int specified_dims(const ti_arg *items, int n)
{
	int count = 0;
	for (int i = 0; i < n; i++) {
		const ti_arg *a = &items[i];
		if (a->kind == TI_ARG_TENSOR) {
			ti_dtype dt = a->as.tensor->dtype;
			count += dt == TI_DT_BOOL || dt == TI_DT_UINT8 ? a->as.tensor->ndim : 1;
		} else if (a->kind == TI_ARG_INT || a->kind == TI_ARG_SLICE || is_int_list(a)) {
			count++;
		} else if (a->kind != TI_ARG_NONE && !is_ellipsis(a)) {
			return -1;
		}
	}
	return count;
}

/* The gathered result: the index's shape in place of the indexed dim, a new contiguous tensor. */
static ti_status output_gather(ti_op_call *call, const ti_meta_tensor *t, const view *v, const gather *g,
                               ti_error *err)
{
	if (v->ndim - 1 + g->index->ndim > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	ti_dim shape[TI_META_MAX_DIMS];
	int n = 0;
	for (int i = 0; i < v->ndim; i++) {
		if (i != g->dim) {
			shape[n++] = v->shape[i];
			continue;
		}
		for (int k = 0; k < g->index->ndim; k++)
			shape[n++] = g->index->shape[k];
	}
	ti_meta_tensor *out = ti_meta_new(call->ctx, t->dtype, n, shape);
	if (out)
		out->requires_grad = t->requires_grad;
	return ti_call_output_tensor(call, out, err);
}

/*
 * Tensor.__getitem__. A lone int or slice takes the short path (get_item's
 * simple types: no count of indices, a 0-d's own message); anything else
 * is a tuple, applySlicing's item by item, after the count check.
 */
static ti_status index_tensor(ti_op_call *call, const ti_meta_tensor *t, const ti_arg *index, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	bool tuple = index->kind == TI_ARG_LIST;
	const ti_arg *items = tuple ? index->as.list.items : index;
	int n = tuple ? index->as.list.count : 1;
	int specified = specified_dims(items, n);
	for (int i = 0; specified < 0 && i < n; i++)
		if (specified_dims(&items[i], 1) < 0)
			return TI_FAIL(err, TI_E_CORRUPT,
			               "unsupported index: only integers, slices (`:`), ellipsis (`...`), None and long or "
			               "byte Variables are valid indices (got %s)", py_type(&items[i]));
	if (!tuple && t->ndim == 0 && index->kind == TI_ARG_INT)
		return TI_FAIL(err, TI_E_SHAPE, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
		               "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
	if (!tuple && t->ndim == 0 && index->kind == TI_ARG_SLICE)
		return TI_FAIL(err, TI_E_SHAPE, "slice() cannot be applied to a 0-dim tensor.");
	if ((tuple || index->kind == TI_ARG_TENSOR) && specified > t->ndim)
		return TI_FAIL(err, TI_E_SHAPE, "too many indices for tensor of dimension %d", t->ndim);
	view v = {.ndim = t->ndim};
	memcpy(v.shape, t->shape, (size_t)t->ndim * sizeof(*v.shape));
	memcpy(v.stride, t->stride, (size_t)t->ndim * sizeof(*v.stride));
	gather g = {NULL, 0};
	int dim = 0;
	bool seen_ellipsis = false;
	for (int i = 0; i < n; i++) {
		const ti_arg *a = &items[i];
		ti_status st = TI_OK;
		if (a->kind == TI_ARG_INT) {
			st = apply_select(ctx, &v, dim, a->as.dim, i, err);
		} else if (a->kind == TI_ARG_SLICE) {
			st = apply_slice(ctx, &v, dim++, a, err);
		} else if (a->kind == TI_ARG_NONE) {
			st = apply_none(ctx, &v, dim++, err);
		} else if (a->kind == TI_ARG_TENSOR) {
			st = apply_tensor(a->as.tensor, dim++, &g, err);
		} else if (is_int_list(a)) {
			ti_dim len = ti_dim_int(a->as.list.count);
			for (int j = 0; j < a->as.list.count && dim < v.ndim && ti_dim_is_int(v.shape[dim]); j++) {
				int64_t at = a->as.list.items[j].as.dim.value, size = v.shape[dim].value;
				if (at < -size || at >= size)
					return TI_FAIL(err, TI_E_SHAPE, "index %lld is out of bounds for dimension %d with size %lld",
					               (long long)at, dim, (long long)size);
			}
			const ti_meta_tensor *list = ti_meta_new(ctx, TI_DT_INT64, 1, &len);
			if (!list)
				return TI_FAIL(err, TI_E_NOMEM, "out of memory");
			st = apply_tensor(list, dim++, &g, err);
		} else { /* Ellipsis */
			if (seen_ellipsis)
				return TI_FAIL(err, TI_E_SHAPE, "an index can only have a single ellipsis ('...')");
			seen_ellipsis = true;
			dim += t->ndim - specified;
		}
		if (st)
			return st;
	}
	if (g.index)
		return output_gather(call, t, &v, &g, err);
	/* a view, even of everything (x[...], x[:]): get_item returns an alias */
	return ti_call_output_tensor(call, ti_meta_view(ctx, t, v.ndim, v.shape, v.stride), err);
}

static ti_status run_getitem(ti_op_call *call, ti_error *err)
{
	const ti_arg *self = ti_call_arg(call, "self"), *index = ti_call_arg(call, "index");
	if (self->kind == TI_ARG_TENSOR)
		return index_tensor(call, self->as.tensor, index, err);
	if (self->kind == TI_ARG_LIST)
		return index_sequence(call, self, index, err);
	return TI_FAIL(err, TI_E_CORRUPT, "'%s' object is not subscriptable", py_type(self));
}

/*
 * x[index] = value (Tensor.__setitem__): in place. The indexed view takes
 * value as copy_ does, expanded to the view's shape (PyTorch's expand error
 * when it cannot be) and cast to its dtype; x itself is the result.
 */
static ti_status run_setitem(ti_op_call *call, ti_error *err)
{
	const ti_arg *self = ti_call_arg(call, "self"), *value = ti_call_arg(call, "value");
	ti_arg args[2] = {*self, *ti_call_arg(call, "index")};
	ti_op_call view;
	ti_status st = ti_call_op(call, "getitem", args, 2, &view, err);
	if (st)
		return st;
	if (value->kind == TI_ARG_TENSOR && view.output_count == 1 && view.outputs[0].kind == TI_ARG_TENSOR) {
		const ti_meta_tensor *dst = view.outputs[0].as.tensor;
		ti_arg sizes[TI_META_MAX_DIMS];
		for (int i = 0; i < dst->ndim; i++)
			sizes[i] = ti_arg_dim(dst->shape[i]);
		ti_arg expand[2] = {*value, ti_arg_list(sizes, dst->ndim)};
		ti_op_call expanded;
		if ((st = ti_call_op(call, "expand", expand, 2, &expanded, err)))
			return st;
	}
	return ti_call_output(call, *self, err);
}

/* ---- the operator module ---- */

typedef enum py_op {
	PY_ADD, PY_SUB, PY_MUL, PY_FLOORDIV, PY_MOD, PY_TRUEDIV, PY_POW,
	PY_EQ, PY_NE, PY_LT, PY_LE, PY_GT, PY_GE
} py_op;

static const struct {
	const char *name;
	const char *symbol; /* as Python's TypeError prints it */
	py_op op;
	ti_cmp cmp;         /* comparisons */
} py_ops[] = {
	{"operator.add", "+", PY_ADD, 0}, {"operator.sub", "-", PY_SUB, 0}, {"operator.mul", "*", PY_MUL, 0},
	{"operator.floordiv", "//", PY_FLOORDIV, 0}, {"operator.mod", "%", PY_MOD, 0},
	{"operator.truediv", "/", PY_TRUEDIV, 0}, {"operator.pow", "** or pow()", PY_POW, 0},
	{"operator.eq", "==", PY_EQ, TI_CMP_EQ}, {"operator.ne", "!=", PY_NE, TI_CMP_NE},
	{"operator.lt", "<", PY_LT, TI_CMP_LT}, {"operator.le", "<=", PY_LE, TI_CMP_LE},
	{"operator.gt", ">", PY_GT, TI_CMP_GT}, {"operator.ge", ">=", PY_GE, TI_CMP_GE},
};

static int py_op_index(const char *name)
{
	for (size_t i = 0; i < sizeof(py_ops) / sizeof(py_ops[0]); i++)
		if (!strcmp(py_ops[i].name, name))
			return (int)i;
	return 0;
}

static bool is_comparison(py_op op)
{
	return op >= PY_EQ;
}

/* Python's float // and % (floatobject.c float_divmod): the floor, and the remainder with the divisor's sign. */
static void float_divmod(double a, double b, double *div, double *mod)
{
	double m = fmod(a, b), d = (a - m) / b;
	if (m != 0) {
		if ((b < 0) != (m < 0)) {
			m += b;
			d -= 1.0;
		}
	} else {
		m = copysign(0.0, b);
	}
	if (d != 0) {
		double f = floor(d);
		if (d - f > 0.5)
			f += 1.0;
		d = f;
	} else {
		d = copysign(0.0, a / b);
	}
	*div = d;
	*mod = m;
}

static bool compare_floats(double a, ti_cmp cmp, double b)
{
	switch (cmp) {
	case TI_CMP_EQ: return a == b;
	case TI_CMP_NE: return a != b;
	case TI_CMP_LT: return a < b;
	case TI_CMP_LE: return a <= b;
	case TI_CMP_GT: return a > b;
	case TI_CMP_GE: return a >= b;
	}
	return false;
}

/* a ** b on ints: a non-negative exponent multiplies out (symbolic bases too); a negative one is a float. */
static ti_status int_pow(ti_shape_ctx *ctx, ti_dim a, ti_dim b, number *out, ti_error *err)
{
	char buf[64];
	if (!ti_dim_is_int(b))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a symbolic exponent %s has no value", ti_dim_format(b, buf, sizeof(buf)));
	if (b.value < 0) {
		number base = {false, a, 0};
		double f = 0;
		ti_status st = float_of(&base, &f, err);
		if (st)
			return st;
		if (f == 0)
			return TI_FAIL(err, TI_E_SHAPE, "0.0 cannot be raised to a negative power");
		*out = (number){true, ti_dim_int(0), pow(f, (double)b.value)};
		return TI_OK;
	}
	if (b.value > 64 && !ti_dim_is_int(a))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a symbolic size to the power %lld", (long long)b.value);
	ti_dim r = ti_dim_int(1);
	for (int64_t i = 0; i < b.value && ctx->sym->status == TI_OK; i++) {
		r = ti_dim_mul(ctx->sym, r, a);
		if (ti_dim_is_int(r) && (r.value == 0 || r.value == 1))
			break; /* 0 and 1 stay put; -1 does not, but alternates (handled by the loop) */
	}
	if (ti_dim_is_int(r) && r.value == 1 && ti_dim_is_int(a) && a.value == -1)
		r = ti_dim_int(b.value % 2 ? -1 : 1);
	*out = (number){false, r, 0};
	return TI_OK;
}

/* a OP b on ints (ti_dims): symbolic sizes stay symbolic; a comparison nobody can decide is assumed. */
static ti_status int_binary(ti_shape_ctx *ctx, py_op op, ti_cmp cmp, ti_dim a, ti_dim b, ti_arg *out, ti_error *err)
{
	ti_symctx *s = ctx->sym;
	bool zero = ti_dim_is_int(b) && b.value == 0;
	number n = {false, ti_dim_int(0), 0};
	switch (op) {
	case PY_ADD: n.i = ti_dim_add(s, a, b); break;
	case PY_SUB: n.i = ti_dim_sub(s, a, b); break;
	case PY_MUL: n.i = ti_dim_mul(s, a, b); break;
	case PY_FLOORDIV:
	case PY_MOD:
		if (zero)
			return TI_FAIL(err, TI_E_SHAPE, "integer division or modulo by zero");
		n.i = op == PY_FLOORDIV ? ti_dim_floordiv(s, a, b) : ti_dim_mod(s, a, b);
		break;
	case PY_TRUEDIV: {
		if (zero)
			return TI_FAIL(err, TI_E_SHAPE, "division by zero");
		number na = {false, a, 0}, nb = {false, b, 0};
		double fa = 0, fb = 0;
		ti_status st = float_of(&na, &fa, err);
		if (!st)
			st = float_of(&nb, &fb, err);
		if (st)
			return st;
		n = (number){true, ti_dim_int(0), fa / fb};
		break;
	}
	case PY_POW: {
		ti_status st = int_pow(ctx, a, b, &n, err);
		if (st)
			return st;
		break;
	}
	default:
		*out = ti_arg_bool(ti_dim_assume(s, a, cmp, b));
		return TI_OK;
	}
	*out = n.is_float ? ti_arg_float(n.f) : ti_arg_dim(n.i);
	return TI_OK;
}

/* a OP b with a float among them: Python's float arithmetic, with its ZeroDivisionError wording. */
static ti_status float_binary(py_op op, ti_cmp cmp, double a, double b, ti_arg *out, ti_error *err)
{
	double div, mod;
	if (is_comparison(op)) {
		*out = ti_arg_bool(compare_floats(a, cmp, b));
		return TI_OK;
	}
	if (b == 0 && (op == PY_FLOORDIV || op == PY_MOD || op == PY_TRUEDIV)) {
		static const char *const words[] = {
			[PY_FLOORDIV] = "float floor division by zero", [PY_MOD] = "float modulo",
			[PY_TRUEDIV] = "float division by zero",
		};
		return TI_FAIL(err, TI_E_SHAPE, "%s", words[op]);
	}
	if (op == PY_POW && a == 0 && b < 0)
		return TI_FAIL(err, TI_E_SHAPE, "0.0 cannot be raised to a negative power");
	if (op == PY_POW && a < 0 && b != floor(b))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a negative number to a fractional power is complex");
	double r = 0;
	switch (op) {
	case PY_ADD: r = a + b; break;
	case PY_SUB: r = a - b; break;
	case PY_MUL: r = a * b; break;
	case PY_TRUEDIV: r = a / b; break;
	case PY_FLOORDIV: float_divmod(a, b, &div, &mod); r = div; break;
	case PY_MOD: float_divmod(a, b, &div, &mod); r = mod; break;
	case PY_POW: r = pow(a, b); break;
	default: break;
	}
	*out = ti_arg_float(r);
	return TI_OK;
}

/* == and != between things that are not numbers: None, str, dtypes compare; other kinds are unequal. */
static bool same_object(const ti_arg *a, const ti_arg *b)
{
	bool none_a = a->kind == TI_ARG_NONE || a->kind == TI_ARG_ABSENT;
	bool none_b = b->kind == TI_ARG_NONE || b->kind == TI_ARG_ABSENT;
	if (none_a || none_b)
		return none_a && none_b;
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case TI_ARG_STR: return !strcmp(a->as.str, b->as.str);
	case TI_ARG_DTYPE: return a->as.dtype == b->as.dtype;
	case TI_ARG_TENSOR: return a->as.tensor == b->as.tensor;
	default: return false;
	}
}

static ti_status run_binary(ti_op_call *call, ti_error *err)
{
	int k = py_op_index(call->rule->parsed->name);
	py_op op = py_ops[k].op;
	ti_cmp cmp = py_ops[k].cmp;
	const ti_arg *a = ti_call_arg(call, "a"), *b = ti_call_arg(call, "b");
	number na, nb;
	ti_arg out;
	ti_status st;
	if (!to_number(call->ctx, a, &na) || !to_number(call->ctx, b, &nb)) {
		if (op == PY_EQ || op == PY_NE)
			return ti_call_output(call, ti_arg_bool(same_object(a, b) == (op == PY_EQ)), err);
		if (is_comparison(op))
			return TI_FAIL(err, TI_E_CORRUPT, "'%s' not supported between instances of '%s' and '%s'",
			               py_ops[k].symbol, py_type(a), py_type(b));
		return TI_FAIL(err, TI_E_CORRUPT, "unsupported operand type(s) for %s: '%s' and '%s'", py_ops[k].symbol,
		               py_type(a), py_type(b));
	}
	if (!na.is_float && !nb.is_float) {
		st = int_binary(call->ctx, op, cmp, na.i, nb.i, &out, err);
	} else {
		double fa = 0, fb = 0;
		st = float_of(&na, &fa, err);
		if (!st)
			st = float_of(&nb, &fb, err);
		if (!st)
			st = float_binary(op, cmp, fa, fb, &out, err);
	}
	return st ? st : ti_call_output(call, out, err);
}

static ti_status run_neg(ti_op_call *call, ti_error *err)
{
	const ti_arg *a = ti_call_arg(call, "a");
	number n;
	if (!to_number(call->ctx, a, &n))
		return TI_FAIL(err, TI_E_CORRUPT, "bad operand type for unary -: '%s'", py_type(a));
	if (n.is_float)
		n.f = -n.f;
	else
		n.i = ti_dim_sub(call->ctx->sym, ti_dim_int(0), n.i);
	return output_number(call, &n, err);
}

/* ---- torch._assert ---- */

/*
 * torch._assert(condition, message): AssertionError(message) when the
 * condition is falsy. An int's truth is != 0 (a symbolic size is assumed
 * non-zero); a tensor's needs its value, which a meta tensor has not.
 */
static ti_status run_assert(ti_op_call *call, ti_error *err)
{
	const ti_arg *c = ti_call_arg(call, "condition");
	const char *message = ti_call_str(call, "message");
	bool truth;
	switch (c->kind) {
	case TI_ARG_BOOL: truth = c->as.boolean; break;
	case TI_ARG_INT: truth = ti_dim_assume(call->ctx->sym, c->as.dim, TI_CMP_NE, ti_dim_int(0)); break;
	case TI_ARG_FLOAT: truth = c->as.real != 0; break;
	case TI_ARG_NONE: case TI_ARG_ABSENT: truth = false; break;
	case TI_ARG_LIST: truth = c->as.list.count > 0; break;
	case TI_ARG_STR: truth = c->as.str[0] != '\0'; break;
	case TI_ARG_TENSOR:
		return TI_FAIL(err, TI_E_SHAPE, "torch._assert on a tensor reads its value (Tensor.item()), which meta "
		               "tensors do not have");
	default: truth = true; break;
	}
	if (!truth)
		return TI_FAIL(err, TI_E_SHAPE, "%s", message ? message : "");
	return TI_OK;
}

/* ---- the table ---- */

#define BINARY(name) name "(Any a, Any b)"

ti_op_rule ti_ops_python[] = {
	{"size(Tensor self, int? dim=None)", run_size, TI_COUNT_FREE, NULL},
	{"dim(Tensor self)", run_dim, TI_COUNT_FREE, NULL},
	{"numel(Tensor self)", run_numel, TI_COUNT_FREE, NULL},
	{"getitem(Any self, Any index)", run_getitem, TI_COUNT_FREE, NULL},
	{"operator.getitem(Any self, Any index)", run_getitem, TI_COUNT_FREE, NULL},
	{"setitem(Tensor self, Any index, Tensor|Scalar value)", run_setitem, TI_COUNT_FREE, NULL},
	{"operator.setitem(Tensor self, Any index, Tensor|Scalar value)", run_setitem, TI_COUNT_FREE, NULL},
	{BINARY("operator.add"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.sub"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.mul"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.floordiv"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.mod"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.truediv"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.pow"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.eq"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.ne"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.lt"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.le"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.gt"), run_binary, TI_COUNT_FREE, NULL},
	{BINARY("operator.ge"), run_binary, TI_COUNT_FREE, NULL},
	{"operator.neg(Any a)", run_neg, TI_COUNT_FREE, NULL},
	{"_assert(Any condition, str message)", run_assert, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
