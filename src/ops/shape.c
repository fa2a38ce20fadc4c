/*
 * shape.c - views and shape changes: view, reshape, permute, transpose,
 * squeeze, unsqueeze, flatten, unflatten, expand, repeat, tile, movedim,
 * flip, roll, contiguous.
 *
 * A view shares its input's storage, so its strides are computed as PyTorch
 * computes them (aten/src/ATen/native/TensorShape.cpp, TensorUtils.cpp): a
 * later view then fails exactly where PyTorch's would. Copies (reshape of a
 * tensor that cannot be viewed, contiguous, repeat, roll) are contiguous;
 * flip keeps its input's layout as empty_like does. None of these does
 * arithmetic, so every row counts as free.
 *
 * Symbolic sizes: a symbol is taken to be a generic size, not 1 (squeeze
 * records that as an assumption), and sizes that must agree are assumed
 * equal when they cannot be proved different.
 */
#include <stdio.h>
#include <string.h>

#include "ops/tables.h"

/* ---- helpers ---- */

static bool dim_is(ti_dim d, int64_t v)
{
	return ti_dim_is_int(d) && d.value == v;
}

/* An axis, count or shift must be a number: a symbolic size there is a bad description. */
static ti_status need_int(const char *what, ti_dim d, int64_t *out, ti_error *err)
{
	char buf[64];
	if (!ti_dim_is_int(d))
		return TI_FAIL(err, TI_E_CORRUPT, "argument '%s' must be an integer, not the symbolic size %s",
		               what, ti_dim_format(d, buf, sizeof(buf)));
	*out = d.value;
	return TI_OK;
}

static ti_status wrap_arg(const char *what, ti_dim d, int ndim, int *out, ti_error *err)
{
	int64_t v = 0;
	ti_status st = need_int(what, d, &v, err);
	return st ? st : ti_wrap_dim(v, ndim, out, err);
}

