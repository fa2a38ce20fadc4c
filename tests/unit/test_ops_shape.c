/*
 * test_ops_shape.c - views and shape changes (src/ops/shape.c).
 *
 * Every expected shape, stride and message was read from PyTorch on the meta
 * device (torch.empty(..., device='meta')); where 2.x words a message
 * differently from 1.13, the row follows 2.x's source.
 *
 * Rows are calls written as Python text (tests/unit/ops_cases.h): {2, 3, 4}
 * is a contiguous tensor, {3, 2 : 1, 3} one with strides, N a symbolic size.
 */
#include "ops_cases.h"

TestSuite(ops_shape, .init = setup, .fini = teardown);

/* ---- shape rules ---- */

static const rule_row rules[] = {
	{"view", "{2, 3, 4}, [-1, 4]", "[6, 4]", "[4, 1]", "float32"},
	{"view", "{2, 3, 4}, 6, 4", "[6, 4]", "[4, 1]", "float32"},
	{"view", "{2, 3, 4}, -1", "[24]", "[1]", "float32"},
	{"view", "{}, 1, 1", "[1, 1]", "[1, 1]", "float32"},
	{"view", "{}, -1", "[1]", "[1]", "float32"},
	{"view", "{0, 3}, 3, 0", "[3, 0]", "[1, 1]", "float32"},
	{"view", "{4, 0 : 3, 1}, 4, 0", "[4, 0]", "[3, 1]", "float32"},
	{"view", "{4, 1, 2 : 3, 3, 1}, 4, 2", "[4, 2]", "[3, 1]", "float32"},
	{"view", "{2, 2, 3 : 0, 0, 1}, 4, 3", "[4, 3]", "[0, 1]", "float32"},
	{"view", "{3, 2 : 1, 3}, 3, 2, 1", "[3, 2, 1]", "[1, 3, 3]", "float32"},
	{"view", "{B, T, C}, [B, -1]", "[B, T*C]", "[T*C, 1]", "float32"},
	{"view", "{B, T, C}, [-1, C]", "[B*T, C]", "[C, 1]", "float32"},
	{"view", "{B, T, 12}, [B, T, 3, -1]", "[B, T, 3, 4]", "[12*T, 12, 4, 1]", "float32"},
	{"reshape", "{3, 2 : 1, 3}, 6", "[6]", "[1]", "float32"},
	{"reshape", "{3, 2 : 1, 3}, [3, 2]", "[3, 2]", "[1, 3]", "float32"},
	{"reshape", "{1, 3 : 3, 1}, 3", "[3]", "[1]", "float32"},
	{"reshape", "{4, 3 : 0, 1}, 2, 2, 3", "[2, 2, 3]", "[0, 0, 1]", "float32"},
	{"reshape", "{4, 3 : 0, 1}, 12", "[12]", "[1]", "float32"},
	{"reshape", "{}, []", "[]", "[]", "float32"},
	{"ravel", "{2, 3 : 1, 2}", "[6]", "[1]", "float32"},
	{"flatten", "{2, 3, 4}, 1", "[2, 12]", "[12, 1]", "float32"},
	{"flatten", "{2, 3, 4 : 12, 1, 3}, 1", "[2, 12]", "[12, 1]", "float32"},
	{"flatten", "{2, 3, 4}", "[24]", "[1]", "float32"},
	{"flatten", "{2, 3, 4}, 0, 1", "[6, 4]", "[4, 1]", "float32"},
	{"flatten", "{2, 3, 4}, 1, 1", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"flatten", "{}", "[1]", "[1]", "float32"},
	{"flatten", "{B, C, H, W}, start_dim=2", "[B, C, H*W]", "[C*H*W, H*W, 1]", "float32"},
	{"unflatten", "{2, 3, 4}, 2, (2, -1)", "[2, 3, 2, 2]", "[12, 4, 2, 1]", "float32"},
	{"unflatten", "{2, 12}, -1, [3, 4]", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"permute", "{2, 3, 4}, 2, 0, 1", "[4, 2, 3]", "[1, 12, 4]", "float32"},
	{"permute", "{2, 3, 4}, [-1, 0, 1]", "[4, 2, 3]", "[1, 12, 4]", "float32"},
	{"permute", "{}, []", "[]", "[]", "float32"},
	{"transpose", "{2, 3, 4}, 0, 2", "[4, 3, 2]", "[1, 4, 12]", "float32"},
	{"transpose", "{}, 0, -1", "[]", "[]", "float32"},
	{"swapaxes", "{2, 3, 4}, 0, 1", "[3, 2, 4]", "[4, 12, 1]", "float32"},
	{"swapdims", "{2, 3, 4}, dim0=-1, dim1=0", "[4, 3, 2]", "[1, 4, 12]", "float32"},
	{"t", "{2, 3}", "[3, 2]", "[1, 3]", "float32"},
	{"t", "{3}", "[3]", "[1]", "float32"},
	{"t", "{}", "[]", "[]", "float32"},
	{"mT", "{2, 3, 4}", "[2, 4, 3]", "[12, 1, 4]", "float32"},
	{"movedim", "{2, 3, 4}, 0, 2", "[3, 4, 2]", "[4, 1, 12]", "float32"},
	{"movedim", "{2, 3, 4}, (0, 1), (2, 0)", "[3, 4, 2]", "[4, 1, 12]", "float32"},
	{"moveaxis", "{2, 3, 4}, -1, 0", "[4, 2, 3]", "[1, 12, 4]", "float32"},
	{"movedim", "{}, 0, 0", "[]", "[]", "float32"},
	{"squeeze", "{1, 3, 1}", "[3]", "[1]", "float32"},
	{"squeeze", "{1, 3, 1}, 1", "[1, 3, 1]", "[3, 1, 1]", "float32"},
	{"squeeze", "{1, 3, 1}, -1", "[1, 3]", "[3, 1]", "float32"},
	{"squeeze", "{1, 3, 1}, (0, 2)", "[3]", "[1]", "float32"},
	{"squeeze", "{}, 0", "[]", "[]", "float32"},
	{"squeeze", "{1, T, 1}", "[T]", "[1]", "float32"},
	{"unsqueeze", "{2, 3, 4}, -1", "[2, 3, 4, 1]", "[12, 4, 1, 1]", "float32"},
	{"unsqueeze", "{2, 3, 4}, 1", "[2, 1, 3, 4]", "[12, 12, 4, 1]", "float32"},
	{"unsqueeze", "{}, 0", "[1]", "[1]", "float32"},
	{"expand", "{1, 3}, 5, 2, -1, 3", "[5, 2, 1, 3]", "[0, 0, 3, 1]", "float32"},
	{"expand", "{2, 1}, [2, 4]", "[2, 4]", "[1, 0]", "float32"},
	{"expand", "{}, 2, 3", "[2, 3]", "[0, 0]", "float32"},
	{"expand", "{1, C}, [B, -1]", "[B, C]", "[0, 1]", "float32"},
	{"expand", "{T, 1}, [5, 4]", "[5, 4]", "[1, 0]", "float32"},
	{"broadcast_to", "{3}, (2, 3)", "[2, 3]", "[0, 1]", "float32"},
	{"repeat", "{2, 3}, 2, 1, 2", "[2, 2, 6]", "[12, 6, 1]", "float32"},
	{"repeat", "{}, 2, 3", "[2, 3]", "[3, 1]", "float32"},
	{"repeat", "{2, 3 : 1, 2}, [1, 1]", "[2, 3]", "[3, 1]", "float32"},
	{"tile", "{2, 3}, 2", "[2, 6]", "[6, 1]", "float32"},
	{"tile", "{2, 3}, []", "[2, 3]", "[3, 1]", "float32"},
	{"tile", "{2, 3}, 2, 1, 1", "[2, 2, 3]", "[6, 3, 1]", "float32"},
	{"contiguous", "{4, 3, 2 : 1, 4, 12}", "[4, 3, 2]", "[6, 2, 1]", "float32"},
	{"contiguous", "{3, 0 : 1, 3}", "[3, 0]", "[1, 3]", "float32"},
	{"flip", "{2, 3, 4}, 0", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"flip", "{4, 3, 2 : 1, 4, 12}, 0, 1", "[4, 3, 2]", "[1, 4, 12]", "float32"},
	{"flip", "{2, 3 : 6, 1}, 0", "[2, 3]", "[3, 1]", "float32"},
	{"flip", "{}, 0", "[]", "[]", "float32"},
	{"roll", "{2, 3, 4}, 1", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"roll", "{4, 3, 2 : 1, 4, 12}, 1, 0", "[4, 3, 2]", "[6, 2, 1]", "float32"},
	{"roll", "{2, 3}, (1, 2), (0, 1)", "[2, 3]", "[3, 1]", "float32"},
};

