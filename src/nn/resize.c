/*
 * resize.c - torch.nn.Upsample, UpsamplingNearest2d, UpsamplingBilinear2d,
 * PixelShuffle, PixelUnshuffle and the padding modules (ZeroPad, ConstantPad,
 * ReflectionPad, ReplicationPad, CircularPad in 1d, 2d and 3d).
 *
 * None has parameters. Each forward is torch/nn/modules/upsampling.py,
 * pixelshuffle.py or padding.py: one call of the functional operator
 * (src/ops/resize.c) with the constructor's arguments, so its checks, layout
 * and counts apply.
 */
#include <string.h>

#include "nn/tables.h"

static ti_arg input_of(const ti_op_call *call)
{
	return ti_arg_tensor(ti_call_tensor(call, "input"));
}

/*
 * Upsample.forward: F.interpolate(input, self.size, self.scale_factor,
 * self.mode, self.align_corners, recompute_scale_factor=...)
 */
static ti_status forward_upsample(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		input_of(call), *ti_module_arg(m, "size"), *ti_module_arg(m, "scale_factor"), *ti_module_arg(m, "mode"),
		*ti_module_arg(m, "align_corners"),
		ti_arg_named("recompute_scale_factor", *ti_module_arg(m, "recompute_scale_factor")),
	};
	return ti_call_forward(call, "interpolate", args, 6, err);
}

/* UpsamplingNearest2d / UpsamplingBilinear2d.forward: F.interpolate with the mode fixed (bilinear: align_corners=True). */
static ti_status forward_upsampling2d(ti_op_call *call, const ti_module *m, ti_error *err)
{
	bool bilinear = !strcmp(m->type, "UpsamplingBilinear2d");
	ti_arg args[] = {
		input_of(call), *ti_module_arg(m, "size"), *ti_module_arg(m, "scale_factor"),
		ti_arg_str(bilinear ? "bilinear" : "nearest"), bilinear ? ti_arg_bool(true) : ti_arg_none(),
	};
	return ti_call_forward(call, "interpolate", args, 5, err);
}

static ti_status forward_pixel_shuffle(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {input_of(call), *ti_module_arg(m, "upscale_factor")};
	return ti_call_forward(call, "pixel_shuffle", args, 2, err);
}

static ti_status forward_pixel_unshuffle(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {input_of(call), *ti_module_arg(m, "downscale_factor")};
	return ti_call_forward(call, "pixel_unshuffle", args, 2, err);
}

/* The padding modules: their F.pad mode and how many dims they pad. */
typedef struct pad_kind {
	const char *type;
	const char *mode;
	int padded;
} pad_kind;

static const pad_kind pad_kinds[] = {
	{"ZeroPad1d", "constant", 1}, {"ZeroPad2d", "constant", 2}, {"ZeroPad3d", "constant", 3},
	{"ConstantPad1d", "constant", 1}, {"ConstantPad2d", "constant", 2}, {"ConstantPad3d", "constant", 3},
	{"ReflectionPad1d", "reflect", 1}, {"ReflectionPad2d", "reflect", 2}, {"ReflectionPad3d", "reflect", 3},
	{"ReplicationPad1d", "replicate", 1}, {"ReplicationPad2d", "replicate", 2}, {"ReplicationPad3d", "replicate", 3},
	{"CircularPad1d", "circular", 1}, {"CircularPad2d", "circular", 2}, {"CircularPad3d", "circular", 3},
};

/*
 * _ConstantPadNd / _ReflectionPadNd / _ReplicationPadNd / _CircularPadNd
 * .forward: F.pad(input, self.padding, mode[, self.value]); CircularPadNd
 * first checks the rank itself (_check_input_dim).
 */
static ti_status forward_pad(ti_op_call *call, const ti_module *m, ti_error *err)
{
	const pad_kind *kind = &pad_kinds[0];
	for (size_t i = 0; i < sizeof(pad_kinds) / sizeof(pad_kinds[0]); i++)
		if (!strcmp(m->type, pad_kinds[i].type))
			kind = &pad_kinds[i];
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	if (!strcmp(kind->mode, "circular") && input->ndim != kind->padded + 1 && input->ndim != kind->padded + 2)
		return TI_FAIL(err, TI_E_SHAPE, "expected %dD or %dD input (got %dD input)", kind->padded + 1,
		               kind->padded + 2, input->ndim);
	const ti_arg *value = ti_module_arg(m, "value"); /* ConstantPad's; absent elsewhere */
	ti_arg args[] = {
		ti_arg_tensor(input), *ti_module_arg(m, "padding"), ti_arg_str(kind->mode),
		value->kind == TI_ARG_FLOAT ? *value : ti_arg_none(),
	};
	return ti_call_forward(call, "pad", args, 4, err);
}

#define PAD_ROW(type, padding, extra) \
	{type "(" padding " padding" extra ")", "forward(Tensor input)", NULL, forward_pad, TI_COUNT_FREE, NULL, NULL}

ti_module_rule ti_nn_resize[] = {
	{"Upsample(int|int[]? size=None, float[]? scale_factor=None, str mode='nearest', bool? align_corners=None, "
	 "bool? recompute_scale_factor=None)", "forward(Tensor input)", NULL, forward_upsample, TI_COUNT_RULE, NULL, NULL},
	{"UpsamplingNearest2d(int|int[]? size=None, float[]? scale_factor=None)", "forward(Tensor input)", NULL,
	 forward_upsampling2d, TI_COUNT_RULE, NULL, NULL},
	{"UpsamplingBilinear2d(int|int[]? size=None, float[]? scale_factor=None)", "forward(Tensor input)", NULL,
	 forward_upsampling2d, TI_COUNT_RULE, NULL, NULL},
	{"PixelShuffle(int upscale_factor)", "forward(Tensor input)", NULL, forward_pixel_shuffle, TI_COUNT_FREE, NULL, NULL},
	{"PixelUnshuffle(int downscale_factor)", "forward(Tensor input)", NULL, forward_pixel_unshuffle, TI_COUNT_FREE,
	 NULL, NULL},
	PAD_ROW("ZeroPad1d", "int[2]", ""), PAD_ROW("ZeroPad2d", "int[4]", ""), PAD_ROW("ZeroPad3d", "int[6]", ""),
	PAD_ROW("ConstantPad1d", "int[2]", ", float value"), PAD_ROW("ConstantPad2d", "int[4]", ", float value"),
	PAD_ROW("ConstantPad3d", "int[6]", ", float value"),
	PAD_ROW("ReflectionPad1d", "int[2]", ""), PAD_ROW("ReflectionPad2d", "int[4]", ""),
	PAD_ROW("ReflectionPad3d", "int[6]", ""),
	PAD_ROW("ReplicationPad1d", "int[2]", ""), PAD_ROW("ReplicationPad2d", "int[4]", ""),
	PAD_ROW("ReplicationPad3d", "int[6]", ""),
	PAD_ROW("CircularPad1d", "int[2]", ""), PAD_ROW("CircularPad2d", "int[4]", ""),
	PAD_ROW("CircularPad3d", "int[6]", ""),
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
