/*
 * zip_walk.c - a zip archive walked byte by byte (see zip_walk.h).
 *
 * The layout is PKWARE's APPNOTE.TXT: local header (4.3.7), data descriptor
 * (4.3.9), central header (4.3.12), ZIP64 end record and locator (4.3.14,
 * 4.3.15), end of central directory (4.3.16), ZIP64 extra (4.5.3).
 *
 * What torch.save writes (miniz, through caffe2/serialize/inline_container.cc;
 * fixtures/gen_torch2.py rebuilds it byte for byte) is the baseline, and must
 * walk without a single report: every record stored, flags 0x0808 (bit 3, a
 * data descriptor follows; bit 11, UTF-8 names) or 0x0800 for an empty
 * record; a local header whose CRC and sizes are zero and whose 'FB' extra
 * pads the payload to 64 bytes; a 16-byte data descriptor with its
 * signature; the central directory; a ZIP64 end record and its locator,
 * written even when no field needs 64 bits; an end record with no comment.
 *
 * The walk: find the end records (they are the only fixed point), walk the
 * central directory entry by entry, then visit the local header each entry
 * points to, and last lay every structure found along the file to see what
 * overlaps and which bytes nothing accounts for. Every read is checked
 * against the source's size first. Each anomaly is reported and the walk
 * goes on; only the absence of a directory to walk stops it.
 *
 * Deflated entries are inflated by libzip, as in format/zip_archive.c: we
 * link no zlib of our own.
 */
#include "format/zip_walk.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "format/crc32.h"
#include "util/strsort.h"

enum {
	LOCAL_SIZE = 30,          /* fixed part of a local header, APPNOTE 4.3.7 */
	CENTRAL_SIZE = 46,        /* fixed part of a central header, 4.3.12 */
	EOCD_SIZE = 22,           /* end of central directory, without its comment, 4.3.16 */
	ZIP64_LOCATOR_SIZE = 20,  /* 4.3.15 */
	ZIP64_END_SIZE = 56,      /* the ZIP64 end record's fixed part, 4.3.14 */
	ZIP64_END_LEAD = 12,      /* its signature and size field, which its size leaves out */
	FIELD_MAX = 65535,        /* names, extras and comments have 16-bit lengths */
	/* One central entry's name, extra field and comment: the scratch buffer's size. */
	SCRATCH_SIZE = CENTRAL_SIZE + 3 * FIELD_MAX,
	GAP_CHUNK = 64 * 1024,    /* hidden bytes are searched in pieces of this size */
	REPEAT_MAX = 8,           /* reports of one kind in one place before "and N more" */
};

/* 32-bit fields that hold 0xffffffff (16-bit: 0xffff) defer to the ZIP64 records (APPNOTE 4.4.1.4). */
#define SATURATED32 UINT64_C(0xffffffff)
#define SATURATED16 UINT64_C(0xffff)

/* General purpose bit 3: CRC and sizes follow the data, in a descriptor (APPNOTE 4.4.4). */
#define FLAG_DESCRIPTOR 0x0008u

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* a + b, stopping at UINT64_MAX: untrusted lengths added to offsets. */
static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static bool within(const ti_pickle_source *src, uint64_t offset, uint64_t n)
{
	return offset <= src->size && n <= src->size - offset;
}

static ti_status read_at(const ti_pickle_source *src, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	if (!within(src, offset, n))
		return TI_FAIL(err, TI_E_CORRUPT, "zip structure of %zu bytes at offset %" PRIu64 " runs past the end of the file",
		               n, offset);
	if (n == 0)
		return TI_OK;
	ti_status s = src->read(src->ctx, offset, buf, n, err);
	if (s && !err->code)
		return TI_FAIL(err, s, "cannot read %zu bytes at offset %" PRIu64, n, offset);
	return s;
}

/* ---- the walk's state and its reports ---- */

typedef struct span {
	uint64_t start, end; /* [start, end) of the file */
	size_t entry;
} span;

typedef struct walk {
	const ti_pickle_source *src;
	zw_report_fn report;
	void *ctx;
	ti_error *err;
	zw_archive *a;
	uint8_t *scratch;            /* SCRATCH_SIZE bytes */
	size_t names_used, names_cap;
	size_t entries_cap;
	/* The last 64 KiB + 22 bytes of the file, where end records are looked for. */
	uint8_t *tail;
	size_t tail_len;
	uint64_t tail_at;
	/* The end records chosen. */
	uint64_t eocd_end;           /* past the end record's comment, at most the file's size */
	uint64_t comment;            /* the comment's declared length */
	bool has_locator, has_zip64;
	uint64_t locator_at, zip64_at, zip64_end;
	uint64_t declared;           /* entries the end records declare */
	span *spans;                 /* each entry whose local header was found */
	size_t span_count;
} walk;

