/*
 * test_ops_resize.c - interpolate, pixel shuffles and pad (src/ops/resize.c),
 * and the modules that call them (src/nn/resize.c).
 *
 * Expected shapes, strides and messages were read from PyTorch 1.13 on the
 * meta device; where 2.x checks or words differently (F.pad is at::pad in
 * 2.x; the anti-alias message), rows follow 2.x's source: PadNd.cpp,
 * ReflectionPad.cpp, ReplicationPadding.cpp, torch/_meta_registrations.py.
 * Calls are written as Python text (tests/unit/ops_cases.h): {1, 3, 5, 7} is
 * a float32 tensor, {1, 3, 5, 7 : 105, 1, 21, 3} a channels_last one.
 */
#include "ops_cases.h"

TestSuite(ops_resize, .init = setup, .fini = teardown);
TestSuite(nn_resize, .init = setup, .fini = teardown);

/* ---- shape rules ---- */

static const rule_row rules[] = {
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2", "[1, 3, 10, 14]", "[420, 140, 14, 1]", "float32"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=1.5", "[1, 3, 7, 10]", "[210, 70, 10, 1]", "float32"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=(2, 3)", "[1, 3, 10, 21]", "[630, 210, 21, 1]", "float32"},
	{"interpolate", "{1, 3, 5, 7}, size=(4, 4)", "[1, 3, 4, 4]", "[48, 16, 4, 1]", "float32"},
	{"interpolate", "{1, 3, 5, 7}, size=4", "[1, 3, 4, 4]", "[48, 16, 4, 1]", "float32"},
	{"interpolate", "{1, 3, 5, 7}, None, 2, 'bilinear', True", "[1, 3, 10, 14]", "[420, 140, 14, 1]", "float32"},
	{"interpolate", "{1, 3, 5, 7}, size=(3, 3), mode='bicubic', align_corners=False", "[1, 3, 3, 3]", "", ""},
	{"interpolate", "{1, 3, 5, 7}, size=(2, 3), mode='bilinear', antialias=True", "[1, 3, 2, 3]", "", ""},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=1.7, mode='nearest-exact'", "[1, 3, 8, 11]", "", ""},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=1.7, recompute_scale_factor=True", "[1, 3, 8, 11]", "", ""},
	{"interpolate", "{1, 3, 5}, scale_factor=2.5, mode='linear'", "[1, 3, 12]", "[36, 12, 1]", ""},
	{"interpolate", "{1, 3, 5}, scale_factor=(2.0,)", "[1, 3, 10]", "[30, 10, 1]", ""},
	{"interpolate", "{1, 3, 5}, size=[9]", "[1, 3, 9]", "[27, 9, 1]", ""},
	{"interpolate", "{1, 2, 3, 4, 5}, scale_factor=2, mode='trilinear'", "[1, 2, 6, 8, 10]", "[960, 480, 80, 10, 1]",
	 ""},
	{"interpolate", "{1, 3, 5, 7 : 105, 1, 21, 3}, scale_factor=2", "[1, 3, 10, 14]", "[420, 1, 42, 3]", ""},
	{"interpolate", "{1, 3, 5, 7 : 105, 1, 21, 3}, scale_factor=2, mode='bilinear'", "[1, 3, 10, 14]",
	 "[420, 1, 42, 3]", ""},
	{"interpolate", "{1, 2, 3, 4, 5 : 120, 1, 40, 10, 2}, scale_factor=2", "[1, 2, 6, 8, 10]",
	 "[960, 1, 160, 20, 2]", ""},
	{"interpolate", "{1, 5, 3 : 15, 1, 5}, scale_factor=2, mode='linear'", "[1, 5, 6]", "[30, 6, 1]", ""},
	{"interpolate", "{B, C, H, W}, scale_factor=2", "[B, C, 2*H, 2*W]", "[4*C*H*W, 4*H*W, 2*W, 1]", ""},
	{"interpolate", "{B, C, H, W}, scale_factor=0.5, mode='bilinear'", "[B, C, H//2, W//2]", "", ""},
	{"interpolate", "{B, C, H, W}, size=(H, 32)", "[B, C, H, 32]", "[32*C*H, 32*H, 32, 1]", ""},
	{"upsample", "{1, 3, 5, 7}, scale_factor=2", "[1, 3, 10, 14]", "", ""},
	{"upsample_bilinear", "{1, 3, 5, 7}, scale_factor=2", "[1, 3, 10, 14]", "", ""},
	{"upsample_nearest", "{1, 3, 5, 7}, 3", "[1, 3, 3, 3]", "", ""},
	{"pixel_shuffle", "{1, 8, 3, 4}, 2", "[1, 2, 6, 8]", "[96, 48, 8, 1]", ""},
	{"pixel_shuffle", "{2, 2, 8, 3, 4}, 2", "[2, 2, 2, 6, 8]", "[192, 96, 48, 8, 1]", ""},
	{"pixel_shuffle", "{8, 3, 4}, 2", "[2, 6, 8]", "[48, 8, 1]", ""},
	{"pixel_shuffle", "{1, 8, 3, 4 : 96, 1, 32, 8}, 2", "[1, 2, 6, 8]", "[96, 1, 16, 2]", ""},
	{"pixel_shuffle", "{B, 4*C, H, W}, 2", "[B, C, 2*H, 2*W]", "", ""},
	{"pixel_unshuffle", "{1, 2, 4, 6}, 2", "[1, 8, 2, 3]", "[48, 6, 3, 1]", ""},
	{"pixel_unshuffle", "{1, 2, 4, 6 : 48, 1, 12, 2}, 2", "[1, 8, 2, 3]", "[48, 1, 24, 8]", ""},
	{"pad", "{1, 3, 5, 7}, (1, 2)", "[1, 3, 5, 10]", "[150, 50, 10, 1]", "float32"},
	{"pad", "{1, 3, 5, 7}, (1, 2, 3, 4)", "[1, 3, 12, 10]", "[360, 120, 10, 1]", ""},
	{"pad", "{1, 3, 5, 7}, (-1, -2)", "[1, 3, 5, 4]", "[60, 20, 4, 1]", ""},
	{"pad", "{1, 3, 5, 7}, (-4, -3)", "[1, 3, 5, 0]", "", ""},
	{"pad", "{1, 3, 5, 7}, (2, -1, 0, 0, 1, 1)", "[1, 5, 5, 8]", "", ""},
	{"pad", "{1, 3, 5, 7 : 105, 1, 21, 3}, (1, 1)", "[1, 3, 5, 9]", "[135, 1, 27, 3]", ""},
	{"pad", "{3}, (1, 1), value=2.0", "[5]", "[1]", ""},
	{"pad", "int64{3, 4}, (1, 1)", "[3, 6]", "[6, 1]", "int64"},
	{"pad", "{B, C, T}, (K, 0)", "[B, C, T + K]", "[C*T + C*K, T + K, 1]", ""},
	{"pad", "{1, 3, 5, 7}, (1, 2, 1, 1), mode='reflect'", "[1, 3, 7, 10]", "[210, 70, 10, 1]", ""},
	{"pad", "{1, 3, 5, 7}, (1, 1, 1, 1, 1, 1), mode='reflect'", "[1, 5, 7, 9]", "[315, 63, 9, 1]", ""},
	{"pad", "{5, 7}, (1, 1), mode='reflect'", "[5, 9]", "[9, 1]", ""},
	{"pad", "{3, 5, 7}, (1, 1, 1, 1), mode='reflect'", "[3, 7, 9]", "[63, 9, 1]", ""},
	{"pad", "{1, 3, 5, 7 : 105, 1, 21, 3}, (1, 1, 1, 1), mode='reflect'", "[1, 3, 7, 9]", "[189, 63, 9, 1]", ""},
	{"pad", "{1, 3, 5}, (6, 2), mode='replicate'", "[1, 3, 13]", "[39, 13, 1]", ""},
	{"pad", "{1, 2, 3, 4, 5}, (1, 1, 1, 1, 1, 1), mode='replicate'", "[1, 2, 5, 6, 7]", "[420, 210, 42, 7, 1]", ""},
	{"pad", "{0, 3, 5}, (1, 1), mode='replicate'", "[0, 3, 7]", "", ""},
	{"pad", "{1, 3, 5}, (1, 2), mode='circular'", "[1, 3, 8]", "[24, 8, 1]", ""},
	{"pad", "{1, 3, 5}, (-2, -3), mode='circular'", "[1, 3, 0]", "", ""},
	{"pad", "{1, 3, 5, 7 : 105, 1, 21, 3}, (1, 2, 1, 1), mode='circular'", "[1, 3, 7, 10]", "[210, 70, 10, 1]", ""},
};

