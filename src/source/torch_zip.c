/*
 * torch_zip.c - the source row for torch.save zip files (PyTorch 1.6 and
 * later): the checkpoint reader (format/checkpoint.c) lists storages and
 * tensors from data.pkl; a storage's bytes are its record's stored payload.
 */
#include "source/source_internal.h"

/* Lists p's checkpoint's storages and tensors in s. */
ti_status source_list_torch_zip(ti_source *s, source_part *p, ti_error *err)
{
	p->entries = ti_ckpt_entry(p->ckpt, 0);
	p->entry_count = ti_ckpt_entry_count(p->ckpt);
	size_t first = s->storage_count, n = ti_ckpt_storage_count(p->ckpt);
	ti_status st = source_reserve(s, n, ti_ckpt_entry_count(p->ckpt), err);
	if (st)
		return st;
	for (size_t i = 0; i < n; i++) {
		const ti_storage *sto = ti_ckpt_storage(p->ckpt, i);
		/* the payload offset is found on the first read: listing reads nothing more */
		source_place where = {.fd = p->fd, .ckpt = p->ckpt, .record = sto->record_index};
		if (!source_add_storage(s, sto->dtype, (uint64_t)sto->nbytes, sto->record_index >= 0, where))
			return source_out_of_memory(err);
	}
	for (size_t i = 0; i < ti_ckpt_entry_count(p->ckpt); i++) {
		const ti_entry *e = ti_ckpt_entry(p->ckpt, i);
		if (e->value->kind != TI_TENSOR)
			continue;
		const ti_tensor *x = e->value->as.tensor;
		ti_source_tensor *t = source_add_tensor(s);
		if (!t)
			return source_out_of_memory(err);
		t->name = e->name;
		t->dtype = x->dtype;
		t->ndim = x->ndim;
		t->shape = x->shape;
		t->stride = x->stride;
		t->offset = x->storage_offset;
		t->numel = x->numel;
		t->requires_grad = x->requires_grad;
		t->is_parameter = x->is_parameter;
		if (x->layout != TI_LAYOUT_STRIDED)
			t->unsupported = "a sparse tensor";
		else if (ti_dtype_is_quantized(x->dtype))
			t->unsupported = "a quantized tensor";
		else if (!x->storage)
			t->unsupported = "saved from the meta device: it has no data";
		t->storage = x->storage ? first + x->storage->index : 0;
	}
	return TI_OK;
}

/* Opens p's checkpoint and lists it: what torch shards of an index do. */
ti_status source_add_torch_zip(ti_source *s, source_part *p, ti_error *err)
{
	ti_status st = ti_ckpt_open(p->path, NULL, &p->ckpt, err);
	return st ? st : source_list_torch_zip(s, p, err);
}

/* A torch zip alone: opened and judged now, listed on the first query (source.c). */
static ti_status open_torch_zip(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	ti_status st = source_add_part(s, path, &p, err);
	if (!st && !(st = ti_ckpt_open(p->path, NULL, &p->ckpt, err))) {
		s->unlisted = p;
		p->entries = ti_ckpt_entry(p->ckpt, 0); /* inspect needs its entries, not its listing */
		p->entry_count = ti_ckpt_entry_count(p->ckpt);
	}
	return st;
}

const source_row source_torch_zip = {TI_SOURCE_TORCH_ZIP, TI_FILE_ZIP, open_torch_zip};
