/*
 * test_torch_writer.c - the streaming torch.save writer, read back three ways.
 *
 * Each file is written to a temporary file, then checked by the project's
 * reader (ti_ckpt_open: zip directory, pickle, every storage against its
 * record), by the small zip parser below, which knows nothing of the
 * writer's code (it recomputes each CRC bit by bit, compares local with
 * central headers, and checks the 64-byte alignment and the 'FB' padding),
 * and by libzip with ZIP_CHECKCONS. The pickle is compared byte for byte
 * with what torch 1.13 writes.
 *
 * Conformance with real PyTorch: when the environment variable
 * TINSPECT_WRITER_OUT names a directory, every test that writes a scenario
 * leaves it there as <stem>.pt with a <stem>.json manifest (storages,
 * tensors, metadata), and tests/conformance/writer_conformance.py loads each
 * with torch.load, with and without weights_only, and compares. Storage
 * bytes follow pattern(), which the script repeats.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "tinspect/torch_writer.h"
#include "unit.h"

#include <criterion/parameterized.h>

#define MAX_PATHS 4
static char paths[MAX_PATHS][512];
static bool kept[MAX_PATHS];
static size_t path_count;
static ti_error err;

static void teardown(void)
{
	/* Files meant for the conformance script stay. */
	for (size_t i = 0; i < path_count; i++)
		if (!kept[i])
			unlink(paths[i]);
	path_count = 0;
}

TestSuite(torch_writer, .fini = teardown, .timeout = 60);

/* Byte j of storage i: values below 0x40 keep every float finite; bools stay 0 or 1. */
static uint8_t pattern(size_t storage, uint64_t byte, ti_dtype dtype)
{
	if (dtype == TI_DT_BOOL)
		return (uint8_t)((storage + byte) & 1);
	return (uint8_t)((storage * 13 + byte * 7) % 61);
}

typedef struct scenario {
	const char *stem;
	const ti_tw_storage *storages;
	size_t storage_count;
	const ti_tw_tensor *tensors;
	size_t tensor_count;
	ti_tw_options options;
	size_t chunk; /* bytes per ti_tw_storage_put; 0: a whole storage at a time */
} scenario;

static uint64_t storage_bytes(const ti_tw_storage *s) { return s->numel * ti_dtype_size(s->dtype); }

/* The strides a tensor has: its own, or the contiguous ones torch computes (size 0 counts as 1). */
static void strides_of(const ti_tw_tensor *t, int64_t *stride)
{
	int64_t c = 1;
	for (size_t d = t->ndim; d-- > 0;) {
		stride[d] = t->stride ? t->stride[d] : c;
		c *= t->shape[d] ? t->shape[d] : 1;
	}
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* <stem>.json for the conformance script: what torch.load must see. */
static void write_manifest(const char *dir, const scenario *sc)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.json", dir, sc->stem);
	FILE *f = fopen(path, "w");
	cr_assert(f != NULL, "cannot write %s", path);
	fprintf(f, "{\"file\": \"%s.pt\", \"root\": ", sc->stem);
	json_string(f, sc->options.root ? sc->options.root : "archive");
	fprintf(f, ", \"big_endian\": %s, \"forced_zip64\": %s,\n \"storages\": [",
	        sc->options.big_endian ? "true" : "false", sc->options.zip64_threshold ? "true" : "false");
	for (size_t i = 0; i < sc->storage_count; i++)
		fprintf(f, "%s{\"dtype\": \"%s\", \"numel\": %" PRIu64 "}", i ? ", " : "",
		        ti_dtype_name(sc->storages[i].dtype), sc->storages[i].numel);
	fprintf(f, "],\n \"tensors\": [");
	for (size_t i = 0; i < sc->tensor_count; i++) {
		const ti_tw_tensor *t = &sc->tensors[i];
		int64_t stride[TI_TW_MAX_DIMS];
		strides_of(t, stride);
		fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
		json_string(f, t->name);
		fprintf(f, ", \"storage\": %zu, \"offset\": %" PRIu64 ", \"shape\": [", t->storage, t->offset);
		for (size_t d = 0; d < t->ndim; d++)
			fprintf(f, "%s%" PRId64, d ? ", " : "", t->shape[d]);
		fprintf(f, "], \"stride\": [");
		for (size_t d = 0; d < t->ndim; d++)
			fprintf(f, "%s%" PRId64, d ? ", " : "", stride[d]);
		fprintf(f, "], \"requires_grad\": %s, \"is_parameter\": %s}", t->requires_grad ? "true" : "false",
		        t->is_parameter ? "true" : "false");
	}
	fprintf(f, "],\n \"metadata\": ");
	if (sc->options.module_count) {
		fprintf(f, "[");
		for (size_t i = 0; i < sc->options.module_count; i++) {
			fprintf(f, "%s[", i ? ", " : "");
			json_string(f, sc->options.modules[i].prefix);
			fprintf(f, ", %" PRId64 "]", sc->options.modules[i].version);
		}
		fprintf(f, "]");
	} else {
		fprintf(f, "null");
	}
	fprintf(f, "}\n");
	cr_assert(fclose(f) == 0, "cannot write %s", path);
}

/* An empty file to write into: <stem>.pt in TINSPECT_WRITER_OUT if keep, else a temporary one. */
static const char *new_path(const char *stem, bool keep, int *fd)
{
	cr_assert(path_count < MAX_PATHS, "too many files in one test");
	const char *dir = getenv("TINSPECT_WRITER_OUT");
	kept[path_count] = keep && dir;
	char *path = paths[path_count++];
	if (keep && dir) {
		snprintf(path, 512, "%s/%s.pt", dir, stem);
		*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	} else {
		snprintf(path, 512, "%s/tinspect_tw_%s_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", stem);
		*fd = mkstemp(path);
	}
	cr_assert(*fd >= 0, "cannot create %s", path);
	return path;
}

/* Streams each storage's pattern in chunks of sc->chunk bytes. */
static ti_status put_storages(ti_tw *w, const scenario *sc)
{
	static uint8_t buf[1 << 16];
	for (size_t i = 0; i < sc->storage_count; i++) {
		uint64_t total = storage_bytes(&sc->storages[i]);
		if (total) /* empty ones are passed over by themselves */
			EXPECT_INT(ti_tw_current_storage(w), i);
		size_t chunk = sc->chunk && sc->chunk < sizeof(buf) ? sc->chunk : sizeof(buf);
		for (uint64_t done = 0; done < total;) {
			size_t n = total - done < chunk ? (size_t)(total - done) : chunk;
			for (size_t k = 0; k < n; k++)
				buf[k] = pattern(i, done + k, sc->storages[i].dtype);
			if (ti_tw_storage_put(w, buf, n, &err))
				return err.code;
			done += n;
		}
	}
	EXPECT_INT(ti_tw_current_storage(w), sc->storage_count);
	return TI_OK;
}

/* Writes a scenario and requires success; returns the file's path. */
static const char *write_scenario(const scenario *sc)
{
	int fd;
	const char *path = new_path(sc->stem, true, &fd);
	ti_tw *w = NULL;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_tw_begin(fd, sc->storages, sc->storage_count, sc->tensors, sc->tensor_count, &sc->options,
	                          &w, &err),
	              TI_OK, err);
	ASSERT_STATUS(put_storages(w, sc), TI_OK, err);
	ASSERT_STATUS(ti_tw_end(w, &err), TI_OK, err);
	struct stat st;
	cr_assert(fstat(fd, &st) == 0);
	EXPECT_INT(st.st_size, ti_tw_bytes_written(w));
	ti_tw_free(w);
	cr_assert(close(fd) == 0);
	const char *dir = getenv("TINSPECT_WRITER_OUT");
	if (dir)
		write_manifest(dir, sc);
	return path;
}

/* ---- an independent zip parser ---- */

typedef struct zip_rec {
	char name[256];
	uint64_t size, compressed_size, local_offset, payload;
	uint32_t crc, local_crc;
	unsigned flags, method;
	bool central_zip64, local_zip64;
} zip_rec;

