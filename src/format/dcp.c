/*
 * dcp.c - reading a DCP folder's .metadata (see tinspect/dcp.h).
 *
 * The pickle runs with no interpretation, only checks: every global it
 * names must be on the table below; every call must be one a Metadata is
 * built with (NEWOBJ of its dataclasses; REDUCE of torch.Size, a layout,
 * an enum, a path, OrderedDict; getattr of an enum class and a member
 * name); BUILD may only set a NEWOBJ-made object's state; and no
 * persistent id may occur. So what it accepts is data, whatever Python
 * would do with it. The raw values it leaves (NEWOBJ + BUILD for the
 * dataclasses, REDUCE for torch.Size and the enums) are then read by field
 * name, each checked for kind, rank, bounds and overflow, and the chunks of
 * each tensor paired with the _StorageInfo that Metadata.storage_data keys
 * by MetadataIndex(fqn, offsets).
 */
#include "tinspect/dcp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tinspect/pickle.h"
#include "tinspect/tensor.h"
#include "util/strmap.h"

struct ti_dcp {
	ti_arena arena;
	ti_dcp_item *items;
	size_t item_count;
	const char **files;
	size_t file_count;
	const char *version;
};

enum { CHECK_OVERLAP_MAX = 512 }; /* chunks per tensor checked pairwise for overlap */

void ti_dcp_limits_default(ti_dcp_limits *limits)
{
	*limits = (ti_dcp_limits){
		.metadata_max = (size_t)1 << 30,
		.items_max = (size_t)1 << 22,
		.chunks_max = (size_t)1 << 24,
		.files_max = (size_t)1 << 16,
	};
}

/* How a global of the table may be called. */
enum { CALL_NONE, CALL_NEWOBJ, CALL_REDUCE, CALL_GETATTR, CALL_ENUM };

/*
 * The globals a Metadata is made of. Modules moved between versions:
 * TensorProperties and its enum lived in torch.distributed._shard
 * .sharded_tensor.metadata up to 2.2. Python 3.11 and later pickle an enum
 * member as builtins.getattr(EnumClass, 'NAME'), and torch pickles a layout
 * as torch.serialization._get_layout('torch.strided'); StorageMeta's
 * checkpoint_id is a pathlib path when the writer was given one.
 */
static const struct {
	const char *module, *name;
	int call;
} allowed[] = {
	{"torch.distributed.checkpoint.metadata", "Metadata", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "TensorStorageMetadata", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "ChunkStorageMetadata", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "BytesStorageMetadata", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "MetadataIndex", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "TensorProperties", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "StorageMeta", CALL_NEWOBJ},
	{"torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING", CALL_ENUM},
	{"torch.distributed._shard.sharded_tensor.metadata", "TensorProperties", CALL_NEWOBJ},
	{"torch.distributed._shard.sharded_tensor.metadata", "MEM_FORMAT_ENCODING", CALL_ENUM},
	{"torch.distributed.checkpoint.filesystem", "_StorageInfo", CALL_NEWOBJ},
	{"torch", "Size", CALL_REDUCE},
	{"torch.serialization", "_get_layout", CALL_REDUCE},
	{"collections", "OrderedDict", CALL_REDUCE},
	{"builtins", "getattr", CALL_GETATTR},
	{"pathlib", "PosixPath", CALL_REDUCE},
	{"pathlib", "PurePosixPath", CALL_REDUCE},
	{"pathlib", "WindowsPath", CALL_REDUCE},
	{"pathlib", "PureWindowsPath", CALL_REDUCE},
};

/* The table's row for module.name: how it may be called (CALL_NONE for a dtype or layout), or -1 if it is not there. */
static int allowed_call(const char *module, const char *name)
{
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (!strcmp(allowed[i].module, module) && !strcmp(allowed[i].name, name))
			return allowed[i].call;
	/* torch.float32 ... and the layouts torch.strided ... (a bare global in some writers) */
	if (!strcmp(module, "torch") &&
	    (ti_dtype_from_torch_name(name) != TI_DT_INVALID || ti_layout_from_name(name) != TI_LAYOUT_COUNT))
		return CALL_NONE;
	return -1;
}

bool ti_dcp_global_allowed(const char *module, const char *name)
{
	return allowed_call(module, name) >= 0;
}

