/*
 * scan.c - every pickle a file holds, found and judged (see scan.h).
 *
 * What is scanned, by what the bytes are rather than what they are called:
 *  - a zip (torch.save, TorchScript, anything else): its structure walked
 *    byte by byte (zip_walk.c), then every record that is a pickle, whatever
 *    its name, and every record that is itself an archive, to a depth of 4;
 *  - a legacy torch.save file: its five pickles (magic number, protocol,
 *    sys_info, the object, the storage keys);
 *  - a bare pickle file: every pickle in it, one after another.
 * Pickles run through the pickle machine with no interpretation, only the
 * observer (findings.c), so a payload is seen exactly as Python's unpickler
 * would reach it: STACK_GLOBAL from memoized strings, INST, OBJ, calls of
 * call results. A torch zip's storages are also checked against their
 * records by the checkpoint reader.
 */
#include "tinspect/io.h"
#include "tinspect/scan.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/findings.h"
#include "format/legacy.h"
#include "format/zip_walk.h"
#include "tinspect/checkpoint.h"
#include "tinspect/dcp.h"
#include "tinspect/pickle.h"
#include "tinspect/hf_index.h"
#include "tinspect/gguf.h"
#include "tinspect/npy.h"
#include "tinspect/safetensors.h"
#include "tinspect/sniff.h"
#include "tinspect/source.h"

enum {
	DEPTH_MAX = 4,                        /* archives inside archives */
	RECORDS_MAX = 1 << 22,
};
static const size_t INFLATE_MAX = (size_t)256 << 20; /* a compressed record is scanned in memory up to this */
static const size_t PICKLE_ARENA_MAX = (size_t)2 << 30;

typedef struct report_impl {
	ti_scan_report pub; /* first: the public part is the handle */
	scan_findings f;
	char *path;
} report_impl;

typedef struct scanner {
	report_impl *r;
	const ti_scan_options *opt;
	bool remote; /* the file is a URL: a zip is judged from its directory and the records torch.load unpickles */
} scanner;

/* ---- byte sources: a file, memory, a window onto another source ---- */

typedef struct file_src {
	ti_io *io;
} file_src;

static ti_status file_read(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	file_src *f = ctx;
	size_t got;
	ti_status st = ti_io_read(f->io, offset, buf, n, &got, err);
	if (!st && got < n)
		return TI_FAIL(err, TI_E_IO, "file shrank while it was read");
	return st;
}

static void file_hint(void *ctx, uint64_t offset, uint64_t n)
{
	ti_io_hint(((file_src *)ctx)->io, offset, n);
}

static ti_status mem_read(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	(void)err;
	memcpy(buf, (const uint8_t *)ctx + offset, n);
	return TI_OK;
}

typedef struct window_src {
	const ti_pickle_source *parent;
	uint64_t base;
} window_src;

static ti_status window_read(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	window_src *w = ctx;
	return w->parent->read(w->parent->ctx, w->base + offset, buf, n, err);
}

static void window_hint(void *ctx, uint64_t offset, uint64_t n)
{
	window_src *w = ctx;
	if (w->parent->hint)
		w->parent->hint(w->parent->ctx, w->base + offset, n);
}

/* ---- findings about reading ---- */

static void unreadable(scanner *sc, const ti_error *err, const char *record)
{
	report_impl *r = sc->r;
	char text[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64];
	ti_error e = *err;
	if (record && !e.member[0])
		ti_error_at(&e, record, -1);
	ti_error_format(&e, text, sizeof(text));
	if (!r->pub.unreadable) {
		r->pub.unreadable = 1;
		r->pub.error = e;
	}
	scan_add(&r->f, TI_SCAN_SAFE, "error", e.offset, NULL, NULL, NULL, "cannot be read: %s", text);
}

static void zip_report(void *ctx, ti_scan_severity severity, const char *record, int64_t offset, const char *message)
{
	scanner *sc = ctx;
	(void)record; /* the findings' record is the archive; the message names the entry */
	scan_add(&sc->r->f, severity, "zip", offset, NULL, NULL, NULL, "%s", message);
}

/* ---- pickles ---- */

/*
 * Runs one pickle at src[0..) through the machine with the observer only.
 * Findings go to into (a scratch set when the caller is not sure it is a
 * pickle at all). *consumed gets the bytes up to STOP.
 */
