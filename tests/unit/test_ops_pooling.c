/*
 * test_ops_pooling.c - pools (src/ops/pooling.c).
 *
 * Shapes and messages were read from PyTorch 1.13 on the CPU; where 2.x
 * words a message differently (Pool.h's "effective kernel size", the 1-d
 * max pool of max_pool1d_with_indices), the row follows 2.x's source.
 */
#include "ops_cases.h"

TestSuite(ops_pooling, .init = setup, .fini = teardown);

/* ---- shapes and counts ---- */

/* Criterion runs each row in a new process: rows hold their text, not pointers. */
typedef struct shape_row {
	char op[24], args[96];
	char shape[48], flops[96];
	int outputs; /* 2 with return_indices */
} shape_row;

static const shape_row shapes[] = {
	{"max_pool2d", "{1, 3, 8, 8}, 2", "[1, 3, 4, 4]", "192", 1},
	{"max_pool2d", "{1, 3, 7, 7}, 2, ceil_mode=True", "[1, 3, 4, 4]", "192", 1},
	{"max_pool2d", "{1, 3, 6, 6}, 3, 2, 1, ceil_mode=True", "[1, 3, 4, 4]", "432", 1},
	{"max_pool2d", "{1, 3, 5, 5}, 2, 2, 1, ceil_mode=True", "[1, 3, 3, 3]", "108", 1},
	{"max_pool2d", "{1, 3, 8, 8}, 2, return_indices=True", "[1, 3, 4, 4]", "192", 2},
	{"max_pool2d", "{1, 3, 9, 9}, 3, 1, 1, 2", "[1, 3, 7, 7]", "1323", 1},
	{"max_pool2d", "{0, 3, 8, 8}, 2", "[0, 3, 4, 4]", "0", 1},
	{"max_pool2d", "{3, 8, 8}, (2, 4), stride=(1, 2)", "[3, 7, 3]", "504", 1},
	{"max_pool2d", "{N, 64, H, W}, 3, 2, 1", "[N, 64, (H - 1)//2 + 1, (W - 1)//2 + 1]",
	 "576*N*((H - 1)//2)*((W - 1)//2) + 576*N*((H - 1)//2) + 576*N*((W - 1)//2) + 576*N", 1},
	{"max_pool1d", "{1, 3, 9}, 3", "[1, 3, 3]", "27", 1},
	{"max_pool1d", "{3, 9}, 3, return_indices=True", "[3, 3]", "27", 2},
	{"max_pool1d", "{2, 4, T}, 2", "[2, 4, T//2]", "16*(T//2)", 1},
	{"max_pool3d", "{1, 3, 8, 8, 8}, 2", "[1, 3, 4, 4, 4]", "1536", 1},
	{"max_pool3d", "{3, 8, 8, 8}, (1, 2, 2)", "[3, 8, 4, 4]", "1536", 1},
	{"avg_pool2d", "{1, 3, 8, 8}, 3, 2, 1, ceil_mode=True", "[1, 3, 5, 5]", "675", 1},
	{"avg_pool2d", "{1, 3, 8, 8}, 2, divisor_override=3", "[1, 3, 4, 4]", "192", 1},
	{"avg_pool1d", "{1, 3, 8}, 3, 2, 1, ceil_mode=True", "[1, 3, 5]", "45", 1},
	{"avg_pool3d", "{1, 3, 8, 8, 8}, 3, 2, 1", "[1, 3, 4, 4, 4]", "5184", 1},
	{"adaptive_avg_pool2d", "{1, 3, 8, 8}, (3, 5)", "[1, 3, 3, 5]", "270", 1},
	{"adaptive_avg_pool2d", "{1, 3, 8, 8}, 1", "[1, 3, 1, 1]", "192", 1},
	{"adaptive_avg_pool2d", "{8, 8}, 1", "[1, 1]", "64", 1},
	{"adaptive_avg_pool2d", "{2, 512, H, W}, (1, 1)", "[2, 512, 1, 1]", "1024*H*W", 1},
	{"adaptive_avg_pool2d", "{1, 3, 4, 4}, (8, 8)", "[1, 3, 8, 8]", "192", 1},
	{"adaptive_avg_pool1d", "{1, 3, 8}, 3", "[1, 3, 3]", "27", 1},
	{"adaptive_avg_pool1d", "{1, 3, 8}, 1", "[1, 3, 1]", "24", 1},
	{"adaptive_avg_pool3d", "{1, 3, 8, 8, 8}, (2, 3, 4)", "[1, 3, 2, 3, 4]", "1728", 1},
	{"adaptive_avg_pool3d", "{1, 3, 8, 8, 8}, 1", "[1, 3, 1, 1, 1]", "1536", 1},
	{"adaptive_max_pool2d", "{1, 3, 8, 8}, (3, 5)", "[1, 3, 3, 5]", "270", 1},
	{"adaptive_max_pool2d", "{1, 3, 8, 8}, (3, 5), return_indices=True", "[1, 3, 3, 5]", "270", 2},
	{"adaptive_max_pool1d", "{1, 3, 8}, 3", "[1, 3, 3]", "27", 1},
	{"adaptive_max_pool3d", "{1, 3, 8, 8, 8}, 2", "[1, 3, 2, 2, 2]", "1536", 1},
};

