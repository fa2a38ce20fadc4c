/*
 * linalg.c - matrix products: matmul, mm, bmm, mv, dot, outer, addmm, addmv,
 * baddbmm, linear, bilinear, einsum.
 *
 * The rules follow PyTorch 2.x's aten/src/ATen/native/LinearAlgebra.cpp
 * (_matmul_impl, should_fold, the mm/addmm/addmv/bmm meta functions) and
 * Linear.cpp (linear, bilinear, einsum): the same dispatch decides which
 * check fires first, so a bad product fails with the message PyTorch gives
 * on that path ("mat1 and mat2 shapes cannot be multiplied (6x5 and 6x4)" for
 * a folded batch, the bmm wording for a broadcast batch).
 *
 * Counting: a product of [M, K] by [K, N] is M*N*K multiply-accumulates,
 * times the (broadcast) batch; a vector operand counts as a size-1 side.
 * Adding a bias or the `input` of addmm/addmv/baddbmm is one flop per output
 * element; outer is one flop (a multiply) per output element. einsum with two
 * or more operands counts the product of the sizes of all its distinct
 * subscripts (the ellipsis dimensions included) as MACs, the cost of the
 * unfactored sum; with one operand, a sum over subscripts counts one flop per
 * element summed and a pure diagonal/permutation counts nothing.
 *
 * Outputs are contiguous, except a one-operand einsum that sums nothing,
 * which is a view (a permutation, maybe of a diagonal) as in PyTorch. An
 * output requires grad when an input does, as under autograd's grad mode;
 * matmul's choice of path depends on it.
 */
#include <ctype.h>
#include <string.h>

#include "ops/tables.h"

/* ---- small helpers ---- */

static const char *dim_text(ti_shape_ctx *ctx, ti_dim d) { return ti_dim_str(ctx->sym, d); }

/* Equal, or assumed equal when symbolic and not provably different. */
static bool same_size(ti_shape_ctx *ctx, ti_dim a, ti_dim b)
{
	return ti_dim_assume(ctx->sym, a, TI_CMP_EQ, b);
}

static bool is_size(ti_dim d, int64_t v) { return ti_dim_is_int(d) && d.value == v; }

static ti_dim product(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	ti_dim p = ti_dim_int(1);
	for (int i = 0; i < n; i++)
		p = ti_dim_mul(ctx->sym, p, dims[i]);
	return p;
}

/* caffe2::TypeMeta names, which the mm family prints ("float != double"). */
static const char *typemeta_name(ti_dtype dt)
{
	static const char *const names[TI_DT_COUNT] = {
		[TI_DT_FLOAT32] = "float", [TI_DT_FLOAT64] = "double", [TI_DT_FLOAT16] = "c10::Half",
		[TI_DT_BFLOAT16] = "c10::BFloat16", [TI_DT_INT64] = "long int", [TI_DT_INT32] = "int",
		[TI_DT_INT16] = "short int", [TI_DT_INT8] = "signed char", [TI_DT_UINT8] = "unsigned char",
		[TI_DT_BOOL] = "bool", [TI_DT_COMPLEX32] = "c10::complex<c10::Half>",
		[TI_DT_COMPLEX64] = "c10::complex<float>", [TI_DT_COMPLEX128] = "c10::complex<double>",
	};
	return (unsigned)dt < TI_DT_COUNT && names[dt] ? names[dt] : ti_dtype_torch_name(dt);
}

/* addmm_impl_cpu_: the check every mm-shaped product meets after its shapes. */
static ti_status check_mm_dtypes(ti_dtype a, ti_dtype b, ti_error *err)
{
	if (a == b)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "expected m1 and m2 to have the same dtype, but got: %s != %s",
	               typemeta_name(a), typemeta_name(b));
}

/* The older TensorIterator wording, which the bmm, mv and einsum kernels still give. */
static ti_status check_scalar_type(ti_dtype expected, ti_dtype found, ti_error *err)
{
	if (expected == found)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "expected scalar type %s but found %s", ti_dtype_torch_name(expected),
	               ti_dtype_torch_name(found));
}

/* A contiguous result; a floating one requires grad when an input does (autograd's grad mode). */
static ti_status add_result(ti_op_call *call, ti_dtype dtype, int ndim, const ti_dim *shape,
                            bool requires_grad, ti_error *err)
{
	ti_dim scalar[1] = {{1, NULL}}; /* a 0-d result still passes a valid pointer to memcpy */
	ti_meta_tensor *t = ti_meta_new(call->ctx, dtype, ndim, ndim ? shape : scalar);
	if (t) /* only floating and complex tensors can require grad */
		t->requires_grad = requires_grad && (ti_dtype_is_floating(dtype) || ti_dtype_is_complex(dtype));
	return ti_call_output_tensor(call, t, err);
}

/* A view with its last two dimensions swapped (Tensor.mT, and t() of a matrix). */
static const ti_meta_tensor *transposed(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	memcpy(shape, t->shape, (size_t)t->ndim * sizeof(*shape));
	memcpy(stride, t->stride, (size_t)t->ndim * sizeof(*stride));
	if (t->ndim >= 2) {
		int a = t->ndim - 2, b = t->ndim - 1;
		ti_dim s = shape[a], d = stride[a];
		shape[a] = shape[b], stride[a] = stride[b];
		shape[b] = s, stride[b] = d;
	}
	return ti_meta_view(ctx, t, t->ndim, shape, stride);
}

/* A view without dimension 0 (squeeze(0) of a size-1 dimension). */
static const ti_meta_tensor *without_first(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	return ti_meta_view(ctx, t, t->ndim - 1, t->shape + 1, t->stride + 1);
}

/* ---- the checks of mm, mv, bmm and dot, by their sizes ---- */

static ti_status check_mm(ti_shape_ctx *ctx, ti_dim rows1, ti_dim cols1, ti_dim rows2, ti_dim cols2,
                          ti_error *err)
{
	if (same_size(ctx, cols1, rows2))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 shapes cannot be multiplied (%sx%s and %sx%s)",
	               dim_text(ctx, rows1), dim_text(ctx, cols1), dim_text(ctx, rows2), dim_text(ctx, cols2));
}