static ti_status run_pickle(const ti_pickle_source *src, scan_findings *into, size_t *consumed, bool legacy,
                            ti_error *err)
{
	ti_arena arena;
	ti_arena_init(&arena, PICKLE_ARENA_MAX);
	/* a legacy file's ('module', cls, ...) ids are their class, as its loader makes them */
	ti_pickle_hooks hooks = {.ctx = into, .observe = scan_observe, .observe_call = scan_observe_call,
	                         .diverge = scan_diverge,
	                         .persistent_load = legacy ? scan_persistent_load : NULL, .build = legacy ? NULL : scan_build};
	ti_limits lim;
	ti_limits_default(&lim);
	ti_value *out = NULL;
	ti_status s = ti_pickle_load_source(src, &arena, &hooks, &lim.pickle, &out, consumed, err);
	ti_arena_release(&arena);
	return s;
}

/*
 * For bytes that may not be a pickle at all: runs them into a scratch set,
 * and only when they are a whole pickle adds its findings (at offsets from
 * base) and counts it. Returns the bytes up to STOP, or 0.
 */
static size_t try_pickle(scanner *sc, const ti_pickle_source *src, const char *record, uint64_t base)
{
	scan_findings scratch;
	scan_findings_init(&scratch, sc->opt);
	scan_findings_record(&scratch, record);
	scratch.offset_base = (int64_t)base;
	ti_error err;
	ti_error_clear(&err);
	size_t consumed = 0;
	if (run_pickle(src, &scratch, &consumed, false, &err))
		consumed = 0;
	for (size_t i = 0; consumed && i < scratch.count; i++) {
		const ti_scan_finding *x = &scratch.items[i];
		for (uint64_t c = 0; c < x->count; c++)
			scan_add(&sc->r->f, x->severity, x->kind, x->offset, x->opcode, x->module, x->name, "%s", x->message);
	}
	if (consumed) {
		sc->r->f.globals += scratch.globals;
		sc->r->pub.pickles++;
	}
	scan_findings_release(&scratch);
	return consumed;
}

/* The part of src from offset on, as a source of its own. */
static ti_pickle_source tail_of(const ti_pickle_source *src, uint64_t offset, window_src *w)
{
	w->parent = src;
	w->base = offset;
	return (ti_pickle_source){src->size - offset, window_read, w, NULL};
}

/*
 * Scans pickles one after another from the start of src: at most max of
 * them (0: until the bytes run out or stop being a pickle). The first must
 * be a pickle; later ones end the stream quietly when they are not.
 * Returns the bytes consumed.
 */
static uint64_t scan_pickles(scanner *sc, const ti_pickle_source *src, const char *record, size_t max, bool legacy)
{
	uint64_t pos = 0;
	sc->r->f.offset_base = 0;
	for (size_t k = 0; (!max || k < max) && pos < src->size; k++) {
		window_src w;
		ti_pickle_source part = tail_of(src, pos, &w);
		ti_error err;
		ti_error_clear(&err);
		size_t consumed = 0;
		/* a legacy file's findings name their pickle: "pickle 4 (object)", offsets the file's */
		char named[TI_ERROR_MEMBER_MAX + 64];
		const char *in = record;
		if (legacy && k < 5) {
			snprintf(named, sizeof(named), "%s%s%s", record ? record : "", record ? "!" : "", ti_legacy_pickle_names[k]);
			in = named;
		}
		scan_findings_record(&sc->r->f, in);
		sc->r->f.offset_base = (int64_t)pos;
		uint64_t extent;
		if (legacy && !ti_legacy_pickle_extent(&part, &extent, &err))
			part.size = extent; /* the storages after the pickles are never read */
		ti_error_clear(&err);
		if (k == 0 || max) {
			if (run_pickle(&part, &sc->r->f, &consumed, legacy, &err)) {
				err.offset = err.offset >= 0 ? err.offset + (int64_t)pos : -1;
				unreadable(sc, &err, in);
				return pos;
			}
			sc->r->pub.pickles++;
		} else if (!(consumed = try_pickle(sc, &part, record, pos))) {
			break; /* a later pickle is judged only if the bytes really are one */
		}
		pos += consumed;
	}
	sc->r->f.offset_base = 0;
	return pos;
}

/* ---- NumPy arrays ---- */

/*
 * A .npy (a file, or a member of a .npz): its header checked as inspect
 * reads it. Plain arrays hold no code; an object array's data is a pickle of
 * the array, which np.load runs only with allow_pickle=True: it is judged
 * like any other pickle, at offsets in the array's file or member.
 */