size_t ti_dcp_class_count(void)
{
	return sizeof(allowed) / sizeof(allowed[0]);
}

const char *ti_dcp_class_at(size_t i, const char **name)
{
	if (i >= sizeof(allowed) / sizeof(allowed[0]))
		return NULL;
	*name = allowed[i].name;
	return allowed[i].module;
}

/* ---- the pickle, run with the observer only ---- */

/* A stream torch's unpickler and a by-the-book one read apart is no writer's: refused, as a global would be. */
static ti_status diverge(void *ctx, uint8_t opcode, const char *what, int64_t offset, ti_error *err)
{
	(void)ctx;
	(void)opcode;
	(void)offset;
	return TI_FAIL(err, TI_E_UNSUPPORTED, "%s: refused, never run", what);
}

static ti_status observe(void *ctx, uint8_t opcode, const ti_value *target, int64_t offset, ti_error *err)
{
	(void)ctx;
	const char *op = ti_pickle_opcode_name(opcode);
	switch (opcode) {
	case 'c': case 0x93: case 'i': case 0x82: case 0x83: case 0x84: /* GLOBAL STACK_GLOBAL INST EXT1-4 */
		if (!target || target->kind != TI_GLOBAL) {
			TI_FAIL(err, TI_E_CORRUPT, "%s of no global", op ? op : "?");
			break;
		}
		if (ti_dcp_global_allowed(target->as.global->module, target->as.global->name))
			return TI_OK;
		TI_FAIL(err, TI_E_UNSUPPORTED, "names '%.100s.%.100s', which no DCP metadata holds: refused, never run",
		        target->as.global->module, target->as.global->name);
		break;
	case 'R': case 0x81: { /* REDUCE NEWOBJ: the call hook checks the arguments */
		int how = target && target->kind == TI_GLOBAL
		              ? allowed_call(target->as.global->module, target->as.global->name) : -1;
		if (how == (opcode == 'R' ? CALL_REDUCE : CALL_NEWOBJ) || (opcode == 'R' && how >= CALL_GETATTR))
			return TI_OK;
		if (target && target->kind == TI_GLOBAL)
			TI_FAIL(err, TI_E_UNSUPPORTED, "%s of '%.100s.%.100s': not how DCP metadata builds it", op,
			        target->as.global->module, target->as.global->name);
		else
			TI_FAIL(err, TI_E_UNSUPPORTED, "%s calls a %s, not a class DCP metadata holds", op,
			        target ? ti_kind_name(target->kind) : "nothing");
		break;
	}
	case 'b': /* BUILD: the build hook checks the object */
		return TI_OK;
	default: /* PERSID, BINPERSID: DCP metadata has none */
		TI_FAIL(err, TI_E_UNSUPPORTED, "%s: DCP metadata holds no persistent ids", op ? op : "?");
		break;
	}
	err->offset = offset;
	return err->code;
}

/* getattr(EnumClass, 'MEMBER') is the only getattr: an attribute of anything else could be code. */
static ti_status check_call(void *ctx, ti_arena *arena, ti_value *callable, ti_value *args, ti_call_kind how,
                            ti_value **out, ti_error *err)
{
	(void)ctx, (void)arena, (void)how;
	*out = NULL;
	const ti_global *g = callable->as.global; /* the observer let only globals through */
	if (allowed_call(g->module, g->name) != CALL_GETATTR)
		return TI_OK;
	const ti_value *cls = args->kind == TI_TUPLE && args->as.seq.count == 2 ? args->as.seq.items[0] : NULL;
	if (cls && cls->kind == TI_GLOBAL &&
	    allowed_call(cls->as.global->module, cls->as.global->name) == CALL_ENUM &&
	    args->as.seq.items[1]->kind == TI_STR)
		return TI_OK;
	return TI_FAIL(err, TI_E_UNSUPPORTED, "getattr of anything but a DCP enum's member: refused, never run");
}