/* addmv's check: input (numel) is rows or 1; for mv the input is the result, of size rows. */
static ti_status check_mv(ti_shape_ctx *ctx, ti_dim input, ti_dim rows, ti_dim cols, ti_dim vec, ti_error *err)
{
	if (same_size(ctx, cols, vec) && (is_size(input, 1) || same_size(ctx, input, rows)))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "size mismatch, got input (%s), mat (%sx%s), vec (%s)", dim_text(ctx, input),
	               dim_text(ctx, rows), dim_text(ctx, cols), dim_text(ctx, vec));
}

/* common_checks_baddbmm_bmm: batch1 [b, n, k] against batch2 [b2, k2, p]. */
static ti_status check_bmm(ti_shape_ctx *ctx, const ti_dim *batch1, const ti_dim *batch2, ti_error *err)
{
	if (same_size(ctx, batch2[0], batch1[0]) && same_size(ctx, batch2[1], batch1[2]))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE,
	               "Expected size for first two dimensions of batch2 tensor to be: [%s, %s] but got: [%s, %s].",
	               dim_text(ctx, batch1[0]), dim_text(ctx, batch1[2]), dim_text(ctx, batch2[0]),
	               dim_text(ctx, batch2[1]));
}

static ti_status check_bmm_ranks(const ti_meta_tensor *batch1, const ti_meta_tensor *batch2, ti_error *err)
{
	if (batch1->ndim != 3)
		return TI_FAIL(err, TI_E_SHAPE, "batch1 must be a 3D tensor");
	if (batch2->ndim != 3)
		return TI_FAIL(err, TI_E_SHAPE, "batch2 must be a 3D tensor");
	return TI_OK;
}

