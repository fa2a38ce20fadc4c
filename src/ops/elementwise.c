/*
 * elementwise.c - pointwise operators: arithmetic with broadcasting and type
 * promotion, comparisons, logical and bitwise ops, where, masked_fill, clamp
 * and unary math; and the result layout every pointwise rule shares
 * (elementwise.h).
 *
 * The rules are ATen's meta functions: aten/src/ATen/native/BinaryOps.cpp
 * (add, sub, div, pow ...), UnaryOps.cpp, TensorCompare.cpp (clamp, where),
 * TensorAdvancedIndexing.cpp (masked_fill), and torch/_refs/__init__.py for
 * where(), which the meta device runs from Python.
 *
 * Counting: one flop per output element, whatever the operator (an add, a
 * compare, a select and an exp all count one).
 */
#include <string.h>

#include "ops/elementwise.h"
#include "ops/tables.h"

/* ---- the layout of a new pointwise result (TensorIterator) ---- */

enum { MAX_OPERANDS = 4 }; /* where() has the most: condition, input, other */

static bool is_int_value(ti_dim d, int64_t v) { return ti_dim_is_int(d) && d.value == v; }

/* A size that may be 2 or more: c10 skips smaller ones when it checks layouts. */
static bool may_exceed_one(ti_dim d) { return !ti_dim_is_int(d) || d.value >= 2; }

/*
 * The order of two strides: -1 when a < b, 1 when a > b, 0 when equal or
 * unknown (*known false). A symbolic stride known to be at least the other
 * (T against 1) orders as larger, as it is for every size but 1.
 */
static int stride_order(ti_shape_ctx *ctx, ti_dim a, ti_dim b, bool *known)
{
	ti_truth lt = ti_dim_compare(ctx->sym, a, TI_CMP_LT, b), gt = ti_dim_compare(ctx->sym, a, TI_CMP_GT, b);
	*known = lt == TI_FALSE || gt == TI_FALSE;
	return !*known ? 0 : lt != TI_FALSE ? -1 : gt != TI_FALSE ? 1 : 0;
}

/* The order of dims from innermost in memory: {1, 3, 2, 0} for NCHW as NHWC (c10/core/MemoryFormat.h). */
static const int *channels_last_order(int ndim)
{
	static const int order4[] = {1, 3, 2, 0}, order5[] = {1, 4, 3, 2, 0};
	return ndim == 4 ? order4 : ndim == 5 ? order5 : NULL;
}

/* is_contiguous(memory_format=torch.channels_last or channels_last_3d): size-1 dims may have any stride. */
static bool is_channels_last_contiguous(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	const int *order = channels_last_order(t->ndim);
	if (!order)
		return false;
	ti_dim expected = ti_dim_int(1);
	for (int k = 0; k < t->ndim; k++) {
		int d = order[k];
		if (is_int_value(t->shape[d], 1))
			continue;
		if (!ti_dim_same(t->stride[d], expected))
			return false;
		expected = ti_dim_mul(ctx->sym, expected, t->shape[d]);
	}
	return true;
}

/*
 * c10's is_non_overlapping_and_dense flag: contiguous (empty tensors are),
 * channels-last contiguous, or, sorted by stride, the dims of size >= 2 tile memory.
 */
static bool is_dense(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	if (ti_meta_is_contiguous(ctx, t) || is_channels_last_contiguous(ctx, t))
		return true;
	int perm[TI_META_MAX_DIMS], n = 0;
	bool known;
	for (int i = 0; i < t->ndim; i++) {
		if (!may_exceed_one(t->shape[i]))
			continue;
		int j = n++;
		/* insertion sort by stride; strides that cannot be ordered keep their places */
		while (j > 0 && stride_order(ctx, t->stride[i], t->stride[perm[j - 1]], &known) < 0) {
			perm[j] = perm[j - 1];
			j--;
		}
		perm[j] = i;
	}
	ti_dim required = ti_dim_int(1);
	for (int k = 0; k < n; k++) {
		if (!ti_dim_same(t->stride[perm[k]], required))
			return false;
		required = ti_dim_mul(ctx->sym, required, t->shape[perm[k]]);
	}
	return true;
}

ti_meta_tensor *ti_meta_new_channels_last(ti_shape_ctx *ctx, ti_dtype dtype, int ndim, const ti_dim *shape)
{
	const int *order = channels_last_order(ndim);
	if (!order)
		return NULL;
	/* get_channels_last_strides_2d multiplies by the sizes as they are, zeros included */
	ti_dim stride[5], acc = ti_dim_int(1);
	for (int k = 0; k < ndim; k++) {
		stride[order[k]] = acc;
		acc = ti_dim_mul(ctx->sym, acc, shape[order[k]]);
	}
	ti_meta_tensor *t = ti_meta_view(ctx, NULL, ndim, shape, stride);
	if (t)
		t->dtype = dtype;
	return t;
}