/* BUILD sets the fields of an object NEWOBJ made (a dataclass of the table), and nothing else. */
static ti_status check_build(void *ctx, ti_arena *arena, ti_value *object, ti_value *state, int *handled,
                             ti_error *err)
{
	(void)ctx, (void)arena;
	*handled = 0;
	if (object->kind == TI_OBJECT && (object->flags & TI_F_NEWOBJ) && !object->as.object->state &&
	    (state->kind == TI_DICT || state->kind == TI_TUPLE))
		return TI_OK;
	return TI_FAIL(err, TI_E_UNSUPPORTED, "BUILD of a %s: DCP metadata only sets a new dataclass's fields",
	               ti_kind_name(object->kind));
}

/* ---- reading the values, by field ---- */

typedef struct reader {
	ti_dcp *d;
	const ti_dcp_limits *lim;
	ti_strmap storage;  /* "offsets;fqn" -> its _StorageInfo value */
	ti_strmap files;    /* relative_path -> index + 1 */
	size_t chunks;
	size_t file_capacity;
	ti_error *err;
} reader;

#define BAD(r, ...) TI_FAIL((r)->err, TI_E_CORRUPT, __VA_ARGS__)

/* True if v is an object made by calling the allowed class `name` (of any of its modules). */
static bool is_object_of(const ti_value *v, const char *name)
{
	return v && v->kind == TI_OBJECT && v->as.object->callable && v->as.object->callable->kind == TI_GLOBAL &&
	       !strcmp(v->as.object->callable->as.global->name, name);
}

/* A dataclass's field: its BUILD state is its __dict__. NULL when absent. */
static const ti_value *field(const ti_value *obj, const char *key)
{
	const ti_value *state = obj->as.object->state;
	return state && state->kind == TI_DICT ? ti_dict_get(state, key) : NULL;
}

static const char *class_of(const ti_value *v)
{
	if (v && v->kind == TI_OBJECT && v->as.object->callable && v->as.object->callable->kind == TI_GLOBAL)
		return v->as.object->callable->as.global->name;
	return v ? ti_kind_name(v->kind) : "nothing";
}

/* A str with no NUL in it, or NULL. */
static const char *plain_str(const ti_value *v)
{
	if (!v || v->kind != TI_STR || memchr(v->as.bytes.data, '\0', v->as.bytes.size))
		return NULL;
	return v->as.bytes.data;
}

/* torch.Size(ints) (REDUCE), or a plain tuple or list of ints: at most TI_MAX_DIMS of them, none negative. */
static ti_status read_size(reader *r, const ti_value *v, const char *what, const char *fqn, int64_t *out, int *ndim)
{
	if (is_object_of(v, "Size")) {
		const ti_value *args = v->as.object->args;
		v = args && args->kind == TI_TUPLE && args->as.seq.count == 1 ? args->as.seq.items[0] : NULL;
	}
	size_t n = 0;
	ti_error ignored;
	ti_error_clear(&ignored);
	if (!v || ti_value_as_int_array(v, out, TI_MAX_DIMS, &n, &ignored))
		return BAD(r, "'%.200s': %s is not a torch.Size of at most %d dimensions", fqn, what, TI_MAX_DIMS);
	for (size_t k = 0; k < n; k++)
		if (out[k] < 0)
			return BAD(r, "'%.200s': %s has a negative dimension (%" PRId64 ")", fqn, what, out[k]);
	*ndim = (int)n;
	return TI_OK;
}

static int64_t *copy_dims(reader *r, const int64_t *dims, int ndim)
{
	int64_t *c = ti_arena_calloc(&r->d->arena, (size_t)ndim + 1, sizeof(*c));
	if (c && ndim)
		memcpy(c, dims, (size_t)ndim * sizeof(*c));
	return c;
}

/* The key storage_data is looked up by: offsets, then the name (MetadataIndex equality ignores index). */
static char *index_key(reader *r, const char *fqn, const int64_t *offsets, int ndim, bool tensor)
{
	size_t cap = (size_t)ndim * 21 + strlen(fqn) + 4;
	char *k = ti_arena_alloc(&r->d->arena, cap);
	if (!k)
		return NULL;
	size_t n = 0;
	if (!tensor)
		k[n++] = '-';
	for (int i = 0; i < ndim; i++)
		n += (size_t)snprintf(k + n, cap - n, "%s%" PRId64, i ? "," : "", offsets[i]);
	snprintf(k + n, cap - n, ";%s", fqn);
	return k;
}

static ti_status nomem(reader *r)
{
	return TI_FAIL(r->err, TI_E_NOMEM, "out of memory reading DCP metadata");
}