typedef struct zip_view {
	uint8_t *file;
	size_t size;
	zip_rec *recs;
	size_t count;
	bool saturated_end; /* the classic end record sent readers to the ZIP64 one */
} zip_view;

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static uint32_t crc_bitwise(const uint8_t *p, uint64_t n)
{
	uint32_t c = 0xffffffffu;
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}

static void zip_view_free(zip_view *z)
{
	munmap(z->file, z->size ? z->size : 1);
	free(z->recs);
}

/* The extra block with this id inside [x, x + len), or NULL; *block_len its length. */
static const uint8_t *find_extra(const uint8_t *x, size_t len, unsigned id, size_t *block_len)
{
	for (size_t at = 0; at + 4 <= len;) {
		size_t n = rd(x + at + 2, 2);
		cr_assert(at + 4 + n <= len, "an extra block runs past its field");
		if (rd(x + at, 2) == id) {
			*block_len = n;
			return x + at + 4;
		}
		at += 4 + n;
	}
	return NULL;
}

/* Maps a whole file and walks its end records, central directory and local headers. */
static void zip_parse(const char *path, zip_view *z)
{
	memset(z, 0, sizeof(*z));
	int fd = open(path, O_RDONLY);
	struct stat st;
	cr_assert(fd >= 0 && fstat(fd, &st) == 0, "cannot open %s", path);
	z->size = (size_t)st.st_size;
	z->file = mmap(NULL, z->size ? z->size : 1, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	cr_assert(z->file != MAP_FAILED, "cannot map %s", path);
	const uint8_t *b = z->file;
	/* No archive comment: the end record is the last 22 bytes, the locator and ZIP64 end just before. */
	cr_assert(z->size >= 22 + 20 + 56, "file too short: %zu bytes", z->size);
	const uint8_t *eocd = b + z->size - 22, *loc = eocd - 20;
	cr_assert(!memcmp(eocd, "PK\5\6", 4), "no end of central directory at the end");
	cr_assert(!memcmp(loc, "PK\6\7", 4), "no ZIP64 end locator before the end record");
	uint64_t e64 = rd(loc + 8, 8);
	cr_assert(e64 + 56 == (uint64_t)(loc - b) && !memcmp(b + e64, "PK\6\6", 4), "the locator misses the ZIP64 end record");
	uint64_t entries = rd(b + e64 + 32, 8), cd_size = rd(b + e64 + 40, 8), cd_off = rd(b + e64 + 48, 8);
	EXPECT_INT(rd(b + e64 + 24, 8), entries);
	EXPECT_INT(cd_off + cd_size, e64);
	/* The classic fields agree with the ZIP64 ones or are saturated. */
	uint64_t n16 = rd(eocd + 10, 2), size32 = rd(eocd + 12, 4), off32 = rd(eocd + 16, 4);
	cr_expect(n16 == entries || n16 == 0xffff, "end record entries %" PRIu64 " vs %" PRIu64, n16, entries);
	cr_expect(size32 == cd_size || size32 == 0xffffffffu, "end record directory size disagrees");
	cr_expect(off32 == cd_off || off32 == 0xffffffffu, "end record directory offset disagrees");
	z->saturated_end = n16 == 0xffff || size32 == 0xffffffffu || off32 == 0xffffffffu;
	z->recs = calloc(entries ? entries : 1, sizeof(*z->recs));
	cr_assert(z->recs);
	uint64_t at = cd_off;
	for (uint64_t i = 0; i < entries; i++) {
		const uint8_t *h = b + at;
		cr_assert(at + 46 <= cd_off + cd_size && !memcmp(h, "PK\1\2", 4), "central entry %" PRIu64 " damaged", i);
		zip_rec *r = &z->recs[z->count++];
		size_t nlen = rd(h + 28, 2), xlen = rd(h + 30, 2), clen = rd(h + 32, 2);
		cr_assert(nlen < sizeof(r->name));
		memcpy(r->name, h + 46, nlen);
		r->flags = (unsigned)rd(h + 8, 2);
		r->method = (unsigned)rd(h + 10, 2);
		r->crc = (uint32_t)rd(h + 16, 4);
		r->compressed_size = rd(h + 20, 4);
		r->size = rd(h + 24, 4);
		r->local_offset = rd(h + 42, 4);
		size_t blen = 0;
		const uint8_t *z64 = find_extra(h + 46 + nlen, xlen, 1, &blen), *q = z64;
		r->central_zip64 = z64 != NULL;
		/* APPNOTE 4.5.3: the saturated fields, in this order. */
		uint64_t *fields[] = {&r->size, &r->compressed_size, &r->local_offset};
		for (size_t k = 0; k < 3; k++)
			if (*fields[k] == 0xffffffffu) {
				cr_assert(q && q + 8 <= z64 + blen, "%s: a saturated field without its ZIP64 value", r->name);
				*fields[k] = rd(q, 8);
				q += 8;
			}
		cr_expect(!z64 || q == z64 + blen, "%s: the ZIP64 extra holds fields that did not saturate", r->name);
		EXPECT_INT(rd(h + 4, 2) >= rd(h + 6, 2), 1);
		EXPECT_INT(clen, 0);
		at += 46 + nlen + xlen + clen;

		/* The local header: same name, flags, method, CRC and sizes. */
		const uint8_t *l = b + r->local_offset;
		cr_assert(r->local_offset + 30 <= z->size && !memcmp(l, "PK\3\4", 4), "%s: no local header", r->name);
		size_t lnlen = rd(l + 26, 2), lxlen = rd(l + 28, 2);
		cr_assert(lnlen == nlen && !memcmp(l + 30, r->name, nlen), "%s: the local header names another record", r->name);
		cr_expect(rd(l + 4, 2) <= rd(h + 6, 2), "%s: local version needed above the central one", r->name);
		r->local_crc = (uint32_t)rd(l + 14, 4);
		uint64_t lcsize = rd(l + 18, 4), lsize = rd(l + 22, 4);
		const uint8_t *lz64 = find_extra(l + 30 + lnlen, lxlen, 1, &blen);
		r->local_zip64 = lz64 != NULL;
		if (lsize == 0xffffffffu || lcsize == 0xffffffffu) {
			cr_assert(lz64 && blen == 16, "%s: saturated local sizes without both ZIP64 sizes", r->name);
			lsize = rd(lz64, 8), lcsize = rd(lz64 + 8, 8);
		}
		EXPECT_INT(lsize, r->size);
		EXPECT_INT(lcsize, r->compressed_size);
		EXPECT_INT(rd(l + 6, 2), r->flags);
		EXPECT_INT(rd(l + 8, 2), r->method);
		/* torch's padding: an 'FB' block of 'Z's. */
		const uint8_t *fb = find_extra(l + 30 + lnlen, lxlen, 'F' | 'B' << 8, &blen);
		cr_assert(fb != NULL, "%s: no 'FB' padding extra", r->name);
		for (size_t k = 0; k < blen; k++)
			cr_assert(fb[k] == 'Z', "%s: padding byte %zu is 0x%02x", r->name, k, fb[k]);
		r->payload = r->local_offset + 30 + lnlen + lxlen;
		cr_assert(r->payload + r->compressed_size <= cd_off, "%s: payload runs into the directory", r->name);
	}
	EXPECT_INT(at, cd_off + cd_size);
}

#define BITWISE_CRC_MAX ((uint64_t)256 << 20)

/* Everything torch's layout promises, and the storage bytes as streamed. */
static void check_zip(const char *path, const scenario *sc)
{
	zip_view z;
	zip_parse(path, &z);
	const char *root = sc->options.root ? sc->options.root : "archive";
	char want[300];
	ASSERT_INT(z.count, sc->storage_count + 3);
	for (size_t i = 0; i < z.count; i++) {
		const zip_rec *r = &z.recs[i];
		if (i == 0)
			snprintf(want, sizeof(want), "%s/data.pkl", root);
		else if (i == 1)
			snprintf(want, sizeof(want), "%s/byteorder", root);
		else if (i == z.count - 1)
			snprintf(want, sizeof(want), "%s/version", root);
		else
			snprintf(want, sizeof(want), "%s/data/%zu", root, i - 2);
		EXPECT_STR(r->name, want);
		EXPECT_INT(r->method, 0);
		EXPECT_INT(r->flags, 0x0800);
		EXPECT_INT(r->compressed_size, r->size);
		cr_expect(r->payload % 64 == 0, "%s: payload at %" PRIu64 ", not a multiple of 64", r->name, r->payload);
		cr_expect(r->local_crc == r->crc, "%s: local CRC %08x, central %08x", r->name, r->local_crc, r->crc);
		/* Bit by bit is slow: past this size libzip's check (check_libzip) has to do. */
		if (r->size <= BITWISE_CRC_MAX) {
			uint32_t crc = crc_bitwise(z.file + r->payload, r->size);
			cr_expect(r->crc == crc, "%s: central CRC %08x, the bytes' %08x", r->name, r->crc, crc);
		}
		if (i >= 2 && i < z.count - 1) {
			const ti_tw_storage *s = &sc->storages[i - 2];
			ASSERT_INT(r->size, storage_bytes(s));
			for (uint64_t k = 0; k < r->size; k++)
				if (z.file[r->payload + k] != pattern(i - 2, k, s->dtype)) {
					cr_expect_fail("%s: byte %" PRIu64 " is %u, want %u", r->name, k, z.file[r->payload + k],
					               pattern(i - 2, k, s->dtype));
					break;
				}
		}
	}
	const zip_rec *v = &z.recs[z.count - 1], *bo = &z.recs[1];
	cr_expect(v->size == 2 && !memcmp(z.file + v->payload, "3\n", 2), "version record is not \"3\\n\"");
	const char *order = sc->options.big_endian ? "big" : "little";
	cr_expect(bo->size == strlen(order) && !memcmp(z.file + bo->payload, order, bo->size),
	          "byteorder record is not \"%s\"", order);
	zip_view_free(&z);
}

/* libzip, with its consistency checks, reads every record through and verifies its CRC. */
static void check_libzip(const char *path, size_t want_records)
{
	int code = 0;
	zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code);
	cr_assert(za != NULL, "libzip refuses %s: error %d", path, code);
	EXPECT_INT(zip_get_num_entries(za, 0), want_records);
	for (zip_int64_t i = 0; i < zip_get_num_entries(za, 0); i++) {
		zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
		cr_assert(f != NULL, "libzip cannot open record %" PRId64 ": %s", (int64_t)i, zip_strerror(za));
		char buf[4096];
		zip_int64_t n;
		while ((n = zip_fread(f, buf, sizeof(buf))) > 0)
			;
		cr_expect(n == 0, "libzip read of record %" PRId64 " failed: %s", (int64_t)i, zip_file_strerror(f));
		cr_expect(zip_fclose(f) == 0, "libzip found record %" PRId64 " damaged (CRC)", (int64_t)i);
	}
	zip_discard(za);
}