ParameterizedTestParameters(ops_shape, rules_follow_pytorch)
{
	return ROWS(rules);
}

ParameterizedTest(const rule_row *r, ops_shape, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
	EXPECT_INT(call.output_count, 1);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "%s(%s): counted as free", r->op, r->args);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"view", "{2, 3, 4}, -1, -1", "only one dimension can be inferred"},
	{"view", "{7}, 2, -1", "shape '[2, -1]' is invalid for input of size 7"},
	{"view", "{2, 3, 4}, 5, 5", "shape '[5, 5]' is invalid for input of size 24"},
	{"view", "{2, 3, 4}, -2, 12", "invalid shape dimension -2"},
	{"view", "{0, 3}, -1, 0",
	 "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any "
	 "value and is ambiguous"},
	{"view", "{3, 2 : 1, 3}, 6",
	 "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
	 "contiguous subspaces). Use .reshape(...) instead."},
	{"view", "{4, 3 : 0, 1}, 12",
	 "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
	 "contiguous subspaces). Use .reshape(...) instead."},
	{"view", "{B, 3}, [B, 4]", "shape '[B, 4]' is invalid for input of size 3*B"},
	{"reshape", "{2, 3}, 4, -1", "shape '[4, -1]' is invalid for input of size 6"},
	{"flatten", "{2, 3, 4}, 2, 1", "flatten() has invalid args: start_dim cannot come after end_dim"},
	{"flatten", "{2, 3, 4}, 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"unflatten", "{2, 3, 4}, 2, (3, -1)",
	 "unflatten: Provided sizes [3, -1] don't multiply up to the size of dim 2 (4) in the input tensor"},
	{"unflatten", "{2, 3, 4}, 2, (3, 2)",
	 "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 2 (4) in the input tensor"},
	{"unflatten", "{2, 3, 4}, 2, ()", "unflatten: sizes must be non-empty"},
	{"unflatten", "{2, 12}, 1, (-1, -1)", "unflatten got an unexpected error:\nonly one dimension can be inferred"},
	{"unflatten", "{2, 12}, 1, (-2, -6)", "invalid shape dimension -2"},
	{"permute", "{2, 3, 4}, 0, 1",
	 "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
	 "ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 2"},
	{"permute", "{2, 3, 4}, 0, 1, 1", "permute(): duplicate dims are not allowed."},
	{"permute", "{2, 3, 4}, 0, 1, 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"transpose", "{2, 3, 4}, 0, 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"t", "{2, 3, 4}", "t() expects a tensor with <= 2 dimensions, but self is 3D"},
	{"mT", "{3}", "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."},
	{"movedim", "{2, 3, 4}, (0, 1), (2,)",
	 "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same number of dims as "
	 "destination ([2] dims)"},
	{"movedim", "{2, 3, 4}, (0, 0), (2, 1)", "movedim: repeated dim in `source` ([0, 0])"},
	{"movedim", "{2, 3, 4}, (0, 1), (2, 2)", "movedim: repeated dim in `destination` ([2, 2])"},
	{"movedim", "{2, 3}, 2, 0", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"squeeze", "{1, 3, 1}, 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"squeeze", "{1, 3, 1}, (0, 0)", "dim 0 appears multiple times in the list of dims"},
	{"unsqueeze", "{2, 3, 4}, 4", "Dimension out of range (expected to be in range of [-4, 3], but got 4)"},
	{"expand", "{2, 3}, 2, 4",
	 "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  Target "
	 "sizes: [2, 4].  Tensor sizes: [2, 3]"},
	{"expand", "{1, 3}, -1, -1, 3",
	 "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"},
	{"expand", "{1, 3}, 3",
	 "expand(torch.FloatTensor{[1, 3]}, size=[3]): the number of sizes provided (1) must be greater or equal to the "
	 "number of dimensions in the tensor (2)"},
	{"repeat", "{2, 3}, 2",
	 "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"},
	{"repeat", "{2}, -1", "Trying to create tensor with negative dimension -2: [-2]"},
	{"flip", "{2, 3}, 0, 0", "dim 0 appears multiple times in the list of dims"},
	{"flip", "{2, 3}, 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"roll", "{2, 3}, (1, 2), (0,)", "shifts and dimensions must align. shifts: 2, dims:1"},
	{"roll", "{2, 3}, (1, 2)", "shifts and dimensions must align. shifts: 2, dims:0"},
	{"roll", "{2, 3}, (), ()", "`shifts` required"},
	{"roll", "{2, 3}, 1, 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
};

ParameterizedTestParameters(ops_shape, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_shape, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- details ---- */

Test(ops_shape, a_view_keeps_requires_grad_and_dtype)
{
	ASSERT_STATUS(run("view", "grad bfloat16{2, 3}, -1"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_BFLOAT16);
	cr_expect(output(0)->requires_grad, "a view of a tensor that requires grad requires grad");
	ASSERT_STATUS(run("repeat", "grad bfloat16{2, 3}, 2, 1"), TI_OK, err);
	cr_expect(output(0)->requires_grad, "a copy of a tensor that requires grad requires grad");
}

Test(ops_shape, contiguous_returns_a_contiguous_input_itself)
{
	ASSERT_STATUS(run("contiguous", "{2, 3}"), TI_OK, err);
	cr_expect(output(0) == call.in.args[0].as.tensor, "the same tensor");
}

Test(ops_shape, view_as_and_reshape_as_take_the_other_s_shape)
{
	ASSERT_STATUS(run("reshape_as", "{2, 3 : 1, 2}, {6}"), TI_OK, err);
	expect_tensor("reshape_as", output(0), "[6]", "[1]", NULL);
	EXPECT_STATUS(run("view_as", "{2, 3 : 1, 2}, {6}"), TI_E_SHAPE, err);
	EXPECT_CONTAINS(err.message, "Use .reshape(...) instead.");
	ASSERT_STATUS(run("expand_as", "{1, 3}, {4, 3}"), TI_OK, err);
	expect_tensor("expand_as", output(0), "[4, 3]", "[0, 1]", NULL);
}

Test(ops_shape, a_minus_one_over_a_multiple_is_inferred_with_an_assumption)
{
	/* 6*N elements as [-1, 4]: exact only when N is even */
	ASSERT_STATUS(run("view", "{N, 6}, -1, 4"), TI_OK, err);
	expect_tensor("view", output(0), "[(3*N)//2, 4]", "[4, 1]", NULL);
	cr_expect(sym.assumption_count >= 1, "the divisibility is recorded as an assumption");
}

Test(ops_shape, squeezing_a_symbolic_size_assumes_it_is_not_one)
{
	ASSERT_STATUS(run("squeeze", "{T, 3}, 0"), TI_OK, err);
	expect_tensor("squeeze", output(0), "[T, 3]", NULL, NULL);
	cr_expect(sym.assumption_count == 1, "T != 1 is recorded");
}

Test(ops_shape, a_symbolic_axis_is_a_bad_description)
{
	EXPECT_STATUS(run("transpose", "{2, 3}, N, 0"), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "'dim0'");
}

Test(ops_shape, a_view_as_a_dtype_is_unsupported)
{
	EXPECT_STATUS(run("view", "{2, 3}, 'float16'"), TI_E_UNSUPPORTED, err);
	ASSERT_STATUS(run("view", "{N, 3}, N, 3"), TI_OK, err);
}

Test(ops_shape, aliases_name_the_same_rules)
{
	static const char *const names[] = {"torch.reshape", "Tensor.view", "swapaxes", "swapdims", "moveaxis",
	                                    "broadcast_to", "F.pad"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_expect(ti_op_find(names[i]) != NULL, "%s is known", names[i]);
}
