/*
 * test_ops_conv.c - convolutions (src/ops/conv.c).
 *
 * Shapes, strides and messages were read from PyTorch 1.13 on the CPU (its
 * meta kernels check little) and the meta device (layouts); where 2.x words
 * a message differently, the row follows 2.x's Convolution.cpp.
 */
#include "ops_cases.h"

TestSuite(ops_conv, .init = setup, .fini = teardown);

/* ---- shapes and counts ---- */

static const macs_row shapes[] = {
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}", "[1, 4, 6, 6]", "", "3888", "7776"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, {4}, stride=2, padding=1", "[1, 4, 4, 4]", "", "1728", "3520"},
	{"conv2d", "{3, 8, 8}, {4, 3, 3, 3}", "[4, 6, 6]", "", "3888", "7776"},
	{"conv2d", "{1, 4, 8, 8}, {6, 2, 3, 3}, groups=2", "[1, 6, 6, 6]", "", "3888", "7776"},
	{"conv2d", "{2, 3, 20, 20}, {4, 3, 3, 3}, dilation=2, stride=3, padding=2", "[2, 4, 7, 7]", "", "10584", "21168"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, stride=[2]", "[1, 4, 3, 3]", "", "972", "1944"},
	{"conv2d", "{1, 3, 8, 7}, {4, 3, 4, 3}, padding='same'", "[1, 4, 8, 7]", "", "8064", "16128"},
	{"conv2d", "{1, 3, 8, 7}, {4, 3, 4, 3}, padding='same', dilation=2", "[1, 4, 8, 7]", "", "8064", "16128"},
	{"conv2d", "{1, 3, 2, 2}, {4, 3, 5, 5}, padding='same'", "[1, 4, 2, 2]", "", "1200", "2400"},
	{"conv2d", "{1, 3, 8, 7}, {4, 3, 4, 3}, padding='valid'", "[1, 4, 5, 5]", "", "3600", "7200"},
	{"conv2d", "{0, 3, 8, 8}, {4, 3, 3, 3}", "[0, 4, 6, 6]", "", "0", "0"},
	{"conv2d", "{1, 0, 8, 8}, {4, 0, 3, 3}", "[1, 0, 6, 6]", "", "0", "0"},
	{"conv2d", "{1, 3, 3, 3}, {4, 3, 3, 3}, stride=5", "[1, 4, 1, 1]", "", "108", "216"},
	{"conv2d", "{2, 3, 8, 8 : 192, 1, 24, 3}, {4, 3, 3, 3}, padding=1", "[2, 4, 8, 8]", "[256, 1, 32, 4]", "13824", "27648"},
	{"conv2d", "{N, 3, H, W}, {8, 3, 3, 3}, stride=2, padding=1", "[N, 8, (H - 1)//2 + 1, (W - 1)//2 + 1]", "",
	 "216*N*((H - 1)//2)*((W - 1)//2) + 216*N*((H - 1)//2) + 216*N*((W - 1)//2) + 216*N",
	 "432*N*((H - 1)//2)*((W - 1)//2) + 432*N*((H - 1)//2) + 432*N*((W - 1)//2) + 432*N"},
	{"conv1d", "{2, 3, 20}, {4, 3, 3}, dilation=2, stride=3, padding=2", "[2, 4, 7]", "", "504", "1008"},
	{"conv1d", "{3, 20}, {4, 3, 3}", "[4, 18]", "", "648", "1296"},
	{"conv1d", "{2, 3, T}, {4, 3, 3}, padding='same'", "[2, 4, T]", "", "72*T", "144*T"},
	{"conv3d", "{2, 3, 5, 6, 7}, {4, 3, 3, 3, 3}, padding=1", "[2, 4, 5, 6, 7]", "", "136080", "272160"},
	{"conv3d", "{3, 5, 6, 7}, {4, 3, 3, 3, 3}", "[4, 3, 4, 5]", "", "19440", "38880"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, stride=2, padding=1, output_padding=1", "[1, 3, 16, 16]", "",
	 "6912", "13824"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, {6}, groups=2", "[1, 6, 10, 10]", "", "6912", "14424"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, output_padding=1, dilation=2", "[1, 3, 13, 13]", "", "6912",
	 "13824"},
	{"conv_transpose2d", "{4, 8, 8}, {4, 3, 3, 3}", "[3, 10, 10]", "", "6912", "13824"},
	{"conv_transpose2d", "{0, 4, 8, 8}, {4, 3, 3, 3}", "[0, 3, 10, 10]", "", "0", "0"},
	{"conv_transpose1d", "{2, 4, 8}, {4, 3, 3}, stride=3, dilation=2", "[2, 3, 26]", "", "576", "1152"},
	{"conv_transpose3d", "{2, 4, 3, 4, 5}, {4, 3, 3, 3, 3}, stride=2", "[2, 3, 7, 9, 11]", "", "38880", "77760"},
	{"conv_transpose1d", "{2, 4, T}, {4, 3, 3}, stride=2, padding=1, output_padding=1", "[2, 3, 2*T]", "", "72*T",
	 "144*T"},
};

