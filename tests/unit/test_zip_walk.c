/*
 * test_zip_walk.c - the byte-level zip walker of the safety scanner.
 *
 * Each test lays out a small zip in memory with the builder below, which
 * writes what torch.save writes (flags 0x0808, an 'FB' extra padding the
 * payload to 64 bytes, zero CRC and sizes in the local header, a data
 * descriptor, ZIP64 end records) unless told otherwise, injects one trick,
 * and checks that the walker reports it with its keyword. The fixtures,
 * written by torch itself, must walk with no report at all.
 *
 * The walker reads through a source that holds exactly the archive's bytes
 * and refuses a read outside them, so an overread fails the test (and ASan
 * sees it too).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/crc32.h"
#include "format/zip_walk.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))

enum { TORCH_FLAGS = 0x0808, ENTRIES_MAX = 1000 };

/* ---- a zip laid out by hand ---- */

typedef struct zbuf {
	uint8_t *p;
	size_t len, cap;
} zbuf;

static void put_bytes(zbuf *z, const void *bytes, size_t n)
{
	if (z->len + n > z->cap) {
		z->cap = (z->len + n) * 2 + 64;
		z->p = realloc(z->p, z->cap);
		cr_assert(z->p != NULL, "out of memory");
	}
	if (n)
		memcpy(z->p + z->len, bytes, n);
	z->len += n;
}

static void put_le(zbuf *z, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		uint8_t b = (uint8_t)(v >> (8 * i));
		put_bytes(z, &b, 1);
	}
}

