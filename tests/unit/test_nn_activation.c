/*
 * test_nn_activation.c - the torch.nn activation modules (src/nn/activation.c)
 * and the dropout modules (src/nn/dropout.c): constructors with PyTorch's
 * __init__ arguments, PReLU's parameter, forwards through the functional
 * operators.
 *
 * Read from PyTorch 1.13 modules on the meta device; Softmax2d's message is
 * 2.x's. Rows are written as in ops_cases.h.
 */
#include "ops_cases.h"

TestSuite(nn_activation, .init = setup, .fini = teardown);
TestSuite(nn_dropout, .init = setup, .fini = teardown);

static const module_row modules[] = {
	{"ReLU", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"ReLU", "inplace=True", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"ReLU6", "", "int64{3}", "[3]", "[1]", "int64"},
	{"LeakyReLU", "0.2", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"LeakyReLU", "negative_slope=0.1, inplace=True", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"ELU", "alpha=0.5", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"CELU", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"SELU", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"GELU", "", "{B, T, C}", "[B, T, C]", "[T*C, C, 1]", "float32"},
	{"GELU", "approximate='tanh'", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"SiLU", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Mish", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Tanh", "", "int64{3}", "[3]", "[1]", "float32"},
	{"Sigmoid", "", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"LogSigmoid", "", "{3}", "[3]", "[1]", "float32"},
	{"Softsign", "", "{3}", "[3]", "[1]", "float32"},
	{"Tanhshrink", "", "{3}", "[3]", "[1]", "float32"},
	{"Hardswish", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Hardsigmoid", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Softplus", "beta=2, threshold=10", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Threshold", "0.1, 20", "{3}", "[3]", "[1]", "float32"},
	{"Hardshrink", "", "{3}", "[3]", "[1]", "float32"},
	{"Softshrink", "lambd=0.25", "{3}", "[3]", "[1]", "float32"},
	{"RReLU", "", "{3}", "[3]", "[1]", "float32"},
	{"Hardtanh", "-2.0, 2.0", "{3}", "[3]", "[1]", "float32"},
	{"Hardtanh", "min_value=-3.0", "{3}", "[3]", "[1]", "float32"},
	{"Softmax", "", "{3, 4}", "[3, 4]", "[4, 1]", "float32"},
	{"Softmax", "dim=-1", "{3, 4 : 1, 3}", "[3, 4]", "[4, 1]", "float32"},
	{"LogSoftmax", "1", "{3, 4}", "[3, 4]", "[4, 1]", "float32"},
	{"Softmin", "1", "int64{3, 4}", "[3, 4]", "[4, 1]", "int64"},
	{"Softmax2d", "", "{2, 3, 4}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"GLU", "", "{3, 4}", "[3, 2]", "[2, 1]", "float32"},
	{"GLU", "0", "{4, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"PReLU", "", "{2, 3, 4}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"PReLU", "3", "{2, 3, 4}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"PReLU", "num_parameters=2, dtype='float64'", "float64{5, 2}", "[5, 2]", "[2, 1]", "float64"},
};

ParameterizedTestParameters(nn_activation, modules_follow_pytorch) { return ROWS(modules); }

ParameterizedTest(const module_row *r, nn_activation, modules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_module(r);
}

static const module_error_row module_errors[] = {
	{"PReLU", "4", "{2, 3, 4}",
	 "Mismatch of parameter numbers and input channel size. Found parameter numbers = 4 and channel size = 3."},
	{"PReLU", "3", "float64{2, 3}", "prelu: Type promoting not supported. Got Double and Float"},
	{"Hardtanh", "1.0, 0.0", "{3}", "assert self.max_val > self.min_val"},
	{"Hardtanh", "max_value=-2.0", "{3}", "assert self.max_val > self.min_val"},
	{"Softmax2d", "", "{3}", "Softmax2d: expected input to be 3D or 4D, got 1D instead"},
	{"GLU", "", "{3, 5}", "Halving dimension must be even, but dimension 1 is size 5"},
	{"GELU", "approximate='fast'", "{3}", "approximate argument must be either none or tanh."},
	{"Softmax", "2", "{3, 4}", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
	{"ReLU6", "", "bool{3}", "Bool inputs not supported for hardtanh"},
};

ParameterizedTestParameters(nn_activation, errors_are_pytorch_s) { return ROWS(module_errors); }

ParameterizedTest(const module_error_row *r, nn_activation, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_module_error(r);
}

Test(nn_activation, prelu_owns_a_weight_of_num_parameters)
{
	ti_module *m;
	ASSERT_STATUS(run_module("PReLU", "num_parameters=8", "{2, 8, 5}", &m), TI_OK, err);
	ASSERT_INT(m->tensor_count, 1);
	EXPECT_STR(m->tensors[0].name, "weight");
	cr_expect(m->tensors[0].trainable && !m->tensors[0].buffer, "weight is a parameter");
	expect_tensor("PReLU.weight", m->tensors[0].tensor, "[8]", "[1]", "float32");
	EXPECT_STR(flops_text(), "80");
}

Test(nn_activation, a_module_counts_what_its_operator_counts)
{
	ti_module *m;
	ASSERT_STATUS(run_module("Softmax", "dim=1", "{2, 5}", &m), TI_OK, err);
	EXPECT_STR(flops_text(), "30");
	cr_expect(call.counted && !call.uncounted_part, "Softmax is counted");
	ASSERT_STATUS(run_module("ReLU", "", "{N, 4}", &m), TI_OK, err);
	EXPECT_STR(flops_text(), "4*N");
	EXPECT_INT(m->tensor_count, 0);
}

Test(nn_activation, constructor_arguments_bind_as_in_python)
{
	ti_module *m;
	EXPECT_STATUS(run_module("ReLU", "True, False", "{3}", &m), TI_E_CORRUPT, err);
	EXPECT_STATUS(run_module("Threshold", "0.1", "{3}", &m), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "'value'");
	EXPECT_STATUS(run_module("LeakyReLU", "slope=0.1", "{3}", &m), TI_E_CORRUPT, err);
}

/* ---- dropout ---- */

static const module_row dropouts[] = {
	{"Dropout", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Dropout", "0.1, inplace=True", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"Dropout", "p=0.0", "int64{3}", "[3]", "[1]", "int64"},
	{"Dropout1d", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
	{"Dropout1d", "", "{2, 3, 4}", "[2, 3, 4]", "[12, 4, 1]", "float32"},
	{"Dropout2d", "", "{2, 3, 4, 5}", "[2, 3, 4, 5]", "[60, 20, 5, 1]", "float32"},
	{"Dropout2d", "", "{3}", "[3]", "[1]", "float32"},
	{"Dropout3d", "0.2", "{2, 3, 4, 5, 6}", "[2, 3, 4, 5, 6]", "[360, 120, 30, 6, 1]", "float32"},
	{"AlphaDropout", "", "{B, T}", "[B, T]", "[T, 1]", "float32"},
	{"FeatureAlphaDropout", "", "{2, 3}", "[2, 3]", "[3, 1]", "float32"},
};

ParameterizedTestParameters(nn_dropout, modules_are_the_identity_in_eval) { return ROWS(dropouts); }

ParameterizedTest(const module_row *r, nn_dropout, modules_are_the_identity_in_eval, .init = setup, .fini = teardown)
{
	check_module(r);
	cr_expect(output(0) == call.in.args[0].as.tensor, "the input itself comes out");
	cr_expect(call.counted && ti_dim_is_int(call.flops) && call.flops.value == 0, "counted as free");
}

static const module_error_row dropout_errors[] = {
	{"Dropout", "1.5", "{3}", "dropout probability has to be between 0 and 1, but got 1.5"},
	{"Dropout2d", "-0.5", "{3}", "dropout probability has to be between 0 and 1, but got -0.5"},
	{"Dropout1d", "", "{1, 2, 3, 4}",
	 "dropout1d: Expected 2D or 3D input, but received a 4D input. Note that dropout1d exists to provide channel-wise "
	 "dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
	 "inputs)."},
};

ParameterizedTestParameters(nn_dropout, errors_are_pytorch_s) { return ROWS(dropout_errors); }

ParameterizedTest(const module_error_row *r, nn_dropout, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_module_error(r);
}