/*
 * TensorIterator::reorder_dimensions' should_swap: 1 when dim0 should be
 * iterated after dim1 (is outer to it), -1 before, 0 when no operand says.
 * A zero stride (a broadcast dim) says nothing, nor do strides that cannot
 * be ordered.
 */
static int should_swap(ti_shape_ctx *ctx, ti_dim (*strides)[TI_META_MAX_DIMS], int count,
                       const ti_dim *shape, int dim0, int dim1)
{
	for (int k = 0; k < count; k++) {
		ti_dim s0 = strides[k][dim0], s1 = strides[k][dim1];
		if (is_int_value(s0, 0) || is_int_value(s1, 0))
			continue;
		bool known;
		int order = stride_order(ctx, s0, s1, &known);
		if (!known)
			continue;
		if (order)
			return order;
		/* equal strides: the smaller dim goes first */
		if (ti_dim_compare(ctx->sym, shape[dim0], TI_CMP_GT, shape[dim1]) == TI_TRUE)
			return 1;
	}
	return 0;
}

/*
 * The operands' memory order, innermost dim first (perm[0]), by
 * TensorIterator's insertion sort from C order, ambiguity tolerated; also
 * infer_dense_strides' (aten/src/ATen/TensorUtils.cpp), which copies it.
 * Returns whether the order is plain C order.
 */
static bool memory_order(ti_shape_ctx *ctx, ti_dim (*strides)[TI_META_MAX_DIMS], int count, int ndim,
                         const ti_dim *shape, int *perm)
{
	for (int i = 0; i < ndim; i++)
		perm[i] = ndim - 1 - i;
	for (int i = 1; i < ndim; i++) {
		int dim1 = i;
		for (int dim0 = i - 1; dim0 >= 0; dim0--) {
			int cmp = should_swap(ctx, strides, count, shape, perm[dim0], perm[dim1]);
			if (cmp > 0) {
				int tmp = perm[dim0];
				perm[dim0] = perm[dim1];
				perm[dim1] = tmp;
				dim1 = dim0;
			} else if (cmp < 0) {
				break;
			}
		}
	}
	bool c_order = true;
	for (int i = 0; i < ndim; i++)
		c_order &= perm[i] == ndim - 1 - i;
	return c_order;
}

/* Dense strides in perm's order; infer_dense_strides skips sizes below 2, TensorIterator does not. */
static void strides_in_order(ti_shape_ctx *ctx, int ndim, const ti_dim *shape, const int *perm,
                             bool skip_small, ti_dim *stride)
{
	ti_dim acc = ti_dim_int(1);
	for (int i = 0; i < ndim; i++) {
		ti_dim size = shape[perm[i]];
		stride[perm[i]] = acc;
		if (!skip_small || may_exceed_one(size))
			acc = ti_dim_mul(ctx->sym, acc, size);
	}
}

ti_meta_tensor *ti_meta_like(ti_shape_ctx *ctx, const ti_meta_tensor *t, ti_dtype dtype)
{
	ti_dim stride[TI_META_MAX_DIMS];
	if (is_dense(ctx, t)) {
		/* empty_strided with t's strides, size-1 dims' included */
		memcpy(stride, t->stride, (size_t)t->ndim * sizeof(*stride));
	} else {
		/* TensorFactories.cpp empty_like: infer_dense_strides keeps t's memory order */
		ti_dim own[1][TI_META_MAX_DIMS];
		int perm[TI_META_MAX_DIMS];
		memcpy(own[0], t->stride, (size_t)t->ndim * sizeof(own[0][0]));
		memory_order(ctx, own, 1, t->ndim, t->shape, perm);
		strides_in_order(ctx, t->ndim, t->shape, perm, true, stride);
	}
	ti_meta_tensor *r = ti_meta_view(ctx, t, t->ndim, t->shape, stride);
	if (r) {
		r->dtype = dtype;
		r->requires_grad = false;
	}
	return r;
}

ti_dtype ti_dtype_to_float(const ti_shape_ctx *ctx, ti_dtype dt)
{
	return ti_dtype_is_integral(dt, true) ? ctx->default_dtype : dt;
}

/* An operand's strides in the broadcast frame: 0 where it is broadcast (TensorIterator::compute_strides). */
static void frame_strides(const ti_meta_tensor *t, int ndim, const ti_dim *shape, ti_dim *out)
{
	int offset = ndim - t->ndim;
	for (int i = 0; i < ndim; i++) {
		int j = i - offset;
		bool broadcast = j < 0 || (is_int_value(t->shape[j], 1) && !is_int_value(shape[i], 1));
		out[i] = broadcast ? ti_dim_int(0) : t->stride[j];
	}
}

