/*
 * fuzz_pickle.c - the pickle machine, on raw pickle bytes.
 *
 * Each input is one pickle (seeds: the data.pkl of every fixture, and
 * pickles of assorted Python values at protocols 0 to 5). It goes through
 * two passes:
 *
 *   1. ti_pickle_load() with no hooks, as pickle.h allows: the machine
 *      alone, every opcode recording raw structure; the value it builds is
 *      printed with ti_value_repr() as the CLI prints values. The same
 *      bytes go through ti_pickle_load_source() (read from memory in the
 *      machine's windows), which must give the same value, or the same
 *      error at the same offset.
 *   2. the same bytes as 'archive/data.pkl' of a minimal torch.save zip
 *      (with 'archive/version'), opened with ti_ckpt_open(): the torch
 *      interpreter's hooks (rebuild functions, persistent ids, storages)
 *      are library-internal, and this is how the public API reaches them.
 *      A zip is cheap to write here, and mutations then land in the pickle
 *      instead of the zip structure, which fuzz_checkpoint.c covers.
 *      Pass 1 found the persistent ids ('storage', class, key, location,
 *      numel); each gets a record data/<key> of the size it declares
 *      (zeros, up to STORAGE_BYTES_MAX in all), so that the pickle gets
 *      past the storage checks into tensors and entries.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_walk.h"
#include "tinspect/arena.h"
#include "tinspect/checkpoint.h"
#include "tinspect/dtype.h"
#include "tinspect/pickle.h"

/* The arena ceiling for pass 1; the checkpoint reader's own default is for whole files. */
#define PICKLE_ARENA_MAX ((size_t)1 << 30)

/* Storage records the torch pass adds: how many, and their bytes together. */
enum { STORAGES_MAX = 64, STORAGE_BYTES_MAX = 1 << 20, VISITS_MAX = 100000, DEPTH_MAX = 100 };

typedef struct storage_record {
	char name[128]; /* "archive/data/<key>" */
	size_t size;
} storage_record;

typedef struct storage_list {
	storage_record items[STORAGES_MAX];
	size_t count, bytes;
	long visits;
} storage_list;

/* One persistent id, as torch.save writes it: ('storage', class, key, location, numel). */
static void add_storage(storage_list *list, const ti_value *pid)
{
	const ti_seq *t;
	const char *key;
	int64_t numel;
	ti_error err;
	if (ti_value_as_seq(pid, &t, &err) || t->count != 5 || ti_value_as_str(t->items[2], &key, &err) ||
	    ti_value_as_int(t->items[4], &numel, &err) || numel < 0 || strlen(key) > 100)
		return;
	size_t esize = 1; /* UntypedStorage counts bytes */
	if (t->items[1]->kind == TI_GLOBAL && t->items[1]->as.global && t->items[1]->as.global->name) {
		ti_dtype dt = ti_dtype_from_storage_name(t->items[1]->as.global->name);
		if (dt != TI_DT_INVALID && ti_dtype_size(dt))
			esize = ti_dtype_size(dt);
	}
	if ((uint64_t)numel > STORAGE_BYTES_MAX / esize)
		return;
	size_t bytes = (size_t)numel * esize;
	if (list->count == STORAGES_MAX || bytes > STORAGE_BYTES_MAX - list->bytes)
		return;
	char name[128];
	snprintf(name, sizeof(name), "archive/data/%s", key);
	for (size_t i = 0; i < list->count; i++)
		if (!strcmp(list->items[i].name, name))
			return;
	memcpy(list->items[list->count].name, name, sizeof(name));
	list->items[list->count++].size = bytes;
	list->bytes += bytes;
}

/* Finds persistent ids in a value graph, which may share nodes and hold cycles: visits are counted. */
static void find_storages(storage_list *list, const ti_value *v, int depth)
{
	if (!v || depth > DEPTH_MAX || ++list->visits > VISITS_MAX)
		return;
	switch (v->kind) {
	case TI_PERSID:
		add_storage(list, v->as.persid);
		break;
	case TI_TUPLE:
	case TI_LIST:
	case TI_SET:
	case TI_FROZENSET:
		for (size_t i = 0; i < v->as.seq.count; i++)
			find_storages(list, v->as.seq.items[i], depth + 1);
		break;
	case TI_DICT:
		FUZZ_CHECK(v->as.dict != NULL, "a dict without its ti_dict");
		for (size_t i = 0; i < v->as.dict->count; i++)
			find_storages(list, v->as.dict->values[i], depth + 1);
		find_storages(list, v->as.dict->attributes, depth + 1);
		break;
	case TI_OBJECT:
		FUZZ_CHECK(v->as.object != NULL, "an object without its ti_object");
		find_storages(list, v->as.object->args, depth + 1);
		find_storages(list, v->as.object->kwargs, depth + 1);
		find_storages(list, v->as.object->state, depth + 1);
		find_storages(list, v->as.object->list_items, depth + 1);
		find_storages(list, v->as.object->dict_items, depth + 1);
		break;
	default:
		break;
	}
}

