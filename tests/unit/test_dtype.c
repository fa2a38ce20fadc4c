/*
 * test_dtype.c - the dtype table: names, aliases, storage classes, sizes.
 * Sizes are torch's element_size() (c10/core/ScalarType.h).
 */
#include "unit.h"

Test(dtype, names_are_torch_s_without_the_prefix)
{
	EXPECT_STR(ti_dtype_name(TI_DT_FLOAT32), "float32");
	EXPECT_STR(ti_dtype_name(TI_DT_BFLOAT16), "bfloat16");
	EXPECT_STR(ti_dtype_name(TI_DT_COMPLEX128), "complex128");
	EXPECT_STR(ti_dtype_name(TI_DT_QUINT4X2), "quint4x2");
	EXPECT_STR(ti_dtype_name(TI_DT_FLOAT8_E4M3FN), "float8_e4m3fn");
	EXPECT_STR(ti_dtype_name(TI_DT_FLOAT4_E2M1FN_X2), "float4_e2m1fn_x2");
	EXPECT_STR(ti_dtype_name(TI_DT_INVALID), "invalid");
	EXPECT_STR(ti_dtype_name(TI_DT_COUNT), "invalid");
	EXPECT_STR(ti_dtype_name((ti_dtype)-1), "invalid");
}

Test(dtype, every_torch_dtype_has_a_name_that_reads_back)
{
	for (int i = 1; i < TI_DT_COUNT; i++) {
		const char *name = ti_dtype_name((ti_dtype)i);
		cr_assert(name != NULL && strcmp(name, "invalid"), "dtype %d has no name", i);
		if (ti_dtype_is_sub_byte((ti_dtype)i))
			continue;
		EXPECT_INT(ti_dtype_from_torch_name(name), i);
		cr_expect(ti_dtype_size((ti_dtype)i) > 0, "%s has size 0", name);
		EXPECT_INT(ti_dtype_bits((ti_dtype)i), 8 * ti_dtype_size((ti_dtype)i));
	}
}

Test(dtype, sub_byte_dtypes_have_bits_but_no_byte_size)
{
	static const struct { ti_dtype dt; const char *name; unsigned bits, group; } rows[] = {
		{TI_DT_FLOAT4_E2M1FN, "float4_e2m1fn", 4, 2},
		{TI_DT_FLOAT6_E2M3FN, "float6_e2m3fn", 6, 4},
		{TI_DT_FLOAT6_E3M2FN, "float6_e3m2fn", 6, 4},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		EXPECT_STR(ti_dtype_name(rows[i].dt), rows[i].name);
		EXPECT_INT(ti_dtype_bits(rows[i].dt), rows[i].bits);
		EXPECT_INT(ti_dtype_size(rows[i].dt), 0);
		EXPECT_INT(ti_dtype_byte_group(rows[i].dt), rows[i].group);
		cr_expect(ti_dtype_is_sub_byte(rows[i].dt), "%s is not sub-byte", rows[i].name);
		/* torch has no such dtype: neither a pickle nor --dtype can name one */
		EXPECT_INT(ti_dtype_from_torch_name(rows[i].name), TI_DT_INVALID);
	}
	cr_expect(!ti_dtype_is_sub_byte(TI_DT_FLOAT4_E2M1FN_X2) && !ti_dtype_is_sub_byte(TI_DT_INVALID));
	EXPECT_INT(ti_dtype_byte_group(TI_DT_FLOAT32), 1);
	EXPECT_INT(ti_dtype_byte_group(TI_DT_INVALID), 0);
	EXPECT_INT(ti_dtype_from_storage_name("Float4_e2m1fnStorage"), TI_DT_INVALID);
}

