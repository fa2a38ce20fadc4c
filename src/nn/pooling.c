/*
 * pooling.c - MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d,
 * AdaptiveMaxPool1d/2d/3d (torch/nn/modules/pooling.py).
 *
 * The modules hold no parameters and check nothing in __init__; forward
 * passes the constructor's arguments by name to the functional pool
 * (src/ops/pooling.c), whose checks and counts apply. With return_indices
 * the module gives (output, indices), as PyTorch's does.
 */
#include <string.h>

#include "nn/tables.h"

#define POOL_MAX_ARGS 6

/* One module type: the functional op and the constructor arguments it forwards. */
typedef struct pool_type {
	const char *name, *op;
	const char *args[POOL_MAX_ARGS]; /* NULL-terminated */
} pool_type;

#define MAX_POOL_FORWARDS {"kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"}
#define AVG_POOL_FORWARDS {"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"}

static const pool_type pool_types[] = {
	{"MaxPool1d", "max_pool1d", MAX_POOL_FORWARDS},
	{"MaxPool2d", "max_pool2d", MAX_POOL_FORWARDS},
	{"MaxPool3d", "max_pool3d", MAX_POOL_FORWARDS},
	{"AvgPool1d", "avg_pool1d", {"kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", NULL}},
	{"AvgPool2d", "avg_pool2d", AVG_POOL_FORWARDS},
	{"AvgPool3d", "avg_pool3d", AVG_POOL_FORWARDS},
	{"AdaptiveAvgPool1d", "adaptive_avg_pool1d", {"output_size", NULL}},
	{"AdaptiveAvgPool2d", "adaptive_avg_pool2d", {"output_size", NULL}},
	{"AdaptiveAvgPool3d", "adaptive_avg_pool3d", {"output_size", NULL}},
	{"AdaptiveMaxPool1d", "adaptive_max_pool1d", {"output_size", "return_indices", NULL}},
	{"AdaptiveMaxPool2d", "adaptive_max_pool2d", {"output_size", "return_indices", NULL}},
	{"AdaptiveMaxPool3d", "adaptive_max_pool3d", {"output_size", "return_indices", NULL}},
};

static ti_status pool_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	const pool_type *t = NULL;
	for (size_t i = 0; i < sizeof(pool_types) / sizeof(pool_types[0]) && !t; i++)
		if (!strcmp(pool_types[i].name, m->type))
			t = &pool_types[i];
	if (!t)
		return TI_FAIL(err, TI_E_INVALID, "no pooling rule for '%s'", m->type);
	ti_arg args[POOL_MAX_ARGS + 1];
	int n = 0;
	args[n++] = ti_arg_tensor(ti_call_tensor(call, "input"));
	for (int i = 0; i < POOL_MAX_ARGS && t->args[i]; i++)
		args[n++] = ti_arg_named(t->args[i], *ti_module_arg(m, t->args[i]));
	ti_op_call result;
	ti_status st = ti_call_op(call, t->op, args, n, &result, err);
	for (int i = 0; !st && i < result.output_count; i++)
		st = ti_call_output(call, result.outputs[i], err);
	return st;
}

#define MAX_POOL_ARGS "(int[] kernel_size, int[]? stride=None, int[] padding=0, int[] dilation=1, " \
                      "bool return_indices=False, bool ceil_mode=False)"
#define AVG_POOL_ARGS "(int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, " \
                      "bool count_include_pad=True, int? divisor_override=None)"
#define POOL_ROW(signature) {signature, "forward(Tensor input)", NULL, pool_forward, TI_COUNT_RULE, NULL, NULL}

ti_module_rule ti_nn_pooling[] = {
	POOL_ROW("MaxPool1d" MAX_POOL_ARGS),
	POOL_ROW("MaxPool2d" MAX_POOL_ARGS),
	POOL_ROW("MaxPool3d" MAX_POOL_ARGS),
	POOL_ROW("AvgPool1d(int[] kernel_size, int[]? stride=None, int[] padding=0, bool ceil_mode=False, "
	         "bool count_include_pad=True)"),
	POOL_ROW("AvgPool2d" AVG_POOL_ARGS),
	POOL_ROW("AvgPool3d" AVG_POOL_ARGS),
	POOL_ROW("AdaptiveAvgPool1d(int[] output_size)"),
	POOL_ROW("AdaptiveAvgPool2d(int?[] output_size)"),
	POOL_ROW("AdaptiveAvgPool3d(int?[] output_size)"),
	POOL_ROW("AdaptiveMaxPool1d(int[] output_size, bool return_indices=False)"),
	POOL_ROW("AdaptiveMaxPool2d(int?[] output_size, bool return_indices=False)"),
	POOL_ROW("AdaptiveMaxPool3d(int?[] output_size, bool return_indices=False)"),
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
