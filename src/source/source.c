/*
 * source.c - the source handle: the format table, opening by content,
 * storages, tensors and reading their bytes (see tinspect/source.h).
 *
 * Each format is one row (a file of its own beside this one): the kind of
 * file its content shows (sniff.h) and how to open it. A new format is one
 * new row and one new file, and every command reads it the day it lands.
 */
#include "source/source_internal.h"
#include "tinspect/gguf.h"

#include "tinspect/dcp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The zip rows first, in the order their claims are asked: the torch zip row, which claims every zip, last. */
static const source_row *const rows[] = {
	&source_npz,
	&source_torchscript,
	&source_torch_zip,
	&source_safetensors,
	&source_hf_index,
	&source_hf_directory,
	&source_torch_legacy,
	&source_dcp,
	&source_gguf,
	&source_npy,
};

enum { ARENA_MAX = (size_t)4 << 30 };

const char *ti_source_format_name(ti_source_format format)
{
	static const char *const names[] = {
		[TI_SOURCE_TORCH_ZIP] = "torch-zip", [TI_SOURCE_SAFETENSORS] = "safetensors",
		[TI_SOURCE_HF_SHARDED] = "hf-sharded", [TI_SOURCE_MODEL] = "model",
		[TI_SOURCE_TORCH_LEGACY] = "torch-legacy", [TI_SOURCE_DCP] = "dcp",
		[TI_SOURCE_TORCHSCRIPT] = "torchscript-zip", [TI_SOURCE_GGUF] = "gguf",
		[TI_SOURCE_NPY] = "npy", [TI_SOURCE_NPZ] = "npz",
	};
	return (unsigned)format < sizeof(names) / sizeof(names[0]) && names[format] ? names[format] : "?";
}

static ti_source *new_source(ti_source_format format)
{
	ti_source *s = calloc(1, sizeof(*s));
	if (s) {
		ti_arena_init(&s->arena, ARENA_MAX);
		s->format = format;
	}
	return s;
}

/*
 * Lists a torch zip opened alone, on the first query that needs its
 * tensors. The handle is ours (made by new_source), so writing through a
 * query's const pointer is writing to an object that is not const.
 */
static ti_source *listed(const ti_source *cs)
{
	ti_source *s = (ti_source *)cs;
	if (s->unlisted) {
		source_part *p = s->unlisted;
		s->unlisted = NULL;
		ti_error_clear(&s->list_error);
		s->list_status = source_list_torch_zip(s, p, &s->list_error);
	}
	return s;
}

/* ---- opening by content ---- */

/* The zip row that claims the zip open as fd from its first bytes, or NULL. */
static const source_row *zip_claimed_by_head(ti_io *io)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i]->kind == TI_FILE_ZIP && rows[i]->claims_head && rows[i]->claims_head(io))
			return rows[i];
	return NULL;
}

/*
 * What path's content says it is, and its size; for a zip, the row that
 * claims it from its first bytes, if one does (*claimed, else NULL). A
 * failing system call is TI_E_IO.
 */
/* A file's (or a URL's) kind from its first bytes, read through s->sniffed (opened here unless it is open). */
static ti_status sniff_file(ti_source *s, const char *path, ti_file_kind *kind, uint64_t *size,
                            const source_row **claimed, ti_error *err)
{
	ti_status st = s->sniffed ? TI_OK : ti_io_open(path, &s->sniffed, err);
	if (st)
		return st;
	unsigned char head[TI_SNIFF_BYTES];
	size_t got;
	if ((st = ti_io_read(s->sniffed, 0, head, sizeof(head), &got, err)))
		return st;
	*size = s->sniffed->size;
	if ((*kind = ti_file_sniff(head, got, *size)) == TI_FILE_ZIP)
		*claimed = zip_claimed_by_head(s->sniffed);
	return TI_OK;
}

static ti_status sniff_path(ti_source *s, const char *path, ti_file_kind *kind, uint64_t *size,
                            const source_row **claimed, ti_error *err)
{
	*claimed = NULL;
	if (s->sniffed && strcmp(s->sniffed->name, path)) {
		ti_io_close(s->sniffed);
		s->sniffed = NULL;
	}
	if (ti_io_is_url(path)) /* a URL is a file (an hf:// repository was made one by open_by_content) */
		return sniff_file(s, path, kind, size, claimed, err);
	struct stat sb;
	if (stat(path, &sb))
		return TI_FAIL(err, TI_E_IO, "cannot open: %s", strerror(errno));
	*size = (uint64_t)sb.st_size;
	if (S_ISDIR(sb.st_mode)) {
		*kind = ti_dcp_is_folder(path) ? TI_FILE_DCP : TI_FILE_DIRECTORY;
		return TI_OK;
	}
	if (!S_ISREG(sb.st_mode)) /* a FIFO or a device: reading it could block forever */
		return TI_FAIL(err, TI_E_IO, "cannot open: not a regular file");
	return sniff_file(s, path, kind, size, claimed, err);
}