static void scan_npy(scanner *sc, const ti_pickle_source *src, const char *record)
{
	uint8_t head[TI_NPY_HEAD_MAX];
	size_t n = src->size < sizeof(head) ? (size_t)src->size : sizeof(head);
	ti_error err;
	ti_error_clear(&err);
	ti_npy_header h;
	if (!src->read(src->ctx, 0, head, n, &err) && ti_npy_parse(head, n, src->size, &h, &err) == TI_E_UNSUPPORTED) {
		/* a dtype tensors lack holds no code, unless it has fields: an object field makes the data a pickle */
		if (h.structured) {
			scan_findings_record(&sc->r->f, record);
			scan_add(&sc->r->f, TI_SCAN_UNKNOWN, "file", -1, NULL, NULL, NULL,
			         "a structured dtype, not read: if a field holds objects, np.load (with allow_pickle=True) "
			         "unpickles its data");
		}
		return;
	}
	if (err.code) {
		unreadable(sc, &err, record);
		return;
	}
	if (!h.object)
		return;
	scan_findings_record(&sc->r->f, record);
	scan_add(&sc->r->f, TI_SCAN_UNKNOWN, "pickle", (int64_t)h.data_offset, NULL, NULL, NULL,
	         "an object array: its data is a pickle, which np.load runs only with allow_pickle=True");
	window_src w;
	ti_pickle_source tail = tail_of(src, h.data_offset, &w);
	sc->r->f.offset_base = (int64_t)h.data_offset;
	size_t consumed = 0;
	if (run_pickle(&tail, &sc->r->f, &consumed, false, &err)) {
		err.offset = err.offset >= 0 ? err.offset + (int64_t)h.data_offset : -1;
		unreadable(sc, &err, record);
	} else {
		sc->r->pub.pickles++;
	}
	sc->r->f.offset_base = 0;
}

/* ---- zips ---- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* torch.load unpickles data.pkl, TorchScript constants.pkl and its .debug_pkl files; .pkl is a pickle by name. */
static bool pickle_by_name(const char *name)
{
	return ends_with(name, ".pkl") || ends_with(name, ".debug_pkl");
}

static bool looks_like_pickle(const uint8_t *head, size_t n)
{
	return n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5;
}

static const char *scan_source(scanner *sc, const ti_pickle_source *src, const char *prefix, int depth,
                               ti_io *io);

/*
 * What findings call a record: "OUTER!NAME" inside a nested archive, and
 * "NAME (entry N)" for one of several records of the same name, so that
 * the copy a finding is in can be told apart.
 */
static char *record_name(const char *prefix, const zw_entry *e, size_t index)
{
	char entry[48] = "";
	if (e->duplicate)
		snprintf(entry, sizeof(entry), " (entry %zu)", index);
	size_t n = (prefix ? strlen(prefix) + 1 : 0) + strlen(e->name) + strlen(entry) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s%s%s", prefix ? prefix : "", prefix ? "!" : "", e->name, entry);
	return s;
}

