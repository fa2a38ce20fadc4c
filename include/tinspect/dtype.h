/*
 * dtype.h - PyTorch's scalar types, one table.
 *
 * Names are PyTorch's without the `torch.` prefix (float32, bfloat16, qint8).
 * Sizes are torch's element_size(); sub-byte packed types (quint4x2,
 * float4_e2m1fn_x2, bits1x8 ...) count one byte per stored element, as the
 * storage does.
 */
#ifndef TINSPECT_DTYPE_H
#define TINSPECT_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum ti_dtype {
	TI_DT_INVALID = 0,
	TI_DT_FLOAT32, TI_DT_FLOAT64, TI_DT_FLOAT16, TI_DT_BFLOAT16,
	TI_DT_INT64, TI_DT_INT32, TI_DT_INT16, TI_DT_INT8, TI_DT_UINT8, TI_DT_BOOL,
	TI_DT_COMPLEX32, TI_DT_COMPLEX64, TI_DT_COMPLEX128,
	TI_DT_QINT8, TI_DT_QUINT8, TI_DT_QINT32, TI_DT_QUINT4X2, TI_DT_QUINT2X4,
	TI_DT_UINT16, TI_DT_UINT32, TI_DT_UINT64,
	TI_DT_FLOAT8_E5M2, TI_DT_FLOAT8_E4M3FN, TI_DT_FLOAT8_E5M2FNUZ,
	TI_DT_FLOAT8_E4M3FNUZ, TI_DT_FLOAT8_E8M0FNU, TI_DT_FLOAT4_E2M1FN_X2,
	TI_DT_BITS8, TI_DT_BITS16, TI_DT_BITS1X8, TI_DT_BITS2X4, TI_DT_BITS4X2,
	TI_DT_COUNT
} ti_dtype;

/* "float32"; "invalid" for an out-of-range value. */
const char *ti_dtype_name(ti_dtype dt);
/* Bytes per element; 0 for TI_DT_INVALID. */
size_t ti_dtype_size(ti_dtype dt);
bool ti_dtype_is_quantized(ti_dtype dt);

/*
 * PyTorch 2.x's lazy views: x.conj() and torch._neg_view(x) (and
 * x.conj().imag) share x's storage and set a bit, which torch.save keeps
 * in the metadata argument of _rebuild_tensor_v2/v3 ({'conj': True},
 * {'neg': True}); the values are the storage's, conjugated or negated.
 *
 * ti_dtype_can_resolve tells whether PyTorch can give the values of such a
 * view of dt: a conjugate always (of a real dtype it is the value itself),
 * a negative for every signed or unsigned number, not for bool, quantized,
 * packed and bit dtypes, nor float8_e8m0fnu, which has no sign.
 *
 * ti_dtype_resolve turns n little-endian elements of dt, read from the
 * storage, into the view's values in place: what resolve_conj() and
 * resolve_neg() give. A float's sign bit flips (as PyTorch's neg does,
 * NaN payload and all; the fnuz float8s, which have no negative zero, keep
 * 0 and NaN); an integer wraps (-x modulo 2^bits); a conjugate flips the
 * imaginary part's sign. False, touching nothing, where it cannot.
 */
bool ti_dtype_can_resolve(ti_dtype dt, bool conj, bool neg);
bool ti_dtype_resolve(ti_dtype dt, bool conj, bool neg, void *elements, size_t n);

/*
 * Reverses the bytes of n elements of dt in place, as torch.load does to a
 * storage saved with byteorder "big" (UntypedStorage.byteswap): each
 * element, or each part of a complex one.
 */
void ti_dtype_swap_bytes(ti_dtype dt, void *elements, size_t n);

/*
 * Looks a dtype up by the name of its torch attribute, canonical or alias:
 * "float32" and "float", "int64" and "long", "float16" and "half" ...
 */
ti_dtype ti_dtype_from_torch_name(const char *name);

/*
 * Looks a dtype up by the name of its legacy storage class: "FloatStorage",
 * "BFloat16Storage", "QUInt4x2Storage", and the TorchScript spellings of the
 * 2.x types ("Float8_e4m3fnStorage"). Untyped storages are not dtypes.
 */
ti_dtype ti_dtype_from_storage_name(const char *name);

#endif