/* dot_check in LinearAlgebra.cpp. */
static ti_status check_dot(ti_shape_ctx *ctx, const ti_meta_tensor *a, const ti_meta_tensor *b, ti_error *err)
{
	if (a->ndim != 1 || b->ndim != 1)
		return TI_FAIL(err, TI_E_SHAPE, "1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
	if (a->dtype != b->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "dot : expected both vectors to have same dtype, but found %s and %s",
		               ti_dtype_torch_name(a->dtype), ti_dtype_torch_name(b->dtype));
	if (!same_size(ctx, a->shape[0], b->shape[0])) {
		const char *n = dim_text(ctx, a->shape[0]), *m = dim_text(ctx, b->shape[0]);
		return TI_FAIL(err, TI_E_SHAPE,
		               "inconsistent tensor size, expected tensor [%s] and src [%s] to have the same number of "
		               "elements, but got %s and %s elements respectively", n, m, n, m);
	}
	return TI_OK;
}

/* mv = addmv_ into an empty [rows]: the rank check, then the sizes, then the kernel's dtype check. */
static ti_status check_mv_call(ti_shape_ctx *ctx, const ti_meta_tensor *mat, const ti_meta_tensor *vec, ti_error *err)
{
	if (mat->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "Dimension specified as 0 but tensor has no dimensions");
	if (mat->ndim != 2 || vec->ndim != 1)
		return TI_FAIL(err, TI_E_SHAPE, "vector + matrix @ vector expected, got 1, %d, %d", mat->ndim, vec->ndim);
	ti_status st = check_mv(ctx, mat->shape[0], mat->shape[0], mat->shape[1], vec->shape[0], err);
	return st ? st : check_scalar_type(mat->dtype, vec->dtype, err);
}

/* ---- matmul: _matmul_impl's dispatch ---- */

typedef struct product_shape {
	int ndim;
	ti_dim shape[TI_META_MAX_DIMS];
	ti_dim macs;
} product_shape;

/*
 * should_fold: a >= 3-D operand times a 1-D or 2-D one is folded into one mm
 * or mv when the other operand requires grad, or when the folding needs no
 * copy (the larger operand's leading dimensions are contiguous).
 */
static bool should_fold(ti_shape_ctx *ctx, const ti_meta_tensor *a, const ti_meta_tensor *b)
{
	bool a_larger = a->ndim >= b->ndim;
	const ti_meta_tensor *t1 = a_larger ? a : transposed(ctx, b);
	int small = a_larger ? b->ndim : a->ndim;
	if (!t1 || !(t1->ndim >= 3 && small <= 2))
		return false;
	if (a_larger ? b->requires_grad : a->requires_grad)
		return true;
	if (a->ndim == 2)
		return false;
	for (int i = 0; i < t1->ndim; i++)
		if (is_size(t1->shape[i], 0))
			return true;
	for (int i = 0; i < t1->ndim - 2; i++)
		if (!ti_dim_same(t1->stride[i], ti_dim_mul(ctx->sym, t1->stride[i + 1], t1->shape[i + 1])))
			return false;
	return true;
}

/* The folded path: the larger operand (transposed when it is the second) as one [rows, k] matrix. */
static ti_status matmul_folded(ti_shape_ctx *ctx, const ti_meta_tensor *a, const ti_meta_tensor *b,
                               product_shape *out, ti_error *err)
{
	bool transpose = b->ndim > a->ndim;
	const ti_meta_tensor *t1 = transpose ? transposed(ctx, b) : a;
	const ti_meta_tensor *t2 = transpose ? transposed(ctx, a) : b;
	if (!t1 || !t2)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for matmul");
	ti_dim rows = product(ctx, t1->shape, t1->ndim - 1), k = t1->shape[t1->ndim - 1];
	ti_status st = t2->ndim == 2 ? check_mm(ctx, rows, k, t2->shape[0], t2->shape[1], err)
	                             : check_mv(ctx, rows, rows, k, t2->shape[0], err);
	if (st)
		return st;
	out->ndim = t1->ndim - 1;
	memcpy(out->shape, t1->shape, (size_t)out->ndim * sizeof(ti_dim));
	ti_dim cols = ti_dim_int(1);
	if (t2->ndim == 2) {
		cols = t2->shape[1];
		out->shape[out->ndim++] = cols;
		if (transpose) { /* output.mT(): the product was computed transposed */
			ti_dim s = out->shape[out->ndim - 1];
			out->shape[out->ndim - 1] = out->shape[out->ndim - 2];
			out->shape[out->ndim - 2] = s;
		}
	}
	out->macs = ti_dim_mul(ctx->sym, ti_dim_mul(ctx->sym, rows, k), cols);
	return t2->ndim == 2 ? check_mm_dtypes(a->dtype, b->dtype, err) : check_scalar_type(t1->dtype, t2->dtype, err);
}

static ti_status matmul_shape(ti_shape_ctx *ctx, const ti_meta_tensor *a, const ti_meta_tensor *b,
                              product_shape *out, ti_error *err);

/* The batched path: broadcast the batch dimensions, then one bmm. */
static ti_status matmul_batched(ti_shape_ctx *ctx, const ti_meta_tensor *a, const ti_meta_tensor *b,
                                product_shape *out, ti_error *err)
{
	int da = a->ndim, db = b->ndim;
	ti_dim n = da > 1 ? a->shape[da - 2] : ti_dim_int(1), m1 = a->shape[da - 1];
	ti_dim m2 = db > 1 ? b->shape[db - 2] : b->shape[0], p = db > 1 ? b->shape[db - 1] : ti_dim_int(1);
	int batch_a = da > 2 ? da - 2 : 0, batch_b = db > 2 ? db - 2 : 0;
	/* A size-1 batch of an operand that requires grad is squeezed rather than expanded. */
	if (da == 3 && db == 3 && ti_dim_compare(ctx->sym, a->shape[0], TI_CMP_NE, b->shape[0]) == TI_TRUE) {
		if (is_size(a->shape[0], 1) && a->requires_grad)
			return matmul_shape(ctx, without_first(ctx, a), b, out, err);
		if (is_size(b->shape[0], 1) && b->requires_grad)
			return matmul_shape(ctx, a, without_first(ctx, b), out, err);
	}
	ti_status st = ti_broadcast(ctx, batch_a, a->shape, batch_b, b->shape, &out->ndim, out->shape, err);
	if (st)
		return st;
	ti_dim batch = product(ctx, out->shape, out->ndim);
	ti_dim batch1[3] = {batch, n, m1}, batch2[3] = {batch, m2, p};
	if ((st = check_bmm(ctx, batch1, batch2, err)))
		return st;
	if (da > 1)
		out->shape[out->ndim++] = n;
	if (db > 1)
		out->shape[out->ndim++] = p;
	out->macs = ti_dim_mul(ctx->sym, ti_dim_mul(ctx->sym, batch, n), ti_dim_mul(ctx->sym, m1, p));
	return check_scalar_type(a->dtype, b->dtype, err);
}

/* torch.matmul's shape, checks and MACs, by operand ranks as _matmul_impl dispatches. */
static ti_status matmul_shape(ti_shape_ctx *ctx, const ti_meta_tensor *a, const ti_meta_tensor *b,
                              product_shape *out, ti_error *err)
{
	if (!a || !b)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for matmul");
	int da = a->ndim, db = b->ndim;
	ti_status st;
	out->ndim = 0;
	if (da == 0 || db == 0)
		return TI_FAIL(err, TI_E_SHAPE, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
		               da, db);
	if (da == 1 && db == 1) {
		out->macs = a->shape[0];
		return check_dot(ctx, a, b, err);
	}
	if (da == 2 && db == 1) {
		out->shape[out->ndim++] = a->shape[0];
		out->macs = ti_dim_mul(ctx->sym, a->shape[0], a->shape[1]);
		return check_mv_call(ctx, a, b, err);
	}
	if (da <= 2 && db == 2) { /* a vector is unsqueezed to [1, k] */
		ti_dim rows = da == 2 ? a->shape[0] : ti_dim_int(1), k = a->shape[da - 1];
		if ((st = check_mm(ctx, rows, k, b->shape[0], b->shape[1], err)))
			return st;
		if (da == 2)
			out->shape[out->ndim++] = rows;
		out->shape[out->ndim++] = b->shape[1];
		out->macs = ti_dim_mul(ctx->sym, ti_dim_mul(ctx->sym, rows, k), b->shape[1]);
		return check_mm_dtypes(a->dtype, b->dtype, err);
	}
	if (should_fold(ctx, a, b))
		return matmul_folded(ctx, a, b, out, err);
	return matmul_batched(ctx, a, b, out, err);
}

/* Runs matmul on two tensors and adds its output and count. */
static ti_status matmul_into(ti_op_call *call, const ti_meta_tensor *a, const ti_meta_tensor *b, ti_error *err)
{
	product_shape r;
	ti_status st = matmul_shape(call->ctx, a, b, &r, err);
	if (st)
		return st;
	ti_call_macs(call, r.macs);
	return add_result(call, a->dtype, r.ndim, r.shape, a->requires_grad || b->requires_grad, err);
}

static ti_status run_matmul(ti_op_call *call, ti_error *err)
{
	return matmul_into(call, ti_call_tensor(call, "input"), ti_call_tensor(call, "other"), err);
}

/* ---- mm, bmm, mv, dot, outer ---- */

static ti_status run_mm(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *a = ti_call_tensor(call, "input"), *b = ti_call_tensor(call, "mat2");
	if (a->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "self must be a matrix");
	if (b->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "mat2 must be a matrix");
	ti_status st = check_mm(ctx, a->shape[0], a->shape[1], b->shape[0], b->shape[1], err);
	if (!st)
		st = check_mm_dtypes(a->dtype, b->dtype, err);
	if (st)
		return st;
	ti_dim shape[2] = {a->shape[0], b->shape[1]};
	ti_call_macs(call, ti_dim_mul(ctx->sym, product(ctx, a->shape, 2), b->shape[1]));
	return add_result(call, a->dtype, 2, shape, a->requires_grad || b->requires_grad, err);
}

static ti_status run_bmm(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *a = ti_call_tensor(call, "input"), *b = ti_call_tensor(call, "mat2");
	ti_status st = check_bmm_ranks(a, b, err);
	if (!st)
		st = check_bmm(ctx, a->shape, b->shape, err);
	if (!st)
		st = check_scalar_type(a->dtype, b->dtype, err);
	if (st)
		return st;
	ti_dim shape[3] = {a->shape[0], a->shape[1], b->shape[2]};
	ti_call_macs(call, ti_dim_mul(ctx->sym, product(ctx, a->shape, 3), b->shape[2]));
	return add_result(call, b->dtype, 3, shape, a->requires_grad || b->requires_grad, err);
}

static ti_status run_mv(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *a = ti_call_tensor(call, "input"), *v = ti_call_tensor(call, "vec");
	ti_status st = check_mv_call(call->ctx, a, v, err);
	if (st)
		return st;
	ti_call_macs(call, product(call->ctx, a->shape, 2));
	return add_result(call, v->dtype, 1, a->shape, a->requires_grad || v->requires_grad, err);
}

static ti_status run_dot(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *a = ti_call_tensor(call, "input"), *b = ti_call_tensor(call, "tensor");
	ti_status st = check_dot(call->ctx, a, b, err);
	if (st)
		return st;
	ti_call_macs(call, a->shape[0]);
	return add_result(call, a->dtype, 0, NULL, a->requires_grad || b->requires_grad, err);
}

/* outer = input.reshape(n, 1) * vec2: type promotion as for mul. */
static ti_status run_outer(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *a = ti_call_tensor(call, "input"), *b = ti_call_tensor(call, "vec2");
	if (a->ndim != 1)
		return TI_FAIL(err, TI_E_SHAPE, "outer: Expected 1-D argument self, but got %d-D", a->ndim);
	if (b->ndim != 1)
		return TI_FAIL(err, TI_E_SHAPE, "outer: Expected 1-D argument vec2, but got %d-D", b->ndim);
	ti_dim shape[2] = {a->shape[0], b->shape[0]};
	ti_call_flops(call, product(call->ctx, shape, 2));
	return add_result(call, ti_promote_types(a->dtype, b->dtype), 2, shape, a->requires_grad || b->requires_grad,
	                  err);
}

/* ---- addmm, addmv, baddbmm ---- */

/*
 * expand_size(self, target): self must broadcast to target without growing
 * (ExpandUtils' inferExpandGeometry wording).
 */
static ti_status check_expand(ti_shape_ctx *ctx, const ti_meta_tensor *self, int n, const ti_dim *target,
                              ti_error *err)
{
	if (self->ndim > n)
		return TI_FAIL(err, TI_E_SHAPE,
		               "expand(torch.%sTensor{%s}, size=%s): the number of sizes provided (%d) must be greater or "
		               "equal to the number of dimensions in the tensor (%d)",
		               ti_dtype_torch_name(self->dtype), ti_meta_shape_str(ctx, self), ti_shape_str(ctx, n, target), n,
		               self->ndim);
	for (int i = n - 1, j = self->ndim - 1; j >= 0; i--, j--) {
		ti_dim have = self->shape[j];
		if (is_size(have, 1) || same_size(ctx, have, target[i]))
			continue;
		return TI_FAIL(err, TI_E_SHAPE,
		               "The expanded size of the tensor (%s) must match the existing size (%s) at non-singleton "
		               "dimension %d.  Target sizes: %s.  Tensor sizes: %s",
		               dim_text(ctx, target[i]), dim_text(ctx, have), i, ti_shape_str(ctx, n, target),
		               ti_meta_shape_str(ctx, self));
	}
	return TI_OK;
}

/* addmm's meta checks (ADDMM_META) and the expand of `self` its kernel does; fills the [rows, cols] result. */
static ti_status check_addmm(ti_shape_ctx *ctx, const ti_meta_tensor *self, const ti_meta_tensor *m1,
                             const ti_meta_tensor *m2, ti_dim *shape, ti_error *err)
{
	if (self->dtype != m2->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "self and mat2 must have the same dtype, but got %s and %s",
		               ti_dtype_torch_name(self->dtype), ti_dtype_torch_name(m2->dtype));
	if (m1->dtype != m2->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 must have the same dtype, but got %s and %s",
		               ti_dtype_torch_name(m1->dtype), ti_dtype_torch_name(m2->dtype));
	if (m1->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "mat1 must be a matrix, got %d-D tensor", m1->ndim);
	if (m2->ndim != 2)
		return TI_FAIL(err, TI_E_SHAPE, "mat2 must be a matrix, got %d-D tensor", m2->ndim);
	ti_status st = check_mm(ctx, m1->shape[0], m1->shape[1], m2->shape[0], m2->shape[1], err);
	if (st)
		return st;
	shape[0] = m1->shape[0];
	shape[1] = m2->shape[1];
	return check_expand(ctx, self, 2, shape, err);
}

/* The count of addmm on its result shape: M*N*K MACs and the addition of self. */
static void count_addmm(ti_op_call *call, const ti_dim *shape, ti_dim k)
{
	ti_dim out = product(call->ctx, shape, 2);
	ti_call_macs(call, ti_dim_mul(call->ctx->sym, out, k));
	ti_call_flops(call, out);
}

static ti_status run_addmm(ti_op_call *call, ti_error *err)
{
	const ti_meta_tensor *self = ti_call_tensor(call, "input");
	const ti_meta_tensor *m1 = ti_call_tensor(call, "mat1"), *m2 = ti_call_tensor(call, "mat2");
	ti_dim shape[2];
	ti_status st = check_addmm(call->ctx, self, m1, m2, shape, err);
	if (st)
		return st;
	count_addmm(call, shape, m1->shape[1]);
	return add_result(call, m1->dtype, 2, shape, self->requires_grad || m1->requires_grad || m2->requires_grad, err);
}

static ti_status run_addmv(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *self = ti_call_tensor(call, "input");
	const ti_meta_tensor *mat = ti_call_tensor(call, "mat"), *vec = ti_call_tensor(call, "vec");
	if (mat->ndim != 2 || vec->ndim != 1 || self->ndim > 1)
		return TI_FAIL(err, TI_E_SHAPE, "vector + matrix @ vector expected, got %d, %d, %d", self->ndim, mat->ndim,
		               vec->ndim);
	ti_dim self_size = self->ndim ? self->shape[0] : ti_dim_int(1);
	ti_status st = check_mv(ctx, self_size, mat->shape[0], mat->shape[1], vec->shape[0], err);
	if (!st)
		st = check_scalar_type(mat->dtype, vec->dtype, err);
	if (st)
		return st;
	ti_call_macs(call, product(ctx, mat->shape, 2));
	ti_call_flops(call, mat->shape[0]);
	return add_result(call, vec->dtype, 1, mat->shape,
	                  self->requires_grad || mat->requires_grad || vec->requires_grad, err);
}

static ti_status run_baddbmm(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *self = ti_call_tensor(call, "input");
	const ti_meta_tensor *b1 = ti_call_tensor(call, "batch1"), *b2 = ti_call_tensor(call, "batch2");
	ti_status st = check_bmm_ranks(b1, b2, err);
	if (st)
		return st;
	ti_dim shape[3] = {b1->shape[0], b1->shape[1], b2->shape[2]};
	if ((st = check_expand(ctx, self, 3, shape, err)))
		return st;
	if (self->dtype != b1->dtype || b1->dtype != b2->dtype)
		return TI_FAIL(err, TI_E_SHAPE, "Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s",
		               typemeta_name(self->dtype), typemeta_name(b1->dtype), typemeta_name(b2->dtype));
	if ((st = check_bmm(ctx, b1->shape, b2->shape, err)))
		return st;
	ti_dim out = product(ctx, shape, 3);
	ti_call_macs(call, ti_dim_mul(ctx->sym, out, b1->shape[2]));
	ti_call_flops(call, out);
	return add_result(call, b2->dtype, 3, shape, self->requires_grad || b1->requires_grad || b2->requires_grad,
	                  err);
}

/* ---- linear, bilinear ---- */

/* input [..., k] flattened to [rows, k] for addmm, then viewed back (_flatten_nd_linear). */
static ti_status linear_addmm(ti_op_call *call, const ti_meta_tensor *input, const ti_meta_tensor *weight_t,
                              const ti_meta_tensor *bias, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	int n = input->ndim;
	ti_dim flat[2] = {product(ctx, input->shape, n - 1), input->shape[n - 1]};
	ti_meta_tensor *folded = ti_meta_new(ctx, input->dtype, 2, flat);
	if (!folded)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for linear");
	ti_dim shape[TI_META_MAX_DIMS], mm[2];
	ti_status st = check_addmm(ctx, bias, folded, weight_t, mm, err);
	if (st)
		return st;
	count_addmm(call, mm, flat[1]);
	memcpy(shape, input->shape, (size_t)(n - 1) * sizeof(*shape));
	shape[n - 1] = mm[1];
	return add_result(call, input->dtype, n, shape, input->requires_grad || weight_t->requires_grad ||
	                  bias->requires_grad, err);
}

/* matmul(input, weight.t()), then an in-place add of the bias: it must broadcast to the result. */
static ti_status linear_matmul(ti_op_call *call, const ti_meta_tensor *input, const ti_meta_tensor *weight_t,
                               const ti_meta_tensor *bias, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_status st = matmul_into(call, input, weight_t, err);
	if (st || !bias)
		return st;
	const ti_meta_tensor *out = call->outputs[call->output_count - 1].as.tensor;
	ti_dim shape[TI_META_MAX_DIMS];
	int n;
	if ((st = ti_broadcast(ctx, out->ndim, out->shape, bias->ndim, bias->shape, &n, shape, err)))
		return st;
	bool grows = n != out->ndim;
	for (int i = 0; i < n && !grows; i++)
		grows = !ti_dim_same(shape[i], out->shape[i]);
	if (grows)
		return TI_FAIL(err, TI_E_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
		               ti_meta_shape_str(ctx, out), ti_shape_str(ctx, n, shape));
	ti_call_flops(call, ti_meta_numel(ctx, out));
	return TI_OK;
}

/* at::linear: addmm for a 2-D (or contiguous) input with a 1-D bias, matmul otherwise. */
static ti_status run_linear(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *input = ti_call_tensor(call, "input"), *weight = ti_call_tensor(call, "weight");
	const ti_meta_tensor *bias = ti_call_tensor(call, "bias");
	if (input->ndim == 0 || weight->ndim == 0)
		return TI_FAIL(err, TI_E_SHAPE, "both arguments to linear need to be at least 1D, but they are %dD and %dD",
		               input->ndim, weight->ndim);
	if (weight->ndim > 2)
		return TI_FAIL(err, TI_E_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is %dD", weight->ndim);
	const ti_meta_tensor *weight_t = transposed(ctx, weight);
	if (!weight_t)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for linear");
	bool fused = bias && (input->ndim == 2 || (ti_meta_is_contiguous(ctx, input) &&
	                                           (input->ndim == 3 || bias->ndim == 1)));
	return fused ? linear_addmm(call, input, weight_t, bias, err) : linear_matmul(call, input, weight_t, bias, err);
}

/* at::bilinear's checks; weight is [out, in1, in2]. */
static ti_status check_bilinear(ti_shape_ctx *ctx, const ti_meta_tensor *x1, const ti_meta_tensor *x2,
                                const ti_meta_tensor *w, const ti_meta_tensor *bias, ti_error *err)
{
	int d;
	ti_status st;
	if (x1->ndim != x2->ndim)
		return TI_FAIL(err, TI_E_SHAPE, "bilinear(): input dimensions do not match: got %d and %d", x1->ndim,
		               x2->ndim);
	for (int i = 0; i < x1->ndim - 1; i++)
		if (!same_size(ctx, x1->shape[i], x2->shape[i]))
			return TI_FAIL(err, TI_E_SHAPE, "bilinear(): input batch dimensions do not match at dim %d: got %s and %s",
			               i, dim_text(ctx, x1->shape[i]), dim_text(ctx, x2->shape[i]));
	if ((st = ti_wrap_dim(1, w->ndim, &d, err)) || (st = ti_wrap_dim(2, w->ndim, &d, err)))
		return st;
	ti_dim in1 = x1->ndim ? x1->shape[x1->ndim - 1] : ti_dim_int(1), in2 = x2->ndim ? x2->shape[x2->ndim - 1] : in1;
	if (!same_size(ctx, in1, w->shape[1]))
		return TI_FAIL(err, TI_E_SHAPE, "bilinear(): input1 size does not match weight size: got %s but expected %s",
		               dim_text(ctx, in1), dim_text(ctx, w->shape[1]));
	if (!same_size(ctx, in2, w->shape[2]))
		return TI_FAIL(err, TI_E_SHAPE, "bilinear(): input2 size does not match weight size: got %s but expected %s",
		               dim_text(ctx, in2), dim_text(ctx, w->shape[2]));
	if (bias && (st = ti_wrap_dim(0, bias->ndim, &d, err)))
		return st;
	if (bias && !same_size(ctx, bias->ndim ? bias->shape[0] : ti_dim_int(1), w->shape[0]))
		return TI_FAIL(err, TI_E_SHAPE, "bilinear(): bias size does not match weight size: got %s but expected %s",
		               dim_text(ctx, bias->shape[0]), dim_text(ctx, w->shape[0]));
	if ((st = check_scalar_type(x1->dtype, w->dtype, err)) || (st = check_scalar_type(x1->dtype, x2->dtype, err)))
		return st;
	return bias ? check_scalar_type(x1->dtype, bias->dtype, err) : TI_OK;
}

/* Counts batch * out * in1 * in2 MACs, and one flop per output element for the bias. */
static ti_status run_bilinear(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const ti_meta_tensor *x1 = ti_call_tensor(call, "input1"), *x2 = ti_call_tensor(call, "input2");
	const ti_meta_tensor *w = ti_call_tensor(call, "weight"), *bias = ti_call_tensor(call, "bias");
	ti_status st = check_bilinear(ctx, x1, x2, w, bias, err);
	if (st)
		return st;
	int n = x1->ndim ? x1->ndim : 1;
	ti_dim shape[TI_META_MAX_DIMS];
	memcpy(shape, x1->shape, (size_t)(n - 1) * sizeof(*shape));
	shape[n - 1] = w->shape[0];
	ti_dim out = product(ctx, shape, n);
	ti_call_macs(call, ti_dim_mul(ctx->sym, out, ti_dim_mul(ctx->sym, w->shape[1], w->shape[2])));
	if (bias)
		ti_call_flops(call, out);
	bool grad = x1->requires_grad || x2->requires_grad || w->requires_grad || (bias && bias->requires_grad);
	return add_result(call, x1->dtype, n, shape, grad, err);
}

/* ---- einsum (Linear.cpp) ---- */

enum { EINSUM_LETTERS = 26, EINSUM_LABELS = 2 * EINSUM_LETTERS, EINSUM_ELLIPSIS = EINSUM_LABELS };

/* 'A'..'Z' are 0..25 and 'a'..'z' 26..51, so an implicit output lists capitals first. */
static int label_of(char c) { return isupper((unsigned char)c) ? c - 'A' : c - 'a' + EINSUM_LETTERS; }
static char letter_of(int s) { return (char)(s < EINSUM_LETTERS ? 'A' + s : 'a' + s - EINSUM_LETTERS); }

typedef struct einsum_spec {
	int operands;
	unsigned char **labels; /* per operand, EINSUM_ELLIPSIS for "..." */
	int *label_counts;      /* labels per operand */
	int count[EINSUM_LABELS];
	int ell_dims;           /* dimensions the widest ellipsis covers */
	int out_index[EINSUM_LABELS]; /* position in the output, or -1 */
	int out_ndim, ell_at;   /* output rank; where the ellipsis dims sit in it */
	bool ell_in_output;
} einsum_spec;

/* One "..." at text[*i]; advances past it. */
static bool read_ellipsis(const char *text, size_t len, size_t *i)
{
	if (!(*i + 2 < len && text[*i + 1] == '.' && text[*i + 2] == '.'))
		return false;
	*i += 2;
	return true;
}

/* The left-hand side: labels for each operand. */
static ti_status einsum_parse_inputs(ti_shape_ctx *ctx, const char *lhs, size_t len, einsum_spec *s, ti_error *err)
{
	int op = 0;
	bool ellipsis = false;
	for (int k = 0; k < s->operands; k++)
		if (!(s->labels[k] = ti_arena_alloc(ctx->arena, len + 1)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for einsum");
	for (size_t i = 0; i < len; i++) {
		char c = lhs[i];
		if (c == ' ')
			continue;
		if (c == '.') {
			if (ellipsis)
				return TI_FAIL(err, TI_E_SHAPE, "einsum(): found '.' for operand %d for which an ellipsis was already found", op);
			if (!read_ellipsis(lhs, len, &i))
				return TI_FAIL(err, TI_E_SHAPE, "einsum(): found '.' for operand %d that is not part of any ellipsis", op);
			s->labels[op][s->label_counts[op]++] = EINSUM_ELLIPSIS;
			ellipsis = true;
		} else if (c == ',') {
			if (++op >= s->operands)
				return TI_FAIL(err, TI_E_SHAPE, "einsum(): fewer operands were provided than specified in the equation");
			ellipsis = false;
		} else if (isalpha((unsigned char)c)) {
			s->labels[op][s->label_counts[op]++] = (unsigned char)label_of(c);
		} else {
			return TI_FAIL(err, TI_E_SHAPE,
			               "einsum(): invalid subscript given at index %zu in the equation string, subscripts must be in [a-zA-Z]", i);
		}
	}
	if (op != s->operands - 1)
		return TI_FAIL(err, TI_E_SHAPE, "einsum(): more operands were provided than specified in the equation");
	return TI_OK;
}

/* Label frequencies and each operand's rank against its subscripts. */
static ti_status einsum_count(const ti_arg *tensors, einsum_spec *s, ti_error *err)
{
	for (int k = 0; k < s->operands; k++) {
		int ndim = tensors[k].as.tensor->ndim, named = 0;
		bool ellipsis = false;
		for (int j = 0; j < s->label_counts[k]; j++) {
			if (s->labels[k][j] == EINSUM_ELLIPSIS)
				ellipsis = true;
			else
				named++, s->count[s->labels[k][j]]++;
		}
		if (ellipsis && ndim - named > s->ell_dims)
			s->ell_dims = ndim - named;
		if (ellipsis && named > ndim)
			return TI_FAIL(err, TI_E_SHAPE,
			               "einsum(): the number of subscripts in the equation (%d) is more than the number of dimensions (%d) for operand %d",
			               named, ndim, k);
		if (!ellipsis && named != ndim)
			return TI_FAIL(err, TI_E_SHAPE,
			               "einsum(): the number of subscripts in the equation (%d) does not match the number of dimensions (%d) for operand %d and no ellipsis was given",
			               named, ndim, k);
	}
	return TI_OK;
}

/* The output subscripts: explicit after "->", else the ellipsis then the labels seen once. */
static ti_status einsum_parse_output(const char *equation, const char *arrow, einsum_spec *s, ti_error *err)
{
	int at = 0;
	for (int l = 0; l < EINSUM_LABELS; l++)
		s->out_index[l] = -1;
	if (!arrow) {
		s->ell_in_output = true;
		at = s->ell_dims;
		for (int l = 0; l < EINSUM_LABELS; l++)
			if (s->count[l] == 1)
				s->out_index[l] = at++;
		s->out_ndim = at;
		return TI_OK;
	}
	const char *rhs = arrow + 2;
	size_t len = strlen(rhs), offset = (size_t)(rhs - equation);
	for (size_t i = 0; i < len; i++) {
		char c = rhs[i];
		if (c == ' ')
			continue;
		if (c == '.') {
			if (s->ell_in_output)
				return TI_FAIL(err, TI_E_SHAPE, "einsum(): found '.' for output but an ellipsis (...) was already found");
			if (!read_ellipsis(rhs, len, &i))
				return TI_FAIL(err, TI_E_SHAPE, "einsum(): found '.' for output that is not part of any ellipsis (...)");
			s->ell_at = at;
			at += s->ell_dims;
			s->ell_in_output = true;
			continue;
		}
		if (!isalpha((unsigned char)c))
			return TI_FAIL(err, TI_E_SHAPE,
			               "einsum(): invalid subscript given at index %zu in the equation string, subscripts must be in [a-zA-Z]",
			               offset + i);
		int l = label_of(c);
		if (s->count[l] == 0 || s->out_index[l] != -1)
			return TI_FAIL(err, TI_E_SHAPE, "einsum(): output subscript %c %s", c,
			               s->out_index[l] != -1 ? "appears more than once in the output"
			                                     : "does not appear in the equation for any input operand");
		s->out_index[l] = at++;
	}
	s->out_ndim = at;
	return TI_OK;
}

typedef struct einsum_sizes {
	ti_dim label[EINSUM_LABELS];
	ti_dim ell[TI_META_MAX_DIMS];
} einsum_sizes;

/* A size against the one seen before: size 1 broadcasts, as in einsum's own loop. */
static bool einsum_broadcasts(ti_shape_ctx *ctx, ti_dim *seen, ti_dim size)
{
	if (is_size(size, 1))
		return true;
	if (!is_size(*seen, 1) && !same_size(ctx, *seen, size))
		return false;
	*seen = size;
	return true;
}

/* One operand's dimensions against the subscript sizes; repeated subscripts must agree (a diagonal). */
static ti_status einsum_operand_sizes(ti_shape_ctx *ctx, const einsum_spec *s, int k, const ti_meta_tensor *t,
                                      einsum_sizes *z, ti_error *err)
{
	int first[EINSUM_LABELS], dim = 0;
	for (int l = 0; l < EINSUM_LABELS; l++)
		first[l] = -1;
	for (int j = 0; j < s->label_counts[k]; j++) {
		int l = s->labels[k][j];
		if (l == EINSUM_ELLIPSIS) {
			int covered = t->ndim - (s->label_counts[k] - 1);
			for (int e = s->ell_dims - covered; e < s->ell_dims; e++, dim++)
				if (!einsum_broadcasts(ctx, &z->ell[e], t->shape[dim]))
					return TI_FAIL(err, TI_E_SHAPE,
					               "einsum(): dimension %d covered by ellipsis in operand %dhas size %s which does not broadcast with previously seen ellipsis with size %s for the respective dimension",
					               dim, k, dim_text(ctx, t->shape[dim]), dim_text(ctx, z->ell[e]));
			continue;
		}
		if (first[l] >= 0) {
			if (!same_size(ctx, t->shape[dim], t->shape[first[l]]))
				return TI_FAIL(err, TI_E_SHAPE, "einsum(): subscript %c is repeated for operand %d but the sizes don't match, %s != %s",
				               letter_of(l), k, dim_text(ctx, t->shape[dim]), dim_text(ctx, t->shape[first[l]]));
		} else if (!einsum_broadcasts(ctx, &z->label[l], t->shape[dim])) {
			return TI_FAIL(err, TI_E_SHAPE,
			               "einsum(): subscript %c has size %s for operand %d which does not broadcast with previously seen size %s",
			               letter_of(l), dim_text(ctx, t->shape[dim]), k, dim_text(ctx, z->label[l]));
		}
		first[l] = first[l] >= 0 ? first[l] : dim;
		dim++;
	}
	return TI_OK;
}

/*
 * One operand that sums nothing is a view of it: each output dimension
 * strides by the sum of the strides its subscript has (a diagonal).
 */
static ti_status einsum_view(ti_op_call *call, const einsum_spec *s, const ti_meta_tensor *t, const ti_dim *shape,
                             ti_error *err)
{
	ti_dim stride[TI_META_MAX_DIMS];
	for (int i = 0; i < s->out_ndim; i++)
		stride[i] = ti_dim_int(0);
	int covered = t->ndim - (s->label_counts[0] - 1);
	for (int j = 0, dim = 0; j < s->label_counts[0]; j++) {
		int l = s->labels[0][j];
		if (l == EINSUM_ELLIPSIS) {
			for (int e = s->ell_dims - covered; e < s->ell_dims; e++, dim++)
				stride[s->ell_at + e] = t->stride[dim];
			continue;
		}
		stride[s->out_index[l]] = ti_dim_add(call->ctx->sym, stride[s->out_index[l]], t->stride[dim++]);
	}
	ti_call_flops(call, ti_dim_int(0));
	return ti_call_output_tensor(call, ti_meta_view(call->ctx, t, s->out_ndim, shape, stride), err);
}

/* The output shape and the count; `every` is the product of every subscript's size. */
static ti_status einsum_result(ti_op_call *call, const einsum_spec *s, const ti_arg *tensors, const einsum_sizes *z,
                               ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	ti_dim shape[TI_META_MAX_DIMS], every = product(ctx, z->ell, s->ell_dims);
	bool sums = !s->ell_in_output && s->ell_dims > 0, grad = false;
	for (int e = 0; e < s->ell_dims && s->ell_in_output; e++)
		shape[s->ell_at + e] = z->ell[e];
	for (int l = 0; l < EINSUM_LABELS; l++) {
		if (!s->count[l])
			continue;
		every = ti_dim_mul(ctx->sym, every, z->label[l]);
		if (s->out_index[l] >= 0)
			shape[s->out_index[l]] = z->label[l];
		else
			sums = true;
	}
	for (int k = 0; k < s->operands; k++)
		grad |= tensors[k].as.tensor->requires_grad;
	if (s->operands == 1 && !sums)
		return einsum_view(call, s, tensors[0].as.tensor, shape, err);
	if (s->operands == 1)
		ti_call_flops(call, every);
	else
		ti_call_macs(call, every);
	return add_result(call, tensors[0].as.tensor->dtype, s->out_ndim, shape, grad, err);
}

static ti_status run_einsum(ti_op_call *call, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	const char *equation = ti_call_str(call, "equation");
	int n;
	const ti_arg *tensors = ti_call_list(call, "tensors", &n);
	if (n == 0)
		return TI_FAIL(err, TI_E_SHAPE,
		               "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list");
	einsum_spec s;
	memset(&s, 0, sizeof(s));
	s.operands = n;
	s.labels = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*s.labels));
	s.label_counts = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*s.label_counts));
	if (!s.labels || !s.label_counts)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for einsum");
	const char *arrow = strstr(equation, "->");
	size_t lhs_len = arrow ? (size_t)(arrow - equation) : strlen(equation);
	ti_status st = einsum_parse_inputs(ctx, equation, lhs_len, &s, err);
	if (!st)
		st = einsum_count(tensors, &s, err);
	if (!st)
		st = einsum_parse_output(equation, arrow, &s, err);
	if (st)
		return st;
	einsum_sizes z;
	for (int l = 0; l < EINSUM_LABELS; l++)
		z.label[l] = ti_dim_int(1);
	for (int e = 0; e < TI_META_MAX_DIMS; e++)
		z.ell[e] = ti_dim_int(1);
	for (int k = 0; k < n; k++)
		if ((st = einsum_operand_sizes(ctx, &s, k, tensors[k].as.tensor, &z, err)))
			return st;
	for (int k = 1; k < n; k++) /* the contraction's kernel (bmm) meets this after every size check */
		if ((st = check_scalar_type(tensors[0].as.tensor->dtype, tensors[k].as.tensor->dtype, err)))
			return st;
	return einsum_result(call, &s, tensors, &z, err);
}

