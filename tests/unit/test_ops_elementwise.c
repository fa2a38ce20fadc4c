/*
 * test_ops_elementwise.c - pointwise operators (src/ops/elementwise.c):
 * broadcasting, type promotion, TensorIterator's output strides, and
 * PyTorch's refusals.
 *
 * Shapes, strides and dtypes were read from PyTorch 1.13 on the meta device;
 * where 2.x differs (where()'s broadcast message, masked_fill's mask check)
 * the row follows 2.x's source. Rows are written as in ops_cases.h.
 */
#include "ops_cases.h"

TestSuite(ops_elementwise, .init = setup, .fini = teardown);

static const rule_row rules[] = {
	/* broadcasting and promotion */
	{"add", "{2, 3}, {3}", "[2, 3]", "[3, 1]", "float32"},
	{"add", "{2, 1, 4}, {3, 1}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"add", "int64{3}, 1.5", "[3]", "[1]", "float32"},
	{"add", "int64{3}, 1.5, alpha=2.0", "[3]", "[1]", "float32"},
	{"add", "int8{3}, uint8{3}", "[3]", "[1]", "int16"},
	{"add", "{3}, float64{}", "[3]", "[1]", "float32"},
	{"add", "int64{3}, float64{}", "[3]", "[1]", "float64"},
	{"add", "float16{3}, 1.0", "[3]", "[1]", "float16"},
	{"add", "bool{3}, bool{3}", "[3]", "[1]", "bool"},
	{"add", "2, {3}", "[3]", "[1]", "float32"},
	{"add", "2, 3", "[]", "[]", "int64"},
	{"add", "{B, T, C}, {C}", "[B, T, C]", "[T*C, C, 1]", "float32"},
	{"add", "{B, 1, C}, {T, 1}", "[B, T, C]", "[C*T, C, 1]", "float32"},
	{"sub", "{2, 3}, 1", "[2, 3]", "[3, 1]", "float32"},
	{"rsub", "int64{3}, 2.5", "[3]", "[1]", "float32"},
	{"mul", "bool{3}, bool{3}", "[3]", "[1]", "bool"},
	{"div", "int64{3}, int64{3}", "[3]", "[1]", "float32"},
	{"div", "int64{3}, 2, rounding_mode='trunc'", "[3]", "[1]", "int64"},
	{"div", "int64{3}, 2, rounding_mode='floor'", "[3]", "[1]", "int64"},
	{"div", "bool{3}, True", "[3]", "[1]", "float32"},
	{"div", "bool{3}, True, rounding_mode='trunc'", "[3]", "[1]", "bool"},
	{"divide", "2, int64{3}", "[3]", "[1]", "float32"},
	{"true_divide", "int64{3}, 2", "[3]", "[1]", "float32"},
	{"floor_divide", "int64{3}, 2.5", "[3]", "[1]", "float32"},
	{"remainder", "int64{3}, 2", "[3]", "[1]", "int64"},
	{"remainder", "2, int64{3}", "[3]", "[1]", "int64"},
	{"fmod", "int64{3}, 2.0", "[3]", "[1]", "float32"},
	{"pow", "int64{3}, 2", "[3]", "[1]", "int64"},
	{"pow", "int64{3}, 0.5", "[3]", "[1]", "float32"},
	{"pow", "2.5, int64{3}", "[3]", "[1]", "float32"},
	{"pow", "bool{3}, 2", "[3]", "[1]", "int64"},
	{"maximum", "int64{3}, {2, 1}", "[2, 3]", "[3, 1]", "float32"},
	{"atan2", "int64{3}, int64{3}", "[3]", "[1]", "float32"},
	/* comparisons and logic give bool */
	{"eq", "int64{3}, 2.5", "[3]", "[1]", "bool"},
	{"lt", "{2, 1}, {3}", "[2, 3]", "[3, 1]", "bool"},
	{"greater_equal", "{3}, {3}", "[3]", "[1]", "bool"},
	{"logical_and", "int64{3}, {2, 1}", "[2, 3]", "[3, 1]", "bool"},
	{"logical_not", "int64{3}", "[3]", "[1]", "bool"},
	{"bitwise_and", "bool{3}, bool{3}", "[3]", "[1]", "bool"},
	/* the output follows the inputs' memory order (TensorIterator) */
	{"add", "{3, 4 : 1, 3}, 1", "[3, 4]", "[1, 3]", ""},
	{"add", "{3, 4 : 1, 3}, {3, 4}", "[3, 4]", "[1, 3]", ""},
	{"add", "{3, 4}, {3, 4 : 1, 3}", "[3, 4]", "[4, 1]", ""},
	{"add", "{3, 4 : 1, 3}, {4}", "[3, 4]", "[1, 3]", ""},
	{"mul", "{4, 3 : 6, 2}, 2", "[4, 3]", "[3, 1]", ""},
	{"mul", "{4, 3 : 1, 0}, 2", "[4, 3]", "[3, 1]", ""},
	{"mul", "{4, 3 : 1, 0}, {4, 3 : 1, 4}", "[4, 3]", "[1, 4]", ""},
	{"add", "{4, 1, 3 : 1, 4, 4}, 1", "[4, 1, 3]", "[1, 4, 4]", ""},
	{"add", "{2, 3, 4, 5 : 60, 1, 15, 3}, 1", "[2, 3, 4, 5]", "[60, 1, 15, 3]", ""},
	{"add", "{2, 3, 4, 5 : 60, 1, 15, 3}, {2, 3, 4, 5}", "[2, 3, 4, 5]", "[60, 1, 15, 3]", ""},
	{"add", "{2, 3, 4, 5}, {2, 3, 4, 5 : 60, 1, 15, 3}", "[2, 3, 4, 5]", "[60, 20, 5, 1]", ""},
	{"add", "{2, 3, 4, 5 : 60, 1, 15, 3}, {3, 1, 1}", "[2, 3, 4, 5]", "[60, 1, 15, 3]", ""},
	{"add", "{2, 3, 1, 1 : 3, 1, 3, 3}, 1", "[2, 3, 1, 1]", "[3, 1, 3, 3]", ""},
	{"exp", "{2, 2, 1, 4, 3 : 24, 1, 48, 6, 2}", "[2, 2, 1, 4, 3]", "[24, 1, 48, 6, 2]", ""},
	{"mul", "{0, 2, 3, 1 : 1, 24, 8, 4}, {0, 2, 3, 1 : 6, 3, 1, 6}", "[0, 2, 3, 1]", "[6, 3, 1, 1]", ""},
	{"add", "{3, 0 : 1, 3}, 1", "[3, 0]", "[1, 3]", ""},
	{"add", "{3, 2, 0 : 1, 3, 3}, 1", "[3, 2, 0]", "[1, 0, 3]", ""},
	{"add", "{T, 4 : 1, T}, 1", "[T, 4]", "[1, T]", ""},
	/* where, masked_fill, clamp */
	{"where", "bool{3, 4}, int64{4}, float64{3, 1}", "[3, 4]", "[4, 1]", "float64"},
	{"where", "bool{3, 4}, int64{4}, 1.5", "[3, 4]", "[4, 1]", "float32"},
	{"where", "bool{3, 4}, 1, 1.5", "[3, 4]", "[4, 1]", "float32"},
	{"where", "bool{3, 4}, 1, 2", "[3, 4]", "[4, 1]", "int64"},
	{"where", "bool{2, 1, 1}, {3, 1}, {7}", "[2, 3, 7]", "[21, 7, 1]", "float32"},
	{"where", "bool{3, 4}, {3, 4 : 1, 3}, 1.0", "[3, 4]", "[4, 1]", "float32"},
	{"where", "bool{3, 4 : 1, 3}, {3, 4 : 1, 3}, 1.0", "[3, 4]", "[1, 3]", "float32"},
	{"masked_fill", "{3, 4}, bool{4}, 1.0", "[3, 4]", "[4, 1]", "float32"},
	{"masked_fill", "{4}, bool{3, 4}, 1.0", "[3, 4]", "[4, 1]", "float32"},
	{"masked_fill", "int64{3, 4}, bool{4}, 1.5", "[3, 4]", "[4, 1]", "int64"},
	{"masked_fill", "{3, 4}, bool{4}, float64{}", "[3, 4]", "[4, 1]", "float32"},
	{"masked_fill", "{3, 4 : 1, 3}, bool{4}, 1.5", "[3, 4]", "[4, 1]", "float32"},
	{"clamp", "int64{3}, min=0.5", "[3]", "[1]", "float32"},
	{"clamp", "int64{3}, min=0, max=2", "[3]", "[1]", "int64"},
	{"clamp", "int64{3}, min={2, 1}", "[2, 3]", "[3, 1]", "float32"},
	{"clamp", "bool{3}, min=0", "[3]", "[1]", "int64"},
	{"clip", "int64{3}, 0.5", "[3]", "[1]", "float32"},
	{"clamp_min", "int64{3}, 0.5", "[3]", "[1]", "float32"},
	{"clamp_max", "int64{3}, {3}", "[3]", "[1]", "float32"},
	/* unary */
	{"neg", "int64{3}", "[3]", "[1]", "int64"},
	{"abs", "bool{3}", "[3]", "[1]", "bool"},
	{"exp", "int64{3}", "[3]", "[1]", "float32"},
	{"exp", "bool{3}", "[3]", "[1]", "float32"},
	{"exp", "float16{3}", "[3]", "[1]", "float16"},
	{"sqrt", "int32{3}", "[3]", "[1]", "float32"},
	{"rsqrt", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"reciprocal", "int64{3}", "[3]", "[1]", "float32"},
	{"square", "int64{3}", "[3]", "[1]", "int64"},
	{"square", "bool{3}", "[3]", "[1]", "int64"},
	{"sign", "bool{3}", "[3]", "[1]", "bool"},
	{"floor", "int64{3}", "[3]", "[1]", "int64"},
	{"round", "{3}, decimals=2", "[3]", "[1]", "float32"},
	{"erf", "int64{3}", "[3]", "[1]", "float32"},
	{"isnan", "float16{3}", "[3]", "[1]", "bool"},
	{"isfinite", "int64{3}", "[3]", "[1]", "bool"},
	{"exp", "{}", "[]", "[]", "float32"},
};

ParameterizedTestParameters(ops_elementwise, rules_follow_pytorch) { return ROWS(rules); }

ParameterizedTest(const rule_row *r, ops_elementwise, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
}

static const error_row errors[] = {
	{"add", "{2, 3}, {4}", "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"},
	{"add", "int64{3}, int64{3}, alpha=0.5", "For integral input tensors, argument alpha must not be a floating point number."},
	{"add", "{3}, {3}, alpha=True", "Boolean alpha only supported for Boolean results."},
	{"sub", "bool{3}, bool{3}",
	 "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."},
	{"sub", "bool{3}, {3}",
	 "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the "
	 "`~` or `logical_not()` operator instead."},
	{"sub", "{3}, True",
	 "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the "
	 "`~` or `logical_not()` operator instead."},
	{"sub", "bool{3}, True",
	 "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."},
	{"rsub", "bool{3}, 1",
	 "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the "
	 "`~` or `logical_not()` operator instead."},
	{"div", "int64{3}, 2, rounding_mode='xyz'", "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'xyz'"},
	{"floor_divide", "bool{3}, bool{3}", "torch.bool not supported for floor_divide"},
	{"maximum", "complex64{3}, {3}", "maximum not implemented for complex tensors."},
	{"pow", "int64{3}, -1", "Integers to negative integer powers are not allowed."},
	{"add", "uint16{3}, {3}", "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote UInt16 and Float"},
	{"where", "{3, 4}, {4}, {4}", "expected predicate to be bool, got torch.float32"},
	{"where", "uint8{3, 4}, {4}, {4}", "expected predicate to be bool, got torch.uint8"},
	{"where", "bool{3, 4}, {5}, {4}",
	 "Attempting to broadcast a dimension of length 5 at -1! Mismatching argument at index 1 had torch.Size([5]); "
	 "but expected shape should be broadcastable to [3, 4]"},
	{"where", "bool{3, 4}, 1.0, {2, 4}",
	 "Attempting to broadcast a dimension of length 2 at -2! Mismatching argument at index 1 had torch.Size([2, 4]); "
	 "but expected shape should be broadcastable to [3, 4]"},
	{"where", "bool{3}",
	 "The register_meta function for torch.nonzero() raises unimplemented by default, as a correct data-independent "
	 "implementation does not exist: the output shape depends on the values in the tensor, which meta tensors do not have"},
	{"masked_fill", "{3, 4}, {4}, 1.0", "masked_fill_ only supports boolean masks, but got mask with dtype float"},
	{"masked_fill", "{3, 4}, uint8{4}, 1.0", "masked_fill_ only supports boolean masks, but got mask with dtype unsigned char"},
	{"masked_fill", "{3, 4}, bool{4}, {1}",
	 "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."},
	{"masked_fill", "{3, 4}, bool{5}, 1.5", "The size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 1"},
	{"clamp", "{3}", "torch.clamp: At least one of 'min' or 'max' must not be None"},
	{"clamp", "complex64{3}, min=0", "clamp is not supported for complex types"},
	{"neg", "bool{3}",
	 "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` "
	 "or `logical_not()` operator instead."},
	{"positive", "bool{3}", "The `+` operator, on a bool tensor is not supported."},
	{"add", "{2, 3}, {2, 3}, {3}", ""},
};

ParameterizedTestParameters(ops_elementwise, errors_are_pytorch_s) { return ROWS(errors); }

ParameterizedTest(const error_row *r, ops_elementwise, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	if (!r->message[0]) { /* a call Python would not bind: bad input, not a shape error */
		cr_expect(run(r->op, r->args) == TI_E_CORRUPT, "%s(%s): want a binding error", r->op, r->args);
		return;
	}
	check_error(r);
}

/* ---- counting, gradients, symbols ---- */

Test(ops_elementwise, counts_one_flop_per_output_element)
{
	ASSERT_STATUS(run("add", "{2, 1, 4}, {3, 1}"), TI_OK, err);
	EXPECT_STR(flops_text(), "24");
	EXPECT_INT(ti_dim_is_int(call.macs) ? call.macs.value : -1, 0);
	ASSERT_STATUS(run("where", "bool{B, 1}, {B, T}, 0.0"), TI_OK, err);
	EXPECT_STR(flops_text(), "B*T");
	cr_expect(call.counted, "a pointwise op is counted");
}

Test(ops_elementwise, a_float_result_requires_grad_when_an_input_does)
{
	ASSERT_STATUS(run("mul", "grad {3}, 2"), TI_OK, err);
	cr_expect(output(0)->requires_grad, "x * 2 requires grad");
	ASSERT_STATUS(run("gt", "grad {3}, 2"), TI_OK, err);
	cr_expect(!output(0)->requires_grad, "x > 2 is bool: no grad");
}

Test(ops_elementwise, broadcasting_a_symbol_against_a_number_assumes_they_are_equal)
{
	ASSERT_STATUS(run("add", "{T, 3}, {5, 3}"), TI_OK, err);
	expect_tensor("T against 5", output(0), "[5, 3]", "[3, 1]", "float32");
	EXPECT_INT(sym.assumption_count, 1);
}

Test(ops_elementwise, prefixed_names_find_the_same_rule)
{
	ASSERT_STATUS(run("torch.add", "{3}, 1"), TI_OK, err);
	ASSERT_STATUS(run("Tensor.masked_fill", "{3}, bool{3}, 0"), TI_OK, err);
	ASSERT_STATUS(run("multiply", "{3}, {3}"), TI_OK, err);
	ASSERT_STATUS(run("arccos", "int64{3}"), TI_OK, err);
	EXPECT_STR(ti_dtype_name(output(0)->dtype), "float32");
}