/* The sizes of an int list argument (the binder made every item a TI_ARG_INT). */
static ti_status list_dims(const ti_arg *items, int n, ti_dim *out, ti_error *err)
{
	if (n > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	for (int i = 0; i < n; i++)
		out[i] = items[i].as.dim;
	return TI_OK;
}

/* An int|int[] argument as a list: a single int is a list of one. */
static const ti_arg *as_list(const ti_arg *a, int *n)
{
	if (a->kind == TI_ARG_LIST) {
		*n = a->as.list.count;
		return a->as.list.items;
	}
	*n = a->kind == TI_ARG_INT ? 1 : 0;
	return a;
}

/* A new tensor (a copy) computed from base: its dtype, and requires_grad as autograd gives it. */
static ti_meta_tensor *new_like(ti_shape_ctx *ctx, const ti_meta_tensor *base, int ndim, const ti_dim *shape)
{
	ti_meta_tensor *t = ti_meta_new(ctx, base->dtype, ndim, shape);
	if (t)
		t->requires_grad = base->requires_grad;
	return t;
}

static ti_status output_view(ti_op_call *call, const ti_meta_tensor *base, int ndim, const ti_dim *shape,
                             const ti_dim *stride, ti_error *err)
{
	return ti_call_output_tensor(call, ti_meta_view(call->ctx, base, ndim, shape, stride), err);
}

static ti_status output_copy(ti_op_call *call, const ti_meta_tensor *base, int ndim, const ti_dim *shape,
                             ti_error *err)
{
	return ti_call_output_tensor(call, new_like(call->ctx, base, ndim, shape), err);
}

/* "torch.FloatTensor", as Tensor::toString() names a CPU tensor's type in messages. */
static const char *tensor_type_name(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	return ti_arena_printf(ctx->arena, "torch.%sTensor", ti_dtype_torch_name(t->dtype));
}

/* ---- view and reshape ---- */

static ti_status invalid_shape(ti_shape_ctx *ctx, int n, const ti_dim *shape, ti_dim numel, ti_error *err)
{
	char buf[64];
	return TI_FAIL(err, TI_E_SHAPE, "shape '%s' is invalid for input of size %s", ti_shape_str(ctx, n, shape),
	               ti_dim_format(numel, buf, sizeof(buf)));
}

/*
 * The sizes of a view with at most one -1 (aten/src/ATen/InferSize.h,
 * infer_size_impl). *assumed is the index of a -1 whose size rests on an
 * assumed divisibility, or -1.
 */
static ti_status infer_size(ti_shape_ctx *ctx, int n, const ti_dim *shape, ti_dim numel, ti_dim *out,
                            int *assumed, ti_error *err)
{
	ti_symctx *s = ctx->sym;
	ti_dim newsize = ti_dim_int(1);
	int infer = -1;
	*assumed = -1;
	for (int i = 0; i < n; i++) {
		out[i] = shape[i];
		if (dim_is(shape[i], -1)) {
			if (infer >= 0)
				return TI_FAIL(err, TI_E_SHAPE, "only one dimension can be inferred");
			infer = i;
		} else if (ti_dim_is_int(shape[i]) && shape[i].value < 0) {
			return TI_FAIL(err, TI_E_SHAPE, "invalid shape dimension %lld", (long long)shape[i].value);
		} else {
			newsize = ti_dim_mul(s, newsize, shape[i]);
		}
	}
	if (infer < 0)
		return ti_dim_assume(s, numel, TI_CMP_EQ, newsize) ? TI_OK : invalid_shape(ctx, n, shape, numel, err);
	if (dim_is(newsize, 0)) {
		if (!dim_is(numel, 0))
			return invalid_shape(ctx, n, shape, numel, err);
		return TI_FAIL(err, TI_E_SHAPE,
		               "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension "
		               "size -1 can be any value and is ambiguous", ti_shape_str(ctx, n, shape));
	}
	bool exact;
	ti_dim q = ti_dim_exactdiv(s, numel, newsize, &exact);
	if (!exact) {
		char a[64], b[64];
		if (!ti_dim_is_int(newsize))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "cannot infer the -1 in shape '%s': %s is not a multiple of %s",
			               ti_shape_str(ctx, n, shape), ti_dim_format(numel, a, sizeof(a)),
			               ti_dim_format(newsize, b, sizeof(b)));
		/* 6*N elements as [-1, 4]: right when N is even, which is assumed */
		if (!ti_dim_assume(s, ti_dim_mod(s, numel, newsize), TI_CMP_EQ, ti_dim_int(0)))
			return invalid_shape(ctx, n, shape, numel, err);
		q = ti_dim_floordiv(s, numel, newsize);
		*assumed = infer;
	}
	out[infer] = q;
	return TI_OK;
}

/* a < b, or, when that cannot be decided, a is a partial product of b that is not yet all of it. */
static bool less_than(ti_symctx *s, ti_dim a, ti_dim b)
{
	ti_truth lt = ti_dim_compare(s, a, TI_CMP_LT, b);
	return lt == TI_UNKNOWN ? !ti_dim_same(a, b) : lt == TI_TRUE;
}

/*
 * The strides of t viewed as newshape, or false when the view would need a
 * copy: aten/src/ATen/TensorUtils.cpp computeStride_impl. The old shape is
 * cut into chunks of dims that are contiguous with each other; each chunk
 * must be covered exactly by consecutive new dims. A chunk that takes the new
 * dim `assumed` (sized by an assumed division) is assumed covered, as the
 * division was.
 */
