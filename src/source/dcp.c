/*
 * dcp.c - the source row for a torch.distributed.checkpoint folder: its
 * .metadata (format/dcp.c) lists every tensor with its global shape and
 * its chunks; each tensor is one storage whose bytes are assembled as they
 * are read, from its chunks where they lie in the __R_N.distcp files.
 *
 * A chunk is a whole torch.save zip written into the data file at the
 * byte range its _StorageInfo gives (filesystem.py _write_item: root
 * 'archive', offsets counted from the blob's start). It is opened on the
 * first read that needs it: its zip walked (format/zip_walk.c reads any byte
 * range), its data.pkl run through the torch interpreter, which must give
 * one strided tensor of the chunk's sizes and the tensor's dtype, and its
 * data/<key> record found stored. Reading then copies runs: as long a run
 * as the chunk and the tensor both hold in order (a row-wise chunk is one
 * run; a column-wise one, one per row), element by element for a chunk
 * saved as a non-contiguous view. Memory never grows with the data.
 */
#include "source/source_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/torch_unpickle.h"
#include "format/zip_walk.h"
#include "tinspect/dcp.h"

enum {
	CHUNK_RECORDS_MAX = 64,         /* torch.save of one tensor writes five */
	CHUNK_PICKLE_MAX = 1 << 20,     /* its data.pkl is a few hundred bytes */
};

/* A chunk as the first read found it. */
typedef struct chunk_state {
	bool opened;
	ti_status status;   /* why it cannot be read, once tried */
	ti_error error;
	uint64_t payload;   /* file offset of its storage's first byte */
	int64_t storage_offset;
	int64_t *stride;    /* the chunk tensor's, in elements */
	bool contiguous, swap;
} chunk_state;

/* What one tensor's storage generator reads from. */
typedef struct dcp_tensor {
	ti_source *s;
	const ti_dcp_item *item;
	chunk_state *state; /* one per chunk */
	size_t last;        /* the chunk the previous run came from */
} dcp_tensor;

/* ---- a chunk's blob, as a byte source ---- */

typedef struct blob {
	ti_io *io;
	uint64_t base;
} blob;

static ti_status blob_read(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	const blob *b = ctx;
	size_t got;
	ti_status st = ti_io_read(b->io, b->base + offset, buf, n, &got, err);
	if (!st && got < n)
		return TI_FAIL(err, TI_E_IO, "cannot read: the file is shorter than it was");
	return st;
}

static void ignore_report(void *ctx, ti_scan_severity severity, const char *record, int64_t offset, const char *message)
{
	(void)ctx, (void)severity, (void)record, (void)offset, (void)message;
}

static const zw_entry *find_entry(const zw_archive *a, const char *root, size_t root_len, const char *name)
{
	for (size_t i = 0; i < a->count; i++) {
		const zw_entry *e = &a->entries[i];
		if (!strncmp(e->name, root, root_len) && e->name[root_len] == '/' && !strcmp(e->name + root_len + 1, name))
			return e;
	}
	return NULL;
}