/* ---- the project's reader ---- */

static const ti_tensor *reader_tensor(ti_ckpt *c, const char *name)
{
	for (size_t i = 0; i < ti_ckpt_entry_count(c); i++) {
		const ti_entry *e = ti_ckpt_entry(c, i);
		if (!strcmp(e->name, name)) {
			ASSERT_KIND(e->value, TI_TENSOR);
			return e->value->as.tensor;
		}
	}
	cr_assert_fail("the reader has no tensor '%s'", name);
	return NULL;
}

/* What torch.load(map_location='meta') would see, through ti_ckpt_open. */
static void check_reader(const char *path, const scenario *sc)
{
	ti_ckpt *c = NULL;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_ckpt_open(path, NULL, &c, &err), TI_OK, err);
	const ti_ckpt_info *info = ti_ckpt_get_info(c);
	EXPECT_STR(info->format, "torch-zip");
	EXPECT_STR(info->root, sc->options.root ? sc->options.root : "archive");
	EXPECT_INT(info->version, 3);
	EXPECT_INT(info->has_byteorder, 1);
	EXPECT_STR(info->byteorder, sc->options.big_endian ? "big" : "little");
	EXPECT_INT(info->pickle_protocol, 2);
	const ti_value *root = ti_ckpt_root(c);
	ASSERT_KIND(root, TI_DICT);
	cr_expect(root->flags & TI_F_ORDERED, "the root is not an OrderedDict");
	EXPECT_INT(root->as.dict->count, sc->tensor_count);
	EXPECT_INT(ti_ckpt_storage_count(c), sc->storage_count);
	const ti_storage **seen = calloc(sc->storage_count ? sc->storage_count : 1, sizeof(*seen));
	size_t *views = calloc(sc->storage_count ? sc->storage_count : 1, sizeof(*views));
	cr_assert(seen && views);
	for (size_t i = 0; i < sc->tensor_count; i++)
		views[sc->tensors[i].storage]++;
	for (size_t i = 0; i < sc->tensor_count; i++) {
		const ti_tw_tensor *want = &sc->tensors[i];
		const ti_storage *ws = NULL;
		const ti_tensor *t = reader_tensor(c, want->name);
		char key[24];
		snprintf(key, sizeof(key), "%zu", want->storage);
		EXPECT_STR(ti_dtype_name(t->dtype), ti_dtype_name(sc->storages[want->storage].dtype));
		ASSERT_INT(t->ndim, want->ndim);
		int64_t stride[TI_TW_MAX_DIMS];
		strides_of(want, stride);
		for (size_t d = 0; d < want->ndim; d++) {
			EXPECT_INT(t->shape[d], want->shape[d]);
			EXPECT_INT(t->stride[d], stride[d]);
		}
		EXPECT_INT(t->storage_offset, want->offset);
		EXPECT_INT(t->requires_grad, want->requires_grad);
		EXPECT_INT(t->is_parameter, want->is_parameter);
		ASSERT_INT(t->storage != NULL, 1);
		ws = t->storage;
		EXPECT_STR(ws->key, key);
		/* an UntypedStorage (a dtype of PyTorch 2.x's _new_dtypes) declares its size in bytes */
		EXPECT_INT(ws->untyped, ti_tw_needs_v3(sc->storages[want->storage].dtype));
		EXPECT_INT(ws->numel, ws->untyped ? (int64_t)storage_bytes(&sc->storages[want->storage])
		                                  : (int64_t)sc->storages[want->storage].numel);
		EXPECT_INT(ws->nbytes, storage_bytes(&sc->storages[want->storage]));
		EXPECT_INT(ws->tensor_count, views[want->storage]);
		/* Views of one storage share one storage again. */
		if (!seen[want->storage])
			seen[want->storage] = ws;
		cr_expect(seen[want->storage] == ws, "'%s' does not share storage %zu", want->name, want->storage);
	}
	for (size_t i = 0; i < ti_ckpt_record_count(c); i++) {
		uint64_t offset = 1;
		EXPECT_STATUS(ti_ckpt_record_payload_offset(c, i, &offset, &err), TI_OK, err);
		cr_expect(offset % 64 == 0, "%s: payload at %" PRIu64, ti_ckpt_record(c, i)->name, offset);
		EXPECT_INT(ti_ckpt_record(c, i)->method, 0);
	}
	free(seen);
	free(views);
	ti_ckpt_close(c);
}

/*
 * ZIP64 fields exactly where a size or offset reaches the threshold: in the
 * central header for either, in the local one for the sizes, and the
 * directory's own offset deferring to the ZIP64 end record.
 */
static void check_zip64_fields(const char *path, uint64_t threshold)
{
	zip_view z;
	zip_parse(path, &z);
	cr_expect(z.saturated_end, "the directory lies past the threshold, but the end record did not defer to ZIP64");
	for (size_t i = 0; i < z.count; i++) {
		const zip_rec *r = &z.recs[i];
		bool big = r->size >= threshold, far = r->local_offset >= threshold;
		cr_expect(r->central_zip64 == (big || far), "%s: central ZIP64 extra", r->name);
		cr_expect(r->local_zip64 == big, "%s: local ZIP64 extra", r->name);
	}
	zip_view_free(&z);
}