static bool compute_stride(ti_shape_ctx *ctx, const ti_meta_tensor *t, int n, const ti_dim *newshape,
                           int assumed, ti_dim *newstride)
{
	ti_symctx *s = ctx->sym;
	if (t->ndim == 0) {
		for (int i = 0; i < n; i++)
			newstride[i] = ti_dim_int(1);
		return true;
	}
	ti_dim numel = ti_meta_numel(ctx, t);
	if (dim_is(numel, 0)) {
		/* strides are arbitrary when there is no element: NumPy's choice */
		bool same = n == t->ndim;
		for (int i = 0; same && i < n; i++)
			same = ti_dim_same(t->shape[i], newshape[i]);
		if (same)
			memcpy(newstride, t->stride, (size_t)n * sizeof(*newstride));
		else
			ti_contiguous_strides(ctx, n, newshape, newstride);
		return true;
	}
	int view_d = n - 1;
	ti_dim chunk_base_stride = t->stride[t->ndim - 1];
	ti_dim tensor_numel = ti_dim_int(1), view_numel = ti_dim_int(1);
	for (int tensor_d = t->ndim - 1; tensor_d >= 0; tensor_d--) {
		tensor_numel = ti_dim_mul(s, tensor_numel, t->shape[tensor_d]);
		bool chunk_ends = tensor_d == 0 ||
		                  (!dim_is(t->shape[tensor_d - 1], 1) &&
		                   !ti_dim_same(t->stride[tensor_d - 1], ti_dim_mul(s, tensor_numel, chunk_base_stride)));
		if (!chunk_ends)
			continue;
		bool takes_assumed = false;
		while (view_d >= 0 && (less_than(s, view_numel, tensor_numel) || dim_is(newshape[view_d], 1))) {
			newstride[view_d] = ti_dim_mul(s, view_numel, chunk_base_stride);
			view_numel = ti_dim_mul(s, view_numel, newshape[view_d]);
			takes_assumed |= view_d == assumed;
			view_d--;
		}
		if (!ti_dim_same(view_numel, tensor_numel) &&
		    !(takes_assumed && ti_dim_assume(s, view_numel, TI_CMP_EQ, tensor_numel)))
			return false;
		if (tensor_d > 0) {
			chunk_base_stride = t->stride[tensor_d - 1];
			tensor_numel = ti_dim_int(1);
			view_numel = ti_dim_int(1);
		}
	}
	return view_d == -1;
}

/* view (view_only) or reshape of t to the requested sizes, which may hold one -1. */
static ti_status reshape_to(ti_op_call *call, const ti_meta_tensor *t, int n, const ti_dim *requested,
                            bool view_only, ti_error *err)
{
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	int assumed;
	ti_status st = infer_size(call->ctx, n, requested, ti_meta_numel(call->ctx, t), shape, &assumed, err);
	if (st)
		return st;
	if (compute_stride(call->ctx, t, n, shape, assumed, stride))
		return output_view(call, t, n, shape, stride, err);
	if (view_only)
		return TI_FAIL(err, TI_E_SHAPE,
		               "view size is not compatible with input tensor's size and stride (at least one dimension "
		               "spans across two contiguous subspaces). Use .reshape(...) instead.");
	/* reshape: _unsafe_view(self.clone(at::MemoryFormat::Contiguous), shape) */
	return output_copy(call, t, n, shape, err);
}

/* view(self, size...) and reshape(input, shape...): the tensor is argument 0, the sizes argument 1. */
static ti_status reshape_by_list(ti_op_call *call, bool view_only, ti_error *err)
{
	ti_dim sizes[TI_META_MAX_DIMS];
	const ti_arg *list = &call->in.args[1];
	ti_status st = list_dims(list->as.list.items, list->as.list.count, sizes, err);
	return st ? st : reshape_to(call, call->in.args[0].as.tensor, list->as.list.count, sizes, view_only, err);
}

static ti_status run_view(ti_op_call *call, ti_error *err)
{
	/* x.view(torch.float16) reinterprets the bytes: the binder read the dtype's name as a symbolic size */
	const ti_arg *size = &call->in.args[1];
	char name[64];
	if (size->as.list.count == 1 && !ti_dim_is_int(size->as.list.items[0].as.dim) &&
	    ti_dtype_from_torch_name(ti_dim_format(size->as.list.items[0].as.dim, name, sizeof(name))))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "view(dtype) is not supported: '%s' is read as a dtype", name);
	return reshape_by_list(call, true, err);
}

static ti_status run_reshape(ti_op_call *call, ti_error *err)
{
	return reshape_by_list(call, false, err);
}

static ti_status run_view_as(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *other = ti_call_tensor(call, "other");
	return reshape_to(call, ti_call_tensor(call, "self"), other->ndim, other->shape, true, err);
}

static ti_status run_reshape_as(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *other = ti_call_tensor(call, "other");
	return reshape_to(call, ti_call_tensor(call, "self"), other->ndim, other->shape, false, err);
}

/* ravel: contiguous().view(-1) */
static ti_status run_ravel(ti_op_call *call, ti_error *err)
{
	ti_dim minus_one = ti_dim_int(-1);
	return reshape_to(call, ti_call_tensor(call, "input"), 1, &minus_one, false, err);
}