/* The chunk's tensor, from its data.pkl: checked against what .metadata says of it. */
static ti_status chunk_tensor(dcp_tensor *t, size_t i, const ti_pickle_source *src, const zw_archive *a,
                              const char *root, size_t root_len, chunk_state *cs, ti_error *err)
{
	const ti_dcp_item *item = t->item;
	const ti_dcp_chunk *c = &item->chunks[i];
	const zw_entry *pkl = find_entry(a, root, root_len, "data.pkl");
	if (!pkl || !pkl->readable || pkl->method != 0 || pkl->size > CHUNK_PICKLE_MAX ||
	    pkl->data_offset > src->size || pkl->size > src->size - pkl->data_offset)
		return TI_FAIL(err, TI_E_CORRUPT, "its torch.save blob has no stored data.pkl of at most %d bytes",
		               CHUNK_PICKLE_MAX);
	blob inner = {((const blob *)src->ctx)->io, ((const blob *)src->ctx)->base + pkl->data_offset};
	ti_pickle_source psrc = {pkl->size, blob_read, &inner, NULL};
	ti_arena arena;
	ti_arena_init(&arena, (size_t)64 << 20);
	ti_torch torch;
	ti_torch_init(&torch, &arena, 16);
	ti_pickle_hooks hooks;
	ti_torch_hooks(&torch, &hooks);
	ti_value *root_value = NULL;
	ti_status s = ti_pickle_load_source(&psrc, &arena, &hooks, NULL, &root_value, NULL, err);
	const ti_tensor *x = !s && root_value->kind == TI_TENSOR ? root_value->as.tensor : NULL;
	if (s) {
		ti_error_at(err, NULL, err->offset >= 0 ? err->offset + (int64_t)pkl->data_offset : -1);
	} else if (!x || x->layout != TI_LAYOUT_STRIDED || !x->storage || x->conj || x->neg ||
	           ti_dtype_is_quantized(x->dtype)) {
		s = TI_FAIL(err, TI_E_CORRUPT, "its torch.save blob holds no plain tensor");
	} else if (x->dtype != item->dtype || x->ndim != item->ndim ||
	           (item->ndim && memcmp(x->shape, c->sizes, (size_t)item->ndim * sizeof(int64_t)))) {
		s = TI_FAIL(err, TI_E_CORRUPT, "its torch.save blob holds a %s tensor of another shape than the chunk's",
		            ti_dtype_name(x->dtype));
	} else {
		int64_t numel, extent;
		char name[1024];
		snprintf(name, sizeof(name), "data/%.900s", x->storage->key);
		const zw_entry *rec = find_entry(a, root, root_len, name);
		if (ti_shape_check(x->ndim, x->shape, x->stride, x->storage_offset, &numel, &extent, err)) {
			s = err->code;
		} else if (!rec || !rec->readable || rec->method != 0 || rec->size != (uint64_t)x->storage->nbytes ||
		           rec->data_offset > src->size || rec->size > src->size - rec->data_offset ||
		           (uint64_t)extent > (uint64_t)x->storage->nbytes / ti_dtype_size(x->dtype)) {
			s = TI_FAIL(err, TI_E_CORRUPT, "its torch.save blob has no stored record of its storage's %" PRId64
			            " bytes", x->storage->nbytes);
		} else {
			cs->payload = c->offset + rec->data_offset;
			cs->storage_offset = x->storage_offset;
			cs->stride = ti_source_alloc(t->s, ((size_t)x->ndim + 1) * sizeof(int64_t));
			if (!cs->stride)
				s = source_out_of_memory(err);
			else if (x->ndim)
				memcpy(cs->stride, x->stride, (size_t)x->ndim * sizeof(int64_t));
			cs->contiguous = ti_tensor_is_contiguous(x);
		}
	}
	ti_torch_release(&torch);
	ti_arena_release(&arena);
	return s;
}