ParameterizedTestParameters(ops_resize, rules_follow_pytorch)
{
	return ROWS(rules);
}

ParameterizedTest(const rule_row *r, ops_resize, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
	EXPECT_INT(call.output_count, 1);
}

Test(ops_resize, area_is_adaptive_average_pooling)
{
	ASSERT_STATUS(run("interpolate", "{1, 3, 5, 7}, scale_factor=0.5, mode='area'"), TI_OK, err);
	expect_tensor("area", output(0), "[1, 3, 2, 3]", "[18, 6, 3, 1]", "float32");
	ASSERT_STATUS(run("interpolate", "{1, 3, 5, 7}, size=(2, 3), mode='area'"), TI_OK, err);
	expect_tensor("area", output(0), "[1, 3, 2, 3]", NULL, NULL);
	ASSERT_STATUS(run("interpolate", "{1, 3, 10}, size=4, mode='area'"), TI_OK, err);
	expect_tensor("area", output(0), "[1, 3, 4]", NULL, NULL);
}

/* ---- counts ---- */

static const flops_row counts[] = {
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2", "0"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='nearest-exact'", "0"},
	{"interpolate", "{1, 3, 5}, scale_factor=2, mode='linear'", "120"},            /* 30 outputs * 2 MACs * 2 */
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='bilinear'", "3360"},      /* 420 outputs * 4 MACs * 2 */
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='bicubic'", "13440"},      /* 420 outputs * 16 MACs * 2 */
	{"interpolate", "{1, 2, 3, 4, 5}, scale_factor=2, mode='trilinear'", "15360"}, /* 960 outputs * 8 MACs * 2 */
	{"interpolate", "{B, C, H, W}, scale_factor=2, mode='bilinear'", "32*B*C*H*W"},
};