/* flatten (TensorShape.cpp): the dims start..end become one; a view when possible, as reshape. */
static ti_status run_flatten(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int start, end;
	ti_status st = wrap_arg("start_dim", ti_call_dim(call, "start_dim"), t->ndim, &start, err);
	if (!st)
		st = wrap_arg("end_dim", ti_call_dim(call, "end_dim"), t->ndim, &end, err);
	if (st)
		return st;
	if (start > end)
		return TI_FAIL(err, TI_E_SHAPE, "flatten() has invalid args: start_dim cannot come after end_dim");
	if (t->ndim == 0) {
		ti_dim one = ti_dim_int(1);
		return reshape_to(call, t, 1, &one, false, err);
	}
	if (start == end)
		return ti_call_output_tensor(call, t, err);
	ti_dim shape[TI_META_MAX_DIMS];
	int n = 0;
	for (int i = 0; i < t->ndim; i++) {
		if (i <= start || i > end)
			shape[n++] = t->shape[i];
		else
			shape[n - 1] = ti_dim_mul(call->ctx->sym, shape[n - 1], t->shape[i]);
	}
	return reshape_to(call, t, n, shape, false, err);
}

/* unflatten (TensorShape.cpp): dim becomes sizes, with infer_size's errors reworded. */
static ti_status run_unflatten(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int d, count;
	const ti_arg *items = ti_call_list(call, "sizes", &count);
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &d, err);
	if (st)
		return st;
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "Dimension specified as 0 but tensor has no dimensions");
	if (count == 0)
		return TI_FAIL(err, TI_E_SHAPE, "unflatten: sizes must be non-empty");
	if (t->ndim - 1 + count > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	ti_dim sizes[TI_META_MAX_DIMS], shape[TI_META_MAX_DIMS];
	if ((st = list_dims(items, count, sizes, err)))
		return st;
	int assumed;
	st = infer_size(call->ctx, count, sizes, t->shape[d], shape + d, &assumed, err);
	/* handle_unflatten_exception: infer_size's std::runtime_errors are reworded */
	if (st == TI_E_SHAPE && strstr(err->message, "is invalid for input of size")) {
		char buf[64];
		return TI_FAIL(err, TI_E_SHAPE,
		               "unflatten: Provided sizes %s don't multiply up to the size of dim %d (%s) in the input tensor",
		               ti_shape_str(call->ctx, count, sizes), d, ti_dim_format(t->shape[d], buf, sizeof(buf)));
	}
	if (st == TI_E_SHAPE && !strcmp(err->message, "only one dimension can be inferred"))
		return TI_FAIL(err, TI_E_SHAPE, "unflatten got an unexpected error:\nonly one dimension can be inferred");
	if (st)
		return st;
	memcpy(shape, t->shape, (size_t)d * sizeof(*shape));
	memcpy(shape + d + count, t->shape + d + 1, (size_t)(t->ndim - d - 1) * sizeof(*shape));
	return reshape_to(call, t, t->ndim - 1 + count, shape, true, err);
}

/* ---- reordering dims ---- */

static ti_status run_permute(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int n;
	const ti_arg *dims = ti_call_list(call, "dims", &n);
	if (n != t->ndim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "permute(sparse_coo): number of dimensions in the tensor input does not match the length "
		               "of the desired ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d",
		               t->ndim, n);
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	bool seen[TI_META_MAX_DIMS] = {0};
	for (int i = 0; i < n; i++) {
		int d;
		ti_status st = wrap_arg("dims", dims[i].as.dim, t->ndim, &d, err);
		if (st)
			return st;
		if (seen[d])
			return TI_FAIL(err, TI_E_SHAPE, "permute(): duplicate dims are not allowed.");
		seen[d] = true;
		shape[i] = t->shape[d];
		stride[i] = t->stride[d];
	}
	return output_view(call, t, n, shape, stride, err);
}

/* t with dims a and b exchanged (already wrapped). */
static ti_status swap_dims(ti_op_call *call, const ti_meta_tensor *t, int a, int b, ti_error *err)
{
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	memcpy(stride, t->stride, (size_t)t->ndim * sizeof(*stride));
	if (t->ndim > 0) {
		shape[a] = t->shape[b], shape[b] = t->shape[a];
		stride[a] = t->stride[b], stride[b] = t->stride[a];
	}
	return output_view(call, t, t->ndim, shape, stride, err);
}