/* A data file's name: one file of the folder, never a path out of it. */
static ti_status file_index(reader *r, const ti_value *v, size_t *out)
{
	const char *path = plain_str(v);
	if (!path || !path[0] || strchr(path, '/') || strchr(path, '\\') || !strcmp(path, ".") || !strcmp(path, "..") ||
	    !strcmp(path, ".metadata") || strlen(path) > 255)
		return BAD(r, "a storage record names no file of the folder ('%.100s')", path ? path : "not a str");
	void *found = ti_strmap_get(&r->files, path);
	if (found) {
		*out = (size_t)(uintptr_t)found - 1;
		return TI_OK;
	}
	if (r->d->file_count >= r->lim->files_max)
		return TI_FAIL(r->err, TI_E_LIMIT, "more than %zu data files", r->lim->files_max);
	if (r->d->file_count == r->file_capacity) {
		size_t cap = r->file_capacity ? 2 * r->file_capacity : 16;
		const char **bigger = ti_arena_calloc(&r->d->arena, cap, sizeof(*bigger));
		if (!bigger)
			return nomem(r);
		if (r->d->file_count)
			memcpy(bigger, r->d->files, r->d->file_count * sizeof(*bigger));
		r->d->files = bigger;
		r->file_capacity = cap;
	}
	char *copy = ti_arena_strdup(&r->d->arena, path);
	if (!copy || ti_strmap_put(&r->files, copy, (void *)(uintptr_t)(r->d->file_count + 1)) < 0)
		return nomem(r);
	r->d->files[r->d->file_count] = copy;
	*out = r->d->file_count++;
	return TI_OK;
}

/* Metadata.storage_data: {MetadataIndex: _StorageInfo}, indexed by (offsets, fqn). */
static ti_status index_storage(reader *r, const ti_value *data)
{
	if (!data || data->kind != TI_DICT)
		return BAD(r, "Metadata.storage_data is a %s, not a dict of _StorageInfo", data ? ti_kind_name(data->kind) : "None");
	const ti_dict *d = data->as.dict;
	for (size_t i = 0; i < d->count; i++) {
		const ti_value *key = d->keys[i], *info = d->values[i];
		if (!is_object_of(key, "MetadataIndex") || !is_object_of(info, "_StorageInfo"))
			return BAD(r, "Metadata.storage_data maps a %s to a %s, not a MetadataIndex to a _StorageInfo",
			           class_of(key), class_of(info));
		const char *fqn = plain_str(field(key, "fqn"));
		if (!fqn)
			return BAD(r, "a MetadataIndex has no fqn");
		const ti_value *off = field(key, "offset");
		int64_t offsets[TI_MAX_DIMS];
		int ndim = 0;
		bool tensor = off && off->kind != TI_NONE;
		if (tensor && read_size(r, off, "a storage record's offset", fqn, offsets, &ndim))
			return r->err->code;
		char *k = index_key(r, fqn, offsets, ndim, tensor);
		void *earlier;
		int added = k ? ti_strmap_add(&r->storage, k, (void *)info, &earlier) : -1;
		if (added < 0)
			return nomem(r);
		if (added == 1)
			return BAD(r, "'%.200s' has two storage records for the same chunk", fqn);
	}
	return TI_OK;
}

/* The _StorageInfo of (fqn, offsets): its file and byte range. */
static ti_status place_chunk(reader *r, const char *fqn, const int64_t *offsets, int ndim, bool tensor,
                            ti_dcp_chunk *c)
{
	char *k = index_key(r, fqn, offsets, ndim, tensor);
	if (!k)
		return nomem(r);
	const ti_value *info = ti_strmap_get(&r->storage, k);
	if (!info)
		return BAD(r, "'%.200s': no storage record holds %s", fqn, tensor ? "a chunk" : "its bytes");
	int64_t offset, length;
	ti_error ignored;
	ti_error_clear(&ignored);
	const ti_value *xf = field(info, "transform_descriptors");
	if (xf && xf->kind != TI_NONE && !(xf->kind == TI_LIST && xf->as.seq.count == 0) &&
	    !(xf->kind == TI_TUPLE && xf->as.seq.count == 0))
		return TI_FAIL(r->err, TI_E_UNSUPPORTED, "'%.200s' is stored transformed (transform_descriptors): "
		               "not read", fqn);
	if (ti_value_as_int(field(info, "offset"), &offset, &ignored) ||
	    ti_value_as_int(field(info, "length"), &length, &ignored) || offset < 0 || length < 0 ||
	    (uint64_t)offset > UINT64_MAX - (uint64_t)length)
		return BAD(r, "'%.200s': a storage record's offset and length are not two counts of bytes", fqn);
	c->offset = (uint64_t)offset;
	c->length = (uint64_t)length;
	return file_index(r, field(info, "relative_path"), &c->file);
}