/* One record: a pickle, an archive, or data. */
static void scan_record(scanner *sc, const ti_pickle_source *zsrc, const zw_archive *a, size_t i, const char *prefix,
                        int depth)
{
	const zw_entry *e = &a->entries[i];
	if (!e->readable || ends_with(e->name, "/"))
		return;
	char *record = record_name(prefix, e, i);
	if (!record) {
		sc->r->f.failed = true;
		return;
	}
	uint8_t *data = NULL;
	window_src w;
	ti_pickle_source src;
	ti_error err;
	ti_error_clear(&err);
	if (e->method == 0) {
		if (e->data_offset > zsrc->size || e->size > zsrc->size - e->data_offset)
			goto done; /* the walk reported it */
		w.parent = zsrc;
		w.base = e->data_offset;
		src = (ti_pickle_source){e->size, window_read, &w, window_hint};
		if (pickle_by_name(e->name))
			window_hint(&w, 0, e->size); /* a pickle is read in small pieces, all of it */
	} else {
		size_t size = 0;
		if (e->compressed_size > INFLATE_MAX && !pickle_by_name(e->name))
			goto done;
		if (zw_read(zsrc, a, i, INFLATE_MAX, &data, &size, &err)) {
			unreadable(sc, &err, record);
			goto done;
		}
		src = (ti_pickle_source){size, mem_read, data, NULL};
	}
	uint8_t head[TI_SNIFF_BYTES] = {0};
	size_t n = src.size < sizeof(head) ? (size_t)src.size : sizeof(head);
	if (n && src.read(src.ctx, 0, head, n, &err)) {
		unreadable(sc, &err, record);
		goto done;
	}
	ti_file_kind kind = ti_file_sniff(head, n, src.size);
	if (kind == TI_FILE_ZIP || kind == TI_FILE_LEGACY_TORCH) {
		if (depth + 1 >= DEPTH_MAX) {
			scan_findings_record(&sc->r->f, record);
			scan_add(&sc->r->f, TI_SCAN_SUSPICIOUS, "record", -1, NULL, NULL, NULL,
			         "archives nest deeper than %d levels: the innermost is not scanned", DEPTH_MAX);
		} else {
			scan_source(sc, &src, record, depth + 1, NULL);
		}
	} else if (kind == TI_FILE_NPY) {
		scan_npy(sc, &src, record);
	} else if (pickle_by_name(e->name)) {
		uint64_t used = scan_pickles(sc, &src, record, 1, false);
		if (used && used < src.size && (ends_with(e->name, "/data.pkl") || ends_with(e->name, "/constants.pkl"))) {
			scan_findings_record(&sc->r->f, record);
			scan_add(&sc->r->f, TI_SCAN_SUSPICIOUS, "pickle", (int64_t)used, NULL, NULL, NULL,
			         "%llu bytes after STOP that torch.load never reads", (unsigned long long)(src.size - used));
		}
	} else if (looks_like_pickle(head, n)) {
		/* Tensor bytes may start like a pickle by chance: only a whole pickle counts. */
		scan_findings_record(&sc->r->f, record);
		if (try_pickle(sc, &src, record, 0))
			scan_add(&sc->r->f, TI_SCAN_SUSPICIOUS, "record", -1, NULL, NULL, NULL,
			         "holds a pickle, though torch loads pickles only from records named *.pkl");
	}
done:
	free(data);
	free(record);
}

/* The archive's own name for itself: what data.pkl sits in. */
static const char *zip_format(const zw_archive *a)
{
	bool data = false, constants = false, npz = a->count > 0;
	for (size_t i = 0; i < a->count; i++) {
		npz = npz && ends_with(a->entries[i].name, ".npy"); /* np.savez writes NAME.npy members only */
		const char *slash = strchr(a->entries[i].name, '/');
		if (!slash)
			continue;
		if (!strcmp(slash, "/data.pkl"))
			data = true;
		else if (!strcmp(slash, "/constants.pkl"))
			constants = true;
	}
	return constants ? "torchscript-zip" : data ? "torch-zip" : npz ? "npz" : "zip";
}

/*
 * Over a URL, the records a zip walk reads: all but the storages
 * (ARCHIVE/data/N, TorchScript's ARCHIVE/constants/N), which torch.load
 * never unpickles. Each of them is a request of its own, and a multi-GB
 * checkpoint holds hundreds; the directory, data.pkl and the small records
 * are a few requests together.
 */
static bool read_over_url(const char *name)
{
	const char *last = strrchr(name, '/');
	if (!last || !last[1] || strspn(last + 1, "0123456789") != strlen(last + 1))
		return true;
	const char *parent = last;
	while (parent > name && parent[-1] != '/')
		parent--;
	size_t n = (size_t)(last - parent);
	return !((n == 4 && !strncmp(parent, "data", 4)) || (n == 9 && !strncmp(parent, "constants", 9)));
}

static const char *scan_zip(scanner *sc, const ti_pickle_source *src, const char *prefix, int depth)
{
	zw_archive a;
	ti_error err;
	ti_error_clear(&err);
	scan_findings_record(&sc->r->f, prefix);
	if (zw_walk_some(src, RECORDS_MAX, sc->remote ? read_over_url : NULL, zip_report, sc, &a, &err)) {
		unreadable(sc, &err, prefix);
		return "zip";
	}
	if (a.unvisited) {
		scan_findings_record(&sc->r->f, prefix);
		scan_add(&sc->r->f, TI_SCAN_SAFE, "zip", -1, NULL, NULL, NULL,
		         "read over a URL: the local headers of %zu storage records and the bytes between records were not "
		         "read (scan a downloaded copy for those zip checks)", a.unvisited);
	}
	for (size_t i = 0; i < a.count; i++)
		scan_record(sc, src, &a, i, prefix, depth);
	const char *format = zip_format(&a);
	zw_free(&a);
	return format;
}

/* ---- what a source is ---- */

