/* tensor.c - names for layouts and qschemes, and shape arithmetic (see tensor.h). */
#include "tinspect/tensor.h"

#include <inttypes.h>
#include <string.h>

static const char *const layout_names[TI_LAYOUT_COUNT] = {
	[TI_LAYOUT_STRIDED] = "strided", [TI_LAYOUT_SPARSE_COO] = "sparse_coo",
	[TI_LAYOUT_SPARSE_CSR] = "sparse_csr", [TI_LAYOUT_SPARSE_CSC] = "sparse_csc",
	[TI_LAYOUT_SPARSE_BSR] = "sparse_bsr", [TI_LAYOUT_SPARSE_BSC] = "sparse_bsc",
};

static const char *const qscheme_names[TI_QS_COUNT] = {
	[TI_QS_NONE] = "none",
	[TI_QS_PER_TENSOR_AFFINE] = "per_tensor_affine",
	[TI_QS_PER_CHANNEL_AFFINE] = "per_channel_affine",
	[TI_QS_PER_TENSOR_SYMMETRIC] = "per_tensor_symmetric",
	[TI_QS_PER_CHANNEL_SYMMETRIC] = "per_channel_symmetric",
	[TI_QS_PER_CHANNEL_AFFINE_FLOAT_QPARAMS] = "per_channel_affine_float_qparams",
};

const char *ti_layout_name(ti_layout layout)
{
	return (unsigned)layout < TI_LAYOUT_COUNT ? layout_names[layout] : "unknown";
}

const char *ti_qscheme_name(ti_qscheme scheme)
{
	return (unsigned)scheme < TI_QS_COUNT ? qscheme_names[scheme] : "unknown";
}

ti_qscheme ti_qscheme_from_name(const char *name)
{
	for (int i = 1; i < TI_QS_COUNT; i++)
		if (!strcmp(qscheme_names[i], name))
			return (ti_qscheme)i;
	return TI_QS_NONE;
}

ti_layout ti_layout_from_name(const char *name)
{
	if (!strncmp(name, "torch.", 6))
		name += 6;
	for (int i = 0; i < TI_LAYOUT_COUNT; i++)
		if (!strcmp(layout_names[i], name))
			return (ti_layout)i;
	return TI_LAYOUT_COUNT;
}

bool ti_tensor_is_contiguous(const ti_tensor *t)
{
	if (!t->stride)
		return true;
	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] == 0)
			return true; /* PyTorch: a tensor with no elements is contiguous */
	int64_t expected = 1;
	for (int i = t->ndim; i-- > 0;) {
		if (t->shape[i] == 0)
			return true;
		if (t->shape[i] != 1 && t->stride[i] != expected)
			return false;
		expected *= t->shape[i];
	}
	return true;
}

ti_status ti_shape_check(int ndim, const int64_t *shape, const int64_t *stride,
                         int64_t offset, int64_t *numel, int64_t *extent, ti_error *err)
{
	if (offset < 0)
		return TI_FAIL(err, TI_E_CORRUPT, "negative storage offset %" PRId64, offset);
	int64_t n = 1, last = 0;
	bool empty = false;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return TI_FAIL(err, TI_E_CORRUPT, "negative size %" PRId64 " in dimension %d", shape[i], i);
		if (stride && stride[i] < 0)
			return TI_FAIL(err, TI_E_CORRUPT, "negative stride %" PRId64 " in dimension %d", stride[i], i);
		if (__builtin_mul_overflow(n, shape[i], &n))
			return TI_FAIL(err, TI_E_CORRUPT, "element count of the shape overflows 64 bits");
		if (shape[i] == 0)
			empty = true;
	}
	if (stride && !empty) {
		for (int i = 0; i < ndim; i++) {
			int64_t span;
			if (__builtin_mul_overflow(shape[i] - 1, stride[i], &span) ||
			    __builtin_add_overflow(last, span, &last))
				return TI_FAIL(err, TI_E_CORRUPT, "extent of the shape and stride overflows 64 bits");
		}
		if (__builtin_add_overflow(last, offset, &last) || __builtin_add_overflow(last, 1, &last))
			return TI_FAIL(err, TI_E_CORRUPT, "extent of the shape and stride overflows 64 bits");
	}
	*numel = n;
	if (extent)
		*extent = empty || !stride ? 0 : last;
	return TI_OK;
}

const ti_tensor_ext *ti_tensor_ext_of(const ti_tensor *t)
{
	static const ti_tensor_ext none;
	return t->ext ? t->ext : &none;
}
