/*
 * convert.c - selecting, renaming, casting and laying out tensors, then
 * streaming them from a source into a writer (see tinspect/convert.h).
 */
#define _GNU_SOURCE /* sync_file_range */
#include "tinspect/convert.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinspect/arena.h"
#include "tinspect/cast.h"
#include "tinspect/gguf.h"
#include "tinspect/npy.h"
#include "tinspect/safetensors.h"
#include "tinspect/torch_writer.h"
#include "util/strmap.h"

/* One output tensor: a source tensor under its new name, with the output storage it lands in. */
typedef struct out_tensor {
	const ti_source_tensor *src;
	const char *name;
	ti_dtype dtype;          /* after --dtype */
	size_t storage;          /* output storage */
	const char *tied_to;     /* an earlier output tensor that is the same view, or NULL */
} out_tensor;

/* One output storage: a compact view of a source tensor, or (keep_storage) a whole source storage. */
typedef struct out_storage {
	const ti_source_tensor *view; /* compact: the view to gather; NULL: whole storage */
	size_t source_storage;
	ti_dtype from, to;
	uint64_t numel;
} out_storage;

typedef struct plan {
	ti_arena arena;
	const ti_convert_options *o;
	ti_source *src;
	out_tensor *tensors;
	size_t tensor_count;
	out_storage *storages;
	size_t storage_count;
	uint64_t total_bytes, done_bytes;
	uint64_t file_bytes;  /* GGUF: the tensor bytes the file holds (Q8_0 blocks, not the floats streamed) */
} plan;

/* ---- names ---- */

static bool matches_any(const char *const *globs, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!fnmatch(globs[i], name, 0))
			return true;
	return false;
}

/* The name a source tensor gets before --select and --exclude, or NULL when --key leaves it out. */
static const char *renamed(plan *p, const char *name)
{
	const ti_convert_options *o = p->o;
	if (o->key) {
		size_t n = strlen(o->key);
		if (strncmp(name, o->key, n) || name[n] != '.')
			return NULL;
		name += n + 1;
	}
	if (o->strip_prefix && !strncmp(name, o->strip_prefix, strlen(o->strip_prefix)))
		name += strlen(o->strip_prefix);
	for (size_t i = 0; i < o->rename_count; i++) {
		size_t n = strlen(o->renames[i].from);
		if (!strncmp(name, o->renames[i].from, n)) {
			name = ti_arena_printf(&p->arena, "%s%s", o->renames[i].to, name + n);
			break;
		}
	}
	return name;
}

/* The name a source tensor gets, or NULL when it is not selected. */
static const char *output_name(plan *p, const char *name)
{
	const ti_convert_options *o = p->o;
	name = renamed(p, name);
	if (!name || !*name)
		return NULL;
	if (o->select_count && !matches_any(o->select, o->select_count, name))
		return NULL;
	if (matches_any(o->exclude, o->exclude_count, name))
		return NULL;
	return name;
}

static ti_dtype output_dtype(const plan *p, ti_dtype dt)
{
	bool floating = dt == TI_DT_FLOAT32 || dt == TI_DT_FLOAT64 || dt == TI_DT_FLOAT16 || dt == TI_DT_BFLOAT16;
	return p->o->dtype && floating ? p->o->dtype : dt;
}

static bool same_view(const ti_source_tensor *a, const ti_source_tensor *b)
{
	if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim || a->dtype != b->dtype)
		return false;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i] || (a->shape[i] > 1 && a->stride[i] != b->stride[i]))
			return false;
	return true;
}

/*
 * A key that holds no tensor, or a select or exclude pattern that matches
 * none, is a mistake to report (as git reports a pathspec that matches no
 * file), not a reason to write less than the user meant.
 */
static ti_status check_selection(plan *p, ti_error *err)
{
	const ti_convert_options *o = p->o;
	size_t n = ti_source_tensor_count(p->src);
	if (o->key) {
		size_t len = strlen(o->key);
		char keys[400];
		size_t used = 0, shown = 0;
		keys[0] = '\0';
		for (size_t i = 0; i < n; i++) {
			const char *name = ti_source_tensor_at(p->src, i)->name;
			if (!strncmp(name, o->key, len) && name[len] == '.')
				return TI_OK;
			/* the keys there are: first components, each once, in order */
			size_t first = strcspn(name, ".");
			bool seen = false;
			for (size_t k = 0; k < i && !seen; k++) {
				const char *other = ti_source_tensor_at(p->src, k)->name;
				seen = strcspn(other, ".") == first && !strncmp(other, name, first);
			}
			if (seen || name[first] != '.' || used >= sizeof(keys))
				continue;
			if (shown++ < 12)
				used += (size_t)snprintf(keys + used, sizeof(keys) - used, "%s'%.*s'", used ? ", " : "", (int)first, name);
		}
		if (!shown)
			return TI_FAIL(err, TI_E_INVALID, "no tensor under key '%s': no name has a key before a '.'", o->key);
		return TI_FAIL(err, TI_E_INVALID, "no tensor under key '%s'; the keys with tensors are %s%s", o->key, keys,
		               shown > 12 ? ", ..." : "");
	}
	return TI_OK;
}