/* Output strides by TensorIterator's general rule: the operands' memory order, dense. */
static void iterator_strides(ti_shape_ctx *ctx, const ti_meta_tensor *const *tensors, int count,
                             int ndim, const ti_dim *shape, ti_dim *stride)
{
	ti_dim strides[MAX_OPERANDS][TI_META_MAX_DIMS];
	int perm[TI_META_MAX_DIMS];
	for (int k = 0; k < count; k++)
		frame_strides(tensors[k], ndim, shape, strides[k]);
	if (memory_order(ctx, strides, count, ndim, shape, perm))
		ti_contiguous_strides(ctx, ndim, shape, stride); /* C order: a plain contiguous tensor */
	else
		strides_in_order(ctx, ndim, shape, perm, false, stride); /* compatible_stride */
}

/* TensorIterator's fast setup: every operand of the result's shape and laid out alike. */
static ti_meta_tensor *fast_setup(ti_shape_ctx *ctx, const ti_meta_tensor *const *tensors, int count,
                                  ti_dtype dtype, int ndim, const ti_dim *shape)
{
	/* is_contiguous(ChannelsLast) is a 4-d layout: channels_last_3d takes the dense path */
	bool contiguous = true, channels_last = ndim == 4, dense = true;
	for (int k = 0; k < count; k++) {
		contiguous &= ti_meta_is_contiguous(ctx, tensors[k]);
		channels_last &= is_channels_last_contiguous(ctx, tensors[k]);
		dense &= is_dense(ctx, tensors[k]);
		for (int i = 0; dense && k > 0 && i < ndim; i++)
			dense = ti_dim_same(tensors[k]->stride[i], tensors[0]->stride[i]);
	}
	if (contiguous || count == 0)
		return ti_meta_new(ctx, dtype, ndim, shape);
	if (channels_last)
		return ti_meta_new_channels_last(ctx, dtype, ndim, shape);
	if (dense) {
		ti_meta_tensor *t = ti_meta_view(ctx, NULL, ndim, shape, tensors[0]->stride);
		if (t)
			t->dtype = dtype;
		return t;
	}
	return NULL;
}

ti_status ti_elementwise_new(ti_shape_ctx *ctx, const ti_meta_tensor *const *operands, int count,
                             ti_dtype dtype, ti_meta_tensor **out, ti_error *err)
{
	ti_dim shape[TI_META_MAX_DIMS], next[TI_META_MAX_DIMS];
	const ti_meta_tensor *tensors[MAX_OPERANDS];
	int ndim = 0, n = 0;
	bool requires_grad = false;
	if (count > MAX_OPERANDS)
		return TI_FAIL(err, TI_E_INVALID, "too many operands for one pointwise op");
	memset(shape, 0, sizeof(shape)); /* a zero-dim result reads none of it */
	for (int k = 0; k < count; k++) {
		const ti_meta_tensor *t = operands[k];
		int rank = t ? t->ndim : 0;
		ti_status st = ti_broadcast(ctx, ndim, shape, rank, t ? t->shape : NULL, &ndim, next, err);
		if (st)
			return st;
		memcpy(shape, next, (size_t)ndim * sizeof(*shape));
		if (t) {
			tensors[n++] = t;
			requires_grad |= t->requires_grad;
		}
	}
	/* a Python number is a zero-dim operand: it spoils "all of the same shape" unless all are zero-dim */
	bool same_shape = true;
	for (int k = 0; k < count; k++) {
		const ti_meta_tensor *t = operands[k];
		int rank = t ? t->ndim : 0;
		same_shape &= rank == ndim;
		for (int i = 0; same_shape && i < ndim; i++)
			same_shape = ti_dim_same(t->shape[i], shape[i]);
	}
	ti_meta_tensor *r = same_shape ? fast_setup(ctx, tensors, n, dtype, ndim, shape) : NULL;
	if (!r) {
		ti_dim stride[TI_META_MAX_DIMS];
		iterator_strides(ctx, tensors, n, ndim, shape, stride);
		if ((r = ti_meta_view(ctx, NULL, ndim, shape, stride)))
			r->dtype = dtype;
	}
	if (!r)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a pointwise result");
	r->requires_grad = requires_grad && (ti_dtype_is_floating(dtype) || ti_dtype_is_complex(dtype));
	*out = r;
	return TI_OK;
}