ParameterizedTestParameters(ops_resize, interpolation_counts_its_weighted_neighbours)
{
	return ROWS(counts);
}

ParameterizedTest(const flops_row *r, ops_resize, interpolation_counts_its_weighted_neighbours, .init = setup,
                  .fini = teardown)
{
	check_flops(r);
}

Test(ops_resize, padding_and_shuffles_are_free)
{
	ASSERT_STATUS(run("pad", "{1, 3, 5, 7}, (1, 1, 1, 1), mode='reflect'"), TI_OK, err);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "pad is free");
	ASSERT_STATUS(run("pixel_shuffle", "{1, 8, 3, 4}, 2"), TI_OK, err);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "pixel_shuffle is free");
}

Test(ops_resize, a_symbolic_channel_count_is_assumed_divisible)
{
	ASSERT_STATUS(run("pixel_shuffle", "{1, C, 4, 4}, 2"), TI_OK, err);
	expect_tensor("pixel_shuffle", output(0), "[1, C//4, 8, 8]", NULL, NULL);
	EXPECT_INT(sym.assumption_count, 1);
}

/* ---- errors ---- */

static const error_row errors[] = {
	{"interpolate", "{1, 3, 5, 7}, scale_factor=(2.0, 3.0, 4.0)",
	 "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions "
	 "of [5, 7] and scale_factor of shape (2.0, 3.0, 4.0). Please provide input tensor in (N, C, d1, d2, ...,dK) "
	 "format and scale_factor in (s1, s2, ...,sK) format."},
	{"interpolate", "{1, 3, 5, 7}, size=(4, 4, 4)",
	 "Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of "
	 "[5, 7] and output size of (4, 4, 4). Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
	 "size in (o1, o2, ...,oK) format."},
	{"interpolate", "{1, 3, 5, 7}, size=4, scale_factor=2", "only one of size or scale_factor should be defined"},
	{"interpolate", "{1, 3, 5, 7}", "either size or scale_factor should be defined"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='linear'", "Got 4D input, but linear mode needs 3D input"},
	{"interpolate", "{1, 3, 5}, scale_factor=2, mode='bilinear'", "Got 3D input, but bilinear mode needs 4D input"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='trilinear'", "Got 4D input, but trilinear mode needs 5D input"},
	{"interpolate", "{1, 2, 3, 4, 5}, scale_factor=2, mode='bilinear'", "Got 5D input, but bilinear mode needs 4D input"},
	{"interpolate", "{1, 2, 3, 4, 5}, scale_factor=2, mode='bicubic'",
	 "Input Error: Only 3D, 4D and 5D input Tensors supported (got 5D) for the modes: nearest | linear | bilinear | "
	 "bicubic | trilinear | area | nearest-exact (got bicubic)"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='foo'",
	 "Input Error: Only 3D, 4D and 5D input Tensors supported (got 4D) for the modes: nearest | linear | bilinear | "
	 "bicubic | trilinear | area | nearest-exact (got foo)"},
	{"interpolate", "{3, 5}, scale_factor=2",
	 "Input Error: Only 3D, 4D and 5D input Tensors supported (got 2D) for the modes: nearest | linear | bilinear | "
	 "bicubic | trilinear | area | nearest-exact (got nearest)"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=2, mode='nearest', align_corners=True",
	 "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"},
	{"interpolate", "{1, 3, 5, 7}, size=3, recompute_scale_factor=True",
	 "recompute_scale_factor is not meaningful with an explicit size."},
	{"interpolate", "{1, 3, 5, 7}, size=(2, 3), mode='nearest', antialias=True",
	 "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=-1.0",
	 "Input and output sizes should be greater than 0, but got input (H: 5, W: 7) output (H: -5, W: -7)"},
	{"interpolate", "{1, 3, 5, 7}, scale_factor=0.1",
	 "Input and output sizes should be greater than 0, but got input (H: 5, W: 7) output (H: 0, W: 0)"},
	{"interpolate", "{1, 3, 5}, size=0",
	 "Input and output sizes should be greater than 0, but got input (W: 5) and output (W: 0)"},
	{"interpolate", "{1, 3, 5, 5, 5}, size=(0, 1, 1)",
	 "Input and output sizes should be greater than 0, but got input (D: 5, H: 5, W: 5) output (D: 0, H: 1, W: 1)"},
	{"interpolate", "{1, 0, 5, 5}, size=(2, 2)",
	 "Non-empty 4D data tensor expected but got a tensor with sizes [1, 0, 5, 5]"},
	{"pixel_shuffle", "{1, 6, 3, 4}, 2",
	 "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
	 "input.size(-3)=6 is not divisible by 4"},
	{"pixel_shuffle", "{8, 3}, 2",
	 "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"},
	{"pixel_shuffle", "{1, 8, 3, 4}, 0", "pixel_shuffle expects a positive upscale_factor, but got 0"},
	{"pixel_unshuffle", "{1, 2, 5, 6}, 2",
	 "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=5 is not divisible by 2"},
	{"pixel_unshuffle", "{1, 2, 4, 5}, 2",
	 "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=5 is not divisible by 2"},
	{"pixel_unshuffle", "{1, 2, 4, 6}, 0", "pixel_unshuffle expects a positive downscale_factor, but got 0"},
	{"pixel_unshuffle", "{4, 6}, 2",
	 "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)"},
	{"pad", "{1, 3, 5, 7}, (1, 2, 3)", "Padding length must be divisible by 2"},
	{"pad", "{1, 3, 5, 7}, (1, 1, 1, 1, 1, 1, 1, 1, 1, 1)",
	 "Padding length should be less than or equal to two times the input dimension but got padding length 10 and "
	 "input of dimension 4"},
	{"pad", "{}, (1, 1)",
	 "Padding length should be less than or equal to two times the input dimension but got padding length 2 and "
	 "input of dimension 0"},
	{"pad", "{1, 3, 5, 7}, (-4, -4)", "narrow(): length must be non-negative."},
	{"pad", "{1, 3, 5, 7}, (1, 2), mode='foo'", "Unrecognised padding mode foo"},
	{"pad", "{1, 3, 5, 7}, (1, 2, 1, 1), mode='reflect', value=1.0",
	 "Padding mode \"reflect\" doesn't take in value argument"},
	{"pad", "{1, 3, 5, 7}, (1, 2), mode='reflect'",
	 "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"},
	{"pad", "{7}, (1, 1), mode='replicate'", "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"},
	{"pad", "{5, 7}, (1, 1, 1, 1), mode='circular'",
	 "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"},
	{"pad", "{1, 3, 5}, (5, 2), mode='reflect'",
	 "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (5, 2) at "
	 "dimension 2 of input [1, 3, 5]"},
	{"pad", "{1, 3, 5, 7}, (1, 1, 5, 2), mode='reflect'",
	 "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (5, 2) at "
	 "dimension 2 of input torch.Size([1, 3, 5, 7])"},
	{"pad", "{1, 2, 3, 4, 5}, (0, 0, 0, 0, 3, 0), mode='reflect'",
	 "Argument #8: Padding size should be less than the corresponding input dimension, but got: padding (3, 0) at "
	 "dimension 2 of input [1, 2, 3, 4, 5]"},
	{"pad", "{1, 3, 5}, (-3, -3), mode='reflect'", "input (W: 5) is too small. Calculated output W: -1"},
	{"pad", "{1, 3, 5}, (-3, -3), mode='replicate'", "input (W: 5) is too small. Calculated output W: -1"},
	{"pad", "{1, 3, 5, 5}, (-3, -3, -3, -3), mode='reflect'",
	 "input (H: 5 W: 5) is too small. Calculated output H: -1 W: -1"},
	{"pad", "{1, 3, 5, 5}, (-3, -3, 0, 0), mode='reflect'", "Trying to create tensor with negative dimension -1: [1, 3, 5, -1]"},
	{"pad", "{1, 1, 2, 2, 2}, (-1, -1, -1, -1, -1, -1), mode='reflect'",
	 "input (D: 2 H: 2, W: 2) is too small. Calculated output D: 0 H: 0 W: 0"},
	{"pad", "{1, 3, 5, 5}, (-3, -3, 0, 0), mode='replicate'",
	 "Calculated output H: 5 W: -1 must be >= 1 in every dimension (input H: 5, W: 5)"},
	{"pad", "{1, 2, 3, 4, 5}, (-3, -3, 0, 0, 0, 0), mode='replicate'",
	 "Calculated output D: 3 H: 4 W: -1 must be >= 1 in every dimension (input D: 3, H: 4, W: 5)"},
	{"pad", "{1, 0, 5}, (1, 1), mode='reflect'",
	 "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but "
	 "got: [1, 0, 5]"},
	{"pad", "{1, 0, 5, 5}, (1, 1, 1, 1), mode='reflect'",
	 "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but "
	 "got: torch.Size([1, 0, 5, 5])"},
	{"pad", "{1, 3, 5}, (6, 2), mode='circular'", "Padding value causes wrapping around more than once."},
	{"pad", "{1, 3, 5}, (-3, -3), mode='circular'", "Negative padding value is resulting in an empty dimension"},
};

ParameterizedTestParameters(ops_resize, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const error_row *r, ops_resize, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- modules ---- */

static const module_row modules[] = {
	{"Upsample", "scale_factor=2", "{1, 2, 3, 4}", "[1, 2, 6, 8]", "[96, 48, 8, 1]", "float32"},
	{"Upsample", "size=(4, 5), mode='bilinear'", "{1, 2, 3, 4}", "[1, 2, 4, 5]", "[40, 20, 5, 1]", "float32"},
	{"Upsample", "None, 2, 'bilinear', True", "{1, 2, 3, 4}", "[1, 2, 6, 8]", "", "float32"},
	{"UpsamplingBilinear2d", "scale_factor=2", "{1, 2, 3, 4}", "[1, 2, 6, 8]", "[96, 48, 8, 1]", "float32"},
	{"UpsamplingNearest2d", "size=5", "{1, 2, 3, 4}", "[1, 2, 5, 5]", "[50, 25, 5, 1]", "float32"},
	{"PixelShuffle", "2", "{1, 8, 3, 4}", "[1, 2, 6, 8]", "[96, 48, 8, 1]", "float32"},
	{"PixelUnshuffle", "2", "{1, 2, 4, 6}", "[1, 8, 2, 3]", "[48, 6, 3, 1]", "float32"},
	{"ZeroPad2d", "1", "{1, 3, 5, 7}", "[1, 3, 7, 9]", "[189, 63, 9, 1]", "float32"},
	{"ZeroPad2d", "(1, 2, 3, 4)", "{1, 3, 5, 7}", "[1, 3, 12, 10]", "[360, 120, 10, 1]", "float32"},
	{"ZeroPad1d", "2", "{2, 5}", "[2, 9]", "", "float32"},
	{"ConstantPad1d", "2, 3.5", "{2, 5}", "[2, 9]", "[9, 1]", "float32"},
	{"ConstantPad3d", "(1, 1, 0, 0, 2, 2), 0.5", "{2, 3, 4}", "[6, 3, 6]", "", "float32"},
	{"ReflectionPad1d", "3", "{1, 3, 5}", "[1, 3, 11]", "[33, 11, 1]", "float32"},
	{"ReflectionPad2d", "2", "{1, 3, 5, 7}", "[1, 3, 9, 11]", "[297, 99, 11, 1]", "float32"},
	{"ReflectionPad3d", "1", "{1, 2, 3, 4, 5}", "[1, 2, 5, 6, 7]", "", "float32"},
	{"ReplicationPad1d", "(1, 2)", "{3, 5}", "[3, 8]", "", "float32"},
	{"ReplicationPad2d", "1", "{3, 5, 7}", "[3, 7, 9]", "", "float32"},
	{"ReplicationPad3d", "1", "{1, 2, 3, 4, 5}", "[1, 2, 5, 6, 7]", "[420, 210, 42, 7, 1]", "float32"},
	{"CircularPad1d", "1", "{1, 3, 5}", "[1, 3, 7]", "", "float32"},
	{"CircularPad2d", "1", "{1, 3, 5, 7}", "[1, 3, 7, 9]", "", "float32"},
	{"CircularPad3d", "1", "{2, 3, 4, 5}", "[2, 5, 6, 7]", "", "float32"},
};

ParameterizedTestParameters(nn_resize, modules_follow_pytorch)
{
	return ROWS(modules);
}

ParameterizedTest(const module_row *r, nn_resize, modules_follow_pytorch, .init = setup, .fini = teardown)
{
	EXPECT_INT(check_module(r)->tensor_count, 0);
}

Test(nn_resize, upsample_counts_as_its_interpolation)
{
	ti_module *m;
	ASSERT_STATUS(run_module("Upsample", "scale_factor=2, mode='bilinear'", "{1, 3, 5, 7}", &m), TI_OK, err);
	cr_expect(call.counted && !strcmp(flops_text(), "3360"), "flops got %s, want 3360", flops_text());
	ASSERT_STATUS(run_module("ReflectionPad2d", "1", "{1, 3, 5, 7}", &m), TI_OK, err);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "padding is free");
}

Test(nn_resize, circular_pads_check_the_rank_themselves)
{
	ti_module *m;
	EXPECT_STATUS(run_module("CircularPad2d", "1", "{5, 7}", &m), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "expected 3D or 4D input (got 2D input)");
	EXPECT_STATUS(run_module("CircularPad1d", "1", "{1, 2, 3, 5}", &m), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "expected 2D or 3D input (got 4D input)");
}

Test(nn_resize, padding_modules_pass_pytorch_s_errors_on)
{
	ti_module *m;
	EXPECT_STATUS(run_module("ReflectionPad1d", "5", "{1, 3, 5}", &m), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "Argument #4: Padding size should be less than the corresponding input dimension, but got: "
	                        "padding (5, 5) at dimension 2 of input [1, 3, 5]");
	EXPECT_STATUS(run_module("ReflectionPad2d", "1", "{5}", &m), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "Padding length should be less than or equal to two times the input dimension but got "
	                        "padding length 4 and input of dimension 1");
}
