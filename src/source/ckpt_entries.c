/*
 * ckpt_entries.c - a torch checkpoint's entries (format/checkpoint.c read
 * them from its pickle) as the source's storages and tensors: what the
 * torch zip row and the TorchScript row share.
 */
#include "source/source_internal.h"

#include <string.h>

#include "util/strmap.h"

/*
 * A view with the conjugate or negative bit does not show its storage's
 * values: it gets a storage of its own, the same bytes resolved as they are
 * read, shared with the views of the same storage, bits and dtype. So every
 * reader (convert, materialize, placement) sees the values PyTorch 2.x
 * gives, and a view with the bits never ties with one without.
 */
static ti_status resolved_storage(ti_source *s, ti_strmap *seen, size_t storage, const ti_tensor *x, size_t *out,
                                  ti_error *err)
{
	/* a real tensor's conjugate is itself */
	bool conj = x->conj && (x->dtype == TI_DT_COMPLEX32 || x->dtype == TI_DT_COMPLEX64 || x->dtype == TI_DT_COMPLEX128);
	*out = storage;
	if (!conj && !x->neg)
		return TI_OK;
	const char *key = ti_arena_printf(&s->arena, "%zu/%d/%d/%d", storage, (int)x->dtype, conj, x->neg);
	void *earlier;
	int added = key ? ti_strmap_add(seen, key, (void *)(uintptr_t)s->storage_count, &earlier) : -1;
	if (added < 0)
		return source_out_of_memory(err);
	if (added == 1) {
		*out = (size_t)(uintptr_t)earlier;
		return TI_OK;
	}
	const ti_source_storage *of = &s->storages[storage];
	source_place where = s->places[storage];
	where.conj = conj;
	where.neg = x->neg;
	if (!source_add_storage(s, x->dtype, of->nbytes, of->has_data, where))
		return source_out_of_memory(err);
	*out = s->storage_count - 1;
	return TI_OK;
}

ti_status source_list_ckpt_entries(ti_source *s, source_part *p, const ti_entry *entries, size_t count, ti_error *err)
{
	size_t first = s->storage_count, n = ti_ckpt_storage_count(p->ckpt);
	ti_status st = source_reserve(s, n, count, err);
	if (st)
		return st;
	bool big = !strcmp(ti_ckpt_get_info(p->ckpt)->byteorder, "big");
	for (size_t i = 0; i < n; i++) {
		const ti_storage *sto = ti_ckpt_storage(p->ckpt, i);
		/*
		 * The payload offset is found on the first read: listing reads nothing more.
		 * torch.load swaps a typed storage's bytes by its dtype; an UntypedStorage's as bytes: not at all.
		 */
		source_place where = {.io = p->io, .ckpt = p->ckpt, .record = sto->record_index,
		                      .swap = big && !sto->untyped};
		if (!source_add_storage(s, sto->dtype, (uint64_t)sto->nbytes, sto->record_index >= 0, where))
			return source_out_of_memory(err);
	}
	ti_strmap resolved;
	ti_strmap_init(&resolved);
	for (size_t i = 0; i < count && !st; i++) {
		const ti_entry *e = &entries[i];
		if (e->value->kind != TI_TENSOR)
			continue;
		const ti_tensor *x = e->value->as.tensor;
		ti_source_tensor *t = source_add_tensor(s);
		if (!t) {
			st = source_out_of_memory(err);
			break;
		}
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
		else if (!ti_dtype_can_resolve(x->dtype, x->conj, x->neg))
			t->unsupported = "a negative view of a dtype that has no negative";
		t->conj = x->conj;
		t->neg = x->neg;
		t->storage = x->storage ? first + x->storage->index : 0;
		if (x->storage && !t->unsupported)
			st = resolved_storage(s, &resolved, t->storage, x, &t->storage, err);
		else if (!x->storage && x->layout == TI_LAYOUT_STRIDED && !t->unsupported) {
			/*
			 * Saved from the meta device: a storage of its own with no data, as a
			 * description's parameters have, so that a fill can give it values and
			 * reading it says it has none.
			 */
			source_place nowhere = {.io = NULL, .record = -1};
			if (!source_add_storage(s, x->dtype, ti_source_tensor_extent(t), false, nowhere))
				st = source_out_of_memory(err);
			t->storage = s->storage_count - 1;
		}
	}
	ti_strmap_release(&resolved);
	return st;
}