ti_status ti_elementwise_output(ti_op_call *call, const ti_meta_tensor *t, int flops_per_element, ti_error *err)
{
	ti_status st = ti_call_output_tensor(call, t, err);
	if (st)
		return st;
	ti_symctx *s = call->ctx->sym;
	ti_call_flops(call, ti_dim_mul(s, ti_meta_numel(call->ctx, t), ti_dim_int(flops_per_element)));
	return TI_OK;
}

/* Runs the pointwise op over operands and adds its one output, one flop per element. */
static ti_status pointwise(ti_op_call *call, const ti_meta_tensor *const *operands, int count,
                           ti_dtype dtype, ti_error *err)
{
	ti_meta_tensor *out;
	ti_status st = ti_elementwise_new(call->ctx, operands, count, dtype, &out, err);
	return st ? st : ti_elementwise_output(call, out, 1, err);
}

/* ---- binary arithmetic, comparisons, logical and bitwise ops ---- */

/* The tensor of an argument, or NULL for a Python number. */
static const ti_meta_tensor *tensor_of(const ti_arg *a)
{
	return a->kind == TI_ARG_TENSOR ? a->as.tensor : NULL;
}

/* The dtype an operand has in ATen: a Python bool, int, float is wrapped as Bool, Long, Double. */
static ti_dtype operand_dtype(const ti_arg *a)
{
	switch (a->kind) {
	case TI_ARG_TENSOR: return a->as.tensor->dtype;
	case TI_ARG_BOOL: return TI_DT_BOOL;
	case TI_ARG_INT: return TI_DT_INT64;
	default: return TI_DT_FLOAT64;
	}
}

/* c10::promoteTypes refuses some pairs: its messages. */
static ti_status promotion_error(const ti_arg *a, const ti_arg *b, ti_error *err)
{
	ti_dtype da = operand_dtype(a), db = operand_dtype(b);
	bool wide_unsigned = da == TI_DT_UINT16 || da == TI_DT_UINT32 || da == TI_DT_UINT64 ||
	                     db == TI_DT_UINT16 || db == TI_DT_UINT32 || db == TI_DT_UINT64;
	return TI_FAIL(err, TI_E_SHAPE, "Promotion for %s types is not supported, attempted to promote %s and %s",
	               wide_unsigned ? "uint16, uint32, uint64" : "Float8", ti_dtype_torch_name(da),
	               ti_dtype_torch_name(db));
}

typedef enum binary_result {
	RESULT_COMMON, /* the promoted dtype: add, mul, remainder, maximum ... */
	RESULT_FLOAT,  /* integers compute in the default float dtype: true division, atan2 */
	RESULT_BOOL    /* comparisons and logical ops */
} binary_result;

/* The promoted dtype of the first two arguments (ATen's iter.common_dtype()). */
static ti_status common_dtype(ti_op_call *call, ti_dtype *out, ti_error *err)
{
	const ti_arg *args = call->in.args;
	*out = ti_result_type(call->ctx, args, 2);
	if (*out == TI_DT_INVALID)
		return promotion_error(&args[0], &args[1], err);
	return TI_OK;
}

/* The pointwise op over the first two bound arguments, whatever they are named. */
static ti_status binary(ti_op_call *call, binary_result kind, ti_error *err)
{
	ti_dtype common;
	ti_status st = common_dtype(call, &common, err);
	if (st)
		return st;
	ti_dtype dtype = kind == RESULT_BOOL ? TI_DT_BOOL : kind == RESULT_FLOAT ? ti_dtype_to_float(call->ctx, common) : common;
	const ti_meta_tensor *operands[2] = {tensor_of(&call->in.args[0]), tensor_of(&call->in.args[1])};
	return pointwise(call, operands, 2, dtype, err);
}

static ti_status binary_common(ti_op_call *call, ti_error *err) { return binary(call, RESULT_COMMON, err); }
static ti_status binary_float(ti_op_call *call, ti_error *err) { return binary(call, RESULT_FLOAT, err); }
static ti_status binary_bool(ti_op_call *call, ti_error *err) { return binary(call, RESULT_BOOL, err); }

/* BinaryOps.cpp alpha_check, against the promoted dtype. */
static ti_status check_alpha(ti_op_call *call, ti_error *err)
{
	ti_dtype common;
	ti_status st = common_dtype(call, &common, err);
	if (st)
		return st;
	const ti_arg *alpha = ti_call_arg(call, "alpha");
	if (alpha->kind == TI_ARG_BOOL && common != TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "Boolean alpha only supported for Boolean results.");
	if (alpha->kind == TI_ARG_FLOAT && !ti_dtype_is_floating(common) && !ti_dtype_is_complex(common))
		return TI_FAIL(err, TI_E_SHAPE, "For integral input tensors, argument alpha must not be a floating point number.");
	return TI_OK;
}