/* Why a file of this kind is no source: said once, here, for every command. */
static ti_status no_reader(ti_file_kind kind, uint64_t size, ti_error *err)
{
	if (kind == TI_FILE_UNKNOWN && size < 8)
		return TI_FAIL(err, TI_E_CORRUPT, "a file of %llu byte%s, too short to be any model file",
		               (unsigned long long)size, size == 1 ? "" : "s");
	switch (kind) {
	case TI_FILE_EMPTY:
		return TI_FAIL(err, TI_E_CORRUPT, "empty file");
	case TI_FILE_PICKLE:
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a bare pickle, not a torch.save file: torch.load cannot load it "
		               "either ('tinspect scan' says what it would call)");
	case TI_FILE_TEXT:
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a text file, not a model file");
	default:
		if (ti_file_kind_is_foreign_archive(kind))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "%s, not a torch.save file; its members are not read",
			               ti_file_kind_name(kind));
		return TI_FAIL(err, TI_E_UNSUPPORTED, "not a model file tinspect reads: it is %s", ti_file_kind_name(kind));
	}
}

/*
 * A zip that no row claims from its first bytes: read once as a torch
 * checkpoint (opened and judged now), and read on by the row that claims
 * it from that checkpoint.
 */
static ti_status open_zip_checkpoint(ti_source *s, const char *path, ti_error *err)
{
	s->format = TI_SOURCE_TORCH_ZIP;
	source_part *p;
	ti_status st = source_add_part(s, path, &p, err);
	if (st || (st = ti_ckpt_open_io(p->io, NULL, &p->ckpt, err)))
		return st;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i]->kind == TI_FILE_ZIP && rows[i]->claims_checkpoint && rows[i]->claims_checkpoint(p->ckpt)) {
			s->format = rows[i]->format;
			return rows[i]->read_checkpoint(s, p, err);
		}
	return TI_FAIL(err, TI_E_UNSUPPORTED, "no reader claims this zip"); /* the torch zip row claims every one */
}

/* Opens path with the row its content names; a folder that stands for a file in it, with that file's. */
static ti_status open_by_content(ti_source *s, const char *path, ti_error *err)
{
	ti_file_kind kind = TI_FILE_UNKNOWN;
	uint64_t size = 0;
	const source_row *row = NULL;
	ti_status st;
	if (ti_source_is_hf_repo(path)) { /* a repository on the Hub, as a folder is read */
		const char *file;
		s->format = TI_SOURCE_HF_SHARDED;
		return (st = source_hf_repo_weights(s, path, &file, err)) ? st : open_by_content(s, file, err);
	}
	st = sniff_path(s, path, &kind, &size, &row, err);
	if (st)
		return st;
	if (kind == TI_FILE_ZIP && !row)
		return open_zip_checkpoint(s, path, err);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && !row; i++)
		if (rows[i]->kind == kind)
			row = rows[i];
	if (!row)
		return no_reader(kind, size, err);
	s->format = row->format;
	if (!row->stands_for)
		return row->open(s, path, err);
	const char *file;
	return (st = row->stands_for(s, path, &file, err)) ? st : open_by_content(s, file, err);
}

ti_status ti_source_open(const char *path, ti_source **out, ti_error *err)
{
	*out = NULL;
	ti_error_clear(err);
	ti_source *s = new_source(TI_SOURCE_TORCH_ZIP);
	if (!s || !(s->path = ti_arena_strdup(&s->arena, path))) {
		free(s);
		return source_out_of_memory(err);
	}
	ti_status st = open_by_content(s, path, err);
	ti_io_close(s->sniffed); /* a row that read it by its path alone (a folder's index) */
	s->sniffed = NULL;
	if (st) {
		ti_source_close(s);
		return st;
	}
	*out = s;
	return TI_OK;
}

void ti_source_close(ti_source *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->part_count; i++) {
		if (s->parts[i].release)
			s->parts[i].release(s->parts[i].state);
		ti_ckpt_close(s->parts[i].ckpt);
		ti_st_close(s->parts[i].st);
		ti_gguf_close(s->parts[i].gguf);
		ti_io_close(s->parts[i].io);
	}
	ti_dcp_close(s->dcp);
	ti_arena_release(&s->arena);
	free(s);
}

/* A source with no file: what a model description's parameters become (description.c). */
ti_status source_new_empty(ti_source_format format, ti_source **out, ti_error *err)
{
	if (!(*out = new_source(format)))
		return source_out_of_memory(err);
	(*out)->path = "";
	return TI_OK;
}

/* ---- generated storages ---- */

