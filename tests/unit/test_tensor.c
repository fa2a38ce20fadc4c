/*
 * test_tensor.c - shape arithmetic, contiguity, layout and qscheme names.
 *
 * ti_shape_check is table-driven: each row is a shape, its strides and
 * offset, and what PyTorch says of them (numel, and the elements of storage
 * the view reaches: offset + sum((size-1)*stride) + 1, or 0 when empty).
 * Criterion may run each parameter in a fresh process (BoxFort), so the rows
 * hold their arrays and names inline: no pointers into this process.
 */
#include "unit.h"

#include <criterion/parameterized.h>

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

typedef struct shape_case {
	char what[48];
	int ndim;
	int64_t shape[4], stride[4];
	bool has_stride;
	int64_t offset;
	ti_status status;
	int64_t numel, extent;
} shape_case;

static const shape_case shape_cases[] = {
	{"scalar", 0, {0}, {0}, true, 0, TI_OK, 1, 1},
	{"scalar at offset 5", 0, {0}, {0}, true, 5, TI_OK, 1, 6},
	{"contiguous (4, 6)", 2, {4, 6}, {6, 1}, true, 0, TI_OK, 24, 24},
	{"row of (4, 6) at offset 6", 1, {6}, {1}, true, 6, TI_OK, 6, 12},
	{"column of (4, 6)", 1, {4}, {6}, true, 2, TI_OK, 4, 21},
	{"transposed (6, 4)", 2, {6, 4}, {1, 6}, true, 0, TI_OK, 24, 24},
	{"narrow (2, 3) at 8", 2, {2, 3}, {6, 1}, true, 8, TI_OK, 6, 17},
	{"expanded (3, 4) stride (1, 0)", 2, {3, 4}, {1, 0}, true, 0, TI_OK, 12, 3},
	{"every other column", 2, {4, 3}, {6, 2}, true, 0, TI_OK, 12, 23},
	{"conv weight (8, 3, 7, 7)", 4, {8, 3, 7, 7}, {147, 49, 7, 1}, true, 0, TI_OK, 1176, 1176},
	{"empty (0, 5)", 2, {0, 5}, {5, 1}, true, 0, TI_OK, 0, 0},
	{"empty (5, 0) at offset 100", 2, {5, 0}, {1, 1}, true, 100, TI_OK, 0, 0},
	{"size-1 dims with odd strides", 3, {1, 4, 1}, {999, 1, 7}, true, 0, TI_OK, 4, 4},
	{"8 GiB meta tensor", 2, {65536, 65536}, {65536, 1}, true, 0, TI_OK, INT64_C(4294967296), INT64_C(4294967296)},
	{"largest numel", 1, {INT64_MAX}, {1}, true, 0, TI_OK, INT64_MAX, INT64_MAX},
	{"largest extent at offset 1", 1, {INT64_MAX - 1}, {1}, true, 1, TI_OK, INT64_MAX - 1, INT64_MAX},
	{"extent one past the largest", 1, {2}, {INT64_MAX}, true, 0, TI_E_CORRUPT, 0, 0},
	{"negative size", 2, {2, -1}, {1, 1}, true, 0, TI_E_CORRUPT, 0, 0},
	{"negative stride", 1, {4}, {-1}, true, 3, TI_E_CORRUPT, 0, 0},
	{"negative offset", 1, {4}, {1}, true, -1, TI_E_CORRUPT, 0, 0},
	{"numel overflow", 2, {INT64_C(1) << 40, INT64_C(1) << 40}, {INT64_C(1) << 40, 1}, true, 0, TI_E_CORRUPT, 0, 0},
	/* c10::safe_multiply_u64 reports the overflow although a later size is 0 */
	{"numel overflow before a zero", 3, {INT64_C(1) << 40, INT64_C(1) << 40, 0}, {1, 1, 1}, true, 0, TI_E_CORRUPT, 0, 0},
	{"extent overflow", 1, {3}, {INT64_C(1) << 62}, true, 0, TI_E_CORRUPT, 0, 0},
	{"extent overflow from the offset", 1, {2}, {1}, true, INT64_MAX - 1, TI_E_CORRUPT, 0, 0},
	{"no strides: sparse", 2, {3, 4}, {0}, false, 0, TI_OK, 12, 0},
};