/* A safetensors file holds no code; its header is checked as inspect would read it. */
static void check_safetensors(scanner *sc, ti_io *io)
{
	ti_st_file *st = NULL;
	ti_error err;
	ti_error_clear(&err);
	if (ti_st_open_io(io, NULL, &st, &err))
		unreadable(sc, &err, NULL);
	ti_st_close(st);
}

/* A GGUF file holds no code either: its header is checked as inspect reads it. */
static void check_gguf(scanner *sc, ti_io *io)
{
	ti_gguf_file *g = NULL;
	ti_error err;
	ti_error_clear(&err);
	if (ti_gguf_open_io(io, &g, &err))
		unreadable(sc, &err, NULL);
	ti_gguf_close(g);
}

static const char *scan_path(scanner *sc, const char *path, const char *prefix);

/*
 * Text at the top: a checkpoint index has its every shard scanned, each
 * named by its file; any other JSON or text is no model file at all.
 */
static const char *scan_text(scanner *sc, ti_io *io, ti_file_kind kind)
{
	ti_hf_index *index = NULL;
	ti_error err;
	ti_error_clear(&err);
	if (io && !ti_hf_index_open_io(io, NULL, &index, &err)) {
		for (size_t i = 0; i < ti_hf_index_shard_count(index); i++) {
			const ti_hf_shard *shard = ti_hf_index_shard(index, i);
			scan_path(sc, shard->path, shard->file);
		}
		ti_hf_index_close(index);
		return "hf-index";
	}
	sc->r->pub.not_model = 1;
	return kind == TI_FILE_JSON ? "json" : "text";
}

/* A dotted Python name: what find_class could import, as text that merely starts like a GLOBAL is not. */
static bool dotted_name(const char *s)
{
	bool start = true;
	for (; *s; s++) {
		bool letter = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || (unsigned char)*s >= 0x80;
		if (*s == '.' && !start)
			start = true;
		else if (letter || (!start && *s >= '0' && *s <= '9'))
			start = false;
		else
			return false;
	}
	return !start;
}

/*
 * Whether text is a protocol-0 pickle, judged aside: it is when it parses
 * whole, and when it names a global before it breaks (picklescan's
 * broken_model.pkl names builtins.exec, then fails): pickle.load has
 * imported that global by then, so its findings stand.
 */
static bool parses_as_pickle(scanner *sc, const ti_pickle_source *src)
{
	ti_scan_options opt = sc->opt ? *sc->opt : (ti_scan_options){0};
	opt.include_safe = 1; /* an allowed global counts too */
	scan_findings scratch;
	scan_findings_init(&scratch, &opt);
	size_t consumed = 0;
	ti_error err;
	ti_error_clear(&err);
	bool ok = !run_pickle(src, &scratch, &consumed, false, &err);
	for (size_t i = 0; !ok && i < scratch.count; i++)
		ok = scratch.items[i].module && scratch.items[i].name && dotted_name(scratch.items[i].module) &&
		     dotted_name(scratch.items[i].name);
	scan_findings_release(&scratch);
	return ok;
}

/* A bare pickle is not a torch.save file: torch.load stops at its magic number, whatever the pickle holds. */
static void not_torch_save(scanner *sc, const char *prefix)
{
	scan_findings_record(&sc->r->f, prefix);
	scan_add(&sc->r->f, TI_SCAN_UNKNOWN, "file", -1, NULL, NULL, NULL,
	         "a bare pickle, not a torch.save file: torch.load cannot load it (without weights_only it runs the pickle, then fails)");
}