static void check_all(const char *path, const scenario *sc)
{
	check_zip(path, sc);
	check_reader(path, sc);
	check_libzip(path, sc->storage_count + 3);
}

/* ---- scenarios ---- */

/*
 * The state dict of tests/.../gold below, as torch 1.13 builds it:
 *   s = torch.zeros(4, 4); sd = OrderedDict()
 *   sd['p'] = nn.Parameter(torch.ones(2, 2)); sd['t'] = torch.ones(3, requires_grad=True)
 *   sd['v'] = s[1:, ::2]; sd['w'] = s
 *   sd['big'] = torch.zeros(1).as_strided((1,), (2**40,), 0); sd['sc'] = torch.tensor(3.)
 *   sd['h'] = torch.zeros(1, 2, 1, 2, 1, dtype=torch.int64)
 *   sd['e'] = torch.zeros(0, 3, dtype=torch.float16); sd['b'] = torch.zeros(2, dtype=torch.bool)
 *   sd._metadata = OrderedDict([('', {'version': 1}), ('bn', {'version': 2})])
 */
static const int64_t shape_2x2[] = {2, 2}, shape_3[] = {3}, shape_3x2[] = {3, 2}, stride_4x2[] = {4, 2},
                     shape_4x4[] = {4, 4}, shape_1[] = {1}, stride_huge[] = {(int64_t)1 << 40},
                     shape_5d[] = {1, 2, 1, 2, 1}, shape_0x3[] = {0, 3}, shape_2[] = {2}, shape_5[] = {5};

static const ti_tw_storage mixed_storages[] = {
	{TI_DT_FLOAT32, 4}, {TI_DT_FLOAT32, 3}, {TI_DT_FLOAT32, 16}, {TI_DT_FLOAT32, 1},
	{TI_DT_FLOAT32, 1}, {TI_DT_INT64, 4},   {TI_DT_FLOAT16, 0},  {TI_DT_BOOL, 2},
};
static const ti_tw_tensor mixed_tensors[] = {
	{.name = "p", .storage = 0, .ndim = 2, .shape = shape_2x2, .requires_grad = true, .is_parameter = true},
	{.name = "t", .storage = 1, .ndim = 1, .shape = shape_3, .requires_grad = true},
	{.name = "v", .storage = 2, .offset = 4, .ndim = 2, .shape = shape_3x2, .stride = stride_4x2},
	{.name = "w", .storage = 2, .ndim = 2, .shape = shape_4x4},
	{.name = "big", .storage = 3, .ndim = 1, .shape = shape_1, .stride = stride_huge},
	{.name = "sc", .storage = 4, .ndim = 0},
	{.name = "h", .storage = 5, .ndim = 5, .shape = shape_5d},
	{.name = "e", .storage = 6, .ndim = 2, .shape = shape_0x3},
	{.name = "b", .storage = 7, .ndim = 1, .shape = shape_2},
};
static const ti_tw_module_version mixed_modules[] = {{"", 1}, {"bn", 2}};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static scenario mixed(const char *stem)
{
	scenario sc = {stem, mixed_storages, COUNT(mixed_storages), mixed_tensors, COUNT(mixed_tensors),
	               {.modules = mixed_modules, .module_count = COUNT(mixed_modules)}, 0};
	return sc;
}

