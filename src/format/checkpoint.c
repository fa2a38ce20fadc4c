/*
 * checkpoint.c - opening a torch.save zip onto the meta device.
 *
 * Reads the archive's directory and its small records (data.pkl, version,
 * byteorder, .format_version, .storage_alignment), runs the pickle through
 * the torch interpreter, checks each storage against its data/<key> record
 * and names what the pickle holds. No storage record's bytes are read.
 * Facts: torch/serialization.py _load; caffe2/serialize/inline_container.cc.
 */
#include "tinspect/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/entries.h"
#include "core/torch_unpickle.h"
#include "format/legacy.h"
#include "format/zip_archive.h"
#include "core/findings.h"

struct ti_ckpt {
	ti_arena arena;
	ti_zip *zip;
	ti_ckpt_info info;
	const ti_record *records; /* the zip's */
	size_t record_count;
	ti_storage **storages;
	size_t storage_count;
	bool keys_are_positions; /* every storage i's key is "i" (the torch interpreter's finding) */
	ti_value *root;
	ti_entry_list entries;
	scan_findings findings; /* data.pkl's globals and calls, judged as scan judges them */
	const uint64_t *payload_offsets; /* a legacy file's: where each storage's bytes begin */
};

/* torch writes format versions 1..3 for torch.save; the reader accepts up to kMaxSupportedFileFormatVersion. */
enum { VERSION_MIN = 1, VERSION_MAX = 10, SMALL_RECORD_MAX = 4096 };

void ti_limits_default(ti_limits *limits)
{
	limits->pickle_max = (size_t)1 << 31;
	limits->arena_max = (size_t)8 << 30;
	limits->records_max = 1u << 22;
	limits->depth_max = 1000; /* Python's own recursion limit */
	limits->entries_max = 1u << 22;
	ti_pickle_limits_default(&limits->pickle);
}

/*
 * Tells what a file is when it is not a zip, from its first bytes
 * (torch-formats.md section 0); *is_legacy when it is a legacy torch.save.
 */
static ti_status sniff(ti_io *io, bool *is_legacy, ti_error *err)
{
	uint8_t head[512];
	size_t n;
	if (ti_io_read(io, 0, head, sizeof(head), &n, err))
		return err->code;
	static const uint8_t legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
	if (n == 0)
		return TI_FAIL(err, TI_E_CORRUPT, "empty file");
	if (n >= 4 && !memcmp(head, "PK\3\4", 4))
		return TI_OK;
	if (n >= 4 && !memcmp(head, "PK\5\6", 4))
		return TI_FAIL(err, TI_E_CORRUPT, "empty zip archive");
	if (n >= sizeof(legacy) && !memcmp(head, legacy, sizeof(legacy))) {
		*is_legacy = true;
		return TI_OK;
	}
	if (n >= 9 && head[8] == '{')
		return TI_FAIL(err, TI_E_UNSUPPORTED, "safetensors files are not supported yet");
	if (n >= 262 && !memcmp(head + 257, "ustar", 5))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "tar checkpoints (PyTorch before 0.4) are not supported");
	return TI_FAIL(err, TI_E_CORRUPT, "not a PyTorch checkpoint (no zip signature)");
}

static ti_status read_small(ti_ckpt *c, const char *name, char **text, ti_error *err)
{
	char full[512];
	snprintf(full, sizeof(full), "%s/%s", c->info.root, name);
	int64_t i = ti_zip_find(c->zip, full);
	*text = NULL;
	if (i < 0)
		return TI_OK;
	uint8_t *data;
	size_t size;
	if (ti_zip_read(c->zip, (size_t)i, SMALL_RECORD_MAX, &data, &size, err)) {
		ti_error_at(err, full, -1);
		return err->code;
	}
	while (size && (data[size - 1] == '\n' || data[size - 1] == '\r' || data[size - 1] == ' '))
		data[--size] = 0;
	*text = ti_arena_strndup(&c->arena, (char *)data, size);
	free(data);
	if (!*text)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	return TI_OK;
}

