/*
 * dtype.c - the dtype table: one row per torch dtype.
 * Sizes from torch/_utils.py _element_size and c10/core/ScalarType.h; the
 * sub-byte ones from safetensors/src/tensor.rs Dtype::bitsize (F4 4 bits,
 * F6_E2M3 and F6_E3M2 6), which torch has no dtype for.
 */
#include "tinspect/dtype.h"

#include <string.h>

struct dtype_row {
	const char *name;         /* torch attribute, canonical */
	const char *alias;        /* another torch attribute, or NULL */
	const char *storage;      /* legacy storage class, or TorchScript's spelling; NULL: not a torch dtype */
	unsigned char bits;       /* per element */
	bool quantized;
};

static const struct dtype_row dtypes[TI_DT_COUNT] = {
	[TI_DT_INVALID] = {"invalid", NULL, NULL, 0, false},
	[TI_DT_FLOAT32] = {"float32", "float", "FloatStorage", 32, false},
	[TI_DT_FLOAT64] = {"float64", "double", "DoubleStorage", 64, false},
	[TI_DT_FLOAT16] = {"float16", "half", "HalfStorage", 16, false},
	[TI_DT_BFLOAT16] = {"bfloat16", NULL, "BFloat16Storage", 16, false},
	[TI_DT_INT64] = {"int64", "long", "LongStorage", 64, false},
	[TI_DT_INT32] = {"int32", "int", "IntStorage", 32, false},
	[TI_DT_INT16] = {"int16", "short", "ShortStorage", 16, false},
	[TI_DT_INT8] = {"int8", NULL, "CharStorage", 8, false},
	[TI_DT_UINT8] = {"uint8", NULL, "ByteStorage", 8, false},
	[TI_DT_BOOL] = {"bool", NULL, "BoolStorage", 8, false},
	[TI_DT_COMPLEX32] = {"complex32", "chalf", "ComplexHalfStorage", 32, false},
	[TI_DT_COMPLEX64] = {"complex64", "cfloat", "ComplexFloatStorage", 64, false},
	[TI_DT_COMPLEX128] = {"complex128", "cdouble", "ComplexDoubleStorage", 128, false},
	[TI_DT_QINT8] = {"qint8", NULL, "QInt8Storage", 8, true},
	[TI_DT_QUINT8] = {"quint8", NULL, "QUInt8Storage", 8, true},
	[TI_DT_QINT32] = {"qint32", NULL, "QInt32Storage", 32, true},
	[TI_DT_QUINT4X2] = {"quint4x2", NULL, "QUInt4x2Storage", 8, true},
	[TI_DT_QUINT2X4] = {"quint2x4", NULL, "QUInt2x4Storage", 8, true},
	[TI_DT_UINT16] = {"uint16", NULL, "UInt16Storage", 16, false},
	[TI_DT_UINT32] = {"uint32", NULL, "UInt32Storage", 32, false},
	[TI_DT_UINT64] = {"uint64", NULL, "UInt64Storage", 64, false},
	[TI_DT_FLOAT8_E5M2] = {"float8_e5m2", NULL, "Float8_e5m2Storage", 8, false},
	[TI_DT_FLOAT8_E4M3FN] = {"float8_e4m3fn", NULL, "Float8_e4m3fnStorage", 8, false},
	[TI_DT_FLOAT8_E5M2FNUZ] = {"float8_e5m2fnuz", NULL, "Float8_e5m2fnuzStorage", 8, false},
	[TI_DT_FLOAT8_E4M3FNUZ] = {"float8_e4m3fnuz", NULL, "Float8_e4m3fnuzStorage", 8, false},
	[TI_DT_FLOAT8_E8M0FNU] = {"float8_e8m0fnu", NULL, "Float8_e8m0fnuStorage", 8, false},
	[TI_DT_FLOAT4_E2M1FN_X2] = {"float4_e2m1fn_x2", NULL, "Float4_e2m1fn_x2Storage", 8, false},
	[TI_DT_BITS8] = {"bits8", NULL, "Bits8Storage", 8, false},
	[TI_DT_BITS16] = {"bits16", NULL, "Bits16Storage", 16, false},
	[TI_DT_BITS1X8] = {"bits1x8", NULL, "Bits1x8Storage", 8, false},
	[TI_DT_BITS2X4] = {"bits2x4", NULL, "Bits2x4Storage", 8, false},
	[TI_DT_BITS4X2] = {"bits4x2", NULL, "Bits4x2Storage", 8, false},
	/* ml_dtypes' names; safetensors' F4, F6_E2M3, F6_E3M2 */
	[TI_DT_FLOAT4_E2M1FN] = {"float4_e2m1fn", NULL, NULL, 4, false},
	[TI_DT_FLOAT6_E2M3FN] = {"float6_e2m3fn", NULL, NULL, 6, false},
	[TI_DT_FLOAT6_E3M2FN] = {"float6_e3m2fn", NULL, NULL, 6, false},
};

const char *ti_dtype_name(ti_dtype dt)
{
	return (unsigned)dt < TI_DT_COUNT ? dtypes[dt].name : "invalid";
}

unsigned ti_dtype_bits(ti_dtype dt)
{
	return (unsigned)dt < TI_DT_COUNT ? dtypes[dt].bits : 0;
}