/* Opens chunk i's torch.save blob: once; a failure is remembered and repeated. */
static ti_status open_chunk(dcp_tensor *t, size_t i, ti_error *err)
{
	chunk_state *cs = &t->state[i];
	if (cs->opened) {
		if (cs->status)
			*err = cs->error;
		return cs->status;
	}
	const ti_dcp_chunk *c = &t->item->chunks[i];
	const source_part *part = &t->s->parts[c->file + 1];
	blob b = {part->io, c->offset};
	ti_pickle_source src = {c->length, blob_read, &b, NULL};
	zw_archive a;
	ti_error_clear(&cs->error);
	ti_status s = zw_walk(&src, CHUNK_RECORDS_MAX, ignore_report, NULL, &a, &cs->error);
	if (!s) {
		const char *slash = a.count ? strchr(a.entries[0].name, '/') : NULL;
		if (!slash) {
			s = TI_FAIL(&cs->error, TI_E_CORRUPT, "its torch.save blob has no root folder");
		} else {
			size_t root_len = (size_t)(slash - a.entries[0].name);
			s = chunk_tensor(t, i, &src, &a, a.entries[0].name, root_len, cs, &cs->error);
			/* torch.load swaps a typed storage's bytes when the byteorder record says big */
			const zw_entry *order = s ? NULL : find_entry(&a, a.entries[0].name, root_len, "byteorder");
			char text[8] = "";
			if (order && order->readable && order->method == 0 && order->size == 3 &&
			    order->data_offset <= c->length - 3 && !blob_read(&b, order->data_offset, text, 3, &cs->error))
				cs->swap = !memcmp(text, "big", 3);
		}
		zw_free(&a);
	}
	if (s) {
		const char *file = strrchr(part->path, '/') ? strrchr(part->path, '/') + 1 : part->path;
		char where[512];
		snprintf(where, sizeof(where), "'%.200s' chunk %zu (bytes %" PRIu64 " to %" PRIu64 " of '%.200s')",
		         t->item->name, i, c->offset, c->offset + c->length, file);
		ti_error copy = cs->error;
		TI_FAIL(&cs->error, s, "%s: %s", where, copy.message);
		cs->error.offset = copy.offset >= 0 ? copy.offset + (int64_t)c->offset : (int64_t)c->offset;
		ti_error_at(&cs->error, file, -1);
	}
	cs->opened = true;
	cs->status = s;
	if (s)
		*err = cs->error;
	return s;
}

/* ---- assembling a tensor from its chunks ---- */

/* True if chunk c holds the element at global index idx. */
static bool holds(const ti_dcp_chunk *c, const int64_t *idx, int ndim)
{
	for (int k = 0; k < ndim; k++)
		if (idx[k] < c->offsets[k] || idx[k] >= c->offsets[k] + c->sizes[k])
			return false;
	return true;
}

static ti_status read_at(ti_io *io, uint64_t at, void *buf, size_t n, ti_error *err)
{
	blob b = {io, at};
	return blob_read(&b, 0, buf, n, err);
}

/*
 * The generator of a DCP tensor's storage: count elements from global
 * element first on, in row-major order, each run read from the chunk
 * that holds it.
 */
static ti_status assemble(const void *ctx, ti_dtype dtype, uint64_t first, size_t count, void *out, ti_error *err)
{
	dcp_tensor *t = (dcp_tensor *)ctx; /* ours: made by open_dcp in the source's arena, never const */
	const ti_dcp_item *item = t->item;
	int ndim = item->ndim;
	size_t esize = ti_dtype_size(dtype);
	int64_t idx[TI_MAX_DIMS];
	char *o = out;
	while (count) {
		uint64_t rest = first;
		for (int k = ndim - 1; k >= 0; k--) {
			idx[k] = item->shape[k] ? (int64_t)(rest % (uint64_t)item->shape[k]) : 0;
			rest = item->shape[k] ? rest / (uint64_t)item->shape[k] : 0;
		}
		size_t ci = t->last;
		if (ci >= item->chunk_count || !holds(&item->chunks[ci], idx, ndim))
			for (ci = 0; ci < item->chunk_count && !holds(&item->chunks[ci], idx, ndim); ci++)
				;
		if (ci == item->chunk_count)
			return TI_FAIL(err, TI_E_CORRUPT, "'%.200s': no chunk holds element %" PRIu64, item->name, first);
		t->last = ci;
		ti_status s = open_chunk(t, ci, err);
		if (s)
			return s;
		const ti_dcp_chunk *c = &item->chunks[ci];
		const chunk_state *cs = &t->state[ci];
		uint64_t run = 1;
		if (cs->contiguous && ndim) {
			/* dims after j are whole in the chunk: it holds them in the tensor's order */
			int j = ndim - 1;
			while (j > 0 && c->sizes[j] == item->shape[j])
				j--;
			uint64_t inner = 1, pos = 0;
			for (int k = ndim - 1; k > j; k--) {
				pos += (uint64_t)idx[k] * inner;
				inner *= (uint64_t)item->shape[k];
			}
			run = (uint64_t)(c->offsets[j] + c->sizes[j] - idx[j]) * inner - pos;
		}
		if (run > count)
			run = count;
		int64_t local = cs->storage_offset;
		for (int k = 0; k < ndim; k++)
			local += (idx[k] - c->offsets[k]) * cs->stride[k];
		const source_part *part = &t->s->parts[c->file + 1];
		s = read_at(part->io, cs->payload + (uint64_t)local * esize, o, (size_t)run * esize, err);
		if (s) {
			ti_error_at(err, strrchr(part->path, '/') ? strrchr(part->path, '/') + 1 : part->path, -1);
			return s;
		}
		if (cs->swap)
			ti_dtype_swap_bytes(dtype, o, (size_t)run);
		o += run * esize;
		first += run;
		count -= (size_t)run;
	}
	return TI_OK;
}