/* ti_pickle_load_source() reading from memory: the machine asks for windows of the input. */
typedef struct memory_source {
	const uint8_t *data;
	size_t size;
} memory_source;

static ti_status read_memory(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	const memory_source *m = ctx;
	FUZZ_CHECK(offset <= m->size && n <= m->size - offset, "read of %zu bytes at %llu of %zu", n,
	           (unsigned long long)offset, m->size);
	(void)err;
	if (n)
		memcpy(buf, m->data + offset, n);
	return TI_OK;
}

/* One load; on success the value's repr goes to repr. */
static ti_status load_once(const uint8_t *data, size_t size, bool from_source, storage_list *storages,
                           char *repr, size_t repr_size, size_t *consumed, ti_error *err)
{
	ti_arena arena;
	ti_arena_init(&arena, PICKLE_ARENA_MAX);
	ti_error_clear(err);
	ti_value *out = NULL;
	*consumed = 0;
	ti_status s;
	if (from_source) {
		memory_source mem = {data, size};
		ti_pickle_source src = {size, read_memory, &mem, NULL};
		s = ti_pickle_load_source(&src, &arena, NULL, NULL, &out, consumed, err);
	} else {
		s = ti_pickle_load(data, size, &arena, NULL, NULL, &out, consumed, err);
	}
	if (s == TI_OK) {
		FUZZ_CHECK(out != NULL, "a pickle loaded to no value");
		FUZZ_CHECK(*consumed >= 1 && *consumed <= size, "consumed %zu of %zu bytes", *consumed, size);
		fuzz_walk_value(out);
		ti_value_repr(out, repr, repr_size, 0);
		if (storages)
			find_storages(storages, out, 0);
	} else {
		fuzz_check_status(s, err, NULL);
	}
	ti_arena_release(&arena);
	return s;
}

/* The machine alone, on bytes in memory and through a source: both must say the same. */
static void plain_pass(const uint8_t *data, size_t size, storage_list *storages)
{
	enum { REPR_MAX = 4096 };
	char *repr_a = calloc(2, REPR_MAX);
	if (!repr_a)
		abort();
	char *repr_b = repr_a + REPR_MAX;
	ti_error err_a, err_b;
	size_t consumed_a, consumed_b;
	ti_status a = load_once(data, size, false, storages, repr_a, REPR_MAX, &consumed_a, &err_a);
	ti_status b = load_once(data, size, true, NULL, repr_b, REPR_MAX, &consumed_b, &err_b);
	FUZZ_CHECK(a == b, "ti_pickle_load gave %d (%s), ti_pickle_load_source %d (%s)", (int)a, err_a.message,
	           (int)b, err_b.message);
	if (a == TI_OK) {
		FUZZ_CHECK(consumed_a == consumed_b, "consumed %zu from memory, %zu from a source", consumed_a,
		           consumed_b);
		FUZZ_CHECK(!strcmp(repr_a, repr_b), "values differ:\n  memory: %.300s\n  source: %.300s", repr_a,
		           repr_b);
	} else {
		FUZZ_CHECK(!strcmp(err_a.message, err_b.message) && err_a.offset == err_b.offset,
		           "errors differ: memory '%s' at %lld, source '%s' at %lld", err_a.message,
		           (long long)err_a.offset, err_b.message, (long long)err_b.offset);
	}
	free(repr_a);
}

/* ---- a stored zip, as torch.save would write it (APPNOTE.TXT 4.3.7, 4.3.12, 4.3.16) ---- */

static uint32_t crc_table[256];

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
	if (!crc_table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			crc_table[i] = c;
		}
	uint32_t c = 0xffffffffu;
	while (n--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static uint8_t *put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		*p++ = (uint8_t)v;
	return p;
}

