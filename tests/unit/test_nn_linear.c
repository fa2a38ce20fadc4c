/*
 * test_nn_linear.c - Linear, Bilinear, Identity, Flatten, Unflatten (src/nn/linear.c).
 *
 * Parameter shapes and outputs were read from PyTorch 1.13 modules built
 * on the meta device (torch.nn.Linear(..., device='meta')).
 */
#include "ops_cases.h"

TestSuite(nn_linear, .init = setup, .fini = teardown);

/* ---- parameters ---- */

static const param_row params[] = {
	{"Linear", "5, 4", "[4, 5]", "[4]"},
	{"Linear", "in_features=5, out_features=4, bias=False", "[4, 5]", "None"},
	{"Linear", "0, 4", "[4, 0]", "[4]"},
	{"Bilinear", "5, 6, 4", "[4, 5, 6]", "[4]"},
	{"Bilinear", "5, 6, 4, bias=False", "[4, 5, 6]", "None"},
	{"Identity", "", "None", "None"},
	{"Flatten", "", "None", "None"},
	{"Unflatten", "1, (3, 4)", "None", "None"},
};

ParameterizedTestParameters(nn_linear, parameters_have_pytorch_s_names_and_shapes)
{
	return ROWS(params);
}

ParameterizedTest(const param_row *r, nn_linear, parameters_have_pytorch_s_names_and_shapes, .init = setup,
                  .fini = teardown)
{
	const ti_module *m = check_params(r);
	for (int i = 0; i < m->tensor_count; i++)
		cr_expect(m->tensors[i].trainable && m->tensors[i].tensor->requires_grad, "%s: %s is a parameter", r->type,
		          m->tensors[i].name);
}

/* ---- forward ---- */

/* Criterion runs each row in a new process: rows hold their text, not pointers. */
typedef struct forward_row {
	char type[16], ctor[48], args[48];
	char shape[32], macs[24], flops[24];
} forward_row;

static const forward_row forwards[] = {
	{"Linear", "5, 4", "{2, 3, 5}", "[2, 3, 4]", "120", "264"},
	{"Linear", "5, 4, bias=False", "{N, 5}", "[N, 4]", "20*N", "40*N"},
	{"Linear", "5, 4", "{5}", "[4]", "20", "44"},
	{"Bilinear", "5, 6, 4", "{3, 5}, {3, 6}", "[3, 4]", "360", "732"},
	{"Identity", "", "{2, 3}", "[2, 3]", "0", "0"},
	{"Flatten", "", "{2, 3, 4, 5}", "[2, 60]", "0", "0"},
	{"Flatten", "0, 2", "{2, 3, 4, 5}", "[24, 5]", "0", "0"},
	{"Unflatten", "1, (3, 4)", "{2, 12, 5}", "[2, 3, 4, 5]", "0", "0"},
	{"Unflatten", "-1, [2, -1]", "{2, 12}", "[2, 2, 6]", "0", "0"},
};

ParameterizedTestParameters(nn_linear, forward_follows_pytorch)
{
	return ROWS(forwards);
}

ParameterizedTest(const forward_row *r, nn_linear, forward_follows_pytorch, .init = setup, .fini = teardown)
{
	char what[160];
	snprintf(what, sizeof(what), "%s(%s)(%s)", r->type, r->ctor, r->args);
	ti_status st = call_module(module(r->type, r->ctor), r->args);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	expect_tensor(what, output(0), r->shape, NULL, NULL);
	expect_counts(what, r->macs, r->flops);
}

/* ---- errors ---- */

static const module_error_row errors[] = {
	{"Linear", "5, 4", "{2, 6}", "mat1 and mat2 shapes cannot be multiplied (2x6 and 5x4)"},
	{"Linear", "5, 4", "{2, 3, 6}", "mat1 and mat2 shapes cannot be multiplied (6x6 and 5x4)"},
	{"Linear", "5, 4, bias=False", "{2, 3, 6}", "mat1 and mat2 shapes cannot be multiplied (6x6 and 5x4)"},
	{"Linear", "5, 4", "float64{2, 5}", "mat1 and mat2 must have the same dtype, but got Double and Float"},
	{"Bilinear", "5, 6, 4", "{3, 5}, {3, 7}", "bilinear(): input2 size does not match weight size: got 7 but expected 6"},
	{"Flatten", "2, 1", "{2, 3, 4}", "flatten() has invalid args: start_dim cannot come after end_dim"},
	{"Unflatten", "1, (3, 5)", "{2, 12}",
	 "unflatten: Provided sizes [3, 5] don't multiply up to the size of dim 1 (12) in the input tensor"},
};

ParameterizedTestParameters(nn_linear, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const module_error_row *r, nn_linear, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_module_error(r);
}

/* ---- details ---- */

Test(nn_linear, the_factory_dtype_sets_the_parameters_dtype)
{
	const ti_module *m = module("Linear", "5, 4, dtype='float64'");
	EXPECT_INT(ti_module_tensor_get(m, "weight")->dtype, TI_DT_FLOAT64);
	EXPECT_INT(ti_module_tensor_get(m, "bias")->dtype, TI_DT_FLOAT64);
}

Test(nn_linear, a_negative_size_makes_no_parameter)
{
	EXPECT_STATUS(build_module("Linear", "-1, 4", NULL), TI_E_SHAPE, err);
	EXPECT_CONTAINS(err.message, "negative dimension -1");
}

Test(nn_linear, identity_returns_its_input_itself)
{
	ASSERT_STATUS(call_module(module("Identity", ""), "{2, 3 : 1, 2}"), TI_OK, err);
	EXPECT_STR(ti_shape_str(&ctx, 2, output(0)->stride), "[1, 2]");
}

Test(nn_linear, a_symbolic_constructor_size_is_refused)
{
	EXPECT_STATUS(build_module("Linear", "N, 4", NULL), TI_E_CORRUPT, err);
}
