/*
 * source.c - named tensors and their bytes from torch zips, safetensors and
 * sharded checkpoints (see tinspect/source.h).
 */
#include "tinspect/source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/checkpoint.h"
#include "tinspect/fill.h"
#include "tinspect/hf_index.h"
#include "tinspect/model.h"
#include "tinspect/safetensors.h"

/* Where a storage's bytes are: a file at an offset, or a fill policy (fill != NULL). */
typedef struct place {
	int fd;
	uint64_t offset;
	const ti_fill_policy *fill;
	ti_fill_key key;
} place;

/* One file of the source: a checkpoint or a safetensors file, and its descriptor for pread. */
typedef struct part {
	ti_ckpt *ckpt;
	ti_st_file *st;
	int fd;
	const char *path;
} part;

struct ti_source {
	ti_arena arena;
	ti_source_format format;
	part *parts;
	size_t part_count;
	ti_source_storage *storages;
	place *places;
	size_t storage_count, storage_capacity;
	ti_source_tensor *tensors;
	size_t tensor_count, tensor_capacity;
	ti_source_pair *metadata;
	size_t metadata_count;
};

enum { ARENA_MAX = (size_t)4 << 30 };

const char *ti_source_format_name(ti_source_format format)
{
	static const char *const names[] = {"torch-zip", "safetensors", "hf-sharded", "model"};
	return (unsigned)format < 4 ? names[format] : "?";
}

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

static ti_source_storage *add_storage(ti_source *s, ti_dtype dtype, uint64_t nbytes, bool has_data, place where)
{
	size_t cap = s->storage_capacity;
	ti_source_storage *st = grow(&s->arena, s->storages, s->storage_count, &cap, sizeof(*st));
	place *pl = st ? grow(&s->arena, s->places, s->storage_count, &s->storage_capacity, sizeof(*pl)) : NULL;
	if (!st || !pl)
		return NULL;
	s->storages = st;
	s->places = pl;
	st[s->storage_count] = (ti_source_storage){dtype, nbytes, has_data};
	pl[s->storage_count] = where;
	return &st[s->storage_count++];
}

static ti_source_tensor *add_tensor(ti_source *s)
{
	ti_source_tensor *t = grow(&s->arena, s->tensors, s->tensor_count, &s->tensor_capacity, sizeof(*t));
	if (!t)
		return NULL;
	s->tensors = t;
	memset(&t[s->tensor_count], 0, sizeof(*t));
	return &t[s->tensor_count++];
}

static ti_status out_of_memory(ti_error *err)
{
	return TI_FAIL(err, TI_E_NOMEM, "out of memory listing tensors");
}

static ti_source *new_source(void)
{
	ti_source *s = calloc(1, sizeof(*s));
	if (s)
		ti_arena_init(&s->arena, ARENA_MAX);
	return s;
}

/* ---- torch zip ---- */

