/*
 * meta_tensor.c - what every shape rule uses: making tensors and views,
 * strides, dim wrapping, broadcasting, messages, dtype categories and type
 * promotion (see ops/op.h).
 */
#include <stdio.h>
#include <string.h>

#include "shapes/meta.h"

ti_meta_tensor *ti_meta_view(ti_shape_ctx *ctx, const ti_meta_tensor *base, int ndim,
                             const ti_dim *shape, const ti_dim *stride)
{
	ti_meta_tensor *t = ti_arena_alloc(ctx->arena, sizeof(*t));
	ti_dim *dims = ti_arena_calloc(ctx->arena, (size_t)(ndim ? 2 * ndim : 1), sizeof(*dims));
	if (!t || !dims)
		return NULL;
	memcpy(dims, shape, (size_t)ndim * sizeof(*dims));
	memcpy(dims + ndim, stride, (size_t)ndim * sizeof(*dims));
	t->dtype = base ? base->dtype : ctx->default_dtype;
	t->requires_grad = base && base->requires_grad;
	t->ndim = ndim;
	t->shape = dims;
	t->stride = dims + ndim;
	return t;
}

ti_meta_tensor *ti_meta_new(ti_shape_ctx *ctx, ti_dtype dtype, int ndim, const ti_dim *shape)
{
	ti_dim stride[TI_META_MAX_DIMS];
	if (ndim < 0 || ndim > TI_META_MAX_DIMS)
		return NULL;
	ti_contiguous_strides(ctx, ndim, shape, stride);
	ti_meta_tensor *t = ti_meta_view(ctx, NULL, ndim, shape, stride);
	if (t)
		t->dtype = dtype;
	return t;
}

void ti_contiguous_strides(ti_shape_ctx *ctx, int ndim, const ti_dim *shape, ti_dim *stride)
{
	/* c10's contiguous strides: a size-0 or size-1 dim still multiplies by max(size, 1) */
	ti_dim acc = ti_dim_int(1);
	for (int i = ndim - 1; i >= 0; i--) {
		stride[i] = acc;
		ti_dim size = shape[i];
		if (ti_dim_is_int(size) && size.value < 1)
			size = ti_dim_int(1);
		acc = ti_dim_mul(ctx->sym, acc, size);
	}
}

ti_dim ti_meta_numel(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	ti_dim n = ti_dim_int(1);
	for (int i = 0; i < t->ndim; i++)
		n = ti_dim_mul(ctx->sym, n, t->shape[i]);
	return n;
}

bool ti_meta_is_contiguous(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	/* c10 compute_contiguous: size-1 dims may have any stride; empty tensors are contiguous */
	for (int i = 0; i < t->ndim; i++)
		if (ti_dim_is_int(t->shape[i]) && t->shape[i].value == 0)
			return true;
	ti_dim expected = ti_dim_int(1);
	for (int i = t->ndim - 1; i >= 0; i--) {
		ti_dim size = t->shape[i];
		if (ti_dim_is_int(size) && size.value == 1)
			continue;
		if (!ti_dim_same(t->stride[i], expected))
			return false;
		expected = ti_dim_mul(ctx->sym, expected, size);
	}
	return true;
}

ti_status ti_wrap_dim(int64_t dim, int ndim, int *out, ti_error *err)
{
	/* maybe_wrap_dim: a 0-d tensor takes dims -1 and 0 */
	int64_t n = ndim > 0 ? ndim : 1;
	if (dim < -n || dim >= n)
		return TI_FAIL(err, TI_E_SHAPE,
		               "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
		               (long long)-n, (long long)(n - 1), (long long)dim);
	*out = (int)(dim < 0 ? dim + n : dim);
	return TI_OK;
}

ti_status ti_broadcast(ti_shape_ctx *ctx, int na, const ti_dim *a, int nb, const ti_dim *b,
                       int *nout, ti_dim *out, ti_error *err)
{
	int n = na > nb ? na : nb;
	for (int i = n - 1; i >= 0; i--) {
		int ia = i - (n - na), ib = i - (n - nb);
		ti_dim da = ia >= 0 ? a[ia] : ti_dim_int(1), db = ib >= 0 ? b[ib] : ti_dim_int(1);
		bool a_one = ti_dim_is_int(da) && da.value == 1, b_one = ti_dim_is_int(db) && db.value == 1;
		if (a_one) {
			out[i] = db;
		} else if (b_one || ti_dim_same(da, db)) {
			out[i] = da;
		} else if (!ti_dim_is_int(da) || !ti_dim_is_int(db)) {
			/* T against 5: neither is 1 for sure; they must then be equal */
			if (!ti_dim_assume(ctx->sym, da, TI_CMP_EQ, db))
				goto mismatch;
			out[i] = ti_dim_is_int(da) ? da : db;
		} else {
			goto mismatch;
		}
		continue;
mismatch:;
		char sa[64], sb[64];
		return TI_FAIL(err, TI_E_SHAPE,
		               "The size of tensor a (%s) must match the size of tensor b (%s) at non-singleton dimension %d",
		               ti_dim_format(da, sa, sizeof(sa)), ti_dim_format(db, sb, sizeof(sb)), i);
	}
	*nout = n;
	return TI_OK;
}