Test(dtype, nbytes_packs_sub_byte_elements_and_refuses_a_partial_byte)
{
	static const struct { ti_dtype dt; uint64_t numel; bool ok; uint64_t nbytes; } rows[] = {
		{TI_DT_FLOAT4_E2M1FN, 2, true, 1},  {TI_DT_FLOAT4_E2M1FN, 8, true, 4},
		{TI_DT_FLOAT4_E2M1FN, 0, true, 0},  {TI_DT_FLOAT4_E2M1FN, 3, false, 0},
		{TI_DT_FLOAT6_E2M3FN, 4, true, 3},  {TI_DT_FLOAT6_E3M2FN, 8, true, 6},
		{TI_DT_FLOAT6_E3M2FN, 2, false, 0}, {TI_DT_FLOAT6_E2M3FN, 1, false, 0},
		{TI_DT_FLOAT32, 3, true, 12},       {TI_DT_COMPLEX128, 2, true, 32},
		{TI_DT_FLOAT4_E2M1FN, UINT64_MAX / 2, false, 0}, /* numel * 4 bits overflows */
		{TI_DT_FLOAT32, UINT64_MAX / 2, false, 0},      {TI_DT_INVALID, 1, false, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t got = 12345;
		bool ok = ti_dtype_nbytes(rows[i].dt, rows[i].numel, &got);
		cr_expect(ok == rows[i].ok, "%s x %llu: got %s, want %s", ti_dtype_name(rows[i].dt),
		          (unsigned long long)rows[i].numel, ok ? "true" : "false", rows[i].ok ? "true" : "false");
		cr_expect(got == (rows[i].ok ? rows[i].nbytes : 12345), "%s x %llu: got %llu bytes, want %llu",
		          ti_dtype_name(rows[i].dt), (unsigned long long)rows[i].numel, (unsigned long long)got,
		          (unsigned long long)(rows[i].ok ? rows[i].nbytes : 12345));
	}
}

Test(dtype, sizes_are_element_sizes)
{
	static const struct { ti_dtype dt; size_t size; } rows[] = {
		{TI_DT_FLOAT32, 4}, {TI_DT_FLOAT64, 8}, {TI_DT_FLOAT16, 2}, {TI_DT_BFLOAT16, 2},
		{TI_DT_INT64, 8}, {TI_DT_INT32, 4}, {TI_DT_INT16, 2}, {TI_DT_INT8, 1},
		{TI_DT_UINT8, 1}, {TI_DT_BOOL, 1}, {TI_DT_COMPLEX32, 4}, {TI_DT_COMPLEX64, 8},
		{TI_DT_COMPLEX128, 16}, {TI_DT_QINT8, 1}, {TI_DT_QUINT8, 1}, {TI_DT_QINT32, 4},
		{TI_DT_QUINT4X2, 1}, {TI_DT_QUINT2X4, 1}, {TI_DT_UINT16, 2}, {TI_DT_UINT32, 4},
		{TI_DT_UINT64, 8}, {TI_DT_FLOAT8_E5M2, 1}, {TI_DT_FLOAT8_E4M3FN, 1},
		{TI_DT_FLOAT8_E5M2FNUZ, 1}, {TI_DT_FLOAT8_E4M3FNUZ, 1}, {TI_DT_FLOAT8_E8M0FNU, 1},
		{TI_DT_FLOAT4_E2M1FN_X2, 1}, {TI_DT_BITS8, 1}, {TI_DT_BITS16, 2},
		{TI_DT_BITS1X8, 1}, {TI_DT_BITS2X4, 1}, {TI_DT_BITS4X2, 1},
		{TI_DT_FLOAT4_E2M1FN, 0}, {TI_DT_FLOAT6_E2M3FN, 0}, {TI_DT_FLOAT6_E3M2FN, 0}, /* sub-byte */
		{TI_DT_INVALID, 0}, {TI_DT_COUNT, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_expect(ti_dtype_size(rows[i].dt) == rows[i].size, "size of %s: got %zu, want %zu",
		          ti_dtype_name(rows[i].dt), ti_dtype_size(rows[i].dt), rows[i].size);
}

Test(dtype, torch_aliases_name_the_same_dtype)
{
	static const struct { const char *name; ti_dtype dt; } rows[] = {
		{"float", TI_DT_FLOAT32}, {"double", TI_DT_FLOAT64}, {"half", TI_DT_FLOAT16},
		{"long", TI_DT_INT64}, {"int", TI_DT_INT32}, {"short", TI_DT_INT16},
		{"cfloat", TI_DT_COMPLEX64}, {"cdouble", TI_DT_COMPLEX128}, {"chalf", TI_DT_COMPLEX32},
		{"bool", TI_DT_BOOL}, {"uint8", TI_DT_UINT8}, {"int8", TI_DT_INT8},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_expect(ti_dtype_from_torch_name(rows[i].name) == rows[i].dt, "torch.%s: got %s, want %s",
		          rows[i].name, ti_dtype_name(ti_dtype_from_torch_name(rows[i].name)), ti_dtype_name(rows[i].dt));
}

Test(dtype, unknown_torch_names_are_invalid)
{
	EXPECT_INT(ti_dtype_from_torch_name("float31"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_torch_name(""), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_torch_name("invalid"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_torch_name("torch.float32"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_torch_name("Float"), TI_DT_INVALID);
}

Test(dtype, legacy_storage_classes_name_their_dtype)
{
	static const struct { const char *name; ti_dtype dt; } rows[] = {
		{"FloatStorage", TI_DT_FLOAT32}, {"DoubleStorage", TI_DT_FLOAT64},
		{"HalfStorage", TI_DT_FLOAT16}, {"BFloat16Storage", TI_DT_BFLOAT16},
		{"LongStorage", TI_DT_INT64}, {"IntStorage", TI_DT_INT32}, {"ShortStorage", TI_DT_INT16},
		{"CharStorage", TI_DT_INT8}, {"ByteStorage", TI_DT_UINT8}, {"BoolStorage", TI_DT_BOOL},
		{"ComplexFloatStorage", TI_DT_COMPLEX64}, {"ComplexDoubleStorage", TI_DT_COMPLEX128},
		{"QInt8Storage", TI_DT_QINT8}, {"QUInt8Storage", TI_DT_QUINT8}, {"QInt32Storage", TI_DT_QINT32},
		{"QUInt4x2Storage", TI_DT_QUINT4X2}, {"QUInt2x4Storage", TI_DT_QUINT2X4},
		{"Float8_e4m3fnStorage", TI_DT_FLOAT8_E4M3FN}, {"Float8_e5m2Storage", TI_DT_FLOAT8_E5M2},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		cr_expect(ti_dtype_from_storage_name(rows[i].name) == rows[i].dt, "%s: got %s, want %s",
		          rows[i].name, ti_dtype_name(ti_dtype_from_storage_name(rows[i].name)), ti_dtype_name(rows[i].dt));
}

Test(dtype, untyped_and_unknown_storages_are_not_dtypes)
{
	EXPECT_INT(ti_dtype_from_storage_name("UntypedStorage"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_storage_name("TypedStorage"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_storage_name("FooStorage"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_storage_name("FloatTensor"), TI_DT_INVALID);
	EXPECT_INT(ti_dtype_from_storage_name(""), TI_DT_INVALID);
}

Test(dtype, quantized_dtypes_say_so)
{
	cr_expect(ti_dtype_is_quantized(TI_DT_QINT8));
	cr_expect(ti_dtype_is_quantized(TI_DT_QUINT8));
	cr_expect(ti_dtype_is_quantized(TI_DT_QINT32));
	cr_expect(ti_dtype_is_quantized(TI_DT_QUINT4X2));
	cr_expect(ti_dtype_is_quantized(TI_DT_QUINT2X4));
	cr_expect(!ti_dtype_is_quantized(TI_DT_INT8));
	cr_expect(!ti_dtype_is_quantized(TI_DT_FLOAT32));
	cr_expect(!ti_dtype_is_quantized(TI_DT_INVALID));
	cr_expect(!ti_dtype_is_quantized(TI_DT_COUNT));
}

/* ---- resolving PyTorch 2.x's conjugate and negative bits ---- */

Test(dtype, resolving_a_negative_view_flips_a_float_s_sign_bit)
{
	float f[] = {1.0f, -2.5f, 0.0f, -0.0f};
	cr_assert(ti_dtype_resolve(TI_DT_FLOAT32, false, true, f, 4));
	EXPECT_DOUBLE(f[0], -1.0);
	EXPECT_DOUBLE(f[1], 2.5);
	cr_expect(signbit(f[2]) && !signbit(f[3]), "zeros: got %g %g, want -0 0", f[2], f[3]);
	uint16_t bf16[] = {0x3f80, 0xffc1}; /* 1.0, a negative NaN with a payload: PyTorch's neg flips the sign */
	cr_assert(ti_dtype_resolve(TI_DT_BFLOAT16, false, true, bf16, 2));
	EXPECT_INT(bf16[0], 0xbf80);
	EXPECT_INT(bf16[1], 0x7fc1);
	double d = 3.0;
	cr_assert(ti_dtype_resolve(TI_DT_FLOAT64, false, true, &d, 1));
	EXPECT_DOUBLE(d, -3.0);
}

Test(dtype, resolving_a_negative_view_of_integers_wraps_as_pytorch_does)
{
	int64_t i64[] = {5, -7, INT64_MIN};
	cr_assert(ti_dtype_resolve(TI_DT_INT64, false, true, i64, 3));
	EXPECT_INT(i64[0], -5);
	EXPECT_INT(i64[1], 7);
	EXPECT_INT(i64[2], INT64_MIN);
	uint8_t u8[] = {0, 1, 200};
	cr_assert(ti_dtype_resolve(TI_DT_UINT8, false, true, u8, 3));
	EXPECT_INT(u8[0], 0);
	EXPECT_INT(u8[1], 255);
	EXPECT_INT(u8[2], 56);
	int16_t i16[] = {-300};
	cr_assert(ti_dtype_resolve(TI_DT_INT16, false, true, i16, 1));
	EXPECT_INT(i16[0], 300);
}

Test(dtype, resolving_a_conjugate_flips_the_imaginary_part_only)
{
	float z[] = {1.0f, 2.0f, -3.0f, 0.5f, 0.0f, -1.0f}; /* fixtures/torch2_conj_neg.pt's storage 0 */
	cr_assert(ti_dtype_resolve(TI_DT_COMPLEX64, true, false, z, 3));
	float want[] = {1.0f, -2.0f, -3.0f, -0.5f, 0.0f, 1.0f};
	cr_expect(!memcmp(z, want, sizeof(z)), "got %g%+gj %g%+gj %g%+gj", z[0], z[1], z[2], z[3], z[4], z[5]);
	double c[] = {1.0, 2.0};
	cr_assert(ti_dtype_resolve(TI_DT_COMPLEX128, true, true, c, 1)); /* -(conj(1+2j)) = -1+2j */
	EXPECT_DOUBLE(c[0], -1.0);
	EXPECT_DOUBLE(c[1], 2.0);
	uint16_t half[] = {0x3c00, 0x4000}; /* complex32 1+2j */
	cr_assert(ti_dtype_resolve(TI_DT_COMPLEX32, true, false, half, 1));
	EXPECT_INT(half[0], 0x3c00);
	EXPECT_INT(half[1], 0xc000);
}

Test(dtype, a_real_tensor_s_conjugate_is_itself)
{
	float f[] = {1.0f, -2.0f};
	cr_assert(ti_dtype_resolve(TI_DT_FLOAT32, true, false, f, 2));
	EXPECT_DOUBLE(f[0], 1.0);
	EXPECT_DOUBLE(f[1], -2.0);
}

Test(dtype, the_fnuz_float8s_keep_zero_and_nan_when_negated)
{
	uint8_t v[] = {0x00, 0x80, 0x38, 0xb8};
	cr_assert(ti_dtype_resolve(TI_DT_FLOAT8_E4M3FNUZ, false, true, v, 4));
	EXPECT_INT(v[0], 0x00);
	EXPECT_INT(v[1], 0x80);
	EXPECT_INT(v[2], 0xb8);
	EXPECT_INT(v[3], 0x38);
	uint8_t e4m3fn[] = {0x00};
	cr_assert(ti_dtype_resolve(TI_DT_FLOAT8_E4M3FN, false, true, e4m3fn, 1));
	EXPECT_INT(e4m3fn[0], 0x80); /* it has a negative zero */
}

Test(dtype, what_has_no_negative_cannot_be_resolved_and_is_left_alone)
{
	static const ti_dtype none[] = {TI_DT_BOOL, TI_DT_QINT8, TI_DT_QUINT4X2, TI_DT_FLOAT8_E8M0FNU,
	                                TI_DT_FLOAT4_E2M1FN_X2, TI_DT_BITS8, TI_DT_FLOAT4_E2M1FN,
	                                TI_DT_FLOAT6_E2M3FN, TI_DT_INVALID};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		uint8_t v[] = {1, 2};
		cr_expect(!ti_dtype_can_resolve(none[i], false, true), "%s can be negated", ti_dtype_name(none[i]));
		cr_expect(!ti_dtype_resolve(none[i], false, true, v, 1) && v[0] == 1, "%s was negated",
		          ti_dtype_name(none[i]));
		cr_expect(ti_dtype_can_resolve(none[i], true, false), "%s has no conjugate", ti_dtype_name(none[i]));
	}
}
