/*
 * join.c - joining and splitting: cat (concat, concatenate), stack, hstack,
 * vstack, dstack, split, split_with_sizes, chunk, tensor_split, unbind;
 * meshgrid, whose grids are views (each input viewed and expanded).
 *
 * Rules from aten/src/ATen/native/TensorShape.cpp (cat's meta function,
 * stack, split, split_with_sizes, chunk, tensor_split, unbind). Joins make a
 * new contiguous tensor of the promoted dtype (cat's channels_last
 * preservation, when every input is channels_last, is not modelled). Pieces
 * are views: the input's strides, a smaller size.
 *
 * Outputs of the splitting ops: each piece is one output when there are at
 * most TI_OP_MAX_OUTPUTS of them, as a step unpacks them; more pieces come as
 * one output, a list of tensors. Their number must be known: a split of a
 * symbolic size fails unless the count comes out as an integer (chunk assumes
 * divisibility instead: x.chunk(3) of size T gives three pieces of T//3).
 *
 * No arithmetic: every row counts as free.
 */
#include <string.h>

#include "ops/tables.h"

enum { MAX_PIECES = 1 << 16 }; /* a split into more pieces is refused (limit) */

static bool dim_is(ti_dim d, int64_t v)
{
	return ti_dim_is_int(d) && d.value == v;
}

/* An axis or count must be a number: a symbolic size there is a bad description. */
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

/* Two sizes that must agree: equal, or assumed equal when one is symbolic. *out is the better name. */
static bool sizes_agree(ti_symctx *s, ti_dim a, ti_dim b, ti_dim *out)
{
	*out = !ti_dim_is_int(a) && ti_dim_is_int(b) ? b : a;
	if (ti_dim_same(a, b))
		return true;
	return !(ti_dim_is_int(a) && ti_dim_is_int(b)) && ti_dim_assume(s, a, TI_CMP_EQ, b);
}

/* ---- joining ---- */

/* cat_should_skip_tensor: the legacy 1-D empty tensor, shape [0], is ignored by cat. */
static bool skipped(const ti_meta_tensor *t)
{
	return t->ndim == 1 && dim_is(t->shape[0], 0);
}

/*
 * cat's meta function: no 0-d inputs, dim wrapped against the first tensor
 * that is not skipped, every other size equal, the dtype promoted over all
 * inputs (skipped ones included).
 */
static ti_status cat_tensors(ti_op_call *call, const ti_meta_tensor *const *ts, int n, ti_dim dim_arg,
                             ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int valid = -1;
	bool requires_grad = false;
	for (int i = 0; i < n; i++) {
		if (ts[i]->ndim == 0)
			return TI_FAIL(err, TI_E_SHAPE, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
		if (valid < 0 && !skipped(ts[i]))
			valid = i;
		requires_grad |= ts[i]->requires_grad;
	}
	int dim = 0;
	ti_status st = valid < 0 ? TI_OK : wrap_arg("dim", dim_arg, ts[valid]->ndim, &dim, err);
	if (st)
		return st;
	if (n == 0)
		return TI_FAIL(err, TI_E_SHAPE, "torch.cat(): expected a non-empty list of Tensors");
	ti_arg *operands = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*operands));
	if (!operands)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a tensor list");
	for (int i = 0; i < n; i++)
		operands[i] = ti_arg_tensor(ts[i]);
	ti_dtype dtype = ti_result_type(ctx, operands, n);
	ti_dim shape[TI_META_MAX_DIMS] = {ti_dim_int(0)};
	int ndim = 1;
	if (valid >= 0) {
		const ti_meta_tensor *first = ts[valid];
		ndim = first->ndim;
		memcpy(shape, first->shape, (size_t)ndim * sizeof(*shape));
		shape[dim] = ti_dim_int(0);
		for (int i = 0; i < n; i++) {
			const ti_meta_tensor *t = ts[i];
			if (skipped(t))
				continue;
			if (t->ndim != ndim)
				return TI_FAIL(err, TI_E_SHAPE, "Tensors must have same number of dimensions: got %d and %d",
				               ndim, t->ndim);
			for (int d = 0; d < ndim; d++) {
				if (d != dim && !sizes_agree(ctx->sym, shape[d], t->shape[d], &shape[d])) {
					char a[64], b[64];
					return TI_FAIL(err, TI_E_SHAPE,
					               "Sizes of tensors must match except in dimension %d. Expected size %s but got "
					               "size %s for tensor number %d in the list.", dim,
					               ti_dim_format(first->shape[d], a, sizeof(a)),
					               ti_dim_format(t->shape[d], b, sizeof(b)), i);
				}
			}
			shape[dim] = ti_dim_add(ctx->sym, shape[dim], t->shape[dim]);
		}
	}
	ti_meta_tensor *out = ti_meta_new(ctx, dtype, ndim, shape);
	if (out)
		out->requires_grad = requires_grad;
	return ti_call_output_tensor(call, out, err);
}