/* The name after --key, or NULL when the key leaves it out. */
static const char *under_key(const ti_convert_options *o, const char *name)
{
	if (!*name)
		name = "tensor";
	size_t n = o->key ? strlen(o->key) : 0;
	if (o->key && (strncmp(name, o->key, n) || name[n] != '.'))
		return NULL;
	return o->key ? name + n + 1 : name;
}

static ti_status check_patterns(plan *p, ti_error *err)
{
	const ti_convert_options *o = p->o;
	size_t n = ti_source_tensor_count(p->src);
	/* a prefix to strip or rename that no name has would change nothing */
	if (o->strip_prefix) {
		bool hit = false;
		for (size_t i = 0; i < n && !hit; i++) {
			const char *name = under_key(o, ti_source_tensor_at(p->src, i)->name);
			hit = name && !strncmp(name, o->strip_prefix, strlen(o->strip_prefix));
		}
		if (!hit)
			return TI_FAIL(err, TI_E_INVALID, "no tensor name starts with the prefix '%s' to strip", o->strip_prefix);
	}
	for (size_t r = 0; r < o->rename_count; r++) {
		bool hit = false;
		for (size_t i = 0; i < n && !hit; i++) {
			const char *name = under_key(o, ti_source_tensor_at(p->src, i)->name);
			if (name && o->strip_prefix && !strncmp(name, o->strip_prefix, strlen(o->strip_prefix)))
				name += strlen(o->strip_prefix);
			hit = name && !strncmp(name, o->renames[r].from, strlen(o->renames[r].from));
		}
		if (!hit)
			return TI_FAIL(err, TI_E_INVALID, "no tensor name starts with '%s' to rename", o->renames[r].from);
	}
	for (int pass = 0; pass < 2; pass++) {
		const char *const *globs = pass ? o->exclude : o->select;
		size_t count = pass ? o->exclude_count : o->select_count;
		for (size_t g = 0; g < count; g++) {
			bool hit = false;
			for (size_t i = 0; i < n && !hit; i++) {
				const char *name = renamed(p, ti_source_tensor_at(p->src, i)->name);
				hit = name && *name && !fnmatch(globs[g], name, 0);
			}
			if (!hit)
				return TI_FAIL(err, TI_E_INVALID, "%s pattern '%s' matches no tensor name%s", pass ? "exclude" : "select",
				               globs[g], o->key || o->strip_prefix || o->rename_count ? " (as renamed)" : "");
		}
	}
	return TI_OK;
}

/* ---- planning ---- */