static ti_status parse_count(const char *text, const char *what, int64_t *out, ti_error *err)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (!*text || *end || errno || v < 0)
		return TI_FAIL(err, TI_E_CORRUPT, "%s record holds '%.32s', not a number", what, text);
	*out = v;
	return TI_OK;
}

/* Lists the records; the root folder is the text before the first '/' of the first entry. */
static ti_status read_directory(ti_ckpt *c, ti_io *io, const ti_limits *lim, ti_error *err)
{
	if (ti_zip_open_io(io, lim->records_max, &c->arena, &c->zip, err))
		return err->code;
	size_t n = ti_zip_count(c->zip);
	if (n == 0)
		return TI_FAIL(err, TI_E_CORRUPT, "empty zip archive");
	const ti_record *records = ti_zip_records(c->zip);
	const char *slash = strchr(records[0].name, '/');
	if (!slash)
		return TI_FAIL(err, TI_E_CORRUPT, "record '%s' is not in a folder: not a torch.save archive", records[0].name);
	size_t root_len = (size_t)(slash - records[0].name);
	c->info.root = ti_arena_strndup(&c->arena, records[0].name, root_len);
	if (!c->info.root)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		/* torch's getAllRecords rejects entries outside the root folder. */
		const char *name = records[i].name;
		if (strncmp(name, c->info.root, root_len) || name[root_len] != '/') {
			TI_FAIL(err, TI_E_CORRUPT, "record outside the archive's root folder '%s'", c->info.root);
			ti_error_at(err, name, -1);
			return TI_E_CORRUPT;
		}
	}
	c->records = records;
	c->record_count = n;
	return TI_OK;
}

static ti_status read_small_records(ti_ckpt *c, ti_error *err)
{
	/*
	 * torch.save writes data.pkl first and its small records (byteorder,
	 * .format_version) after it: over HTTP, one request for them all.
	 */
	char pkl[512];
	snprintf(pkl, sizeof(pkl), "%s/data.pkl", c->info.root);
	int64_t at = ti_zip_find(c->zip, pkl);
	if (at >= 0)
		ti_zip_hint_record(c->zip, (size_t)at, 4096);
	char *version, *data_version, *byteorder, *format_version, *alignment;
	if (read_small(c, "version", &version, err) || read_small(c, ".data/version", &data_version, err) ||
	    read_small(c, "byteorder", &byteorder, err) || read_small(c, ".format_version", &format_version, err) ||
	    read_small(c, ".storage_alignment", &alignment, err))
		return err->code;
	/* torch reads .data/version when present (format 6 and later), else version. */
	const char *v = data_version ? data_version : version;
	if (!v)
		return TI_FAIL(err, TI_E_CORRUPT, "archive has no version record");
	if (parse_count(v, "version", &c->info.version, err))
		return err->code;
	if (c->info.version < VERSION_MIN || c->info.version > VERSION_MAX)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "archive format version %" PRId64 " (we read %d to %d)",
		               c->info.version, VERSION_MIN, VERSION_MAX);
	c->info.byteorder = "little"; /* absent means little-endian (PyTorch PR #108523) */
	if (byteorder) {
		if (strcmp(byteorder, "little") && strcmp(byteorder, "big"))
			return TI_FAIL(err, TI_E_CORRUPT, "byteorder record holds '%.16s'", byteorder);
		c->info.byteorder = byteorder;
		c->info.has_byteorder = true;
	}
	c->info.format_version = c->info.storage_alignment = -1;
	if ((format_version && parse_count(format_version, ".format_version", &c->info.format_version, err)) ||
	    (alignment && parse_count(alignment, ".storage_alignment", &c->info.storage_alignment, err)))
		return err->code;
	char name[512];
	snprintf(name, sizeof(name), "%s/constants.pkl", c->info.root);
	c->info.format = ti_zip_find(c->zip, name) >= 0 ? "torchscript-zip" : "torch-zip";
	return TI_OK;
}

/*
 * data.pkl's bytes, for the pickle machine to read in windows: straight from
 * the file when the record is stored (torch writes no other kind), from
 * memory when it had to be inflated whole.
 */