ti_status ti_source_set_generator(ti_source *s, size_t storage, ti_source_generator gen, const void *ctx,
                                  ti_error *err)
{
	if (listed(s)->list_status) {
		*err = s->list_error;
		return s->list_status;
	}
	if (storage >= s->storage_count)
		return TI_FAIL(err, TI_E_INVALID, "no storage %zu", storage);
	s->places[storage].gen = gen;
	s->places[storage].gen_ctx = ctx;
	s->storages[storage].has_data = true;
	return TI_OK;
}

ti_source_generator ti_source_generator_of(const ti_source *s, size_t storage, const void **ctx)
{
	if (storage >= listed(s)->storage_count || !s->places[storage].gen)
		return NULL;
	if (ctx)
		*ctx = s->places[storage].gen_ctx;
	return s->places[storage].gen;
}

void *ti_source_alloc(ti_source *s, size_t size)
{
	return ti_arena_calloc(&s->arena, 1, size ? size : 1);
}

/* ---- queries ---- */

const ti_entry *ti_source_entries(ti_source *s, size_t *count, ti_error *err)
{
	*count = 0;
	if (s->part_count == 1) {
		*count = s->parts[0].entry_count;
		return s->parts[0].entries;
	}
	if (!s->entries) {
		size_t n = 0;
		for (size_t i = 0; i < s->part_count; i++)
			n += s->parts[i].entry_count;
		ti_entry *all = ti_arena_calloc(&s->arena, n + 1, sizeof(*all));
		if (!all) {
			source_out_of_memory(err);
			return NULL;
		}
		for (size_t i = 0, at = 0; i < s->part_count; at += s->parts[i++].entry_count)
			if (s->parts[i].entry_count)
				memcpy(all + at, s->parts[i].entries, s->parts[i].entry_count * sizeof(*all));
		s->entries = all;
		s->entry_count = n;
	}
	*count = s->entry_count;
	return s->entries;
}

const ti_source_module *ti_source_modules(const ti_source *s, size_t *count)
{
	*count = s->module_count;
	return s->modules;
}

ti_source_format ti_source_get_format(const ti_source *s) { return s->format; }
const char *ti_source_path(const ti_source *s) { return s->path; }
size_t ti_source_file_count(const ti_source *s) { return s->part_count; }
size_t ti_source_tensor_count(const ti_source *s) { return listed(s)->tensor_count; }
size_t ti_source_storage_count(const ti_source *s) { return listed(s)->storage_count; }
size_t ti_source_metadata_count(const ti_source *s) { return s->metadata_count; }

const char *ti_source_file_at(const ti_source *s, size_t i)
{
	return i < s->part_count ? s->parts[i].path : NULL;
}

ti_ckpt *ti_source_checkpoint(ti_source *s, size_t i)
{
	return i < s->part_count ? s->parts[i].ckpt : NULL;
}

ti_scan_severity ti_source_safety(const ti_source *s, size_t i, const ti_scan_finding **findings, size_t *count)
{
	*findings = NULL;
	*count = 0;
	if (i < s->part_count && s->parts[i].judged) {
		*findings = s->parts[i].findings;
		*count = s->parts[i].finding_count;
		return s->parts[i].worst;
	}
	if (i < s->part_count && !s->parts[i].ckpt) { /* a pickle of a part with no checkpoint: an object .npy */
		*findings = s->parts[i].findings;
		*count = s->parts[i].finding_count;
		return s->parts[i].safety;
	}
	if (i >= s->part_count)
		return TI_SCAN_SAFE;
	return ti_ckpt_safety(s->parts[i].ckpt, findings, count);
}

const ti_source_tensor *ti_source_tensor_at(const ti_source *s, size_t i)
{
	return i < listed(s)->tensor_count ? &s->tensors[i] : NULL;
}

const ti_source_storage *ti_source_storage_at(const ti_source *s, size_t i)
{
	return i < listed(s)->storage_count ? &s->storages[i] : NULL;
}

const ti_source_pair *ti_source_metadata_at(const ti_source *s, size_t i)
{
	return i < s->metadata_count ? &s->metadata[i] : NULL;
}

/* ---- reading ---- */

/* Finds a torch zip record's payload offset on first use. */
static ti_status resolve_place(source_place *p, ti_error *err)
{
	if (p->record < 0)
		return TI_OK;
	const ti_record *rec = ti_ckpt_record(p->ckpt, (size_t)p->record);
	if (rec->method != 0)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "storage record '%s' is compressed: torch.save stores them", rec->name);
	ti_status st = ti_ckpt_record_payload_offset(p->ckpt, (size_t)p->record, &p->offset, err);
	if (!st)
		p->record = -1;
	return st;
}

