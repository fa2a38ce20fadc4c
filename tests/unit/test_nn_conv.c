/*
 * test_nn_conv.c - Conv1d/2d/3d and ConvTranspose1d/2d/3d (src/nn/conv.c).
 *
 * Parameter shapes, outputs and messages were read from PyTorch 1.13
 * modules (torch.nn.Conv2d(..., device='meta'), and on the CPU for the
 * functional checks).
 */
#include "ops_cases.h"

TestSuite(nn_conv, .init = setup, .fini = teardown);

/* ---- parameters ---- */

static const param_row params[] = {
	{"Conv2d", "3, 8, 3", "[8, 3, 3, 3]", "[8]"},
	{"Conv2d", "4, 8, (3, 5), groups=2, bias=False", "[8, 2, 3, 5]", "None"},
	{"Conv2d", "in_channels=3, out_channels=8, kernel_size=3, padding='same'", "[8, 3, 3, 3]", "[8]"},
	{"Conv1d", "3, 8, 5", "[8, 3, 5]", "[8]"},
	{"Conv3d", "3, 8, 3", "[8, 3, 3, 3, 3]", "[8]"},
	{"ConvTranspose2d", "4, 6, 3, groups=2", "[4, 3, 3, 3]", "[6]"},
	{"ConvTranspose1d", "4, 3, 3, bias=False", "[4, 3, 3]", "None"},
	{"ConvTranspose3d", "4, 3, (1, 2, 3)", "[4, 3, 1, 2, 3]", "[3]"},
};

ParameterizedTestParameters(nn_conv, parameters_have_pytorch_s_names_and_shapes)
{
	return ROWS(params);
}

ParameterizedTest(const param_row *r, nn_conv, parameters_have_pytorch_s_names_and_shapes, .init = setup,
                  .fini = teardown)
{
	check_params(r);
}

/* ---- forward ---- */

/* Criterion runs each row in a new process: rows hold their text, not pointers. */
typedef struct forward_row {
	char type[20], ctor[80], args[64];
	char shape[48], macs[24];
} forward_row;

static const forward_row forwards[] = {
	{"Conv2d", "3, 8, 3, stride=2, padding=1", "{1, 3, 8, 8}", "[1, 8, 4, 4]", "3456"},
	{"Conv2d", "3, 8, 3, bias=False", "{3, 8, 8}", "[8, 6, 6]", "7776"},
	{"Conv2d", "3, 8, (4, 3), padding='same'", "{1, 3, 8, 7}", "[1, 8, 8, 7]", "16128"},
	{"Conv2d", "4, 4, 3, padding=1, padding_mode='reflect'", "{1, 4, 8, 8}", "[1, 4, 8, 8]", "9216"},
	{"Conv2d", "4, 4, (4, 3), padding='same', padding_mode='circular'", "{1, 4, 8, 8}", "[1, 4, 8, 8]", "12288"},
	{"Conv1d", "3, 8, 5, padding=2", "{2, 3, T}", "[2, 8, T]", "240*T"},
	{"Conv3d", "3, 8, 3, padding=1", "{1, 3, 4, 4, 4}", "[1, 8, 4, 4, 4]", "41472"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "{1, 4, 8, 8}", "[1, 3, 17, 17]", "6912"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "{1, 4, 8, 8}, output_size=[18, 18]", "[1, 3, 18, 18]", "6912"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "{1, 4, 8, 8}, [1, 3, 18, 18]", "[1, 3, 18, 18]", "6912"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "{4, 8, 8}, [18, 18]", "[3, 18, 18]", "6912"},
	{"ConvTranspose1d", "4, 3, 4, stride=2, padding=1", "{1, 4, T}", "[1, 3, 2*T]", "48*T"},
};

ParameterizedTestParameters(nn_conv, forward_follows_pytorch)
{
	return ROWS(forwards);
}

ParameterizedTest(const forward_row *r, nn_conv, forward_follows_pytorch, .init = setup, .fini = teardown)
{
	char what[192];
	snprintf(what, sizeof(what), "%s(%s)(%s)", r->type, r->ctor, r->args);
	ti_status st = call_module(module(r->type, r->ctor), r->args);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	expect_tensor(what, output(0), r->shape, NULL, NULL);
	cr_expect(!strcmp(dim_text(call.macs), r->macs), "%s: MACs %s, want %s", what, dim_text(call.macs), r->macs);
}

/* ---- errors ---- */

/* no input: the constructor fails */
static const module_error_row errors[] = {
	{"Conv2d", "3, 8, 3, groups=2", "", "in_channels must be divisible by groups"},
	{"Conv2d", "4, 6, 3, groups=4", "", "out_channels must be divisible by groups"},
	{"Conv2d", "4, 4, 3, groups=0", "", "groups must be a positive integer"},
	{"Conv2d", "4, 4, 3, padding='foo'", "", "Invalid padding string 'foo', should be one of {'valid', 'same'}"},
	{"Conv2d", "4, 4, 3, stride=2, padding='same'", "", "padding='same' is not supported for strided convolutions"},
	{"Conv2d", "4, 4, 3, padding_mode='foo'", "",
	 "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got padding_mode='foo'"},
	{"ConvTranspose2d", "4, 4, 3, padding_mode='reflect'", "", "Only \"zeros\" padding mode is supported for ConvTranspose2d"},
	{"Conv2d", "3, 64, 7", "{1, 4, 224, 224}",
	 "Given groups=1, weight of size [64, 3, 7, 7], expected input[1, 4, 224, 224] to have 3 channels, but got 4 channels instead"},
	{"Conv2d", "3, 8, 3", "{3, 224}", "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 224]"},
	{"Conv2d", "3, 8, 3", "{1, 3, 2, 2}",
	 "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"},
	{"Conv2d", "3, 8, (3, 3, 3)", "{1, 3, 8, 8}",
	 "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, but got stride=[1, 1]"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "{1, 4, 8, 8}, output_size=[20, 18]",
	 "requested an output size of [20, 18], but valid sizes range from [17, 17] to [18, 18] (for an input of torch.Size([8, 8]))"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "{1, 4, 8, 8}, output_size=[1, 2, 20]",
	 "ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 3)"},
};

ParameterizedTestParameters(nn_conv, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const module_error_row *r, nn_conv, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_module_error(r);
}

/* ---- details ---- */

Test(nn_conv, the_bias_adds_one_flop_per_output_element)
{
	ASSERT_STATUS(call_module(module("Conv2d", "3, 8, 3"), "{1, 3, 8, 8}"), TI_OK, err);
	EXPECT_STR(dim_text(call.macs), "7776");
	EXPECT_STR(dim_text(call.flops), "15840");
}

Test(nn_conv, a_reflect_padding_larger_than_the_input_fails_in_pad)
{
	EXPECT_STATUS(call_module(module("Conv1d", "2, 2, 3, padding=4, padding_mode='reflect'"), "{1, 2, 3}"), TI_E_SHAPE, err);
}
