/*
 * test_ops_reduce.c - reductions (src/ops/reduce.c): dims, keepdim, output
 * dtypes, values-and-indices pairs, and the empty-tensor refusals.
 *
 * Shapes, strides and dtypes were read from PyTorch 1.13 on the meta device;
 * var/std's dtype check and torch.norm (linalg.vector_norm) follow 2.x's
 * source. Rows are written as in ops_cases.h.
 */
#include "ops_cases.h"

TestSuite(ops_reduce, .init = setup, .fini = teardown);

static const rule_row rules[] = {
	{"sum", "{2, 3, 4}", "[]", "[]", "float32"},
	{"sum", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"sum", "{2, 3, 4}, (0, 2), keepdim=True", "[1, 3, 1]", "[3, 1, 1]", "float32"},
	{"sum", "{2, 3}, []", "[]", "[]", "float32"},
	{"sum", "{2, 3}, (), keepdim=True", "[1, 1]", "[1, 1]", "float32"},
	{"sum", "{2, 3}, dim=None", "[]", "[]", "float32"},
	{"sum", "int32{3}", "[]", "[]", "int64"},
	{"sum", "bool{3}", "[]", "[]", "int64"},
	{"sum", "uint8{3}", "[]", "[]", "int64"},
	{"sum", "int64{3}, dtype=float16", "[]", "[]", "float16"},
	{"sum", "float16{3}", "[]", "[]", "float16"},
	{"sum", "complex64{3}", "[]", "[]", "complex64"},
	{"sum", "{}, 0", "[]", "[]", "float32"},
	{"sum", "{0, 3}, 0", "[3]", "[1]", "float32"},
	{"sum", "{3, 4 : 1, 3}, 0, keepdim=True", "[1, 4]", "[4, 1]", "float32"},
	{"sum", "{B, T, C}, -1", "[B, T]", "[T, 1]", "float32"},
	{"nansum", "int32{3}", "[]", "[]", "int64"},
	{"prod", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"prod", "bool{3}, 0", "[]", "[]", "int64"},
	{"mean", "{2, 3, 4}, -1", "[2, 3]", "[3, 1]", "float32"},
	{"mean", "int64{3}, dtype=float32", "[]", "[]", "float32"},
	{"mean", "{2, 3}, dim=None, keepdim=True", "[1, 1]", "[1, 1]", "float32"},
	{"mean", "complex64{3}", "[]", "[]", "complex64"},
	{"nanmean", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"amax", "{2, 3, 4}, (0, 1)", "[4]", "[1]", "float32"},
	{"amax", "{2, 3, 4}", "[]", "[]", "float32"},
	{"amax", "int64{3}, 0", "[]", "[]", "int64"},
	{"amax", "{0, 3}, 1", "[0]", "[1]", "float32"},
	{"amin", "{2, 3, 4}, 1, True", "[2, 1, 4]", "[4, 4, 1]", "float32"},
	{"amax", "{2, 3}, dim=(), keepdim=True", "[1, 1]", "[1, 1]", "float32"},
	{"max", "{2, 3, 4}", "[]", "[]", "float32"},
	{"max", "{2, 3, 4}, {4}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"min", "{4, 3}, other={3}", "[4, 3]", "[3, 1]", "float32"},
	{"max", "{0, 3}, 1", "[0]", "[1]", "float32"},
	{"argmax", "{2, 3, 4}", "[]", "[]", "int64"},
	{"argmax", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "int64"},
	{"argmax", "{2, 3, 4}, 1, keepdim=True", "[2, 1, 4]", "[4, 4, 1]", "int64"},
	{"argmax", "{2, 3, 4}, keepdim=True", "[1, 1, 1]", "[1, 1, 1]", "int64"},
	{"argmax", "{0, 3}, 1", "[0]", "[1]", "int64"},
	{"argmax", "{}, 0", "[]", "[]", "int64"},
	{"argmax", "bool{3}", "[]", "[]", "int64"},
	{"argmin", "{2, 3, 4}, 2", "[2, 3]", "[3, 1]", "int64"},
	{"argmax", "{3, 4 : 1, 3}, 0, keepdim=True", "[1, 4]", "[4, 1]", "int64"},
	{"var", "{2, 3, 4}", "[]", "[]", "float32"},
	{"var", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"var", "{2, 3, 4}, (1, 2), unbiased=False, keepdim=True", "[2, 1, 1]", "[1, 1, 1]", "float32"},
	{"var", "{2, 3, 4}, 1, correction=0", "[2, 4]", "[4, 1]", "float32"},
	{"var", "complex64{3}", "[]", "[]", "float32"},
	{"std", "{2, 3, 4}, -1, True, True", "[2, 3, 1]", "[3, 1, 1]", "float32"},
	{"std", "float16{3}", "[]", "[]", "float16"},
	{"std", "{2, 3}, dim=None, keepdim=True", "[1, 1]", "[1, 1]", "float32"},
	{"var_mean", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"std_mean", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"norm", "{2, 3, 4}", "[]", "[]", "float32"},
	{"norm", "{2, 3, 4}, dim=1", "[2, 4]", "[4, 1]", "float32"},
	{"norm", "{2, 3, 4}, p=1, dim=(1, 2), keepdim=True", "[2, 1, 1]", "[1, 1, 1]", "float32"},
	{"norm", "float16{3}", "[]", "[]", "float16"},
	{"norm", "complex64{3}", "[]", "[]", "float32"},
	{"norm", "{}", "[]", "[]", "float32"},
	{"all", "{2, 3, 4}", "[]", "[]", "bool"},
	{"all", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "bool"},
	{"all", "uint8{3}", "[]", "[]", "uint8"},
	{"any", "{2, 3, 4}, 1, keepdim=True", "[2, 1, 4]", "[4, 4, 1]", "bool"},
	{"any", "uint8{3}, 0", "[]", "[]", "uint8"},
	{"logsumexp", "{2, 3, 4}, 1", "[2, 4]", "[4, 1]", "float32"},
	{"logsumexp", "{2, 3, 4}, (0, 1), True", "[1, 1, 4]", "[4, 4, 1]", "float32"},
	{"logsumexp", "int64{3}, 0", "[]", "[]", "float32"},
};

ParameterizedTestParameters(ops_reduce, rules_follow_pytorch) { return ROWS(rules); }

ParameterizedTest(const rule_row *r, ops_reduce, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
}

static const error_row errors[] = {
	{"sum", "{2, 3, 4}, (0, 0)", "dim 0 appears multiple times in the list of dims"},
	{"sum", "{2, 3, 4}, (2, -1)", "dim 2 appears multiple times in the list of dims"},
	{"sum", "{2, 3, 4}, 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"sum", "{}, 1", "Dimension out of range (expected to be in range of [-1, 0], but got 1)"},
	{"mean", "int64{3}",
	 "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"},
	{"mean", "bool{3}",
	 "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Bool"},
	{"mean", "{3}, dtype=int64",
	 "mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: Long"},
	{"mean", "int64{3}, 0",
	 "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"},
	{"nanmean", "int64{3}, 0",
	 "nanmean(): integral types and 'Bool' are not supported for nanmean, even for empty tensors."},
	{"amax", "{0, 3}",
	 "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."},
	{"amax", "{0, 3}, 0", "amax(): Expected reduction dim 0 to have non-zero size."},
	{"amax", "{0, 3}, -2", "amax(): Expected reduction dim -2 to have non-zero size."},
	{"amax", "{}, 1", "Dimension out of range (expected to be in range of [-1, 0], but got 1)"},
	{"max", "{0, 3}",
	 "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."},
	{"max", "{0, 3}, -2", "max(): Expected reduction dim 0 to have non-zero size."},
	{"argmax", "{0, 3}", "argmax(): Expected reduction dim to be specified for input.numel() == 0."},
	{"argmax", "{0, 3}, -2", "argmax(): Expected reduction dim 0 to have non-zero size."},
	{"var", "int64{3}", "std and var only support floating point and complex dtypes"},
	{"std", "bool{3}, 0", "std and var only support floating point and complex dtypes"},
	{"var_mean", "int64{3}", "var_mean only support floating point and complex dtypes"},
	{"norm", "int64{3}", "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"},
	{"norm", "int64{3}, dim=0", "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"},
};

ParameterizedTestParameters(ops_reduce, errors_are_pytorch_s) { return ROWS(errors); }

ParameterizedTest(const error_row *r, ops_reduce, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- values and indices, counting ---- */

Test(ops_reduce, max_along_a_dim_gives_values_and_int64_indices)
{
	ASSERT_STATUS(run("max", "{2, 3, 4}, 1"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	expect_tensor("values", output(0), "[2, 4]", "[4, 1]", "float32");
	expect_tensor("indices", output(1), "[2, 4]", "[4, 1]", "int64");
	ASSERT_STATUS(run("min", "int64{2, 3}, -1, keepdim=True"), TI_OK, err);
	expect_tensor("values", output(0), "[2, 1]", "[1, 1]", "int64");
	expect_tensor("indices", output(1), "[2, 1]", "[1, 1]", "int64");
	ASSERT_STATUS(run("max", "{}, 0"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	ASSERT_STATUS(run("mode", "{2, 3}"), TI_OK, err);
	expect_tensor("mode indices", output(1), "[2]", "[1]", "int64");
	ASSERT_STATUS(run("median", "{2, 3}"), TI_OK, err);
	EXPECT_INT(call.output_count, 1);
}

Test(ops_reduce, var_mean_of_a_complex_input_has_a_real_variance_and_a_complex_mean)
{
	ASSERT_STATUS(run("var_mean", "complex64{2, 3}, 1"), TI_OK, err);
	ASSERT_INT(call.output_count, 2);
	expect_tensor("var", output(0), "[2]", "[1]", "float32");
	expect_tensor("mean", output(1), "[2]", "[1]", "complex64");
}

Test(ops_reduce, counts_one_flop_per_input_element)
{
	ASSERT_STATUS(run("sum", "{2, 3, 4}, 1"), TI_OK, err);
	EXPECT_STR(flops_text(), "24");
	ASSERT_STATUS(run("argmax", "{B, T}"), TI_OK, err);
	EXPECT_STR(flops_text(), "B*T");
	ASSERT_STATUS(run("max", "{4, 3}, {3}"), TI_OK, err);
	EXPECT_STR(flops_text(), "12"); /* maximum: one per output element */
}

Test(ops_reduce, a_symbolic_dim_argument_is_bad_input)
{
	EXPECT_STATUS(run("sum", "{2, 3}, N"), TI_E_CORRUPT, err);
	EXPECT_STATUS(run("var", "{3}, 0, True, correction=1"), TI_E_CORRUPT, err);
}

Test(ops_reduce, a_reduction_keeps_requires_grad_for_floating_results)
{
	ASSERT_STATUS(run("sum", "grad {3}"), TI_OK, err);
	cr_expect(output(0)->requires_grad, "x.sum() requires grad");
	ASSERT_STATUS(run("argmax", "grad {3}"), TI_OK, err);
	cr_expect(!output(0)->requires_grad, "x.argmax() does not");
}
