/*
 * torch_legacy.c - the source row for legacy torch.save files (before
 * PyTorch 1.6, or _use_new_zipfile_serialization=False): the checkpoint
 * reader opens them as it opens a zip (format/legacy.c), each storage a
 * record whose bytes begin after its element count, and they are listed as
 * a torch zip's are.
 */
#include "source/source_internal.h"

/* Opened and judged now, listed on the first query, as a torch zip alone is (source.c). */
static ti_status open_torch_legacy(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	ti_status st = source_add_part(s, path, &p, err);
	if (!st && !(st = ti_ckpt_open_io(p->io, NULL, &p->ckpt, err))) {
		s->unlisted = p;
		p->entries = ti_ckpt_entry(p->ckpt, 0);
		p->entry_count = ti_ckpt_entry_count(p->ckpt);
	}
	return st;
}

const source_row source_torch_legacy = {.format = TI_SOURCE_TORCH_LEGACY, .kind = TI_FILE_LEGACY_TORCH,
                                        .open = open_torch_legacy};