static ti_status make_plan(plan *p, ti_error *err)
{
	ti_status checked = check_selection(p, err);
	if (!checked)
		checked = check_patterns(p, err);
	if (checked)
		return checked;
	size_t n = ti_source_tensor_count(p->src), ns = ti_source_storage_count(p->src);
	p->tensors = ti_arena_calloc(&p->arena, n + 1, sizeof(*p->tensors));
	p->storages = ti_arena_calloc(&p->arena, (n > ns ? n : ns) + 1, sizeof(*p->storages));
	size_t *storage_map = calloc(ns + 1, sizeof(*storage_map)); /* keep_storage: source -> output + 1 */
	size_t *last_of = calloc(ns + 1, sizeof(*last_of));       /* source storage -> its last output + 1 */
	size_t *previous = calloc(n + 1, sizeof(*previous));      /* output -> the one before it of its storage + 1 */
	ti_strmap names;
	ti_strmap_init(&names);
	if (!p->tensors || !p->storages || !storage_map || !last_of || !previous) {
		free(storage_map);
		free(last_of);
		free(previous);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the output");
	}
	ti_status st = TI_OK;
	for (size_t i = 0; i < n && !st; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(p->src, i);
		const char *name = output_name(p, t->name);
		if (!name)
			continue;
		const char *why = t->unsupported ? t->unsupported
		                  : !ti_source_storage_at(p->src, t->storage)->has_data ? "saved from the meta device: it has no data"
		                                                                         : NULL;
		if (why) {
			const char *hint = p->o->refusal_hint;
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is %s%s%s", t->name, why, hint ? "; " : "", hint ? hint : "");
			break;
		}
		void *earlier;
		int added = ti_strmap_add(&names, name, (void *)name, &earlier);
		if (added < 0) {
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory planning the output");
			break;
		}
		if (added == 1) {
			st = TI_FAIL(err, TI_E_INVALID, "two tensors would be named '%s'", name);
			break;
		}
		out_tensor *o = &p->tensors[p->tensor_count++];
		o->src = t;
		o->name = name;
		o->dtype = output_dtype(p, t->dtype);
		bool keep = p->o->keep_storage && p->o->format == TI_OUT_TORCH_ZIP;
		if (keep) {
			if (!storage_map[t->storage]) {
				const ti_source_storage *s = ti_source_storage_at(p->src, t->storage);
				out_storage *os = &p->storages[p->storage_count];
				os->source_storage = t->storage;
				os->from = s->dtype;
				os->to = output_dtype(p, s->dtype);
				/* keep_storage is for torch output, which refuses a sub-byte dtype (write_torch) */
				os->numel = s->nbytes / (ti_dtype_size(s->dtype) ? ti_dtype_size(s->dtype) : 1);
				storage_map[t->storage] = ++p->storage_count;
			}
			o->storage = storage_map[t->storage] - 1;
			continue;
		}
		/* compact: a tie shares the storage of the first tensor that is the same view; only
		   tensors of the same source storage can be, and they are chained (NumPy has no ties) */
		size_t self = p->tensor_count - 1;
		bool numpy = p->o->format == TI_OUT_NPY || p->o->format == TI_OUT_NPZ;
		for (size_t k = numpy || p->o->format == TI_OUT_GGUF || p->o->untie ? 0 : last_of[t->storage]; k;
		     k = previous[k - 1])
			if (same_view(p->tensors[k - 1].src, t) && !p->tensors[k - 1].tied_to) {
				o->storage = p->tensors[k - 1].storage;
				o->tied_to = p->tensors[k - 1].name;
				break;
			}
		previous[self] = last_of[t->storage];
		last_of[t->storage] = self + 1;
		if (o->tied_to)
			continue;
		out_storage *os = &p->storages[p->storage_count];
		os->view = t;
		os->source_storage = t->storage;
		os->from = t->dtype;
		os->to = o->dtype;
		os->numel = (uint64_t)t->numel;
		o->storage = p->storage_count++;
	}
	free(storage_map);
	free(last_of);
	free(previous);
	ti_strmap_release(&names);
	if (st)
		return st;
	for (size_t i = 0; i < p->storage_count; i++) {
		const out_storage *s = &p->storages[i];
		if (s->from != s->to && !ti_cast_supported(s->from, s->to))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "cannot cast %s to %s", ti_dtype_name(s->from), ti_dtype_name(s->to));
		uint64_t bytes = 0; /* a sub-byte dtype's packed bytes */
		ti_dtype_nbytes(s->to, s->numel, &bytes);
		p->total_bytes += bytes;
	}
	return TI_OK;
}

/* ---- streaming data ---- */

typedef ti_status (*put_fn)(void *writer, size_t storage, const void *bytes, size_t n, ti_error *err);

/* Bytes that lie in a file as they are (no cast), copied file to file; NULL where the writer must see them. */
typedef ti_status (*copy_fn)(void *writer, size_t storage, int fd, uint64_t offset, uint64_t n, ti_error *err);

typedef struct sink {
	put_fn put;
	copy_fn copy;
	void *writer;
	plan *p;
	char *cast_buf;
	size_t buf_bytes;
	int fd;               /* the output, for early writeback */
	uint64_t unflushed;   /* bytes written since writeback was last started */
} sink;

/*
 * The output is flushed to disk before it is renamed into place; starting
 * the disk writes every WRITEBACK bytes, while copying goes on, leaves that
 * final flush little to wait for.
 */
enum { WRITEBACK = 64 << 20 };