/* Overwrites n little-endian bytes at offset at: how a test injects a trick after the layout. */
static void set_le(zbuf *z, uint64_t at, uint64_t v, int n)
{
	cr_assert(at + (uint64_t)n <= z->len, "patch at %" PRIu64 " is outside the archive", at);
	for (int i = 0; i < n; i++)
		z->p[at + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

typedef struct zrec {
	const char *name;
	size_t name_len;        /* 0: strlen(name) */
	const char *data;       /* the payload as stored; NULL: empty */
	size_t len;             /* 0: strlen(data) */
	uint16_t flags;         /* TORCH_FLAGS for what torch writes */
	uint16_t method;
	uint32_t size, crc;     /* for deflated data; 0: the payload's length and CRC */
	const char *local_name; /* what the local header says instead, if not NULL */
	const char *comment;    /* the central entry's comment */
	int zip64;              /* central sizes saturated, and given in a ZIP64 extra */
	/* Set by put_record and put_directory: */
	uint64_t offset;        /* of the local header (put_directory writes this, so a test may change it) */
	uint64_t data_at, descriptor_at, central_at;
} zrec;

typedef struct zend {
	int plain;              /* no ZIP64 end record or locator, as zipfile writes */
	int declare;            /* declare this many entries instead of the count */
	uint64_t declared;
	const char *comment;
	const char *gap;        /* bytes between the directory and the end records */
} zend;

/* Where put_directory put things. */
static struct {
	uint64_t cd_offset, cd_size, zip64_at, locator_at, eocd_at;
} layout;

static size_t rec_len(const zrec *r) { return r->data ? (r->len ? r->len : strlen(r->data)) : 0; }
static size_t rec_name_len(const zrec *r) { return r->name_len ? r->name_len : strlen(r->name); }
static uint32_t rec_size(const zrec *r) { return r->size ? r->size : (uint32_t)rec_len(r); }
static uint32_t rec_crc(const zrec *r) { return r->crc ? r->crc : ti_crc32(0, r->data, rec_len(r)); }

/* A local header, its name, torch's padding extra, the payload and, with flag bit 3, a data descriptor. */
static void put_record(zbuf *z, zrec *r)
{
	const char *name = r->local_name ? r->local_name : r->name;
	size_t nlen = r->local_name ? strlen(r->local_name) : rec_name_len(r), len = rec_len(r);
	int descriptor = r->flags & 8;
	r->offset = z->len;
	/* torch pads with an 'FB' extra so that the payload starts at a multiple of 64. */
	size_t start = z->len + 30 + nlen + 4, pad = (64 - start % 64) % 64;
	put_le(z, 0x04034b50, 4);
	put_le(z, 0, 2); /* version needed: torch writes 0 */
	put_le(z, r->flags, 2);
	put_le(z, r->method, 2);
	put_le(z, 0, 4); /* time and date */
	put_le(z, descriptor ? 0 : rec_crc(r), 4);
	put_le(z, descriptor ? 0 : len, 4);
	put_le(z, descriptor ? 0 : rec_size(r), 4);
	put_le(z, nlen, 2);
	put_le(z, 4 + pad, 2);
	put_bytes(z, name, nlen);
	put_bytes(z, "FB", 2);
	put_le(z, pad, 2);
	for (size_t i = 0; i < pad; i++)
		put_bytes(z, "Z", 1);
	r->data_at = z->len;
	put_bytes(z, r->data, len);
	r->descriptor_at = z->len;
	if (descriptor) {
		put_le(z, 0x08074b50, 4);
		put_le(z, rec_crc(r), 4);
		put_le(z, len, 4);
		put_le(z, rec_size(r), 4);
	}
}

static void put_central(zbuf *z, zrec *r)
{
	size_t nlen = rec_name_len(r), clen = r->comment ? strlen(r->comment) : 0;
	r->central_at = z->len;
	put_le(z, 0x02014b50, 4);
	put_le(z, 0, 2); /* version made by */
	put_le(z, 0, 2); /* version needed */
	put_le(z, r->flags, 2);
	put_le(z, r->method, 2);
	put_le(z, 0, 4);
	put_le(z, rec_crc(r), 4);
	put_le(z, r->zip64 ? 0xffffffffu : rec_len(r), 4);
	put_le(z, r->zip64 ? 0xffffffffu : rec_size(r), 4);
	put_le(z, nlen, 2);
	put_le(z, r->zip64 ? 20 : 0, 2);
	put_le(z, clen, 2);
	put_le(z, 0, 2); /* disk */
	put_le(z, 0, 2); /* internal attributes */
	put_le(z, 0, 4); /* external attributes */
	put_le(z, r->offset, 4);
	put_bytes(z, r->name, nlen);
	if (r->zip64) {
		put_le(z, 1, 2);
		put_le(z, 16, 2);
		put_le(z, rec_size(r), 8);
		put_le(z, rec_len(r), 8);
	}
	put_bytes(z, r->comment, clen);
}

/* The central directory for recs, then the end records; end may be NULL (torch's). */
static void put_directory(zbuf *z, zrec *recs, size_t n, const zend *end)
{
	static const zend torch = {0};
	if (!end)
		end = &torch;
	layout.cd_offset = z->len;
	for (size_t i = 0; i < n; i++)
		put_central(z, &recs[i]);
	layout.cd_size = z->len - layout.cd_offset;
	if (end->gap)
		put_bytes(z, end->gap, strlen(end->gap));
	uint64_t count = end->declare ? end->declared : n;
	if (!end->plain) {
		layout.zip64_at = z->len;
		put_le(z, 0x06064b50, 4);
		put_le(z, 44, 8);
		put_le(z, 0x031e, 2);
		put_le(z, 0x2d, 2);
		put_le(z, 0, 4);
		put_le(z, 0, 4);
		put_le(z, count, 8);
		put_le(z, count, 8);
		put_le(z, layout.cd_size, 8);
		put_le(z, layout.cd_offset, 8);
		layout.locator_at = z->len;
		put_le(z, 0x07064b50, 4);
		put_le(z, 0, 4);
		put_le(z, layout.zip64_at, 8);
		put_le(z, 1, 4);
	}
	size_t clen = end->comment ? strlen(end->comment) : 0;
	layout.eocd_at = z->len;
	put_le(z, 0x06054b50, 4);
	put_le(z, 0, 2);
	put_le(z, 0, 2);
	put_le(z, count, 2);
	put_le(z, count, 2);
	put_le(z, layout.cd_size, 4);
	put_le(z, layout.cd_offset, 4);
	put_le(z, clen, 2);
	put_bytes(z, end->comment, clen);
}

/* The records, back to back, then their directory. */
static void put_archive(zbuf *z, zrec *recs, size_t n, const zend *end)
{
	for (size_t i = 0; i < n; i++)
		put_record(z, &recs[i]);
	put_directory(z, recs, n, end);
}

/* ---- walking it ---- */

typedef struct seen {
	ti_scan_severity severity;
	char record[128];
	int64_t offset;
	char message[512];
} seen;

static zbuf zip;
static uint8_t *bytes;  /* exactly the archive's bytes */
static ti_pickle_source source;
static zw_archive archive;
static ti_error err;
static seen reports[256];
static size_t report_count;

static ti_status read_memory(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *e)
{
	(void)e;
	cr_assert(offset <= source.size && n <= source.size - offset,
	          "read of %zu bytes at offset %" PRIu64 " outside the %" PRIu64 "-byte source", n, offset, source.size);
	memcpy(buf, (const uint8_t *)ctx + offset, n);
	return TI_OK;
}

static void collect(void *ctx, ti_scan_severity severity, const char *record, int64_t offset, const char *message)
{
	(void)ctx;
	cr_assert(message && *message, "a report with no message");
	cr_expect(!strchr(message, '\n'), "report \"%s\" is not one line", message);
	cr_expect(message[strlen(message) - 1] != '.', "report \"%s\" ends with a full stop", message);
	cr_expect(severity == TI_SCAN_SUSPICIOUS, "report \"%s\" has severity %d", message, severity);
	if (report_count == sizeof(reports) / sizeof(reports[0]))
		return;
	seen *s = &reports[report_count++];
	s->severity = severity;
	snprintf(s->record, sizeof(s->record), "%s", record ? record : "");
	s->offset = offset;
	snprintf(s->message, sizeof(s->message), "%s", message);
}

static void teardown(void)
{
	zw_free(&archive);
	free(bytes);
	bytes = NULL;
	free(zip.p);
	memset(&zip, 0, sizeof(zip));
	memset(&layout, 0, sizeof(layout));
	report_count = 0;
}

TestSuite(zip_walk, .fini = teardown, .timeout = 60);

/* Walks a copy of n bytes (the copy is exactly their size). */
static ti_status walk_bytes_max(const void *data, size_t n, size_t entries_max)
{
	zw_free(&archive);
	free(bytes);
	bytes = malloc(n ? n : 1);
	cr_assert(bytes != NULL);
	if (n)
		memcpy(bytes, data, n);
	source = (ti_pickle_source){n, read_memory, bytes, NULL};
	report_count = 0;
	ti_error_clear(&err);
	return zw_walk(&source, entries_max, collect, NULL, &archive, &err);
}

static ti_status walk_zip(void) { return walk_bytes_max(zip.p, zip.len, ENTRIES_MAX); }

/* All reports, for a failure message. */
static const char *all_reports(void)
{
	static char text[8192];
	size_t k = 0;
	text[0] = '\0';
	for (size_t i = 0; i < report_count && k < sizeof(text) - 1; i++)
		k += (size_t)snprintf(text + k, sizeof(text) - k, "\n  [%s] @%" PRId64 ": %s", reports[i].record,
		                      reports[i].offset, reports[i].message);
	return report_count ? text : " none";
}

#define WALKED()                                                                              \
	do {                                                                                  \
		ti_status s_ = walk_zip();                                                    \
		ASSERT_STATUS(s_, TI_OK, err);                                                \
	} while (0)

/* The first report whose message contains piece, or NULL. */
static const seen *report_with(const char *piece)
{
	for (size_t i = 0; i < report_count; i++)
		if (strstr(reports[i].message, piece))
			return &reports[i];
	return NULL;
}

static size_t reports_with(const char *piece)
{
	size_t n = 0;
	for (size_t i = 0; i < report_count; i++)
		n += strstr(reports[i].message, piece) != NULL;
	return n;
}

#define EXPECT_REPORTED(piece) \
	cr_expect(report_with(piece) != NULL, "no report contains \"%s\"; got:%s", (piece), all_reports())
#define ASSERT_REPORTED(piece) \
	cr_assert(report_with(piece) != NULL, "no report contains \"%s\"; got:%s", (piece), all_reports())
#define EXPECT_NO_REPORT() cr_expect(report_count == 0, "want no report; got:%s", all_reports())

/* Reads entry i and requires success; the bytes are malloc'd. */
static uint8_t *read_ok(size_t i, size_t max, size_t *size)
{
	uint8_t *data = NULL;
	ti_status s = zw_read(&source, &archive, i, max, &data, size, &err);
	ASSERT_STATUS(s, TI_OK, err);
	cr_assert(data[*size] == '\0', "entry %zu is not NUL-terminated", i);
	return data;
}

static void expect_read(size_t i, const void *want, size_t want_size)
{
	size_t size = 0;
	uint8_t *data = read_ok(i, 1 << 20, &size);
	EXPECT_INT(size, want_size);
	cr_expect(size == want_size && !memcmp(data, want, size), "entry %zu: bytes differ", i);
	free(data);
}

static ti_status read_fails(size_t i, size_t max)
{
	uint8_t *data = NULL;
	size_t size = 0;
	ti_error_clear(&err);
	ti_status s = zw_read(&source, &archive, i, max, &data, &size, &err);
	cr_expect(s != TI_OK || data != NULL);
	if (s == TI_OK)
		free(data);
	return s;
}

/* The whole file, malloc'd; the caller frees it. */
static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f != NULL, "%s is missing: run the tests from the repository root", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void walk_fixture(const char *path)
{
	size_t n = 0;
	uint8_t *data = slurp(path, &n);
	ti_status s = walk_bytes_max(data, n, 100000);
	free(data);
	cr_assert(s == TI_OK, "%s: got %s (\"%s\"), want success", path, ti_status_name(s), err.message);
}

/* "the quick brown fox jumps over the lazy dog\n" 20 times, raw-deflated by Python's zlib at level 9. */
static const char fox_deflated[] =
	"\x2b\xc9\x48\x55\x28\x2c\xcd\x4c\xce\x56\x48\x2a\xca\x2f\xcf\x53\x48\xcb\xaf\x50\xc8\x2a\xcd\x2d"
	"\x28\x56\xc8\x2f\x4b\x2d\x52\x28\x01\x4a\xe7\x24\x56\x55\x2a\xa4\xe4\xa7\x73\x95\x8c\xaa\x1d\x55"
	"\x3b\xaa\x96\x22\xb5\x00";
enum { FOX_DEFLATED_LEN = sizeof(fox_deflated) - 1, FOX_LEN = 880 };
#define FOX_CRC 0xc737c481u

static const char *fox_text(void)
{
	static char text[FOX_LEN + 1];
	for (int i = 0; i < 20; i++)
		memcpy(text + 44 * i, "the quick brown fox jumps over the lazy dog\n", 44);
	return text;
}

static zrec fox(const char *name)
{
	return (zrec){.name = name, .data = fox_deflated, .len = FOX_DEFLATED_LEN, .flags = TORCH_FLAGS, .method = 8,
	              .size = FOX_LEN, .crc = FOX_CRC};
}

/* A torch archive's records: a pickle, a tensor, the version, and an empty storage. */
#define TORCH_RECORDS                                                                           \
	{                                                                                       \
		{.name = "archive/data.pkl", .data = "\x80\x02}q\x00.", .len = 6, .flags = TORCH_FLAGS}, \
		{.name = "archive/data/0", .data = "0123456789abcdef", .flags = TORCH_FLAGS},   \
		{.name = "archive/version", .data = "3\n", .flags = TORCH_FLAGS},               \
		{.name = "archive/data/1", .flags = 0x0800},                                    \
	}

/* ---- archives that must walk without a report ---- */

Test(zip_walk, walks_an_archive_laid_out_as_torch_saves_without_a_report)
{
	zrec recs[] = TORCH_RECORDS;
	put_archive(&zip, recs, 4, NULL);
	WALKED();
	EXPECT_NO_REPORT();
	ASSERT_INT(archive.count, 4);
	EXPECT_INT(archive.cd_offset, layout.cd_offset);
	EXPECT_INT(archive.cd_size, layout.cd_size);
	EXPECT_INT(archive.eocd_offset, layout.eocd_at);
	for (size_t i = 0; i < 4; i++) {
		const zw_entry *e = &archive.entries[i];
		EXPECT_STR(e->name, recs[i].name);
		EXPECT_INT(e->name_length, strlen(recs[i].name));
		EXPECT_INT(e->flags, recs[i].flags);
		EXPECT_INT(e->method, 0);
		EXPECT_INT(e->size, rec_len(&recs[i]));
		EXPECT_INT(e->compressed_size, rec_len(&recs[i]));
		EXPECT_INT(e->crc, rec_crc(&recs[i]));
		EXPECT_INT(e->local_offset, recs[i].offset);
		EXPECT_INT(e->data_offset, recs[i].data_at);
		EXPECT_INT(e->data_offset % 64, 0);
		EXPECT_INT(e->readable, 1);
		EXPECT_INT(e->duplicate, 0);
		expect_read(i, recs[i].data ? recs[i].data : "", rec_len(&recs[i]));
	}
}

Test(zip_walk, walks_an_archive_as_zipfile_writes_it_without_a_report)
{
	/* No data descriptor, no ZIP64 end record; a deflated entry with deflate's level bits (1 and 2). */
	zrec recs[] = {
		{.name = "a.txt", .data = "plain"},
		fox("b.txt"),
	};
	recs[1].flags = 0x0006;
	put_archive(&zip, recs, 2, &(zend){.plain = 1});
	WALKED();
	EXPECT_NO_REPORT();
	ASSERT_INT(archive.count, 2);
	expect_read(0, "plain", 5);
	expect_read(1, fox_text(), FOX_LEN);
}

Test(zip_walk, walks_an_empty_archive_without_a_report)
{
	put_archive(&zip, NULL, 0, NULL);
	WALKED();
	EXPECT_NO_REPORT();
	EXPECT_INT(archive.count, 0);
}

Test(zip_walk, walks_the_proto4_fixture_without_a_report)
{
	walk_fixture("fixtures/proto4.pt");
	EXPECT_NO_REPORT();
	ASSERT_INT(archive.count, 4);
	const char *names[] = {"proto4/data.pkl", "proto4/data/0", "proto4/data/1", "proto4/version"};
	for (size_t i = 0; i < 4; i++) {
		EXPECT_STR(archive.entries[i].name, names[i]);
		EXPECT_INT(archive.entries[i].flags, TORCH_FLAGS);
		EXPECT_INT(archive.entries[i].readable, 1);
	}
	size_t size = 0;
	uint8_t *pkl = read_ok(0, 1 << 20, &size);
	EXPECT_INT(size, 256);
	EXPECT_INT(pkl[0], 0x80);
	EXPECT_INT(pkl[1], 4);
	EXPECT_INT(pkl[size - 1], '.');
	free(pkl);
	expect_read(3, "3\n", 2);
}

Test(zip_walk, walks_the_resnet18_fixture_without_a_report)
{
	walk_fixture("fixtures/resnet18_small.pt");
	EXPECT_NO_REPORT();
	EXPECT_INT(archive.count, 124);
	for (size_t i = 0; i < archive.count; i++)
		cr_expect(archive.entries[i].readable && !archive.entries[i].duplicate, "%s", archive.entries[i].name);
}

/* Every fixture torch wrote (1.13) or that gen_torch2.py wrote as 2.x does, every entry read and its CRC checked. */
Test(zip_walk, walks_and_reads_every_fixture_without_a_report)
{
	DIR *dir = opendir("fixtures");
	cr_assert(dir != NULL, "fixtures/ is missing: run the tests from the repository root");
	size_t files = 0;
	for (struct dirent *d; (d = readdir(dir));) {
		size_t n = strlen(d->d_name);
		if (n < 4 || strcmp(d->d_name + n - 3, ".pt"))
			continue;
		char path[512], head[4] = {0};
		snprintf(path, sizeof(path), "fixtures/%s", d->d_name);
		FILE *f = fopen(path, "rb");
		size_t got = f ? fread(head, 1, sizeof(head), f) : 0;
		if (f)
			fclose(f);
		if (got < 4 || memcmp(head, "PK", 2)) /* a legacy torch.save file is no zip */
			continue;
		walk_fixture(path);
		cr_expect(report_count == 0, "%s: want no report; got:%s", path, all_reports());
		for (size_t i = 0; i < archive.count; i++) {
			size_t size = 0;
			free(read_ok(i, (size_t)1 << 26, &size));
		}
		files++;
	}
	closedir(dir);
	cr_expect(files >= 20, "only %zu fixtures found", files);
}

/* ---- each trick, reported ---- */

Test(zip_walk, reports_a_name_given_twice)
{
	zrec recs[] = {
		{.name = "archive/data.pkl", .data = "safe", .flags = TORCH_FLAGS},
		{.name = "archive/version", .data = "3\n", .flags = TORCH_FLAGS},
		{.name = "archive/data.pkl", .data = "evil", .flags = TORCH_FLAGS},
	};
	put_archive(&zip, recs, 3, NULL);
	WALKED();
	EXPECT_INT(reports_with("duplicate name"), 1);
	ASSERT_REPORTED("duplicate name");
	EXPECT_STR(report_with("duplicate name")->record, "archive/data.pkl");
	EXPECT_INT(report_with("duplicate name")->offset, recs[2].offset);
	EXPECT_INT(archive.entries[0].duplicate, 1);
	EXPECT_INT(archive.entries[1].duplicate, 0);
	EXPECT_INT(archive.entries[2].duplicate, 1);
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_a_local_name_that_differs_from_the_central_one)
{
	zrec recs[] = {{.name = "archive/data.pkl", .local_name = "archive/other.pkl", .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("local header says name");
	EXPECT_CONTAINS(report_with("local header")->message, "archive/other.pkl");
	EXPECT_STR(report_with("local header")->record, "archive/data.pkl");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_a_local_method_and_flags_that_differ)
{
	zrec recs[] = {{.name = "a", .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, recs[0].offset + 8, 8, 2);
	set_le(&zip, recs[0].offset + 6, 0x0800, 2);
	WALKED();
	EXPECT_REPORTED("local header says method 8");
	EXPECT_REPORTED("local header says flags 0x0800");
	/* A reader that believes the local header would inflate stored bytes: not readable. */
	EXPECT_INT(archive.entries[0].readable, 0);
	EXPECT_INT(read_fails(0, 100), TI_E_CORRUPT);
}

Test(zip_walk, reports_local_crc_and_sizes_that_differ_without_a_data_descriptor)
{
	zrec recs[] = {{.name = "a", .data = "hello"}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, recs[0].offset + 14, 0x12345678, 4);
	set_le(&zip, recs[0].offset + 18, 4, 4);
	set_le(&zip, recs[0].offset + 22, 4, 4);
	WALKED();
	EXPECT_REPORTED("local header says crc 0x12345678");
	EXPECT_REPORTED("local header says compressed size 4");
	EXPECT_REPORTED("local header says size 4");
	EXPECT_INT(report_count, 3);
}

Test(zip_walk, accepts_zero_local_crc_and_sizes_with_a_data_descriptor)
{
	/* What torch writes: flag bit 3 and zeros; the descriptor has the values. */
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_NO_REPORT();
}

Test(zip_walk, reports_a_data_descriptor_that_differs)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}, {.name = "b", .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 2, NULL);
	set_le(&zip, recs[0].descriptor_at + 4, 0xdeadbeef, 4);
	WALKED();
	ASSERT_REPORTED("local header's data descriptor");
	EXPECT_CONTAINS(report_with("descriptor")->message, "0xdeadbeef");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_a_missing_local_header)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, recs[0].offset, 0x04034b51, 4);
	WALKED();
	EXPECT_REPORTED("no local header signature");
	EXPECT_INT(archive.entries[0].readable, 0);
	EXPECT_INT(read_fails(0, 100), TI_E_CORRUPT);
	EXPECT_CONTAINS(err.message, "local header");
}

Test(zip_walk, reports_a_local_header_past_the_end_of_the_file)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, recs[0].central_at + 42, 0x7fffffff, 4);
	WALKED();
	EXPECT_REPORTED("no local header");
	EXPECT_REPORTED("after the central directory");
	EXPECT_INT(archive.entries[0].readable, 0);
}