/* transpose(input, dim0, dim1) and its aliases swapaxes(axis0, axis1), swapdims: read by position. */
static ti_status run_transpose(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = call->in.args[0].as.tensor;
	const ti_signature *sig = call->in.sig;
	int a, b;
	ti_status st = wrap_arg(sig->params[1].name, call->in.args[1].as.dim, t->ndim, &a, err);
	if (!st)
		st = wrap_arg(sig->params[2].name, call->in.args[2].as.dim, t->ndim, &b, err);
	return st ? st : swap_dims(call, t, a, b, err);
}

static ti_status run_t(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	if (t->ndim > 2)
		return TI_FAIL(err, TI_E_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is %dD", t->ndim);
	return swap_dims(call, t, 0, t->ndim == 2 ? 1 : 0, err);
}

static ti_status run_mT(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "self");
	if (t->ndim < 2)
		return TI_FAIL(err, TI_E_SHAPE,
		               "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.", t->ndim);
	return swap_dims(call, t, t->ndim - 2, t->ndim - 1, err);
}

/* movedim (TensorShape.cpp): source dims go to destination, the others keep their order. */
static ti_status run_movedim(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = call->in.args[0].as.tensor;
	int ns, nd;
	const ti_arg *src = as_list(&call->in.args[1], &ns), *dst = as_list(&call->in.args[2], &nd);
	ti_dim src_dims[TI_META_MAX_DIMS], dst_dims[TI_META_MAX_DIMS];
	ti_status st = list_dims(src, ns, src_dims, err);
	if (!st)
		st = list_dims(dst, nd, dst_dims, err);
	if (st)
		return st;
	if (ns != nd)
		return TI_FAIL(err, TI_E_SHAPE,
		               "movedim: Invalid source or destination dims: source (%s dims) should contain the same "
		               "number of dims as destination (%s dims)",
		               ti_shape_str(call->ctx, ns, src_dims), ti_shape_str(call->ctx, nd, dst_dims));
	int from[TI_META_MAX_DIMS], to[TI_META_MAX_DIMS];
	for (int i = 0; i < ns; i++)
		if ((st = wrap_arg("source", src_dims[i], t->ndim, &from[i], err)))
			return st;
	for (int i = 0; i < nd; i++)
		if ((st = wrap_arg("destination", dst_dims[i], t->ndim, &to[i], err)))
			return st;
	bool src_used[TI_META_MAX_DIMS] = {0}, dst_used[TI_META_MAX_DIMS] = {0};
	for (int i = 0; i < ns; i++) {
		if (src_used[from[i]])
			return TI_FAIL(err, TI_E_SHAPE, "movedim: repeated dim in `source` (%s)",
			               ti_shape_str(call->ctx, ns, src_dims));
		src_used[from[i]] = true;
	}
	for (int i = 0; i < nd; i++) {
		if (dst_used[to[i]])
			return TI_FAIL(err, TI_E_SHAPE, "movedim: repeated dim in `destination` (%s)",
			               ti_shape_str(call->ctx, nd, dst_dims));
		dst_used[to[i]] = true;
	}
	if (t->ndim == 0)
		return ti_call_output_tensor(call, t, err);
	int order[TI_META_MAX_DIMS];
	for (int i = 0; i < ns; i++)
		order[to[i]] = from[i];
	for (int i = 0, next = 0; i < t->ndim; i++) {
		if (dst_used[i])
			continue;
		while (src_used[next])
			next++;
		order[i] = next++;
	}
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	for (int i = 0; i < t->ndim; i++) {
		shape[i] = t->shape[order[i]];
		stride[i] = t->stride[order[i]];
	}
	return output_view(call, t, t->ndim, shape, stride, err);
}

/* ---- adding and removing size-1 dims ---- */

/* dim_list_to_bitset (aten/src/ATen/WrapDimUtilsMulti.h): wrapped dims, each at most once. */
static ti_status dim_set(const char *what, const ti_arg *items, int n, int ndim, bool *set, ti_error *err)
{
	for (int i = 0; i < n; i++) {
		int d;
		ti_status st = wrap_arg(what, items[i].as.dim, ndim, &d, err);
		if (st)
			return st;
		if (set[d])
			return TI_FAIL(err, TI_E_SHAPE, "dim %d appears multiple times in the list of dims", d);
		set[d] = true;
	}
	return TI_OK;
}