/* BinaryOps.cpp sub_check: bool tensors (and Python bools) cannot be subtracted. */
static ti_status check_sub(ti_op_call *call, ti_error *err)
{
	bool a = operand_dtype(&call->in.args[0]) == TI_DT_BOOL, b = operand_dtype(&call->in.args[1]) == TI_DT_BOOL;
	if (a && b)
		return TI_FAIL(err, TI_E_SHAPE, "Subtraction, the `-` operator, with two bool tensors is not supported. "
		               "Use the `^` or `logical_xor()` operator instead.");
	if (a || b)
		return TI_FAIL(err, TI_E_SHAPE, "Subtraction, the `-` operator, with a bool tensor is not supported. "
		               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	return TI_OK;
}

static ti_status add_rule(ti_op_call *call, ti_error *err)
{
	ti_status st = check_alpha(call, err);
	return st ? st : binary(call, RESULT_COMMON, err);
}

/* sub and rsub (other - alpha * input): the same checks, the same result. */
static ti_status sub_rule(ti_op_call *call, ti_error *err)
{
	ti_status st = check_sub(call, err);
	return st ? st : add_rule(call, err);
}

static ti_status div_rule(ti_op_call *call, ti_error *err)
{
	const char *mode = ti_call_str(call, "rounding_mode");
	if (!mode)
		return binary(call, RESULT_FLOAT, err);
	if (strcmp(mode, "trunc") && strcmp(mode, "floor"))
		return TI_FAIL(err, TI_E_SHAPE,
		               "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", mode);
	return binary(call, RESULT_COMMON, err);
}

static ti_status floor_divide_rule(ti_op_call *call, ti_error *err)
{
	ti_dtype common;
	ti_status st = common_dtype(call, &common, err);
	if (st)
		return st;
	/* torch/_refs floor_divide, which the meta device runs */
	if (common == TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "torch.bool not supported for floor_divide");
	return binary(call, RESULT_COMMON, err);
}

/* maximum, minimum, fmax, fmin: no order on complex numbers. */
static ti_status min_max_rule(ti_op_call *call, ti_error *err)
{
	if (ti_dtype_is_complex(operand_dtype(&call->in.args[0])) || ti_dtype_is_complex(operand_dtype(&call->in.args[1])))
		return TI_FAIL(err, TI_E_SHAPE, "%s not implemented for complex tensors.", call->rule->parsed->name);
	return binary(call, RESULT_COMMON, err);
}

static ti_status pow_rule(ti_op_call *call, ti_error *err)
{
	const ti_arg *base = &call->in.args[0], *exponent = &call->in.args[1];
	/* pow.Tensor_Scalar's meta: NumPy refuses integers to negative integer powers */
	bool negative = exponent->kind == TI_ARG_INT && ti_dim_is_int(exponent->as.dim) && exponent->as.dim.value < 0;
	if (base->kind == TI_ARG_TENSOR && ti_dtype_is_integral(base->as.tensor->dtype, true) && negative)
		return TI_FAIL(err, TI_E_SHAPE, "Integers to negative integer powers are not allowed.");
	return binary(call, RESULT_COMMON, err);
}

/* ---- where, masked_fill, clamp ---- */

/* "torch.Size([3, 4])" */
static const char *size_repr(ti_shape_ctx *ctx, int ndim, const ti_dim *shape)
{
	return ti_arena_printf(ctx->arena, "torch.Size(%s)", ti_shape_str(ctx, ndim, shape));
}

/*
 * torch/_refs _broadcast_shapes, which where() runs on the meta device: the
 * common shape grows in place, and a mismatch names the tensor's index among
 * the tensor arguments.
 */
static ti_status refs_broadcast(ti_shape_ctx *ctx, const ti_meta_tensor *const *tensors, int count,
                                int *ndim, ti_dim *common, ti_error *err)
{
	int n = 0, index = 0;
	for (int k = 0; k < count; k++)
		if (tensors[k] && tensors[k]->ndim > n)
			n = tensors[k]->ndim;
	for (int i = 0; i < n; i++)
		common[i] = ti_dim_int(1);
	for (int k = 0; k < count; k++) {
		const ti_meta_tensor *t = tensors[k];
		if (!t)
			continue;
		for (int idx = -1; idx >= -t->ndim; idx--) {
			ti_dim *c = &common[n + idx], d = t->shape[t->ndim + idx];
			if (is_int_value(*c, 1)) {
				*c = d;
			} else if (!is_int_value(d, 1) && !ti_dim_assume(ctx->sym, *c, TI_CMP_EQ, d)) {
				char buf[64];
				return TI_FAIL(err, TI_E_SHAPE,
				               "Attempting to broadcast a dimension of length %s at %d! Mismatching argument at "
				               "index %d had %s; but expected shape should be broadcastable to %s",
				               ti_dim_format(d, buf, sizeof(buf)), idx, index,
				               size_repr(ctx, t->ndim, t->shape), ti_shape_str(ctx, n, common));
			}
		}
		index++;
	}
	*ndim = n;
	return TI_OK;
}

static ti_status where_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *condition = ti_call_tensor(call, "condition");
	const ti_arg *input = ti_call_arg(call, "input"), *other = ti_call_arg(call, "other");
	bool no_input = ti_call_is_none(call, "input"), no_other = ti_call_is_none(call, "other");
	if (no_input && no_other) {
		/* torch.where(condition) is torch.nonzero(condition, as_tuple=True) */
		ti_arg args[] = {ti_arg_tensor(condition), ti_arg_named("as_tuple", ti_arg_bool(true))};
		return ti_call_forward(call, "nonzero", args, 2, err);
	}
	if (no_input || no_other)
		return TI_FAIL(err, TI_E_CORRUPT, "where() missing required argument '%s'", no_input ? "input" : "other");
	if (condition->dtype != TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "expected predicate to be bool, got torch.%s", ti_dtype_name(condition->dtype));
	const ti_meta_tensor *tensors[3] = {condition, tensor_of(input), tensor_of(other)};
	ti_dim shape[TI_META_MAX_DIMS];
	int ndim = 0;
	ti_status st = refs_broadcast(call->ctx, tensors, 3, &ndim, shape, err);
	if (st)
		return st;
	ti_arg values[2] = {*input, *other};
	ti_dtype dtype = ti_result_type(call->ctx, values, 2);
	if (dtype == TI_DT_INVALID)
		return promotion_error(input, other, err);
	/* the prim's layout comes from its tensor arguments only */
	const ti_meta_tensor *operands[3];
	int n = 0;
	for (int k = 0; k < 3; k++)
		if (tensors[k])
			operands[n++] = tensors[k];
	return pointwise(call, operands, n, dtype, err);
}