ti_op_rule ti_ops_linalg[] = {
	{"matmul(Tensor input, Tensor other)", run_matmul, TI_COUNT_RULE, NULL},
	{"mm(Tensor input, Tensor mat2)", run_mm, TI_COUNT_RULE, NULL},
	{"bmm(Tensor input, Tensor mat2)", run_bmm, TI_COUNT_RULE, NULL},
	{"mv(Tensor input, Tensor vec)", run_mv, TI_COUNT_RULE, NULL},
	{"dot(Tensor input, Tensor tensor)", run_dot, TI_COUNT_RULE, NULL},
	{"outer(Tensor input, Tensor vec2)", run_outer, TI_COUNT_RULE, NULL},
	{"ger(Tensor input, Tensor vec2)", run_outer, TI_COUNT_RULE, NULL},
	{"addmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)", run_addmm, TI_COUNT_RULE, NULL},
	{"addmv(Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1)", run_addmv, TI_COUNT_RULE, NULL},
	{"baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)", run_baddbmm,
	 TI_COUNT_RULE, NULL},
	{"linear(Tensor input, Tensor weight, Tensor? bias=None)", run_linear, TI_COUNT_RULE, NULL},
	{"bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None)", run_bilinear, TI_COUNT_RULE, NULL},
	{"einsum(str equation, Tensor[]... tensors=[])", run_einsum, TI_COUNT_RULE, NULL},
	{NULL, NULL, TI_COUNT_NONE, NULL},
};
