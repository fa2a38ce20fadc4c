/*
 * test_nn_conv.c - Conv1d/2d/3d and ConvTranspose1d/2d/3d (src/nn/conv.c).
 *
 * Parameter shapes, outputs and messages were read from PyTorch 1.13
 * modules (torch.nn.Conv2d(..., device='meta'), and on the CPU for the
 * functional checks).
 */
#include "args_text.h"

TestSuite(nn_conv, .init = setup, .fini = teardown);

/* ---- parameters ---- */

/* Criterion runs each row in a new process: rows hold their text, not pointers. */
typedef struct param_row {
	char type[20], ctor[80];
	char weight[32], bias[32];
} param_row;

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
	return cr_make_param_array(param_row, params, sizeof(params) / sizeof(params[0]));
}

ParameterizedTest(const param_row *r, nn_conv, parameters_have_pytorch_s_names_and_shapes, .init = setup,
                  .fini = teardown)
{
	ti_module *m;
	ti_status st = build(r->type, r->ctor, &m);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", r->type, r->ctor, ti_status_name(st), err.message);
	cr_expect(!strcmp(param_shape(m, "weight"), r->weight), "%s(%s): weight %s, want %s", r->type, r->ctor,
	          param_shape(m, "weight"), r->weight);
	cr_expect(!strcmp(param_shape(m, "bias"), r->bias), "%s(%s): bias %s, want %s", r->type, r->ctor,
	          param_shape(m, "bias"), r->bias);
}

/* ---- forward ---- */

typedef struct forward_row {
	char type[20], ctor[80], args[64];
	char shape[48], macs[24];
} forward_row;

static const forward_row forwards[] = {
	{"Conv2d", "3, 8, 3, stride=2, padding=1", "<1, 3, 8, 8>", "[1, 8, 4, 4]", "3456"},
	{"Conv2d", "3, 8, 3, bias=False", "<3, 8, 8>", "[8, 6, 6]", "7776"},
	{"Conv2d", "3, 8, (4, 3), padding='same'", "<1, 3, 8, 7>", "[1, 8, 8, 7]", "16128"},
	{"Conv2d", "4, 4, 3, padding=1, padding_mode='reflect'", "<1, 4, 8, 8>", "[1, 4, 8, 8]", "9216"},
	{"Conv2d", "4, 4, (4, 3), padding='same', padding_mode='circular'", "<1, 4, 8, 8>", "[1, 4, 8, 8]", "12288"},
	{"Conv1d", "3, 8, 5, padding=2", "<2, 3, T>", "[2, 8, T]", "240*T"},
	{"Conv3d", "3, 8, 3, padding=1", "<1, 3, 4, 4, 4>", "[1, 8, 4, 4, 4]", "41472"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "<1, 4, 8, 8>", "[1, 3, 17, 17]", "6912"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "<1, 4, 8, 8>, output_size=[18, 18]", "[1, 3, 18, 18]", "6912"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "<1, 4, 8, 8>, [1, 3, 18, 18]", "[1, 3, 18, 18]", "6912"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "<4, 8, 8>, [18, 18]", "[3, 18, 18]", "6912"},
	{"ConvTranspose1d", "4, 3, 4, stride=2, padding=1", "<1, 4, T>", "[1, 3, 2*T]", "48*T"},
};

ParameterizedTestParameters(nn_conv, forward_follows_pytorch)
{
	return cr_make_param_array(forward_row, forwards, sizeof(forwards) / sizeof(forwards[0]));
}

ParameterizedTest(const forward_row *r, nn_conv, forward_follows_pytorch, .init = setup, .fini = teardown)
{
	ti_module *m;
	ti_status st = forward(r->type, r->ctor, r->args, &m);
	cr_assert(st == TI_OK, "%s(%s)(%s): got %s (\"%s\")", r->type, r->ctor, r->args, ti_status_name(st), err.message);
	const char *shape = ti_meta_shape_str(&ctx, output(0));
	cr_expect(!strcmp(shape, r->shape), "%s(%s)(%s): shape %s, want %s", r->type, r->ctor, r->args, shape, r->shape);
	cr_expect(!strcmp(dim_text(call.macs), r->macs), "%s(%s)(%s): MACs %s, want %s", r->type, r->ctor, r->args,
	          dim_text(call.macs), r->macs);
}

