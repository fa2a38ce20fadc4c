/*
 * test_ops_index.c - indexing and embeddings (src/ops/index.c).
 *
 * Expected shapes, strides and messages were read from PyTorch (meta device,
 * and the CPU kernels where the meta kernels skip a check). Calls are
 * written as Python text (tests/unit/ops_cases.h): {2, 3} is a float32
 * tensor, int64{5} one of another dtype, {3, 2 : 1, 3} one with strides.
 */
#include "ops_cases.h"

TestSuite(ops_index, .init = setup, .fini = teardown);

/* ---- shape rules ---- */

static const rule_row rules[] = {
	{"narrow", "{3, 4}, 1, 1, 2", "[3, 2]", "[4, 1]", "float32"},
	{"narrow", "{3, 4}, 1, -2, 2", "[3, 2]", "[4, 1]", "float32"},
	{"narrow", "{4, 5}, 1, 5, 0", "[4, 0]", "[5, 1]", "float32"},
	{"narrow", "{4, 5 : 1, 4}, 0, 1, 2", "[2, 5]", "[1, 4]", "float32"},
	{"narrow", "{B, T, C}, 1, 0, 1", "[B, 1, C]", "[T*C, C, 1]", "float32"},
	{"select", "{3, 4}, 1, 2", "[3]", "[4]", "float32"},
	{"select", "{3, 4}, 1, -1", "[3]", "[4]", "float32"},
	{"select", "{3, 4}, 0, 0", "[4]", "[1]", "float32"},
	{"select", "{B, T, C}, 1, -1", "[B, C]", "[T*C, 1]", "float32"},
	{"index_select", "{3, 4}, 1, int64{5}", "[3, 5]", "[5, 1]", "float32"},
	{"index_select", "{3, 4}, 1, int32{2}", "[3, 2]", "[2, 1]", "float32"},
	{"index_select", "{3, 4}, 1, int64{}", "[3, 1]", "[1, 1]", "float32"},
	{"index_select", "{3, 4}, 0, int64{N}", "[N, 4]", "[4, 1]", "float32"},
	{"index_select", "{}, 0, int64{1}", "[]", "[]", "float32"},
	{"gather", "{3, 4}, 1, int64{3, 7}", "[3, 7]", "[7, 1]", "float32"},
	{"gather", "{3, 4}, 0, int64{2, 2}", "[2, 2]", "[2, 1]", "float32"},
	{"gather", "{3, 4}, 1, int64{5, 0}", "[5, 0]", "[1, 1]", "float32"},
	{"take_along_dim", "{3, 4}, int64{3, 1}, 1", "[3, 1]", "[1, 1]", "float32"},
	{"take_along_dim", "{3, 4}, int64{1, 2}, 1", "[3, 2]", "[2, 1]", "float32"},
	{"take_along_dim", "{3, 4}, int64{5}", "[5]", "[1]", "float32"},
	{"embedding", "int64{2, 5}, {10, 3}", "[2, 5, 3]", "[15, 3, 1]", "float32"},
	{"embedding", "int32{2, 3, 4}, {10, 3}", "[2, 3, 4, 3]", "[36, 12, 3, 1]", "float32"},
	{"embedding", "int64{}, {10, 3}", "[3]", "[1]", "float32"},
	{"embedding", "int64{B, T}, {50257, 768}", "[B, T, 768]", "[768*T, 768, 1]", "float32"},
	{"embedding", "int64{2}, {10, 3}, padding_idx=-10", "[2, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "int64{2, 5}, {10, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "int64{8}, {10, 3}, int64{4}", "[4, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "int64{8}, {10, 3}, int32{4}", "[4, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "int64{8}, {10, 3}, int64{4}, include_last_offset=True", "[3, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, mode='max'", "[2, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, per_sample_weights={2, 5}, mode='sum'", "[2, 3]", "[3, 1]", "float32"},
	{"embedding_bag", "{10, 3}, int64{2, 5}", "[2, 3]", "[3, 1]", "float32"},
};

ParameterizedTestParameters(ops_index, rules_follow_pytorch)
{
	return ROWS(rules);
}

ParameterizedTest(const rule_row *r, ops_index, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
	EXPECT_INT(call.output_count, 1);
}

/* ---- counts ---- */

Test(ops_index, gathers_are_free)
{
	ASSERT_STATUS(run("embedding", "int64{2, 5}, {10, 3}"), TI_OK, err);
	cr_expect(call.counted && ti_dim_is_int(call.flops) && call.flops.value == 0, "embedding is free");
	ASSERT_STATUS(run("narrow", "{3, 4}, 1, 1, 2"), TI_OK, err);
	cr_expect(call.counted && ti_dim_is_int(call.flops) && call.flops.value == 0, "narrow is free");
}

Test(ops_index, embedding_bag_adds_every_gathered_row)
{
	ASSERT_STATUS(run("embedding_bag", "int64{8}, {10, 3}, int64{4}, mode='sum'"), TI_OK, err);
	cr_expect(call.counted, "counted");
	EXPECT_INT(call.flops.value, 8 * 3);
	EXPECT_INT(call.macs.value, 0);
	ASSERT_STATUS(run("embedding_bag", "int64{2, 5}, {10, 3}, per_sample_weights={2, 5}, mode='sum'"), TI_OK, err);
	EXPECT_INT(call.macs.value, 10 * 3);
	EXPECT_INT(call.flops.value, 2 * 10 * 3);
}

Test(ops_index, outputs_keep_the_weight_s_dtype_and_grad)
{
	ASSERT_STATUS(run("embedding", "int64{4}, grad bfloat16{10, 3}"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_BFLOAT16);
	cr_expect(output(0)->requires_grad, "the output of a trainable embedding requires grad");
}

Test(ops_index, a_symbolic_index_out_of_range_is_assumed_in_range)
{
	ASSERT_STATUS(run("select", "{T, 4}, 0, 5"), TI_OK, err);
	EXPECT_INT(sym.assumption_count, 1);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"narrow", "{3, 4}, 1, 3, 2", "start (3) + length (2) exceeds dimension size (4)."},
	{"narrow", "{3, 4}, 1, -1, 2", "start (3) + length (2) exceeds dimension size (4)."},
	{"narrow", "{3, 4}, 1, 1, -1", "narrow(): length must be non-negative."},
	{"narrow", "{3, 4}, 1, -5, 1", "start out of range (expected to be in range of [-4, 4], but got -5)"},
	{"narrow", "{3, 4}, 1, 5, 0", "start out of range (expected to be in range of [-4, 4], but got 5)"},
	{"narrow", "{}, 0, 0, 1", "narrow() cannot be applied to a 0-dim tensor."},
	{"narrow", "{3, 4}, 2, 0, 1", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"select", "{3}, 0, 5", "select(): index 5 out of range for tensor of size [3] at dimension 0"},
	{"select", "{3, 4}, 1, -5", "select(): index -5 out of range for tensor of size [3, 4] at dimension 1"},
	{"select", "{}, 0, 0", "select() cannot be applied to a 0-dim tensor."},
	{"index_select", "{3, 4}, 1, {2}", "index_select(): Expected dtype int32 or int64 for index"},
	{"index_select", "{3, 4}, 1, int16{2}", "index_select(): Expected dtype int32 or int64 for index"},
	{"index_select", "{3, 4}, 1, int64{2, 2}", "index_select(): Index is supposed to be a vector"},
	{"index_select", "{}, 0, int64{2}", "index_select(): Index to scalar can have only 1 value, got 2 value(s)"},
	{"index_select", "{3, 4}, 2, int64{2}", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"gather", "{3, 4}, 1, int64{3}", "Index tensor must have the same number of dimensions as input tensor"},
	{"gather", "{3, 4}, 1, {3, 2}", "gather(): Expected dtype int64 for index"},
	{"gather", "{3, 4}, 1, int32{3, 2}", "gather(): Expected dtype int64 for index"},
	{"gather", "{3, 4}, 1, int64{4, 2}",
	 "Size does not match at dimension 0 expected index [4, 2] to be smaller than self [3, 4] apart from dimension 1"},
	{"gather", "{3, 4}, 0, int64{2, 5}",
	 "Size does not match at dimension 1 expected index [2, 5] to be smaller than self [3, 4] apart from dimension 0"},
	{"take_along_dim", "{3, 4}, int32{1, 2}, 1", "torch.take_along_dim(): dtype of indices should be Long but got Int"},
	{"take_along_dim", "{3, 4}, int64{2}, 1",
	 "torch.take_along_dim(): input and indices should have the same number of dimensions, but got 2 dimensions for "
	 "input, and 1 dimensions for indices"},
	{"take_along_dim", "{3, 4}, int64{2, 2}, 1",
	 "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"},
	{"embedding", "{2, 5}, {10, 3}",
	 "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
	 "torch.FloatTensor instead (while checking arguments for embedding)"},
	{"embedding", "int16{2, 3}, {10, 3}",
	 "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
	 "torch.ShortTensor instead (while checking arguments for embedding)"},
	{"embedding", "int64{2, 5}, {10}", "'weight' must be 2-D"},
	{"embedding", "int64{2, 5}, {10, 3}, padding_idx=10", "Padding_idx must be within num_embeddings"},
	{"embedding", "int64{2, 5}, {10, 3}, padding_idx=-11", "Padding_idx must be within num_embeddings"},
	{"embedding_bag", "int64{8}, {10, 3}", "offsets has to be a 1D Tensor but got None"},
	{"embedding_bag", "int64{8}, {10, 3}, int64{4, 1}", "offsets has to be a 1D Tensor"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, int64{2}",
	 "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. "
	 "However, found offsets of type <class 'torch.Tensor'>"},
	{"embedding_bag", "int64{2, 5, 2}, {10, 3}", "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"},
	{"embedding_bag", "int64{2, 5}, {10}", "weight has to be a 2D Tensor, but got Tensor of dimension 1"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, mode='foo'", "mode has to be one of sum, mean or max"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, mode='max', sparse=True", "max mode does not support sparse weights"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, mode='max', scale_grad_by_freq=True",
	 "max mode does not support scaling the gradient by the frequency"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, per_sample_weights={2, 5}",
	 "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got "
	 "mode='mean'). Please open a feature request on GitHub."},
	{"embedding_bag", "int64{2, 5}, {10, 3}, per_sample_weights={2, 4}, mode='sum'",
	 "embedding_bag: If per_sample_weights (torch.Size([2, 4])) is not None, then it must have the same shape as "
	 "the input (torch.Size([2, 5]))"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, per_sample_weights=float64{2, 5}, mode='sum'",
	 "expected weight (torch.float32) and per_sample_weights (torch.float64) to have same dtype"},
	{"embedding_bag", "{2, 5}, {10, 3}", "expected indices to be long or int, got torch.float32"},
	{"embedding_bag", "int64{8}, {10, 3}, {4}", "expected offsets to be long or int, got torch.float32"},
	{"embedding_bag", "int64{2, 5}, int32{10, 3}", "expected weight to be floating point type, got torch.int32"},
	{"embedding_bag", "int64{8}, {10, 3}, int64{0}, include_last_offset=True",
	 "include_last_offset: numBags should be at least 1"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, padding_idx=10",
	 "padding_idx must be within the number of embeddings, -10 through 9, but got 10"},
	{"embedding_bag", "int64{2, 5}, {10, 3}, padding_idx=-11",
	 "padding_idx must be within the number of embeddings, -10 through 9, but got -11"},
};

ParameterizedTestParameters(ops_index, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_index, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}