/* The tensors of the list argument at position i. */
static const ti_meta_tensor **list_tensors(ti_op_call *call, int i, int *n, ti_error *err)
{
	const ti_arg *list = &call->in.args[i];
	*n = list->as.list.count;
	const ti_meta_tensor **ts = ti_arena_calloc(call->ctx->arena, (size_t)*n + 1, sizeof(*ts));
	if (!ts) {
		TI_FAIL(err, TI_E_NOMEM, "out of memory for a tensor list");
		return NULL;
	}
	for (int k = 0; k < *n; k++)
		ts[k] = list->as.list.items[k].as.tensor;
	return ts;
}

/* cat(tensors, dim), concat, concatenate(tensors, axis): read by position. */
static ti_status run_cat(ti_op_call *call, ti_error *err)
{
	int n;
	const ti_meta_tensor **ts = list_tensors(call, 0, &n, err);
	return ts ? cat_tensors(call, ts, n, call->in.args[1].as.dim, err) : err->code;
}

/* t with a size-1 dim inserted at d (the strides do not matter: the join copies). */
static const ti_meta_tensor *with_unit_dim(ti_shape_ctx *ctx, const ti_meta_tensor *t, int d)
{
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	if (t->ndim + 1 > TI_META_MAX_DIMS)
		return NULL;
	for (int i = 0, j = 0; i <= t->ndim; i++)
		shape[i] = i == d ? ti_dim_int(1) : t->shape[j++];
	ti_contiguous_strides(ctx, t->ndim + 1, shape, stride);
	return ti_meta_view(ctx, t, t->ndim + 1, shape, stride);
}

/* stack (TensorShape.cpp): equal shapes, each unsqueezed at dim, then cat. */
static ti_status run_stack(ti_op_call *call, ti_error *err)
{
	int n, dim;
	const ti_meta_tensor **ts = list_tensors(call, 0, &n, err);
	if (!ts)
		return err->code;
	if (n == 0)
		return TI_FAIL(err, TI_E_SHAPE, "stack expects a non-empty TensorList");
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), ts[0]->ndim + 1, &dim, err);
	if (st)
		return st;
	for (int i = 1; i < n; i++) {
		bool equal = ts[i]->ndim == ts[0]->ndim;
		ti_dim agreed;
		for (int d = 0; equal && d < ts[0]->ndim; d++)
			equal = sizes_agree(call->ctx->sym, ts[0]->shape[d], ts[i]->shape[d], &agreed);
		if (!equal)
			return TI_FAIL(err, TI_E_SHAPE, "stack expects each tensor to be equal size, but got %s at entry 0 and %s "
			               "at entry %d", ti_meta_shape_str(call->ctx, ts[0]), ti_meta_shape_str(call->ctx, ts[i]), i);
	}
	for (int i = 0; i < n; i++)
		if (!(ts[i] = with_unit_dim(call->ctx, ts[i], dim)))
			return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	return cat_tensors(call, ts, n, ti_dim_int(dim), err);
}

/*
 * hstack, vstack, dstack: atleast_1d/2d/3d, then cat along dim 0 (hstack of
 * 1-D tensors), 1 (hstack), 0 (vstack) or 2 (dstack).
 */
typedef struct stack_kind {
	const char *name;
	int min_ndim;
	int dim; /* -1: hstack's, 0 for 1-D tensors, else 1 */
} stack_kind;

static const stack_kind stack_kinds[] = {{"hstack", 1, -1}, {"vstack", 2, 0}, {"dstack", 3, 2}};

/* atleast_Nd: a 1-D [n] becomes [1, n] (2-D) or [1, n, 1] (3-D); a 2-D [m, n] becomes [m, n, 1]. */
static const ti_meta_tensor *at_least(ti_shape_ctx *ctx, const ti_meta_tensor *t, int min_ndim)
{
	while (t && t->ndim < min_ndim)
		t = with_unit_dim(ctx, t, t->ndim == 1 && min_ndim >= 2 ? 0 : t->ndim);
	return t;
}