typedef struct pickle_bytes {
	ti_zip *zip;
	uint64_t start;      /* where a stored record's bytes begin in the file */
	const uint8_t *data; /* an inflated record, or NULL */
} pickle_bytes;

static ti_status read_pickle_bytes(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	const pickle_bytes *b = ctx;
	if (b->data) {
		memcpy(buf, b->data + offset, n);
		return TI_OK;
	}
	return ti_zip_pread(b->zip, b->start + offset, buf, n, err);
}

static ti_status read_pickle(ti_ckpt *c, const ti_limits *lim, ti_error *err)
{
	char name[512];
	snprintf(name, sizeof(name), "%s/data.pkl", c->info.root);
	int64_t index = ti_zip_find(c->zip, name);
	if (index < 0) {
		snprintf(name, sizeof(name), "%s/.data/version", c->info.root);
		if (ti_zip_find(c->zip, name) >= 0)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "torch.package archives are not supported");
		return TI_FAIL(err, TI_E_CORRUPT, "archive has no data.pkl record");
	}
	uint8_t *data = NULL, head[2] = {0, 0};
	size_t size = (size_t)c->records[index].size;
	pickle_bytes bytes = {c->zip, 0, NULL};
	ti_status s = c->records[index].method == 0
	                  ? ti_zip_stored_range(c->zip, (size_t)index, lim->pickle_max, &bytes.start, err)
	                  : ti_zip_read(c->zip, (size_t)index, lim->pickle_max, &data, &size, err);
	bytes.data = data;
	ti_pickle_source src = {size, read_pickle_bytes, &bytes, NULL};
	if (!s && size >= 2)
		s = read_pickle_bytes(&bytes, 0, head, 2, err);
	if (s) {
		free(data);
		ti_error_at(err, name, -1);
		return err->code;
	}
	c->info.pickle_size = size;
	c->info.pickle_protocol = size >= 2 && head[0] == 0x80 ? head[1] : 1;
	ti_torch torch;
	ti_torch_init(&torch, &c->arena, lim->records_max);
	scan_findings_record(&c->findings, name);
	torch.findings = &c->findings;
	ti_pickle_hooks hooks;
	ti_torch_hooks(&torch, &hooks);
	s = ti_pickle_load_source(&src, &c->arena, &hooks, &lim->pickle, &c->root, NULL, err);
	free(data);
	if (s) {
		ti_error_at(err, name, -1);
		ti_torch_release(&torch);
		return s;
	}
	c->storages = torch.storages;
	c->storage_count = torch.storage_count;
	c->keys_are_positions = torch.keys_are_positions;
	ti_torch_release(&torch);
	return TI_OK;
}

/*
 * Which record holds storage k. torch.save names storage i "i" and writes
 * the data/<key> records sorted by name, so one pass over the records in
 * their order says, for every key that is a position, where its record is
 * and how big; the storages then read that in their own order. Between
 * them, neither the records nor the storages are visited out of order.
 */
typedef struct paired {
	int64_t index; /* -1: no record named data/<k> */
	uint64_t size;
} paired;

/*
 * Calls pair(ctx, k, record) for each record data/<k> whose k is a
 * position below the storage count.
 */
static void each_position_record(const ti_ckpt *c, void (*pair)(void *ctx, size_t k, size_t record), void *ctx)
{
	size_t rl = strlen(c->info.root), k;
	for (size_t i = 0; i < c->record_count; i++) {
		const char *name = c->records[i].name;
		/* every name starts with the root and a '/' (read_directory) */
		if (!strncmp(name + rl, "/data/", 6) && ti_torch_key_position(name + rl + 6, &k) && k < c->storage_count)
			pair(ctx, k, i);
	}
}

static void pair_into_table(void *ctx, size_t k, size_t record)
{
	paired *p = ((paired **)ctx)[0];
	const ti_ckpt *c = ((const ti_ckpt **)ctx)[1];
	p[k].index = (int64_t)record;
	p[k].size = c->records[record].size;
}

static paired *pair_records(const ti_ckpt *c)
{
	paired *p = malloc((c->storage_count ? c->storage_count : 1) * sizeof(*p));
	if (!p)
		return NULL;
	for (size_t k = 0; k < c->storage_count; k++)
		p[k].index = -1;
	const void *ctx[2] = {p, c};
	each_position_record(c, pair_into_table, (void *)ctx);
	return p;
}