/* data.pkl of that state dict, from torch.save under torch 1.13.1 (Debian python3-torch). */
static const uint8_t torch_pickle[] = {
	0x80, 0x02, 0x63, 0x63, 0x6f, 0x6c, 0x6c, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x0a, 0x4f,
	0x72, 0x64, 0x65, 0x72, 0x65, 0x64, 0x44, 0x69, 0x63, 0x74, 0x0a, 0x71, 0x00, 0x29, 0x52, 0x71,
	0x01, 0x28, 0x58, 0x01, 0x00, 0x00, 0x00, 0x70, 0x71, 0x02, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68,
	0x2e, 0x5f, 0x75, 0x74, 0x69, 0x6c, 0x73, 0x0a, 0x5f, 0x72, 0x65, 0x62, 0x75, 0x69, 0x6c, 0x64,
	0x5f, 0x70, 0x61, 0x72, 0x61, 0x6d, 0x65, 0x74, 0x65, 0x72, 0x0a, 0x71, 0x03, 0x63, 0x74, 0x6f,
	0x72, 0x63, 0x68, 0x2e, 0x5f, 0x75, 0x74, 0x69, 0x6c, 0x73, 0x0a, 0x5f, 0x72, 0x65, 0x62, 0x75,
	0x69, 0x6c, 0x64, 0x5f, 0x74, 0x65, 0x6e, 0x73, 0x6f, 0x72, 0x5f, 0x76, 0x32, 0x0a, 0x71, 0x04,
	0x28, 0x28, 0x58, 0x07, 0x00, 0x00, 0x00, 0x73, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x71, 0x05,
	0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x46, 0x6c, 0x6f, 0x61, 0x74, 0x53, 0x74, 0x6f, 0x72,
	0x61, 0x67, 0x65, 0x0a, 0x71, 0x06, 0x58, 0x01, 0x00, 0x00, 0x00, 0x30, 0x71, 0x07, 0x58, 0x03,
	0x00, 0x00, 0x00, 0x63, 0x70, 0x75, 0x71, 0x08, 0x4b, 0x04, 0x74, 0x71, 0x09, 0x51, 0x4b, 0x00,
	0x4b, 0x02, 0x4b, 0x02, 0x86, 0x71, 0x0a, 0x4b, 0x02, 0x4b, 0x01, 0x86, 0x71, 0x0b, 0x89, 0x68,
	0x00, 0x29, 0x52, 0x71, 0x0c, 0x74, 0x71, 0x0d, 0x52, 0x71, 0x0e, 0x88, 0x68, 0x00, 0x29, 0x52,
	0x71, 0x0f, 0x87, 0x71, 0x10, 0x52, 0x71, 0x11, 0x58, 0x01, 0x00, 0x00, 0x00, 0x74, 0x71, 0x12,
	0x68, 0x04, 0x28, 0x28, 0x68, 0x05, 0x68, 0x06, 0x58, 0x01, 0x00, 0x00, 0x00, 0x31, 0x71, 0x13,
	0x68, 0x08, 0x4b, 0x03, 0x74, 0x71, 0x14, 0x51, 0x4b, 0x00, 0x4b, 0x03, 0x85, 0x71, 0x15, 0x4b,
	0x01, 0x85, 0x71, 0x16, 0x88, 0x68, 0x00, 0x29, 0x52, 0x71, 0x17, 0x74, 0x71, 0x18, 0x52, 0x71,
	0x19, 0x58, 0x01, 0x00, 0x00, 0x00, 0x76, 0x71, 0x1a, 0x68, 0x04, 0x28, 0x28, 0x68, 0x05, 0x68,
	0x06, 0x58, 0x01, 0x00, 0x00, 0x00, 0x32, 0x71, 0x1b, 0x68, 0x08, 0x4b, 0x10, 0x74, 0x71, 0x1c,
	0x51, 0x4b, 0x04, 0x4b, 0x03, 0x4b, 0x02, 0x86, 0x71, 0x1d, 0x4b, 0x04, 0x4b, 0x02, 0x86, 0x71,
	0x1e, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x1f, 0x74, 0x71, 0x20, 0x52, 0x71, 0x21, 0x58, 0x01,
	0x00, 0x00, 0x00, 0x77, 0x71, 0x22, 0x68, 0x04, 0x28, 0x28, 0x68, 0x05, 0x68, 0x06, 0x68, 0x1b,
	0x68, 0x08, 0x4b, 0x10, 0x74, 0x71, 0x23, 0x51, 0x4b, 0x00, 0x4b, 0x04, 0x4b, 0x04, 0x86, 0x71,
	0x24, 0x4b, 0x04, 0x4b, 0x01, 0x86, 0x71, 0x25, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x26, 0x74,
	0x71, 0x27, 0x52, 0x71, 0x28, 0x58, 0x03, 0x00, 0x00, 0x00, 0x62, 0x69, 0x67, 0x71, 0x29, 0x68,
	0x04, 0x28, 0x28, 0x68, 0x05, 0x68, 0x06, 0x58, 0x01, 0x00, 0x00, 0x00, 0x33, 0x71, 0x2a, 0x68,
	0x08, 0x4b, 0x01, 0x74, 0x71, 0x2b, 0x51, 0x4b, 0x00, 0x4b, 0x01, 0x85, 0x71, 0x2c, 0x8a, 0x06,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x85, 0x71, 0x2d, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x2e,
	0x74, 0x71, 0x2f, 0x52, 0x71, 0x30, 0x58, 0x02, 0x00, 0x00, 0x00, 0x73, 0x63, 0x71, 0x31, 0x68,
	0x04, 0x28, 0x28, 0x68, 0x05, 0x68, 0x06, 0x58, 0x01, 0x00, 0x00, 0x00, 0x34, 0x71, 0x32, 0x68,
	0x08, 0x4b, 0x01, 0x74, 0x71, 0x33, 0x51, 0x4b, 0x00, 0x29, 0x29, 0x89, 0x68, 0x00, 0x29, 0x52,
	0x71, 0x34, 0x74, 0x71, 0x35, 0x52, 0x71, 0x36, 0x58, 0x01, 0x00, 0x00, 0x00, 0x68, 0x71, 0x37,
	0x68, 0x04, 0x28, 0x28, 0x68, 0x05, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x4c, 0x6f, 0x6e,
	0x67, 0x53, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x0a, 0x71, 0x38, 0x58, 0x01, 0x00, 0x00, 0x00,
	0x35, 0x71, 0x39, 0x68, 0x08, 0x4b, 0x04, 0x74, 0x71, 0x3a, 0x51, 0x4b, 0x00, 0x28, 0x4b, 0x01,
	0x4b, 0x02, 0x4b, 0x01, 0x4b, 0x02, 0x4b, 0x01, 0x74, 0x71, 0x3b, 0x28, 0x4b, 0x04, 0x4b, 0x02,
	0x4b, 0x02, 0x4b, 0x01, 0x4b, 0x01, 0x74, 0x71, 0x3c, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x3d,
	0x74, 0x71, 0x3e, 0x52, 0x71, 0x3f, 0x58, 0x01, 0x00, 0x00, 0x00, 0x65, 0x71, 0x40, 0x68, 0x04,
	0x28, 0x28, 0x68, 0x05, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x48, 0x61, 0x6c, 0x66, 0x53,
	0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x0a, 0x71, 0x41, 0x58, 0x01, 0x00, 0x00, 0x00, 0x36, 0x71,
	0x42, 0x68, 0x08, 0x4b, 0x00, 0x74, 0x71, 0x43, 0x51, 0x4b, 0x00, 0x4b, 0x00, 0x4b, 0x03, 0x86,
	0x71, 0x44, 0x4b, 0x03, 0x4b, 0x01, 0x86, 0x71, 0x45, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x46,
	0x74, 0x71, 0x47, 0x52, 0x71, 0x48, 0x58, 0x01, 0x00, 0x00, 0x00, 0x62, 0x71, 0x49, 0x68, 0x04,
	0x28, 0x28, 0x68, 0x05, 0x63, 0x74, 0x6f, 0x72, 0x63, 0x68, 0x0a, 0x42, 0x6f, 0x6f, 0x6c, 0x53,
	0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x0a, 0x71, 0x4a, 0x58, 0x01, 0x00, 0x00, 0x00, 0x37, 0x71,
	0x4b, 0x68, 0x08, 0x4b, 0x02, 0x74, 0x71, 0x4c, 0x51, 0x4b, 0x00, 0x4b, 0x02, 0x85, 0x71, 0x4d,
	0x4b, 0x01, 0x85, 0x71, 0x4e, 0x89, 0x68, 0x00, 0x29, 0x52, 0x71, 0x4f, 0x74, 0x71, 0x50, 0x52,
	0x71, 0x51, 0x75, 0x7d, 0x71, 0x52, 0x58, 0x09, 0x00, 0x00, 0x00, 0x5f, 0x6d, 0x65, 0x74, 0x61,
	0x64, 0x61, 0x74, 0x61, 0x71, 0x53, 0x68, 0x00, 0x29, 0x52, 0x71, 0x54, 0x28, 0x58, 0x00, 0x00,
	0x00, 0x00, 0x71, 0x55, 0x7d, 0x71, 0x56, 0x58, 0x07, 0x00, 0x00, 0x00, 0x76, 0x65, 0x72, 0x73,
	0x69, 0x6f, 0x6e, 0x71, 0x57, 0x4b, 0x01, 0x73, 0x58, 0x02, 0x00, 0x00, 0x00, 0x62, 0x6e, 0x71,
	0x58, 0x7d, 0x71, 0x59, 0x68, 0x57, 0x4b, 0x02, 0x73, 0x75, 0x73, 0x62, 0x2e,
};

/* data.pkl of a file: its bytes through the independent parser. */
static uint8_t *read_pickle(const char *path, size_t *size)
{
	zip_view z;
	zip_parse(path, &z);
	const zip_rec *r = &z.recs[0];
	uint8_t *p = malloc(r->size ? r->size : 1);
	cr_assert(p);
	memcpy(p, z.file + r->payload, r->size);
	*size = r->size;
	zip_view_free(&z);
	return p;
}

Test(torch_writer, writes_the_same_data_pkl_bytes_as_torch_1_13)
{
	scenario sc = mixed("golden");
	size_t size;
	uint8_t *got = read_pickle(write_scenario(&sc), &size);
	size_t at = 0;
	while (at < size && at < sizeof(torch_pickle) && got[at] == torch_pickle[at])
		at++;
	cr_expect(size == sizeof(torch_pickle) && at == size,
	          "data.pkl differs from torch's at byte %zu (got %zu bytes, want %zu)", at, size, sizeof(torch_pickle));
	free(got);
}

Test(torch_writer, a_state_dict_reads_back_with_its_views_ties_parameters_and_metadata)
{
	scenario sc = mixed("mixed");
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	ti_ckpt *c = NULL;
	ASSERT_STATUS(ti_ckpt_open(path, NULL, &c, &err), TI_OK, err);
	const ti_value *attrs = ti_ckpt_root(c)->as.dict->attributes;
	cr_assert(attrs != NULL, "the OrderedDict has no _metadata");
	const ti_value *meta = ti_dict_get(attrs, "_metadata");
	ASSERT_KIND(meta, TI_DICT);
	ASSERT_INT(meta->as.dict->count, 2);
	int64_t version = 0;
	ASSERT_STATUS(ti_value_as_int(ti_dict_get(ti_dict_get(meta, "bn"), "version"), &version, &err), TI_OK, err);
	EXPECT_INT(version, 2);
	ti_ckpt_close(c);
}

Test(torch_writer, the_file_does_not_depend_on_how_the_bytes_are_chunked)
{
	scenario whole = mixed("chunk_whole"), bytewise = mixed("chunk_1"), odd = mixed("chunk_7");
	bytewise.chunk = 1;
	odd.chunk = 7;
	zip_view a, b, c;
	zip_parse(write_scenario(&whole), &a);
	zip_parse(write_scenario(&bytewise), &b);
	zip_parse(write_scenario(&odd), &c);
	cr_expect(a.size == b.size && !memcmp(a.file, b.file, a.size), "one byte at a time changed the file");
	cr_expect(a.size == c.size && !memcmp(a.file, c.file, a.size), "7 bytes at a time changed the file");
	zip_view_free(&a);
	zip_view_free(&b);
	zip_view_free(&c);
}

Test(torch_writer, a_root_name_and_big_endian_order_are_recorded)
{
	scenario sc = mixed("root");
	sc.options.root = "my_model";
	sc.options.big_endian = true;
	sc.options.module_count = 0;
	check_all(write_scenario(&sc), &sc);
}