static ti_status run_stack_kind(ti_op_call *call, ti_error *err)
{
	const stack_kind *kind = &stack_kinds[0];
	for (size_t i = 0; i < sizeof(stack_kinds) / sizeof(stack_kinds[0]); i++)
		if (!strcmp(call->in.sig->name, stack_kinds[i].name))
			kind = &stack_kinds[i];
	int n;
	const ti_meta_tensor **ts = list_tensors(call, 0, &n, err);
	if (!ts)
		return err->code;
	if (n == 0)
		return TI_FAIL(err, TI_E_SHAPE, "%s expects a non-empty TensorList", kind->name);
	for (int i = 0; i < n; i++)
		if (!(ts[i] = at_least(call->ctx, ts[i], kind->min_ndim)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for %s", kind->name);
	int dim = kind->dim >= 0 ? kind->dim : ts[0]->ndim == 1 ? 0 : 1;
	return cat_tensors(call, ts, n, ti_dim_int(dim), err);
}

/* ---- splitting ---- */

/*
 * The pieces of t along dim: views with the given sizes, or, when sizes is
 * NULL, with dim removed (unbind). Each is its own output up to
 * TI_OP_MAX_OUTPUTS pieces; more come as one list.
 */
static ti_status output_pieces(ti_op_call *call, const ti_meta_tensor *t, int dim, const ti_dim *sizes,
                               int64_t count, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	if (count > MAX_PIECES)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d pieces from one split", MAX_PIECES);
	ti_arg *items = ti_arena_calloc(ctx->arena, (size_t)count + 1, sizeof(*items));
	if (!items)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %lld pieces", (long long)count);
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	int ndim = 0;
	for (int i = 0; i < t->ndim; i++) {
		if (i == dim && !sizes)
			continue;
		shape[ndim] = t->shape[i];
		stride[ndim++] = t->stride[i];
	}
	for (int64_t i = 0; i < count; i++) {
		if (sizes)
			shape[dim] = sizes[i];
		const ti_meta_tensor *piece = ti_meta_view(ctx, t, ndim, shape, stride);
		if (!piece)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for %lld pieces", (long long)count);
		items[i] = ti_arg_tensor(piece);
	}
	if (count > TI_OP_MAX_OUTPUTS)
		return ti_call_output(call, ti_arg_list(items, (int)count), err);
	ti_status st = TI_OK;
	for (int64_t i = 0; i < count && !st; i++)
		st = ti_call_output(call, items[i], err);
	return st;
}

/* count pieces of `size`, the last of `last`. */
static ti_status output_even_pieces(ti_op_call *call, const ti_meta_tensor *t, int dim, int64_t count,
                                    ti_dim size, ti_dim last, ti_error *err)
{
	if (count > MAX_PIECES)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d pieces from one split", MAX_PIECES);
	ti_dim *sizes = ti_arena_calloc(call->ctx->arena, (size_t)count + 1, sizeof(*sizes));
	if (!sizes)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %lld pieces", (long long)count);
	for (int64_t i = 0; i < count; i++)
		sizes[i] = i + 1 < count ? size : last;
	return output_pieces(call, t, dim, sizes, count, err);
}

/* A split whose number of pieces depends on a symbolic size cannot make outputs. */
static ti_status unknown_count(const char *op, ti_dim size, ti_dim piece, ti_error *err)
{
	char a[64], b[64];
	return TI_FAIL(err, TI_E_UNSUPPORTED, "%s: the number of pieces of size %s in a dimension of size %s is not known",
	               op, ti_dim_format(piece, b, sizeof(b)), ti_dim_format(size, a, sizeof(a)));
}

static ti_status needs_dims(const char *op, const ti_meta_tensor *t, ti_error *err)
{
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "%s expects at least a 1-dimensional tensor", op);
	return TI_OK;
}

/* split(int) after its checks (TensorShape.cpp): pieces of split_size, the last smaller, at least one. */
static ti_status split_even(ti_op_call *call, const ti_meta_tensor *t, int dim, ti_dim split_size, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	ti_dim size = t->shape[dim];
	if (dim_is(split_size, 0)) {
		char buf[64];
		if (!dim_is(size, 0))
			return TI_FAIL(err, TI_E_SHAPE,
			               "split_size can only be 0 if dimension size is 0, but got dimension size of %s",
			               ti_dim_format(size, buf, sizeof(buf)));
		return output_even_pieces(call, t, dim, 1, size, size, err);
	}
	bool exact;
	ti_dim count = ti_dim_exactdiv(s, size, split_size, &exact);
	if (!exact && ti_dim_is_int(split_size))
		count = ti_dim_ceildiv(s, size, split_size);
	if ((!exact && !ti_dim_is_int(split_size)) || !ti_dim_is_int(count))
		return unknown_count("split", size, split_size, err);
	int64_t n = count.value < 1 ? 1 : count.value;
	ti_dim last = ti_dim_sub(s, size, ti_dim_mul(s, split_size, ti_dim_int(n - 1)));
	return output_even_pieces(call, t, dim, n, split_size, last, err);
}

/* split_with_sizes (TensorShape.cpp): non-negative sizes that add up to the dim's size. */
static ti_status split_by_sizes(ti_op_call *call, const ti_meta_tensor *t, const ti_arg *items, int n,
                                ti_dim dim_arg, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int dim;
	ti_status st = needs_dims("split", t, err);
	if (!st)
		st = wrap_arg("dim", dim_arg, t->ndim, &dim, err);
	if (st)
		return st;
	ti_dim *sizes = ti_arena_calloc(ctx->arena, (size_t)n + 1, sizeof(*sizes));
	if (!sizes)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %d pieces", n);
	for (int i = 0; i < n; i++)
		sizes[i] = items[i].as.dim;
	ti_dim sum = ti_dim_int(0);
	for (int i = 0; i < n; i++) {
		if (ti_dim_is_int(sizes[i]) && sizes[i].value < 0)
			return TI_FAIL(err, TI_E_SHAPE,
			               "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s",
			               ti_shape_str(ctx, n, sizes));
		sum = ti_dim_add(ctx->sym, sum, sizes[i]);
	}
	if (!ti_dim_assume(ctx->sym, sum, TI_CMP_EQ, t->shape[dim])) {
		char buf[64];
		return TI_FAIL(err, TI_E_SHAPE,
		               "split_with_sizes expects split_sizes to sum exactly to %s (input tensor's size at dimension "
		               "%d), but got split_sizes=%s", ti_dim_format(t->shape[dim], buf, sizeof(buf)), dim,
		               ti_shape_str(ctx, n, sizes));
	}
	return output_pieces(call, t, dim, sizes, n, err);
}

/* split(tensor, split_size_or_sections, dim): an int is split, a list split_with_sizes. */
static ti_status run_split(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = call->in.args[0].as.tensor;
	const ti_arg *how = &call->in.args[1];
	ti_dim dim_arg = call->in.args[2].as.dim;
	if (how->kind == TI_ARG_LIST)
		return split_by_sizes(call, t, how->as.list.items, how->as.list.count, dim_arg, err);
	int dim;
	ti_status st = needs_dims("split", t, err);
	if (st)
		return st;
	if (ti_dim_is_int(how->as.dim) && how->as.dim.value < 0)
		return TI_FAIL(err, TI_E_SHAPE, "split expects split_size be non-negative, but got split_size=%lld",
		               (long long)how->as.dim.value);
	if ((st = wrap_arg("dim", dim_arg, t->ndim, &dim, err)))
		return st;
	return split_even(call, t, dim, how->as.dim, err);
}

/*
 * chunk (TensorShape.cpp): pieces of ceil(size / chunks), so fewer than
 * `chunks` pieces may come out. A symbolic size is assumed divisible.
 */
static ti_status run_chunk(ti_op_call *call, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int64_t chunks = 0;
	int dim;
	ti_status st = needs_dims("chunk", t, err);
	if (!st)
		st = need_int("chunks", ti_call_dim(call, "chunks"), &chunks, err);
	if (st)
		return st;
	if (chunks <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
	if ((st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err)))
		return st;
	ti_dim size = t->shape[dim], n = ti_dim_int(chunks);
	if (!ti_dim_is_int(size)) {
		bool exact;
		ti_dim piece = ti_dim_exactdiv(s, size, n, &exact);
		if (!exact && !ti_dim_assume(s, ti_dim_mod(s, size, n), TI_CMP_EQ, ti_dim_int(0)))
			return unknown_count("chunk", size, ti_dim_ceildiv(s, size, n), err);
		if (!exact)
			piece = ti_dim_floordiv(s, size, n);
		return output_even_pieces(call, t, dim, chunks, piece, piece, err);
	}
	ti_dim split_size = ti_dim_ceildiv(s, size, n);
	/* zero-size pieces: as many as asked, which split would not give */
	if (dim_is(split_size, 0))
		return output_even_pieces(call, t, dim, chunks, split_size, split_size, err);
	return split_even(call, t, dim, split_size, err);
}

static ti_status run_split_with_sizes(ti_op_call *call, ti_error *err)
{
	int n;
	const ti_arg *items = ti_call_list(call, "split_sizes", &n);
	return split_by_sizes(call, ti_call_tensor(call, "self"), items, n, ti_call_dim(call, "dim"), err);
}

/* at::slice's clamping of a start or end into [0, size]. */
static int64_t clamp_index(int64_t i, int64_t size)
{
	if (i < 0)
		i += size;
	return i < 0 ? 0 : i > size ? size : i;
}

/* tensor_split (TensorShape.cpp): n sections (the first size % n one longer), or slices between indices. */
static ti_status run_tensor_split(ti_op_call *call, ti_error *err)
{
	ti_symctx *s = call->ctx->sym;
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	const ti_arg *how = ti_call_arg(call, "indices_or_sections");
	int dim;
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE,
		               "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	ti_dim size = t->shape[dim];
	if (how->kind == TI_ARG_INT) {
		int64_t sections = 0;
		if ((st = need_int("indices_or_sections", how->as.dim, &sections, err)))
			return st;
		if (sections <= 0)
			return TI_FAIL(err, TI_E_SHAPE, "number of sections must be larger than 0, got %lld", (long long)sections);
		if (sections > MAX_PIECES)
			return TI_FAIL(err, TI_E_LIMIT, "more than %d pieces from one split", MAX_PIECES);
		ti_dim n = ti_dim_int(sections), piece = ti_dim_floordiv(s, size, n), extra = ti_dim_mod(s, size, n);
		if (!ti_dim_is_int(extra) && !ti_dim_assume(s, extra, TI_CMP_EQ, ti_dim_int(0)))
			return unknown_count("tensor_split", size, piece, err);
		int64_t longer = ti_dim_is_int(extra) ? extra.value : 0;
		ti_dim *sizes = ti_arena_calloc(call->ctx->arena, (size_t)sections, sizeof(*sizes));
		if (!sizes)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for %lld pieces", (long long)sections);
		for (int64_t i = 0; i < sections; i++)
			sizes[i] = i < longer ? ti_dim_add(s, piece, ti_dim_int(1)) : piece;
		return output_pieces(call, t, dim, sizes, sections, err);
	}
	char buf[64];
	if (!ti_dim_is_int(size))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "tensor_split: slicing a dimension of symbolic size %s at indices",
		               ti_dim_format(size, buf, sizeof(buf)));
	int n = how->as.list.count;
	ti_dim *sizes = ti_arena_calloc(call->ctx->arena, (size_t)n + 1, sizeof(*sizes));
	if (!sizes)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %d pieces", n + 1);
	int64_t start = 0;
	for (int i = 0; i <= n; i++) {
		int64_t end = size.value;
		if (i < n && (st = need_int("indices_or_sections", how->as.list.items[i].as.dim, &end, err)))
			return st;
		int64_t from = clamp_index(start, size.value), to = clamp_index(end, size.value);
		sizes[i] = ti_dim_int(to > from ? to - from : 0);
		start = end;
	}
	return output_pieces(call, t, dim, sizes, n + 1, err);
}

