/*
 * activation.c - the torch.nn activation modules (torch/nn/modules/activation.py):
 * each forward runs its functional operator from src/ops/activation.c, so the
 * checks, dtypes and counts are the operator's.
 *
 * Most modules pass their constructor arguments to the functional operator
 * under the same names (LeakyReLU(negative_slope) -> leaky_relu(input,
 * negative_slope)); Hardtanh, PReLU and Softmax2d have forwards of their own.
 */
#include <string.h>

#include "nn/tables.h"

/* Modules whose forward is F.<op>(input, **constructor arguments). */
static const struct {
	const char *module, *op;
} functionals[] = {
	{"ReLU", "relu"}, {"ReLU6", "relu6"}, {"LeakyReLU", "leaky_relu"}, {"ELU", "elu"},
	{"CELU", "celu"}, {"SELU", "selu"}, {"GELU", "gelu"}, {"SiLU", "silu"}, {"Mish", "mish"},
	{"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"LogSigmoid", "logsigmoid"}, {"Softsign", "softsign"},
	{"Tanhshrink", "tanhshrink"}, {"Hardswish", "hardswish"}, {"Hardsigmoid", "hardsigmoid"},
	{"Softplus", "softplus"}, {"Threshold", "threshold"}, {"Hardshrink", "hardshrink"},
	{"Softshrink", "softshrink"}, {"RReLU", "rrelu"}, {"Softmax", "softmax"},
	{"LogSoftmax", "log_softmax"}, {"Softmin", "softmin"}, {"GLU", "glu"},
};

static ti_status forward_functional(ti_op_call *call, const ti_module *m, ti_error *err)
{
	const char *op = NULL;
	for (size_t i = 0; i < sizeof(functionals) / sizeof(functionals[0]); i++)
		if (!strcmp(functionals[i].module, m->type))
			op = functionals[i].op;
	if (!op)
		return TI_FAIL(err, TI_E_INVALID, "no functional operator for %s", m->type);
	ti_arg args[TI_OP_MAX_PARAMS + 1];
	int n = 0;
	args[n++] = *ti_call_arg(call, "input");
	const ti_signature *sig = m->ctor.sig;
	for (int i = 0; i < sig->count; i++)
		args[n++] = ti_arg_named(sig->params[i].name, m->ctor.args[i]);
	return ti_call_forward(call, op, args, n, err);
}

/* Hardtanh: min_value and max_value are the deprecated spellings of min_val and max_val. */
static double hardtanh_bound(const ti_module *m, const char *name, const char *deprecated)
{
	return ti_module_is_none(m, deprecated) ? ti_module_float(m, name) : ti_module_float(m, deprecated);
}

static ti_status hardtanh_init(ti_module *m, ti_error *err)
{
	if (!(hardtanh_bound(m, "max_val", "max_value") > hardtanh_bound(m, "min_val", "min_value")))
		return TI_FAIL(err, TI_E_SHAPE, "assert self.max_val > self.min_val");
	return TI_OK;
}

static ti_status hardtanh_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {
		*ti_call_arg(call, "input"),
		ti_arg_named("min_val", ti_arg_float(hardtanh_bound(m, "min_val", "min_value"))),
		ti_arg_named("max_val", ti_arg_float(hardtanh_bound(m, "max_val", "max_value"))),
	};
	return ti_call_forward(call, "hardtanh", args, 3, err);
}

/* PReLU: a learnable slope per channel (or one), "weight" of shape [num_parameters]. */
static ti_status prelu_init(ti_module *m, ti_error *err)
{
	int64_t shape[1] = {ti_module_dim(m, "num_parameters").value};
	return ti_module_add_param(m, "weight", ti_module_dtype(m), 1, shape, err);
}

static ti_status prelu_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_arg args[] = {*ti_call_arg(call, "input"), ti_arg_tensor(ti_module_tensor_get(m, "weight"))};
	return ti_call_forward(call, "prelu", args, 2, err);
}

/* Softmax2d: softmax over the channels of a 3-d or 4-d input. */
static ti_status softmax2d_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	(void)m;
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	if (input->ndim != 3 && input->ndim != 4)
		return TI_FAIL(err, TI_E_SHAPE, "Softmax2d: expected input to be 3D or 4D, got %dD instead", input->ndim);
	ti_arg args[] = {ti_arg_tensor(input), ti_arg_int(-3)};
	return ti_call_forward(call, "softmax", args, 2, err);
}

#define FORWARD "forward(Tensor input)"
#define PLAIN(ctor) {ctor, FORWARD, NULL, forward_functional, TI_COUNT_RULE, NULL, NULL}

ti_module_rule ti_nn_activation[] = {
	PLAIN("ReLU(bool inplace=False)"),
	PLAIN("ReLU6(bool inplace=False)"),
	PLAIN("LeakyReLU(float negative_slope=0.01, bool inplace=False)"),
	PLAIN("ELU(float alpha=1.0, bool inplace=False)"),
	PLAIN("CELU(float alpha=1.0, bool inplace=False)"),
	PLAIN("SELU(bool inplace=False)"),
	PLAIN("GELU(str approximate='none')"),
	PLAIN("SiLU(bool inplace=False)"),
	PLAIN("Mish(bool inplace=False)"),
	PLAIN("Tanh()"),
	PLAIN("Sigmoid()"),
	PLAIN("LogSigmoid()"),
	PLAIN("Softsign()"),
	PLAIN("Tanhshrink()"),
	PLAIN("Hardswish(bool inplace=False)"),
	PLAIN("Hardsigmoid(bool inplace=False)"),
	PLAIN("Softplus(float beta=1.0, float threshold=20.0)"),
	PLAIN("Threshold(float threshold, float value, bool inplace=False)"),
	PLAIN("Hardshrink(float lambd=0.5)"),
	PLAIN("Softshrink(float lambd=0.5)"),
	PLAIN("RReLU(float lower=0.125, float upper=0.3333333333333333, bool inplace=False)"),
	PLAIN("Softmax(int? dim=None)"),
	PLAIN("LogSoftmax(int? dim=None)"),
	PLAIN("Softmin(int? dim=None)"),
	PLAIN("GLU(int dim=-1)"),
	{"Hardtanh(float min_val=-1.0, float max_val=1.0, bool inplace=False, float? min_value=None, float? max_value=None)",
	 FORWARD, hardtanh_init, hardtanh_forward, TI_COUNT_RULE, NULL, NULL},
	{"PReLU(int num_parameters=1, float init=0.25, str? device=None, ScalarType? dtype=None)",
	 FORWARD, prelu_init, prelu_forward, TI_COUNT_RULE, NULL, NULL},
	{"Softmax2d()", FORWARD, NULL, softmax2d_forward, TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