ti_status ti_source_read(ti_source *s, size_t storage, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	if (listed(s)->list_status) {
		*err = s->list_error;
		return s->list_status;
	}
	if (storage >= s->storage_count || !s->storages[storage].has_data)
		return TI_FAIL(err, TI_E_INVALID, "storage %zu has no data to read", storage);
	const ti_source_storage *st = &s->storages[storage];
	if (offset > st->nbytes || n > st->nbytes - offset)
		return TI_FAIL(err, TI_E_INVALID, "read of %zu bytes at %llu passes the storage's %llu bytes", n,
		               (unsigned long long)offset, (unsigned long long)st->nbytes);
	source_place *p = &s->places[storage];
	size_t esize = ti_dtype_size(st->dtype);
	if ((p->gen || p->swap || p->conj || p->neg) && (!esize || offset % esize || n % esize))
		return TI_FAIL(err, TI_E_INVALID, "storage %zu is read in whole elements", storage);
	if (p->gen)
		return p->gen(p->gen_ctx, st->dtype, offset / esize, n / esize, buf, err);
	ti_status rs = resolve_place(p, err);
	if (rs)
		return rs;
	char *b = buf;
	size_t total = n;
	if (p->read) {
		rs = p->read(p->read_ctx, p->offset + offset, buf, n, err);
		n = rs ? total : 0; /* read whole, or failed */
		if (rs)
			return rs;
	}
	if (n) {
		size_t got;
		if ((rs = ti_io_read(p->io, p->offset + offset, b, n, &got, err)))
			return rs;
		if (got < n)
			return TI_FAIL(err, TI_E_IO, "cannot read tensor data: the file is shorter than it was");
	}
	if (p->swap)
		ti_dtype_swap_bytes(st->dtype, buf, total / esize);
	if (p->conj || p->neg)
		ti_dtype_resolve(st->dtype, p->conj, p->neg, buf, total / esize);
	return TI_OK;
}

/* The place of storage i when its bytes are a local file's as they lie (not generated, swapped, inflated, remote). */
static source_place *file_bytes(ti_source *s, size_t storage)
{
	if (listed(s)->list_status || storage >= s->storage_count || !s->storages[storage].has_data)
		return NULL;
	source_place *p = &s->places[storage];
	if (p->gen || p->swap || p->conj || p->neg || p->read || !p->io || p->io->remote)
		return NULL;
	return p;
}

bool ti_source_file_order(ti_source *s, size_t storage, int *fd, uint64_t *order)
{
	const source_place *p = file_bytes(s, storage);
	if (!p)
		return false;
	*fd = p->io->fd;
	*order = p->record < 0 ? p->offset : ti_ckpt_record_place(p->ckpt, (size_t)p->record);
	return true;
}

typedef struct read_place {
	int fd; /* INT_MAX: not a local file's bytes */
	uint64_t at;
	size_t k;
} read_place;

static int by_read_place(const void *p, const void *q)
{
	const read_place *x = p, *y = q;
	if (x->fd != y->fd)
		return x->fd < y->fd ? -1 : 1;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return (x->k > y->k) - (x->k < y->k);
}

ti_status ti_source_read_order(ti_source *s, const size_t *which, size_t n, size_t *order, ti_error *err)
{
	read_place *places = malloc((n ? n : 1) * sizeof(*places));
	if (!places)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the order of %zu reads", n);
	for (size_t k = 0; k < n; k++) {
		const ti_source_tensor *t = ti_source_tensor_at(s, which[k]);
		read_place *p = &places[k];
		*p = (read_place){.fd = INT_MAX, .at = 0, .k = k};
		if (!t || !ti_source_file_order(s, t->storage, &p->fd, &p->at))
			continue; /* ti_source_file_order sets nothing when it says no */
		/* an offset so large that this wraps is refused by the read; here it only sorts */
		p->at += (uint64_t)ti_dtype_bits(t->dtype) * (uint64_t)(t->offset > 0 ? t->offset : 0) / 8;
	}
	qsort(places, n, sizeof(*places), by_read_place);
	for (size_t k = 0; k < n; k++)
		order[k] = places[k].k;
	free(places);
	return TI_OK;
}

bool ti_source_file_place(ti_source *s, size_t storage, int *fd, uint64_t *offset)
{
	if (!file_bytes(s, storage))
		return false;
	ti_error ignored;
	ti_error_clear(&ignored);
	if (resolve_place(&s->places[storage], &ignored))
		return false;
	*fd = s->places[storage].io->fd;
	*offset = s->places[storage].offset;
	return true;
}

bool ti_source_tensor_contiguous(const ti_source_tensor *t)
{
	if (t->numel == 0) /* c10: an empty tensor is contiguous, whatever its strides */
		return true;
	int64_t expected = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] == 1)
			continue;
		if (t->stride[i] != expected)
			return false;
		expected *= t->shape[i];
	}
	return true;
}
