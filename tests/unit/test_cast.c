/*
 * test_cast.c - dtype casts, bit for bit as PyTorch 1.13's `.to()` on x86-64 CPU.
 * Expected bits come from torch (tests/conformance/cast_conformance.py checks
 * millions more); each table row names the case it pins down.
 */
#include "unit.h"

#include "tinspect/cast.h"

/* Casts one element given by its bit pattern (little-endian, the dtype's size) and returns the result's bits. */
static uint64_t cast_bits(ti_dtype from, uint64_t bits, ti_dtype to, unsigned flags)
{
	unsigned char in[8], out[8] = {0};
	for (int i = 0; i < 8; i++)
		in[i] = (unsigned char)(bits >> (8 * i));
	ti_error err;
	ti_error_clear(&err);
	ti_status st = ti_cast(from, in, to, out, 1, flags, &err);
	cr_assert(st == TI_OK, "cast %s -> %s: %s", ti_dtype_name(from), ti_dtype_name(to), err.message);
	uint64_t v = 0;
	for (size_t i = 0; i < ti_dtype_size(to); i++)
		v |= (uint64_t)out[i] << (8 * i);
	return v;
}

static uint64_t double_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

/* The low `size` bytes of an int64, as the bit pattern of a narrower integer. */
static uint64_t int_bits(int64_t v, size_t size)
{
	return size == 8 ? (uint64_t)v : (uint64_t)v & ((UINT64_C(1) << (8 * size)) - 1);
}

typedef struct bits_row {
	const char *what;
	ti_dtype from;
	uint64_t in;
	ti_dtype to;
	unsigned flags;
	uint64_t want;
} bits_row;

static void check_rows(const bits_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t got = cast_bits(rows[i].from, rows[i].in, rows[i].to, rows[i].flags);
		cr_expect(got == rows[i].want, "%s: %s 0x%llx -> %s: got 0x%llx, want 0x%llx", rows[i].what,
		          ti_dtype_name(rows[i].from), (unsigned long long)rows[i].in, ti_dtype_name(rows[i].to),
		          (unsigned long long)got, (unsigned long long)rows[i].want);
	}
}

#define F32 TI_DT_FLOAT32
#define F64 TI_DT_FLOAT64
#define F16 TI_DT_FLOAT16
#define BF16 TI_DT_BFLOAT16
#define SCALAR TI_CAST_NAN_SCALAR
#define PAYLOAD TI_CAST_F16_NAN_PAYLOAD

