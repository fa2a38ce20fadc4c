/*
 * npy.c - the source rows for NumPy files: a .npy array and a .npz archive
 * of them (np.savez stores its members, np.savez_compressed deflates them).
 *
 * Each array is one tensor, its own storage. A .npy's tensor is named after
 * the file's stem ("weights.npy" -> "weights"), as torch.save names its root
 * folder after the stem; a .npz member NAME.npy is named NAME, as np.load's
 * NpzFile names it. Big-endian arrays are swapped as they are read (the
 * place's swap, as for a torch zip whose byteorder is "big"); a Fortran-order
 * array is a view with column-major strides, so inspect shows its strides
 * and convert writes it in C order.
 *
 * A stored member is read in place with pread. A deflated one cannot be: its
 * bytes come from a libzip stream (zip_archive.h ti_zip_stream), at most one
 * open per archive, so memory stays bounded whatever the member count.
 *
 * An object array ('|O') holds a pickle of the array, which np.load runs
 * only with allow_pickle=True: its pickle goes through the pickle machine
 * with scan's observer, never executed, and is listed as a value (what the
 * machine makes of it), not a tensor; the part's findings are judged as scan
 * judges a torch zip's, so inspect and convert warn or refuse alike.
 */
#include "source/source_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/findings.h"
#include "format/zip_archive.h"
#include "tinspect/npy.h"

/* A member's bytes through a zip stream, opened on first need. */
typedef struct member_reader {
	struct npz_state *npz;
	size_t record;
	ti_zip_stream *stream;
} member_reader;

/* What a part keeps until ti_source_close: the archive, its one open stream, the pickles' findings. */
typedef struct npz_state {
	ti_zip *zip;
	member_reader *open; /* the reader whose stream is open, or NULL */
	member_reader *readers;
	size_t reader_count;
	scan_findings findings;
	bool has_findings;
} npz_state;

static void release_state(void *p)
{
	npz_state *s = p;
	for (size_t i = 0; i < s->reader_count; i++)
		ti_zip_stream_close(s->readers[i].stream);
	if (s->has_findings)
		scan_findings_release(&s->findings);
	ti_zip_close(s->zip);
	free(s->readers);
	free(s);
}

static ti_status member_read(void *ctx, uint64_t at, void *buf, size_t n, ti_error *err)
{
	member_reader *r = ctx;
	npz_state *s = r->npz;
	if (s->open != r) { /* one inflating stream at a time: each holds a window and buffers */
		if (s->open) {
			ti_zip_stream_close(s->open->stream);
			s->open->stream = NULL;
		}
		s->open = NULL;
		ti_status st = ti_zip_stream_open(s->zip, r->record, &r->stream, err);
		if (st)
			return st;
		s->open = r;
	}
	return ti_zip_stream_read(r->stream, at, buf, n, err);
}

/* A file's bytes with pread, as a pickle source for an object .npy. */
typedef struct file_window {
	ti_io *io;
	uint64_t base;
} file_window;

static ti_status file_read(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	file_window *w = ctx;
	size_t got;
	ti_status st = ti_io_read(w->io, w->base + offset, buf, n, &got, err);
	if (st)
		return st;
	if (got < n)
		return TI_FAIL(err, TI_E_IO, "cannot read: the file is shorter than it was");
	return TI_OK;
}

typedef struct member_window {
	member_reader *reader;
	uint64_t base;
} member_window;

static ti_status window_read(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	member_window *w = ctx;
	return member_read(w->reader, w->base + offset, buf, n, err);
}

/* The entry inspect lists for an array: a tensor saved from the CPU, its own storage. */
static ti_status add_entry(ti_source *s, source_part *p, const ti_source_tensor *t, ti_error *err)
{
	ti_entry *e = (ti_entry *)&p->entries[p->entry_count];
	ti_value *v = ti_arena_calloc(&s->arena, 1, sizeof(*v));
	ti_tensor *x = ti_arena_calloc(&s->arena, 1, sizeof(*x));
	ti_storage *sto = ti_arena_calloc(&s->arena, 1, sizeof(*sto));
	const char *key = ti_arena_printf(&s->arena, "%zu", t->storage);
	if (!v || !x || !sto || !key)
		return source_out_of_memory(err);
	*sto = (ti_storage){.key = key, .dtype = t->dtype, .numel = t->numel,
	                    .nbytes = (int64_t)s->storages[t->storage].nbytes, .location = "cpu",
	                    .record_index = -1, .tensor_count = 1, .index = t->storage};
	*x = (ti_tensor){.dtype = t->dtype, .layout = TI_LAYOUT_STRIDED, .ndim = t->ndim, .shape = t->shape,
	                 .stride = t->stride, .numel = t->numel, .nbytes = sto->nbytes, .storage = sto, .rebuild = "npy"};
	v->kind = TI_TENSOR;
	v->as.tensor = x;
	*e = (ti_entry){t->name, v};
	p->entry_count++;
	return TI_OK;
}