/* Storage k, whose key is its own position: its record straight into it. */
static void pair_into_storage(void *ctx, size_t k, size_t record)
{
	const ti_ckpt *c = ctx;
	c->storages[k]->record_index = (int64_t)record;
	c->storages[k]->record_size = c->records[record].size;
}

/* Each storage has a record data/<key> whose size is its element count times element size. */
static ti_status check_storages(ti_ckpt *c, ti_error *err)
{
	/*
	 * torch.save keys storage i "i": then each storage is its own slot and
	 * the pairing writes into it, where a table of 16 bytes a storage
	 * (320 KB, fresh pages, for 20,000 of them) would only be read back.
	 */
	bool own = c->keys_are_positions;
	for (size_t i = 0; i < c->storage_count && own; i++) {
		c->storages[i]->record_index = -1; /* until a record pairs with it */
		c->storages[i]->record_size = 0;
	}
	paired *pairs = NULL;
	if (own)
		each_position_record(c, pair_into_storage, c);
	else if (!(pairs = pair_records(c)))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	size_t rl = strlen(c->info.root);
	ti_status s = TI_OK;
	for (size_t i = 0; i < c->storage_count && !s; i++) {
		ti_storage *st = c->storages[i];
		char name[1024];
		size_t k, kl;
		/* A key that is a position names its record: the pairing found it, or nothing did. */
		bool position = own || (ti_torch_key_position(st->key, &k) && k < c->storage_count);
		int64_t index = own ? st->record_index : position ? pairs[k].index : -1;
		uint64_t size = own ? st->record_size : position ? pairs[k].size : 0;
		if (index < 0) {
			kl = strlen(st->key);
			if (rl + kl + 7 > sizeof(name)) {
				s = TI_FAIL(err, TI_E_CORRUPT, "storage key of %zu bytes is too long", kl);
				break;
			}
			memcpy(name, c->info.root, rl);
			memcpy(name + rl, "/data/", 6);
			memcpy(name + rl + 6, st->key, kl + 1);
			if (!position && (index = ti_zip_find(c->zip, name)) >= 0)
				size = c->records[index].size;
		}
		if (index < 0) {
			TI_FAIL(err, TI_E_CORRUPT, "storage '%s' has no record", st->key);
			ti_error_at(err, name, -1);
			s = TI_E_CORRUPT;
			break;
		}
		st->record_index = index;
		st->record_size = size;
		if (size != (uint64_t)st->nbytes) {
			TI_FAIL(err, TI_E_CORRUPT, "record holds %" PRIu64 " bytes but storage '%s' declares %" PRId64 " %s elements (%" PRId64 " bytes)",
			        size, st->key, st->numel, st->untyped ? "byte" : ti_dtype_name(st->dtype), st->nbytes);
			ti_error_at(err, c->records[index].name, -1);
			s = TI_E_CORRUPT;
		}
	}
	free(pairs);
	return s;
}

/*
 * A legacy torch.save file: its records are made, one "data/<key>" per
 * storage, at the offset its bytes begin; it has no archive and no root.
 */
static ti_status read_legacy(ti_ckpt *c, ti_io *io, const ti_limits *lim, ti_error *err)
{
	ti_legacy l;
	ti_status s = ti_legacy_read(io, &c->arena, lim, &c->findings, &l, err);
	if (s)
		return s;
	c->root = l.root;
	c->storages = l.storages;
	c->storage_count = l.storage_count;
	c->records = l.records;
	c->record_count = l.storage_count;
	c->payload_offsets = l.offsets;
	c->info.format = "torch-legacy";
	c->info.root = "";
	c->info.version = l.protocol_version;
	/* THPStorage_writeFileRaw writes counts and elements little-endian whatever the writer's own order */
	c->info.byteorder = "little";
	c->info.has_byteorder = true;
	c->info.format_version = c->info.storage_alignment = -1;
	c->info.pickle_size = l.pickle_size;
	c->info.pickle_protocol = l.pickle_protocol;
	return TI_OK;
}