ParameterizedTestParameters(tensor, shape_check_follows_pytorch)
{
	return cr_make_param_array(shape_case, shape_cases, sizeof(shape_cases) / sizeof(shape_cases[0]));
}

ParameterizedTest(const shape_case *c, tensor, shape_check_follows_pytorch)
{
	ti_error err;
	ti_error_clear(&err);
	int64_t numel = -7, extent = -7;
	ti_status s = ti_shape_check(c->ndim, c->shape, c->has_stride ? c->stride : NULL, c->offset, &numel, &extent, &err);
	cr_expect(s == c->status, "%s: got %s (\"%s\"), want %s", c->what, ti_status_name(s), err.message,
	          ti_status_name(c->status));
	if (s == TI_OK && c->status == TI_OK) {
		cr_expect(numel == c->numel, "%s: numel got %" PRId64 ", want %" PRId64, c->what, numel, c->numel);
		cr_expect(extent == c->extent, "%s: extent got %" PRId64 ", want %" PRId64, c->what, extent, c->extent);
	}
	if (s != TI_OK)
		cr_expect(err.message[0] != '\0', "%s: the error has no message", c->what);
}

Test(tensor, shape_check_takes_a_null_extent)
{
	ti_error err;
	ti_error_clear(&err);
	int64_t numel = 0;
	EXPECT_STATUS(ti_shape_check(2, DIMS(3, 4), DIMS(4, 1), 0, &numel, NULL, &err), TI_OK, err);
	EXPECT_INT(numel, 12);
}