static void count_written(sink *k, uint64_t n)
{
	k->p->done_bytes += n;
	k->unflushed += n;
	if (k->unflushed >= WRITEBACK && k->fd >= 0) {
		sync_file_range(k->fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint: a failure changes nothing */
		k->unflushed = 0;
	}
	if (k->p->o->progress)
		k->p->o->progress(k->p->o->progress_user, k->p->done_bytes, k->p->total_bytes);
}

/* Casts the elements in n bytes (whole elements) and hands them to the writer; the bytes as they are when there is no cast. */
static ti_status emit(sink *k, size_t storage, const out_storage *s, const void *bytes, size_t n, ti_error *err)
{
	if (s->from == s->to) { /* also the only way for a sub-byte dtype, which nothing casts */
		ti_status st = k->put(k->writer, storage, bytes, n, err);
		if (!st)
			count_written(k, n);
		return st;
	}
	size_t in_size = ti_dtype_size(s->from), out_size = ti_dtype_size(s->to), elements = n / in_size;
	/* the cast buffer holds buf_bytes of output: cast and put in pieces of it */
	size_t per = k->buf_bytes / (out_size ? out_size : 1);
	for (size_t done = 0; done < elements;) {
		size_t m = elements - done < per ? elements - done : per;
		ti_status st = ti_cast(s->from, (const char *)bytes + done * in_size, s->to, k->cast_buf, m, 0, err);
		if (!st)
			st = k->put(k->writer, storage, k->cast_buf, m * out_size, err);
		if (st)
			return st;
		done += m;
	}
	count_written(k, elements * out_size);
	return TI_OK;
}

/*
 * Streams a contiguous run of elements [first, first + count) of a source
 * storage, as bytes: a sub-byte dtype's are packed, and a run of them must
 * start and end on a byte (a safetensors tensor, its own storage, does).
 */
static ti_status stream_run(sink *k, size_t storage, const out_storage *s, uint64_t first, uint64_t count,
                            char *buf, ti_error *err)
{
	uint64_t at, bytes, unit;
	if (!ti_dtype_nbytes(s->from, first, &at) || !ti_dtype_nbytes(s->from, count, &bytes) ||
	    !ti_dtype_nbytes(s->from, ti_dtype_byte_group(s->from), &unit))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a run of %llu %s elements from %llu does not start and end on a byte",
		               (unsigned long long)count, ti_dtype_name(s->from), (unsigned long long)first);
	int fd;
	uint64_t place;
	if (k->copy && s->from == s->to && ti_source_file_place(k->p->src, s->source_storage, &fd, &place)) {
		ti_status st = k->copy(k->writer, storage, fd, place + at, bytes, err);
		if (!st)
			count_written(k, bytes);
		return st;
	}
	size_t per = k->buf_bytes / unit * unit; /* whole elements, and whole bytes of a sub-byte dtype */
	for (uint64_t done = 0; done < bytes;) {
		size_t m = bytes - done < per ? (size_t)(bytes - done) : per;
		ti_status st = ti_source_read(k->p->src, s->source_storage, at + done, buf, m, err);
		if (!st)
			st = emit(k, storage, s, buf, m, err);
		if (st)
			return st;
		done += m;
	}
	return TI_OK;
}

/* A strided view: read its storage span once, then gather its elements in row-major order. */
static ti_status gather_view(sink *k, size_t storage, const out_storage *s, char *buf, ti_error *err)
{
	const ti_source_tensor *t = s->view;
	size_t esize = ti_dtype_size(s->from);
	if (t->numel == 0)
		return TI_OK;
	uint64_t lo = (uint64_t)t->offset * esize, hi = ti_source_tensor_extent(t);
	uint64_t limit = k->p->o->gather_max ? k->p->o->gather_max : (uint64_t)16 << 30;
	if (hi - lo > limit)
		return TI_FAIL(err, TI_E_LIMIT, "'%s' is a strided view over %llu bytes, past the %llu-byte ceiling",
		               t->name, (unsigned long long)(hi - lo), (unsigned long long)limit);
	char *span = malloc(hi - lo ? hi - lo : 1);
	if (!span)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory gathering '%s' (%llu bytes)", t->name,
		               (unsigned long long)(hi - lo));
	ti_status st = ti_source_read(k->p->src, s->source_storage, lo, span, hi - lo, err);
	int64_t index[64] = {0};
	size_t per = k->buf_bytes / esize, m = 0;
	for (int64_t e = 0; !st && e < t->numel; e++) {
		int64_t at = 0; /* element offset from the view's first element */
		for (int d = 0; d < t->ndim; d++)
			at += index[d] * t->stride[d];
		memcpy(buf + m * esize, span + (size_t)at * esize, esize);
		if (++m == per || e + 1 == t->numel) {
			st = emit(k, storage, s, buf, m * esize, err);
			m = 0;
		}
		for (int d = t->ndim - 1; d >= 0; d--) { /* next index, row-major */
			if (++index[d] < t->shape[d])
				break;
			index[d] = 0;
		}
	}
	free(span);
	return st;
}