/* caffe2::TypeMeta names, which masked_fill's message prints (as GCC spells them). */
static const char *type_meta_name(ti_dtype dt)
{
	static const char *const names[TI_DT_COUNT] = {
		[TI_DT_FLOAT32] = "float", [TI_DT_FLOAT64] = "double", [TI_DT_FLOAT16] = "c10::Half",
		[TI_DT_BFLOAT16] = "c10::BFloat16", [TI_DT_INT64] = "long int", [TI_DT_INT32] = "int",
		[TI_DT_INT16] = "short int", [TI_DT_INT8] = "signed char", [TI_DT_UINT8] = "unsigned char",
		[TI_DT_BOOL] = "bool", [TI_DT_COMPLEX32] = "c10::complex<c10::Half>",
		[TI_DT_COMPLEX64] = "c10::complex<float>", [TI_DT_COMPLEX128] = "c10::complex<double>",
	};
	return (unsigned)dt < TI_DT_COUNT && names[dt] ? names[dt] : ti_dtype_name(dt);
}

static ti_status masked_fill_rule(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input"), *mask = ti_call_tensor(call, "mask");
	const ti_meta_tensor *value = ti_call_tensor(call, "value");
	if (mask->dtype != TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
		               type_meta_name(mask->dtype));
	if (value && value->ndim != 0)
		return TI_FAIL(err, TI_E_SHAPE,
		               "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).",
		               value->ndim);
	/* masked_fill expands mask and input together (expand_outplace) and fills a contiguous clone */
	ti_dim shape[TI_META_MAX_DIMS];
	int ndim = 0;
	ti_status st = ti_broadcast(call->ctx, mask->ndim, mask->shape, input->ndim, input->shape, &ndim, shape, err);
	if (st)
		return st;
	ti_meta_tensor *out = ti_meta_new(call->ctx, input->dtype, ndim, shape);
	if (out)
		out->requires_grad = input->requires_grad || (value && value->requires_grad);
	return out ? ti_elementwise_output(call, out, 1, err) : TI_FAIL(err, TI_E_NOMEM, "out of memory");
}

