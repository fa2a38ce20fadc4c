/*
 * test_nn_pooling.c - the pooling modules (src/nn/pooling.c).
 *
 * Outputs and messages were read from PyTorch 1.13 modules; the checks
 * themselves are the functional pools' (test_ops_pooling.c).
 */
#include "ops_cases.h"

TestSuite(nn_pooling, .init = setup, .fini = teardown);

/* Criterion runs each row in a new process: rows hold their text, not pointers. */
typedef struct forward_row {
	char type[20], ctor[64], args[32];
	char shape[32];
	int outputs;
} forward_row;

static const forward_row forwards[] = {
	{"MaxPool2d", "2", "{1, 3, 8, 8}", "[1, 3, 4, 4]", 1},
	{"MaxPool2d", "2, return_indices=True", "{1, 3, 8, 8}", "[1, 3, 4, 4]", 2},
	{"MaxPool2d", "3, 2, 1, 1, False, True", "{1, 3, 6, 6}", "[1, 3, 4, 4]", 1},
	{"MaxPool1d", "3, stride=2", "{1, 3, 9}", "[1, 3, 4]", 1},
	{"MaxPool3d", "2", "{3, 8, 8, 8}", "[3, 4, 4, 4]", 1},
	{"AvgPool2d", "3, 2, 1, ceil_mode=True", "{1, 3, 8, 8}", "[1, 3, 5, 5]", 1},
	{"AvgPool1d", "3", "{1, 3, 9}", "[1, 3, 3]", 1},
	{"AvgPool3d", "2, divisor_override=2", "{1, 3, 8, 8, 8}", "[1, 3, 4, 4, 4]", 1},
	{"AdaptiveAvgPool2d", "(2, 3)", "{1, 3, 8, 8}", "[1, 3, 2, 3]", 1},
	{"AdaptiveAvgPool2d", "1", "{N, 512, 7, 7}", "[N, 512, 1, 1]", 1},
	{"AdaptiveAvgPool1d", "4", "{1, 3, 8}", "[1, 3, 4]", 1},
	{"AdaptiveAvgPool3d", "(1, 2, 2)", "{1, 3, 4, 8, 8}", "[1, 3, 1, 2, 2]", 1},
	{"AdaptiveMaxPool2d", "(2, 3), return_indices=True", "{1, 3, 8, 8}", "[1, 3, 2, 3]", 2},
	{"AdaptiveMaxPool1d", "4", "{1, 3, 8}", "[1, 3, 4]", 1},
	{"AdaptiveMaxPool3d", "2", "{1, 3, 8, 8, 8}", "[1, 3, 2, 2, 2]", 1},
};

ParameterizedTestParameters(nn_pooling, forward_follows_pytorch)
{
	return ROWS(forwards);
}

ParameterizedTest(const forward_row *r, nn_pooling, forward_follows_pytorch, .init = setup, .fini = teardown)
{
	const ti_module *m = module(r->type, r->ctor);
	ti_status st = call_module(m, r->args);
	cr_assert(st == TI_OK, "%s(%s)(%s): got %s (\"%s\")", r->type, r->ctor, r->args, ti_status_name(st), err.message);
	cr_assert(call.output_count == r->outputs, "%s(%s): %d outputs, want %d", r->type, r->ctor, call.output_count,
	          r->outputs);
	for (int i = 0; i < r->outputs; i++)
		cr_expect(!strcmp(ti_meta_shape_str(&ctx, output(i)), r->shape), "%s(%s)(%s): output %d shape %s, want %s",
		          r->type, r->ctor, r->args, i, ti_meta_shape_str(&ctx, output(i)), r->shape);
	cr_expect(call.counted, "%s: counted", r->type);
	EXPECT_INT(m->tensor_count, 0);
}

Test(nn_pooling, the_functional_checks_apply)
{
	EXPECT_STATUS(call_module(module("MaxPool2d", "3, padding=2"), "{1, 3, 8, 8}"), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
	EXPECT_STATUS(call_module(module("AdaptiveAvgPool2d", "2"), "{8, 8}"), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [8, 8]");
}
