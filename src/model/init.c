/*
 * init.c - a described model's default initialisation, per parameter: the
 * owning module's type, tensors and constructor facts handed to the rules of
 * init_rules.h (see ti_model_param_init in tinspect/model.h).
 */
#include <string.h>

#include "model/model_internal.h"
#include "tinspect/init_rules.h"

/* A constructor argument as an int, or fallback when absent or None. */
static int64_t ctor_int(const ti_module *m, const char *name, int64_t fallback)
{
	const ti_arg *a = ti_bound_get(&m->ctor, name);
	return a->kind == TI_ARG_INT && ti_dim_is_int(a->as.dim) ? a->as.dim.value : fallback;
}

ti_status ti_model_param_init(const ti_model *model, size_t i, ti_fill_policy *out, const char **rule,
                              ti_error *err)
{
	if (i >= model->param_count)
		return TI_FAIL(err, TI_E_INVALID, "no parameter %zu", i);
	const ti_module *mod = model->param_modules[i];
	ti_init_tensor tensors[256];
	int count = 0;
	int64_t shapes[256][8];
	for (int k = 0; k < mod->tensor_count && count < 256; k++) {
		const ti_meta_tensor *t = mod->tensors[k].tensor;
		if (t->ndim > 8)
			continue;
		for (int d = 0; d < t->ndim; d++)
			shapes[count][d] = t->shape[d].value;
		tensors[count] = (ti_init_tensor){mod->tensors[k].name, t->ndim, shapes[count]};
		count++;
	}
	ti_init_module im;
	ti_init_module_defaults(&im, mod->type, tensors, count);
	int64_t num_embeddings = ctor_int(mod, "num_embeddings", 0);
	int64_t padding_idx = ctor_int(mod, "padding_idx", -1);
	if (padding_idx < -1 && num_embeddings) /* PyTorch wraps a negative padding_idx */
		padding_idx += num_embeddings;
	im.padding_idx = padding_idx;
	const ti_arg *init = ti_bound_get(&mod->ctor, "init");
	if (init->kind == TI_ARG_FLOAT)
		im.prelu_init = init->as.real;
	im.hidden_size = ctor_int(mod, "hidden_size", 0);
	return ti_init_policy(&im, model->param_locals[i], out, rule, err);
}