/* io: the file src reads, when src is a whole file (NULL for a record or bytes in memory) */
static const char *scan_source(scanner *sc, const ti_pickle_source *src, const char *prefix, int depth,
                               ti_io *io)
{
	uint8_t head[TI_SNIFF_BYTES] = {0};
	size_t n = src->size < sizeof(head) ? (size_t)src->size : sizeof(head);
	ti_error err;
	ti_error_clear(&err);
	if (n && src->read(src->ctx, 0, head, n, &err)) {
		unreadable(sc, &err, prefix);
		return "unknown";
	}
	ti_file_kind kind = ti_file_sniff(head, n, src->size);
	switch (kind) {
	case TI_FILE_EMPTY:
		TI_FAIL(&err, TI_E_CORRUPT, "empty file");
		unreadable(sc, &err, prefix);
		return "unknown";
	case TI_FILE_ZIP:
		return scan_zip(sc, src, prefix, depth);
	case TI_FILE_LEGACY_TORCH:
		scan_pickles(sc, src, prefix, 5, true);
		return "legacy";
	case TI_FILE_SAFETENSORS: /* nothing in it is ever code: its header is checked as inspect reads it */
		if (io)
			check_safetensors(sc, io);
		return "safetensors";
	case TI_FILE_GGUF: /* metadata, tensor infos and data: no code anywhere */
		if (io)
			check_gguf(sc, io);
		return "gguf";
	case TI_FILE_JSON:
		if (depth == 0)
			return scan_text(sc, io, kind);
		break;
	case TI_FILE_NPY:
		scan_npy(sc, src, prefix);
		return "npy";
	default:
		if (ti_file_kind_is_foreign_archive(kind)) { /* torch.load cannot open it: nothing in it is loaded */
			TI_FAIL(&err, TI_E_UNSUPPORTED, "%s, not a torch.save file; its members are not read",
			        ti_file_kind_name(kind));
			unreadable(sc, &err, prefix);
			return "unknown";
		}
		break;
	}
	/* protocol 0 pickles are text: a text file is text only when it is no pickle */
	if (kind == TI_FILE_TEXT && depth == 0 && !parses_as_pickle(sc, src))
		return scan_text(sc, io, kind);
	uint64_t used = scan_pickles(sc, src, prefix, 0, false);
	if (!used)
		return "unknown";
	if (depth == 0)
		not_torch_save(sc, prefix);
	if (used < src->size && depth == 0) {
		/* torch.load takes a file that does not start with a zip header as a pickle: a zip after it hides. */
		scan_findings_record(&sc->r->f, prefix);
		scan_add(&sc->r->f, TI_SCAN_SUSPICIOUS, "file", (int64_t)used, NULL, NULL, NULL,
		         "%llu bytes after the last pickle are not a pickle", (unsigned long long)(src->size - used));
	}
	return "pickle";
}

/*
 * A torch zip's storages against their records, and views against their
 * storages: either short is an out-of-bounds read in the loader.
 */
static void check_storages(scanner *sc, ti_io *io, const char *prefix)
{
	ti_ckpt *ckpt = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_ckpt_open_io(io, NULL, &ckpt, &err);
	if (!s) {
		ti_ckpt_close(ckpt);
		return;
	}
	/* Only the storage checks' failures: the scan itself judged the rest. */
	if (s != TI_E_CORRUPT || (!strstr(err.message, "record holds") && !strstr(err.message, "has no record") &&
	                          !strstr(err.message, "views storage")))
		return;
	char text[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64];
	ti_error_format(&err, text, sizeof(text));
	char where[TI_ERROR_MEMBER_MAX + 4096];
	if (prefix && err.member[0])
		snprintf(where, sizeof(where), "%s!%s", prefix, err.member);
	else
		snprintf(where, sizeof(where), "%s", prefix ? prefix : err.member);
	scan_findings_record(&sc->r->f, where[0] ? where : NULL);
	scan_add(&sc->r->f, TI_SCAN_SUSPICIOUS, "storage", -1, NULL, NULL, NULL, "%s", text);
}

static ti_status finish(scanner *sc, const char *format, ti_scan_report **out, ti_error *err)
{
	report_impl *r = sc->r;
	if (r->f.omitted) {
		scan_findings_record(&r->f, NULL);
		r->f.count--; /* room for the note, in place of the last finding */
		scan_add(&r->f, TI_SCAN_SUSPICIOUS, "file", -1, NULL, NULL, NULL, "%zu more findings not listed",
		         r->f.omitted + 1);
	}
	r->pub.format = format;
	r->pub.verdict = r->f.worst;
	r->pub.findings = r->f.items;
	r->pub.count = r->f.count;
	r->pub.globals = r->f.globals;
	if (r->f.failed) {
		ti_scan_report_free(&r->pub);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory while scanning");
	}
	*out = &r->pub;
	return TI_OK;
}

static report_impl *new_report(const char *path, const ti_scan_options *opt)
{
	report_impl *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->path = strdup(path ? path : "");
	if (!r->path) {
		free(r);
		return NULL;
	}
	r->pub.path = r->path;
	ti_error_clear(&r->pub.error);
	scan_findings_init(&r->f, opt);
	return r;
}