Test(cast, float32_to_bfloat16_rounds_to_nearest_even_and_writes_nan_as_the_vector_kernel_does)
{
	static const bits_row rows[] = {
		{"one", F32, 0x3f800000, BF16, 0, 0x3f80},
		{"tie with an even last bit stays", F32, 0x3f808000, BF16, 0, 0x3f80},
		{"tie with an odd last bit rounds up", F32, 0x3f818000, BF16, 0, 0x3f82},
		{"just above the tie rounds up", F32, 0x3f808001, BF16, 0, 0x3f81},
		{"just below the tie rounds down", F32, 0x3f807fff, BF16, 0, 0x3f80},
		{"negative zero keeps its sign", F32, 0x80000000, BF16, 0, 0x8000},
		{"inf", F32, 0x7f800000, BF16, 0, 0x7f80},
		{"-inf", F32, 0xff800000, BF16, 0, 0xff80},
		{"the largest float overflows to inf", F32, 0x7f7fffff, BF16, 0, 0x7f80},
		{"a bfloat16 subnormal", F32, 0x00010000, BF16, 0, 0x0001},
		{"a subnormal tie rounds to even", F32, 0x00018000, BF16, 0, 0x0002},
		{"the smallest float subnormal rounds to zero", F32, 0x00000001, BF16, 0, 0x0000},
		{"quiet NaN is 0xffff", F32, 0x7fc00000, BF16, 0, 0xffff},
		{"negative signalling NaN is 0xffff", F32, 0xff800001, BF16, 0, 0xffff},
		{"NaN on the scalar path is 0x7fc0", F32, 0x7fc00000, BF16, SCALAR, 0x7fc0},
		{"negative NaN on the scalar path loses its sign", F32, 0xffc00001, BF16, SCALAR, 0x7fc0},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

Test(cast, float32_to_float16_rounds_to_nearest_even_with_subnormals_and_overflow)
{
	static const bits_row rows[] = {
		{"one", F32, 0x3f800000, F16, 0, 0x3c00},
		{"tie with an even last bit stays", F32, 0x3f801000, F16, 0, 0x3c00},
		{"tie with an odd last bit rounds up", F32, 0x3f803000, F16, 0, 0x3c02},
		{"just above the tie rounds up", F32, 0x3f801001, F16, 0, 0x3c01},
		{"65504 is the largest half", F32, 0x477fe000, F16, 0, 0x7bff},
		{"just below 65520 rounds to 65504", F32, 0x477fefff, F16, 0, 0x7bff},
		{"65520 overflows to inf", F32, 0x477ff000, F16, 0, 0x7c00},
		{"-65520 overflows to -inf", F32, 0xc77ff000, F16, 0, 0xfc00},
		{"2^-14 is the smallest normal", F32, 0x38800000, F16, 0, 0x0400},
		{"the largest subnormal", F32, 0x387fc000, F16, 0, 0x03ff},
		{"2^-24 is the smallest subnormal", F32, 0x33800000, F16, 0, 0x0001},
		{"2^-25 ties to even zero", F32, 0x33000000, F16, 0, 0x0000},
		{"just above 2^-25 rounds up", F32, 0x33000001, F16, 0, 0x0001},
		{"1.5 * 2^-24 ties to even 2", F32, 0x33c00000, F16, 0, 0x0002},
		{"a float subnormal is zero", F32, 0x00000001, F16, 0, 0x0000},
		{"negative zero", F32, 0x80000000, F16, 0, 0x8000},
		{"-inf", F32, 0xff800000, F16, 0, 0xfc00},
		{"quiet NaN", F32, 0x7fc00000, F16, 0, 0x7e00},
		{"negative NaN keeps its sign", F32, 0xffc00000, F16, 0, 0xfe00},
		{"a NaN payload is dropped", F32, 0x7fffffff, F16, 0, 0x7e00},
		{"F16C keeps the top of the payload", F32, 0x7fffffff, F16, PAYLOAD, 0x7fff},
		{"F16C keeps the sign and quiets", F32, 0xffaaaaaa, F16, PAYLOAD, 0xff55},
		{"F16C: a payload below the kept bits", F32, 0x7f800001, F16, PAYLOAD, 0x7e00},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

Test(cast, float64_to_half_formats_rounds_twice_through_float32)
{
	static const bits_row rows[] = {
		{"1 + 2^-11 + 2^-40 becomes a float16 tie, then even", F64, 0x3ff0020000001000, F16, 0, 0x3c00},
		{"1 + 2^-8 + 2^-40 becomes a bfloat16 tie, then even", F64, 0x3ff0100000001000, BF16, 0, 0x3f80},
		{"1e300 is inf in float16", F64, 0x7e37e43c8800759c, F16, 0, 0x7c00},
		{"NaN to bfloat16 is 0xffff", F64, 0x7ff8000000000000, BF16, 0, 0xffff},
		{"NaN to bfloat16 on the scalar path", F64, 0x7ff8000000000000, BF16, SCALAR, 0x7fc0},
		{"NaN to float16", F64, 0xfff8000000000000, F16, 0, 0xfe00},
		{"float64 to float32 rounds to nearest even", F64, 0x3ff0000010000000, F32, 0, 0x3f800000},
		{"float64 NaN to float32 keeps the top of its payload", F64, 0x7ff5555555555555, F32, 0, 0x7feaaaaa},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

Test(cast, half_formats_widen_exactly)
{
	static const bits_row rows[] = {
		{"float16 one", F16, 0x3c00, F32, 0, 0x3f800000},
		{"float16 65504", F16, 0x7bff, F32, 0, 0x477fe000},
		{"the smallest float16 subnormal", F16, 0x0001, F32, 0, 0x33800000},
		{"the largest float16 subnormal", F16, 0x03ff, F32, 0, 0x387fc000},
		{"negative zero", F16, 0x8000, F32, 0, 0x80000000},
		{"float16 -inf", F16, 0xfc00, F32, 0, 0xff800000},
		{"a float16 signalling NaN comes out quiet", F16, 0x7c01, F32, 0, 0x7fc02000},
		{"a negative float16 NaN keeps sign and payload", F16, 0xfd55, F32, 0, 0xffeaa000},
		{"float16 to float64", F16, 0x3555, F64, 0, 0x3fd5540000000000},
		{"float16 NaN to float64", F16, 0x7c01, F64, 0, 0x7ff8040000000000},
		{"bfloat16 is the top half of a float32", BF16, 0x3f81, F32, 0, 0x3f810000},
		{"a bfloat16 signalling NaN keeps its bits", BF16, 0x7f81, F32, 0, 0x7f810000},
		{"a bfloat16 subnormal", BF16, 0x0001, F32, 0, 0x00010000},
		{"bfloat16 NaN to float64 comes out quiet", BF16, 0x7f81, F64, 0, 0x7ff8200000000000},
		{"float32 to float64", F32, 0x3dcccccd, F64, 0, 0x3fb99999a0000000},
		{"float32 signalling NaN to float64 is quieted", F32, 0x7f800001, F64, 0, 0x7ff8000020000000},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

Test(cast, float16_and_bfloat16_convert_through_float32)
{
	static const bits_row rows[] = {
		{"float16 NaN to bfloat16 takes the scalar NaN", F16, 0xfd55, BF16, 0, 0x7fc0},
		{"float16 subnormal to bfloat16", F16, 0x0001, BF16, 0, 0x3380},
		{"float16 one to bfloat16", F16, 0x3c00, BF16, 0, 0x3f80},
		{"float16 2052 rounds to 2048 in bfloat16", F16, 0x6802, BF16, 0, 0x4500},
		{"bfloat16 NaN to float16 keeps the sign", BF16, 0xffaa, F16, 0, 0xfe00},
		{"bfloat16 subnormal is zero in float16", BF16, 0x0001, F16, 0, 0x0000},
		{"bfloat16 beyond 65504 is inf in float16", BF16, 0x4780, F16, 0, 0x7c00},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

typedef struct int_row {
	const char *what;
	double in;
	ti_dtype to;
	int64_t want;
} int_row;

Test(cast, floats_to_integers_truncate_as_x86_does)
{
	const int_row rows[] = {
		{"truncation toward zero", -2.9, TI_DT_INT64, -2},
		{"NaN to int64 is INT64_MIN", NAN, TI_DT_INT64, INT64_MIN},
		{"inf to int64 is INT64_MIN", INFINITY, TI_DT_INT64, INT64_MIN},
		{"-inf to int64 is INT64_MIN", -INFINITY, TI_DT_INT64, INT64_MIN},
		{"2^63 to int64 is INT64_MIN", 0x1p63, TI_DT_INT64, INT64_MIN},
		{"2^31 - 0.5 fits int32", 0x1p31 - 0.5, TI_DT_INT32, INT32_MAX},
		{"-3e9 to int32 is INT32_MIN", -3e9, TI_DT_INT32, INT32_MIN},
		{"NaN to int32 is INT32_MIN", NAN, TI_DT_INT32, INT32_MIN},
		{"int16 goes through int32 and wraps", 70000.0, TI_DT_INT16, 4464},
		{"int16 of a value beyond int32 is 0", 1e10, TI_DT_INT16, 0},
		{"NaN to int8 is 0", NAN, TI_DT_INT8, 0},
		{"300.7 to int8 wraps", 300.7, TI_DT_INT8, 44},
		{"-1.0 to uint8 wraps", -1.0, TI_DT_UINT8, 255},
		{"300.7 to uint8 wraps", 300.7, TI_DT_UINT8, 44},
		{"uint8 goes through int64", 0x1p32 + 7, TI_DT_UINT8, 7},
		{"NaN to uint8 is 0", NAN, TI_DT_UINT8, 0},
		{"NaN is true", NAN, TI_DT_BOOL, 1},
		{"negative zero is false", -0.0, TI_DT_BOOL, 0},
		{"a tiny value is true", 1e-300, TI_DT_BOOL, 1},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t size = ti_dtype_size(rows[i].to);
		uint64_t got = cast_bits(F64, double_bits(rows[i].in), rows[i].to, 0);
		uint64_t want = int_bits(rows[i].want, size);
		cr_expect(got == want, "%s: %g -> %s: got 0x%llx, want 0x%llx", rows[i].what, rows[i].in,
		          ti_dtype_name(rows[i].to), (unsigned long long)got, (unsigned long long)want);
		/* float32 sources give the same, where the value is a float32 */
		float f = (float)rows[i].in;
		if ((double)f == rows[i].in || rows[i].in != rows[i].in) {
			uint32_t fb;
			memcpy(&fb, &f, sizeof(fb));
			got = cast_bits(F32, fb, rows[i].to, 0);
			cr_expect(got == want, "%s (from float32): got 0x%llx, want 0x%llx", rows[i].what,
			          (unsigned long long)got, (unsigned long long)want);
		}
	}
}

Test(cast, integers_wrap_and_round_to_floats_once_or_through_float32)
{
	static const bits_row rows[] = {
		{"int64 300 to int8 wraps", TI_DT_INT64, 300, TI_DT_INT8, 0, 44},
		{"int64 -1 to uint8 wraps", TI_DT_INT64, UINT64_MAX, TI_DT_UINT8, 0, 255},
		{"int32 -129 to int8 wraps", TI_DT_INT32, 0xffffff7f, TI_DT_INT8, 0, 127},
		{"uint8 255 to int8 is -1", TI_DT_UINT8, 255, TI_DT_INT8, 0, 0xff},
		{"int8 -1 to int64 sign-extends", TI_DT_INT8, 0xff, TI_DT_INT64, 0, UINT64_MAX},
		{"uint8 255 to int64 does not", TI_DT_UINT8, 0xff, TI_DT_INT64, 0, 255},
		{"int16 -2 to int32", TI_DT_INT16, 0xfffe, TI_DT_INT32, 0, 0xfffffffe},
		{"int64 2^24 + 1 to float32 rounds to even", TI_DT_INT64, (1 << 24) + 1, F32, 0, 0x4b800000},
		{"int64 2^40 + 2^16 + 1 to float32 rounds once", TI_DT_INT64, (UINT64_C(1) << 40) + (1 << 16) + 1, F32, 0,
		 0x53800001},
		{"int64 2^24 + 2^16 + 1 to bfloat16 rounds twice", TI_DT_INT64, (1 << 24) + (1 << 16) + 1, BF16, 0, 0x4b80},
		{"int64 65520 overflows float16", TI_DT_INT64, 65520, F16, 0, 0x7c00},
		{"int64 2051 to float16 ties to even", TI_DT_INT64, 2051, F16, 0, 0x6802},
		{"int64 2^53 + 1 to float64 rounds to even", TI_DT_INT64, (UINT64_C(1) << 53) + 1, F64, 0, 0x4340000000000000},
		{"int64 -1 to float64", TI_DT_INT64, UINT64_MAX, F64, 0, 0xbff0000000000000},
		{"uint64 2^64 - 1 to float32", TI_DT_UINT64, UINT64_MAX, F32, 0, 0x5f800000},
		{"int32 to bool", TI_DT_INT32, 0x100, TI_DT_BOOL, 0, 1},
		{"a bool byte other than 1 reads as true", TI_DT_BOOL, 2, TI_DT_INT64, 0, 1},
		{"bool to float16", TI_DT_BOOL, 1, F16, 0, 0x3c00},
		{"bool to bfloat16", TI_DT_BOOL, 1, BF16, 0, 0x3f80},
		{"uint32 to uint16 wraps", TI_DT_UINT32, 0x12345678, TI_DT_UINT16, 0, 0x5678},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

Test(cast, the_same_dtype_copies_the_bytes)
{
	static const bits_row rows[] = {
		{"a float32 signalling NaN is not quieted", F32, 0x7f800001, F32, 0, 0x7f800001},
		{"a bfloat16 NaN", BF16, 0xffaa, BF16, 0, 0xffaa},
		{"a bool byte", TI_DT_BOOL, 2, TI_DT_BOOL, 0, 2},
	};
	check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

Test(cast, a_long_buffer_converts_the_same_as_one_element_at_a_time)
{
	enum { N = 1000 }; /* several chunks, and a partial one */
	float in[N];
	uint16_t out[N];
	for (int i = 0; i < N; i++)
		in[i] = (float)(i - 500) * 0.37f + (i % 7 == 0 ? 1e-40f : 0.0f);
	in[3] = NAN;
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_cast(F32, in, BF16, out, N, 0, &err), TI_OK, err);
	for (int i = 0; i < N; i++) {
		uint32_t b;
		memcpy(&b, &in[i], sizeof(b));
		uint64_t want = cast_bits(F32, b, BF16, 0);
		cr_expect(out[i] == want, "element %d: got 0x%04x, want 0x%04llx", i, out[i], (unsigned long long)want);
	}
}

Test(cast, a_cast_between_dtypes_of_one_size_works_in_place)
{
	float buf[300];
	for (int i = 0; i < 300; i++)
		buf[i] = (float)i - 150.5f;
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_cast(F32, buf, TI_DT_INT32, buf, 300, 0, &err), TI_OK, err);
	int32_t got[300];
	memcpy(got, buf, sizeof(got));
	for (int i = 0; i < 300; i++)
		cr_expect(got[i] == (int32_t)((float)i - 150.5f), "element %d: got %d", i, got[i]);
}

Test(cast, unsupported_pairs_and_bad_arguments_are_refused)
{
	ti_error err;
	ti_error_clear(&err);
	unsigned char buf[16] = {0};
	EXPECT_STATUS(ti_cast(TI_DT_COMPLEX64, buf, F32, buf, 1, 0, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STR(err.message, "cannot cast complex64 to float32");
	EXPECT_STATUS(ti_cast(F32, buf, TI_DT_UINT32, buf, 1, 0, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STATUS(ti_cast(F32, buf, TI_DT_QINT8, buf, 1, 0, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STATUS(ti_cast(TI_DT_INVALID, buf, F32, buf, 1, 0, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STATUS(ti_cast(F32, buf, F16, buf, 1, 0x80, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cast(F32, NULL, F16, buf, 1, 0, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cast(F32, NULL, F16, NULL, 0, 0, &err), TI_OK, err);
	cr_expect(ti_cast_supported(TI_DT_UINT32, F32));
	cr_expect(ti_cast_supported(F32, TI_DT_UINT8));
	cr_expect(!ti_cast_supported(F64, TI_DT_UINT64));
	cr_expect(!ti_cast_supported(TI_DT_FLOAT8_E4M3FN, F32));
}

Test(cast, lossless_means_every_value_comes_back)
{
	static const struct {
		ti_dtype from, to;
		bool want;
	} rows[] = {
		{F16, F32, true},          {BF16, F32, true},          {F32, F64, true},
		{F16, F64, true},          {F32, F32, true},           {TI_DT_BOOL, F16, true},
		{TI_DT_UINT8, BF16, true}, {TI_DT_INT8, F16, true},    {TI_DT_INT16, F32, true},
		{TI_DT_INT32, F64, true},  {TI_DT_INT8, TI_DT_INT64, true}, {TI_DT_UINT8, TI_DT_INT16, true},
		{TI_DT_UINT32, TI_DT_INT64, true},
		{F32, BF16, false},        {F32, F16, false},          {F16, BF16, false},
		{BF16, F16, false},        {F64, F32, false},          {TI_DT_INT16, F16, false},
		{TI_DT_INT32, F32, false}, {TI_DT_INT64, F64, false},  {TI_DT_INT8, TI_DT_UINT8, false},
		{TI_DT_UINT8, TI_DT_INT8, false}, {TI_DT_INT64, TI_DT_INT32, false}, {F32, TI_DT_INT64, false},
		{F32, TI_DT_BOOL, false},  {TI_DT_COMPLEX64, TI_DT_COMPLEX64, false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_expect(ti_cast_is_lossless(rows[i].from, rows[i].to) == rows[i].want, "%s -> %s: got %d, want %d",
		          ti_dtype_name(rows[i].from), ti_dtype_name(rows[i].to),
		          ti_cast_is_lossless(rows[i].from, rows[i].to), rows[i].want);
}

Test(cast, scalar_type_names_are_the_ones_pytorch_prints)
{
	EXPECT_STR(ti_cast_scalar_type_name(TI_DT_INT64), "Long");
	EXPECT_STR(ti_cast_scalar_type_name(TI_DT_UINT8), "Byte");
	EXPECT_STR(ti_cast_scalar_type_name(TI_DT_INT8), "Char");
	EXPECT_STR(ti_cast_scalar_type_name(TI_DT_BFLOAT16), "BFloat16");
	EXPECT_STR(ti_cast_scalar_type_name(TI_DT_QINT8), "");
}