/* squeeze(), squeeze(dim), squeeze(dims): only dims of size 1 go; a symbolic size is assumed not 1. */
static ti_status run_squeeze(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	bool chosen[TI_META_MAX_DIMS] = {0};
	if (ti_call_is_none(call, "dim")) {
		for (int i = 0; i < t->ndim; i++)
			chosen[i] = true;
	} else {
		int n;
		const ti_arg *items = as_list(ti_call_arg(call, "dim"), &n);
		ti_status st = dim_set("dim", items, n, t->ndim, chosen, err);
		if (st)
			return st;
	}
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	int n = 0;
	for (int i = 0; i < t->ndim; i++) {
		bool one = dim_is(t->shape[i], 1) ||
		           (chosen[i] && !ti_dim_is_int(t->shape[i]) &&
		            !ti_dim_assume(call->ctx->sym, t->shape[i], TI_CMP_NE, ti_dim_int(1)));
		if (chosen[i] && one)
			continue;
		shape[n] = t->shape[i];
		stride[n++] = t->stride[i];
	}
	return output_view(call, t, n, shape, stride, err);
}

static ti_status run_unsqueeze(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int d;
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim + 1, &d, err);
	if (st)
		return st;
	if (t->ndim + 1 > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	for (int i = 0, j = 0; i <= t->ndim; i++) {
		if (i == d) {
			/* inferUnsqueezeGeometry: the stride that would follow the dim after it */
			shape[i] = ti_dim_int(1);
			stride[i] = d >= t->ndim ? ti_dim_int(1) : ti_dim_mul(call->ctx->sym, t->shape[d], t->stride[d]);
			continue;
		}
		shape[i] = t->shape[j];
		stride[i] = t->stride[j++];
	}
	return output_view(call, t, t->ndim + 1, shape, stride, err);
}

/* ---- expand, repeat, tile ---- */

/*
 * inferExpandGeometry (aten/src/ATen/ExpandUtils.cpp): sizes align from the
 * right; -1 keeps a size; a size-1 dim (or a new leading dim) takes the target
 * size with stride 0.
 */
static ti_status expand_to(ti_op_call *call, const ti_meta_tensor *t, int n, const ti_dim *sizes, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	if (n < t->ndim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "expand(%s{%s}, size=%s): the number of sizes provided (%d) must be greater or equal to the "
		               "number of dimensions in the tensor (%d)", tensor_type_name(ctx, t),
		               ti_meta_shape_str(ctx, t), ti_shape_str(ctx, n, sizes), n, t->ndim);
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	for (int i = n - 1; i >= 0; i--) {
		int d = t->ndim - n + i;
		ti_dim size = d >= 0 ? t->shape[d] : ti_dim_int(1);
		ti_dim target = sizes[i];
		stride[i] = d >= 0 ? t->stride[d] : t->ndim == 0 ? ti_dim_int(0)
		                                                 : ti_dim_mul(ctx->sym, shape[i + 1], stride[i + 1]);
		if (dim_is(target, -1)) {
			if (d < 0)
				return TI_FAIL(err, TI_E_SHAPE,
				               "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension %d", i);
			target = size;
		}
		if (ti_dim_is_int(target) && target.value < 0)
			return TI_FAIL(err, TI_E_SHAPE, "numel: integer multiplication overflow");
		if (!ti_dim_same(size, target)) {
			if (dim_is(size, 1)) {
				size = target;
				stride[i] = ti_dim_int(0);
			} else if ((ti_dim_is_int(size) && ti_dim_is_int(target)) ||
			           !ti_dim_assume(ctx->sym, size, TI_CMP_EQ, target)) {
				char a[64], b[64];
				return TI_FAIL(err, TI_E_SHAPE,
				               "The expanded size of the tensor (%s) must match the existing size (%s) at "
				               "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
				               ti_dim_format(target, a, sizeof(a)), ti_dim_format(size, b, sizeof(b)), i,
				               ti_shape_str(ctx, n, sizes), ti_meta_shape_str(ctx, t));
			} else if (ti_dim_is_int(target)) {
				size = target; /* T assumed equal to 5: 5 is the better name */
			}
		}
		shape[i] = size;
	}
	return output_view(call, t, n, shape, stride, err);
}