Test(zip_walk, reports_an_encrypted_entry)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS | 1}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("flag bit 0");
	EXPECT_CONTAINS(report_with("flag")->message, "encrypted");
	EXPECT_STR(report_with("flag")->record, "a");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_strong_encryption_masked_headers_and_unknown_bits)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS | 1u << 6 | 1u << 13 | 1u << 9}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_REPORTED("flag bit 6 set (strong encryption)");
	EXPECT_REPORTED("flag bit 13 set (masked header values)");
	EXPECT_REPORTED("flag bit 9");
	EXPECT_INT(reports_with("flag"), 3);
}

Test(zip_walk, reports_compression_level_bits_on_a_stored_entry)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS | 2}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_REPORTED("flag bit 1");
}

Test(zip_walk, reports_an_unexpected_compression_method)
{
	zrec recs[] = {{.name = "a", .data = "BZh9", .flags = TORCH_FLAGS, .method = 12, .size = 10}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("method 12");
	EXPECT_CONTAINS(report_with("method")->message, "bzip2");
	EXPECT_INT(read_fails(0, 100), TI_E_UNSUPPORTED);
}

Test(zip_walk, reports_a_local_header_inside_the_central_directory)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}, {.name = "b", .data = "x", .flags = TORCH_FLAGS}};
	put_record(&zip, &recs[0]);
	put_record(&zip, &recs[1]);
	/* b's local header points at a's central entry. */
	recs[1].offset = zip.len;
	put_directory(&zip, recs, 2, NULL);
	WALKED();
	ASSERT_REPORTED("after the central directory");
	EXPECT_STR(report_with("after the central directory")->record, "b");
	EXPECT_REPORTED("no local header signature");
	/* b's real local header is now bytes nothing points to. */
	EXPECT_REPORTED("hidden local header not in the central directory");
}