ParameterizedTestParameters(ops_conv, shapes_and_counts_follow_pytorch)
{
	return ROWS(shapes);
}

ParameterizedTest(const macs_row *r, ops_conv, shapes_and_counts_follow_pytorch, .init = setup, .fini = teardown)
{
	check_macs(r);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"conv2d", "{1, 4, 224, 224}, {64, 3, 7, 7}",
	 "Given groups=1, weight of size [64, 3, 7, 7], expected input[1, 4, 224, 224] to have 3 channels, but got 4 channels instead"},
	{"conv2d", "{4, 8, 8}, {4, 3, 3, 3}",
	 "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 4, 8, 8] to have 3 channels, but got 4 channels instead"},
	{"conv2d", "{3, 224}, {4, 3, 3, 3}",
	 "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 224]"},
	{"conv2d", "{1, 1, 3, 8, 8}, {4, 3, 3, 3}",
	 "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [1, 1, 3, 8, 8]"},
	{"conv1d", "{20}, {4, 3, 3}", "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [20]"},
	{"conv_transpose2d", "{8, 8}, {4, 3, 3, 3}",
	 "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: [8, 8]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3}",
	 "expected stride to be a single integer value or a list of 1 values to match the convolution dimensions, but got stride=[1, 1]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3, 3}",
	 "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, but got stride=[1, 1]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3, 3}, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1]",
	 "expected output_padding to be a single integer value or a list of 3 values to match the convolution dimensions, but got output_padding=[0, 0]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, stride=(1, 1, 1)",
	 "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, padding=(1, 1, 1)",
	 "expected padding to be a single integer value or a list of 2 values to match the convolution dimensions, but got padding=[1, 1, 1]"},
	{"conv1d", "{1, 3, 8}, {4, 3, 3, 3}",
	 "Expected 4-dimensional input for 4-dimensional weight [4, 3, 3, 3], but got 3-dimensional input of size [1, 3, 8] instead"},
	{"conv2d", "{1, 4, 8, 8}, {4, 3}", "weight should have at least three dimensions"},
	{"conv2d", "{1, 4, 8, 8}, {4, 3}, padding='same'", "weight should have at least three dimensions"},
	{"conv2d", "{1, 3, 2, 2}, {4, 3, 3, 3}",
	 "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"},
	{"conv2d", "{1, 3, 2, 2}, {4, 3, 3, 3}, padding=(1, 0)",
	 "Calculated padded input size per channel: (4 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"},
	{"conv1d", "{1, 3, 2}, {4, 3, 3}",
	 "Calculated padded input size per channel: (2). Kernel size: (3). Kernel size can't be greater than actual input size"},
	{"conv3d", "{1, 3, 2, 5, 5}, {4, 3, 3, 3, 3}",
	 "Calculated padded input size per channel: (2 x 5 x 5). Kernel size: (3 x 3 x 3). Kernel size can't be greater than actual input size"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, {5}",
	 "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [5] instead"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, {4, 1}",
	 "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, but got bias of size [4, 1] instead"},
	{"conv2d", "{1, 4, 8, 8}, {5, 2, 3, 3}, groups=2",
	 "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[5, 2, 3, 3]] instead"},
	{"conv2d", "{1, 4, 8, 8}, {2, 2, 3, 3}, groups=4",
	 "Given groups=4, expected weight to be at least 4 at dimension 0, but got weight of size [2, 2, 3, 3] instead"},
	{"conv2d", "{1, 3, 8, 8}, {0, 3, 3, 3}",
	 "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of size [0, 3, 3, 3] instead"},
	{"conv2d", "{1, 5, 8, 8}, {6, 2, 3, 3}, groups=2",
	 "Given groups=2, weight of size [6, 2, 3, 3], expected input[1, 5, 8, 8] to have 4 channels, but got 5 channels instead"},
	{"conv2d", "{1, 4, 8, 8}, {2, 2, 3, 3}, groups=0", "non-positive groups is not supported"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, stride=0", "non-positive stride is not supported"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, padding=-1", "negative padding is not supported"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, padding=-1, stride=0", "negative padding is not supported"},
	{"conv2d", "{1, 3, 8, 7}, {4, 3, 4, 3}, padding='same', stride=2",
	 "padding='same' is not supported for strided convolutions"},
	{"conv2d", "{1, 3, 8, 7}, {4, 3, 4, 3}, padding='foo'", "Invalid padding string: 'foo'"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3, 3}, padding='same'",
	 "Expected 5-dimensional input for 5-dimensional weight[4, 3, 3, 3, 3], but got 4-dimensional input of size [1, 3, 8, 8] instead"},
	{"conv2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, padding='same'",
	 "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 4, 8, 8] to have 3 channels, but got 4 channels instead"},
	{"conv2d", "{1, 3, 0, 8}, {4, 3, 3, 3}, padding=2",
	 "Only zero batch or zero channel inputs are supported, but got input shape: [1, 3, 0, 8]"},
	{"conv1d", "{1, 3, 0}, {4, 3, 3}, padding=2",
	 "Only zero batch or zero channel inputs are supported, but got input shape: [1, 3, 1, 0]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, float64{4}", "Input type (float) and bias type (double) should be the same"},
	{"conv2d", "{1, 3, 8, 8}, float64{4, 3, 3, 3}",
	 "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same"},
	{"conv1d", "{1, 3, 8}, {4, 3, 3}, float64{4}",
	 "Input type (torch.FloatTensor) and bias type (torch.DoubleTensor) should be the same"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}, dilation=0", "dilation should be greater than zero, but got [0, 0]"},
	{"conv3d", "{1, 3, 8, 8, 8}, {4, 3, 3, 3, 3}, dilation=0", "dilation should be greater than zero, but got [0, 0, 0]"},
	{"conv1d", "{1, 3, 8}, {4, 3, 3}, dilation=0", "dilation should be greater than zero, but got [1, 0]"},
	{"conv2d", "{1, 3, 8, 8}, {4, 3, 0, 3}", "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 3"},
	{"conv1d", "{1, 3, 8}, {4, 3, 0}", "kernel size should be greater than zero, but got kernel_height: 1 kernel_width: 0"},
	{"conv3d", "{1, 3, 8, 8, 8}, {4, 3, 0, 3, 3}", "kernel size should be greater than zero, but got: 0 x 3 x 3 (TxHxW)"},
	/* transposed */
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, groups=3",
	 "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [[4, 3, 3, 3]] instead"},
	{"conv_transpose2d", "{1, 5, 8, 8}, {4, 3, 3, 3}",
	 "Given transposed=1, weight of size [4, 3, 3, 3], expected input[1, 5, 8, 8] to have 4 channels, but got 5 channels instead"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, {4}",
	 "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 3 elements, but got bias of size [4] instead"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, output_padding=-1", "negative output_padding is not supported"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, output_padding=1",
	 "output padding must be smaller than either stride or dilation, but got output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1"},
	{"conv_transpose1d", "{1, 4, 8}, {4, 3, 3}, output_padding=1",
	 "output padding must be smaller than either stride or dilation, but got output_padding_height: 0 output_padding_width: 1 stride_height: 1 stride_width: 1 dilation_height: 1 dilation_width: 1"},
	{"conv_transpose3d", "{1, 4, 8, 8, 8}, {4, 3, 3, 3, 3}, output_padding=1",
	 "output padding must be smaller than either stride or dilation, but got output_padding_depth: 1 output_padding_height: 1 output_padding_width: 1 stride_depth: 1 stride_height: 1 stride_width: 1 dilation_depth: 1 dilation_height: 1 dilation_width: 1"},
	{"conv_transpose2d", "{1, 4, 2, 2}, {4, 3, 3, 3}, padding=3",
	 "Given input size per channel: (2 x 2). Calculated output size per channel: (-2 x -2). Output size is too small"},
	{"conv_transpose1d", "{1, 4, 2}, {4, 3, 3}, padding=3",
	 "Given input size per channel: (1 x 2). Calculated output size per channel: (1 x -2). Output size is too small"},
	{"conv_transpose3d", "{1, 4, 2, 2, 2}, {4, 3, 3, 3, 3}, padding=3",
	 "Given input size per channel: (2 x 2 x 2). Calculated output size per channel: (-2 x -2 x -2). Output size is too small"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 3, 3}, dilation=0",
	 "dilation should be greater than zero, but got dilation_height: 0, dilation_width: 0"},
	{"conv_transpose1d", "{1, 4, 8}, {4, 3, 3}, dilation=0",
	 "dilation should be greater than zero, but got dilation_height: 1, dilation_width: 0"},
	{"conv_transpose3d", "{1, 4, 8, 8, 8}, {4, 3, 3, 3, 3}, dilation=0",
	 "dilation should be greater than zero, but got dilation_depth: 0, dilation_height: 0, dilation_width: 0"},
	{"conv_transpose2d", "{1, 4, 8, 8}, {4, 3, 0, 3}",
	 "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 3"},
	{"conv_transpose2d", "{1, 4, 0, 8}, {4, 3, 3, 3}",
	 "Only zero batch or zero channel inputs are supported, but got input shape: [1, 4, 0, 8]"},
};

ParameterizedTestParameters(ops_conv, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_conv, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- details ---- */

Test(ops_conv, the_output_keeps_the_input_dtype_and_requires_grad_with_the_weight)
{
	ASSERT_STATUS(run("conv2d", "float64{1, 3, 8, 8}, grad float64{4, 3, 3, 3}"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_FLOAT64);
	cr_expect(output(0)->requires_grad);
}

Test(ops_conv, a_symbolic_input_is_assumed_to_hold_the_kernel)
{
	ASSERT_STATUS(run("conv1d", "{1, 3, T}, {4, 3, 5}"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[1, 4, T - 4]");
	ASSERT_INT(sym.assumption_count, 1);
	EXPECT_CONTAINS(sym.assumptions[0], "T");
}

Test(ops_conv, conv_functions_are_found_as_torch_nn_functional)
{
	ASSERT_STATUS(run("torch.nn.functional.conv2d", "{1, 3, 8, 8}, {4, 3, 3, 3}"), TI_OK, err);
	EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), "[1, 4, 6, 6]");
}