static ti_status run_expand(ti_op_call *call, ti_error *err)
{
	ti_dim sizes[TI_META_MAX_DIMS];
	const ti_arg *list = &call->in.args[1];
	ti_status st = list_dims(list->as.list.items, list->as.list.count, sizes, err);
	return st ? st : expand_to(call, call->in.args[0].as.tensor, list->as.list.count, sizes, err);
}

static ti_status run_expand_as(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *other = ti_call_tensor(call, "other");
	return expand_to(call, ti_call_tensor(call, "self"), other->ndim, other->shape, err);
}

/* repeat (TensorShape.cpp): new leading dims of size 1, then every size times its count. */
static ti_status repeat_by(ti_op_call *call, const ti_meta_tensor *t, int n, const ti_dim *repeats, ti_error *err)
{
	if (n < t->ndim)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
	ti_dim shape[TI_META_MAX_DIMS];
	for (int i = 0; i < n; i++) {
		int d = t->ndim - n + i;
		shape[i] = ti_dim_mul(call->ctx->sym, d >= 0 ? t->shape[d] : ti_dim_int(1), repeats[i]);
	}
	for (int i = 0; i < n; i++)
		if (ti_dim_is_int(shape[i]) && shape[i].value < 0)
			return TI_FAIL(err, TI_E_SHAPE, "Trying to create tensor with negative dimension %lld: %s",
			               (long long)shape[i].value, ti_shape_str(call->ctx, n, shape));
	return output_copy(call, t, n, shape, err);
}

static ti_status run_repeat(ti_op_call *call, ti_error *err)
{
	ti_dim repeats[TI_META_MAX_DIMS];
	int n;
	const ti_arg *items = ti_call_list(call, "repeats", &n);
	ti_status st = list_dims(items, n, repeats, err);
	return st ? st : repeat_by(call, ti_call_tensor(call, "self"), n, repeats, err);
}

/* tile: repeat, with missing leading counts taken as 1 (TensorShape.cpp). */
static ti_status run_tile(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	ti_dim given[TI_META_MAX_DIMS], repeats[TI_META_MAX_DIMS];
	int n;
	const ti_arg *items = ti_call_list(call, "dims", &n);
	ti_status st = list_dims(items, n, given, err);
	if (st)
		return st;
	int total = n > t->ndim ? n : t->ndim;
	for (int i = 0; i < total; i++)
		repeats[i] = i < total - n ? ti_dim_int(1) : given[i - (total - n)];
	return repeat_by(call, t, total, repeats, err);
}

/* ---- copies ---- */

/* c10 is_non_overlapping_and_dense, for integer sizes and strides: the strides of a dense permutation. */
static bool is_dense(const ti_meta_tensor *t)
{
	int order[TI_META_MAX_DIMS], n = 0;
	for (int i = 0; i < t->ndim; i++) {
		if (!ti_dim_is_int(t->shape[i]) || !ti_dim_is_int(t->stride[i]))
			return false;
		if (t->shape[i].value >= 2)
			order[n++] = i;
	}
	/* dims of size < 2 say nothing; the rest, by increasing stride, must multiply up */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && t->stride[order[j]].value < t->stride[order[j - 1]].value; j--) {
			int k = order[j];
			order[j] = order[j - 1];
			order[j - 1] = k;
		}
	int64_t expected = 1;
	for (int i = 0; i < n; i++) {
		if (t->stride[order[i]].value != expected)
			return false;
		expected *= t->shape[order[i]].value;
	}
	return true;
}

/* empty_like(t, MemoryFormat::Preserve): t's own strides when dense, else contiguous. */
static ti_status output_preserving(ti_op_call *call, const ti_meta_tensor *t, ti_error *err)
{
	if (is_dense(t))
		return output_view(call, t, t->ndim, t->shape, t->stride, err);
	return output_copy(call, t, t->ndim, t->shape, err);
}

static ti_status run_contiguous(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "self");
	if (ti_meta_is_contiguous(call->ctx, t))
		return ti_call_output_tensor(call, t, err);
	return output_copy(call, t, t->ndim, t->shape, err);
}