static ti_status add_torch_zip(ti_source *s, const char *path, part *p, ti_error *err)
{
	ti_status st = ti_ckpt_open(path, NULL, &p->ckpt, err);
	if (st)
		return st;
	size_t first = s->storage_count, n = ti_ckpt_storage_count(p->ckpt);
	for (size_t i = 0; i < n; i++) {
		const ti_storage *sto = ti_ckpt_storage(p->ckpt, i);
		place where = {p->fd, 0, NULL, {0, 0}};
		bool has_data = sto->record_index >= 0;
		if (has_data) {
			const ti_record *rec = ti_ckpt_record(p->ckpt, (size_t)sto->record_index);
			if (rec->method != 0)
				return TI_FAIL(err, TI_E_UNSUPPORTED, "storage record '%s' is compressed: torch.save stores them",
				               rec->name);
			if ((st = ti_ckpt_record_payload_offset(p->ckpt, (size_t)sto->record_index, &where.offset, err)))
				return st;
		}
		if (!add_storage(s, sto->dtype, (uint64_t)sto->nbytes, has_data, where))
			return out_of_memory(err);
	}
	for (size_t i = 0; i < ti_ckpt_entry_count(p->ckpt); i++) {
		const ti_entry *e = ti_ckpt_entry(p->ckpt, i);
		if (e->value->kind != TI_TENSOR)
			continue;
		const ti_tensor *x = e->value->as.tensor;
		ti_source_tensor *t = add_tensor(s);
		if (!t)
			return out_of_memory(err);
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

/* ---- safetensors ---- */

static ti_status add_safetensors(ti_source *s, const char *path, part *p, bool keep_metadata, ti_error *err)
{
	ti_status st = ti_st_open(path, NULL, &p->st, err);
	if (st)
		return st;
	for (size_t i = 0; i < ti_st_tensor_count(p->st); i++) {
		const ti_st_tensor *x = ti_st_tensor_at(p->st, i);
		ti_source_tensor *t = add_tensor(s);
		int64_t *stride = ti_arena_calloc(&s->arena, (size_t)x->ndim + 1, sizeof(*stride));
		if (!t || !stride || !add_storage(s, x->dtype, x->nbytes, true, (place){p->fd, x->offset, NULL, {0, 0}}))
			return out_of_memory(err);
		int64_t acc = 1;
		for (int k = x->ndim - 1; k >= 0; k--) {
			stride[k] = acc;
			acc *= x->shape[k] > 0 ? x->shape[k] : 1;
		}
		t->name = x->name;
		t->dtype = x->dtype;
		t->ndim = x->ndim;
		t->shape = x->shape;
		t->stride = stride;
		t->numel = x->numel;
		t->storage = s->storage_count - 1;
	}
	/* "tie.NAME": "FIRST" (what convert writes for tied weights): NAME shares FIRST's data */
	size_t first = s->tensor_count - ti_st_tensor_count(p->st), count = s->tensor_count;
	for (size_t i = 0; i < ti_st_metadata_count(p->st); i++) {
		const ti_st_pair *m = ti_st_metadata_at(p->st, i);
		if (strncmp(m->key, "tie.", 4))
			continue;
		const ti_source_tensor *target = NULL;
		for (size_t k = first; k < count && !target; k++)
			if (!strcmp(s->tensors[k].name, m->value))
				target = &s->tensors[k];
		if (!target)
			return TI_FAIL(err, TI_E_CORRUPT, "__metadata__ ties '%s' to '%s', which the file does not hold",
			               m->key + 4, m->value);
		ti_source_tensor copy = *target, *t = add_tensor(s);
		if (!t)
			return out_of_memory(err);
		*t = copy;
		t->name = m->key + 4;
	}
	if (keep_metadata && ti_st_metadata_count(p->st)) {
		s->metadata_count = ti_st_metadata_count(p->st);
		s->metadata = ti_arena_calloc(&s->arena, s->metadata_count, sizeof(*s->metadata));
		if (!s->metadata)
			return out_of_memory(err);
		for (size_t i = 0; i < s->metadata_count; i++) {
			const ti_st_pair *m = ti_st_metadata_at(p->st, i);
			s->metadata[i] = (ti_source_pair){m->key, m->value};
		}
	}
	return TI_OK;
}

static ti_status open_part(ti_source *s, const char *path, part *p, bool safetensors, ti_error *err)
{
	if (!(p->path = ti_arena_strdup(&s->arena, path)))
		return out_of_memory(err);
	p->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->fd < 0)
		return TI_FAIL(err, TI_E_IO, "cannot open '%s': %s", path, strerror(errno));
	return safetensors ? add_safetensors(s, path, p, s->format == TI_SOURCE_SAFETENSORS, err)
	                   : add_torch_zip(s, path, p, err);
}

/* ---- a sharded checkpoint ---- */

/* A shard the index names that is not there: which one, and which tensors it should hold. */
static ti_status missing_shard(const ti_hf_index *index, size_t shard, ti_error *err)
{
	char names[320];
	size_t len = 0, count = 0;
	names[0] = '\0';
	for (size_t k = 0; k < ti_hf_index_weight_count(index); k++) {
		const ti_hf_weight *w = ti_hf_index_weight(index, k);
		if (w->shard != shard)
			continue;
		if (count++ < 4 && len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s'%s'", len ? ", " : "", w->name);
	}
	if (count > 4 && len < sizeof(names))
		snprintf(names + len, sizeof(names) - len, " and %zu more", count - 4);
	return TI_FAIL(err, TI_E_IO, "shard '%s' is missing; the index names it for %zu tensor%s: %s",
	               ti_hf_index_shard(index, shard)->path, count, count == 1 ? "" : "s", names);
}

static ti_status add_sharded(ti_source *s, const char *path, ti_error *err)
{
	ti_hf_index *index;
	ti_status st = ti_hf_index_open(path, NULL, &index, err);
	if (st)
		return st;
	size_t n = ti_hf_index_shard_count(index);
	s->parts = ti_arena_calloc(&s->arena, n + 1, sizeof(*s->parts));
	if (!s->parts) {
		ti_hf_index_close(index);
		return out_of_memory(err);
	}
	size_t meta = ti_hf_index_metadata_count(index);
	s->metadata = ti_arena_calloc(&s->arena, meta + 1, sizeof(*s->metadata));
	for (size_t i = 0; s->metadata && i < meta; i++) {
		const ti_st_pair *m = ti_hf_index_metadata_at(index, i);
		char *key = ti_arena_strdup(&s->arena, m->key), *value = ti_arena_strdup(&s->arena, m->value);
		if (key && value) /* the index is closed below: keep copies */
			s->metadata[s->metadata_count++] = (ti_source_pair){key, value};
	}
	for (size_t i = 0; i < n && !st; i++) {
		const ti_hf_shard *shard = ti_hf_index_shard(index, i);
		part *p = &s->parts[s->part_count++];
		p->fd = -1;
		if (shard->format == TI_HF_UNKNOWN) {
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "shard '%s' is neither .safetensors nor a torch file", shard->file);
			break;
		}
		size_t before = s->tensor_count;
		st = open_part(s, shard->path, p, shard->format == TI_HF_SAFETENSORS, err);
		if (st && access(shard->path, F_OK)) {
			st = missing_shard(index, i, err);
			break;
		}
		if (st) {
			ti_error_at(err, shard->file, -1);
			break;
		}
		/* every tensor the index names must be in its shard, and no other */
		const char **names = ti_arena_calloc(&s->arena, s->tensor_count - before + 1, sizeof(*names));
		if (!names) {
			st = out_of_memory(err);
			break;
		}
		for (size_t k = before; k < s->tensor_count; k++)
			names[k - before] = s->tensors[k].name;
		st = ti_hf_index_check_names(index, i, names, s->tensor_count - before, err);
	}
	ti_hf_index_close(index);
	return st;
}

/* ---- open, read, close ---- */

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

ti_status ti_source_open(const char *path, ti_source **out, ti_error *err)
{
	*out = NULL;
	ti_source *s = new_source();
	if (!s)
		return out_of_memory(err);
	ti_status st;
	if (ends_with(path, ".index.json")) {
		s->format = TI_SOURCE_HF_SHARDED;
		st = add_sharded(s, path, err);
	} else {
		unsigned char head[16] = {0};
		struct stat sb;
		FILE *f = fopen(path, "rb");
		size_t got = f ? fread(head, 1, sizeof(head), f) : 0;
		bool ok = f && !fstat(fileno(f), &sb);
		if (f)
			fclose(f);
		if (!ok) {
			free(s);
			return TI_FAIL(err, TI_E_IO, "cannot open: %s", strerror(errno));
		}
		s->format = ti_st_sniff(head, got, (uint64_t)sb.st_size) ? TI_SOURCE_SAFETENSORS : TI_SOURCE_TORCH_ZIP;
		s->parts = ti_arena_calloc(&s->arena, 1, sizeof(*s->parts));
		if (!s->parts) {
			free(s);
			return out_of_memory(err);
		}
		s->part_count = 1;
		s->parts[0].fd = -1;
		st = open_part(s, path, &s->parts[0], s->format == TI_SOURCE_SAFETENSORS, err);
	}
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
		ti_ckpt_close(s->parts[i].ckpt);
		ti_st_close(s->parts[i].st);
		if (s->parts[i].fd >= 0)
			close(s->parts[i].fd);
	}
	ti_arena_release(&s->arena);
	free(s);
}