/* Column-major strides: what a Fortran-order array's elements lie in. */
static int64_t *fortran_strides(ti_source *s, const int64_t *shape, int ndim)
{
	int64_t *stride = ti_arena_calloc(&s->arena, (size_t)ndim + 1, sizeof(*stride));
	int64_t acc = 1;
	for (int k = 0; stride && k < ndim; k++) {
		stride[k] = acc;
		acc *= shape[k] > 0 ? shape[k] : 1;
	}
	return stride;
}

/*
 * Runs an object array's pickle through the pickle machine with scan's
 * observer: its value becomes the entry, its findings the part's.
 */
static ti_status add_object(ti_source *s, source_part *p, npz_state *state, const char *name, const char *record,
                            const ti_pickle_source *pickle, uint64_t base, ti_error *err)
{
	if (!state->has_findings) {
		scan_findings_init(&state->findings, NULL);
		state->has_findings = true;
	}
	scan_findings_record(&state->findings, record);
	scan_add(&state->findings, TI_SCAN_UNKNOWN, "pickle", (int64_t)base, NULL, NULL, NULL,
	         "an object array: its data is a pickle, which np.load runs only with allow_pickle=True");
	state->findings.offset_base = (int64_t)base;
	ti_pickle_hooks hooks = {.ctx = &state->findings, .observe = scan_observe, .diverge = scan_diverge};
	ti_limits lim;
	ti_limits_default(&lim);
	ti_value *value = NULL;
	size_t consumed = 0;
	ti_status st = ti_pickle_load_source(pickle, &s->arena, &hooks, &lim.pickle, &value, &consumed, err);
	if (st) {
		if (err->offset >= 0)
			err->offset += (int64_t)base;
		return st;
	}
	if (state->findings.failed)
		return source_out_of_memory(err);
	p->safety = state->findings.worst;
	p->findings = state->findings.items;
	p->finding_count = state->findings.count;
	ti_entry *e = (ti_entry *)&p->entries[p->entry_count++];
	*e = (ti_entry){name, value};
	return TI_OK;
}

/*
 * Adds the array whose header h was read: a tensor over a storage at where
 * (its offset the start of the data), or, for an object array, a value.
 */
static ti_status add_array(ti_source *s, source_part *p, const char *name, const ti_npy_header *h, source_place where,
                           ti_error *err)
{
	int64_t *shape = ti_arena_calloc(&s->arena, (size_t)h->ndim + 1, sizeof(*shape));
	if (!shape)
		return source_out_of_memory(err);
	memcpy(shape, h->shape, (size_t)h->ndim * sizeof(*shape));
	int64_t *stride = h->fortran_order ? fortran_strides(s, shape, h->ndim) : source_contiguous_strides(s, shape, h->ndim);
	ti_source_tensor *t = source_add_tensor(s);
	where.offset += h->data_offset;
	where.record = -1;
	where.swap = h->big_endian;
	if (!t || !stride || !source_add_storage(s, h->dtype, h->nbytes, true, where))
		return source_out_of_memory(err);
	t->name = name;
	t->dtype = h->dtype;
	t->ndim = h->ndim;
	t->shape = shape;
	t->stride = stride;
	t->numel = h->numel;
	t->storage = s->storage_count - 1;
	return add_entry(s, p, t, err);
}

/* The part's state and room for its entries. */
static ti_status begin_part(ti_source *s, source_part *p, size_t arrays, npz_state **out, ti_error *err)
{
	npz_state *state = calloc(1, sizeof(*state));
	p->entries = ti_arena_calloc(&s->arena, arrays + 1, sizeof(ti_entry));
	if (!state || !p->entries) {
		free(state);
		return source_out_of_memory(err);
	}
	p->state = state;
	p->release = release_state;
	*out = state;
	return TI_OK;
}

/* The file's stem: "dir/weights.npy" -> "weights"; "array" when nothing is left. */
static const char *stem(ti_source *s, const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	return n ? ti_arena_printf(&s->arena, "%.*s", (int)n, base) : "array";
}

static ti_status open_npy(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	npz_state *state = NULL;
	ti_status st = source_add_part(s, path, &p, err);
	if (!st)
		st = begin_part(s, p, 1, &state, err);
	if (st)
		return st;
	uint64_t size = p->io->size;
	uint8_t head[TI_NPY_HEAD_MAX];
	size_t n = (uint64_t)size < sizeof(head) ? (size_t)size : sizeof(head);
	file_window whole = {p->io, 0};
	ti_npy_header h;
	if ((st = file_read(&whole, 0, head, n, err)) || (st = ti_npy_parse(head, n, (uint64_t)size, &h, err)))
		return st;
	const char *name = stem(s, path);
	if (!name)
		return source_out_of_memory(err);
	if (h.object) {
		file_window w = {p->io, h.data_offset};
		ti_pickle_source pickle = {(uint64_t)size - h.data_offset, file_read, &w, NULL};
		return add_object(s, p, state, name, NULL, &pickle, h.data_offset, err);
	}
	return add_array(s, p, name, &h, (source_place){.io = p->io, .record = -1}, err);
}

