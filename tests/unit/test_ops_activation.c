/*
 * test_ops_activation.c - functional activations, softmax, glu, prelu and
 * the functional dropouts (src/ops/activation.c).
 *
 * Shapes, strides and dtypes were read from PyTorch 1.13 on the meta device;
 * prelu's dtype check and gelu's approximate check follow 2.x's source.
 * Rows are written as in ops_cases.h.
 */
#include "ops_cases.h"

TestSuite(ops_activation, .init = setup, .fini = teardown);

static const rule_row rules[] = {
	/* pointwise: the input's dtype, the input's layout */
	{"relu", "int64{3}", "[3]", "[1]", "int64"},
	{"relu", "bool{3}", "[3]", "[1]", "bool"},
	{"relu", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"relu6", "float16{3}", "[3]", "[1]", "float16"},
	{"leaky_relu", "{3, 4 : 1, 3}, 0.2", "[3, 4]", "[1, 3]", "float32"},
	{"elu", "int64{3}", "[3]", "[1]", "int64"},
	{"celu", "int64{3}", "[3]", "[1]", "int64"},
	{"selu", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"gelu", "{2, 3, 4}, approximate='tanh'", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"gelu", "{2, 3, 4, 5 : 60, 1, 15, 3}", "[2, 3, 4, 5]", "[60, 1, 15, 3]", "float32"},
	{"silu", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"mish", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"hardswish", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"hardsigmoid", "int64{3}", "[3]", "[1]", "int64"},
	{"softplus", "int64{3}, beta=2", "[3]", "[1]", "int64"},
	{"hardtanh", "int64{3}", "[3]", "[1]", "int64"},
	{"threshold", "int64{3}, 0.5, 2", "[3]", "[1]", "int64"},
	{"hardshrink", "{3}", "[3]", "[1]", "float32"},
	{"softshrink", "{3}, 0.5", "[3]", "[1]", "float32"},
	{"logsigmoid", "int64{3}", "[3]", "[1]", "int64"},
	/* integers to floating point */
	{"tanh", "int64{3}", "[3]", "[1]", "float32"},
	{"sigmoid", "bool{3}", "[3]", "[1]", "float32"},
	{"sigmoid", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"softsign", "int64{3}", "[3]", "[1]", "float32"},
	{"tanhshrink", "int64{3}", "[3]", "[1]", "float32"},
	/* prelu: one weight or one per channel; empty_like(input) */
	{"prelu", "{2, 3, 4}, {3}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"prelu", "{2, 3, 4}, {1}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"prelu", "{2, 3, 4}, {}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"prelu", "{5}, {1}", "[5]", "[1]", "float32"},
	{"prelu", "int64{2, 3}, int64{3}", "[2, 3]", "[3, 1]", "int64"},
	{"prelu", "{2, 3, 4, 5 : 60, 1, 15, 3}, {3}", "[2, 3, 4, 5]", "[60, 1, 15, 3]", "float32"},
	{"prelu", "{3, 4 : 1, 3}, {4}", "[3, 4]", "[1, 3]", "float32"},
	{"prelu", "{B, C, 4}, {8}", "[B, C, 4]", "[4*C, 4, 1]", "float32"},
	/* softmax: contiguous, the dtype argument casts */
	{"softmax", "{2, 3, 4}, 1", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"softmax", "{2, 3, 4}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"softmax", "{}", "[]", "[]", "float32"},
	{"softmax", "{2, 3, 4}, 1, dtype=float64", "[2, 3, 4]", "[12, 4, 1]", "float64"},
	{"softmax", "int64{3}, 0", "[3]", "[1]", "int64"},
	{"softmax", "int64{3}, 0, dtype=float32", "[3]", "[1]", "float32"},
	{"softmax", "{3, 4 : 1, 3}, 0", "[3, 4]", "[4, 1]", "float32"},
	{"softmax", "{2, 3, 4, 5 : 60, 1, 15, 3}, 1", "[2, 3, 4, 5]", "[60, 20, 5, 1]", "float32"},
	{"log_softmax", "{3, 4 : 1, 3}, 1", "[3, 4]", "[4, 1]", "float32"},
	{"softmin", "{2, 3, 4}, -1", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	/* glu halves a dim */
	{"glu", "{2, 6}", "[2, 3]", "[3, 1]", "float32"},
	{"glu", "{4, 5}, 0", "[2, 5]", "[5, 1]", "float32"},
	{"glu", "int64{4}", "[2]", "[1]", "int64"},
	{"glu", "{6, 4 : 1, 6}, 0", "[3, 4]", "[1, 3]", "float32"},
	{"glu", "{B, 2*H}", "[B, H]", "[H, 1]", "float32"},
	/* dropout: the input itself in eval; in training, a product with noise */
	{"dropout", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"dropout", "{4, 3 : 6, 2}", "[4, 3]", "[3, 1]", "float32"},
	{"dropout", "{}", "[]", "[]", "float32"},
	{"dropout", "int64{3}, training=False", "[3]", "[1]", "int64"},
	{"dropout2d", "{3}, training=False", "[3]", "[1]", "float32"},
	{"dropout2d", "{2, 3, 4 : 12, 1, 3}", "[2, 3, 4]", "[12, 1, 3]", "float32"},
	{"dropout3d", "{3}", "[3]", "[1]", "float32"},
	{"dropout1d", "{3, 4}", "[3, 4]", "[4, 1]", "float32"},
	{"alpha_dropout", "{3, 4 : 1, 3}, training=True", "[3, 4]", "[1, 3]", "float32"},
	{"feature_alpha_dropout", "{3}", "[3]", "[1]", "float32"},
};

ParameterizedTestParameters(ops_activation, rules_follow_pytorch) { return ROWS(rules); }

ParameterizedTest(const rule_row *r, ops_activation, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
}

static const error_row errors[] = {
	{"relu6", "bool{3}", "Bool inputs not supported for hardtanh"},
	{"hardtanh", "bool{3}", "Bool inputs not supported for hardtanh"},
	{"gelu", "{3}, approximate='foo'", "approximate argument must be either none or tanh."},
	{"softshrink", "{3}, -1", "lambda must be greater or equal to 0, but found to be -1."},
	{"logsigmoid", "bool{3}",
	 "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` "
	 "or `logical_not()` operator instead."},
	{"tanhshrink", "bool{3}",
	 "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the "
	 "`~` or `logical_not()` operator instead."},
	{"prelu", "{2, 3, 4}, {4}",
	 "Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and channel size = 3."},
	{"prelu", "{2, 3, 4}, {2, 2}",
	 "Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and channel size = 3."},
	{"prelu", "{5}, {5}", "Mismatch of parameter numbers and input channel size. Found parameter numbers = 5 and channel size = 1."},
	{"prelu", "{}, {2}", "Not allow zero-dim input tensor."},
	{"prelu", "{2, 3}, {3, 1}", "prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"},
	{"prelu", "{2, 3}, float64{3}", "prelu: Type promoting not supported. Got Float and Double"},
	{"softmax", "{2, 3, 4}, 3", "Dimension out of range (expected to be in range of [-3, 2], but got 3)"},
	{"log_softmax", "{}, 1", "Dimension out of range (expected to be in range of [-1, 0], but got 1)"},
	{"glu", "{2, 5}", "Halving dimension must be even, but dimension 1 is size 5"},
	{"glu", "{}", "glu does not support scalars because halving size must be even"},
	{"glu", "{2, 4}, 2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"dropout", "{3}, p=1.5", "dropout probability has to be between 0 and 1, but got 1.5"},
	{"dropout", "{3}, -0.5", "dropout probability has to be between 0 and 1, but got -0.5"},
	{"dropout1d", "{1, 2, 3, 4}",
	 "dropout1d: Expected 2D or 3D input, but received a 4D input. Note that dropout1d exists to provide channel-wise "
	 "dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
	 "inputs)."},
	{"dropout2d", "{3}", "Feature dropout requires at least 2 dimensions in the input"},
	{"feature_alpha_dropout", "{3}, training=True", "Feature dropout requires at least 2 dimensions in the input"},
	{"dropout", "int64{3}", "result type Float can't be cast to the desired output type Long"},
};

ParameterizedTestParameters(ops_activation, errors_are_pytorch_s) { return ROWS(errors); }

ParameterizedTest(const error_row *r, ops_activation, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- counting and details ---- */

static const flops_row counts[] = {
	{"relu", "{2, 3, 4}", "24"},      /* one per element */
	{"gelu", "{B, 8}", "8*B"},
	{"prelu", "{2, 3, 4}, {3}", "24"},
	{"softmax", "{2, 3, 4}, 1", "72"}, /* three per element: exp, sum, divide */
	{"log_softmax", "{T, 5}, -1", "15*T"},
	{"glu", "{2, 6}", "12"},          /* two per output element: sigmoid and product */
	{"dropout", "{2, 3}", "0"},       /* free */
	{"dropout", "{2, 3}, training=False", "0"},
};

ParameterizedTestParameters(ops_activation, counts_follow_the_documented_formulas) { return ROWS(counts); }

ParameterizedTest(const flops_row *r, ops_activation, counts_follow_the_documented_formulas, .init = setup,
                  .fini = teardown)
{
	check_flops(r);
}

Test(ops_activation, dropout_in_eval_passes_the_input_itself_through)
{
	ti_arg args[TI_OP_MAX_PARAMS];
	int n = parse_args("grad {3}, training=False", args);
	ASSERT_STATUS(ti_op_invoke(&ctx, "dropout", args, n, &call, &err), TI_OK, err);
	cr_expect(output(0) == args[0].as.tensor, "the same tensor comes out");
}

Test(ops_activation, glu_of_a_symbolic_size_assumes_it_even)
{
	ASSERT_STATUS(run("glu", "{B, H}"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[B, H//2]");
	EXPECT_INT(sym.assumption_count, 1);
}

Test(ops_activation, prelu_against_a_symbolic_channel_count_assumes_it_matches)
{
	ASSERT_STATUS(run("prelu", "{2, C}, {16}"), TI_OK, err);
	EXPECT_INT(sym.assumption_count, 1);
	EXPECT_STATUS(run("softmax", "{2, 3}, N"), TI_E_CORRUPT, err);
}
