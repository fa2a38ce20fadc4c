/*
 * cast.c - dtype conversions bit-identical to PyTorch's CPU `.to()`; the rules are in cast.h.
 *
 * Every conversion goes through one of three intermediate forms, a chunk at
 * a time in a stack buffer: float32 bits (for float16, bfloat16 and float32
 * sources, exact), a double (float64 sources) or an int64 (integers and
 * bool). That is also how c10 converts: Half and BFloat16 are built from a
 * float, and integers are converted by C++'s static_cast.
 */
#include "tinspect/cast.h"

#include <stdint.h>
#include <string.h>

/* Elements per chunk: 256 doubles are 2 KiB of stack. */
#define CAST_CHUNK 256

typedef enum cast_class { C_NONE, C_BOOL, C_SIGNED, C_UNSIGNED, C_FLOAT } cast_class;

struct cast_row {
	cast_class cls;
	unsigned char size;   /* bytes per element */
	unsigned char digits; /* floats: significand bits with the implicit one; integers: value bits */
	const char *scalar;   /* c10's ScalarType name, as "not implemented for 'Long'" prints it */
};

static const struct cast_row rows[TI_DT_COUNT] = {
	[TI_DT_FLOAT32] = {C_FLOAT, 4, 24, "Float"},
	[TI_DT_FLOAT64] = {C_FLOAT, 8, 53, "Double"},
	[TI_DT_FLOAT16] = {C_FLOAT, 2, 11, "Half"},
	[TI_DT_BFLOAT16] = {C_FLOAT, 2, 8, "BFloat16"},
	[TI_DT_INT64] = {C_SIGNED, 8, 63, "Long"},
	[TI_DT_INT32] = {C_SIGNED, 4, 31, "Int"},
	[TI_DT_INT16] = {C_SIGNED, 2, 15, "Short"},
	[TI_DT_INT8] = {C_SIGNED, 1, 7, "Char"},
	[TI_DT_UINT8] = {C_UNSIGNED, 1, 8, "Byte"},
	[TI_DT_UINT16] = {C_UNSIGNED, 2, 16, "UInt16"},
	[TI_DT_UINT32] = {C_UNSIGNED, 4, 32, "UInt32"},
	[TI_DT_UINT64] = {C_UNSIGNED, 8, 64, "UInt64"},
	[TI_DT_BOOL] = {C_BOOL, 1, 1, "Bool"},
	[TI_DT_COMPLEX32] = {C_NONE, 4, 0, "ComplexHalf"},
	[TI_DT_COMPLEX64] = {C_NONE, 8, 0, "ComplexFloat"},
	[TI_DT_COMPLEX128] = {C_NONE, 16, 0, "ComplexDouble"},
};

static const struct cast_row *row_of(ti_dtype dt)
{
	return (unsigned)dt < TI_DT_COUNT && rows[dt].cls != C_NONE ? &rows[dt] : NULL;
}

const char *ti_cast_scalar_type_name(ti_dtype dt)
{
	return (unsigned)dt < TI_DT_COUNT && rows[dt].scalar ? rows[dt].scalar : "";
}

bool ti_cast_supported(ti_dtype from, ti_dtype to)
{
	const struct cast_row *f = row_of(from), *t = row_of(to);
	if (!f || !t)
		return false;
	/* static_cast<uint32_t>(float) out of range is undefined, and PyTorch 1.13 has no such dtype to copy */
	return !(f->cls == C_FLOAT && t->cls == C_UNSIGNED && t->size > 1);
}

bool ti_cast_is_lossless(ti_dtype from, ti_dtype to)
{
	if (!ti_cast_supported(from, to))
		return false;
	const struct cast_row *f = row_of(from), *t = row_of(to);
	if (from == to || f->cls == C_BOOL)
		return true;
	if (t->cls == C_BOOL)
		return false;
	if (f->cls == C_FLOAT)
		/* float16 and bfloat16 differ in range, so only the wider formats hold either */
		return t->cls == C_FLOAT && (to == TI_DT_FLOAT64 || (to == TI_DT_FLOAT32 && from != TI_DT_FLOAT64));
	if (t->cls == C_FLOAT)
		return f->digits <= t->digits; /* 2^digits needs no more significand than that */
	if (f->cls == C_SIGNED && t->cls == C_UNSIGNED)
		return false;
	return f->digits <= t->digits;
}