static ti_status stream_storage(sink *k, size_t i, char *buf, ti_error *err)
{
	const out_storage *s = &k->p->storages[i];
	if (!s->view)
		return stream_run(k, i, s, 0, s->numel, buf, err);
	if (ti_source_tensor_contiguous(s->view))
		return stream_run(k, i, s, (uint64_t)s->view->offset, s->numel, buf, err);
	if (ti_dtype_is_sub_byte(s->from)) /* no format tinspect reads makes one */
		return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is a strided view of %s elements, which cannot be gathered",
		               s->view->name, ti_dtype_name(s->from));
	return gather_view(k, i, s, buf, err);
}

/* ---- writers ---- */

static ti_status put_torch(void *w, size_t storage, const void *bytes, size_t n, ti_error *err)
{
	(void)storage;
	return ti_tw_storage_put(w, bytes, n, err);
}

static ti_status put_safetensors(void *w, size_t storage, const void *bytes, size_t n, ti_error *err)
{
	return ti_st_writer_put(w, storage, bytes, n, err);
}

static ti_status copy_safetensors(void *w, size_t storage, int fd, uint64_t offset, uint64_t n, ti_error *err)
{
	return ti_st_writer_copy(w, storage, fd, offset, n, err);
}

static ti_status write_torch(plan *p, int fd, sink *k, char *buf, ti_error *err)
{
	/* before anything is written: a dtype with no torch storage (the sub-byte ones of safetensors) */
	for (size_t i = 0; i < p->tensor_count; i++) {
		ti_dtype dt = p->storages[p->tensors[i].storage].to;
		if (!ti_tw_storage_class(dt) && !ti_tw_needs_v3(dt))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is %s, which a torch file cannot hold%s%s",
			               p->tensors[i].src->name, ti_dtype_name(dt), p->o->refusal_hint ? "; " : "",
			               p->o->refusal_hint ? p->o->refusal_hint : "");
	}
	ti_tw_storage *storages = ti_arena_calloc(&p->arena, p->storage_count + 1, sizeof(*storages));
	ti_tw_tensor *tensors = ti_arena_calloc(&p->arena, p->tensor_count + 1, sizeof(*tensors));
	if (!storages || !tensors)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the output");
	for (size_t i = 0; i < p->storage_count; i++)
		storages[i] = (ti_tw_storage){p->storages[i].to, p->storages[i].numel};
	for (size_t i = 0; i < p->tensor_count; i++) {
		const out_tensor *o = &p->tensors[i];
		bool keep = !p->storages[o->storage].view;
		tensors[i] = (ti_tw_tensor){o->name, o->storage, keep ? (uint64_t)o->src->offset : 0, (size_t)o->src->ndim,
		                            o->src->shape, keep ? o->src->stride : NULL, o->src->requires_grad,
		                            o->src->is_parameter};
	}
	/* a description's state_dict()._metadata: each module's version, as torch.save(model.state_dict()) writes it */
	size_t module_count;
	const ti_source_module *modules = ti_source_modules(p->src, &module_count);
	ti_tw_module_version *versions = ti_arena_calloc(&p->arena, module_count + 1, sizeof(*versions));
	if (!versions)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the output");
	for (size_t i = 0; i < module_count; i++)
		versions[i] = (ti_tw_module_version){modules[i].prefix, modules[i].version};
	ti_tw_options options = {.modules = versions, .module_count = module_count};
	ti_tw *w;
	ti_status st = ti_tw_begin(fd, storages, p->storage_count, tensors, p->tensor_count, &options, &w, err);
	if (st)
		return st;
	k->put = put_torch;
	k->writer = w;
	for (size_t i = 0; i < p->storage_count && !st; i++)
		st = stream_storage(k, i, buf, err);
	if (!st)
		st = ti_tw_end(w, err);
	ti_tw_free(w);
	return st;
}