/* clamp, clip, clamp_min, clamp_max: bounds are both tensors or both numbers. */
static ti_status clamp_rule(ti_op_call *call, ti_error *err)
{
	const ti_arg *input = ti_call_arg(call, "input");
	const ti_arg *bounds[2] = {ti_call_arg(call, "min"), ti_call_arg(call, "max")};
	ti_arg values[3] = {*input};
	const ti_meta_tensor *operands[3] = {input->as.tensor};
	int nvalues = 1, ntensors = 1, nscalars = 0;
	for (int k = 0; k < 2; k++) {
		if (bounds[k]->kind == TI_ARG_NONE || bounds[k]->kind == TI_ARG_ABSENT)
			continue;
		values[nvalues++] = *bounds[k];
		if (bounds[k]->kind == TI_ARG_TENSOR)
			operands[ntensors++] = bounds[k]->as.tensor;
		else
			nscalars++;
	}
	if (nvalues == 1)
		return TI_FAIL(err, TI_E_SHAPE, "torch.clamp: At least one of 'min' or 'max' must not be None");
	if (nscalars && ntensors > 1)
		return TI_FAIL(err, TI_E_CORRUPT, "%s(): min and max must both be tensors or both be numbers",
		               call->rule->parsed->name);
	if (ti_dtype_is_complex(input->as.tensor->dtype))
		return TI_FAIL(err, TI_E_SHAPE, "clamp is not supported for complex types");
	/* TensorCompare.cpp: the bounds take part in type promotion, numbers included */
	ti_dtype dtype = ti_result_type(call->ctx, values, nvalues);
	if (dtype == TI_DT_INVALID)
		return promotion_error(&values[0], &values[1], err);
	return pointwise(call, operands, ntensors, dtype, err);
}

/* ---- unary math ---- */

static ti_status unary(ti_op_call *call, ti_dtype dtype, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	return pointwise(call, &input, 1, dtype, err);
}

static const ti_meta_tensor *first_input(ti_op_call *call) { return ti_call_tensor(call, "input"); }

static ti_status unary_same(ti_op_call *call, ti_error *err) { return unary(call, first_input(call)->dtype, err); }
static ti_status unary_bool(ti_op_call *call, ti_error *err) { return unary(call, TI_DT_BOOL, err); }

/* UnaryOps.cpp's unary_float ops: integer and bool inputs compute in the default dtype. */
static ti_status unary_float(ti_op_call *call, ti_error *err)
{
	return unary(call, ti_dtype_to_float(call->ctx, first_input(call)->dtype), err);
}