const char *ti_shape_str(ti_shape_ctx *ctx, int ndim, const ti_dim *shape)
{
	char buf[1024];
	size_t n = 0;
	buf[n++] = '[';
	for (int i = 0; i < ndim && n < sizeof(buf) - 8; i++) {
		if (i)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, ", ");
		ti_dim_format(shape[i], buf + n, sizeof(buf) - n - 2);
		n += strlen(buf + n);
	}
	if (n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = ']';
	buf[n] = '\0';
	return ti_arena_strdup(ctx->arena, buf);
}

const char *ti_meta_shape_str(ti_shape_ctx *ctx, const ti_meta_tensor *t)
{
	return ti_shape_str(ctx, t->ndim, t->shape);
}

/* ---- dtypes ---- */

const char *ti_dtype_torch_name(ti_dtype dt)
{
	static const char *const names[TI_DT_COUNT] = {
		[TI_DT_FLOAT32] = "Float", [TI_DT_FLOAT64] = "Double", [TI_DT_FLOAT16] = "Half",
		[TI_DT_BFLOAT16] = "BFloat16", [TI_DT_INT64] = "Long", [TI_DT_INT32] = "Int",
		[TI_DT_INT16] = "Short", [TI_DT_INT8] = "Char", [TI_DT_UINT8] = "Byte",
		[TI_DT_BOOL] = "Bool", [TI_DT_COMPLEX32] = "ComplexHalf", [TI_DT_COMPLEX64] = "ComplexFloat",
		[TI_DT_COMPLEX128] = "ComplexDouble", [TI_DT_QINT8] = "QInt8", [TI_DT_QUINT8] = "QUInt8",
		[TI_DT_QINT32] = "QInt32", [TI_DT_UINT16] = "UInt16", [TI_DT_UINT32] = "UInt32",
		[TI_DT_UINT64] = "UInt64", [TI_DT_FLOAT8_E5M2] = "Float8_e5m2",
		[TI_DT_FLOAT8_E4M3FN] = "Float8_e4m3fn",
	};
	return (unsigned)dt < TI_DT_COUNT && names[dt] ? names[dt] : ti_dtype_name(dt);
}

bool ti_dtype_is_floating(ti_dtype dt)
{
	switch (dt) {
	case TI_DT_FLOAT32: case TI_DT_FLOAT64: case TI_DT_FLOAT16: case TI_DT_BFLOAT16:
	case TI_DT_FLOAT8_E5M2: case TI_DT_FLOAT8_E4M3FN: case TI_DT_FLOAT8_E5M2FNUZ:
	case TI_DT_FLOAT8_E4M3FNUZ: case TI_DT_FLOAT8_E8M0FNU:
		return true;
	default:
		return false;
	}
}

bool ti_dtype_is_complex(ti_dtype dt)
{
	return dt == TI_DT_COMPLEX32 || dt == TI_DT_COMPLEX64 || dt == TI_DT_COMPLEX128;
}

bool ti_dtype_is_integral(ti_dtype dt, bool include_bool)
{
	switch (dt) {
	case TI_DT_INT64: case TI_DT_INT32: case TI_DT_INT16: case TI_DT_INT8: case TI_DT_UINT8:
	case TI_DT_UINT16: case TI_DT_UINT32: case TI_DT_UINT64:
		return true;
	case TI_DT_BOOL:
		return include_bool;
	default:
		return false;
	}
}

/* The complex type whose parts are of float type f. */
static ti_dtype complex_of(ti_dtype f)
{
	return f == TI_DT_FLOAT64 ? TI_DT_COMPLEX128 : f == TI_DT_FLOAT16 ? TI_DT_COMPLEX32 : TI_DT_COMPLEX64;
}

static ti_dtype complex_part(ti_dtype c)
{
	return c == TI_DT_COMPLEX128 ? TI_DT_FLOAT64 : c == TI_DT_COMPLEX32 ? TI_DT_FLOAT16 : TI_DT_FLOAT32;
}