/* Opens path to be scanned: a URL, or a regular file (a FIFO must not block the open). */
static ti_status open_input(const char *path, ti_io **io, ti_error *e)
{
	if (ti_io_is_url(path))
		return ti_io_open(path, io, e);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		TI_FAIL(e, TI_E_IO, "cannot open: %s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		TI_FAIL(e, TI_E_IO, "cannot open: not a regular file");
	if (fd >= 0)
		close(fd);
	return e->code ? e->code : ti_io_open(path, io, e);
}

/* Scans the file io reads, its findings recorded under prefix (NULL for the file scanned itself). */
static const char *scan_io(scanner *sc, ti_io *io, const char *prefix)
{
	file_src f = {io};
	ti_pickle_source src = {io->size, file_read, &f, file_hint};
	const char *format = scan_source(sc, &src, prefix, 0, io);
	if (!strcmp(format, "torch-zip"))
		check_storages(sc, io, prefix);
	return format;
}

/* Scans the file at path, its findings recorded under prefix (NULL for the file scanned itself). */
static const char *scan_path(scanner *sc, const char *path, const char *prefix)
{
	ti_error e;
	ti_error_clear(&e);
	ti_io *io = NULL;
	if (open_input(path, &io, &e)) {
		unreadable(sc, &e, prefix);
		return "unknown";
	}
	const char *format = scan_io(sc, io, prefix);
	ti_io_close(io);
	return format;
}

/*
 * A DCP folder's .metadata when tinspect's own reader refused it: run
 * through the observer as any pickle, with the classes a Metadata is made
 * of allowed beside the caller's, so that what is left is what refused it.
 * getattr is among them (Python 3.11 pickles an enum member with it): a
 * chain that reaches code through it must call what it returned, and that
 * call is itself dangerous to the observer.
 */
static void scan_refused_metadata(scanner *sc, const char *path, const ti_error *why)
{
	size_t extra = ti_dcp_class_count(), own = sc->opt ? sc->opt->allow_count : 0;
	const char **allow = calloc(own + extra + 1, sizeof(*allow));
	char *names = calloc(extra, 256);
	if (!allow || !names) {
		free(allow);
		free(names);
		sc->r->f.failed = true;
		return;
	}
	for (size_t i = 0; i < own; i++)
		allow[i] = sc->opt->allow[i];
	size_t n = own;
	for (size_t i = 0; i < extra; i++) {
		const char *name, *module = ti_dcp_class_at(i, &name);
		snprintf(names + i * 256, 256, "%s.%s", module, name);
		allow[n++] = names + i * 256;
	}
	/* not listed as safe: "allowed by --allow" would not be what allowed them */
	ti_scan_options dcp_opt = {.allow = allow, .allow_count = n, .include_safe = 0};
	const ti_scan_options *saved = sc->r->f.opt;
	sc->r->f.opt = &dcp_opt;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	file_src f = {NULL};
	ti_error ignored;
	if (fd >= 0 && !fstat(fd, &st) && !ti_io_wrap_fd(fd, &f.io, &ignored)) {
		ti_pickle_source src = {(uint64_t)st.st_size, file_read, &f, NULL};
		scan_pickles(sc, &src, ".metadata", 1, false);
		ti_io_close(f.io);
	}
	if (fd >= 0)
		close(fd);
	sc->r->f.opt = saved;
	free(allow);
	free(names);
	scan_findings_record(&sc->r->f, ".metadata");
	scan_add(&sc->r->f, TI_SCAN_UNKNOWN, "pickle", why->offset, NULL, NULL, NULL,
	         "not what DCP writes, so not read: %s", why->message);
}

/*
 * A torch.distributed.checkpoint folder: its .metadata, read by the DCP
 * reader (dcp.h: only the classes a Metadata is made of, only as DCP
 * builds them); then every chunk and bytes item, each a torch.save blob
 * inside a data file, scanned as an archive of its own, named
 * "FILE@OFFSET". torch.distributed.checkpoint.load unpickles them all.
 */
static const char *scan_dcp(scanner *sc, const char *dir)
{
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	char meta[4096];
	snprintf(meta, sizeof(meta), "%.*s/.metadata", (int)len, dir);
	ti_dcp *dcp = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_dcp_open(meta, NULL, &dcp, &err);
	if (s == TI_E_UNSUPPORTED) {
		scan_refused_metadata(sc, meta, &err);
		return "dcp";
	}
	if (s) {
		unreadable(sc, &err, ".metadata");
		return "dcp";
	}
	sc->r->pub.pickles++;
	for (size_t f = 0; f < ti_dcp_file_count(dcp); f++) {
		char path[4096];
		snprintf(path, sizeof(path), "%.*s/%s", (int)len, dir, ti_dcp_file_at(dcp, f));
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		ti_error_clear(&err);
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
			TI_FAIL(&err, TI_E_IO, "cannot open: %s", fd < 0 ? strerror(errno) : "not a regular file");
			unreadable(sc, &err, ti_dcp_file_at(dcp, f));
			if (fd >= 0)
				close(fd);
			continue;
		}
		file_src fs = {NULL};
		if (ti_io_wrap_fd(fd, &fs.io, &err)) {
			unreadable(sc, &err, ti_dcp_file_at(dcp, f));
			close(fd);
			continue;
		}
		ti_pickle_source whole = {(uint64_t)st.st_size, file_read, &fs, NULL};
		for (size_t i = 0; i < ti_dcp_item_count(dcp); i++) {
			const ti_dcp_item *item = ti_dcp_item_at(dcp, i);
			for (size_t k = 0; k < item->chunk_count; k++) {
				const ti_dcp_chunk *c = &item->chunks[k];
				if (c->file != f)
					continue;
				char record[512];
				snprintf(record, sizeof(record), "%s@%" PRIu64, ti_dcp_file_at(dcp, f), c->offset);
				if (c->offset > whole.size || c->length > whole.size - c->offset) {
					ti_error_clear(&err);
					TI_FAIL(&err, TI_E_CORRUPT, "'%.200s' holds bytes %" PRIu64 " to %" PRIu64 " of a file of %" PRIu64,
					        item->name, c->offset, c->offset + c->length, whole.size);
					unreadable(sc, &err, record);
					continue;
				}
				window_src w = {&whole, c->offset};
				ti_pickle_source blob = {c->length, window_read, &w, NULL};
				scan_source(sc, &blob, record, 1, NULL);
			}
		}
		ti_io_close(fs.io);
		close(fd);
	}
	ti_dcp_close(dcp);
	return "dcp";
}