static ti_status write_safetensors(plan *p, int fd, sink *k, char *buf, ti_error *err)
{
	/* one spec per storage (each is one compact tensor), ties in __metadata__ */
	ti_st_spec *specs = ti_arena_calloc(&p->arena, p->storage_count + 1, sizeof(*specs));
	size_t meta_n = ti_source_metadata_count(p->src), ties = 0;
	for (size_t i = 0; i < p->tensor_count; i++)
		ties += p->tensors[i].tied_to != NULL;
	ti_st_pair *meta = ti_arena_calloc(&p->arena, meta_n + ties + 1, sizeof(*meta));
	if (!specs || !meta)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the output");
	size_t m = 0;
	for (size_t i = 0; i < meta_n; i++) {
		const ti_source_pair *sp = ti_source_metadata_at(p->src, i);
		if (strncmp(sp->key, "tie.", 4)) /* ties are written anew below */
			meta[m++] = (ti_st_pair){sp->key, sp->value};
	}
	for (size_t i = 0; i < p->tensor_count; i++) {
		const out_tensor *o = &p->tensors[i];
		if (o->tied_to) {
			meta[m++] = (ti_st_pair){ti_arena_printf(&p->arena, "tie.%s", o->name), o->tied_to};
			continue;
		}
		specs[o->storage] = (ti_st_spec){o->name, o->dtype, o->src->ndim, o->src->shape};
	}
	ti_st_writer *w;
	ti_status st = ti_st_writer_begin(fd, specs, p->storage_count, meta, m, TI_ST_ORDER_AS_GIVEN, &w, err);
	if (st)
		return st;
	k->put = put_safetensors;
	k->copy = copy_safetensors;
	k->writer = w;
	for (size_t i = 0; i < p->storage_count && !st; i++)
		st = stream_storage(k, i, buf, err);
	if (!st)
		st = ti_st_writer_end(w, err);
	ti_st_writer_free(w);
	return st;
}

/* ---- GGUF ---- */

typedef struct gguf_sink {
	ti_gguf_writer *w;
	size_t tensor;
} gguf_sink;

static ti_status put_gguf(void *w, size_t storage, const void *bytes, size_t n, ti_error *err)
{
	gguf_sink *g = w;
	(void)storage;
	return ti_gguf_writer_put(g->w, g->tensor, bytes, n, err);
}

static bool floating(ti_dtype dt)
{
	return dt == TI_DT_FLOAT32 || dt == TI_DT_FLOAT64 || dt == TI_DT_FLOAT16 || dt == TI_DT_BFLOAT16;
}

/* Whether output tensor o becomes Q8_0: a floating matrix (or more) whose rows are whole blocks of 32. */
static bool to_q8_0(const plan *p, const out_tensor *o)
{
	const ti_source_tensor *t = o->src;
	return p->o->gguf_q8_0 && floating(t->dtype) && t->ndim >= 2 && t->shape[t->ndim - 1] % 32 == 0;
}

/* The source's metadata string value of key, or NULL. */
static const char *source_meta(const ti_source *src, const char *key)
{
	for (size_t i = 0; i < ti_source_metadata_count(src); i++)
		if (!strcmp(ti_source_metadata_at(src, i)->key, key))
			return ti_source_metadata_at(src, i)->value;
	return NULL;
}

/*
 * general.file_type as llama.cpp numbers it (enum llama_ftype): what most
 * weights are. ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q8_0 7, MOSTLY_BF16 32;
 * -1 when the floating tensors are of mixed types (it is then left out).
 */
static int64_t file_type(const plan *p, const uint32_t *types)
{
	int64_t found = -2;
	for (size_t i = 0; i < p->tensor_count; i++) {
		if (!floating(p->tensors[i].src->dtype) || p->tensors[i].src->ndim < 2)
			continue; /* vectors (norms, biases) stay float32 in llama.cpp's files too */
		int64_t ft = types[i] == TI_GGML_Q8_0 ? 7 : types[i] == TI_GGML_F16 ? 1 : types[i] == TI_GGML_BF16 ? 32
		             : types[i] == TI_GGML_F32 ? 0 : -1;
		if (found != -2 && ft != found)
			return -1;
		found = ft;
	}
	return found == -2 ? 0 : found;
}