Test(tensor, shape_check_names_the_bad_dimension)
{
	ti_error err;
	ti_error_clear(&err);
	int64_t numel, extent;
	EXPECT_STATUS(ti_shape_check(3, DIMS(2, 3, -4), DIMS(12, 4, 1), 0, &numel, &extent, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "-4");
	EXPECT_CONTAINS(err.message, "dimension 2");
}

typedef struct contiguity_case {
	char what[48];
	int ndim;
	int64_t shape[4], stride[4];
	bool contiguous;
} contiguity_case;

static const contiguity_case contiguity_cases[] = {
	{"scalar", 0, {0}, {0}, true},
	{"(4, 6) stride (6, 1)", 2, {4, 6}, {6, 1}, true},
	{"transposed (6, 4) stride (1, 6)", 2, {6, 4}, {1, 6}, false},
	{"expanded (3, 4) stride (1, 0)", 2, {3, 4}, {1, 0}, false},
	{"every other column (4, 3) stride (6, 2)", 2, {4, 3}, {6, 2}, false},
	{"narrow (2, 3) stride (6, 1)", 2, {2, 3}, {6, 1}, false},
	{"size-1 dims take any stride", 3, {1, 5, 1}, {99, 1, 42}, true},
	{"empty (5, 0) with any strides", 2, {5, 0}, {7, 3}, true},
	{"(2, 1, 3) stride (3, 3, 1)", 3, {2, 1, 3}, {3, 3, 1}, true},
	{"(8,) stride (2,)", 1, {8}, {2}, false},
	{"(1,) stride (5,)", 1, {1}, {5}, true},
};

ParameterizedTestParameters(tensor, is_contiguous_follows_pytorch)
{
	return cr_make_param_array(contiguity_case, contiguity_cases, sizeof(contiguity_cases) / sizeof(contiguity_cases[0]));
}

ParameterizedTest(const contiguity_case *c, tensor, is_contiguous_follows_pytorch)
{
	ti_tensor t = {.dtype = TI_DT_FLOAT32, .ndim = c->ndim, .shape = c->shape, .stride = c->stride};
	bool got = ti_tensor_is_contiguous(&t);
	cr_expect(got == c->contiguous, "%s: got %s, want %s", c->what, got ? "contiguous" : "not contiguous",
	          c->contiguous ? "contiguous" : "not contiguous");
}

Test(tensor, an_empty_tensor_is_contiguous_whatever_its_strides)
{
	/* Once a bug: ti_tensor_is_contiguous returns at the first dimension (from the
	 * last) whose stride is off, before it sees a size-0 dimension further
	 * left. c10's compute_contiguous returns true for any tensor with
	 * numel 0: torch.empty(0, 5)[:, ::2] (shape (0, 3), stride (5, 2)) is
	 * contiguous to PyTorch, not to the library. */
	ti_tensor t = {.dtype = TI_DT_FLOAT32, .ndim = 2, .shape = DIMS(0, 3), .stride = DIMS(5, 2)};
	cr_expect(ti_tensor_is_contiguous(&t), "shape (0, 3) stride (5, 2): got not contiguous, want contiguous");
	ti_tensor u = {.dtype = TI_DT_FLOAT32, .ndim = 2, .shape = DIMS(0, 5), .stride = DIMS(7, 3)};
	cr_expect(ti_tensor_is_contiguous(&u), "shape (0, 5) stride (7, 3): got not contiguous, want contiguous");
}

Test(tensor, a_tensor_without_strides_counts_as_contiguous)
{
	ti_tensor t = {.layout = TI_LAYOUT_SPARSE_COO, .ndim = 2, .shape = DIMS(3, 4), .stride = NULL};
	cr_expect(ti_tensor_is_contiguous(&t));
}

Test(tensor, layout_names_read_both_ways)
{
	static const struct { ti_layout layout; const char *name; } rows[] = {
		{TI_LAYOUT_STRIDED, "strided"}, {TI_LAYOUT_SPARSE_COO, "sparse_coo"},
		{TI_LAYOUT_SPARSE_CSR, "sparse_csr"}, {TI_LAYOUT_SPARSE_CSC, "sparse_csc"},
		{TI_LAYOUT_SPARSE_BSR, "sparse_bsr"}, {TI_LAYOUT_SPARSE_BSC, "sparse_bsc"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		EXPECT_STR(ti_layout_name(rows[i].layout), rows[i].name);
		EXPECT_INT(ti_layout_from_name(rows[i].name), rows[i].layout);
	}
	EXPECT_INT(ti_layout_from_name("torch.sparse_coo"), TI_LAYOUT_SPARSE_COO);
	EXPECT_INT(ti_layout_from_name("torch.strided"), TI_LAYOUT_STRIDED);
	EXPECT_INT(ti_layout_from_name("jagged"), TI_LAYOUT_COUNT);
	EXPECT_INT(ti_layout_from_name("torch."), TI_LAYOUT_COUNT);
	EXPECT_STR(ti_layout_name(TI_LAYOUT_COUNT), "unknown");
}

Test(tensor, qscheme_names_read_both_ways)
{
	static const struct { ti_qscheme scheme; const char *name; } rows[] = {
		{TI_QS_PER_TENSOR_AFFINE, "per_tensor_affine"},
		{TI_QS_PER_CHANNEL_AFFINE, "per_channel_affine"},
		{TI_QS_PER_TENSOR_SYMMETRIC, "per_tensor_symmetric"},
		{TI_QS_PER_CHANNEL_SYMMETRIC, "per_channel_symmetric"},
		{TI_QS_PER_CHANNEL_AFFINE_FLOAT_QPARAMS, "per_channel_affine_float_qparams"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		EXPECT_STR(ti_qscheme_name(rows[i].scheme), rows[i].name);
		EXPECT_INT(ti_qscheme_from_name(rows[i].name), rows[i].scheme);
	}
	EXPECT_STR(ti_qscheme_name(TI_QS_NONE), "none");
	EXPECT_INT(ti_qscheme_from_name("none"), TI_QS_NONE);
	EXPECT_INT(ti_qscheme_from_name("per_everything"), TI_QS_NONE);
	EXPECT_STR(ti_qscheme_name(TI_QS_COUNT), "unknown");
}
