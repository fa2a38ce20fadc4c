/*
 * safetensors.c - the source row for safetensors files: each tensor is its
 * own contiguous storage at its data offset. "tie.NAME": "FIRST" in
 * __metadata__ (what convert writes for tied weights) adds NAME as a view of
 * FIRST's storage, marked tie_of, so that convert restores the tie and
 * inspect shows it as a note of FIRST rather than as a tensor of its own.
 */
#include "source/source_internal.h"

#include <stdio.h>
#include <string.h>

/*
 * The entry inspect lists for a header tensor: a tensor saved from the
 * CPU, contiguous, its own storage (keyed by its index in the source).
 */
static ti_entry make_entry(ti_source *s, const ti_source_tensor *t, ti_value *v, ti_tensor *x, ti_storage *sto)
{
	char key[24];
	snprintf(key, sizeof(key), "%zu", t->storage);
	*sto = (ti_storage){.key = ti_arena_strdup(&s->arena, key), .dtype = t->dtype, .numel = t->numel,
	                    .nbytes = (int64_t)s->storages[t->storage].nbytes, .location = "cpu",
	                    .record_index = -1, .tensor_count = 1, .index = t->storage};
	*x = (ti_tensor){.dtype = t->dtype, .layout = TI_LAYOUT_STRIDED, .ndim = t->ndim, .shape = t->shape,
	                 .stride = t->stride, .numel = t->numel, .nbytes = sto->nbytes, .storage = sto,
	                 .rebuild = "safetensors"};
	v->kind = TI_TENSOR;
	v->as.tensor = x;
	return (ti_entry){t->name, v};
}

ti_status source_add_safetensors(ti_source *s, source_part *p, bool keep_metadata, ti_error *err)
{
	ti_status st = ti_st_open_io(p->io, NULL, &p->st, err);
	if (st)
		return st;
	size_t first = s->tensor_count;
	for (size_t i = 0; i < ti_st_tensor_count(p->st); i++) {
		const ti_st_tensor *x = ti_st_tensor_at(p->st, i);
		ti_source_tensor *t = source_add_tensor(s);
		int64_t *stride = source_contiguous_strides(s, x->shape, x->ndim);
		source_place where = {.io = p->io, .offset = x->offset, .record = -1};
		if (!t || !stride || !source_add_storage(s, x->dtype, x->nbytes, true, where))
			return source_out_of_memory(err);
		t->name = x->name;
		t->dtype = x->dtype;
		t->ndim = x->ndim;
		t->shape = x->shape;
		t->stride = stride;
		t->numel = x->numel;
		t->storage = s->storage_count - 1;
	}
	size_t count = s->tensor_count;
	ti_entry *entries = ti_arena_calloc(&s->arena, count - first + 1, sizeof(*entries));
	ti_value *values = ti_arena_calloc(&s->arena, count - first + 1, sizeof(*values));
	ti_tensor *tensors = ti_arena_calloc(&s->arena, count - first + 1, sizeof(*tensors));
	ti_storage *storages = ti_arena_calloc(&s->arena, count - first + 1, sizeof(*storages));
	if (!entries || !values || !tensors || !storages)
		return source_out_of_memory(err);
	for (size_t k = first; k < count; k++)
		entries[k - first] = make_entry(s, &s->tensors[k], &values[k - first], &tensors[k - first],
		                                &storages[k - first]);
	p->entries = entries;
	p->entry_count = count - first;
	for (size_t i = 0; i < ti_st_metadata_count(p->st); i++) {
		const ti_st_pair *m = ti_st_metadata_at(p->st, i);
		if (strncmp(m->key, "tie.", 4))
			continue;
		const ti_source_tensor *target = NULL;
		for (size_t k = first; k < count && !target; k++)
			if (!strcmp(s->tensors[k].name, m->value)) {
				target = &s->tensors[k];
				storages[k - first].tensor_count++; /* inspect: one storage, two names */
			}
		if (!target)
			return TI_FAIL(err, TI_E_CORRUPT, "__metadata__ ties '%s' to '%s', which the file does not hold",
			               m->key + 4, m->value);
		ti_source_tensor copy = *target, *t = source_add_tensor(s);
		if (!t)
			return source_out_of_memory(err);
		*t = copy;
		t->name = m->key + 4;
		t->tie_of = copy.name;
	}
	if (keep_metadata && ti_st_metadata_count(p->st)) {
		s->metadata_count = ti_st_metadata_count(p->st);
		s->metadata = ti_arena_calloc(&s->arena, s->metadata_count, sizeof(*s->metadata));
		if (!s->metadata)
			return source_out_of_memory(err);
		for (size_t i = 0; i < s->metadata_count; i++) {
			const ti_st_pair *m = ti_st_metadata_at(p->st, i);
			s->metadata[i] = (ti_source_pair){m->key, m->value};
		}
	}
	return TI_OK;
}

static ti_status open_safetensors(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	ti_status st = source_add_part(s, path, &p, err);
	return st ? st : source_add_safetensors(s, p, true, err);
}

const source_row source_safetensors = {.format = TI_SOURCE_SAFETENSORS, .kind = TI_FILE_SAFETENSORS,
                                       .open = open_safetensors};
