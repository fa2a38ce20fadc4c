/*
 * dropout.c - the torch.nn dropout modules (torch/nn/modules/dropout.py):
 * Dropout, Dropout1d/2d/3d, AlphaDropout, FeatureAlphaDropout.
 *
 * Each forward runs its functional operator (src/ops/activation.c) with
 * training set by the mode: in eval mode (the default) the identity, which
 * still checks the input as F.dropout1d & co. do; in train mode the input
 * times a mask. A dropout with p > 0 marks its row as mode-dependent.
 */
#include "nn/tables.h"
#include "tinspect/value.h"

/* The functional form of a dropout class is its name in snake case: AlphaDropout -> alpha_dropout. */
static const char *functional_name(ti_shape_ctx *ctx, const char *type)
{
	char buf[64];
	size_t n = 0;
	for (const char *c = type; *c && n + 2 < sizeof(buf); c++) {
		if (*c >= 'A' && *c <= 'Z' && c != type)
			buf[n++] = '_';
		buf[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	}
	buf[n] = '\0';
	return ti_arena_strdup(ctx->arena, buf);
}

/* _DropoutNd.__init__ checks p once, at construction. */
static ti_status dropout_init(ti_module *m, ti_error *err)
{
	double p = ti_module_float(m, "p");
	if (p < 0 || p > 1) {
		char buf[32];
		ti_format_float(p, buf, sizeof(buf));
		return TI_FAIL(err, TI_E_SHAPE, "dropout probability has to be between 0 and 1, but got %s", buf);
	}
	return TI_OK;
}

static ti_status dropout_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	if (ti_module_float(m, "p") > 0)
		call->ctx->mode_dependent = true;
	const char *op = functional_name(call->ctx, m->type);
	if (!op)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_arg args[] = {
		*ti_call_arg(call, "input"),
		ti_arg_named("p", *ti_module_arg(m, "p")),
		ti_arg_named("training", ti_arg_bool(call->ctx->training)),
		ti_arg_named("inplace", *ti_module_arg(m, "inplace")),
	};
	return ti_call_forward(call, op, args, 4, err);
}

#define DROPOUT(name) {name "(float p=0.5, bool inplace=False)", "forward(Tensor input)", dropout_init, \
                       dropout_forward, TI_COUNT_FREE, NULL, NULL}

ti_module_rule ti_nn_dropout[] = {
	DROPOUT("Dropout"),
	DROPOUT("Dropout1d"),
	DROPOUT("Dropout2d"),
	DROPOUT("Dropout3d"),
	DROPOUT("AlphaDropout"),
	DROPOUT("FeatureAlphaDropout"),
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