/* TensorProperties: a 5-tuple state (its __getstate__) or, from older writers, a dict. */
static ti_status read_properties(reader *r, const ti_value *p, const char *fqn, ti_dcp_item *item)
{
	if (!is_object_of(p, "TensorProperties"))
		return BAD(r, "'%.200s': properties is a %s, not a TensorProperties", fqn, class_of(p));
	const ti_value *state = p->as.object->state, *dtype = NULL, *layout = NULL, *grad = NULL;
	if (state && state->kind == TI_TUPLE && state->as.seq.count == 5) {
		dtype = state->as.seq.items[0];
		layout = state->as.seq.items[1];
		grad = state->as.seq.items[2];
	} else if (state && state->kind == TI_DICT) {
		dtype = ti_dict_get(state, "dtype");
		layout = ti_dict_get(state, "layout");
		grad = ti_dict_get(state, "requires_grad");
	}
	if (!dtype || dtype->kind != TI_GLOBAL || strcmp(dtype->as.global->module, "torch") ||
	    (item->dtype = ti_dtype_from_torch_name(dtype->as.global->name)) == TI_DT_INVALID)
		return BAD(r, "'%.200s': TensorProperties names no torch dtype", fqn);
	const char *lname = NULL;
	if (layout && layout->kind == TI_GLOBAL)
		lname = layout->as.global->name;
	else if (is_object_of(layout, "_get_layout") && layout->as.object->args->kind == TI_TUPLE &&
	         layout->as.object->args->as.seq.count == 1)
		lname = plain_str(layout->as.object->args->as.seq.items[0]);
	if (lname && ti_layout_from_name(lname) != TI_LAYOUT_STRIDED)
		return TI_FAIL(r->err, TI_E_UNSUPPORTED, "'%.200s' has layout '%.60s': DCP saves strided tensors only", fqn,
		               lname);
	item->requires_grad = grad && grad->kind == TI_BOOL && grad->as.boolean;
	return TI_OK;
}