static ti_status write_gguf(plan *p, int fd, sink *k, char *buf, ti_error *err)
{
	ti_gguf_spec *specs = ti_arena_calloc(&p->arena, p->tensor_count + 1, sizeof(*specs));
	uint32_t *types = ti_arena_calloc(&p->arena, p->tensor_count + 1, sizeof(*types));
	if (!specs || !types)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the output");
	for (size_t i = 0; i < p->tensor_count; i++) {
		out_tensor *o = &p->tensors[i];
		out_storage *s = &p->storages[o->storage];
		int type = ti_ggml_type_from_dtype(o->dtype);
		if (to_q8_0(p, o)) {
			type = TI_GGML_Q8_0;
			s->to = TI_DT_FLOAT32; /* the writer quantizes floats */
		}
		if (type < 0)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is %s, which GGUF cannot hold%s%s", o->src->name,
			               ti_dtype_name(o->dtype), p->o->refusal_hint ? "; " : "",
			               p->o->refusal_hint ? p->o->refusal_hint : "");
		if (o->src->ndim > TI_GGUF_MAX_DIMS)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' has %d dimensions; GGUF holds at most %d%s%s", o->src->name,
			               o->src->ndim, TI_GGUF_MAX_DIMS, p->o->refusal_hint ? "; " : "",
			               p->o->refusal_hint ? p->o->refusal_hint : "");
		if (s->from != s->to && !ti_cast_supported(s->from, s->to))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "cannot cast %s to %s", ti_dtype_name(s->from), ti_dtype_name(s->to));
		types[i] = (uint32_t)type;
		specs[i] = (ti_gguf_spec){o->name, (uint32_t)type, o->src->ndim, o->src->shape};
		const ti_ggml_type *ty = ti_ggml_type_of((uint32_t)type);
		p->file_bytes += (uint64_t)o->src->numel / ty->block_size * ty->block_bytes;
	}
	p->total_bytes = 0; /* what streams to the writer: Q8_0 tensors as float32 */
	for (size_t i = 0; i < p->tensor_count; i++) /* whole-byte dtypes only: GGUF refused the others above */
		p->total_bytes += p->storages[p->tensors[i].storage].numel * ti_dtype_size(p->storages[p->tensors[i].storage].to);
	/* general.*: the architecture only when the source says it (a GGUF source); no llama.cpp renaming */
	ti_gguf_meta meta[3];
	size_t m = 0;
	const char *arch = source_meta(p->src, "general.architecture");
	if (arch)
		meta[m++] = (ti_gguf_meta){"general.architecture", arch, 0};
	const char *name = source_meta(p->src, "general.name");
	if (!name) { /* the source file's name without folder and extension */
		const char *path = ti_source_path(p->src), *slash = strrchr(path, '/');
		char *stem = ti_arena_strdup(&p->arena, slash ? slash + 1 : path);
		char *dot = stem ? strrchr(stem, '.') : NULL;
		if (dot && dot != stem)
			*dot = '\0';
		name = stem && *stem ? stem : NULL;
	}
	if (name)
		meta[m++] = (ti_gguf_meta){"general.name", name, 0};
	int64_t ft = file_type(p, types);
	if (ft >= 0)
		meta[m++] = (ti_gguf_meta){"general.file_type", NULL, (uint32_t)ft};
	ti_gguf_writer *w;
	ti_status st = ti_gguf_writer_begin(fd, specs, p->tensor_count, meta, m, &w, err);
	if (st)
		return st;
	gguf_sink g = {w, 0};
	k->put = put_gguf;
	k->writer = &g;
	for (size_t i = 0; i < p->tensor_count && !st; i++) {
		g.tensor = i;
		st = stream_storage(k, p->tensors[i].storage, buf, err);
	}
	if (!st)
		st = ti_gguf_writer_end(w, err);
	ti_gguf_writer_free(w);
	return st;
}

static ti_status put_fd(void *w, size_t storage, const void *bytes, size_t n, ti_error *err)
{
	(void)storage;
	int fd = *(int *)w;
	for (const char *b = bytes; n;) {
		ssize_t got = write(fd, b, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return TI_FAIL(err, TI_E_IO, "cannot write the array: %s", got < 0 ? strerror(errno) : "no progress");
		b += got;
		n -= (size_t)got;
	}
	return TI_OK;
}

static ti_status put_npz(void *w, size_t storage, const void *bytes, size_t n, ti_error *err)
{
	(void)storage;
	return ti_npz_writer_put(w, bytes, n, err);
}

/* Every dtype must be one NumPy has, before anything is written. */
static ti_status check_numpy_dtypes(const plan *p, ti_error *err)
{
	for (size_t i = 0; i < p->tensor_count; i++)
		if (!ti_npy_descr(p->tensors[i].dtype))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is %s, which NumPy has no dtype for%s", p->tensors[i].src->name,
			               ti_dtype_name(p->tensors[i].dtype),
			               p->tensors[i].dtype == TI_DT_BFLOAT16 ? " (--dtype float32 casts it)" : "");
	return TI_OK;
}

/* One array, in C order, as np.save writes it. */
static ti_status write_npy(plan *p, int fd, sink *k, char *buf, ti_error *err)
{
	if (p->tensor_count != 1)
		return TI_FAIL(err, TI_E_INVALID, "a .npy holds one array and %zu tensors are selected: write a .npz, "
		               "or pick one with --select", p->tensor_count);
	ti_status st = check_numpy_dtypes(p, err);
	if (st)
		return st;
	const out_tensor *o = &p->tensors[0];
	char header[TI_NPY_HEAD_MAX];
	size_t len;
	if ((st = ti_npy_header_format(o->dtype, o->src->ndim, o->src->shape, header, sizeof(header), &len, err)))
		return st;
	k->put = put_fd;
	k->writer = &fd;
	st = put_fd(&fd, 0, header, len, err);
	return st ? st : stream_storage(k, o->storage, buf, err);
}