/* unbind (TensorShape.cpp): one piece per index of dim, with dim removed. */
static ti_status run_unbind(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *t = ti_call_tensor(call, "input");
	int dim;
	if (t->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "Dimension specified as 0 but tensor has no dimensions");
	ti_status st = wrap_arg("dim", ti_call_dim(call, "dim"), t->ndim, &dim, err);
	if (st)
		return st;
	if (!ti_dim_is_int(t->shape[dim]))
		return unknown_count("unbind", t->shape[dim], ti_dim_int(1), err);
	return output_pieces(call, t, dim, NULL, t->shape[dim].value, err);
}

/* Python's repr of a meta tensor, as torch._refs.meshgrid prints it: tensor(..., device='meta', size=(2, 3)). */
static const char *meta_repr(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	const char *shape = ti_meta_shape_str(ctx, t);
	size_t n = strlen(shape);
	const char *comma = t->ndim == 1 ? "," : "";
	return ti_arena_printf(ctx->arena, "tensor(..., device='meta', size=(%.*s%s))", (int)(n - 2), shape + 1, comma);
}

/*
 * meshgrid (TensorShape.cpp): every input 0-d or 1-d; grid i is input i
 * viewed as [1, ..., -1, ..., 1] (-1 at i) and expanded to all the inputs'
 * numels, so a view with stride 0 along the other dims. "xy" swaps the
 * first two inputs and then the first two grids; None is "ij" (with a
 * warning in torch.meshgrid).
 */