size_t ti_dtype_size(ti_dtype dt)
{
	unsigned bits = ti_dtype_bits(dt);
	return bits % 8 ? 0 : bits / 8;
}

bool ti_dtype_is_sub_byte(ti_dtype dt)
{
	return ti_dtype_bits(dt) % 8 != 0;
}

bool ti_dtype_nbytes(ti_dtype dt, uint64_t numel, uint64_t *nbytes)
{
	uint64_t bits = ti_dtype_bits(dt), total;
	if (!bits)
		return false;
	if (bits % 8 == 0) { /* whole bytes: numel * size, which must not overflow */
		if (__builtin_mul_overflow(numel, bits / 8, &total))
			return false;
		*nbytes = total;
		return true;
	}
	if (__builtin_mul_overflow(numel, bits, &total) || total % 8)
		return false;
	*nbytes = total / 8;
	return true;
}

unsigned ti_dtype_byte_group(ti_dtype dt)
{
	unsigned bits = ti_dtype_bits(dt), n = 1;
	if (!bits)
		return 0;
	while (n * bits % 8)
		n++;
	return n;
}

bool ti_dtype_is_quantized(ti_dtype dt)
{
	return (unsigned)dt < TI_DT_COUNT && dtypes[dt].quantized;
}

static bool is_complex(ti_dtype dt)
{
	return dt == TI_DT_COMPLEX32 || dt == TI_DT_COMPLEX64 || dt == TI_DT_COMPLEX128;
}

/* How a dtype negates: by its sign bit, by two's complement, or not at all. */
typedef enum negation { NEG_NONE, NEG_SIGN_BIT, NEG_SIGN_BIT_FNUZ, NEG_INTEGER } negation;

static negation negation_of(ti_dtype dt)
{
	switch (dt) {
	case TI_DT_FLOAT32: case TI_DT_FLOAT64: case TI_DT_FLOAT16: case TI_DT_BFLOAT16:
	case TI_DT_COMPLEX32: case TI_DT_COMPLEX64: case TI_DT_COMPLEX128:
	case TI_DT_FLOAT8_E5M2: case TI_DT_FLOAT8_E4M3FN:
		return NEG_SIGN_BIT;
	case TI_DT_FLOAT8_E5M2FNUZ: case TI_DT_FLOAT8_E4M3FNUZ:
		return NEG_SIGN_BIT_FNUZ; /* 0x80 is their NaN, not -0 */
	case TI_DT_INT64: case TI_DT_INT32: case TI_DT_INT16: case TI_DT_INT8:
	case TI_DT_UINT8: case TI_DT_UINT16: case TI_DT_UINT32: case TI_DT_UINT64:
		return NEG_INTEGER;
	default:
		return NEG_NONE;
	}
}

bool ti_dtype_can_resolve(ti_dtype dt, bool conj, bool neg)
{
	(void)conj; /* a real dtype's conjugate is itself */
	return !neg || negation_of(dt) != NEG_NONE;
}

bool ti_dtype_resolve(ti_dtype dt, bool conj, bool neg, void *elements, size_t n)
{
	if (!ti_dtype_can_resolve(dt, conj, neg))
		return false;
	unsigned char *p = elements;
	size_t size = ti_dtype_size(dt);
	/* a complex element is (real, imaginary), each a float of half the size; the sign is a part's top bit */
	size_t part = is_complex(dt) ? size / 2 : size;
	negation how = negation_of(dt);
	for (size_t i = 0; i < n; i++, p += size) {
		if (conj && part != size)
			p[size - 1] ^= 0x80;
		if (!neg)
			continue;
		if (how == NEG_SIGN_BIT) {
			for (size_t k = part - 1; k < size; k += part)
				p[k] ^= 0x80;
		} else if (how == NEG_SIGN_BIT_FNUZ) {
			if (p[0] & 0x7f)
				p[0] ^= 0x80;
		} else { /* two's complement: invert, add one, little-endian */
			unsigned carry = 1;
			for (size_t k = 0; k < size; k++) {
				unsigned v = (unsigned)(unsigned char)~p[k] + carry;
				p[k] = (unsigned char)v;
				carry = v >> 8;
			}
		}
	}
	return true;
}

void ti_dtype_swap_bytes(ti_dtype dt, void *elements, size_t n)
{
	size_t size = ti_dtype_size(dt), part = is_complex(dt) ? size / 2 : size;
	unsigned char *p = elements;
	if (part < 2)
		return;
	for (size_t i = 0; i < n * (size / part); i++, p += part)
		for (size_t lo = 0, hi = part - 1; lo < hi; lo++, hi--) {
			unsigned char b = p[lo];
			p[lo] = p[hi];
			p[hi] = b;
		}
}

ti_dtype ti_dtype_from_torch_name(const char *name)
{
	for (int i = 1; i < TI_DT_COUNT; i++)
		if (dtypes[i].storage && /* a torch dtype */
		    (!strcmp(dtypes[i].name, name) || (dtypes[i].alias && !strcmp(dtypes[i].alias, name))))
			return (ti_dtype)i;
	return TI_DT_INVALID;
}

ti_dtype ti_dtype_from_storage_name(const char *name)
{
	for (int i = 1; i < TI_DT_COUNT; i++)
		if (dtypes[i].storage && !strcmp(dtypes[i].storage, name))
			return (ti_dtype)i;
	return TI_DT_INVALID;
}