/* flip (TensorTransformations.cpp): dims checked by dim_list_to_bitset; the result as empty_like. */
static ti_status run_flip(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	bool chosen[TI_META_MAX_DIMS] = {0};
	int n;
	const ti_arg *dims = ti_call_list(call, "dims", &n);
	ti_status st = dim_set("dims", dims, n, t->ndim, chosen, err);
	return st ? st : output_preserving(call, t, err);
}

/* roll (TensorTransformations.cpp roll_common): a contiguous result of the same shape. */
static ti_status run_roll(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int nshifts, ndims;
	as_list(ti_call_arg(call, "shifts"), &nshifts);
	const ti_arg *dims = as_list(ti_call_arg(call, "dims"), &ndims);
	if (nshifts == 0)
		return TI_FAIL(err, TI_E_SHAPE, "`shifts` required");
	if (!(ndims == 0 && nshifts == 1)) {
		if (nshifts != ndims)
			return TI_FAIL(err, TI_E_SHAPE, "shifts and dimensions must align. shifts: %d, dims:%d", nshifts, ndims);
		for (int i = 0; i < ndims; i++) {
			int d;
			ti_status st = wrap_arg("dims", dims[i].as.dim, t->ndim, &d, err);
			if (st)
				return st;
		}
	}
	return output_copy(call, t, t->ndim, t->shape, err);
}

ti_op_rule ti_ops_shape[] = {
	{"view(Tensor self, int[]... size)", run_view, TI_COUNT_FREE, NULL},
	{"reshape(Tensor input, int[]... shape)", run_reshape, TI_COUNT_FREE, NULL},
	{"view_as(Tensor self, Tensor other)", run_view_as, TI_COUNT_FREE, NULL},
	{"reshape_as(Tensor self, Tensor other)", run_reshape_as, TI_COUNT_FREE, NULL},
	{"ravel(Tensor input)", run_ravel, TI_COUNT_FREE, NULL},
	{"flatten(Tensor input, int start_dim=0, int end_dim=-1)", run_flatten, TI_COUNT_FREE, NULL},
	{"unflatten(Tensor input, int dim, int[] sizes)", run_unflatten, TI_COUNT_FREE, NULL},
	{"permute(Tensor input, int[]... dims)", run_permute, TI_COUNT_FREE, NULL},
	{"transpose(Tensor input, int dim0, int dim1)", run_transpose, TI_COUNT_FREE, NULL},
	{"swapaxes(Tensor input, int axis0, int axis1)", run_transpose, TI_COUNT_FREE, NULL},
	{"swapdims(Tensor input, int dim0, int dim1)", run_transpose, TI_COUNT_FREE, NULL},
	{"t(Tensor input)", run_t, TI_COUNT_FREE, NULL},
	{"mT(Tensor self)", run_mT, TI_COUNT_FREE, NULL},
	{"movedim(Tensor input, int|int[] source, int|int[] destination)", run_movedim, TI_COUNT_FREE, NULL},
	{"moveaxis(Tensor input, int|int[] source, int|int[] destination)", run_movedim, TI_COUNT_FREE, NULL},
	{"squeeze(Tensor input, int|int[]? dim=None)", run_squeeze, TI_COUNT_FREE, NULL},
	{"unsqueeze(Tensor input, int dim)", run_unsqueeze, TI_COUNT_FREE, NULL},
	{"expand(Tensor self, int[]... size)", run_expand, TI_COUNT_FREE, NULL},
	{"broadcast_to(Tensor input, int[] size)", run_expand, TI_COUNT_FREE, NULL},
	{"expand_as(Tensor self, Tensor other)", run_expand_as, TI_COUNT_FREE, NULL},
	{"repeat(Tensor self, int[]... repeats)", run_repeat, TI_COUNT_FREE, NULL},
	{"tile(Tensor input, int[]... dims)", run_tile, TI_COUNT_FREE, NULL},
	{"contiguous(Tensor self)", run_contiguous, TI_COUNT_FREE, NULL},
	{"flip(Tensor input, int[]... dims)", run_flip, TI_COUNT_FREE, NULL},
	{"roll(Tensor input, int|int[] shifts, int|int[]? dims=None)", run_roll, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