Test(zip_walk, reports_data_that_runs_into_the_central_directory)
{
	zrec recs[] = {{.name = "a", .data = "hello"}};
	put_archive(&zip, recs, 1, &(zend){.plain = 1});
	/* Central and local sizes both claim 9 more bytes: the first ones of the directory. */
	set_le(&zip, recs[0].central_at + 20, 14, 4);
	set_le(&zip, recs[0].central_at + 24, 14, 4);
	set_le(&zip, recs[0].offset + 18, 14, 4);
	set_le(&zip, recs[0].offset + 22, 14, 4);
	WALKED();
	ASSERT_REPORTED("data runs into the central directory");
	EXPECT_CONTAINS(report_with("data runs into")->message, "after the central directory");
}

Test(zip_walk, reports_bytes_between_the_directory_and_the_end_records)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, &(zend){.gap = "hidden payload"});
	WALKED();
	ASSERT_REPORTED("after the central directory");
	EXPECT_INT(report_with("after the central directory")->offset, layout.cd_offset + layout.cd_size);
	EXPECT_CONTAINS(report_with("after the central directory")->message, "14 unexplained bytes");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_trailing_bytes_after_the_end_record)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	size_t end = zip.len;
	put_bytes(&zip, "tail", 4);
	WALKED();
	ASSERT_REPORTED("trailing bytes");
	EXPECT_INT(report_with("trailing bytes")->offset, end);
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_an_end_record_comment)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, &(zend){.comment = "made by hand"});
	WALKED();
	ASSERT_REPORTED("comment");
	EXPECT_CONTAINS(report_with("comment")->message, "end-of-central-directory comment of 12 bytes");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_an_end_record_comment_that_runs_past_the_end)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, &(zend){.comment = "made by hand"});
	set_le(&zip, layout.eocd_at + 20, 100, 2);
	WALKED();
	EXPECT_REPORTED("comment of 100 bytes runs past the end of the file");
}