__attribute__((format(printf, 4, 5)))
static void say(walk *w, const char *record, uint64_t offset, const char *fmt, ...)
{
	if (!w->report)
		return;
	char message[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	w->report(w->ctx, TI_SCAN_SUSPICIOUS, record, offset > INT64_MAX ? -1 : (int64_t)offset, message);
}

/* A name fit for a one-line message: printable ASCII kept, other bytes as \xNN, at most 64 bytes shown. */
typedef struct shown {
	char s[4 * 64 + 4];
} shown;

static shown show(const uint8_t *name, size_t n)
{
	shown out;
	size_t k = 0;
	for (size_t i = 0; i < n && i < 64; i++) {
		if (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '\\' && name[i] != '\'')
			out.s[k++] = (char)name[i];
		else
			k += (size_t)snprintf(out.s + k, sizeof(out.s) - k, "\\x%02x", name[i]);
	}
	if (n > 64)
		memcpy(out.s + k, "...", 3), k += 3;
	out.s[k] = '\0';
	return out;
}

/* ---- end records ---- */

/*
 * Finds the end record: the last signature in the file's tail with room for
 * a record after it, the one miniz (torch.load) takes. Other readers may
 * pick another when there are several (zipfile first tries a record that
 * ends the file, and gives up on a signature without room after it):
 * check_other_end_records() reports the others once the layout is known.
 */
static ti_status find_end_record(walk *w)
{
	const ti_pickle_source *src = w->src;
	zw_archive *a = w->a;
	if (src->size < EOCD_SIZE)
		return TI_FAIL(w->err, TI_E_CORRUPT,
		               "not a zip archive: %" PRIu64 " bytes is too short for an end-of-central-directory record", src->size);
	w->tail_len = (size_t)min64(src->size, EOCD_SIZE + FIELD_MAX);
	w->tail_at = src->size - w->tail_len;
	w->tail = malloc(w->tail_len);
	if (!w->tail)
		return TI_FAIL(w->err, TI_E_NOMEM, "out of memory reading the zip end records");
	if (read_at(src, w->tail_at, w->tail, w->tail_len, w->err))
		return w->err->code;
	for (size_t i = w->tail_len - EOCD_SIZE + 1; i-- > 0;)
		if (!memcmp(w->tail + i, "PK\5\6", 4)) {
			a->eocd_offset = w->tail_at + i;
			const uint8_t *p = w->tail + i;
			w->comment = rd(p + 20, 2);
			w->eocd_end = a->eocd_offset + EOCD_SIZE + min64(w->comment, src->size - a->eocd_offset - EOCD_SIZE);
			return TI_OK;
		}
	return TI_FAIL(w->err, TI_E_CORRUPT,
	               "not a zip archive: no end-of-central-directory record in the last %zu bytes (truncated or damaged)",
	               w->tail_len);
}

/* One field that both the end record and the ZIP64 end record hold. */
typedef struct end_field {
	const char *what;
	uint64_t classic, saturated, zip64;
} end_field;

/*
 * Reads the end record and, when a locator precedes it, the ZIP64 end
 * record; chooses the directory (from the ZIP64 record when there is one,
 * as miniz and zipfile do) and reports where the two records disagree,
 * since readers that trust the other one see another directory.
 */
static ti_status read_end_records(walk *w)
{
	const ti_pickle_source *src = w->src;
	zw_archive *a = w->a;
	const uint8_t *e = w->tail + (a->eocd_offset - w->tail_at);
	uint64_t disk = rd(e + 4, 2), cd_disk = rd(e + 6, 2), on_disk = rd(e + 8, 2), entries = rd(e + 10, 2);
	a->cd_size = rd(e + 12, 4);
	a->cd_offset = rd(e + 16, 4);
	w->declared = entries;
	if (on_disk != entries)
		say(w, NULL, a->eocd_offset,
		    "entry count: the end-of-central-directory record says %" PRIu64 " entries on this disk, %" PRIu64 " in all",
		    on_disk, entries);

	uint8_t loc[ZIP64_LOCATOR_SIZE], z[ZIP64_END_SIZE];
	if (a->eocd_offset >= ZIP64_LOCATOR_SIZE) {
		w->locator_at = a->eocd_offset - ZIP64_LOCATOR_SIZE;
		if (read_at(src, w->locator_at, loc, sizeof(loc), w->err))
			return w->err->code;
		w->has_locator = !memcmp(loc, "PK\6\7", 4);
	}
	if (w->has_locator) {
		w->zip64_at = rd(loc + 8, 8);
		uint64_t zip64_disk = rd(loc + 4, 4), disks = rd(loc + 16, 4);
		if (!within(src, w->zip64_at, ZIP64_END_SIZE)) {
			say(w, NULL, w->locator_at,
			    "ZIP64 end locator points to offset %" PRIu64 ", past the end of the file", w->zip64_at);
		} else {
			if (read_at(src, w->zip64_at, z, sizeof(z), w->err))
				return w->err->code;
			w->has_zip64 = !memcmp(z, "PK\6\6", 4);
			if (!w->has_zip64)
				say(w, NULL, w->locator_at,
				    "ZIP64 end locator points to offset %" PRIu64 ", where there is no ZIP64 end record", w->zip64_at);
		}
		if (zip64_disk != 0 || disks != 1)
			say(w, NULL, w->locator_at,
			    "multi-disk archive: the ZIP64 end locator names disk %" PRIu64 " of %" PRIu64, zip64_disk, disks);
	}
	if (w->has_zip64) {
		w->zip64_end = min64(add_sat(w->zip64_at, add_sat(ZIP64_END_LEAD, rd(z + 4, 8))), src->size);
		if (w->zip64_end < w->zip64_at + ZIP64_END_SIZE)
			w->zip64_end = w->zip64_at + ZIP64_END_SIZE;
		disk = rd(z + 16, 4);
		cd_disk = rd(z + 20, 4);
		on_disk = rd(z + 24, 8);
		const end_field fields[] = {
			{"entry count", entries, SATURATED16, rd(z + 32, 8)},
			{"size", a->cd_size, SATURATED32, rd(z + 40, 8)},
			{"offset", a->cd_offset, SATURATED32, rd(z + 48, 8)},
		};
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			const end_field *f = &fields[i];
			if (f->classic == f->saturated || f->classic == f->zip64)
				continue;
			if (i == 0)
				say(w, NULL, a->eocd_offset,
				    "entry count: the end-of-central-directory record says %" PRIu64
				    " entries, the ZIP64 end record %" PRIu64, f->classic, f->zip64);
			else
				say(w, NULL, a->eocd_offset,
				    "the end-of-central-directory record and the ZIP64 end record disagree on the central "
				    "directory's %s (%" PRIu64 " and %" PRIu64 ")", f->what, f->classic, f->zip64);
		}
		w->declared = fields[0].zip64;
		a->cd_size = fields[1].zip64;
		a->cd_offset = fields[2].zip64;
		if (on_disk != w->declared)
			say(w, NULL, w->zip64_at,
			    "entry count: the ZIP64 end record says %" PRIu64 " entries on this disk, %" PRIu64 " in all",
			    on_disk, w->declared);
	}
	if (disk != 0 || cd_disk != 0)
		say(w, NULL, a->eocd_offset,
		    "multi-disk archive: this is disk %" PRIu64 ", the central directory on disk %" PRIu64, disk, cd_disk);
	if (!within(src, a->cd_offset, a->cd_size))
		return TI_FAIL(w->err, TI_E_CORRUPT,
		               "zip central directory at offset %" PRIu64 " (%" PRIu64 " bytes) runs past the end of the file",
		               a->cd_offset, a->cd_size);
	return TI_OK;
}

/* A structure found after the central directory. */
typedef struct end_part {
	const char *what;
	uint64_t start, end;
} end_part;

/*
 * Lays the directory and the end records along the file's end. torch writes
 * them back to back; a gap between them is where zipfile, which finds the
 * directory by subtracting its size from the end record's position,
 * assumes prepended bytes and shifts every offset. Also reports the
 * comment and the bytes after the end record.
 */
static ti_status find_hidden_headers(walk *w, uint64_t from, uint64_t to);