static ti_status read_tensor(reader *r, const ti_value *md, const char *fqn, ti_dcp_item *item)
{
	int64_t dims[TI_MAX_DIMS];
	if (read_properties(r, field(md, "properties"), fqn, item) || read_size(r, field(md, "size"), "size", fqn, dims, &item->ndim))
		return r->err->code;
	if (!(item->shape = copy_dims(r, dims, item->ndim)))
		return nomem(r);
	uint64_t numel = 1;
	for (int k = 0; k < item->ndim; k++)
		if (dims[k] && numel > (uint64_t)INT64_MAX / (uint64_t)dims[k] / 16)
			return BAD(r, "'%.200s': a shape of more elements than any tensor can have", fqn);
		else
			numel *= (uint64_t)dims[k];
	item->numel = (int64_t)numel;
	const ti_value *chunks = field(md, "chunks");
	if (!chunks || (chunks->kind != TI_LIST && chunks->kind != TI_TUPLE))
		return BAD(r, "'%.200s': chunks is not a list", fqn);
	size_t n = chunks->as.seq.count;
	if (n > r->lim->chunks_max - r->chunks)
		return TI_FAIL(r->err, TI_E_LIMIT, "more than %zu chunks", r->lim->chunks_max);
	r->chunks += n;
	ti_dcp_chunk *c = ti_arena_calloc(&r->d->arena, n + 1, sizeof(*c));
	if (!c)
		return nomem(r);
	uint64_t covered = 0;
	for (size_t i = 0; i < n; i++) {
		const ti_value *ch = chunks->as.seq.items[i];
		if (!is_object_of(ch, "ChunkStorageMetadata"))
			return BAD(r, "'%.200s': chunk %zu is a %s, not a ChunkStorageMetadata", fqn, i, class_of(ch));
		int64_t off[TI_MAX_DIMS], size[TI_MAX_DIMS];
		int on = 0, sn = 0;
		if (read_size(r, field(ch, "offsets"), "a chunk's offsets", fqn, off, &on) ||
		    read_size(r, field(ch, "sizes"), "a chunk's sizes", fqn, size, &sn))
			return r->err->code;
		if (on != item->ndim || sn != item->ndim)
			return BAD(r, "'%.200s': chunk %zu has %d and %d dimensions, the tensor %d", fqn, i, on, sn, item->ndim);
		uint64_t cn = 1;
		for (int k = 0; k < item->ndim; k++) {
			if (off[k] > dims[k] || size[k] > dims[k] - off[k])
				return BAD(r, "'%.200s': chunk %zu lies outside the tensor in dimension %d (%" PRId64 " + %" PRId64
				           " > %" PRId64 ")", fqn, i, k, off[k], size[k], dims[k]);
			cn *= (uint64_t)size[k]; /* within the tensor's count, which cannot overflow */
		}
		covered += cn;
		if (covered > numel)
			return BAD(r, "'%.200s': its chunks hold more elements than its %" PRIu64, fqn, numel);
		if (!(c[i].offsets = copy_dims(r, off, on)) || !(c[i].sizes = copy_dims(r, size, sn)))
			return nomem(r);
		if (place_chunk(r, fqn, off, on, true, &c[i]))
			return r->err->code;
	}
	if (covered != numel)
		return BAD(r, "'%.200s': its chunks hold %" PRIu64 " of its %" PRIu64 " elements", fqn, covered, numel);
	/* Equal counts and no overlap mean the chunks tile the tensor; beyond this many, reads find any gap. */
	for (size_t i = 0; n <= CHECK_OVERLAP_MAX && i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			bool overlap = true;
			for (int k = 0; k < item->ndim && overlap; k++)
				overlap = c[i].offsets[k] < c[j].offsets[k] + c[j].sizes[k] &&
				          c[j].offsets[k] < c[i].offsets[k] + c[i].sizes[k];
			if (overlap && numel)
				return BAD(r, "'%.200s': chunks %zu and %zu overlap", fqn, i, j);
		}
	item->chunks = c;
	item->chunk_count = n;
	return TI_OK;
}

static ti_status read_items(reader *r, const ti_value *root)
{
	if (!is_object_of(root, "Metadata"))
		return BAD(r, "the pickle holds a %s, not a torch.distributed.checkpoint Metadata", class_of(root));
	const ti_value *version = field(root, "version");
	if (version && version->kind != TI_NONE && !(r->d->version = plain_str(version)))
		return BAD(r, "Metadata.version is a %s, not a str", ti_kind_name(version->kind));
	if (index_storage(r, field(root, "storage_data")))
		return r->err->code;
	const ti_value *sdm = field(root, "state_dict_metadata");
	if (!sdm || sdm->kind != TI_DICT)
		return BAD(r, "Metadata.state_dict_metadata is not a dict");
	const ti_dict *d = sdm->as.dict;
	if (d->count > r->lim->items_max)
		return TI_FAIL(r->err, TI_E_LIMIT, "%zu items, more than the %zu allowed", d->count, r->lim->items_max);
	r->d->items = ti_arena_calloc(&r->d->arena, d->count + 1, sizeof(*r->d->items));
	if (!r->d->items)
		return nomem(r);
	for (size_t i = 0; i < d->count; i++) {
		ti_dcp_item *item = &r->d->items[i];
		const ti_value *md = d->values[i];
		if (!(item->name = plain_str(d->keys[i])))
			return BAD(r, "Metadata.state_dict_metadata has a key that is a %s, not a str", ti_kind_name(d->keys[i]->kind));
		item->value = md;
		if (is_object_of(md, "TensorStorageMetadata")) {
			item->is_tensor = true;
			if (read_tensor(r, md, item->name, item))
				return r->err->code;
		} else if (is_object_of(md, "BytesStorageMetadata")) {
			ti_dcp_chunk *c = ti_arena_calloc(&r->d->arena, 1, sizeof(*c));
			if (!c)
				return nomem(r);
			if (place_chunk(r, item->name, NULL, 0, false, c))
				return r->err->code;
			item->chunks = c;
			item->chunk_count = 1;
		} else {
			return BAD(r, "'%.200s' is a %s, not a TensorStorageMetadata or BytesStorageMetadata", item->name,
			           class_of(md));
		}
		r->d->item_count = i + 1;
	}
	return TI_OK;
}