Test(zip_walk, reports_an_entry_comment)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS, .comment = "note"}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("entry comment of 4 bytes");
	EXPECT_STR(report_with("comment")->record, "a");
}

Test(zip_walk, reports_two_entries_that_share_their_bytes)
{
	zrec recs[] = {
		{.name = "archive/data.pkl", .data = "hello", .flags = TORCH_FLAGS},
		{.name = "archive/data/0", .data = "hello", .flags = TORCH_FLAGS},
	};
	put_record(&zip, &recs[0]);
	recs[1].offset = recs[0].offset;
	put_directory(&zip, recs, 2, NULL);
	WALKED();
	ASSERT_REPORTED("overlap");
	EXPECT_STR(report_with("overlap")->record, "archive/data/0");
	EXPECT_CONTAINS(report_with("overlap")->message, "archive/data.pkl");
	EXPECT_REPORTED("local header says name"); /* the local header names the other one */
}

Test(zip_walk, reports_an_entry_whose_data_covers_the_next_one)
{
	zrec recs[] = {{.name = "outer", .data = "hello"}, {.name = "inner", .data = "x"}};
	put_record(&zip, &recs[0]);
	put_record(&zip, &recs[1]);
	/* outer's sizes now take in inner's local header and data: a zip bomb's overlap. */
	uint32_t len = (uint32_t)(zip.len - recs[0].data_at);
	recs[0].len = len;
	recs[0].data = (const char *)zip.p + recs[0].data_at;
	char *copy = malloc(len);
	memcpy(copy, recs[0].data, len);
	recs[0].data = copy;
	set_le(&zip, recs[0].offset + 14, rec_crc(&recs[0]), 4);
	set_le(&zip, recs[0].offset + 18, len, 4);
	set_le(&zip, recs[0].offset + 22, len, 4);
	put_directory(&zip, recs, 2, &(zend){.plain = 1});
	free(copy);
	WALKED();
	ASSERT_REPORTED("overlap");
	EXPECT_STR(report_with("overlap")->record, "inner");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_hidden_bytes_between_records)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}, {.name = "b", .data = "x", .flags = TORCH_FLAGS}};
	put_record(&zip, &recs[0]);
	uint64_t gap = zip.len;
	put_bytes(&zip, "import os; os.system('x')", 25);
	put_record(&zip, &recs[1]);
	put_directory(&zip, recs, 2, NULL);
	WALKED();
	ASSERT_REPORTED("hidden bytes");
	EXPECT_INT(report_with("hidden bytes")->offset, gap);
	EXPECT_CONTAINS(report_with("hidden bytes")->message, "25 hidden bytes");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_prepended_bytes)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_bytes(&zip, "#!/bin/sh\n", 10);
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("before the first record");
	EXPECT_CONTAINS(report_with("before the first record")->message, "prepended");
	EXPECT_INT(report_with("before the first record")->offset, 0);
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_a_hidden_local_header)
{
	zrec recs[] = {
		{.name = "archive/data.pkl", .data = "safe", .flags = TORCH_FLAGS},
		{.name = "archive/data.pkl", .data = "evil", .flags = TORCH_FLAGS},
	};
	put_record(&zip, &recs[0]);
	put_record(&zip, &recs[1]); /* in the file, not in the directory */
	put_directory(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("hidden local header not in the central directory");
	const seen *s = report_with("hidden local header");
	EXPECT_INT(s->offset, recs[1].offset);
	EXPECT_CONTAINS(s->message, "archive/data.pkl");
	EXPECT_REPORTED("hidden bytes");
	EXPECT_INT(report_count, 2);
}

Test(zip_walk, reports_many_hidden_local_headers_in_a_bounded_number_of_lines)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_record(&zip, &recs[0]);
	for (int i = 0; i < 50; i++) {
		zrec hidden = {.name = "h", .data = "x", .flags = TORCH_FLAGS};
		put_record(&zip, &hidden);
	}
	put_directory(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(reports_with("hidden local header not in the central directory"), 8);
	EXPECT_REPORTED("42 more hidden local headers");
}

Test(zip_walk, reports_an_end_record_that_miscounts_the_entries)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}, {.name = "b", .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 2, &(zend){.declare = 1, .declared = 3});
	WALKED();
	ASSERT_REPORTED("entry count");
	EXPECT_CONTAINS(report_with("entry count")->message, "declare 3 entries, the central directory holds 2");
	EXPECT_INT(archive.count, 2);
}