/* The bytes from the directory's end to the file's: end records, and whatever hides between and after them. */
static ti_status check_end_region(walk *w)
{
	zw_archive *a = w->a;
	uint64_t cd_end = a->cd_offset + a->cd_size;
	end_part parts[3];
	size_t n = 0;
	if (w->has_zip64)
		parts[n++] = (end_part){"ZIP64 end record", w->zip64_at, w->zip64_end};
	if (w->has_locator)
		parts[n++] = (end_part){"ZIP64 end locator", w->locator_at, w->locator_at + ZIP64_LOCATOR_SIZE};
	parts[n++] = (end_part){"end-of-central-directory record", a->eocd_offset, w->eocd_end};
	/* At most three: insertion sort by start. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && parts[j].start < parts[j - 1].start; j--) {
			end_part t = parts[j];
			parts[j] = parts[j - 1];
			parts[j - 1] = t;
		}
	uint64_t covered = cd_end;
	const char *last = "central directory";
	for (size_t i = 0; i < n; i++) {
		const end_part *p = &parts[i];
		if (p->start < a->cd_offset) {
			say(w, NULL, p->start, "%s at offset %" PRIu64 " lies before the central directory (offset %" PRIu64 ")",
			    p->what, p->start, a->cd_offset);
			continue;
		}
		if (p->start < covered)
			say(w, NULL, p->start, "overlap: the %s at offset %" PRIu64 " overlaps the %s", p->what, p->start, last);
		else if (p->start > covered) {
			say(w, NULL, covered,
			    "%" PRIu64 " unexplained bytes after the central directory, at offset %" PRIu64 ", before the %s",
			    p->start - covered, covered, p->what);
			if (find_hidden_headers(w, covered, p->start))
				return w->err->code;
		}
		if (p->end > covered)
			covered = p->end, last = p->what;
	}
	if (w->comment > 0) {
		say(w, NULL, a->eocd_offset + EOCD_SIZE,
		    "end-of-central-directory comment of %" PRIu64 " bytes: torch never writes one", w->comment);
		uint64_t from = a->eocd_offset + EOCD_SIZE;
		if (from < w->src->size && find_hidden_headers(w, from, min64(from + w->comment, w->src->size)))
			return w->err->code;
	}
	if (a->eocd_offset + EOCD_SIZE + w->comment > w->src->size)
		say(w, NULL, a->eocd_offset + EOCD_SIZE,
		    "end-of-central-directory comment of %" PRIu64 " bytes runs past the end of the file", w->comment);
	if (covered < w->src->size) {
		say(w, NULL, covered, "trailing bytes: %" PRIu64 " after the end records, at offset %" PRIu64,
		    w->src->size - covered, covered);
		if (find_hidden_headers(w, covered, w->src->size))
			return w->err->code;
	}
	return TI_OK;
}

/* ---- central directory ---- */

/* APPNOTE 4.4.4, the general purpose bits; NULL for those torch's files carry. */
static const char *const flag_meaning[16] = {
	[0] = "encrypted",
	[1] = "compression option",
	[2] = "compression option",
	[4] = "enhanced deflating, reserved",
	[5] = "compressed patched data",
	[6] = "strong encryption",
	[7] = "unused",
	[8] = "unused",
	[9] = "unused",
	[10] = "unused",
	[12] = "reserved for enhanced compression",
	[13] = "masked header values",
	[14] = "reserved",
	[15] = "reserved",
};

/*
 * Bits 1 and 2 only say which deflate level wrote the data (Info-ZIP sets
 * them for -9 and -1); they change nothing for a reader of a deflated entry.
 */
#define FLAG_DEFLATE_LEVEL 0x0006u

/* APPNOTE 4.4.5: the methods other than stored (0) and deflated (8), which are all torch reads. */
static const struct {
	uint16_t method;
	const char *name;
} method_names[] = {
	{1, "shrunk"}, {2, "reduced"}, {3, "reduced"}, {4, "reduced"}, {5, "reduced"},
	{6, "imploded"}, {9, "deflate64"}, {10, "PKWARE DCL imploded"}, {12, "bzip2"},
	{14, "LZMA"}, {18, "IBM TERSE"}, {19, "IBM LZ77"}, {93, "zstd"}, {94, "MP3"},
	{95, "xz"}, {96, "JPEG"}, {97, "WavPack"}, {98, "PPMd"}, {99, "AES encrypted"},
};

static bool has_control(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((s[i] < 0x20 && s[i] != 0) || s[i] == 0x7f)
			return true;
	return false;
}

static bool has_dot_dot(const uint8_t *s, size_t n)
{
	/* A ".." between separators; zip names use '/', some extractors also split at '\'. */
	size_t start = 0;
	for (size_t i = 0; i <= n; i++)
		if (i == n || s[i] == '/' || s[i] == '\\') {
			if (i - start == 2 && s[start] == '.' && s[start + 1] == '.')
				return true;
			start = i + 1;
		}
	return false;
}

static bool is_absolute(const uint8_t *s, size_t n)
{
	/* "/etc", "\\share", or a drive letter "C:". */
	return (n > 0 && (s[0] == '/' || s[0] == '\\')) ||
	       (n > 1 && s[1] == ':' && ((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z'));
}

static bool has_nul(const uint8_t *s, size_t n) { return memchr(s, 0, n) != NULL; }
static bool has_backslash(const uint8_t *s, size_t n) { return memchr(s, '\\', n) != NULL; }
static bool is_empty(const uint8_t *s, size_t n) { (void)s; return n == 0; }

/* Names an extractor would write outside its folder, or that two readers read differently. */
static const struct {
	bool (*test)(const uint8_t *name, size_t n);
	const char *why;
} name_checks[] = {
	{is_empty, "is empty"},
	{has_dot_dot, "has a '..' component"},
	{is_absolute, "is an absolute path"},
	{has_backslash, "has a backslash"},
	{has_nul, "has a NUL byte: C readers cut it there"},
	{has_control, "has control characters"},
};

/* Checks that need the central entry alone. */
static void check_central(walk *w, const zw_entry *e, const char *name, uint64_t at)
{
	for (size_t i = 0; i < sizeof(name_checks) / sizeof(name_checks[0]); i++)
		if (name_checks[i].test((const uint8_t *)name, e->name_length))
			say(w, name, at, "unusual name: '%s' %s", show((const uint8_t *)name, e->name_length).s,
			    name_checks[i].why);
	uint16_t odd = e->flags;
	if (e->method == 8)
		odd &= (uint16_t)~FLAG_DEFLATE_LEVEL;
	for (int bit = 0; bit < 16; bit++)
		if ((odd >> bit & 1) && flag_meaning[bit])
			say(w, name, at, "flag bit %d set (%s), which torch never writes", bit, flag_meaning[bit]);
	if (e->method != 0 && e->method != 8) {
		const char *known = "unknown";
		for (size_t i = 0; i < sizeof(method_names) / sizeof(method_names[0]); i++)
			if (method_names[i].method == e->method)
				known = method_names[i].name;
		say(w, name, at, "unexpected compression method %u (%s): torch reads only stored and deflated entries",
		    e->method, known);
	}
	if (e->method == 0 && e->compressed_size != e->size)
		say(w, name, at,
		    "stored entry's sizes disagree: %" PRIu64 " bytes compressed, %" PRIu64 " uncompressed",
		    e->compressed_size, e->size);
	/* A zip bomb: over 1000:1 and over 64 MiB; deflate's best is about 1032:1, so only repeats get there. */
	if (e->size > (UINT64_C(64) << 20) && e->compressed_size < UINT64_MAX / 1000 && e->size > e->compressed_size * 1000)
		say(w, name, at, "compression ratio over 1000:1: %" PRIu64 " bytes from %" PRIu64, e->size,
		    e->compressed_size);
}

/*
 * Resolves saturated fields from the ZIP64 extra (id 1), which holds, in
 * this order, only the fields that are saturated (APPNOTE 4.5.3). fields[i]
 * is NULL for one that is not. False when the extra is missing or short.
 */
static bool zip64_extra(const uint8_t *x, size_t xlen, uint64_t *const fields[], size_t n)
{
	const uint8_t *end = x + xlen;
	while (end - x >= 4) {
		size_t id = (size_t)rd(x, 2), len = (size_t)rd(x + 2, 2);
		if ((size_t)(end - x - 4) < len)
			return false;
		if (id == 1) {
			const uint8_t *p = x + 4, *q = p + len;
			for (size_t i = 0; i < n; i++) {
				if (!fields[i])
					continue;
				if (q - p < 8)
					return false;
				*fields[i] = rd(p, 8);
				p += 8;
			}
			return true;
		}
		x += 4 + len;
	}
	return false;
}

/*
 * Makes room for need items of item bytes in array, which holds *cap, by
 * doubling up to ceiling. Returns the array, perhaps moved, or NULL (the
 * array is then untouched).
 */
static void *grow(void *array, size_t *cap, size_t need, size_t item, size_t ceiling)
{
	if (need <= *cap)
		return array;
	size_t to = *cap ? *cap : 16;
	while (to < need)
		to = to > SIZE_MAX / 2 ? SIZE_MAX : to * 2;
	if (to > ceiling)
		to = ceiling;
	if (to < need || to > SIZE_MAX / item)
		return NULL;
	void *p = realloc(array, to * item);
	if (p)
		*cap = to;
	return p;
}

/*
 * Reads the central directory entry by entry, as far as it goes. An entry
 * that is damaged, or that runs past the directory, ends the walk of the
 * directory (reported): what follows cannot be told from garbage. Names go
 * into one buffer, which grows to at most the directory's size.
 */
static ti_status walk_directory(walk *w, size_t entries_max)
{
	if (w->src->hint) /* read entry by entry: a URL's asks for it whole */
		w->src->hint(w->src->ctx, w->a->cd_offset, w->a->cd_size);
	const ti_pickle_source *src = w->src;
	zw_archive *a = w->a;
	uint64_t pos = a->cd_offset, end = a->cd_offset + a->cd_size;
	size_t names_ceiling = (size_t)min64(a->cd_size + 1, SIZE_MAX);
	while (pos < end) {
		uint8_t h[CENTRAL_SIZE];
		if (end - pos < CENTRAL_SIZE) {
			say(w, NULL, pos, "hidden bytes: %" PRIu64 " at the end of the central directory, at offset %" PRIu64
			    ", are no central entry", end - pos, pos);
			break;
		}
		if (read_at(src, pos, h, sizeof(h), w->err))
			return w->err->code;
		if (memcmp(h, "PK\1\2", 4)) {
			say(w, NULL, pos, "central directory entry %zu at offset %" PRIu64
			    " has no central header signature: the %" PRIu64 " bytes from there are unreadable",
			    a->count, pos, end - pos);
			break;
		}
		size_t nlen = (size_t)rd(h + 28, 2), xlen = (size_t)rd(h + 30, 2), clen = (size_t)rd(h + 32, 2);
		uint64_t length = CENTRAL_SIZE + nlen + xlen + clen;
		if (length > end - pos) {
			say(w, NULL, pos, "central directory entry %zu at offset %" PRIu64 " runs past the end of the directory",
			    a->count, pos);
			break;
		}
		if (a->count >= entries_max)
			return TI_FAIL(w->err, TI_E_LIMIT, "zip central directory holds more than the %zu entries allowed",
			               entries_max);
		zw_entry *entries = grow(a->entries, &w->entries_cap, a->count + 1, sizeof(*entries), entries_max);
		if (entries)
			a->entries = entries;
		char *names = grow(a->names, &w->names_cap, w->names_used + nlen + 1, 1, names_ceiling);
		if (names)
			a->names = names;
		if (!entries || !names)
			return TI_FAIL(w->err, TI_E_NOMEM, "out of memory reading the zip directory");
		if (read_at(src, pos + CENTRAL_SIZE, w->scratch, (size_t)(length - CENTRAL_SIZE), w->err))
			return w->err->code;
		zw_entry *e = &a->entries[a->count];
		memset(e, 0, sizeof(*e));
		char *name = a->names + w->names_used;
		memcpy(name, w->scratch, nlen);
		name[nlen] = '\0';
		w->names_used += nlen + 1;
		e->name = NULL; /* pointed at once the buffer stops moving */
		e->name_length = nlen;
		e->flags = (uint16_t)rd(h + 8, 2);
		e->method = (uint16_t)rd(h + 10, 2);
		e->crc = (uint32_t)rd(h + 16, 4);
		e->compressed_size = rd(h + 20, 4);
		e->size = rd(h + 24, 4);
		e->local_offset = rd(h + 42, 4);
		uint64_t start_disk = rd(h + 34, 2);
		uint64_t *const fields[] = {
			e->size == SATURATED32 ? &e->size : NULL,
			e->compressed_size == SATURATED32 ? &e->compressed_size : NULL,
			e->local_offset == SATURATED32 ? &e->local_offset : NULL,
			start_disk == SATURATED16 ? &start_disk : NULL,
		};
		if ((fields[0] || fields[1] || fields[2] || fields[3]) && !zip64_extra(w->scratch + nlen, xlen, fields, 4))
			say(w, name, pos, "central entry has saturated fields and no ZIP64 extra field to resolve them");
		a->count++;
		check_central(w, e, name, pos);
		if (start_disk != 0 && start_disk != SATURATED16)
			say(w, name, pos, "multi-disk archive: entry starts on disk %" PRIu64, start_disk);
		if (clen > 0)
			say(w, name, pos, "entry comment of %zu bytes: torch never writes one", clen);
		pos += length;
	}
	/* Every name in place: the buffer no longer moves. */
	size_t at = 0;
	for (size_t i = 0; i < a->count; i++) {
		a->entries[i].name = a->names + at;
		at += a->entries[i].name_length + 1;
	}
	if (w->declared != a->count)
		say(w, NULL, a->eocd_offset,
		    "entry count: the end records declare %" PRIu64 " entries, the central directory holds %zu",
		    w->declared, a->count);
	return TI_OK;
}

/* ---- duplicate names ---- */

static const char *entry_name(const void *ctx, uint32_t i)
{
	const zw_archive *a = ctx;
	return a->entries[i].name;
}

static void note_repeat(void *ctx, uint32_t first, uint32_t later)
{
	uint32_t *first_of = ctx;
	first_of[later] = first;
}

/*
 * Two entries of one name: zipfile takes the last, miniz (torch.load)
 * whichever its binary search over the sorted names meets, our reader
 * refuses the archive; so a scanner and torch.load can read different
 * data.pkl. Reported once per extra copy, in directory order. Names compare
 * as C strings, as C readers compare them.
 */
static ti_status check_duplicates(walk *w)
{
	zw_archive *a = w->a;
	if (a->count < 2 || a->count > TI_STRSORT_MAX)
		return TI_OK;
	ti_strsort sorted = {0};
	uint32_t *first_of = malloc(a->count * sizeof(*first_of));
	if (!first_of || ti_strsort_build(&sorted, a->count, entry_name, a)) {
		free(first_of);
		ti_strsort_release(&sorted);
		return TI_FAIL(w->err, TI_E_NOMEM, "out of memory looking for duplicate zip names");
	}
	for (size_t i = 0; i < a->count; i++)
		first_of[i] = UINT32_MAX;
	ti_strsort_repeats(&sorted, note_repeat, first_of);
	for (size_t i = 0; i < a->count; i++) {
		if (first_of[i] == UINT32_MAX)
			continue;
		zw_entry *e = &a->entries[i];
		e->duplicate = a->entries[first_of[i]].duplicate = 1;
		say(w, e->name, e->local_offset, "duplicate name: entry %zu has the name of entry %" PRIu32
		    ", and readers differ on which one they take", i, first_of[i]);
	}
	ti_strsort_release(&sorted);
	free(first_of);
	return TI_OK;
}

/* ---- local headers ---- */

/*
 * The data descriptor after a bit-3 entry's data (APPNOTE 4.3.9): an
 * optional signature, the CRC-32, then both sizes in 4 bytes each, or 8 in a
 * ZIP64 entry. Which of the four layouts it is shows by which one matches
 * the central values; *length is the one found, or the one expected.
 */
static ti_status check_descriptor(walk *w, const zw_entry *e, uint64_t at, bool wide, uint64_t *length)
{
	uint8_t d[24];
	size_t n = (size_t)min64(sizeof(d), w->src->size - at);
	if (read_at(w->src, at, d, n, w->err))
		return w->err->code;
	size_t sig = n >= 4 && !memcmp(d, "PK\7\10", 4) ? 4 : 0;
	for (int width = 4; width <= 8; width += 4) {
		size_t len = sig + 4 + 2 * (size_t)width;
		if (len <= n && rd(d + sig, 4) == e->crc && rd(d + sig + 4, width) == e->compressed_size &&
		    rd(d + sig + 4 + width, width) == e->size) {
			*length = len;
			return TI_OK;
		}
	}
	int width = wide ? 8 : 4;
	*length = sig + 4 + 2 * (size_t)width;
	if (*length > n) {
		*length = n;
		say(w, e->name, at, "local header's data descriptor at offset %" PRIu64 " runs past the end of the file", at);
		return TI_OK;
	}
	say(w, e->name, at,
	    "local header's data descriptor at offset %" PRIu64 " disagrees with the central directory: crc 0x%08" PRIx64
	    ", sizes %" PRIu64 " and %" PRIu64 " against 0x%08" PRIx32 ", %" PRIu64 " and %" PRIu64,
	    at, rd(d + sig, 4), rd(d + sig + 4, width), rd(d + sig + 4 + width, width), e->crc, e->compressed_size,
	    e->size);
	return TI_OK;
}

/* A local header field against its central twin. */
typedef struct local_field {
	const char *what;
	uint64_t local, central;
	bool deferred; /* bit 3 lets the local header leave it zero */
	int hex_digits; /* 0: decimal */
} local_field;

/*
 * Visits entry i's local header: a reader that streams the file (unzip -,
 * Java's ZipInputStream) believes it rather than the central directory, so
 * every field that differs is a way to show two readers two files. Records
 * where the entry's bytes lie, for check_layout().
 */
static ti_status check_local(walk *w, size_t i)
{
	const ti_pickle_source *src = w->src;
	zw_archive *a = w->a;
	zw_entry *e = &a->entries[i];
	uint64_t at = e->local_offset;
	if (at >= a->cd_offset)
		say(w, e->name, at, "local header at offset %" PRIu64 " lies inside or after the central directory (offset %" PRIu64 ")",
		    at, a->cd_offset);
	uint8_t h[LOCAL_SIZE];
	if (!within(src, at, LOCAL_SIZE)) {
		say(w, e->name, at, "no local header: offset %" PRIu64 " lies past the end of the file", at);
		return TI_OK;
	}
	if (read_at(src, at, h, sizeof(h), w->err))
		return w->err->code;
	if (memcmp(h, "PK\3\4", 4)) {
		say(w, e->name, at, "no local header signature at offset %" PRIu64, at);
		return TI_OK;
	}
	uint16_t flags = (uint16_t)rd(h + 6, 2);
	size_t nlen = (size_t)rd(h + 26, 2), xlen = (size_t)rd(h + 28, 2);
	e->data_offset = at + LOCAL_SIZE + nlen + xlen;
	span *s = &w->spans[w->span_count++];
	*s = (span){at, min64(e->data_offset, src->size), i};
	if (!within(src, at + LOCAL_SIZE, nlen + xlen)) {
		say(w, e->name, at, "local header's name and extra field run past the end of the file");
		return TI_OK;
	}
	if (read_at(src, at + LOCAL_SIZE, w->scratch, nlen + xlen, w->err))
		return w->err->code;
	if (nlen != e->name_length || memcmp(w->scratch, e->name, nlen))
		say(w, e->name, at, "local header says name '%s', the central directory '%s'", show(w->scratch, nlen).s,
		    show((const uint8_t *)e->name, e->name_length).s);

	uint64_t size = rd(h + 22, 4), csize = rd(h + 18, 4);
	uint64_t *const sizes[] = {size == SATURATED32 ? &size : NULL, csize == SATURATED32 ? &csize : NULL};
	bool zip64 = (sizes[0] || sizes[1]) && zip64_extra(w->scratch + nlen, xlen, sizes, 2);
	if ((sizes[0] || sizes[1]) && !zip64)
		say(w, e->name, at, "local header has saturated sizes and no ZIP64 extra field to resolve them");
	bool deferred = flags & FLAG_DESCRIPTOR;
	const local_field fields[] = {
		{"method", rd(h + 8, 2), e->method, false, 0},
		{"flags", flags, e->flags, false, 4},
		{"crc", rd(h + 14, 4), e->crc, true, 8},
		{"compressed size", csize, e->compressed_size, true, 0},
		{"size", size, e->size, true, 0},
	};
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
		const local_field *f = &fields[k];
		if (f->local == f->central || (f->deferred && deferred && f->local == 0))
			continue;
		if (f->hex_digits)
			say(w, e->name, at, "local header says %s 0x%0*" PRIx64 ", the central directory 0x%0*" PRIx64, f->what,
			    f->hex_digits, f->local, f->hex_digits, f->central);
		else
			say(w, e->name, at, "local header says %s %" PRIu64 ", the central directory %" PRIu64, f->what,
			    f->local, f->central);
	}

	if (!within(src, e->data_offset, e->compressed_size)) {
		say(w, e->name, e->data_offset,
		    "local header's data of %" PRIu64 " bytes at offset %" PRIu64 " runs past the end of the file",
		    e->compressed_size, e->data_offset);
		s->end = src->size;
		return TI_OK;
	}
	uint64_t end = e->data_offset + e->compressed_size;
	e->readable = fields[0].local == e->method;
	if (deferred) {
		uint64_t length = 0;
		bool wide = zip64 || e->size >= SATURATED32 || e->compressed_size >= SATURATED32;
		if (check_descriptor(w, e, end, wide, &length))
			return w->err->code;
		end += length;
	}
	s->end = end;
	if (at < a->cd_offset && end > a->cd_offset)
		say(w, e->name, at,
		    "data runs into the central directory: it ends at offset %" PRIu64
		    ", after the central directory begins at offset %" PRIu64, end, a->cd_offset);
	return TI_OK;
}

/* ---- what lies between the records ---- */

static int by_start(const void *x, const void *y)
{
	const span *a = x, *b = y;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->entry < b->entry ? -1 : a->entry > b->entry;
}

/* Reports a local header found in bytes no entry covers: a record a streaming reader would extract. */
static ti_status report_hidden_header(walk *w, uint64_t at)
{
	uint8_t h[LOCAL_SIZE + 64];
	if (!within(w->src, at, LOCAL_SIZE)) {
		say(w, NULL, at, "hidden local header not in the central directory at offset %" PRIu64, at);
		return TI_OK;
	}
	size_t nlen = 0;
	if (read_at(w->src, at, h, LOCAL_SIZE, w->err))
		return w->err->code;
	nlen = (size_t)rd(h + 26, 2);
	size_t shown_len = nlen < 64 ? nlen : 64;
	if (!within(w->src, at + LOCAL_SIZE, shown_len)) {
		say(w, NULL, at, "hidden local header not in the central directory at offset %" PRIu64, at);
		return TI_OK;
	}
	if (read_at(w->src, at + LOCAL_SIZE, h + LOCAL_SIZE, shown_len, w->err))
		return w->err->code;
	shown name = show(h + LOCAL_SIZE, shown_len);
	say(w, NULL, at, "hidden local header not in the central directory at offset %" PRIu64 ", for '%s%s'", at, name.s,
	    nlen > shown_len ? "..." : "");
	return TI_OK;
}

/* Reports bytes [from, to) that no entry covers, and each local header signature in them. */
/* Every local header signature in [from, to): a record only a streaming reader would find. */
static ti_status find_hidden_headers(walk *w, uint64_t from, uint64_t to)
{
	size_t found = 0;
	for (uint64_t pos = from; pos < to;) {
		uint64_t step = min64(GAP_CHUNK, to - pos);
		/* Three bytes more, for a signature that starts in this piece and ends in the next. */
		size_t n = (size_t)min64(step + 3, w->src->size - pos);
		uint8_t *buf = w->scratch;
		if (read_at(w->src, pos, buf, n, w->err))
			return w->err->code;
		for (size_t i = 0; i + 4 <= n && i < step; i++) {
			if (buf[i] != 'P' || memcmp(buf + i, "PK\3\4", 4))
				continue;
			if (++found <= REPEAT_MAX) {
				/* report_hidden_header reads into its own buffer: the scratch buffer holds this piece. */
				if (report_hidden_header(w, pos + i))
					return w->err->code;
			}
		}
		pos += step;
	}
	if (found > REPEAT_MAX)
		say(w, NULL, from, "%zu more hidden local headers in the bytes at offset %" PRIu64, found - REPEAT_MAX, from);
	return TI_OK;
}

static ti_status report_gap(walk *w, uint64_t from, uint64_t to)
{
	if (from == 0)
		say(w, NULL, 0, "%" PRIu64 " hidden bytes before the first record (prepended data)", to);
	else
		say(w, NULL, from, "%" PRIu64 " hidden bytes at offset %" PRIu64 " that no entry covers", to - from, from);
	return find_hidden_headers(w, from, to);
}

/*
 * Lays the entries along the file, in order of their local headers: an
 * entry that starts before the previous ones end overlaps them (two names
 * for one payload, or the quines of zip bombs), and bytes before the
 * directory that no entry covers are hidden (data a scanner never reads,
 * or whole records that only a streaming reader finds).
 */
static ti_status check_layout(walk *w)
{
	zw_archive *a = w->a;
	qsort(w->spans, w->span_count, sizeof(*w->spans), by_start);
	uint64_t covered = 0;
	size_t owner = SIZE_MAX;
	for (size_t k = 0; k < w->span_count; k++) {
		const span *s = &w->spans[k];
		if (s->start < covered) {
			const zw_entry *o = &a->entries[owner];
			say(w, a->entries[s->entry].name, s->start,
			    "overlap: bytes %" PRIu64 " to %" PRIu64 " overlap those of '%s' (from offset %" PRIu64 ")",
			    s->start, s->end, show((const uint8_t *)o->name, o->name_length).s, o->local_offset);
		} else if (s->start > covered && covered < a->cd_offset) {
			if (report_gap(w, covered, min64(s->start, a->cd_offset)))
				return w->err->code;
		}
		if (s->end > covered)
			covered = s->end, owner = s->entry;
	}
	if (covered < a->cd_offset && report_gap(w, covered, a->cd_offset))
		return w->err->code;
	return TI_OK;
}

/*
 * Every other end record signature in the file's tail: a reader that takes
 * another one (the first, or the last even without room for a record)
 * sees another archive. Those inside the chosen directory or inside an
 * entry's bytes are not records: an archive stored in an entry (a nested
 * checkpoint) has its own. Needs the spans sorted by start.
 */
static void check_other_end_records(walk *w)
{
	const zw_archive *a = w->a;
	size_t others = 0, k = 0;
	uint64_t first = 0, reach = 0; /* the furthest end of the spans that start at or before a position */
	for (size_t i = 0; i + 4 <= w->tail_len; i++) {
		uint64_t at = w->tail_at + i;
		if (w->tail[i] != 'P' || memcmp(w->tail + i, "PK\5\6", 4))
			continue;
		for (; k < w->span_count && w->spans[k].start <= at; k++)
			reach = w->spans[k].end > reach ? w->spans[k].end : reach;
		bool in_directory = at >= a->cd_offset && at - a->cd_offset < a->cd_size;
		bool chosen = at >= a->eocd_offset && at - a->eocd_offset < EOCD_SIZE;
		if (in_directory || chosen || reach > at)
			continue;
		if (++others <= REPEAT_MAX)
			say(w, NULL, at, "second end-of-central-directory signature at offset %" PRIu64
			    ": a reader that takes it sees another archive", at);
		else if (others == REPEAT_MAX + 1)
			first = at;
	}
	if (others > REPEAT_MAX)
		say(w, NULL, first, "second end-of-central-directory signature: %zu more from offset %" PRIu64,
		    others - REPEAT_MAX, first);
}

/* ---- the walk ---- */

ti_status zw_walk(const ti_pickle_source *src, size_t entries_max, zw_report_fn report, void *ctx, zw_archive *out,
                  ti_error *err)
{
	return zw_walk_some(src, entries_max, NULL, report, ctx, out, err);
}

ti_status zw_walk_some(const ti_pickle_source *src, size_t entries_max, bool (*visit)(const char *name),
                       zw_report_fn report, void *ctx, zw_archive *out, ti_error *err)
{
	memset(out, 0, sizeof(*out));
	walk w = {.src = src, .report = report, .ctx = ctx, .err = err, .a = out};
	ti_status s = TI_OK;
	w.scratch = malloc(SCRATCH_SIZE);
	if (!w.scratch) {
		s = TI_FAIL(err, TI_E_NOMEM, "out of memory walking the zip archive");
		goto done;
	}
	if ((s = find_end_record(&w)) || (s = read_end_records(&w)))
		goto done;
	if (w.declared > entries_max) {
		s = TI_FAIL(err, TI_E_LIMIT, "zip archive declares %" PRIu64 " entries, more than the %zu allowed", w.declared,
		            entries_max);
		goto done;
	}
	if ((s = check_end_region(&w)) || (s = walk_directory(&w, entries_max)) || (s = check_duplicates(&w)))
		goto done;
	w.spans = malloc((out->count ? out->count : 1) * sizeof(*w.spans));
	if (!w.spans) {
		s = TI_FAIL(err, TI_E_NOMEM, "out of memory walking the zip archive");
		goto done;
	}
	for (size_t i = 0; i < out->count; i++) {
		if (visit && !visit(out->entries[i].name)) {
			out->unvisited++;
			continue;
		}
		if ((s = check_local(&w, i)))
			goto done;
	}
	if (visit)
		goto done;
	if ((s = check_layout(&w)))
		goto done;
	check_other_end_records(&w);
done:
	free(w.scratch);
	free(w.tail);
	free(w.spans);
	if (s)
		zw_free(out);
	return s;
}

void zw_free(zw_archive *a)
{
	if (!a)
		return;
	free(a->entries);
	free(a->names);
	memset(a, 0, sizeof(*a));
}

/* ---- reading an entry ---- */

static void put(uint8_t **p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

/* Maps libzip's failure to ours: a CRC error is the one callers look for. */
static ti_status inflate_failed(zip_error_t *ze, const zw_entry *e, ti_error *err)
{
	if (zip_error_code_zip(ze) == ZIP_ER_CRC)
		return TI_FAIL(err, TI_E_CORRUPT, "CRC mismatch: the entry's bytes do not have the CRC-32 0x%08" PRIx32
		               " that the central directory gives", e->crc);
	return TI_FAIL(err, TI_E_CORRUPT, "cannot inflate the entry: %s", zip_error_strerror(ze));
}

/*
 * libzip inflates, from a clean one-entry archive that we lay out around
 * the raw deflate stream: a local header, the compressed bytes, a central
 * entry and an end record, all from the central values. It has nothing to
 * disagree about, whatever the walked archive holds around the entry.
 */
static ti_status read_deflated(const ti_pickle_source *src, const zw_entry *e, uint8_t *out, ti_error *err)
{
	/* Without ZIP64 records of our own, sizes stop short of 4 GiB; a pickle that large is no checkpoint's. */
	if (e->size >= SATURATED32 || e->compressed_size >= SATURATED32 - 2 * (LOCAL_SIZE + CENTRAL_SIZE + EOCD_SIZE))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "deflated entries of 4 GiB or more are not supported");
	/*
	 * The copy of the compressed bytes is bounded by the size we accept: an
	 * encoder that used fixed Huffman codes on random bytes spends 9 bits a
	 * byte, and block headers a few bytes more; beyond that a stream only pads.
	 */
	if (e->compressed_size > e->size + e->size / 8 + 1024)
		return TI_FAIL(err, TI_E_CORRUPT, "deflated entry of %" PRIu64 " bytes cannot take %" PRIu64 " compressed bytes",
		               e->size, e->compressed_size);
	size_t csize = (size_t)e->compressed_size, total = LOCAL_SIZE + 1 + csize + CENTRAL_SIZE + 1 + EOCD_SIZE;
	uint8_t *zipped = malloc(total);
	if (!zipped)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory inflating an entry of %" PRIu64 " bytes", e->size);
	uint8_t *p = zipped;
	/* Version 2.0, no flags, deflated, 1980-01-01 00:00, a one-letter name. */
	put(&p, 0x04034b50, 4); put(&p, 20, 2); put(&p, 0, 2); put(&p, 8, 2); put(&p, 0, 2); put(&p, 0x21, 2);
	put(&p, e->crc, 4); put(&p, csize, 4); put(&p, e->size, 4); put(&p, 1, 2); put(&p, 0, 2);
	*p++ = 'x';
	if (read_at(src, e->data_offset, p, csize, err)) {
		free(zipped);
		return err->code;
	}
	p += csize;
	put(&p, 0x02014b50, 4); put(&p, 20, 2); put(&p, 20, 2); put(&p, 0, 2); put(&p, 8, 2); put(&p, 0, 2);
	put(&p, 0x21, 2); put(&p, e->crc, 4); put(&p, csize, 4); put(&p, e->size, 4); put(&p, 1, 2); put(&p, 0, 2);
	put(&p, 0, 2); put(&p, 0, 2); put(&p, 0, 2); put(&p, 0, 4); put(&p, 0, 4);
	*p++ = 'x';
	put(&p, 0x06054b50, 4); put(&p, 0, 2); put(&p, 0, 2); put(&p, 1, 2); put(&p, 1, 2);
	put(&p, CENTRAL_SIZE + 1, 4); put(&p, LOCAL_SIZE + 1 + csize, 4); put(&p, 0, 2);

	ti_status s = TI_OK;
	zip_error_t ze;
	zip_error_init(&ze);
	zip_t *za = NULL;
	zip_file_t *f = NULL;
	zip_source_t *source = zip_source_buffer_create(zipped, total, 0, &ze);
	if (!source) {
		s = TI_FAIL(err, TI_E_NOMEM, "cannot inflate the entry: %s", zip_error_strerror(&ze));
		goto done;
	}
	za = zip_open_from_source(source, ZIP_RDONLY, &ze);
	if (!za) {
		zip_source_free(source);
		s = inflate_failed(&ze, e, err);
		goto done;
	}
	f = zip_fopen_index(za, 0, 0);
	if (!f) {
		s = inflate_failed(zip_get_error(za), e, err);
		goto done;
	}
	uint64_t got = 0;
	while (got < e->size) {
		zip_int64_t n = zip_fread(f, out + got, e->size - got);
		if (n < 0) {
			s = inflate_failed(zip_file_get_error(f), e, err);
			goto done;
		}
		if (n == 0)
			break;
		got += (uint64_t)n;
	}
	if (got < e->size) {
		s = TI_FAIL(err, TI_E_CORRUPT, "entry inflates to %" PRIu64 " bytes, fewer than the %" PRIu64 " declared",
		            got, e->size);
		goto done;
	}
	/* One byte more must be the end: the declared size is all we make room for. */
	uint8_t more;
	zip_int64_t n = zip_fread(f, &more, 1);
	if (n > 0)
		s = TI_FAIL(err, TI_E_CORRUPT, "entry inflates to more than the %" PRIu64 " bytes declared", e->size);
	else if (n < 0)
		s = inflate_failed(zip_file_get_error(f), e, err);
done:
	if (f)
		zip_fclose(f);
	if (za)
		zip_discard(za);
	zip_error_fini(&ze);
	free(zipped);
	return s;
}

static ti_status read_entry(const ti_pickle_source *src, const zw_entry *e, size_t max, uint8_t **data, size_t *size,
                            ti_error *err)
{
	if (!e->readable)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "entry's local header at offset %" PRIu64 " is missing or disagrees with the central directory",
		               e->local_offset);
	if (e->size > max || e->size >= SIZE_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "entry of %" PRIu64 " bytes exceeds the %zu-byte limit", e->size, max);
	if (!within(src, e->data_offset, e->compressed_size))
		return TI_FAIL(err, TI_E_CORRUPT, "entry's %" PRIu64 " bytes at offset %" PRIu64 " run past the end of the file",
		               e->compressed_size, e->data_offset);
	if (e->method != 0 && e->method != 8)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "compression method %u is not supported", e->method);
	if (e->method == 0 && e->compressed_size != e->size)
		return TI_FAIL(err, TI_E_CORRUPT, "stored entry's sizes disagree (%" PRIu64 " and %" PRIu64 ")",
		               e->compressed_size, e->size);
	uint8_t *buf = malloc((size_t)e->size + 1);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading an entry of %" PRIu64 " bytes", e->size);
	ti_status s = e->method == 0 ? read_at(src, e->data_offset, buf, (size_t)e->size, err)
	                             : read_deflated(src, e, buf, err);
	if (!s) {
		uint32_t crc = ti_crc32(0, buf, (size_t)e->size);
		if (crc != e->crc)
			s = TI_FAIL(err, TI_E_CORRUPT, "CRC mismatch: the entry's bytes have CRC-32 0x%08" PRIx32
			            ", the central directory says 0x%08" PRIx32, crc, e->crc);
	}
	if (s) {
		free(buf);
		return s;
	}
	buf[e->size] = '\0';
	*data = buf;
	*size = (size_t)e->size;
	return TI_OK;
}

ti_status zw_read(const ti_pickle_source *src, const zw_archive *a, size_t i, size_t max, uint8_t **data,
                  size_t *size, ti_error *err)
{
	if (i >= a->count)
		return TI_FAIL(err, TI_E_INVALID, "no zip entry %zu", i);
	const zw_entry *e = &a->entries[i];
	ti_status s = read_entry(src, e, max, data, size, err);
	if (s)
		ti_error_at(err, e->name, -1);
	return s;
}