static ti_status run_meshgrid(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n;
	const ti_meta_tensor **ts = list_tensors(call, 0, &n, err);
	if (!ts)
		return err->code;
	if (n == 0)
		return TI_FAIL(err, TI_E_SHAPE, "meshgrid expects a non-empty TensorList");
	if (n > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d dimensions", TI_META_MAX_DIMS);
	for (int i = 0; i + 1 < n; i++)
		if (ts[i]->dtype != ts[i + 1]->dtype)
			return TI_FAIL(err, TI_E_SHAPE, "meshgrid expects all tensors to have the same dtype");
	const char *indexing = ti_call_str(call, "indexing");
	bool swap = false;
	if (indexing && !strcmp(indexing, "xy"))
		swap = n >= 2;
	else if (indexing && strcmp(indexing, "ij") != 0)
		return TI_FAIL(err, TI_E_SHAPE, "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s",
		               indexing);
	if (swap) {
		const ti_meta_tensor *first = ts[0];
		ts[0] = ts[1];
		ts[1] = first;
	}
	ti_arg *shape = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*shape));
	ti_arg *grids = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*grids));
	if (!shape || !grids)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for meshgrid");
	for (int i = 0; i < n; i++) {
		if (ts[i]->ndim > 1)
			return TI_FAIL(err, TI_E_SHAPE, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: %s",
			               meta_repr(ctx, ts[i]));
		shape[i] = ti_arg_dim(ti_meta_numel(ctx, ts[i]));
	}
	for (int i = 0; i < n; i++) {
		ti_arg *view_shape = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*view_shape));
		if (!view_shape)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for meshgrid");
		for (int k = 0; k < n; k++)
			view_shape[k] = ti_arg_int(k == i ? -1 : 1);
		ti_arg args[2] = {ti_arg_tensor(ts[i]), ti_arg_list(view_shape, n)};
		ti_op_call viewed, expanded;
		ti_status st = ti_call_op(call, "view", args, 2, &viewed, err);
		if (st)
			return st;
		args[0] = viewed.outputs[0];
		args[1] = ti_arg_list(shape, n);
		if ((st = ti_call_op(call, "expand", args, 2, &expanded, err)))
			return st;
		grids[i] = expanded.outputs[0];
	}
	if (swap) {
		ti_arg first = grids[0];
		grids[0] = grids[1];
		grids[1] = first;
	}
	/* like the splits: one output per grid, or one list when there are more than a step unpacks */
	if (n > TI_OP_MAX_OUTPUTS)
		return ti_call_output(call, ti_arg_list(grids, n), err);
	for (int i = 0; i < n; i++) {
		ti_status st = ti_call_output(call, grids[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

ti_op_rule ti_ops_join[] = {
	{"cat(Tensor[] tensors, int dim=0)", run_cat, TI_COUNT_FREE, NULL},
	{"concat(Tensor[] tensors, int dim=0)", run_cat, TI_COUNT_FREE, NULL},
	{"concatenate(Tensor[] tensors, int axis=0)", run_cat, TI_COUNT_FREE, NULL},
	{"stack(Tensor[] tensors, int dim=0)", run_stack, TI_COUNT_FREE, NULL},
	{"hstack(Tensor[] tensors)", run_stack_kind, TI_COUNT_FREE, NULL},
	{"vstack(Tensor[] tensors)", run_stack_kind, TI_COUNT_FREE, NULL},
	{"dstack(Tensor[] tensors)", run_stack_kind, TI_COUNT_FREE, NULL},
	{"split(Tensor tensor, int|int[] split_size_or_sections, int dim=0)", run_split, TI_COUNT_FREE, NULL},
	{"split_with_sizes(Tensor self, int[] split_sizes, int dim=0)", run_split_with_sizes, TI_COUNT_FREE, NULL},
	{"chunk(Tensor input, int chunks, int dim=0)", run_chunk, TI_COUNT_FREE, NULL},
	{"tensor_split(Tensor input, int|int[] indices_or_sections, int dim=0)", run_tensor_split, TI_COUNT_FREE, NULL},
	{"unbind(Tensor input, int dim=0)", run_unbind, TI_COUNT_FREE, NULL},
	{"meshgrid(Tensor[]... tensors, *, str? indexing=None)", run_meshgrid, TI_COUNT_FREE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
