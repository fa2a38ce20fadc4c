/*
 * test_ops_join.c - joining and splitting (src/ops/join.c).
 *
 * Expected shapes, strides, dtypes and messages were read from PyTorch on the
 * meta device. Calls are written as Python text (tests/unit/ops_cases.h):
 * {2, 3} is a float32 tensor, int64{5} one of another dtype, {3, 2 : 1, 3}
 * one with strides.
 */
#include "ops_cases.h"

TestSuite(ops_join, .init = setup, .fini = teardown);

/* ---- joins ---- */

static const rule_row joins[] = {
	{"cat", "[{2, 3}, {2, 4}], 1", "[2, 7]", "[7, 1]", "float32"},
	{"cat", "[{2, 3}, {5, 3}]", "[7, 3]", "[3, 1]", "float32"},
	{"cat", "[{2, 3}, {0}, {1, 3}], 0", "[3, 3]", "[3, 1]", "float32"},
	{"cat", "[{0}, {2, 3}], 1", "[2, 3]", "[3, 1]", "float32"},
	{"cat", "[{0}, {2, 3}, {0}], -1", "[2, 3]", "[3, 1]", "float32"},
	{"cat", "[{0}, {0}], 0", "[0]", "[1]", "float32"},
	{"cat", "[{0}, {0}], 1", "[0]", "[1]", "float32"},
	{"cat", "[{3, 2 : 1, 3}, {3, 2 : 1, 3}], 0", "[6, 2]", "[2, 1]", "float32"},
	{"cat", "[{B, T, C}, {B, 1, C}], 1", "[B, T + 1, C]", "[T*C + C, C, 1]", "float32"},
	{"concat", "[{2, 3}, {2, 3}], dim=-1", "[2, 6]", "[6, 1]", "float32"},
	{"concatenate", "[{2, 3}, {2, 3}], axis=0", "[4, 3]", "[3, 1]", "float32"},
	{"stack", "[{2, 3}, {2, 3}], 1", "[2, 2, 3]", "[6, 3, 1]", "float32"},
	{"stack", "[{2, 3}, {2, 3}, {2, 3}]", "[3, 2, 3]", "[6, 3, 1]", "float32"},
	{"stack", "[{2, 3}, {2, 3}], -1", "[2, 3, 2]", "[6, 2, 1]", "float32"},
	{"stack", "[{}, {}]", "[2]", "[1]", "float32"},
	{"hstack", "[{2, 3}, {2, 3}]", "[2, 6]", "[6, 1]", "float32"},
	{"hstack", "[{2}, {3}]", "[5]", "[1]", "float32"},
	{"hstack", "[{}, {}]", "[2]", "[1]", "float32"},
	{"vstack", "[{2}, {2}]", "[2, 2]", "[2, 1]", "float32"},
	{"vstack", "[{2, 3}, {4, 3}]", "[6, 3]", "[3, 1]", "float32"},
	{"dstack", "[{2}, {2}]", "[1, 2, 2]", "[4, 2, 1]", "float32"},
	{"dstack", "[{2, 3}, {2, 3}]", "[2, 3, 2]", "[6, 2, 1]", "float32"},
};

ParameterizedTestParameters(ops_join, joins_follow_pytorch)
{
	return ROWS(joins);
}

ParameterizedTest(const rule_row *r, ops_join, joins_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
	EXPECT_INT(call.output_count, 1);
}