ParameterizedTestParameters(ops_pooling, shapes_and_counts_follow_pytorch)
{
	return ROWS(shapes);
}

ParameterizedTest(const shape_row *r, ops_pooling, shapes_and_counts_follow_pytorch, .init = setup, .fini = teardown)
{
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", r->op, r->args, ti_status_name(st), err.message);
	cr_assert(call.output_count == r->outputs, "%s(%s): %d outputs, want %d", r->op, r->args, call.output_count,
	          r->outputs);
	for (int i = 0; i < r->outputs; i++) {
		const ti_meta_tensor *t = output(i);
		cr_expect(!strcmp(ti_meta_shape_str(&ctx, t), r->shape), "%s(%s): output %d shape %s, want %s", r->op,
		          r->args, i, ti_meta_shape_str(&ctx, t), r->shape);
		cr_expect(ti_meta_is_contiguous(&ctx, t), "%s(%s): output %d not contiguous", r->op, r->args, i);
		EXPECT_INT(t->dtype, i ? TI_DT_INT64 : TI_DT_FLOAT32);
	}
	cr_expect(ti_dim_is_int(call.macs) && call.macs.value == 0, "%s(%s): MACs %s, want 0", r->op, r->args,
	          dim_text(call.macs));
	cr_expect(!strcmp(dim_text(call.flops), r->flops), "%s(%s): FLOPs %s, want %s", r->op, r->args,
	          dim_text(call.flops), r->flops);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"max_pool2d", "{1, 3, 8, 8}, (1, 2, 3)", "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"},
	{"max_pool2d", "{1, 3, 8, 8}, 2, (1, 2, 3)",
	 "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints"},
	{"max_pool2d", "{1, 3, 8, 8}, 2, 2, (1, 1, 1)", "max_pool2d: padding must either be a single int, or a tuple of two ints"},
	{"max_pool2d", "{1, 3, 8, 8}, 2, 2, 0, (1, 1, 1)",
	 "max_pool2d: dilation must be either a single int, or a tuple of two ints"},
	{"max_pool2d", "{1, 3, 8, 8}, 3, padding=2",
	 "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"},
	{"max_pool2d", "{1, 3, 9, 9}, 3, 1, 3, 2",
	 "pad should be at most half of effective kernel size, but got pad=3, kernel_size=3 and dilation=2"},
	{"max_pool2d", "{1, 3, 9, 9}, 3, 1, 2, 2",
	 "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2, kW = 3, kH = 3"},
	{"max_pool2d", "{1, 3, 8, 8}, 3, padding=-1", "pad must be non-negative, but got pad: -1"},
	{"max_pool2d", "{1, 3, 8, 8}, 3, stride=0", "stride should not be zero"},
	{"max_pool2d", "{1, 3, 8, 8}, 0", "stride should not be zero"},
	{"max_pool2d", "{1, 3, 8, 8}, 2, dilation=0", "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"},
	{"max_pool2d", "{1, 3, 8, 8}, 2, -1", "stride should be greater than zero, but got dH: -1 dW: -1"},
	{"max_pool2d", "{1, 3, 2, 2}, 3", "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small"},
	{"max_pool2d", "{8, 8}, 2", "non-empty 3D or 4D (batch mode) tensor expected for input"},
	{"max_pool2d", "{1, 1, 3, 8, 8}, 2", "non-empty 3D or 4D (batch mode) tensor expected for input"},
	{"max_pool2d", "{1, 0, 8, 8}, 2",
	 "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 8, 8]"},
	{"max_pool2d", "{0, 8, 8}, 2",
	 "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 8, 8]"},
	{"max_pool1d", "{1, 3, 9}, (3, 3)", "max_pool1d() argument 'kernel_size' should contain one int (got 2)"},
	{"max_pool1d", "{1, 1, 3, 9}, 3",
	 "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for max_pool1d)"},
	{"max_pool1d", "{1, 3, 2}, 3", "Given input size: (3x1x2). Calculated output size: (3x1x0). Output size is too small"},
	{"max_pool1d", "{1, 3, 9}, 3, padding=2",
	 "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"},
	{"max_pool3d", "{1, 3, 8, 8, 8}, (2, 2)", "max_pool3d: kernel_size must either be a single int, or a tuple of three ints"},
	{"max_pool3d", "{3, 8, 8}, 2", "non-empty 4D or 5D (batch mode) tensor expected for input"},
	{"max_pool3d", "{1, 3, 1, 8, 8}, 2",
	 "Given input size: (3x1x8x8). Calculated output size: (3x0x4x4). Output size is too small"},
	{"max_pool3d", "{1, 3, 8, 8, 8}, 2, padding=2",
	 "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"},
	{"max_pool3d", "{1, 0, 8, 8, 8}, 2",
	 "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to have positive length, but input has a shape of [1, 0, 8, 8, 8] and non-batch dimension 0 has length zero!"},
	{"avg_pool2d", "{1, 3, 8, 8}, (1, 2, 3)", "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints"},
	{"avg_pool2d", "{1, 3, 8, 8}, 2, divisor_override=0", "divisor must be not zero"},
	{"avg_pool2d", "{8, 8}, 2", "Dimension out of range (expected to be in range of [-2, 1], but got -3)"},
	{"avg_pool2d", "{8}, 2", "Dimension out of range (expected to be in range of [-1, 0], but got -3)"},
	{"avg_pool2d", "{1, 1, 3, 8, 8}, 2",
	 "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 1, 3, 8, 8]"},
	{"avg_pool2d", "{1, 3, 2, 2}, 3", "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small"},
	{"avg_pool1d", "{1, 1, 3, 8}, 3",
	 "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for avg_pool1d)"},
	{"avg_pool1d", "{1, 3, 8}, (3, 3)", "avg_pool1d() argument 'kernel_size' should contain one int (got 2)"},
	{"avg_pool1d", "{1, 3, 2}, 3", "Given input size: (3x1x2). Calculated output size: (3x1x0). Output size is too small"},
	{"avg_pool3d", "{1, 3, 2, 5, 5}, 3, padding=1",
	 "input image (T: 2 H: 5 W: 5) smaller than kernel size (kT: 3 kH: 3 kW: 3)"},
	{"avg_pool3d", "{3, 8, 8}, 2", "non-empty 4D or 5D (batch mode) tensor expected for input"},
	{"avg_pool3d", "{1, 3, 8, 8, 8}, (2, 2)", "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"},
	{"adaptive_avg_pool2d", "{8}, (4, 5)", "Input dimension should be at least 3"},
	{"adaptive_avg_pool2d", "{8, 8}, 2", "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [8, 8]"},
	{"adaptive_avg_pool2d", "{1, 3, 0, 8}, 2",
	 "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 3, 0, 8] with dimension 2 being empty"},
	{"adaptive_avg_pool2d", "{1, 3, 8, 8}, -2",
	 "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {-2, -2}"},
	{"adaptive_avg_pool2d", "{1, 3, 8, 8}, (1, 2, 3)", "adaptive_avg_pool2d: output_size must be 2"},
	{"adaptive_avg_pool1d", "{1, 1, 3, 8}, 3",
	 "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_avg_pool1d)"},
	{"adaptive_avg_pool1d", "{1, 3, 8}, (3, 3)", "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"},
	{"adaptive_avg_pool3d", "{3, 8, 8}, 2", "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [3, 8, 8]"},
	{"adaptive_max_pool2d", "{8, 8}, 2", "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: [8, 8]"},
	{"adaptive_max_pool2d", "{1, 3, 0, 8}, 2",
	 "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 3, 0, 8] with dimension 2 being empty"},
	{"adaptive_max_pool1d", "{1, 1, 3, 8}, 3",
	 "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)"},
	{"adaptive_max_pool1d", "{1, 3, 0}, 3",
	 "adaptive_max_pool1d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes [1, 3, 0] with dimension 2 being empty"},
	{"adaptive_max_pool3d", "{3, 8, 8}, 2", "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: [3, 8, 8]"},
};