Test(torch_writer, forced_zip64_fields_keep_the_file_readable_and_aligned)
{
	/* Every size and offset is at or past 1: each record and the directory take ZIP64 fields. */
	scenario sc = mixed("zip64");
	sc.options.root = "zip64";
	sc.options.zip64_threshold = 1;
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	check_zip64_fields(path, 1);
}

Test(torch_writer, an_empty_state_dict_is_an_empty_ordered_dict)
{
	scenario sc = {"empty", NULL, 0, NULL, 0, {0}, 0};
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	size_t size;
	uint8_t *got = read_pickle(path, &size);
	/* PROTO 2, GLOBAL 'collections OrderedDict', BINPUT 0, EMPTY_TUPLE, REDUCE, BINPUT 1, STOP */
	static const uint8_t want[] = "\x80\x02" "ccollections\nOrderedDict\nq\x00)Rq\x01.";
	cr_expect(size == sizeof(want) - 1 && !memcmp(got, want, size), "got %zu bytes of pickle", size);
	free(got);
}

Test(torch_writer, over_a_thousand_tensors_are_batched_and_memoized_past_256)
{
	/* 1100 tensors, two per storage: two SETITEMS batches, LONG_BINPUT and LONG_BINGET for the keys. */
	enum { N = 1100 };
	static char names[N][32];
	static ti_tw_tensor tensors[N];
	static ti_tw_storage storages[N / 2];
	for (size_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "layers.%zu.%s", i / 2, i % 2 ? "view" : "weight");
		tensors[i] = (ti_tw_tensor){.name = names[i], .storage = i / 2, .offset = i % 2, .ndim = 1,
		                            .shape = i % 2 ? shape_1 : shape_2};
		storages[i / 2] = (ti_tw_storage){TI_DT_FLOAT32, 2};
	}
	scenario sc = {"many", storages, N / 2, tensors, N, {0}, 0};
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	size_t size, setitems = 0;
	uint8_t *p = read_pickle(path, &size);
	cr_expect(p[size - 2] == 'u', "the pickle does not end with SETITEMS");
	for (size_t i = 0; i < size; i++)
		setitems += p[i] == 'u';
	cr_expect(setitems >= 2, "one SETITEMS for 1100 items: batches are of 1000");
	free(p);
}

/*
 * nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).state_dict(), names,
 * shapes and _metadata as torch builds them: the conformance script loads
 * it with load_state_dict(strict=True) and saves the model's state dict
 * again, which must give the same data.pkl.
 */
static const int64_t shape_2x3[] = {2, 3};
static const ti_tw_storage sequential_storages[] = {
	{TI_DT_FLOAT32, 6}, {TI_DT_FLOAT32, 2}, {TI_DT_FLOAT32, 2}, {TI_DT_FLOAT32, 2},
	{TI_DT_FLOAT32, 2}, {TI_DT_FLOAT32, 2}, {TI_DT_INT64, 1},
};
static const ti_tw_tensor sequential_tensors[] = {
	{.name = "0.weight", .storage = 0, .ndim = 2, .shape = shape_2x3},
	{.name = "0.bias", .storage = 1, .ndim = 1, .shape = shape_2},
	{.name = "1.weight", .storage = 2, .ndim = 1, .shape = shape_2},
	{.name = "1.bias", .storage = 3, .ndim = 1, .shape = shape_2},
	{.name = "1.running_mean", .storage = 4, .ndim = 1, .shape = shape_2},
	{.name = "1.running_var", .storage = 5, .ndim = 1, .shape = shape_2},
	{.name = "1.num_batches_tracked", .storage = 6, .ndim = 0},
};
static const ti_tw_module_version sequential_modules[] = {{"", 1}, {"0", 1}, {"1", 2}};

Test(torch_writer, a_module_state_dict_with_per_module_versions)
{
	scenario sc = {"sequential", sequential_storages, COUNT(sequential_storages), sequential_tensors,
	               COUNT(sequential_tensors),
	               {.modules = sequential_modules, .module_count = COUNT(sequential_modules)}, 0};
	check_all(write_scenario(&sc), &sc);
}

/*
 * A real ZIP64 file: a storage of 4 GiB + 64 bytes (its sizes saturate),
 * and records after it (their offsets saturate, and the directory's). Slow
 * and 4 GiB of disk: it runs only when TINSPECT_WRITER_BIG is set, as
 * writer_conformance.py --big does. Its CRC is checked by libzip.
 */
static const int64_t shape_huge[] = {((int64_t)1 << 32) + 64}, shape_64[] = {64}, shape_4x4_big[] = {4, 4},
                     shape_0[] = {0};
static const ti_tw_storage big_storages[] = {
	{TI_DT_UINT8, ((uint64_t)1 << 32) + 64}, {TI_DT_FLOAT32, 16}, {TI_DT_FLOAT16, 0}};
static const ti_tw_tensor big_tensors[] = {
	{.name = "huge", .storage = 0, .ndim = 1, .shape = shape_huge},
	{.name = "tail", .storage = 0, .offset = (uint64_t)1 << 32, .ndim = 1, .shape = shape_64},
	{.name = "after", .storage = 1, .ndim = 2, .shape = shape_4x4_big},
	{.name = "empty", .storage = 2, .ndim = 1, .shape = shape_0},
};

/* Its own suite for its own time limit: a per-test .timeout makes Criterion 2.4 leak under --jobs. */
TestSuite(torch_writer_big, .fini = teardown, .timeout = 1800);

Test(torch_writer_big, a_storage_past_4_gib_takes_real_zip64_fields)
{
	if (!getenv("TINSPECT_WRITER_BIG"))
		cr_skip_test("writes 4 GiB: set TINSPECT_WRITER_BIG=1 to run it");
	scenario sc = {"big", big_storages, COUNT(big_storages), big_tensors, COUNT(big_tensors), {0}, 0};
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	check_zip64_fields(path, 0xffffffffu);
}

typedef struct dtype_case {
	ti_dtype dtype;
	const char *storage_class;
} dtype_case;

static const dtype_case supported[] = {
	{TI_DT_FLOAT32, "FloatStorage"},   {TI_DT_FLOAT64, "DoubleStorage"},        {TI_DT_FLOAT16, "HalfStorage"},
	{TI_DT_BFLOAT16, "BFloat16Storage"}, {TI_DT_INT64, "LongStorage"},           {TI_DT_INT32, "IntStorage"},
	{TI_DT_INT16, "ShortStorage"},     {TI_DT_INT8, "CharStorage"},             {TI_DT_UINT8, "ByteStorage"},
	{TI_DT_BOOL, "BoolStorage"},       {TI_DT_COMPLEX64, "ComplexFloatStorage"},
	{TI_DT_COMPLEX128, "ComplexDoubleStorage"},
};

/*
 * Criterion runs each parameter in a new process, where pointers inside a
 * parameter mean nothing: the parameters are indices into the tables.
 */