Test(ops_join, cat_promotes_dtypes_over_every_input)
{
	static const struct { const char *args; ti_dtype want; } rows[] = {
		{"[int32{2, 3}, float16{2, 3}]", TI_DT_FLOAT16},
		{"[int32{2, 3}, int64{2, 3}]", TI_DT_INT64},
		{"[bool{2}, uint8{2}]", TI_DT_UINT8},
		{"[int64{2}, float32{0}]", TI_DT_FLOAT32}, /* a skipped tensor still promotes */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ASSERT_STATUS(run("cat", rows[i].args), TI_OK, err);
		cr_expect(output(0)->dtype == rows[i].want, "cat(%s): got %s, want %s", rows[i].args,
		          ti_dtype_name(output(0)->dtype), ti_dtype_name(rows[i].want));
	}
	ASSERT_STATUS(run("stack", "[int32{2}, {2}]"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_FLOAT32);
}

Test(ops_join, cat_assumes_symbolic_sizes_equal)
{
	ASSERT_STATUS(run("cat", "[{B, 3}, {N, 3}], 1"), TI_OK, err);
	expect_tensor("cat", output(0), "[B, 6]", NULL, NULL);
	EXPECT_INT(sym.assumption_count, 1);
}

/* ---- splits ---- */

typedef struct split_row {
	char op[24], args[64];
	int count;
	char shapes[128]; /* the pieces' shapes, joined by spaces */
	char stride[32];  /* every piece's */
} split_row;

static const split_row splits[] = {
	{"split", "{5, 3}, 2", 3, "[2, 3] [2, 3] [1, 3]", "[3, 1]"},
	{"split", "{5, 3}, [2, 3]", 2, "[2, 3] [3, 3]", "[3, 1]"},
	{"split", "{5, 3}, 7", 1, "[5, 3]", "[3, 1]"},
	{"split", "{0, 3}, 0", 1, "[0, 3]", "[3, 1]"},
	{"split", "{0, 3}, 2", 1, "[0, 3]", "[3, 1]"},
	{"split", "{3, 5 : 1, 3}, 2, 1", 3, "[3, 2] [3, 2] [3, 1]", "[1, 3]"},
	{"split", "{B, 3*C}, C, dim=1", 3, "[B, C] [B, C] [B, C]", "[3*C, 1]"},
	{"split", "{B, T}, T, 1", 1, "[B, T]", "[T, 1]"},
	{"split", "{B, 8}, [2, 6], -1", 2, "[B, 2] [B, 6]", "[8, 1]"},
	{"split_with_sizes", "{5, 3}, [1, 1, 3]", 3, "[1, 3] [1, 3] [3, 3]", "[3, 1]"},
	{"chunk", "{5, 3}, 3", 3, "[2, 3] [2, 3] [1, 3]", "[3, 1]"},
	{"chunk", "{6, 3}, 4", 3, "[2, 3] [2, 3] [2, 3]", "[3, 1]"},
	{"chunk", "{0, 3}, 2", 2, "[0, 3] [0, 3]", "[3, 1]"},
	{"chunk", "{5, 3}, 2, -1", 2, "[5, 2] [5, 1]", "[3, 1]"},
	{"chunk", "{B, T, 3*C}, 3, -1", 3, "[B, T, C] [B, T, C] [B, T, C]", "[3*T*C, 3*C, 1]"},
	{"tensor_split", "{7, 3}, 3", 3, "[3, 3] [2, 3] [2, 3]", "[3, 1]"},
	{"tensor_split", "{2, 3}, 4", 4, "[1, 3] [1, 3] [0, 3] [0, 3]", "[3, 1]"},
	{"tensor_split", "{7, 3}, [1, 5]", 3, "[1, 3] [4, 3] [2, 3]", "[3, 1]"},
	{"tensor_split", "{7, 3}, [-2, 10]", 3, "[5, 3] [2, 3] [0, 3]", "[3, 1]"},
	{"tensor_split", "{7, 3}, [5, 2]", 3, "[5, 3] [0, 3] [5, 3]", "[3, 1]"},
	{"unbind", "{2, 3}, 1", 3, "[2] [2] [2]", "[3]"},
	{"unbind", "{2, 3}", 2, "[3] [3]", "[1]"},
	{"unbind", "{2, 3}, -1", 3, "[2] [2] [2]", "[3]"},
};

ParameterizedTestParameters(ops_join, splits_follow_pytorch)
{
	return ROWS(splits);
}

ParameterizedTest(const split_row *r, ops_join, splits_follow_pytorch, .init = setup, .fini = teardown)
{
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", r->op, r->args, ti_status_name(st), err.message);
	cr_assert(call.output_count == r->count, "%s(%s): got %d pieces, want %d", r->op, r->args,
	          call.output_count, r->count);
	char got[256] = "";
	for (int i = 0; i < call.output_count; i++) {
		strcat(got, i ? " " : "");
		strncat(got, ti_meta_shape_str(&ctx, output(i)), sizeof(got) - strlen(got) - 1);
		const char *stride = ti_shape_str(&ctx, output(i)->ndim, output(i)->stride);
		cr_expect(!strcmp(stride, r->stride), "%s(%s) piece %d: stride got %s, want %s", r->op, r->args, i,
		          stride, r->stride);
	}
	cr_expect(!strcmp(got, r->shapes), "%s(%s): got %s, want %s", r->op, r->args, got, r->shapes);
	cr_expect(call.counted && ti_dim_is_int(call.flops) && call.flops.value == 0, "counted as free");
}

Test(ops_join, more_pieces_than_outputs_come_as_one_list)
{
	ASSERT_STATUS(run("unbind", "{20, 3}"), TI_OK, err);
	ASSERT_INT(call.output_count, 1);
	ASSERT_INT(call.outputs[0].kind, TI_ARG_LIST);
	ASSERT_INT(call.outputs[0].as.list.count, 20);
	expect_tensor("piece 19", call.outputs[0].as.list.items[19].as.tensor, "[3]", "[1]", NULL);
	ASSERT_STATUS(run("split", "{16, 3}, 1"), TI_OK, err);
	EXPECT_INT(call.output_count, 16);
}

Test(ops_join, chunk_of_a_symbolic_size_assumes_it_divisible)
{
	ASSERT_STATUS(run("chunk", "{B, T}, 2, 1"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	expect_tensor("chunk", output(1), "[B, T//2]", "[T, 1]", NULL);
	EXPECT_INT(sym.assumption_count, 1);
}

Test(ops_join, a_split_into_an_unknown_number_of_pieces_is_unsupported)
{
	EXPECT_STATUS(run("split", "{B, T}, 2, 1"), TI_E_UNSUPPORTED, err);
	EXPECT_STATUS(run("unbind", "{B, T}"), TI_E_UNSUPPORTED, err);
	EXPECT_STATUS(run("chunk", "{N, 3}, N"), TI_E_CORRUPT, err);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"cat", "[{2, 3}, {3, 4}], 1",
	 "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in "
	 "the list."},
	{"cat", "[{2, 3}, {2, 4}], 0",
	 "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in "
	 "the list."},
	{"cat", "[{2, 3}, {0}, {2, 4}], 0",
	 "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 2 in "
	 "the list."},
	{"cat", "[{2, 3}, {2, 3, 1}], 0", "Tensors must have same number of dimensions: got 2 and 3"},
	{"cat", "[{}, {}], 0", "zero-dimensional tensor (at position 0) cannot be concatenated"},
	{"cat", "[{2}, {}]", "zero-dimensional tensor (at position 1) cannot be concatenated"},
	{"cat", "[], 0", "torch.cat(): expected a non-empty list of Tensors"},
	{"cat", "[{2, 3}, {2, 3}], 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"cat", "[{2, 3}, {2, 3}], -3", "Dimension out of range (expected to be in range of [-2, 1], but got -3)"},
	{"stack", "[{2, 3}, {2, 4}], 1",
	 "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1"},
	{"stack", "[{2, 3}, {2, 3, 1}]",
	 "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 3, 1] at entry 1"},
	{"stack", "[], 1", "stack expects a non-empty TensorList"},
	{"stack", "[{2, 3}, {2, 3}], 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"hstack", "[]", "hstack expects a non-empty TensorList"},
	{"vstack", "[]", "vstack expects a non-empty TensorList"},
	{"dstack", "[]", "dstack expects a non-empty TensorList"},
	{"split", "{5, 3}, [2, 2]",
	 "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at dimension 0), but got "
	 "split_sizes=[2, 2]"},
	{"split", "{5, 3}, [6, -1]",
	 "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[6, -1]"},
	{"split", "{5, 3}, 0", "split_size can only be 0 if dimension size is 0, but got dimension size of 5"},
	{"split", "{5, 3}, -1", "split expects split_size be non-negative, but got split_size=-1"},
	{"split", "{}, 1", "split expects at least a 1-dimensional tensor"},
	{"split", "{}, [1]", "split expects at least a 1-dimensional tensor"},
	{"split", "{5, 3}, 2, 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"chunk", "{6, 3}, 0", "chunk expects `chunks` to be greater than 0, got: 0"},
	{"chunk", "{}, 2", "chunk expects at least a 1-dimensional tensor"},
	{"chunk", "{5}, 2, 1", "Dimension out of range (expected to be in range of [-1, 0], but got 1)"},
	{"tensor_split", "{}, 2", "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"},
	{"tensor_split", "{7, 3}, 0", "number of sections must be larger than 0, got 0"},
	{"unbind", "{}, 0", "Dimension specified as 0 but tensor has no dimensions"},
	{"unbind", "{2, 3}, 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
};

ParameterizedTestParameters(ops_join, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_join, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}
