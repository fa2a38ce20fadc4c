/*
 * description.c - a model description's parameters and persistent buffers
 * as a source: named as state_dict() names them, with no data until a
 * generator (a fill) is set on each storage. A tied parameter shares the
 * storage of the parameter it names.
 */
#include "source/source_internal.h"

#include <string.h>

#include "tinspect/model.h"

ti_status ti_source_from_model(const ti_model *model, ti_source **out, ti_error *err)
{
	*out = NULL;
	ti_source *s;
	ti_status st = source_new_empty(TI_SOURCE_MODEL, &s, err);
	if (st)
		return st;
	size_t n;
	const ti_model_param *params = ti_model_params(model, &n);
	size_t *storage_of = ti_arena_calloc(&s->arena, n + 1, sizeof(*storage_of));
	if (!storage_of) {
		ti_source_close(s);
		return source_out_of_memory(err);
	}
	for (size_t i = 0; i < n; i++) {
		const ti_model_param *p = &params[i];
		ti_source_tensor *t = source_add_tensor(s);
		int64_t *stride = source_contiguous_strides(s, p->shape, p->ndim);
		if (!t || !stride) {
			ti_source_close(s);
			return source_out_of_memory(err);
		}
		int64_t numel = 1; /* the strides skipped empty dims; the count does not */
		for (int k = 0; k < p->ndim; k++)
			numel *= p->shape[k];
		/* what state_dict() holds: plain detached tensors, whatever the module registered */
		*t = (ti_source_tensor){.name = p->name, .dtype = p->dtype, .ndim = p->ndim, .shape = p->shape,
		                        .stride = stride, .numel = numel};
		size_t target = n;
		for (size_t k = 0; p->tied_to && k < i; k++)
			if (!strcmp(params[k].name, p->tied_to))
				target = k;
		if (target < n) {
			t->storage = storage_of[target];
		} else {
			source_place nowhere = {.io = NULL, .record = -1};
			if (!source_add_storage(s, p->dtype, (uint64_t)numel * ti_dtype_size(p->dtype), false, nowhere)) {
				ti_source_close(s);
				return source_out_of_memory(err);
			}
			t->storage = s->storage_count - 1;
		}
		storage_of[i] = t->storage;
	}
	size_t m;
	const ti_model_module *modules = ti_model_modules(model, &m);
	ti_source_module *copy = ti_arena_calloc(&s->arena, m + 1, sizeof(*copy));
	if (!copy) {
		ti_source_close(s);
		return source_out_of_memory(err);
	}
	for (size_t i = 0; i < m; i++)
		copy[i] = (ti_source_module){modules[i].prefix, modules[i].version};
	s->modules = copy;
	s->module_count = m;
	*out = s;
	return TI_OK;
}
