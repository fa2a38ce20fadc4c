/*
 * legacy.c - torch.save's legacy stream onto the meta device (see
 * format/legacy.h).
 *
 * _legacy_save writes five pickles and then the storages: each an int64
 * element count (THPStorage_writeFileRaw) and count * element size bytes.
 * The object pickle's persistent ids are
 *   ('storage', type, root_key, location, numel, view_metadata)
 * where view_metadata is None, or (view_key, offset, size) in elements for
 * a storage that was a slice of another (PyTorch before 1.0); and
 *   ('module', cls, source_file, source)
 * for every nn.Module of a whole-model save, which _legacy_load's
 * persistent_load turns into the class itself.
 */
#include "format/legacy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/findings.h"
#include "core/torch_unpickle.h"
#include "core/value_build.h"
#include "util/strmap.h"

/* torch/serialization.py: MAGIC_NUMBER and PROTOCOL_VERSION */
static const uint8_t magic_number[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
enum { PROTOCOL_VERSION = 1001 };

const char *const ti_legacy_pickle_names[5] = {
	"pickle 1 (magic number)", "pickle 2 (protocol version)", "pickle 3 (sys_info)",
	"pickle 4 (object)", "pickle 5 (storage keys)",
};

/* A storage that is a slice of another: its bytes start offset elements into root's. */
typedef struct view {
	ti_storage *view, *root;
	int64_t offset;
} view;

/*
 * The torch interpreter's hooks, with persistent ids read as _legacy_load
 * reads them. torch is first: the torch hooks take this struct as theirs.
 */
typedef struct legacy_torch {
	ti_torch torch;
	ti_status (*storage_load)(void *, ti_arena *, ti_value *, ti_value **, ti_error *);
	view *views;
	size_t view_count, view_capacity;
} legacy_torch;

typedef struct file_bytes {
	ti_io *io;
	uint64_t base;
} file_bytes;

static ti_status read_at(ti_io *io, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	size_t got;
	ti_status st = ti_io_read(io, offset, buf, n, &got, err);
	if (!st && got < n)
		return TI_FAIL(err, TI_E_IO, "the file is shorter than it was");
	return st;
}

static ti_status read_window(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	const file_bytes *f = ctx;
	return read_at(f->io, f->base + offset, buf, n, err);
}

static ti_status storage_of(legacy_torch *lt, ti_arena *arena, ti_value *const *items, size_t n, ti_value **out,
                            ti_error *err)
{
	ti_value *pid = ti_value_new_seq(arena, TI_TUPLE, items, n);
	if (!pid)
		return TI_FAIL(err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
	ti_value_ref(pid);
	ti_status s = lt->storage_load(&lt->torch, arena, pid, out, err);
	ti_value_unref(arena, pid);
	return s;
}

static ti_status persistent_load(void *ctx, ti_arena *arena, ti_value *pid, ti_value **out, ti_error *err)
{
	legacy_torch *lt = ctx;
	const ti_seq *p = pid->kind == TI_TUPLE ? &pid->as.seq : NULL;
	if (!p || p->count < 1 || p->items[0]->kind != TI_STR)
		return TI_FAIL(err, TI_E_CORRUPT, "persistent id is not a ('storage', ...) or ('module', ...) tuple");
	const char *typename = p->items[0]->as.bytes.data;
	if (!strcmp(typename, "module")) {
		/* ('module', cls, source_file, source): the loader returns cls, which NEWOBJ then makes */
		if (p->count != 4 || p->items[1]->kind != TI_GLOBAL)
			return TI_FAIL(err, TI_E_CORRUPT, "persistent id ('module', ...) is not (typename, class, source file, source)");
		*out = p->items[1];
		return TI_OK;
	}
	if (strcmp(typename, "storage") || p->count != 6)
		return TI_FAIL(err, TI_E_CORRUPT, "persistent id is not a ('storage', type, key, location, size, view) tuple");
	ti_value *root = NULL;
	if (storage_of(lt, arena, p->items, 5, &root, err))
		return err->code;
	const ti_value *vm = p->items[5];
	if (vm->kind == TI_NONE || !root) {
		*out = root;
		return TI_OK;
	}
	/* (view_key, offset, size): a storage of its own, its bytes inside root's */
	const ti_seq *v;
	int64_t offset, size;
	if (ti_value_as_seq(vm, &v, err) || v->count != 3 || v->items[0]->kind != TI_STR ||
	    ti_value_as_int(v->items[1], &offset, err) || ti_value_as_int(v->items[2], &size, err))
		return TI_FAIL(err, TI_E_CORRUPT, "storage view is not (key, offset, size)");
	ti_storage *r = root->as.storage;
	if (offset < 0 || size < 0 || offset > r->numel || size > r->numel - offset)
		return TI_FAIL(err, TI_E_CORRUPT, "view of %" PRId64 " elements at %" PRId64 " passes storage '%s' of %" PRId64,
		               size, offset, r->key, r->numel);
	ti_value *size_value = ti_value_new_int(arena, size);
	ti_value *items[5] = {p->items[0], p->items[1], v->items[0], p->items[3], size_value};
	ti_value *view_value = NULL;
	if (!size_value || storage_of(lt, arena, items, 5, &view_value, err)) {
		ti_value_unref(arena, root);
		return size_value ? err->code : TI_FAIL(err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
	}
	ti_storage *vs = view_value->as.storage;
	bool known = false;
	for (size_t i = 0; i < lt->view_count && !known; i++)
		if (lt->views[i].view == vs) {
			known = true;
			if (lt->views[i].root != r || lt->views[i].offset != offset)
				return TI_FAIL(err, TI_E_CORRUPT, "storage view '%s' is declared twice differently", vs->key);
		}
	if (!known) {
		if (vs == r)
			return TI_FAIL(err, TI_E_CORRUPT, "storage '%s' is a view of itself", vs->key);
		if (ti_arena_array_grow(arena, (void **)&lt->views, &lt->view_capacity, sizeof(*lt->views), lt->view_count + 1))
			return TI_FAIL(err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
		lt->views[lt->view_count++] = (view){vs, r, offset};
	}
	*out = view_value;
	return TI_OK;
}

/*
 * ---- where a pickle ends ----
 *
 * The pickle machine looks over all of its source before it runs (for memo
 * lookups), so a pickle that is followed by gigabytes of storages must be
 * handed over cut to its own length. The length comes from walking its
 * opcodes (Lib/pickletools.py gives each one's argument), skipping over the
 * bytes of counted strings without reading them, and reading FRAMEs as
 * torch.load's C unpickler does (pickle.c): a read that crosses a frame's
 * end starts after it, but for the data of bytes; a frame's bytes count
 * even past STOP, since the machine checks that they are there.
 */
enum {
	ARG_NONE, ARG_1, ARG_2, ARG_4, ARG_8,     /* fixed sizes */
	ARG_COUNT1, ARG_COUNT4, ARG_COUNT8,       /* a little-endian length, then that many bytes */
	ARG_LINE, ARG_LINE2,                      /* text up to a newline; GLOBAL and INST have two */
	ARG_BAD
};

static unsigned char arg_kind(uint8_t op)
{
	switch (op) {
	case '(': case '.': case '0': case '1': case '2': case 'N': case 'R': case 'a': case 'b': case 'd': case '}':
	case 'e': case 'l': case ']': case 'o': case 's': case 't': case ')': case 'u': case 'Q': case 0x81: case 0x85:
	case 0x86: case 0x87: case 0x88: case 0x89: case 0x8f: case 0x90: case 0x91: case 0x92: case 0x93: case 0x94:
	case 0x97: case 0x98:
		return ARG_NONE;
	case 'K': case 'h': case 'q': case 0x80: case 0x82:
		return ARG_1;
	case 'M': case 0x83:
		return ARG_2;
	case 'J': case 'j': case 'r': case 0x84:
		return ARG_4;
	case 'G': case 0x95: /* FRAME: its length, then opcodes that walk on as any others */
		return ARG_8;
	case 'U': case 0x8c: case 'C': case 0x8a:
		return ARG_COUNT1;
	case 'T': case 'X': case 'B': case 0x8b:
		return ARG_COUNT4;
	case 0x8d: case 0x8e: case 0x96:
		return ARG_COUNT8;
	case 'I': case 'L': case 'F': case 'S': case 'V': case 'P': case 'g': case 'p':
		return ARG_LINE;
	case 'c': case 'i':
		return ARG_LINE2;
	default:
		return ARG_BAD;
	}
}

typedef struct walk_buf {
	const ti_pickle_source *src;
	uint8_t data[1 << 16];
	uint64_t base;
	size_t avail;
} walk_buf;

/* The byte at pos, or -1 with err set past the end. */
static int byte_at(walk_buf *w, uint64_t pos, ti_error *err)
{
	if (pos >= w->src->size) {
		TI_FAIL(err, TI_E_CORRUPT, "pickle ends without STOP");
		err->offset = (int64_t)w->src->size;
		return -1;
	}
	if (pos < w->base || pos >= w->base + w->avail) {
		uint64_t left = w->src->size - pos;
		w->avail = left < sizeof(w->data) ? (size_t)left : sizeof(w->data);
		w->base = pos;
		if (w->src->read(w->src->ctx, pos, w->data, w->avail, err)) {
			w->avail = 0;
			return -1;
		}
	}
	return w->data[pos - w->base];
}

enum { LINE_MAX_BYTES = 1 << 20 }; /* a text argument: a number, a module or class name */

/* A read of n bytes at *pos that runs past the frame it is in starts at the frame's end. */
static void past_frame(uint64_t *pos, uint64_t frame_end, uint64_t n)
{
	if (*pos < frame_end && n > frame_end - *pos)
		*pos = frame_end;
}

ti_status ti_legacy_pickle_extent(const ti_pickle_source *src, uint64_t *extent, ti_error *err)
{
	walk_buf *w = calloc(1, sizeof(*w));
	if (!w)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	w->src = src;
	uint64_t pos = 0, frame_end = 0;
	ti_status s = TI_OK;
	for (;;) {
		uint64_t at = pos;
		int op = byte_at(w, pos++, err);
		if (op < 0) {
			s = err->code;
			break;
		}
		if (op == '.') {
			*extent = pos > frame_end ? pos : frame_end;
			break;
		}
		unsigned char kind = arg_kind((uint8_t)op);
		static const unsigned char fixed[] = {[ARG_NONE] = 0, [ARG_1] = 1, [ARG_2] = 2, [ARG_4] = 4, [ARG_8] = 8,
		                                      [ARG_COUNT1] = 1, [ARG_COUNT4] = 4, [ARG_COUNT8] = 8};
		if (kind == ARG_BAD) {
			s = TI_FAIL(err, TI_E_CORRUPT, "bad pickle opcode 0x%02x", op);
			err->offset = (int64_t)at;
			break;
		}
		if (kind <= ARG_COUNT8) {
			uint64_t count = 0;
			past_frame(&pos, frame_end, fixed[kind]);
			for (unsigned i = 0; i < fixed[kind]; i++) {
				int b = byte_at(w, pos + i, err);
				if (b < 0) {
					s = err->code;
					break;
				}
				count |= (uint64_t)b << (8 * i);
			}
			if (s)
				break;
			pos += fixed[kind];
			if (op == 0x95) { /* FRAME: inside another and within it, nothing changes */
				if (pos >= frame_end || count > frame_end - pos) {
					pos = pos > frame_end ? pos : frame_end;
					if (count > src->size - pos) {
						s = TI_FAIL(err, TI_E_CORRUPT, "pickle frame of %llu bytes runs past the end",
						            (unsigned long long)count);
						err->offset = (int64_t)at;
						break;
					}
					frame_end = pos + count;
				}
				continue;
			}
			if (kind >= ARG_COUNT1) {
				if (op != 'B' && op != 'C' && op != 0x8e && op != 0x96) /* bytes run on into the file */
					past_frame(&pos, frame_end, count);
				if (count > src->size - pos) { /* the bytes are skipped, never read */
					s = TI_FAIL(err, TI_E_CORRUPT, "argument of %llu bytes passes the end of the pickle",
					            (unsigned long long)count);
					err->offset = (int64_t)at;
					break;
				}
				pos += count;
			}
			continue;
		}
		for (int lines = kind == ARG_LINE2 ? 2 : 1; lines && !s; lines--) {
			uint64_t start = pos;
			int b;
			while ((b = byte_at(w, pos++, err)) != '\n') {
				if (b >= 0 && start < frame_end && pos == frame_end) { /* no newline left in the frame */
					start = pos;
					continue;
				}
				if (b < 0 || pos - start > LINE_MAX_BYTES) {
					s = b < 0 ? err->code : TI_FAIL(err, TI_E_LIMIT, "text argument longer than %d bytes", LINE_MAX_BYTES);
					if (b >= 0)
						err->offset = (int64_t)at;
					break;
				}
			}
		}
		if (s)
			break;
	}
	free(w);
	return s;
}

/* Runs one pickle from pos; *end gets where it stopped. */
static ti_status load_one(ti_io *io, uint64_t size, uint64_t pos, int which, ti_arena *arena, const ti_pickle_hooks *hooks,
                          const ti_limits *lim, ti_value **out, uint64_t *end, ti_error *err)
{
	file_bytes f = {io, pos};
	uint64_t left = size - pos;
	ti_pickle_source src = {left < lim->pickle_max ? left : lim->pickle_max, read_window, &f, NULL};
	size_t consumed = 0;
	if (pos >= size) {
		TI_FAIL(err, TI_E_CORRUPT, "the file ends before %s", ti_legacy_pickle_names[which]);
		ti_error_at(err, NULL, (int64_t)pos);
		return err->code;
	}
	/* cut to its own length: the storages after it are never looked at */
	ti_status s = ti_legacy_pickle_extent(&src, &src.size, err);
	if (!s)
		s = ti_pickle_load_source(&src, arena, hooks, &lim->pickle, out, &consumed, err);
	if (s) {
		/* the offset is the file's: the legacy stream has no members */
		int64_t at = err->offset >= 0 ? err->offset + (int64_t)pos : (int64_t)pos;
		char msg[TI_ERROR_MESSAGE_MAX];
		memcpy(msg, err->message, sizeof(msg));
		ti_error_set(err, s, __FILE__, __LINE__, "%s: %s", ti_legacy_pickle_names[which], msg);
		err->member[0] = 0;
		err->offset = at;
		return s;
	}
	*end = pos + consumed;
	return TI_OK;
}

static ti_status fail_at(ti_error *err, int64_t offset)
{
	ti_error_at(err, NULL, offset);
	return err->code;
}

/* The three small pickles: magic number, protocol version, sys_info. */
static ti_status read_header(ti_io *io, uint64_t size, ti_arena *arena, const ti_limits *lim, ti_legacy *out,
                             uint64_t *pos, ti_error *err)
{
	ti_value *v;
	uint64_t at = *pos;
	if (load_one(io, size, *pos, 0, arena, NULL, lim, &v, pos, err))
		return err->code;
	if (v->kind != TI_BIGINT || v->as.bytes.size != sizeof(magic_number) ||
	    memcmp(v->as.bytes.data, magic_number, sizeof(magic_number))) {
		TI_FAIL(err, TI_E_CORRUPT, "invalid magic number: not a torch.save file");
		return fail_at(err, (int64_t)at);
	}
	at = *pos;
	if (load_one(io, size, *pos, 1, arena, NULL, lim, &v, pos, err))
		return err->code;
	if (ti_value_as_int(v, &out->protocol_version, err) || out->protocol_version != PROTOCOL_VERSION) {
		TI_FAIL(err, TI_E_UNSUPPORTED, "invalid protocol version: torch.load reads %d", PROTOCOL_VERSION);
		return fail_at(err, (int64_t)at);
	}
	at = *pos;
	if (load_one(io, size, *pos, 2, arena, NULL, lim, &v, pos, err))
		return err->code;
	const ti_value *le = v->kind == TI_DICT ? ti_dict_get(v, "little_endian") : NULL;
	if (!le || ti_value_as_bool(le, &out->little_endian, err)) {
		TI_FAIL(err, TI_E_CORRUPT, "sys_info is not a dict with 'little_endian'");
		return fail_at(err, (int64_t)at);
	}
	return TI_OK;
}

/* The list of keys and then each storage's count header and bytes, skipped. */
static ti_status read_storages(ti_io *io, uint64_t size, ti_arena *arena, const ti_limits *lim, legacy_torch *lt,
                               ti_legacy *out, uint64_t *pos, ti_error *err)
{
	ti_value *keys;
	uint64_t at = *pos;
	if (load_one(io, size, *pos, 4, arena, NULL, lim, &keys, pos, err))
		return err->code;
	if (keys->kind != TI_LIST && keys->kind != TI_TUPLE) {
		TI_FAIL(err, TI_E_CORRUPT, "storage keys are a %s, not a list", ti_kind_name(keys->kind));
		return fail_at(err, (int64_t)at);
	}
	ti_torch *t = &lt->torch;
	size_t n = t->storage_count, k = keys->as.seq.count;
	out->records = ti_arena_calloc(arena, n ? n : 1, sizeof(*out->records));
	out->offsets = ti_arena_calloc(arena, n ? n : 1, sizeof(*out->offsets));
	ti_strmap by_key;
	ti_strmap_init(&by_key);
	ti_status s = TI_OK;
	if (!out->records || !out->offsets)
		s = TI_FAIL(err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
	for (size_t i = 0; i < n && !s; i++)
		if (ti_strmap_put(&by_key, t->storages[i]->key, (void *)(uintptr_t)(i + 1)))
			s = TI_FAIL(err, TI_E_NOMEM, "out of memory");
	/* _legacy_load sets each listed storage from the file in list order */
	for (size_t i = 0; i < k && !s; i++) {
		const ti_value *key = keys->as.seq.items[i];
		if (key->kind != TI_STR) {
			TI_FAIL(err, TI_E_CORRUPT, "storage key %zu is a %s, not a str", i, ti_kind_name(key->kind));
			s = fail_at(err, (int64_t)at);
			break;
		}
		size_t j = (size_t)(uintptr_t)ti_strmap_get(&by_key, key->as.bytes.data);
		ti_storage *st = j ? t->storages[j - 1] : NULL;
		if (!st || out->records[j - 1].name) {
			TI_FAIL(err, TI_E_CORRUPT, "storage key '%.64s' %s", key->as.bytes.data,
			        st ? "is listed twice" : "names no storage of the object pickle");
			s = fail_at(err, (int64_t)at);
			break;
		}
		uint8_t head[8];
		if (*pos > size || size - *pos < 8) {
			TI_FAIL(err, TI_E_CORRUPT, "the file ends before storage '%.64s' (%zu of %zu)", st->key, i + 1, k);
			s = fail_at(err, (int64_t)*pos);
			break;
		}
		if ((s = read_at(io, *pos, head, 8, err)))
			break;
		int64_t count = 0;
		for (int b = 7; b >= 0; b--)
			count = (int64_t)((uint64_t)count << 8 | head[b]);
		if (count != st->numel) {
			TI_FAIL(err, TI_E_CORRUPT, "storage '%.64s' holds %" PRId64 " elements in the file but %" PRId64 " in the object pickle",
			        st->key, count, st->numel);
			s = fail_at(err, (int64_t)*pos);
			break;
		}
		uint64_t data = *pos + 8;
		if ((uint64_t)st->nbytes > size - data) {
			TI_FAIL(err, TI_E_CORRUPT, "storage '%.64s' needs %" PRId64 " bytes but the file ends %" PRIu64 " bytes on",
			        st->key, st->nbytes, size - data);
			s = fail_at(err, (int64_t)*pos);
			break;
		}
		ti_record *r = &out->records[j - 1];
		if (!(r->name = ti_arena_printf(arena, "data/%s", st->key))) {
			s = TI_FAIL(err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
			break;
		}
		r->size = r->compressed_size = (uint64_t)st->nbytes;
		r->index = -1;
		out->offsets[j - 1] = data;
		st->record_index = (int64_t)(j - 1);
		st->record_size = r->size;
		*pos = data + (uint64_t)st->nbytes; /* seek over the bytes: nothing of them is read */
	}
	ti_strmap_release(&by_key);
	if (s)
		return s;
	/* views lie inside their roots; every other storage must have been listed */
	for (size_t i = 0; i < lt->view_count; i++) {
		const view *v = &lt->views[i];
		size_t vi = v->view->index, ri = v->root->index;
		if (out->records[vi].name) {
			TI_FAIL(err, TI_E_CORRUPT, "storage view '%.64s' is also listed with bytes of its own", v->view->key);
			return fail_at(err, (int64_t)at);
		}
		if (!out->records[ri].name)
			continue; /* reported below */
		ti_record *r = &out->records[vi];
		if (!(r->name = ti_arena_printf(arena, "data/%s", v->view->key)))
			return TI_FAIL(err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
		r->size = r->compressed_size = (uint64_t)v->view->nbytes;
		r->index = -1;
		out->offsets[vi] = out->offsets[ri] + (uint64_t)v->offset * ti_dtype_size(v->root->dtype);
		v->view->record_index = (int64_t)vi;
		v->view->record_size = r->size;
	}
	for (size_t i = 0; i < n; i++)
		if (!out->records[i].name) {
			TI_FAIL(err, TI_E_CORRUPT, "storage '%.64s' has no bytes: the key list does not name it", t->storages[i]->key);
			return fail_at(err, (int64_t)at);
		}
	return TI_OK;
}

ti_status ti_legacy_read(ti_io *io, ti_arena *arena, const ti_limits *lim, struct scan_findings *findings,
                         ti_legacy *out, ti_error *err)
{
	memset(out, 0, sizeof(*out));
	uint64_t size = io->size, pos = 0;
	legacy_torch lt;
	memset(&lt, 0, sizeof(lt));
	ti_torch_init(&lt.torch, arena, lim->records_max);
	ti_status s = read_header(io, size, arena, lim, out, &pos, err);
	if (!s) {
		uint8_t head[2] = {0, 0};
		uint64_t start = pos;
		if (pos + 2 <= size && !read_at(io, pos, head, 2, err))
			out->pickle_protocol = head[0] == 0x80 ? head[1] : 1;
		if (findings) { /* named as scan names them: the pickle, and offsets in the file */
			scan_findings_record(findings, ti_legacy_pickle_names[3]);
			findings->offset_base = (int64_t)pos;
		}
		lt.torch.findings = findings;
		ti_pickle_hooks hooks;
		ti_torch_hooks(&lt.torch, &hooks);
		lt.storage_load = hooks.persistent_load;
		hooks.persistent_load = persistent_load;
		hooks.ctx = &lt;
		s = load_one(io, size, pos, 3, arena, &hooks, lim, &out->root, &pos, err);
		out->pickle_size = pos - start;
	}
	if (!s)
		s = read_storages(io, size, arena, lim, &lt, out, &pos, err);
	if (!s) {
		out->storages = lt.torch.storages;
		out->storage_count = lt.torch.storage_count;
	}
	ti_torch_release(&lt.torch);
	return s;
}