/* ---- little-endian element access ---- */

/* Storages are little-endian; on a little-endian host an element is one memcpy. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CAST_HOST_LITTLE 1
#else
#define CAST_HOST_LITTLE 0
#endif

static inline uint64_t load_le(const unsigned char *p, size_t size)
{
	if (CAST_HOST_LITTLE) {
		switch (size) {
		case 1: return p[0];
		case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
		case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
		case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
		default: break;
		}
	}
	uint64_t v = 0;
	for (size_t i = 0; i < size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline void store_le(unsigned char *p, size_t size, uint64_t v)
{
	if (CAST_HOST_LITTLE) {
		switch (size) {
		case 1: p[0] = (unsigned char)v; return;
		case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); return; }
		case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); return; }
		case 8: memcpy(p, &v, 8); return;
		default: break;
		}
	}
	for (size_t i = 0; i < size; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t float_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

static float bits_float(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

static uint64_t double_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static double bits_double(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

/* ---- the half formats ---- */

/* float16 -> float32, exact; NaNs come out quiet, as both F16C and c10's software path make them. */
static uint32_t f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
	if (exponent == 0x1f)
		return sign | 0x7f800000u | (mantissa ? 0x400000u | mantissa << 13 : 0);
	if (exponent == 0) {
		if (!mantissa)
			return sign;
		/* a subnormal m * 2^-24: normalise it */
		uint32_t shift = 0;
		while (!(mantissa & 0x400u)) {
			mantissa <<= 1;
			shift++;
		}
		return sign | (113u - shift) << 23 | (mantissa & 0x3ffu) << 13;
	}
	return sign | (exponent + 112u) << 23 | mantissa << 13; /* rebias: 127 - 15 */
}

/* float32 -> float16, round to nearest even (c10's fp16_ieee_from_fp32_value, F16C's vcvtps2ph). */
static uint16_t f32_to_f16(uint32_t f, bool keep_payload)
{
	uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
	uint32_t a = f & 0x7fffffffu;
	if (a > 0x7f800000u)
		return sign | 0x7e00u | (keep_payload ? (uint16_t)((a >> 13) & 0x3ffu) : 0);
	if (a >= 0x477ff000u) /* 65520 = 65504 + half an ulp and up, inf included: the tie goes to even, inf */
		return sign | 0x7c00u;
	if (a >= 0x38800000u) { /* 2^-14 and up: a normal float16 */
		a += 0xfffu + ((a >> 13) & 1u);
		return sign | (uint16_t)((a - 0x38000000u) >> 13);
	}
	uint32_t exponent = a >> 23;
	if (exponent < 102) /* below 2^-25, half the smallest subnormal: zero */
		return sign;
	/* a subnormal float16 q * 2^-24, q = significand * 2^(exponent - 126) */
	uint32_t significand = (a & 0x7fffffu) | 0x800000u, shift = 126 - exponent;
	uint32_t q = significand >> shift, rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rest > half || (rest == half && (q & 1u)))
		q++;
	return sign | (uint16_t)q;
}