/* ---- a model description ---- */

ti_status ti_source_from_model(const ti_model *model, ti_source **out, ti_error *err)
{
	*out = NULL;
	ti_source *s = new_source();
	if (!s)
		return out_of_memory(err);
	s->format = TI_SOURCE_MODEL;
	size_t n;
	const ti_model_param *params = ti_model_params(model, &n);
	size_t *storage_of = ti_arena_calloc(&s->arena, n + 1, sizeof(*storage_of));
	if (!storage_of) {
		ti_source_close(s);
		return out_of_memory(err);
	}
	for (size_t i = 0; i < n; i++) {
		const ti_model_param *p = &params[i];
		ti_source_tensor *t = add_tensor(s);
		int64_t *stride = ti_arena_calloc(&s->arena, (size_t)p->ndim + 1, sizeof(*stride));
		if (!t || !stride) {
			ti_source_close(s);
			return out_of_memory(err);
		}
		int64_t numel = 1;
		for (int k = p->ndim - 1; k >= 0; k--) {
			stride[k] = numel;
			numel *= p->shape[k] > 0 ? p->shape[k] : 1;
		}
		numel = 1; /* the strides skipped empty dims; the count does not */
		for (int k = 0; k < p->ndim; k++)
			numel *= p->shape[k];
		*t = (ti_source_tensor){p->name, p->dtype, p->ndim, p->shape, stride, 0, numel, 0, p->trainable, !p->buffer, NULL};
		/* a tie shares the storage of the parameter it names */
		size_t target = n;
		for (size_t k = 0; p->tied_to && k < i; k++)
			if (!strcmp(params[k].name, p->tied_to))
				target = k;
		if (target < n) {
			t->storage = storage_of[target];
		} else {
			if (!add_storage(s, p->dtype, (uint64_t)numel * ti_dtype_size(p->dtype), false, (place){-1, 0, NULL, {0, 0}})) {
				ti_source_close(s);
				return out_of_memory(err);
			}
			t->storage = s->storage_count - 1;
		}
		storage_of[i] = t->storage;
	}
	*out = s;
	return TI_OK;
}