ti_status ti_ckpt_open(const char *path, const ti_limits *limits, ti_ckpt **out, ti_error *err)
{
	ti_io *io;
	ti_error_clear(err);
	*out = NULL;
	ti_status st = ti_io_open(path, &io, err);
	if (st)
		return st;
	st = ti_ckpt_open_io(io, limits, out, err);
	ti_io_close(io);
	return st;
}

ti_status ti_ckpt_open_io(ti_io *io, const ti_limits *limits, ti_ckpt **out, ti_error *err)
{
	ti_limits defaults;
	if (!limits) {
		ti_limits_default(&defaults);
		limits = &defaults;
	}
	ti_error_clear(err);
	*out = NULL;
	bool legacy = false;
	if (sniff(io, &legacy, err))
		return err->code;
	ti_ckpt *c = calloc(1, sizeof(*c));
	if (!c)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_arena_init(&c->arena, limits->arena_max);
	scan_findings_init(&c->findings, NULL);
	ti_status s;
	if ((legacy ? (s = read_legacy(c, io, limits, err)) != TI_OK
	            : ((s = read_directory(c, io, limits, err)) || (s = read_small_records(c, err)) ||
	               (s = read_pickle(c, limits, err)) || (s = check_storages(c, err)))) ||
	    (s = ti_entries_collect(c->root, &c->arena, limits->depth_max, limits->entries_max, &c->entries, err))) {
		ti_ckpt_close(c);
		return s;
	}
	/* Sharing is counted over named tensors: tied weights are one storage under two names. */
	for (size_t i = 0; i < c->entries.count; i++) {
		const ti_value *v = c->entries.items[i].value;
		if (v->kind == TI_TENSOR && v->as.tensor->storage)
			v->as.tensor->storage->tensor_count++;
	}
	*out = c;
	return TI_OK;
}

void ti_ckpt_close(ti_ckpt *c)
{
	if (!c)
		return;
	ti_zip_close(c->zip);
	ti_arena_release(&c->arena);
	scan_findings_release(&c->findings);
	free(c);
}

const ti_ckpt_info *ti_ckpt_get_info(const ti_ckpt *c) { return &c->info; }
const ti_value *ti_ckpt_root(const ti_ckpt *c) { return c->root; }
ti_zip *ti_ckpt_zip(const ti_ckpt *c) { return c->zip; }
size_t ti_ckpt_record_count(const ti_ckpt *c) { return c->record_count; }
const ti_record *ti_ckpt_record(const ti_ckpt *c, size_t i) { return i < c->record_count ? &c->records[i] : NULL; }
size_t ti_ckpt_storage_count(const ti_ckpt *c) { return c->storage_count; }
const ti_storage *ti_ckpt_storage(const ti_ckpt *c, size_t i) { return i < c->storage_count ? c->storages[i] : NULL; }
size_t ti_ckpt_entry_count(const ti_ckpt *c) { return c->entries.count; }
const ti_entry *ti_ckpt_entry(const ti_ckpt *c, size_t i) { return i < c->entries.count ? &c->entries.items[i] : NULL; }

ti_scan_severity ti_ckpt_safety(const ti_ckpt *c, const ti_scan_finding **findings, size_t *count)
{
	*findings = c->findings.items;
	*count = c->findings.count;
	return c->findings.worst;
}

uint64_t ti_ckpt_record_place(const ti_ckpt *c, size_t i)
{
	if (c->payload_offsets)
		return i < c->record_count ? c->payload_offsets[i] : UINT64_MAX;
	return c->zip ? ti_zip_local_offset(c->zip, i) : UINT64_MAX;
}

ti_status ti_ckpt_record_payload_offset(ti_ckpt *c, size_t i, uint64_t *offset, ti_error *err)
{
	if (c->payload_offsets) {
		if (i >= c->record_count)
			return TI_FAIL(err, TI_E_INVALID, "no record %zu", i);
		*offset = c->payload_offsets[i];
		return TI_OK;
	}
	return ti_zip_payload_offset(c->zip, i, offset, err);
}