typedef struct member {
	const char *name;
	const uint8_t *data;
	size_t size;
} member;

/* Writes members as a stored zip into a malloc'd buffer; NULL if the input is too large for zip32. */
static uint8_t *make_zip(const member *m, size_t count, size_t *out_size)
{
	size_t total = 22;
	for (size_t i = 0; i < count; i++) {
		if (m[i].size > 0xfffffffeu)
			return NULL;
		total += 30 + 46 + 2 * strlen(m[i].name) + m[i].size;
	}
	uint8_t *zip = malloc(total);
	if (!zip)
		abort();
	uint8_t *p = zip;
	uint32_t offsets[3 + STORAGES_MAX], crcs[3 + STORAGES_MAX];
	for (size_t i = 0; i < count; i++) {
		size_t nlen = strlen(m[i].name);
		offsets[i] = (uint32_t)(p - zip);
		crcs[i] = crc32_of(m[i].data, m[i].size);
		p = put(p, 0x04034b50, 4); /* local header */
		p = put(p, 20, 2);         /* version needed */
		p = put(p, 0, 2);          /* flags */
		p = put(p, 0, 2);          /* stored */
		p = put(p, 0, 4);          /* time, date */
		p = put(p, crcs[i], 4);
		p = put(p, m[i].size, 4);
		p = put(p, m[i].size, 4);
		p = put(p, nlen, 2);
		p = put(p, 0, 2);
		memcpy(p, m[i].name, nlen);
		p += nlen;
		if (m[i].size)
			memcpy(p, m[i].data, m[i].size);
		p += m[i].size;
	}
	uint8_t *cd = p;
	for (size_t i = 0; i < count; i++) {
		size_t nlen = strlen(m[i].name);
		p = put(p, 0x02014b50, 4); /* central header */
		p = put(p, 20, 2);         /* version made by */
		p = put(p, 20, 2);         /* version needed */
		p = put(p, 0, 2);
		p = put(p, 0, 2);
		p = put(p, 0, 4);
		p = put(p, crcs[i], 4);
		p = put(p, m[i].size, 4);
		p = put(p, m[i].size, 4);
		p = put(p, nlen, 2);
		p = put(p, 0, 2); /* extra */
		p = put(p, 0, 2); /* comment */
		p = put(p, 0, 2); /* disk */
		p = put(p, 0, 2); /* internal attributes */
		p = put(p, 0, 4); /* external attributes */
		p = put(p, offsets[i], 4);
		memcpy(p, m[i].name, nlen);
		p += nlen;
	}
	size_t cd_size = (size_t)(p - cd);
	p = put(p, 0x06054b50, 4); /* end of central directory */
	p = put(p, 0, 2);
	p = put(p, 0, 2);
	p = put(p, count, 2);
	p = put(p, count, 2);
	p = put(p, cd_size, 4);
	p = put(p, (uint64_t)(cd - zip), 4);
	p = put(p, 0, 2);
	*out_size = (size_t)(p - zip);
	return zip;
}

static void torch_pass(const uint8_t *data, size_t size, const storage_list *storages)
{
	static const uint8_t version[] = "3\n", byteorder[] = "little";
	member members[3 + STORAGES_MAX] = {
		{"archive/data.pkl", data, size},
		{"archive/byteorder", byteorder, sizeof(byteorder) - 1},
		{"archive/version", version, sizeof(version) - 1},
	};
	size_t count = 3;
	uint8_t *zeros = calloc(1, storages->bytes ? storages->bytes : 1);
	if (!zeros)
		abort();
	for (size_t i = 0; i < storages->count; i++)
		members[count++] = (member){storages->items[i].name, zeros, storages->items[i].size};
	size_t zip_size;
	uint8_t *zip = make_zip(members, count, &zip_size);
	free(zeros);
	if (!zip)
		return;
	char path[128];
	fuzz_path(path, sizeof(path), "pickle.pt");
	fuzz_write_file(path, zip, zip_size);
	free(zip);

	ti_ckpt *ckpt = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_ckpt_open(path, NULL, &ckpt, &err);
	fuzz_check_status(s, &err, ckpt);
	if (s == TI_OK)
		fuzz_walk_ckpt(ckpt);
	ti_ckpt_close(ckpt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	storage_list *storages = calloc(1, sizeof(*storages));
	if (!storages)
		abort();
	plain_pass(data, size, storages);
	torch_pass(data, size, storages);
	free(storages);
	return 0;
}
