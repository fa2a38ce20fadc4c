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
	return source_list_ckpt_entries(s, p, p->entries, p->entry_count, err);
}

/* Opens p's checkpoint and lists it: what torch shards of an index do. */
ti_status source_add_torch_zip(ti_source *s, source_part *p, ti_error *err)
{
	ti_status st = ti_ckpt_open_io(p->io, NULL, &p->ckpt, err);
	return st ? st : source_list_torch_zip(s, p, err);
}

/* Every zip that no row before this one claims is read as a torch.save zip. */
static bool claims_any(const ti_ckpt *ckpt)
{
	(void)ckpt;
	return true;
}

/* A torch zip alone, its checkpoint opened and judged by source.c: listed on the first query that needs it. */
static ti_status read_torch_zip(ti_source *s, source_part *p, ti_error *err)
{
	(void)err;
	s->unlisted = p;
	p->entries = ti_ckpt_entry(p->ckpt, 0); /* inspect needs its entries, not its listing */
	p->entry_count = ti_ckpt_entry_count(p->ckpt);
	return TI_OK;
}

const source_row source_torch_zip = {.format = TI_SOURCE_TORCH_ZIP, .kind = TI_FILE_ZIP,
                                     .claims_checkpoint = claims_any, .read_checkpoint = read_torch_zip};