/* One member NAME.npy of the archive. */
static ti_status add_member(ti_source *s, source_part *p, npz_state *state, size_t i, ti_error *err)
{
	const ti_record *r = &ti_zip_records(state->zip)[i];
	size_t len = strlen(r->name);
	if (len < 4 || strcmp(r->name + len - 4, ".npy"))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "not a .npy array: a .npz holds only NAME.npy members");
	member_reader *reader = &state->readers[state->reader_count++];
	*reader = (member_reader){state, i, NULL};
	uint8_t head[TI_NPY_HEAD_MAX];
	size_t n = r->size < sizeof(head) ? (size_t)r->size : sizeof(head);
	ti_npy_header h;
	ti_status st = member_read(reader, 0, head, n, err);
	if (!st)
		st = ti_npy_parse(head, n, r->size, &h, err);
	if (st)
		return st;
	const char *name = ti_arena_printf(&s->arena, "%.*s", (int)(len - 4), r->name);
	if (!name)
		return source_out_of_memory(err);
	if (h.object) {
		member_window w = {reader, h.data_offset};
		ti_pickle_source pickle = {r->size - h.data_offset, window_read, &w, NULL};
		return add_object(s, p, state, name, r->name, &pickle, h.data_offset, err);
	}
	source_place where = {.io = p->io, .record = -1};
	if (r->method == 0) {
		if (r->compressed_size != r->size)
			return TI_FAIL(err, TI_E_CORRUPT, "stored member's sizes disagree (%llu and %llu)",
			               (unsigned long long)r->size, (unsigned long long)r->compressed_size);
		if ((st = ti_zip_payload_offset(state->zip, i, &where.offset, err)))
			return st;
	} else {
		where.read = member_read;
		where.read_ctx = reader;
	}
	return add_array(s, p, name, &h, where, err);
}

static ti_status open_npz(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	npz_state *state = NULL;
	ti_limits lim;
	ti_limits_default(&lim);
	ti_zip *zip;
	ti_status st = source_add_part(s, path, &p, err);
	if (!st)
		st = ti_zip_open_io(p->io, lim.records_max, NULL, &zip, err);
	if (st)
		return st;
	size_t count = ti_zip_count(zip);
	if ((st = begin_part(s, p, count, &state, err))) {
		ti_zip_close(zip);
		return st;
	}
	state->zip = zip;
	if (!(state->readers = calloc(count + 1, sizeof(*state->readers))))
		return source_out_of_memory(err);
	if ((st = source_reserve(s, count, count, err)))
		return st;
	for (size_t i = 0; i < count && !st; i++) {
		st = add_member(s, p, state, i, err);
		if (st && !err->member[0])
			ti_error_at(err, ti_zip_records(zip)[i].name, err->offset);
	}
	if (state->open) { /* listing is done: no stream stays open for nothing */
		ti_zip_stream_close(state->open->stream);
		state->open->stream = NULL;
		state->open = NULL;
	}
	return st;
}

/*
 * A zip is a .npz when its first member is named *.npy (ti_npz_sniff): its
 * local header's 30 bytes, then as much more as its name takes. Every zip
 * opened asks, so it reads what the answer needs, not the 64 KiB a name
 * may take (on the stack, that was 16 pages more for each command).
 */
static bool claims_npz(ti_io *io)
{
	uint8_t small[30 + 226];
	size_t got, size;
	ti_error ignored;
	if (ti_io_read(io, 0, small, 30, &got, &ignored) || (size = ti_npz_sniff_size(small, got)) <= 30 + 4)
		return false;
	uint8_t *head = small;
	if (size > sizeof(small)) { /* a name past 226 bytes: rare, on the heap */
		if (!(head = malloc(size)))
			return false;
		memcpy(head, small, 30);
	}
	bool npz = !ti_io_read(io, 30, head + 30, size - 30, &got, &ignored) && got == size - 30 &&
	           ti_npz_sniff(head, size);
	if (head != small)
		free(head);
	return npz;
}

const source_row source_npy = {.format = TI_SOURCE_NPY, .kind = TI_FILE_NPY, .open = open_npy};
const source_row source_npz = {.format = TI_SOURCE_NPZ, .kind = TI_FILE_ZIP, .open = open_npz,
                               .claims_head = claims_npz};
