/*
 * fuzz_walk.h - reading everything an opened checkpoint offers, as the CLI
 * does (fuzz_checkpoint.c, and fuzz_pickle.c's torch pass).
 *
 * Walking touches every record, storage and entry through the public API,
 * prints each value the way `tinspect inspect` does (ti_value_repr, whose
 * walk is bounded by its depth cut and cycle check) and holds the handle to
 * the promises of checkpoint.h and tensor.h. It allocates nothing.
 */
#ifndef TINSPECT_FUZZ_WALK_H
#define TINSPECT_FUZZ_WALK_H

#include "fuzz_common.h"
#include "tinspect/checkpoint.h"
#include "tinspect/dtype.h"
#include "tinspect/tensor.h"
#include "tinspect/value.h"

/* repr and type name of a value, as the CLI prints them. */
static inline void fuzz_walk_value(const ti_value *v)
{
	char repr[512], type[128];
	FUZZ_CHECK(v != NULL, "a NULL value");
	FUZZ_CHECK(v->kind < TI_KIND_COUNT && v->kind != TI_MARK, "value of kind %d", (int)v->kind);
	ti_value_repr(v, repr, sizeof(repr), 200);
	FUZZ_CHECK(strlen(repr) < sizeof(repr), "repr overran");
	ti_value_type_name(v, type, sizeof(type));
}

static inline void fuzz_walk_tensor(const ti_tensor *t)
{
	FUZZ_CHECK(t->ndim >= 0 && t->ndim <= TI_MAX_DIMS, "tensor of rank %d", t->ndim);
	FUZZ_CHECK(t->ndim == 0 || t->shape, "tensor of rank %d without a shape", t->ndim);
	FUZZ_CHECK(t->numel >= 0 && t->nbytes >= 0, "tensor with %lld elements, %lld bytes",
	           (long long)t->numel, (long long)t->nbytes);
	FUZZ_CHECK(t->layout < TI_LAYOUT_COUNT, "layout %d", (int)t->layout);
	for (int d = 0; d < t->ndim; d++)
		FUZZ_CHECK(t->shape[d] >= 0, "negative size %lld", (long long)t->shape[d]);
	(void)ti_dtype_name(t->dtype);
	(void)ti_layout_name(t->layout);
	if (t->layout == TI_LAYOUT_STRIDED && t->stride)
		(void)ti_tensor_is_contiguous(t);
	if (t->storage) {
		FUZZ_CHECK(t->storage->key != NULL, "storage without a key");
		FUZZ_CHECK(t->storage->tensor_count >= 1, "storage viewed by %zu tensors", t->storage->tensor_count);
	}
	const ti_tensor_ext *ext = ti_tensor_ext_of(t);
	FUZZ_CHECK(ext != NULL, "ti_tensor_ext_of gave NULL");
	FUZZ_CHECK(ext->quant.scheme < TI_QS_COUNT, "qscheme %d", (int)ext->quant.scheme);
	(void)ti_qscheme_name(ext->quant.scheme);
	FUZZ_CHECK(ext->component_count <= TI_MAX_COMPONENTS, "%zu components", ext->component_count);
	for (size_t c = 0; c < ext->component_count; c++)
		if (ext->components[c])
			FUZZ_CHECK(ext->components[c]->ndim >= 0 && ext->components[c]->ndim <= TI_MAX_DIMS,
			           "component of rank %d", ext->components[c]->ndim);
}

static inline void fuzz_walk_ckpt(ti_ckpt *ckpt)
{
	const ti_ckpt_info *info = ti_ckpt_get_info(ckpt);
	FUZZ_CHECK(info && info->format && info->root && info->byteorder, "incomplete info");
	size_t records = ti_ckpt_record_count(ckpt);
	for (size_t i = 0; i < records; i++) {
		const ti_record *r = ti_ckpt_record(ckpt, i);
		FUZZ_CHECK(r && r->name, "record %zu", i);
		uint64_t offset;
		ti_error err;
		ti_error_clear(&err);
		ti_status s = ti_ckpt_record_payload_offset(ckpt, i, &offset, &err);
		fuzz_check_status(s, &err, s ? NULL : (void *)&offset);
	}
	FUZZ_CHECK(ti_ckpt_record(ckpt, records) == NULL, "record past the end");
	size_t storages = ti_ckpt_storage_count(ckpt);
	for (size_t i = 0; i < storages; i++) {
		const ti_storage *st = ti_ckpt_storage(ckpt, i);
		FUZZ_CHECK(st && st->key, "storage %zu", i);
		FUZZ_CHECK(st->numel >= 0 && st->nbytes >= 0, "storage '%s' of %lld bytes", st->key, (long long)st->nbytes);
		FUZZ_CHECK(st->record_index >= 0 && (size_t)st->record_index < records,
		           "storage '%s' has record %lld of %zu", st->key, (long long)st->record_index, records);
		FUZZ_CHECK(st->record_size == (uint64_t)st->nbytes, "storage '%s' passed the size check", st->key);
	}
	if (ti_ckpt_root(ckpt))
		fuzz_walk_value(ti_ckpt_root(ckpt));
	size_t entries = ti_ckpt_entry_count(ckpt);
	for (size_t i = 0; i < entries; i++) {
		const ti_entry *e = ti_ckpt_entry(ckpt, i);
		FUZZ_CHECK(e && e->name && e->value, "entry %zu", i);
		if (e->value->kind == TI_TENSOR)
			fuzz_walk_tensor(e->value->as.tensor);
		else
			fuzz_walk_value(e->value);
	}
	FUZZ_CHECK(ti_ckpt_entry(ckpt, entries) == NULL, "entry past the end");
}

#endif