/* ---- opening ---- */

/* A tensor's value for inspect: what torch.load of the whole tensor would give, on the meta device. */
static ti_value *tensor_value(ti_source *s, const ti_dcp_item *item, const int64_t *stride, size_t storage)
{
	ti_value *v = ti_source_alloc(s, sizeof(*v));
	ti_tensor *x = ti_source_alloc(s, sizeof(*x));
	ti_storage *st = ti_source_alloc(s, sizeof(*st));
	if (!v || !x || !st)
		return NULL;
	int64_t nbytes = item->numel * (int64_t)ti_dtype_size(item->dtype);
	*st = (ti_storage){.key = item->name, .dtype = item->dtype, .numel = item->numel, .nbytes = nbytes,
	                   .location = "cpu", .record_index = -1, .tensor_count = 1, .index = storage};
	*x = (ti_tensor){.dtype = item->dtype, .layout = TI_LAYOUT_STRIDED, .ndim = item->ndim,
	                 .requires_grad = item->requires_grad, .shape = item->shape, .stride = stride,
	                 .numel = item->numel, .nbytes = nbytes, .storage = st};
	v->kind = TI_TENSOR;
	v->as.tensor = x;
	return v;
}

/* Every chunk's bytes lie inside its file. */
static ti_status check_ranges(ti_source *s, const ti_dcp *dcp, const uint64_t *sizes, ti_error *err)
{
	for (size_t i = 0; i < ti_dcp_item_count(dcp); i++) {
		const ti_dcp_item *item = ti_dcp_item_at(dcp, i);
		for (size_t k = 0; k < item->chunk_count; k++) {
			const ti_dcp_chunk *c = &item->chunks[k];
			if (c->offset > sizes[c->file] || c->length > sizes[c->file] - c->offset) {
				TI_FAIL(err, TI_E_CORRUPT, "'%.200s' %s %zu: bytes %" PRIu64 " to %" PRIu64 " pass the end of the "
				        "file's %" PRIu64, item->name, item->is_tensor ? "chunk" : "item", k, c->offset,
				        c->offset + c->length, sizes[c->file]);
				ti_error_at(err, ti_dcp_file_at(dcp, c->file), -1);
				return TI_E_CORRUPT;
			}
		}
	}
	(void)s;
	return TI_OK;
}