/* float32 -> bfloat16, c10's round_to_nearest_even; NaN is given. */
static uint16_t f32_to_bf16(uint32_t f, uint16_t nan)
{
	if ((f & 0x7fffffffu) > 0x7f800000u)
		return nan;
	return (uint16_t)((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

/* ---- floats to integers, as x86-64 truncates them ---- */

/* cvttsd2si with a 64-bit destination: out of range and NaN give the "integer indefinite" value. */
static int64_t truncate_int64(double d)
{
	if (d != d || d >= 0x1p63 || d < -0x1p63)
		return INT64_MIN;
	return (int64_t)d;
}

/* cvttsd2si with a 32-bit destination. */
static int32_t truncate_int32(double d)
{
	if (d != d || d >= 0x1p31 || d <= -0x1p31 - 1.0)
		return INT32_MIN;
	return (int32_t)d;
}

/* ---- one chunk ---- */

/* Writes k integers (as uint64 bit patterns, wrapped to the size) or bools. */
static void store_ints(const struct cast_row *t, const uint64_t *v, size_t k, unsigned char *dst)
{
	if (t->cls == C_BOOL) {
		for (size_t i = 0; i < k; i++)
			dst[i] = v[i] != 0;
		return;
	}
	for (size_t i = 0; i < k; i++)
		store_le(dst + i * t->size, t->size, v[i]);
}

/* Writes k values given as doubles (exact) into an integer or bool dtype. */
static void store_doubles_as_ints(const struct cast_row *t, ti_dtype to, const double *d, size_t k,
                                  unsigned char *dst)
{
	if (t->cls == C_BOOL) {
		for (size_t i = 0; i < k; i++)
			dst[i] = d[i] != 0; /* NaN != 0 */
		return;
	}
	bool wide = to == TI_DT_INT64 || to == TI_DT_UINT8; /* what the compiler emitted for PyTorch */
	for (size_t i = 0; i < k; i++) {
		uint64_t v = wide ? (uint64_t)truncate_int64(d[i]) : (uint64_t)(uint32_t)truncate_int32(d[i]);
		store_le(dst + i * t->size, t->size, v);
	}
}

/* From float32 bits (sources float16, bfloat16, float32). */
static void store_from_f32(ti_dtype from, ti_dtype to, const uint32_t *f, size_t k, unsigned char *dst,
                           unsigned flags)
{
	const struct cast_row *t = row_of(to);
	switch (to) {
	case TI_DT_FLOAT32:
		for (size_t i = 0; i < k; i++)
			store_le(dst + 4 * i, 4, f[i]);
		return;
	case TI_DT_FLOAT64:
		for (size_t i = 0; i < k; i++)
			store_le(dst + 8 * i, 8, double_bits((double)bits_float(f[i])));
		return;
	case TI_DT_FLOAT16: {
		bool payload = (flags & TI_CAST_F16_NAN_PAYLOAD) && from == TI_DT_FLOAT32;
		for (size_t i = 0; i < k; i++)
			store_le(dst + 2 * i, 2, f32_to_f16(f[i], payload));
		return;
	}
	case TI_DT_BFLOAT16: {
		/* only the vectorised float32 kernel blends in 0xffff; float16 goes the scalar way */
		uint16_t nan = (flags & TI_CAST_NAN_SCALAR) || from != TI_DT_FLOAT32 ? 0x7fc0u : 0xffffu;
		for (size_t i = 0; i < k; i++)
			store_le(dst + 2 * i, 2, f32_to_bf16(f[i], nan));
		return;
	}
	default: {
		double d[CAST_CHUNK];
		for (size_t i = 0; i < k; i++)
			d[i] = (double)bits_float(f[i]);
		store_doubles_as_ints(t, to, d, k, dst);
		return;
	}
	}
}

/* From doubles (source float64). */
static void store_from_f64(ti_dtype to, const double *d, size_t k, unsigned char *dst, unsigned flags)
{
	const struct cast_row *t = row_of(to);
	switch (to) {
	case TI_DT_FLOAT32:
		for (size_t i = 0; i < k; i++)
			store_le(dst + 4 * i, 4, float_bits((float)d[i]));
		return;
	case TI_DT_FLOAT64:
		for (size_t i = 0; i < k; i++)
			store_le(dst + 8 * i, 8, double_bits(d[i]));
		return;
	case TI_DT_FLOAT16:
		for (size_t i = 0; i < k; i++)
			store_le(dst + 2 * i, 2, f32_to_f16(float_bits((float)d[i]), false));
		return;
	case TI_DT_BFLOAT16: {
		uint16_t nan = flags & TI_CAST_NAN_SCALAR ? 0x7fc0u : 0xffffu;
		for (size_t i = 0; i < k; i++)
			store_le(dst + 2 * i, 2, f32_to_bf16(float_bits((float)d[i]), nan));
		return;
	}
	default:
		store_doubles_as_ints(t, to, d, k, dst);
		return;
	}
}

/* From integers, as uint64 bit patterns of the int64 (or uint64) value. */
static void store_from_int(bool unsigned64, ti_dtype to, const uint64_t *v, size_t k, unsigned char *dst)
{
	const struct cast_row *t = row_of(to);
	if (t->cls != C_FLOAT) {
		store_ints(t, v, k, dst);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		/* one rounding from the integer to float or double; half formats round that float again */
		if (to == TI_DT_FLOAT64) {
			double x = unsigned64 ? (double)v[i] : (double)(int64_t)v[i];
			store_le(dst + 8 * i, 8, double_bits(x));
			continue;
		}
		float x = unsigned64 ? (float)v[i] : (float)(int64_t)v[i];
		uint32_t bits = float_bits(x);
		if (to == TI_DT_FLOAT32)
			store_le(dst + 4 * i, 4, bits);
		else if (to == TI_DT_FLOAT16)
			store_le(dst + 2 * i, 2, f32_to_f16(bits, false));
		else
			store_le(dst + 2 * i, 2, f32_to_bf16(bits, 0x7fc0u)); /* no NaN comes from an integer */
	}
}

/* Reads k integers or bools as int64 values (uint64 bit patterns; sign-extended when signed). */
static void load_ints(const struct cast_row *f, const unsigned char *src, size_t k, uint64_t *v)
{
	for (size_t i = 0; i < k; i++) {
		uint64_t x = load_le(src + i * f->size, f->size);
		if (f->cls == C_BOOL)
			x = x != 0;
		else if (f->cls == C_SIGNED && f->size < 8 && (x >> (8 * f->size - 1)) & 1u)
			x |= ~(uint64_t)0 << (8 * f->size);
		v[i] = x;
	}
}

ti_status ti_cast(ti_dtype from, const void *src, ti_dtype to, void *dst, size_t n, unsigned flags,
                  ti_error *err)
{
	if (!ti_cast_supported(from, to))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "cannot cast %s to %s", ti_dtype_name(from), ti_dtype_name(to));
	if (flags & ~(TI_CAST_NAN_SCALAR | TI_CAST_F16_NAN_PAYLOAD))
		return TI_FAIL(err, TI_E_INVALID, "unknown cast flags 0x%x", flags);
	if (n == 0)
		return TI_OK;
	if (!src || !dst)
		return TI_FAIL(err, TI_E_INVALID, "cast of %zu elements without a buffer", n);
	const struct cast_row *f = row_of(from), *t = row_of(to);
	if (from == to) {
		memmove(dst, src, n * f->size);
		return TI_OK;
	}
	const unsigned char *in = src;
	unsigned char *out = dst;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (from == TI_DT_FLOAT32 && to == TI_DT_BFLOAT16) {
		/* the hot path of `convert --dtype bfloat16`: a loop the compiler vectorises */
		uint16_t nan = (flags & TI_CAST_NAN_SCALAR) ? 0x7fc0u : 0xffffu;
		for (size_t i = 0; i < n; i++) {
			uint32_t x;
			memcpy(&x, in + 4 * i, 4);
			uint16_t r = f32_to_bf16(x, nan);
			memcpy(out + 2 * i, &r, 2);
		}
		return TI_OK;
	}
#endif
	for (size_t done = 0; done < n;) {
		size_t k = n - done < CAST_CHUNK ? n - done : CAST_CHUNK;
		const unsigned char *s = in + done * f->size;
		unsigned char *d = out + done * t->size;
		if (from == TI_DT_FLOAT64) {
			double x[CAST_CHUNK];
			for (size_t i = 0; i < k; i++)
				x[i] = bits_double(load_le(s + 8 * i, 8));
			store_from_f64(to, x, k, d, flags);
		} else if (f->cls == C_FLOAT) {
			uint32_t x[CAST_CHUNK];
			for (size_t i = 0; i < k; i++) {
				if (from == TI_DT_FLOAT32)
					x[i] = (uint32_t)load_le(s + 4 * i, 4);
				else if (from == TI_DT_FLOAT16)
					x[i] = f16_to_f32((uint16_t)load_le(s + 2 * i, 2));
				else
					x[i] = (uint32_t)load_le(s + 2 * i, 2) << 16; /* bfloat16 is float32's top half */
			}
			store_from_f32(from, to, x, k, d, flags);
		} else {
			uint64_t x[CAST_CHUNK];
			load_ints(f, s, k, x);
			store_from_int(from == TI_DT_UINT64, to, x, k, d);
		}
		done += k;
	}
	return TI_OK;
}
