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

Test(dtype, every_dtype_has_a_name_that_reads_back)
{
	for (int i = 1; i < TI_DT_COUNT; i++) {
		const char *name = ti_dtype_name((ti_dtype)i);
		cr_assert(name != NULL && strcmp(name, "invalid"), "dtype %d has no name", i);
		EXPECT_INT(ti_dtype_from_torch_name(name), i);
		cr_expect(ti_dtype_size((ti_dtype)i) > 0, "%s has size 0", name);
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