Test(zip_walk, reports_end_records_that_disagree_on_the_count)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}, {.name = "b", .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 2, NULL);
	set_le(&zip, layout.eocd_at + 8, 1, 2);
	set_le(&zip, layout.eocd_at + 10, 1, 2);
	WALKED();
	ASSERT_REPORTED("entry count");
	EXPECT_CONTAINS(report_with("entry count")->message, "says 1 entries, the ZIP64 end record 2");
	EXPECT_INT(report_count, 1);
}

Test(zip_walk, reports_end_records_that_disagree_on_the_directory)
{
	/* A reader of the classic end record sees a directory that starts one entry later: only b. */
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}, {.name = "b", .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 2, NULL);
	set_le(&zip, layout.eocd_at + 16, recs[1].central_at, 4);
	WALKED();
	EXPECT_REPORTED("disagree on the central directory's offset");
	EXPECT_INT(archive.count, 2); /* the ZIP64 record's directory, as miniz reads it */
}

Test(zip_walk, reports_a_second_end_record)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	/* A second, complete archive's end record appended after the first. */
	uint64_t first = layout.eocd_at;
	put_directory(&zip, recs, 1, &(zend){.plain = 1});
	WALKED();
	ASSERT_REPORTED("second end-of-central-directory");
	EXPECT_INT(report_with("second end-of-central-directory")->offset, first);
	EXPECT_INT(archive.eocd_offset, layout.eocd_at);
}

Test(zip_walk, reports_an_end_record_signature_in_the_comment)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, &(zend){.comment = "PK\5\6 and so on"});
	WALKED();
	EXPECT_REPORTED("second end-of-central-directory");
	EXPECT_REPORTED("comment");
}

Test(zip_walk, reports_a_compression_ratio_of_a_zip_bomb)
{
	zrec recs[] = {fox("bomb")};
	recs[0].size = 100u << 20;
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("compression ratio");
	EXPECT_STR(report_with("compression ratio")->record, "bomb");
	EXPECT_INT(report_count, 1);
	EXPECT_INT(read_fails(0, 1 << 20), TI_E_LIMIT);
}

Test(zip_walk, does_not_report_a_high_ratio_under_64_mib)
{
	zrec recs[] = {fox("small")};
	recs[0].size = 60u << 20;
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_NO_REPORT();
}