static const size_t case_index[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

ParameterizedTestParameters(torch_writer, each_dtype_is_written_with_its_legacy_storage_class)
{
	_Static_assert(COUNT(supported) <= COUNT(case_index), "more cases than indices");
	return cr_make_param_array(size_t, case_index, COUNT(supported));
}

ParameterizedTest(const size_t *index, torch_writer, each_dtype_is_written_with_its_legacy_storage_class)
{
	const dtype_case *c = &supported[*index];
	EXPECT_STR(ti_tw_storage_class(c->dtype), c->storage_class);
	ti_tw_storage storage = {c->dtype, 5};
	ti_tw_tensor tensor = {.name = ti_dtype_name(c->dtype), .ndim = 1, .shape = shape_5};
	char stem[64];
	snprintf(stem, sizeof(stem), "dtype_%s", ti_dtype_name(c->dtype));
	scenario sc = {stem, &storage, 1, &tensor, 1, {0}, 3};
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	size_t size;
	uint8_t *p = read_pickle(path, &size);
	char global[64];
	size_t n = (size_t)snprintf(global, sizeof(global), "ctorch\n%s\n", c->storage_class);
	bool found = false;
	for (size_t i = 0; i + n <= size && !found; i++)
		found = !memcmp(p + i, global, n);
	cr_expect(found, "no GLOBAL 'torch %s' in the pickle", c->storage_class);
	free(p);
}

Test(torch_writer, every_supported_dtype_in_one_file)
{
	static ti_tw_storage storages[COUNT(supported)];
	static ti_tw_tensor tensors[COUNT(supported)];
	for (size_t i = 0; i < COUNT(supported); i++) {
		storages[i] = (ti_tw_storage){supported[i].dtype, 5};
		tensors[i] = (ti_tw_tensor){.name = ti_dtype_name(supported[i].dtype), .storage = i, .ndim = 1,
		                            .shape = shape_5};
	}
	scenario sc = {"dtypes", storages, COUNT(storages), tensors, COUNT(tensors), {0}, 0};
	check_all(write_scenario(&sc), &sc);
}

/* PyTorch 2.x torch.storage._new_dtypes(): no typed storage, saved with _rebuild_tensor_v3 */
static const ti_dtype v3_dtypes[] = {
	TI_DT_COMPLEX32, TI_DT_UINT16, TI_DT_UINT32, TI_DT_UINT64, TI_DT_FLOAT8_E5M2, TI_DT_FLOAT8_E4M3FN,
	TI_DT_FLOAT8_E5M2FNUZ, TI_DT_FLOAT8_E4M3FNUZ, TI_DT_FLOAT8_E8M0FNU, TI_DT_FLOAT4_E2M1FN_X2,
	TI_DT_BITS8, TI_DT_BITS16, TI_DT_BITS1X8, TI_DT_BITS2X4, TI_DT_BITS4X2,
};

/* Whether the pickle holds bytes (a GLOBAL line pair, an opcode run). */
static bool pickle_has(const uint8_t *p, size_t size, const void *bytes, size_t n)
{
	for (size_t i = 0; i + n <= size; i++)
		if (!memcmp(p + i, bytes, n))
			return true;
	return false;
}

ParameterizedTestParameters(torch_writer, a_dtype_pytorch_2_added_is_written_as_2_x_writes_it)
{
	return cr_make_param_array(ti_dtype, v3_dtypes, COUNT(v3_dtypes));
}

ParameterizedTest(const ti_dtype *dt, torch_writer, a_dtype_pytorch_2_added_is_written_as_2_x_writes_it)
{
	cr_expect(ti_tw_storage_class(*dt) == NULL && ti_tw_needs_v3(*dt), "%s has a typed storage", ti_dtype_name(*dt));
	/* a view at element 1: v3's offset counts elements, the persistent id's size counts bytes */
	ti_tw_storage storage = {*dt, 5};
	static const int64_t shape_4[] = {4};
	ti_tw_tensor tensor = {.name = "x", .offset = 1, .ndim = 1, .shape = shape_4};
	char stem[64];
	snprintf(stem, sizeof(stem), "v3_%s", ti_dtype_name(*dt));
	scenario sc = {stem, &storage, 1, &tensor, 1, {0}, 3};
	const char *path = write_scenario(&sc);
	check_all(path, &sc);
	size_t size;
	uint8_t *p = read_pickle(path, &size);
	char dtype_global[64];
	int n = snprintf(dtype_global, sizeof(dtype_global), "ctorch\n%s\nq", ti_dtype_name(*dt));
	cr_expect(pickle_has(p, size, "ctorch._utils\n_rebuild_tensor_v3\nq", 32), "no _rebuild_tensor_v3");
	cr_expect(pickle_has(p, size, "ctorch.storage\nUntypedStorage\nq", 30), "no UntypedStorage");
	cr_expect(pickle_has(p, size, dtype_global, (size_t)n), "no GLOBAL 'torch %s'", ti_dtype_name(*dt));
	/* ... 'cpu' K nbytes t Q K 1 (offset): the size is 5 elements in bytes, then BINPERSID, offset 1 */
	uint8_t pid_end[] = {'K', (uint8_t)(5 * ti_dtype_size(*dt)), 't', 'q'};
	cr_expect(pickle_has(p, size, pid_end, sizeof(pid_end)), "the persistent id does not count %zu bytes",
	          5 * ti_dtype_size(*dt));
	cr_expect(!pickle_has(p, size, "_rebuild_tensor_v2", 18), "a v2 call for %s", ti_dtype_name(*dt));
	free(p);
}

Test(torch_writer, legacy_and_v3_dtypes_mix_in_one_file)
{
	static const ti_tw_storage storages[] = {{TI_DT_FLOAT32, 2}, {TI_DT_FLOAT8_E4M3FN, 4}, {TI_DT_UINT16, 3},
	                                         {TI_DT_FLOAT8_E4M3FN, 1}};
	static const int64_t shape_2x2[] = {2, 2}, stride_t[] = {1, 2};
	static const ti_tw_tensor tensors[] = {
		{.name = "f32", .storage = 0, .ndim = 1, .shape = shape_2},
		{.name = "f8", .storage = 1, .ndim = 2, .shape = shape_2x2, .requires_grad = true},
		{.name = "f8_t", .storage = 1, .ndim = 2, .shape = shape_2x2, .stride = stride_t},
		{.name = "u16", .storage = 2, .offset = 1, .ndim = 1, .shape = shape_2},
		{.name = "f8_scalar", .storage = 3, .ndim = 0},
	};
	scenario sc = {"v3_mixed", storages, COUNT(storages), tensors, COUNT(tensors), {0}, 0};
	check_all(write_scenario(&sc), &sc);
}

static const ti_dtype unsupported[] = {TI_DT_QINT8, TI_DT_QUINT8, TI_DT_QINT32, TI_DT_QUINT4X2, TI_DT_QUINT2X4};

ParameterizedTestParameters(torch_writer, a_quantized_dtype_is_refused_as_unsupported)
{
	return cr_make_param_array(ti_dtype, unsupported, COUNT(unsupported));
}

ParameterizedTest(const ti_dtype *dt, torch_writer, a_quantized_dtype_is_refused_as_unsupported)
{
	cr_expect(ti_tw_storage_class(*dt) == NULL && !ti_tw_needs_v3(*dt), "%s can be written", ti_dtype_name(*dt));
	ti_tw_storage storage = {*dt, 5};
	ti_tw_tensor tensor = {.name = "x", .ndim = 1, .shape = shape_5};
	int fd;
	new_path("unsupported", false, &fd);
	ti_tw *w = (ti_tw *)0x1;
	EXPECT_STATUS(ti_tw_begin(fd, &storage, 1, &tensor, 1, NULL, &w, &err), TI_E_UNSUPPORTED, err);
	EXPECT_CONTAINS(err.message, ti_dtype_name(*dt));
	cr_expect(w == NULL, "a failed begin returned a writer");
	struct stat st;
	cr_assert(fstat(fd, &st) == 0);
	EXPECT_INT(st.st_size, 0);
	close(fd);
}

typedef struct bad_case {
	const char *what;
	ti_tw_storage storages[2];
	size_t storage_count;
	ti_tw_tensor tensors[2];
	size_t tensor_count;
	const char *root;
	const char *message; /* a piece of it */
} bad_case;

static const int64_t shape_65[65], shape_neg[] = {-1};

static const bad_case bad_cases[] = {
	{"a tensor views a storage that does not exist", {{TI_DT_FLOAT32, 4}}, 1,
	 {{.name = "a", .ndim = 1, .shape = shape_2}, {.name = "b", .storage = 1, .ndim = 1, .shape = shape_2}}, 2,
	 NULL, "views storage 1 of 1"},
	{"a view reaches past its storage", {{TI_DT_FLOAT32, 4}}, 1,
	 {{.name = "a", .offset = 1, .ndim = 2, .shape = shape_2x2}}, 1, NULL, "reaches element 4 of storage 0"},
	{"a stride reaches past its storage", {{TI_DT_FLOAT32, 4}}, 1,
	 {{.name = "a", .ndim = 2, .shape = shape_3x2, .stride = stride_4x2}}, 1, NULL, "reaches element 10"},
	{"a size is negative", {{TI_DT_FLOAT32, 4}}, 1, {{.name = "a", .ndim = 1, .shape = shape_neg}}, 1, NULL,
	 "negative size"},
	{"two tensors share a name", {{TI_DT_FLOAT32, 4}}, 1,
	 {{.name = "a", .ndim = 1, .shape = shape_2}, {.name = "a", .offset = 2, .ndim = 1, .shape = shape_2}}, 2, NULL,
	 "two tensors are named 'a'"},
	{"a storage is viewed by no tensor", {{TI_DT_FLOAT32, 4}, {TI_DT_FLOAT32, 4}}, 2,
	 {{.name = "a", .ndim = 1, .shape = shape_2}}, 1, NULL, "storage 1 is viewed by no tensor"},
	{"a tensor has 65 dimensions", {{TI_DT_FLOAT32, 4}}, 1, {{.name = "a", .ndim = 65, .shape = shape_65}}, 1, NULL,
	 "65 dimensions"},
	{"a name is not UTF-8", {{TI_DT_FLOAT32, 4}}, 1, {{.name = "caf\xe9", .ndim = 1, .shape = shape_2}}, 1, NULL,
	 "not valid UTF-8"},
	{"a tensor has no name", {{TI_DT_FLOAT32, 4}}, 1, {{.ndim = 1, .shape = shape_2}}, 1, NULL, "has no name"},
	{"the root has a slash", {{TI_DT_FLOAT32, 4}}, 1, {{.name = "a", .ndim = 1, .shape = shape_2}}, 1, "a/b",
	 "root name"},
	{"the root is empty", {{TI_DT_FLOAT32, 4}}, 1, {{.name = "a", .ndim = 1, .shape = shape_2}}, 1, "", "root name"},
	{"a storage's bytes overflow", {{TI_DT_FLOAT64, (uint64_t)1 << 61}}, 1,
	 {{.name = "a", .ndim = 1, .shape = shape_2}}, 1, NULL, "too large"},
	{"an integer tensor requires grad", {{TI_DT_INT64, 4}}, 1,
	 {{.name = "a", .ndim = 1, .shape = shape_2, .requires_grad = true}}, 1, NULL, "cannot require grad"},
	{"a storage has no dtype", {{TI_DT_INVALID, 4}}, 1, {{.name = "a", .ndim = 1, .shape = shape_2}}, 1, NULL,
	 "no valid dtype"},
};

ParameterizedTestParameters(torch_writer, bad_arguments_are_refused_before_anything_is_written)
{
	_Static_assert(COUNT(bad_cases) <= COUNT(case_index), "more cases than indices");
	return cr_make_param_array(size_t, case_index, COUNT(bad_cases));
}

ParameterizedTest(const size_t *index, torch_writer, bad_arguments_are_refused_before_anything_is_written)
{
	const bad_case *c = &bad_cases[*index];
	int fd;
	new_path("bad", false, &fd);
	ti_tw_options options = {.root = c->root};
	ti_tw *w = NULL;
	ti_error_clear(&err);
	ti_status s = ti_tw_begin(fd, c->storages, c->storage_count, c->tensors, c->tensor_count, &options, &w, &err);
	cr_expect(s == TI_E_INVALID, "%s: got %s (\"%s\"), want invalid", c->what, ti_status_name(s), err.message);
	cr_expect(strstr(err.message, c->message) != NULL, "%s: got \"%s\", want it to contain \"%s\"", c->what,
	          err.message, c->message);
	struct stat st;
	cr_assert(fstat(fd, &st) == 0);
	cr_expect(st.st_size == 0, "%s: %lld bytes written", c->what, (long long)st.st_size);
	ti_tw_free(w);
	close(fd);
}

/* A writer on the mixed scenario, begun on a fresh file. */
static ti_tw *begin_mixed(int *fd)
{
	scenario sc = mixed("usage");
	new_path("usage", false, fd);
	ti_tw *w = NULL;
	ASSERT_STATUS(ti_tw_begin(*fd, sc.storages, sc.storage_count, sc.tensors, sc.tensor_count, &sc.options, &w, &err),
	              TI_OK, err);
	return w;
}

Test(torch_writer, a_put_may_not_run_past_the_storage_being_written)
{
	int fd;
	ti_tw *w = begin_mixed(&fd);
	uint8_t bytes[20] = {0};
	EXPECT_STATUS(ti_tw_storage_put(w, bytes, 17, &err), TI_E_INVALID, err); /* storage 0 has 16 bytes */
	EXPECT_CONTAINS(err.message, "storage 0, which has 16 bytes left");
	EXPECT_STATUS(ti_tw_storage_put(w, bytes, 16, &err), TI_OK, err);
	EXPECT_INT(ti_tw_current_storage(w), 1);
	ti_tw_free(w);
	close(fd);
}

Test(torch_writer, end_refuses_a_storage_that_is_not_complete)
{
	int fd;
	ti_tw *w = begin_mixed(&fd);
	uint8_t bytes[16] = {0};
	EXPECT_STATUS(ti_tw_storage_put(w, bytes, 16, &err), TI_OK, err);
	EXPECT_STATUS(ti_tw_storage_put(w, bytes, 5, &err), TI_OK, err);
	EXPECT_STATUS(ti_tw_end(w, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "storage 1 has 5 of its 12 bytes");
	ti_tw_free(w);
	close(fd);
}

Test(torch_writer, a_pipe_is_refused_because_crcs_are_written_back)
{
	int fds[2];
	cr_assert(pipe(fds) == 0);
	scenario sc = mixed("pipe");
	ti_tw *w = NULL;
	EXPECT_STATUS(ti_tw_begin(fds[1], sc.storages, sc.storage_count, sc.tensors, sc.tensor_count, NULL, &w, &err),
	              TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "seekable");
	close(fds[0]);
	close(fds[1]);
}

Test(torch_writer, a_full_disk_is_an_io_error_and_stops_the_writer)
{
	int fd = open("/dev/full", O_WRONLY);
	cr_assert(fd >= 0, "no /dev/full");
	scenario sc = mixed("full");
	ti_tw *w = NULL;
	ASSERT_STATUS(ti_tw_begin(fd, sc.storages, sc.storage_count, sc.tensors, sc.tensor_count, NULL, &w, &err), TI_OK,
	              err);
	ASSERT_STATUS(put_storages(w, &sc), TI_OK, err); /* buffered so far */
	EXPECT_STATUS(ti_tw_end(w, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "No space left");
	EXPECT_STATUS(ti_tw_end(w, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "failed earlier");
	ti_tw_free(w);
	close(fd);
}

Test(torch_writer, a_file_that_held_more_is_cut_to_the_checkpoint)
{
	int fd;
	const char *path = new_path("stale", false, &fd);
	static uint8_t junk[100000];
	memset(junk, 'x', sizeof(junk));
	cr_assert(write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
	cr_assert(lseek(fd, 0, SEEK_SET) == 0);
	scenario sc = mixed("stale");
	ti_tw *w = NULL;
	ASSERT_STATUS(ti_tw_begin(fd, sc.storages, sc.storage_count, sc.tensors, sc.tensor_count, &sc.options, &w, &err),
	              TI_OK, err);
	ASSERT_STATUS(put_storages(w, &sc), TI_OK, err);
	ASSERT_STATUS(ti_tw_end(w, &err), TI_OK, err);
	struct stat st;
	cr_assert(fstat(fd, &st) == 0);
	EXPECT_INT(st.st_size, ti_tw_bytes_written(w));
	EXPECT_STATUS(ti_tw_storage_put(w, junk, 1, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "already finished");
	ti_tw_free(w);
	close(fd);
	check_all(path, &sc);
}

Test(torch_writer, a_file_not_at_offset_zero_is_refused)
{
	int fd;
	new_path("offset", false, &fd);
	cr_assert(write(fd, "x", 1) == 1);
	scenario sc = mixed("offset");
	ti_tw *w = NULL;
	EXPECT_STATUS(ti_tw_begin(fd, sc.storages, sc.storage_count, sc.tensors, sc.tensor_count, NULL, &w, &err),
	              TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "offset 0");
	close(fd);
}