/* ---- errors ---- */

typedef struct error_row {
	char type[20], ctor[80], args[64]; /* no args: the constructor fails */
	char message[TI_ERROR_MESSAGE_MAX]; /* PyTorch's */
} error_row;

static const error_row errors[] = {
	{"Conv2d", "3, 8, 3, groups=2", "", "in_channels must be divisible by groups"},
	{"Conv2d", "4, 6, 3, groups=4", "", "out_channels must be divisible by groups"},
	{"Conv2d", "4, 4, 3, groups=0", "", "groups must be a positive integer"},
	{"Conv2d", "4, 4, 3, padding='foo'", "", "Invalid padding string 'foo', should be one of {'valid', 'same'}"},
	{"Conv2d", "4, 4, 3, stride=2, padding='same'", "", "padding='same' is not supported for strided convolutions"},
	{"Conv2d", "4, 4, 3, padding_mode='foo'", "",
	 "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got padding_mode='foo'"},
	{"ConvTranspose2d", "4, 4, 3, padding_mode='reflect'", "", "Only \"zeros\" padding mode is supported for ConvTranspose2d"},
	{"Conv2d", "3, 64, 7", "<1, 4, 224, 224>",
	 "Given groups=1, weight of size [64, 3, 7, 7], expected input[1, 4, 224, 224] to have 3 channels, but got 4 channels instead"},
	{"Conv2d", "3, 8, 3", "<3, 224>", "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 224]"},
	{"Conv2d", "3, 8, 3", "<1, 3, 2, 2>",
	 "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"},
	{"Conv2d", "3, 8, (3, 3, 3)", "<1, 3, 8, 8>",
	 "expected stride to be a single integer value or a list of 3 values to match the convolution dimensions, but got stride=[1, 1]"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "<1, 4, 8, 8>, output_size=[20, 18]",
	 "requested an output size of [20, 18], but valid sizes range from [17, 17] to [18, 18] (for an input of torch.Size([8, 8]))"},
	{"ConvTranspose2d", "4, 3, 3, stride=2", "<1, 4, 8, 8>, output_size=[1, 2, 20]",
	 "ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 3)"},
};

ParameterizedTestParameters(nn_conv, errors_are_pytorch_s)
{
	return cr_make_param_array(error_row, errors, sizeof(errors) / sizeof(errors[0]));
}

ParameterizedTest(const error_row *r, nn_conv, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	ti_module *m;
	ti_status st = r->args[0] ? forward(r->type, r->ctor, r->args, &m) : build(r->type, r->ctor, &m);
	cr_expect(st == TI_E_SHAPE, "%s(%s)(%s): got %s, want a shape error", r->type, r->ctor, r->args,
	          ti_status_name(st));
	cr_expect(!strcmp(err.message, r->message), "%s(%s)(%s):\n got  \"%s\"\n want \"%s\"", r->type, r->ctor,
	          r->args, err.message, r->message);
}

/* ---- details ---- */

Test(nn_conv, the_bias_adds_one_flop_per_output_element)
{
	ti_module *m;
	ASSERT_STATUS(forward("Conv2d", "3, 8, 3", "<1, 3, 8, 8>", &m), TI_OK, err);
	EXPECT_STR(dim_text(call.macs), "7776");
	EXPECT_STR(dim_text(call.flops), "15840");
}

Test(nn_conv, a_reflect_padding_larger_than_the_input_fails_in_pad)
{
	ti_module *m;
	EXPECT_STATUS(forward("Conv1d", "2, 2, 3, padding=4, padding_mode='reflect'", "<1, 2, 3>", &m), TI_E_SHAPE, err);
}