/* np.savez: a stored NAME.npy member per tensor, in order. */
static ti_status write_npz(plan *p, int fd, sink *k, char *buf, ti_error *err)
{
	ti_status st = check_numpy_dtypes(p, err);
	ti_npz_writer *w = NULL;
	if (!st)
		st = ti_npz_writer_begin(fd, &w, err);
	k->put = put_npz;
	k->writer = w;
	for (size_t i = 0; i < p->tensor_count && !st; i++) {
		const out_tensor *o = &p->tensors[i];
		st = ti_npz_writer_add(w, o->name, o->dtype, o->src->ndim, o->src->shape, err);
		if (!st)
			st = stream_storage(k, o->storage, buf, err);
	}
	if (!st)
		st = ti_npz_writer_end(w, err);
	ti_npz_writer_free(w);
	return st;
}

/* A file with no tensor at all: say what it holds, which is not a selection's fault. */
static ti_status holds_no_tensor(ti_source *src, ti_error *err)
{
	size_t n;
	ti_error ignored;
	ti_error_clear(&ignored);
	const ti_entry *e = ti_source_entries(src, &n, &ignored);
	ti_ckpt *ckpt = ti_source_file_count(src) == 1 ? ti_source_checkpoint(src, 0) : NULL;
	if (!ckpt || !e || !n)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "holds no tensor to convert");
	char type[128], repr[160];
	const ti_value *root = ti_ckpt_root(ckpt);
	return TI_FAIL(err, TI_E_UNSUPPORTED, "holds no tensor to convert, only %zu value%s: %s %s", n, n == 1 ? "" : "s",
	               ti_value_type_name(root, type, sizeof(type)), ti_value_repr(root, repr, sizeof(repr), 100));
}

ti_status ti_convert(ti_source *src, int fd, const ti_convert_options *o, ti_convert_stats *stats, ti_error *err)
{
	if (!ti_source_tensor_count(src))
		return holds_no_tensor(src, err);
	plan p;
	memset(&p, 0, sizeof(p));
	ti_arena_init(&p.arena, (size_t)2 << 30);
	p.o = o;
	p.src = src;
	ti_status st = make_plan(&p, err);
	/* at least 4 KiB: every piece must hold whole elements of the widest dtype */
	size_t buffer = !o->buffer_bytes ? (size_t)8 << 20 : o->buffer_bytes < 4096 ? 4096 : o->buffer_bytes;
	sink k = {NULL, NULL, NULL, &p, NULL, buffer, fd, 0};
	char *buf = NULL;
	if (!st) {
		buf = malloc(k.buf_bytes);
		k.cast_buf = malloc(k.buf_bytes);
		if (!buf || !k.cast_buf)
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the copy buffers");
	}
	if (!st && !p.tensor_count)
		st = TI_FAIL(err, TI_E_INVALID, "no tensor is selected");
	if (!st)
		st = o->format == TI_OUT_TORCH_ZIP     ? write_torch(&p, fd, &k, buf, err)
		     : o->format == TI_OUT_SAFETENSORS ? write_safetensors(&p, fd, &k, buf, err)
		     : o->format == TI_OUT_NPY         ? write_npy(&p, fd, &k, buf, err)
		     : o->format == TI_OUT_NPZ         ? write_npz(&p, fd, &k, buf, err)
		                                       : write_gguf(&p, fd, &k, buf, err);
	if (!st && stats) {
		memset(stats, 0, sizeof(*stats));
		stats->tensors = p.tensor_count;
		stats->storages = p.storage_count;
		stats->data_bytes = o->format == TI_OUT_GGUF ? p.file_bytes : p.done_bytes;
		for (size_t i = 0; i < p.tensor_count; i++) {
			if (p.tensors[i].tied_to && !stats->ties++)
				snprintf(stats->first_tie, sizeof(stats->first_tie), "'%s' -> '%s'", p.tensors[i].name,
				         p.tensors[i].tied_to);
			stats->cast += p.tensors[i].dtype != p.tensors[i].src->dtype;
		}
	}
	free(buf);
	free(k.cast_buf);
	ti_arena_release(&p.arena);
	return st;
}
