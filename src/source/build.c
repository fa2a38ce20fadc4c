/*
 * build.c - what a source row calls to describe its file: parts (the files
 * read), storages, tensors, their strides. Below source.c's dispatch and
 * every row, so that the rows never call back into the dispatch.
 */
#include "source/source_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Grows an arena array by doubling (the old copy stays in the arena: arrays here are small). */
static void *grow(ti_arena *a, void *items, size_t count, size_t *capacity, size_t size)
{
	if (count < *capacity)
		return items;
	size_t cap = *capacity ? 2 * *capacity : 64;
	void *bigger = ti_arena_calloc(a, cap, size);
	if (bigger && count)
		memcpy(bigger, items, count * size);
	if (bigger)
		*capacity = cap;
	return bigger;
}

ti_status source_out_of_memory(ti_error *err)
{
	return TI_FAIL(err, TI_E_NOMEM, "out of memory listing tensors");
}

/*
 * An arena copy of items with room for exactly need of them, or items
 * itself when it has that room already; NULL when out of memory.
 */
static void *reserve(ti_arena *a, void *items, size_t count, size_t capacity, size_t need, size_t size)
{
	if (need <= capacity)
		return items;
	void *bigger = ti_arena_calloc(a, need, size);
	if (bigger && count)
		memcpy(bigger, items, count * size);
	return bigger;
}

ti_status source_reserve(ti_source *s, size_t storages, size_t tensors, ti_error *err)
{
	size_t need = s->storage_count + storages, need_tensors = s->tensor_count + tensors;
	ti_source_storage *st = reserve(&s->arena, s->storages, s->storage_count, s->storage_capacity, need, sizeof(*st));
	source_place *pl = reserve(&s->arena, s->places, s->storage_count, s->storage_capacity, need, sizeof(*pl));
	ti_source_tensor *t = reserve(&s->arena, s->tensors, s->tensor_count, s->tensor_capacity, need_tensors, sizeof(*t));
	if ((!st || !pl) && need > s->storage_capacity)
		return source_out_of_memory(err);
	if (!t && need_tensors > s->tensor_capacity)
		return source_out_of_memory(err);
	if (need > s->storage_capacity) {
		s->storages = st;
		s->places = pl;
		s->storage_capacity = need;
	}
	if (need_tensors > s->tensor_capacity) {
		s->tensors = t;
		s->tensor_capacity = need_tensors;
	}
	return TI_OK;
}

ti_source_storage *source_add_storage(ti_source *s, ti_dtype dtype, uint64_t nbytes, bool has_data, source_place where)
{
	size_t cap = s->storage_capacity;
	ti_source_storage *st = grow(&s->arena, s->storages, s->storage_count, &cap, sizeof(*st));
	source_place *pl = st ? grow(&s->arena, s->places, s->storage_count, &s->storage_capacity, sizeof(*pl)) : NULL;
	if (!st || !pl)
		return NULL;
	s->storages = st;
	s->places = pl;
	st[s->storage_count] = (ti_source_storage){dtype, nbytes, has_data};
	pl[s->storage_count] = where;
	return &st[s->storage_count++];
}

ti_source_tensor *source_add_tensor(ti_source *s)
{
	ti_source_tensor *t = grow(&s->arena, s->tensors, s->tensor_count, &s->tensor_capacity, sizeof(*t));
	if (!t)
		return NULL;
	s->tensors = t;
	memset(&t[s->tensor_count], 0, sizeof(*t));
	return &t[s->tensor_count++];
}

int64_t *source_contiguous_strides(ti_source *s, const int64_t *shape, int ndim)
{
	int64_t *stride = ti_arena_calloc(&s->arena, (size_t)ndim + 1, sizeof(*stride));
	int64_t acc = 1;
	for (int k = ndim - 1; stride && k >= 0; k--) {
		stride[k] = acc;
		acc *= shape[k] > 0 ? shape[k] : 1;
	}
	return stride;
}

ti_status source_add_part(ti_source *s, const char *path, source_part **out, ti_error *err)
{
	source_part *parts = grow(&s->arena, s->parts, s->part_count, &s->part_capacity, sizeof(*parts));
	char *copy = ti_arena_strdup(&s->arena, path);
	if (!parts || !copy)
		return source_out_of_memory(err);
	s->parts = parts;
	source_part *p = &parts[s->part_count++];
	memset(p, 0, sizeof(*p));
	p->path = copy;
	for (size_t i = 0; i < s->opened_count && !p->io; i++) /* opened beforehand, beside the others */
		if (s->opened[i] && !strcmp(s->opened[i]->name, path)) {
			p->io = s->opened[i];
			s->opened[i] = NULL;
		}
	if (p->io) {
	} else if (s->sniffed && !strcmp(s->sniffed->name, path)) { /* opened once, to be sniffed: not again */
		p->io = s->sniffed;
		s->sniffed = NULL;
	} else {
		ti_status st = ti_io_open(path, &p->io, err);
		if (st)
			return st;
	}
	*out = p;
	return TI_OK;
}

uint64_t ti_source_tensor_extent(const ti_source_tensor *t)
{
	if (t->numel == 0)
		return 0;
	uint64_t last = (uint64_t)t->offset;
	for (int i = 0; i < t->ndim; i++)
		last += (uint64_t)(t->shape[i] - 1) * (uint64_t)t->stride[i];
	return ((last + 1) * ti_dtype_bits(t->dtype) + 7) / 8; /* a sub-byte dtype's last element ends in its byte */
}
