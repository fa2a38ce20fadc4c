/*
 * torch_zip.c - the source row for torch.save zip files (PyTorch 1.6 and
 * later): the checkpoint reader (format/checkpoint.c) lists storages and
 * tensors from data.pkl; a storage's bytes are its record's stored payload.
 */
#include "source/source_internal.h"

#include <string.h>


/* Lists p's checkpoint's storages and tensors in s. */
ti_status source_list_torch_zip(ti_source *s, source_part *p, ti_error *err)
{
	p->entries = ti_ckpt_entry(p->ckpt, 0);
	p->entry_count = ti_ckpt_entry_count(p->ckpt);
	return source_list_ckpt_entries(s, p, p->entries, p->entry_count, err);
}

/* Opens p's checkpoint and lists it: what torch shards of an index do. */
ti_status source_add_torch_zip(ti_source *s, source_part *p, ti_error *err)
{
	ti_status st = ti_ckpt_open(p->path, NULL, &p->ckpt, err);
	return st ? st : source_list_torch_zip(s, p, err);
}

/*
 * A torch zip alone: opened and judged now, listed on the first query
 * (source.c). The checkpoint tells a TorchScript archive by its
 * constants.pkl record, as torch.load's _is_torchscript_zip does: that one
 * is read on by torchscript.c, from the directory read here.
 */
static ti_status open_torch_zip(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	ti_status st = source_add_part(s, path, &p, err);
	if (st || (st = ti_ckpt_open(p->path, NULL, &p->ckpt, err)))
		return st;
	if (!strcmp(ti_ckpt_get_info(p->ckpt)->format, "torchscript-zip")) {
		s->format = TI_SOURCE_TORCHSCRIPT;
		return source_read_torchscript(s, p, err);
	}
	s->unlisted = p;
	p->entries = ti_ckpt_entry(p->ckpt, 0); /* inspect needs its entries, not its listing */
	p->entry_count = ti_ckpt_entry_count(p->ckpt);
	return TI_OK;
}

const source_row source_torch_zip = {TI_SOURCE_TORCH_ZIP, TI_FILE_ZIP, open_torch_zip};