ti_status ti_dcp_parse(const uint8_t *data, size_t size, const ti_dcp_limits *limits, ti_dcp **out, ti_error *err)
{
	ti_dcp_limits defaults;
	if (!limits) {
		ti_dcp_limits_default(&defaults);
		limits = &defaults;
	}
	*out = NULL;
	ti_error_clear(err);
	if (size > limits->metadata_max)
		return TI_FAIL(err, TI_E_LIMIT, "metadata of %zu bytes, more than the %zu allowed", size, limits->metadata_max);
	ti_dcp *d = calloc(1, sizeof(*d));
	if (!d)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	/* every value the pickle makes is a few dozen bytes per input byte at most */
	ti_arena_init(&d->arena, (size_t)1 << 31);
	ti_pickle_hooks hooks = {.call = check_call, .build = check_build, .observe = observe, .diverge = diverge};
	ti_pickle_limits plim;
	ti_pickle_limits_default(&plim);
	ti_value *root = NULL;
	reader r = {.d = d, .lim = limits, .err = err};
	ti_strmap_init(&r.storage);
	ti_strmap_init(&r.files);
	ti_status s = ti_pickle_load(data, size, &d->arena, &hooks, &plim, &root, NULL, err);
	if (!s)
		s = read_items(&r, root);
	ti_strmap_release(&r.storage);
	ti_strmap_release(&r.files);
	if (s) {
		ti_dcp_close(d);
		return s;
	}
	*out = d;
	return TI_OK;
}

ti_status ti_dcp_open(const char *path, const ti_dcp_limits *limits, ti_dcp **out, ti_error *err)
{
	ti_dcp_limits defaults;
	if (!limits) {
		ti_dcp_limits_default(&defaults);
		limits = &defaults;
	}
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return TI_FAIL(err, TI_E_IO, "cannot open '%s': %s", path, strerror(errno));
	struct stat sb;
	if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
		fclose(f);
		return TI_FAIL(err, TI_E_IO, "cannot open '%s': not a regular file", path);
	}
	if ((uint64_t)sb.st_size > limits->metadata_max) {
		fclose(f);
		return TI_FAIL(err, TI_E_LIMIT, "'%s' of %" PRIu64 " bytes, more than the %zu allowed", path,
		               (uint64_t)sb.st_size, limits->metadata_max);
	}
	size_t size = (size_t)sb.st_size;
	uint8_t *data = malloc(size ? size : 1);
	if (!data) {
		fclose(f);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading '%s'", path);
	}
	size_t got = size ? fread(data, 1, size, f) : 0;
	fclose(f);
	if (got != size) {
		free(data);
		return TI_FAIL(err, TI_E_IO, "cannot read '%s'", path);
	}
	ti_status s = ti_dcp_parse(data, size, limits, out, err);
	free(data);
	return s;
}

bool ti_dcp_is_folder(const char *dir)
{
	char path[4096];
	struct stat sb;
	int n = snprintf(path, sizeof(path), "%s/.metadata", dir);
	return n > 0 && (size_t)n < sizeof(path) && !stat(dir, &sb) && S_ISDIR(sb.st_mode) && !stat(path, &sb) &&
	       S_ISREG(sb.st_mode);
}

void ti_dcp_close(ti_dcp *d)
{
	if (!d)
		return;
	ti_arena_release(&d->arena);
	free(d);
}

size_t ti_dcp_item_count(const ti_dcp *d) { return d->item_count; }
const ti_dcp_item *ti_dcp_item_at(const ti_dcp *d, size_t i) { return i < d->item_count ? &d->items[i] : NULL; }
size_t ti_dcp_file_count(const ti_dcp *d) { return d->file_count; }
const char *ti_dcp_file_at(const ti_dcp *d, size_t i) { return i < d->file_count ? d->files[i] : NULL; }
const char *ti_dcp_version(const ti_dcp *d) { return d->version; }