static ti_status list_items(ti_source *s, const ti_dcp *dcp, source_part *meta, ti_error *err)
{
	size_t n = ti_dcp_item_count(dcp);
	ti_entry *entries = ti_source_alloc(s, (n + 1) * sizeof(*entries));
	if (!entries || source_reserve(s, n, n, err))
		return source_out_of_memory(err);
	for (size_t i = 0; i < n; i++) {
		const ti_dcp_item *item = ti_dcp_item_at(dcp, i);
		entries[i].name = item->name;
		entries[i].value = item->value; /* a bytes item: its BytesStorageMetadata */
		if (!item->is_tensor)
			continue;
		dcp_tensor *gen = ti_source_alloc(s, sizeof(*gen));
		chunk_state *state = ti_source_alloc(s, (item->chunk_count + 1) * sizeof(*state));
		int64_t *stride = source_contiguous_strides(s, item->shape, item->ndim);
		if (!gen || !state || !stride)
			return source_out_of_memory(err);
		*gen = (dcp_tensor){.s = s, .item = item, .state = state};
		source_place where = {.io = NULL, .record = -1, .gen = assemble, .gen_ctx = gen};
		uint64_t nbytes = (uint64_t)item->numel * ti_dtype_size(item->dtype);
		if (!source_add_storage(s, item->dtype, nbytes, true, where))
			return source_out_of_memory(err);
		ti_source_tensor *t = source_add_tensor(s);
		if (!t || !(entries[i].value = tensor_value(s, item, stride, s->storage_count - 1)))
			return source_out_of_memory(err);
		*t = (ti_source_tensor){.name = item->name, .dtype = item->dtype, .ndim = item->ndim, .shape = item->shape,
		                        .stride = stride, .numel = item->numel, .storage = s->storage_count - 1,
		                        .requires_grad = item->requires_grad, .chunks = item->chunks,
		                        .chunk_count = item->chunk_count,
		                        .unsupported = ti_dtype_is_quantized(item->dtype) ? "a quantized tensor" : NULL};
	}
	meta->entries = entries;
	meta->entry_count = n;
	return TI_OK;
}

static ti_status open_dcp(ti_source *s, const char *path, ti_error *err)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	char *meta_path = ti_arena_printf(&s->arena, "%.*s/.metadata", (int)len, path);
	if (!meta_path)
		return source_out_of_memory(err);
	source_part *meta;
	ti_status st = source_add_part(s, meta_path, &meta, err);
	if (st)
		return st;
	ti_dcp *dcp;
	if ((st = ti_dcp_open(meta_path, NULL, &dcp, err))) {
		ti_error_at(err, ".metadata", -1);
		return st;
	}
	s->dcp = dcp; /* closed with the source */
	size_t files = ti_dcp_file_count(dcp);
	uint64_t *sizes = ti_source_alloc(s, (files + 1) * sizeof(*sizes));
	if (!sizes)
		return source_out_of_memory(err);
	for (size_t i = 0; i < files; i++) {
		char *file = ti_arena_printf(&s->arena, "%.*s/%s", (int)len, path, ti_dcp_file_at(dcp, i));
		source_part *p;
		struct stat sb;
		if (!file)
			return source_out_of_memory(err);
		if (stat(file, &sb) && errno == ENOENT)
			return TI_FAIL(err, TI_E_IO, "data file '%s' named by '.metadata' is missing", ti_dcp_file_at(dcp, i));
		if ((st = source_add_part(s, file, &p, err)))
			return st;
		if (fstat(p->io->fd, &sb) || !S_ISREG(sb.st_mode))
			return TI_FAIL(err, TI_E_IO, "data file '%s' is not a regular file", ti_dcp_file_at(dcp, i));
		sizes[i] = (uint64_t)sb.st_size;
	}
	if ((st = check_ranges(s, dcp, sizes, err)))
		return st;
	if (ti_dcp_version(dcp)) {
		s->metadata = ti_source_alloc(s, sizeof(*s->metadata));
		if (!s->metadata)
			return source_out_of_memory(err);
		s->metadata[0] = (ti_source_pair){"version", ti_dcp_version(dcp)};
		s->metadata_count = 1;
	}
	return list_items(s, dcp, meta, err);
}

const source_row source_dcp = {.format = TI_SOURCE_DCP, .kind = TI_FILE_DCP, .open = open_dcp};