ParameterizedTestParameters(ops_pooling, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_pooling, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- details ---- */

Test(ops_pooling, an_adaptive_average_to_one_is_a_mean_and_needs_a_float_input)
{
	EXPECT_STATUS(run("adaptive_avg_pool2d", "int64{1, 3, 8, 8}, 1"), TI_E_SHAPE, err);
	EXPECT_STR(err.message,
	           "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long");
	ASSERT_STATUS(run("adaptive_avg_pool2d", "int64{1, 3, 8, 8}, 2"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_INT64);
}

Test(ops_pooling, ceil_mode_on_a_symbolic_size_assumes_the_last_window_starts_inside)
{
	ASSERT_STATUS(run("max_pool2d", "{1, 3, H, 8}, 3, 2, 1, ceil_mode=True"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[1, 3, H//2 + 1, 5]");
	ASSERT_INT(sym.assumption_count, 1);
	EXPECT_CONTAINS(sym.assumptions[0], "H");
}

Test(ops_pooling, the_output_requires_grad_with_the_input_and_indices_do_not)
{
	ASSERT_STATUS(run("max_pool2d", "grad {1, 3, 8, 8}, 2, return_indices=True"), TI_OK, err);
	cr_expect(output(0)->requires_grad);
	cr_expect(!output(1)->requires_grad);
}