static ti_status neg_rule(ti_op_call *call, ti_error *err)
{
	if (first_input(call)->dtype == TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "Negation, the `-` operator, on a bool tensor is not supported. "
		               "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	return unary_same(call, err);
}

static ti_status positive_rule(ti_op_call *call, ti_error *err)
{
	if (first_input(call)->dtype == TI_DT_BOOL)
		return TI_FAIL(err, TI_E_SHAPE, "The `+` operator, on a bool tensor is not supported.");
	return unary_same(call, err);
}

/* square is pow(input, 2): a bool input promotes with the int 2 to int64. */
static ti_status square_rule(ti_op_call *call, ti_error *err)
{
	ti_dtype dt = first_input(call)->dtype;
	return unary(call, dt == TI_DT_BOOL ? TI_DT_INT64 : dt, err);
}

/* ---- the table ---- */

#define BINARY(name) name "(Tensor|Scalar input, Tensor|Scalar other)"
#define TENSOR_OTHER(name) name "(Tensor input, Tensor|Scalar other)"
#define TENSORS(name) name "(Tensor input, Tensor other)"
#define UNARY(name) name "(Tensor input)"

ti_op_rule ti_ops_elementwise[] = {
	/* arithmetic */
	{"add(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1)", add_rule, TI_COUNT_RULE, NULL},
	{"sub(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1)", sub_rule, TI_COUNT_RULE, NULL},
	{"subtract(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1)", sub_rule, TI_COUNT_RULE, NULL},
	{"rsub(Tensor input, Tensor|Scalar other, Scalar alpha=1)", sub_rule, TI_COUNT_RULE, NULL},
	{BINARY("mul"), binary_common, TI_COUNT_RULE, NULL},
	{BINARY("multiply"), binary_common, TI_COUNT_RULE, NULL},
	{"div(Tensor|Scalar input, Tensor|Scalar other, *, str? rounding_mode=None)", div_rule, TI_COUNT_RULE, NULL},
	{"divide(Tensor|Scalar input, Tensor|Scalar other, *, str? rounding_mode=None)", div_rule, TI_COUNT_RULE, NULL},
	{BINARY("true_divide"), binary_float, TI_COUNT_RULE, NULL},
	{BINARY("floor_divide"), floor_divide_rule, TI_COUNT_RULE, NULL},
	{BINARY("remainder"), binary_common, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("fmod"), binary_common, TI_COUNT_RULE, NULL},
	{"pow(Tensor|Scalar input, Tensor|Scalar exponent)", pow_rule, TI_COUNT_RULE, NULL},
	{"float_power(Tensor|Scalar input, Tensor|Scalar exponent)", binary_common, TI_COUNT_RULE, NULL},
	{TENSORS("maximum"), min_max_rule, TI_COUNT_RULE, NULL},
	{TENSORS("minimum"), min_max_rule, TI_COUNT_RULE, NULL},
	{TENSORS("fmax"), min_max_rule, TI_COUNT_RULE, NULL},
	{TENSORS("fmin"), min_max_rule, TI_COUNT_RULE, NULL},
	{TENSORS("atan2"), binary_float, TI_COUNT_RULE, NULL},
	{TENSORS("arctan2"), binary_float, TI_COUNT_RULE, NULL},
	{TENSORS("hypot"), binary_common, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("copysign"), binary_float, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("xlogy"), binary_float, TI_COUNT_RULE, NULL},
	/* comparisons */
	{TENSOR_OTHER("eq"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("ne"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("not_equal"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("lt"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("less"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("le"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("less_equal"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("gt"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("greater"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("ge"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("greater_equal"), binary_bool, TI_COUNT_RULE, NULL},
	/* logical and bitwise */
	{TENSORS("logical_and"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSORS("logical_or"), binary_bool, TI_COUNT_RULE, NULL},
	{TENSORS("logical_xor"), binary_bool, TI_COUNT_RULE, NULL},
	{UNARY("logical_not"), unary_bool, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("bitwise_and"), binary_common, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("bitwise_or"), binary_common, TI_COUNT_RULE, NULL},
	{TENSOR_OTHER("bitwise_xor"), binary_common, TI_COUNT_RULE, NULL},
	{UNARY("bitwise_not"), unary_same, TI_COUNT_RULE, NULL},
	/* selection */
	{"where(Tensor condition, Tensor|Scalar? input=None, Tensor|Scalar? other=None)", where_rule, TI_COUNT_RULE, NULL},
	{"masked_fill(Tensor input, Tensor mask, Tensor|Scalar value)", masked_fill_rule, TI_COUNT_RULE, NULL},
	{"clamp(Tensor input, Tensor|Scalar? min=None, Tensor|Scalar? max=None)", clamp_rule, TI_COUNT_RULE, NULL},
	{"clip(Tensor input, Tensor|Scalar? min=None, Tensor|Scalar? max=None)", clamp_rule, TI_COUNT_RULE, NULL},
	{"clamp_min(Tensor input, Tensor|Scalar min)", clamp_rule, TI_COUNT_RULE, NULL},
	{"clamp_max(Tensor input, Tensor|Scalar max)", clamp_rule, TI_COUNT_RULE, NULL},
	/* unary, same dtype */
	{UNARY("neg"), neg_rule, TI_COUNT_RULE, NULL},
	{UNARY("negative"), neg_rule, TI_COUNT_RULE, NULL},
	{UNARY("positive"), positive_rule, TI_COUNT_RULE, NULL},
	{UNARY("abs"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("absolute"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("sign"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("sgn"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("square"), square_rule, TI_COUNT_RULE, NULL},
	{UNARY("floor"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("ceil"), unary_same, TI_COUNT_RULE, NULL},
	{"round(Tensor input, *, int decimals=0)", unary_same, TI_COUNT_RULE, NULL},
	{UNARY("trunc"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("fix"), unary_same, TI_COUNT_RULE, NULL},
	{UNARY("frac"), unary_same, TI_COUNT_RULE, NULL},
	{"nan_to_num(Tensor input, float? nan=0.0, float? posinf=None, float? neginf=None)", unary_same, TI_COUNT_RULE, NULL},
	/* unary, integers to floating point */
	{UNARY("exp"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("exp2"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("expm1"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("log"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("log2"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("log10"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("log1p"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("sqrt"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("rsqrt"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("reciprocal"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("sin"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("cos"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("tan"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("asin"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("arcsin"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("acos"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("arccos"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("atan"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("arctan"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("sinh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("cosh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("asinh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("arcsinh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("acosh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("arccosh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("atanh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("arctanh"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("erf"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("erfc"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("erfinv"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("deg2rad"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("rad2deg"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("lgamma"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("digamma"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("i0"), unary_float, TI_COUNT_RULE, NULL},
	{UNARY("sinc"), unary_float, TI_COUNT_RULE, NULL},
	{"logit(Tensor input, float? eps=None)", unary_float, TI_COUNT_RULE, NULL},
	/* unary, bool results */
	{UNARY("isnan"), unary_bool, TI_COUNT_RULE, NULL},
	{UNARY("isinf"), unary_bool, TI_COUNT_RULE, NULL},
	{UNARY("isposinf"), unary_bool, TI_COUNT_RULE, NULL},
	{UNARY("isneginf"), unary_bool, TI_COUNT_RULE, NULL},
	{UNARY("isfinite"), unary_bool, TI_COUNT_RULE, NULL},
	{UNARY("signbit"), unary_bool, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
