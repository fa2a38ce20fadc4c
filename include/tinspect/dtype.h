/*
 * dtype.h - PyTorch's scalar types, one table.
 *
 * Names are PyTorch's without the `torch.` prefix (float32, bfloat16, qint8).
 * Sizes are torch's element_size(); torch's packed types (quint4x2,
 * float4_e2m1fn_x2, bits1x8 ...) count one byte per stored element, as the
 * storage does.
 *
 * Three dtypes are no torch dtype: safetensors' sub-byte F4, F6_E2M3 and
 * F6_E3M2 (OCP Microscaling formats), whose elements are 4 and 6 bits,
 * packed (a tensor of n elements takes n * bits / 8 bytes, which must be a
 * whole number: safetensors/src/tensor.rs refuses the rest as a
 * MisalignedSlice). They are named as ml_dtypes names them (float4_e2m1fn,
 * float6_e2m3fn, float6_e3m2fn), have no whole-byte size (ti_dtype_size
 * gives 0: use ti_dtype_bits and ti_dtype_nbytes), and no torch name reads
 * as them. tinspect lists them and moves their bytes; it computes nothing
 * with their values.
 */
#ifndef TINSPECT_DTYPE_H
#define TINSPECT_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	TI_DT_FLOAT4_E2M1FN, TI_DT_FLOAT6_E2M3FN, TI_DT_FLOAT6_E3M2FN, /* sub-byte: safetensors only */
	TI_DT_COUNT
} ti_dtype;

/* "float32"; "invalid" for an out-of-range value. */
const char *ti_dtype_name(ti_dtype dt);
/*
 * Bytes per element; 0 for TI_DT_INVALID and for a sub-byte dtype, whose
 * elements are no whole number of bytes (ti_dtype_is_sub_byte): code that
 * works in whole elements refuses those, code that moves bytes counts them
 * with ti_dtype_nbytes.
 */
size_t ti_dtype_size(ti_dtype dt);
/* Bits per element: 8 * ti_dtype_size, or 4 and 6 for the sub-byte dtypes; 0 for TI_DT_INVALID. */
unsigned ti_dtype_bits(ti_dtype dt);
bool ti_dtype_is_sub_byte(ti_dtype dt);
/*
 * The bytes that numel elements of dt fill, packed: numel * bits / 8, into
 * *nbytes. False, *nbytes untouched, for TI_DT_INVALID, when the product
 * passes UINT64_MAX, or when the elements end inside a byte (numel * bits
 * not a multiple of 8, safetensors' MisalignedSlice).
 */
bool ti_dtype_nbytes(ti_dtype dt, uint64_t numel, uint64_t *nbytes);
/*
 * The fewest elements of dt that fill whole bytes: 1 for a whole-byte
 * dtype, 2 for float4_e2m1fn, 4 for the float6s (3 bytes); 0 for
 * TI_DT_INVALID. Reads in pieces of a multiple of it end on a byte.
 */
unsigned ti_dtype_byte_group(ti_dtype dt);
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
 * The sub-byte dtypes, which torch has not, are not found.
 */
ti_dtype ti_dtype_from_torch_name(const char *name);

/*
 * Looks a dtype up by the name of its legacy storage class: "FloatStorage",
 * "BFloat16Storage", "QUInt4x2Storage", and the TorchScript spellings of the
 * 2.x types ("Float8_e4m3fnStorage"). Untyped storages are not dtypes.
 */
ti_dtype ti_dtype_from_storage_name(const char *name);

#endif