ti_status ti_scan_file(const char *path, const ti_scan_options *opt, ti_scan_report **out, ti_error *err)
{
	*out = NULL;
	if (!path)
		return TI_FAIL(err, TI_E_INVALID, "no file to scan");
	scanner sc = {new_report(path, opt), opt, ti_io_is_url(path)};
	if (!sc.r)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	if (ti_source_is_hf_repo(path)) {
		/* a repository on the Hub: what from_pretrained would load from it, as a folder */
		char weights[8192];
		ti_io *io = NULL;
		ti_error e;
		ti_error_clear(&e);
		if (ti_source_repo_weights(path, weights, sizeof(weights), &io, &e)) {
			unreadable(&sc, &e, NULL);
			return finish(&sc, "unknown", out, err);
		}
		const char *format = scan_io(&sc, io, strrchr(weights, '/') + 1);
		ti_io_close(io);
		return finish(&sc, format, out, err);
	}
	struct stat st;
	if (!stat(path, &st) && S_ISDIR(st.st_mode) && ti_dcp_is_folder(path))
		return finish(&sc, scan_dcp(&sc, path), out, err);
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		/* a Hugging Face folder: what from_pretrained would load from it */
		char weights[4096];
		ti_error e;
		ti_error_clear(&e);
		if (ti_source_folder_weights(path, weights, sizeof(weights), &e)) {
			unreadable(&sc, &e, NULL);
			return finish(&sc, "unknown", out, err);
		}
		const char *slash = strrchr(weights, '/');
		return finish(&sc, scan_path(&sc, weights, slash ? slash + 1 : weights), out, err);
	}
	return finish(&sc, scan_path(&sc, path, NULL), out, err);
}

ti_status ti_scan_buffer(const char *name, const uint8_t *data, size_t size, const ti_scan_options *opt,
                         ti_scan_report **out, ti_error *err)
{
	*out = NULL;
	if (!data && size)
		return TI_FAIL(err, TI_E_INVALID, "no bytes to scan");
	scanner sc = {new_report(name, opt), opt, false};
	if (!sc.r)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_pickle_source src = {size, mem_read, (void *)data, NULL};
	const char *format = scan_source(&sc, &src, NULL, 0, NULL);
	return finish(&sc, format, out, err);
}

void ti_scan_report_free(ti_scan_report *report)
{
	if (!report)
		return;
	report_impl *r = (report_impl *)report;
	scan_findings_release(&r->f);
	free(r->path);
	free(r);
}