/* c10 promoteTypes, by its rules rather than its 16x16 table. TI_DT_INVALID: not promotable. */
ti_dtype ti_promote_types(ti_dtype a, ti_dtype b)
{
	if (a == b)
		return a;
	if (a == TI_DT_INVALID || b == TI_DT_INVALID)
		return a == TI_DT_INVALID ? b : a;
	if (a == TI_DT_BOOL)
		return b;
	if (b == TI_DT_BOOL)
		return a;
	/* the 1-byte floats, the 2.x unsigned types and quantized types promote only with themselves */
	bool a_plain = ti_dtype_is_complex(a) || ti_dtype_is_integral(a, false) ||
	               a == TI_DT_FLOAT16 || a == TI_DT_BFLOAT16 || a == TI_DT_FLOAT32 || a == TI_DT_FLOAT64;
	bool b_plain = ti_dtype_is_complex(b) || ti_dtype_is_integral(b, false) ||
	               b == TI_DT_FLOAT16 || b == TI_DT_BFLOAT16 || b == TI_DT_FLOAT32 || b == TI_DT_FLOAT64;
	if (!a_plain || !b_plain || a == TI_DT_UINT16 || a == TI_DT_UINT32 || a == TI_DT_UINT64 ||
	    b == TI_DT_UINT16 || b == TI_DT_UINT32 || b == TI_DT_UINT64)
		return TI_DT_INVALID;
	if (ti_dtype_is_complex(a) || ti_dtype_is_complex(b)) {
		ti_dtype pa = ti_dtype_is_complex(a) ? complex_part(a) : a;
		ti_dtype pb = ti_dtype_is_complex(b) ? complex_part(b) : b;
		if (!ti_dtype_is_floating(pa))
			pa = pb;
		if (!ti_dtype_is_floating(pb))
			pb = pa;
		return complex_of(ti_promote_types(pa, pb));
	}
	bool fa = ti_dtype_is_floating(a), fb = ti_dtype_is_floating(b);
	if (fa && fb) {
		if ((a == TI_DT_FLOAT16 && b == TI_DT_BFLOAT16) || (a == TI_DT_BFLOAT16 && b == TI_DT_FLOAT16))
			return TI_DT_FLOAT32;
		return ti_dtype_size(a) >= ti_dtype_size(b) ? a : b;
	}
	if (fa)
		return a;
	if (fb)
		return b;
	/* two integers: uint8 with int8 is int16; otherwise the wider, signed winning ties */
	if ((a == TI_DT_UINT8 && b == TI_DT_INT8) || (a == TI_DT_INT8 && b == TI_DT_UINT8))
		return TI_DT_INT16;
	if (a == TI_DT_UINT8)
		return b;
	if (b == TI_DT_UINT8)
		return a;
	return ti_dtype_size(a) >= ti_dtype_size(b) ? a : b;
}

/* c10's combine_categories: a higher tier's dtype wins unless a lower tier is of a higher category. */
static ti_dtype combine_categories(ti_dtype higher, ti_dtype lower)
{
	if (ti_dtype_is_complex(higher))
		return higher;
	if (ti_dtype_is_complex(lower)) {
		if (ti_dtype_is_floating(higher))
			return complex_of(higher);
		return lower;
	}
	if (ti_dtype_is_floating(higher))
		return higher;
	if (higher == TI_DT_BOOL || ti_dtype_is_floating(lower))
		return higher == TI_DT_INVALID ? lower : lower == TI_DT_INVALID ? higher : ti_promote_types(higher, lower);
	if (higher != TI_DT_INVALID)
		return higher;
	return lower;
}

ti_dtype ti_result_type(ti_shape_ctx *ctx, const ti_arg *operands, int count)
{
	ti_dtype dim_result = TI_DT_INVALID, zero_result = TI_DT_INVALID, wrapped = TI_DT_INVALID;
	for (int i = 0; i < count; i++) {
		const ti_arg *a = &operands[i];
		ti_dtype *slot, current;
		if (a->kind == TI_ARG_TENSOR) {
			current = a->as.tensor->dtype;
			slot = a->as.tensor->ndim > 0 ? &dim_result : &zero_result;
		} else if (a->kind == TI_ARG_INT || a->kind == TI_ARG_FLOAT || a->kind == TI_ARG_BOOL) {
			/* a Python number: bool, int64, or the default float dtype */
			current = a->kind == TI_ARG_BOOL ? TI_DT_BOOL : a->kind == TI_ARG_INT ? TI_DT_INT64 : ctx->default_dtype;
			slot = &wrapped;
		} else {
			continue;
		}
		*slot = *slot == TI_DT_INVALID ? current : ti_promote_types(*slot, current);
	}
	return combine_categories(dim_result, combine_categories(zero_result, wrapped));
}