Test(zip_walk, reports_stored_sizes_that_disagree)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS, .size = 3}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_REPORTED("stored entry's sizes disagree");
	EXPECT_INT(read_fails(0, 100), TI_E_CORRUPT);
}

/* Arrays, not pointers: Criterion copies each row into a process of its own. */
typedef struct name_row {
	char name[32];
	size_t len;
	char why[24];
} name_row;

static name_row name_rows[] = {
	{"../evil.pkl", 11, "'..' component"},
	{"archive/../../etc/cron.d/x", 26, "'..' component"},
	{"/etc/passwd", 11, "absolute path"},
	{"C:/Windows/x", 12, "absolute path"},
	{"archive\\data.pkl", 16, "backslash"},
	{"archive/data.pkl\0.txt", 21, "NUL byte"},
	{"archive/data\n.pkl", 17, "control characters"},
	{"archive/\x7f", 9, "control characters"},
	{"", 0, "empty"},
};

ParameterizedTestParameters(zip_walk, reports_an_unusual_name) { return ROWS(name_rows); }

ParameterizedTest(name_row *r, zip_walk, reports_an_unusual_name)
{
	zrec recs[] = {{.name = r->name, .name_len = r->len, .data = "x", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	ASSERT_REPORTED("unusual name");
	EXPECT_CONTAINS(report_with("unusual name")->message, r->why);
	ASSERT_INT(archive.count, 1);
	EXPECT_INT(archive.entries[0].name_length, r->len);
	cr_expect(!memcmp(archive.entries[0].name, r->name, r->len), "name bytes differ");
	/* Still one line: the name's odd bytes are escaped. */
	for (size_t i = 0; i < report_count; i++)
		cr_expect(!strchr(reports[i].message, '\n'), "%s", reports[i].message);
}

Test(zip_walk, reports_nothing_for_ordinary_names)
{
	zrec recs[] = {
		{.name = "archive/data..pkl", .data = "x", .flags = TORCH_FLAGS},
		{.name = "archive/.data/serialization_id", .data = "x", .flags = TORCH_FLAGS},
		{.name = "archive/caf\xc3\xa9", .data = "x", .flags = TORCH_FLAGS},
	};
	put_archive(&zip, recs, 3, NULL);
	WALKED();
	EXPECT_NO_REPORT();
}

/* ---- ZIP64 ---- */

Test(zip_walk, resolves_sizes_from_a_zip64_extra)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS, .zip64 = 1}, fox("b")};
	recs[1].zip64 = 1;
	put_archive(&zip, recs, 2, NULL);
	WALKED();
	EXPECT_NO_REPORT();
	EXPECT_INT(archive.entries[0].size, 5);
	EXPECT_INT(archive.entries[0].compressed_size, 5);
	EXPECT_INT(archive.entries[1].size, FOX_LEN);
	EXPECT_INT(archive.entries[1].compressed_size, FOX_DEFLATED_LEN);
	expect_read(0, "hello", 5);
	expect_read(1, fox_text(), FOX_LEN);
}

Test(zip_walk, reports_a_saturated_size_with_no_zip64_extra)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, recs[0].central_at + 24, 0xffffffffu, 4);
	WALKED();
	EXPECT_REPORTED("no ZIP64 extra field");
}

Test(zip_walk, reports_a_locator_that_points_nowhere)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, layout.locator_at + 8, recs[0].offset, 8);
	WALKED();
	EXPECT_REPORTED("where there is no ZIP64 end record");
	EXPECT_INT(archive.count, 1); /* the classic end record still finds the directory */
}

/* ---- reading entries ---- */

Test(zip_walk, reads_a_deflated_entry_through_libzip)
{
	zrec recs[] = {fox("fox.txt")};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_NO_REPORT();
	expect_read(0, fox_text(), FOX_LEN);
}

Test(zip_walk, refuses_an_entry_larger_than_the_limit)
{
	zrec recs[] = {fox("fox.txt"), {.name = "b", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 2, NULL);
	WALKED();
	EXPECT_INT(read_fails(0, FOX_LEN - 1), TI_E_LIMIT);
	EXPECT_CONTAINS(err.message, "880");
	EXPECT_CONTAINS(err.message, "879");
	EXPECT_STR(err.member, "fox.txt");
	EXPECT_INT(read_fails(1, 4), TI_E_LIMIT);
	size_t size = 0;
	free(read_ok(0, FOX_LEN, &size));
	free(read_ok(1, 5, &size));
}

Test(zip_walk, detects_a_crc_mismatch_in_a_stored_entry)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS, .crc = 0x12345678}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_NO_REPORT(); /* the records agree with one another: only the bytes tell */
	EXPECT_INT(read_fails(0, 100), TI_E_CORRUPT);
	EXPECT_CONTAINS(err.message, "CRC mismatch");
}

Test(zip_walk, detects_a_crc_mismatch_in_a_deflated_entry)
{
	zrec recs[] = {fox("fox.txt")};
	recs[0].crc = 0x12345678;
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(read_fails(0, 4096), TI_E_CORRUPT);
	EXPECT_CONTAINS(err.message, "CRC mismatch");
}

Test(zip_walk, refuses_a_deflated_entry_that_inflates_past_its_declared_size)
{
	zrec recs[] = {fox("fox.txt")};
	recs[0].size = 100;
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(read_fails(0, 4096), TI_E_CORRUPT);
}

Test(zip_walk, refuses_a_deflated_entry_that_inflates_short_of_its_declared_size)
{
	zrec recs[] = {fox("fox.txt")};
	recs[0].size = 1000;
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(read_fails(0, 4096), TI_E_CORRUPT);
}