ti_status ti_source_set_fill(ti_source *s, size_t storage, const ti_fill_policy *policy, uint64_t seed,
                             const char *name, ti_error *err)
{
	if (storage >= s->storage_count)
		return TI_FAIL(err, TI_E_INVALID, "no storage %zu", storage);
	ti_status st = ti_fill_check(policy, s->storages[storage].dtype, err);
	if (st)
		return st;
	ti_fill_policy *copy = ti_arena_alloc(&s->arena, sizeof(*copy));
	if (!copy)
		return out_of_memory(err);
	*copy = *policy;
	s->places[storage].fill = copy;
	s->places[storage].key = ti_fill_key_of(seed, name);
	s->storages[storage].has_data = true;
	return TI_OK;
}

const ti_fill_policy *ti_source_fill(const ti_source *s, size_t storage)
{
	return storage < s->storage_count ? s->places[storage].fill : NULL;
}

ti_source_format ti_source_get_format(const ti_source *s) { return s->format; }
size_t ti_source_file_count(const ti_source *s) { return s->part_count; }

const char *ti_source_file_at(const ti_source *s, size_t i)
{
	return i < s->part_count ? s->parts[i].path : NULL;
}

ti_scan_severity ti_source_safety(const ti_source *s, size_t i, const ti_scan_finding **findings, size_t *count)
{
	*findings = NULL;
	*count = 0;
	if (i >= s->part_count || !s->parts[i].ckpt)
		return TI_SCAN_SAFE;
	return ti_ckpt_safety(s->parts[i].ckpt, findings, count);
}
size_t ti_source_tensor_count(const ti_source *s) { return s->tensor_count; }
size_t ti_source_storage_count(const ti_source *s) { return s->storage_count; }
size_t ti_source_metadata_count(const ti_source *s) { return s->metadata_count; }

const ti_source_tensor *ti_source_tensor_at(const ti_source *s, size_t i)
{
	return i < s->tensor_count ? &s->tensors[i] : NULL;
}

const ti_source_storage *ti_source_storage_at(const ti_source *s, size_t i)
{
	return i < s->storage_count ? &s->storages[i] : NULL;
}

const ti_source_pair *ti_source_metadata_at(const ti_source *s, size_t i)
{
	return i < s->metadata_count ? &s->metadata[i] : NULL;
}

ti_status ti_source_read(ti_source *s, size_t storage, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	if (storage >= s->storage_count || !s->storages[storage].has_data)
		return TI_FAIL(err, TI_E_INVALID, "storage %zu has no data to read", storage);
	const ti_source_storage *st = &s->storages[storage];
	if (offset > st->nbytes || n > st->nbytes - offset)
		return TI_FAIL(err, TI_E_INVALID, "read of %zu bytes at %llu passes the storage's %llu bytes", n,
		               (unsigned long long)offset, (unsigned long long)st->nbytes);
	const place *p = &s->places[storage];
	if (p->fill) {
		size_t esize = ti_dtype_size(st->dtype);
		if (!esize || offset % esize || n % esize)
			return TI_FAIL(err, TI_E_INVALID, "a fill is read in whole elements");
		return ti_fill(p->fill, st->dtype, p->key, offset / esize, n / esize, buf, err);
	}
	char *b = buf;
	while (n) {
		ssize_t got = pread(p->fd, b, n, (off_t)(p->offset + offset));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return TI_FAIL(err, TI_E_IO, "cannot read tensor data: %s", got < 0 ? strerror(errno) : "the file is shorter than it was");
		b += got;
		offset += (uint64_t)got;
		n -= (size_t)got;
	}
	return TI_OK;
}

bool ti_source_file_place(const ti_source *s, size_t storage, int *fd, uint64_t *offset)
{
	if (storage >= s->storage_count || !s->storages[storage].has_data || s->places[storage].fill)
		return false;
	*fd = s->places[storage].fd;
	*offset = s->places[storage].offset;
	return true;
}

uint64_t ti_source_tensor_extent(const ti_source_tensor *t)
{
	if (t->numel == 0)
		return 0;
	uint64_t last = (uint64_t)t->offset;
	for (int i = 0; i < t->ndim; i++)
		last += (uint64_t)(t->shape[i] - 1) * (uint64_t)t->stride[i];
	return (last + 1) * ti_dtype_size(t->dtype);
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