Test(zip_walk, refuses_a_deflate_stream_that_is_not_one)
{
	zrec recs[] = {{.name = "a", .data = "\xff\xff\xff\xff garbage", .flags = TORCH_FLAGS, .method = 8, .size = 50,
	                .crc = 1}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(read_fails(0, 4096), TI_E_CORRUPT);
}

Test(zip_walk, refuses_compressed_bytes_far_more_than_deflate_needs)
{
	/* 4 bytes declared, 2000 compressed: no encoder writes that, and it would be our allocation. */
	static char junk[2001];
	memset(junk, 'j', 2000);
	zrec recs[] = {{.name = "a", .data = junk, .flags = TORCH_FLAGS, .method = 8, .size = 4, .crc = 1}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(read_fails(0, 4096), TI_E_CORRUPT);
	EXPECT_CONTAINS(err.message, "cannot take 2000 compressed bytes");
}

Test(zip_walk, refuses_an_entry_index_out_of_range)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	WALKED();
	EXPECT_INT(read_fails(1, 100), TI_E_INVALID);
}

/* ---- archives that cannot be walked ---- */

Test(zip_walk, fails_cleanly_on_every_prefix_of_a_fixture)
{
	size_t n = 0;
	uint8_t *data = slurp("fixtures/proto4.pt", &n);
	for (size_t cut = 0; cut < n; cut++) {
		ti_status s = walk_bytes_max(data, cut, ENTRIES_MAX);
		cr_expect(s == TI_E_CORRUPT, "cut at %zu: got %s, want corrupt input", cut, ti_status_name(s));
		cr_expect(err.message[0] != '\0', "cut at %zu: no message", cut);
		cr_expect(archive.entries == NULL && archive.count == 0, "cut at %zu: entries left behind", cut);
	}
	free(data);
}

Test(zip_walk, fails_when_there_is_no_end_record)
{
	ti_status s = walk_bytes_max("PK\3\4 and nothing more of a zip archive at all", 44, ENTRIES_MAX);
	EXPECT_STATUS(s, TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "no end-of-central-directory record");
	s = walk_bytes_max("PK", 2, ENTRIES_MAX);
	EXPECT_STATUS(s, TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "too short");
}

Test(zip_walk, fails_when_the_directory_runs_past_the_end_of_the_file)
{
	zrec recs[] = {{.name = "a", .data = "hello"}};
	put_archive(&zip, recs, 1, &(zend){.plain = 1});
	set_le(&zip, layout.eocd_at + 12, 1000, 4);
	ti_status s = walk_zip();
	EXPECT_STATUS(s, TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "zip central directory at offset");
	EXPECT_CONTAINS(err.message, "runs past the end of the file");
}

Test(zip_walk, fails_when_the_zip64_directory_lies_outside_the_file)
{
	zrec recs[] = {{.name = "a", .data = "hello", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 1, NULL);
	set_le(&zip, layout.zip64_at + 48, UINT64_C(1) << 62, 8);
	ti_status s = walk_zip();
	EXPECT_STATUS(s, TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "runs past the end of the file");
}

Test(zip_walk, fails_on_more_entries_than_allowed)
{
	zrec recs[] = {{.name = "a", .data = "1"}, {.name = "b", .data = "2"}, {.name = "c", .data = "3"}};
	put_archive(&zip, recs, 3, NULL);
	ti_status s = walk_bytes_max(zip.p, zip.len, 2);
	EXPECT_STATUS(s, TI_E_LIMIT, err);
	EXPECT_CONTAINS(err.message, "3 entries");
}

Test(zip_walk, fails_on_more_entries_than_allowed_when_the_end_record_says_fewer)
{
	zrec recs[] = {{.name = "a", .data = "1"}, {.name = "b", .data = "2"}, {.name = "c", .data = "3"}};
	put_archive(&zip, recs, 3, &(zend){.declare = 1, .declared = 1});
	ti_status s = walk_bytes_max(zip.p, zip.len, 2);
	EXPECT_STATUS(s, TI_E_LIMIT, err);
	EXPECT_CONTAINS(err.message, "more than the 2 entries allowed");
}

Test(zip_walk, reports_a_damaged_directory_entry_and_keeps_those_before_it)
{
	zrec recs[] = {{.name = "a", .data = "1", .flags = TORCH_FLAGS}, {.name = "b", .data = "2", .flags = TORCH_FLAGS}};
	put_archive(&zip, recs, 2, NULL);
	set_le(&zip, recs[1].central_at, 0x02014b51, 4);
	WALKED();
	EXPECT_REPORTED("has no central header signature");
	EXPECT_REPORTED("entry count");
	ASSERT_INT(archive.count, 1);
	EXPECT_STR(archive.entries[0].name, "a");
	/* b's record is now bytes nothing points to. */
	EXPECT_REPORTED("hidden local header");
}

/* Every byte of a small archive changed in turn: each walk succeeds or fails cleanly, and so does each read. */
Test(zip_walk, survives_any_single_byte_changed)
{
	zrec recs[] = {
		{.name = "archive/data.pkl", .data = "\x80\x02}q\x00.", .len = 6, .flags = TORCH_FLAGS},
		fox("archive/fox"),
		{.name = "archive/version", .data = "3\n", .flags = TORCH_FLAGS, .zip64 = 1},
	};
	put_archive(&zip, recs, 3, NULL);
	uint8_t *copy = malloc(zip.len);
	for (size_t at = 0; at < zip.len; at++) {
		for (int flip = 0; flip < 2; flip++) {
			memcpy(copy, zip.p, zip.len);
			copy[at] ^= flip ? 0xff : 0x80;
			ti_status s = walk_bytes_max(copy, zip.len, ENTRIES_MAX);
			cr_assert(s == TI_OK || s == TI_E_CORRUPT || s == TI_E_LIMIT, "byte %zu: got %s", at, ti_status_name(s));
			for (size_t i = 0; s == TI_OK && i < archive.count; i++) {
				uint8_t *data = NULL;
				size_t size = 0;
				ti_error_clear(&err);
				if (zw_read(&source, &archive, i, 1 << 16, &data, &size, &err) == TI_OK)
					free(data);
			}
		}
	}
	free(copy);
}
