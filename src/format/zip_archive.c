/*
 * zip_archive.c - records of a zip checkpoint.
 *
 * We read the central directory ourselves (PKWARE APPNOTE.TXT 4.3.12-4.3.16,
 * with the ZIP64 end record and extras that torch always writes): one read of
 * the end records, the directory in windows of 64 KiB, and the names' hashes. libzip's
 * zip_open does the same work plus a time conversion and allocations per
 * entry, which for a 20,000-tensor checkpoint cost more than reading
 * data.pkl itself; inspection must stay near that floor. So the records are
 * one array, their names one buffer, and the index by name the names' hashes
 * sorted (strsort.h), which also finds a name given twice.
 *
 * Stored records (torch.save writes nothing else) are read with pread from
 * the payload offset their local header gives: it differs from the central
 * directory's idea because of torch's 'FB' padding extra field. Compressed
 * records are read through libzip, opened on first need: this file and
 * format/zip_walk.c (which inflates for the scanner) are the only ones that
 * include <zip.h>.
 */
#include "format/zip_archive.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "util/strsort.h"

struct ti_zip {
	ti_io *io;
	char *path;
	uint64_t file_size;
	uint8_t *window;         /* a piece of the central directory, while it is read */
	size_t window_cap;
	uint64_t window_at, window_len; /* which piece: directory offset and length */
	ti_record *records;
	uint64_t *local_offsets; /* of each record's local header */
	char *names;             /* every name, NUL-terminated, one after another */
	size_t count;
	ti_strsort by_name;      /* made once the directory is read */
	zip_t *za; /* libzip, for compressed records only */
	ti_arena *arena;         /* where records, offsets and names live; NULL: malloc'd, freed by close */
};

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static ti_status read_at(ti_zip *zip, uint64_t off, void *buf, size_t n, ti_error *err)
{
	if (off > zip->file_size || n > zip->file_size - off)
		return TI_FAIL(err, TI_E_CORRUPT, "zip structure points past the end of the file (offset %" PRIu64 ")", off);
	size_t got;
	ti_status st = ti_io_read(zip->io, off, buf, n, &got, err);
	if (!st && got < n)
		return TI_FAIL(err, TI_E_CORRUPT, "file is shorter than its zip directory says");
	return st;
}

#define CORRUPT(err, ...) TI_FAIL((err), TI_E_CORRUPT, __VA_ARGS__)

static const char *record_name(const void *ctx, uint32_t index)
{
	const ti_zip *zip = ctx;
	return zip->records[index].name;
}

static void earliest_repeat(void *ctx, uint32_t first, uint32_t later)
{
	(void)first;
	uint32_t *earliest = ctx;
	if (later < *earliest)
		*earliest = later;
}

/*
 * Indexes the names of the records read so far, by the hashes made as each
 * was read when given (else from the names); two records with one name make
 * the archive ambiguous: refuse.
 */
static ti_status index_names(ti_zip *zip, const uint32_t *hashes, ti_error *err)
{
	if (hashes ? ti_strsort_build_hashed(&zip->by_name, zip->count, hashes, record_name, zip)
	           : ti_strsort_build(&zip->by_name, zip->count, record_name, zip))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	uint32_t repeat = UINT32_MAX;
	if (ti_strsort_repeats(&zip->by_name, earliest_repeat, &repeat)) {
		TI_FAIL(err, TI_E_CORRUPT, "duplicate record");
		ti_error_at(err, zip->records[repeat].name, -1);
		return TI_E_CORRUPT;
	}
	return TI_OK;
}

/* Finds the central directory: the end record, and the ZIP64 one when a field saturates. */
static ti_status find_directory(ti_zip *zip, uint64_t *cd_off, uint64_t *cd_size, uint64_t *entries, ti_error *err)
{
	/* The end record is 22 bytes plus a comment of at most 65535. */
	size_t tail = zip->file_size < 22 + 65535 ? (size_t)zip->file_size : 22 + 65535;
	if (tail < 22)
		return CORRUPT(err, "not a readable zip archive (too short for an end of central directory)");
	uint8_t *buf = malloc(tail);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	if (read_at(zip, zip->file_size - tail, buf, tail, err)) {
		free(buf);
		return err->code;
	}
	size_t eocd = tail;
	for (size_t i = tail - 22 + 1; i-- > 0;)
		if (buf[i] == 'P' && !memcmp(buf + i, "PK\5\6", 4)) {
			eocd = i;
			break;
		}
	if (eocd == tail) {
		free(buf);
		return CORRUPT(err, "not a readable zip archive (no end of central directory: truncated or damaged)");
	}
	uint64_t eocd_pos = zip->file_size - tail + eocd;
	uint64_t disk = rd(buf + eocd + 4, 2), cd_disk = rd(buf + eocd + 6, 2);
	*entries = rd(buf + eocd + 10, 2);
	*cd_size = rd(buf + eocd + 12, 4);
	*cd_off = rd(buf + eocd + 16, 4);
	free(buf);
	if (*entries == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
		uint8_t loc[20], rec[56];
		if (eocd_pos < 20 || read_at(zip, eocd_pos - 20, loc, 20, err) || memcmp(loc, "PK\6\7", 4))
			return CORRUPT(err, "zip64 end locator missing");
		if (read_at(zip, rd(loc + 8, 8), rec, 56, err) || memcmp(rec, "PK\6\6", 4))
			return CORRUPT(err, "zip64 end record missing");
		disk = rd(rec + 16, 4);
		cd_disk = rd(rec + 20, 4);
		*entries = rd(rec + 32, 8);
		*cd_size = rd(rec + 40, 8);
		*cd_off = rd(rec + 48, 8);
	}
	if (disk != 0 || cd_disk != 0)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "multi-disk zip archives are not supported");
	if (*cd_off > eocd_pos || *cd_size > eocd_pos - *cd_off)
		return CORRUPT(err, "zip central directory lies outside the file");
	return TI_OK;
}

/*
 * 64 KiB: under glibc's 128 KiB mmap threshold, so that freeing the window
 * does not raise the threshold past the arena's blocks, which then come from
 * the heap and are cleared by calloc rather than mapped fresh. An entry of
 * up to 46 + 3 * 65535 bytes (APPNOTE 4.3.12) grows the window to fit.
 */
enum { DIR_WINDOW = 64 * 1024 };

/* The n bytes at pos in the directory (cd_size bytes at cd_off), read into the window when they are not in it. */
static ti_status directory_at(ti_zip *zip, uint64_t cd_off, uint64_t cd_size, size_t pos, size_t n,
                              const uint8_t **p, ti_error *err)
{
	if (pos < zip->window_at || pos + n > zip->window_at + zip->window_len) {
		uint64_t len = cd_size - pos < DIR_WINDOW ? cd_size - pos : DIR_WINDOW;
		if (len < n)
			len = n;
		if (len > zip->window_cap) {
			uint8_t *w = realloc(zip->window, (size_t)len);
			if (!w)
				return TI_FAIL(err, TI_E_NOMEM, "out of memory reading the zip directory");
			zip->window = w;
			zip->window_cap = (size_t)len;
		}
		if (read_at(zip, cd_off + pos, zip->window, (size_t)len, err))
			return err->code;
		zip->window_at = pos;
		zip->window_len = len;
	}
	*p = zip->window + (pos - zip->window_at);
	return TI_OK;
}

/* Reads the ZIP64 extra (id 1): the saturated fields, in order size, compressed size, offset. */
static ti_status zip64_extra(const uint8_t *x, size_t xlen, ti_record *r, uint64_t *local_offset,
                             bool want_size, bool want_csize, bool want_offset, ti_error *err)
{
	const uint8_t *end = x + xlen;
	while (end - x >= 4) {
		size_t id = rd(x, 2), len = rd(x + 2, 2);
		if ((size_t)(end - x - 4) < len)
			break;
		if (id == 1) {
			const uint8_t *p = x + 4, *q = p + len;
			if (want_size && q - p >= 8)
				r->size = rd(p, 8), p += 8;
			if (want_csize && q - p >= 8)
				r->compressed_size = rd(p, 8), p += 8;
			if (want_offset && q - p >= 8)
				*local_offset = rd(p, 8), p += 8;
			return TI_OK;
		}
		x += 4 + len;
	}
	return CORRUPT(err, "zip record needs a zip64 extra field and has none");
}

ti_status ti_zip_open(const char *path, size_t records_max, ti_arena *arena, ti_zip **out, ti_error *err)
{
	ti_io *io;
	ti_status st = ti_io_open(path, &io, err);
	if (st)
		return st;
	st = ti_zip_open_io(io, records_max, arena, out, err);
	ti_io_close(io);
	return st;
}

ti_status ti_zip_open_io(ti_io *io, size_t records_max, ti_arena *arena, ti_zip **out, ti_error *err)
{
	ti_zip *zip = calloc(1, sizeof(*zip));
	if (!zip || !(zip->path = strdup(io->name))) {
		free(zip);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory opening the archive");
	}
	zip->arena = arena;
	zip->io = ti_io_ref(io);
	zip->file_size = io->size;
	uint64_t cd_off = 0, cd_size = 0, entries = 0;
	uint32_t *hashes = NULL; /* each name's hash, made while its bytes are in the cache: the index reads no name again */
	if (find_directory(zip, &cd_off, &cd_size, &entries, err))
		goto fail;
	if (entries > records_max) {
		TI_FAIL(err, TI_E_LIMIT, "archive has %" PRIu64 " records, more than the %zu allowed", entries, records_max);
		goto fail;
	}
	/* Each central entry takes at least 46 bytes, so the count cannot outgrow the directory. */
	if (entries > cd_size / 46) {
		TI_FAIL(err, TI_E_CORRUPT, "zip directory of %" PRIu64 " bytes cannot hold %" PRIu64 " records", cd_size, entries);
		goto fail;
	}
	/*
	 * Names lie inside the directory, so they fit in its size plus a NUL each.
	 * (Not "beyond the declared entries' headers": a directory that declares
	 * more entries than it holds lets the first names use those bytes.)
	 */
	size_t names_max = (size_t)(cd_size + entries + 1), slots = entries ? (size_t)entries : 1;
	ti_io_hint(io, cd_off, cd_size); /* read in windows of 64 KiB: a URL's asks for it whole */
	zip->window_cap = cd_size < DIR_WINDOW ? (size_t)cd_size + 1 : DIR_WINDOW;
	zip->window = malloc(zip->window_cap);
	hashes = malloc(slots * sizeof(*hashes)); /* without it (no memory), the index hashes the names itself */
	if (arena) {
		/*
		 * In the checkpoint's arena, which a directory of 20,000 records
		 * (its records, offsets and names, 1.3 MB) sends to huge blocks:
		 * there they take a few page faults where malloc's fresh pages
		 * took 320. A name is copied as it is read, each in its own piece.
		 */
		ti_arena_expect(arena, slots * (sizeof(*zip->records) + sizeof(*zip->local_offsets)) + (size_t)cd_size);
		zip->records = ti_arena_calloc(arena, slots, sizeof(*zip->records));
		zip->local_offsets = ti_arena_calloc(arena, slots, sizeof(*zip->local_offsets));
	} else {
		zip->records = calloc(slots, sizeof(*zip->records));
		zip->local_offsets = calloc(slots, sizeof(*zip->local_offsets));
		zip->names = malloc(names_max);
	}
	if (!zip->window || !zip->records || !zip->local_offsets || (!arena && !zip->names)) {
		TI_FAIL(err, TI_E_NOMEM, "out of memory reading the zip directory");
		goto fail;
	}
	size_t pos = 0, names_used = 0;
	for (size_t i = 0; i < entries; i++) {
		const uint8_t *h = NULL;
		if (pos + 46 <= cd_size && directory_at(zip, cd_off, cd_size, pos, 46, &h, err))
			goto fail;
		if (pos + 46 > cd_size || memcmp(h, "PK\1\2", 4)) {
			TI_FAIL(err, TI_E_CORRUPT, "zip central directory entry %zu is damaged", i);
			goto bad_entry;
		}
		size_t nlen = rd(h + 28, 2), xlen = rd(h + 30, 2), clen = rd(h + 32, 2);
		if (pos + 46 + nlen + xlen + clen > cd_size) {
			TI_FAIL(err, TI_E_CORRUPT, "zip central directory entry %zu runs past the directory", i);
			goto bad_entry;
		}
		if (directory_at(zip, cd_off, cd_size, pos, 46 + nlen + xlen + clen, &h, err))
			goto fail;
		ti_record *r = &zip->records[i];
		/* Names are not NUL-terminated in the directory: keep a terminated copy. */
		if (nlen + 1 > names_max - names_used) {
			TI_FAIL(err, TI_E_CORRUPT, "zip central directory entry %zu: names exceed the directory", i);
			goto bad_entry;
		}
		char *name = arena ? ti_arena_alloc(arena, nlen + 1) : zip->names + names_used;
		if (!name) {
			TI_FAIL(err, TI_E_NOMEM, "out of memory reading the zip directory");
			goto fail;
		}
		memcpy(name, h + 46, nlen);
		name[nlen] = '\0';
		names_used += nlen + 1;
		r->name = name;
		r->index = (int64_t)i;
		if (hashes)
			hashes[i] = ti_strsort_hash_n(name, nlen);
		if (memchr(name, '\0', nlen)) {
			TI_FAIL(err, TI_E_CORRUPT, "zip record %zu has a NUL byte in its name", i);
			goto bad_entry;
		}
		r->method = (int)rd(h + 10, 2);
		r->compressed_size = rd(h + 20, 4);
		r->size = rd(h + 24, 4);
		uint64_t *local = &zip->local_offsets[i];
		*local = rd(h + 42, 4);
		bool s = r->size == 0xffffffffu, c = r->compressed_size == 0xffffffffu, o = *local == 0xffffffffu;
		if ((s || c || o) && zip64_extra(h + 46 + nlen, xlen, r, local, s, c, o, err))
			goto bad_entry;
		if (rd(h + 8, 2) & 1) {
			TI_FAIL(err, TI_E_UNSUPPORTED, "encrypted zip records are not supported");
			ti_error_at(err, r->name, -1);
			goto bad_entry;
		}
		zip->count = i + 1;
		pos += 46 + nlen + xlen + clen;
	}
	free(zip->window);
	zip->window = NULL;
	if (index_names(zip, hashes, err))
		goto fail;
	free(hashes);
	*out = zip;
	return TI_OK;
bad_entry:
	/* A name given twice before the damaged entry was the first fault. */
	if (zip->count) {
		ti_error damage = *err;
		if (index_names(zip, hashes, err) != TI_E_CORRUPT)
			*err = damage;
	}
fail:
	free(hashes);
	ti_zip_close(zip);
	return err->code;
}

void ti_zip_close(ti_zip *zip)
{
	if (!zip)
		return;
	if (zip->za)
		zip_discard(zip->za);
	ti_io_close(zip->io);
	if (!zip->arena) {
		free(zip->records);
		free(zip->local_offsets);
		free(zip->names);
	}
	free(zip->window);
	ti_strsort_release(&zip->by_name);
	free(zip->path);
	free(zip);
}

size_t ti_zip_count(const ti_zip *zip) { return zip->count; }
const ti_record *ti_zip_records(const ti_zip *zip) { return zip->records; }
int64_t ti_zip_find(ti_zip *zip, const char *name) { return ti_strsort_find(&zip->by_name, name); }

uint64_t ti_zip_local_offset(const ti_zip *zip, size_t index)
{
	return index < zip->count ? zip->local_offsets[index] : UINT64_MAX;
}

ti_status ti_zip_payload_offset(ti_zip *zip, size_t index, uint64_t *offset, ti_error *err)
{
	if (index >= zip->count)
		return TI_FAIL(err, TI_E_INVALID, "no record %zu", index);
	const ti_record *r = &zip->records[index];
	uint64_t local = zip->local_offsets[index];
	uint8_t h[30];
	if (read_at(zip, local, h, sizeof(h), err) || memcmp(h, "PK\3\4", 4)) {
		TI_FAIL(err, TI_E_CORRUPT, "no local header at offset %" PRIu64, local);
		ti_error_at(err, r->name, -1);
		return TI_E_CORRUPT;
	}
	*offset = local + 30 + rd(h + 26, 2) + rd(h + 28, 2);
	if (*offset > zip->file_size || r->compressed_size > zip->file_size - *offset) {
		TI_FAIL(err, TI_E_CORRUPT, "payload of %" PRIu64 " bytes at offset %" PRIu64 " runs past the end of the file",
		        r->compressed_size, *offset);
		ti_error_at(err, r->name, -1);
		return TI_E_CORRUPT;
	}
	return TI_OK;
}

/* Compressed records: libzip inflates them. */
static ti_status read_compressed(ti_zip *zip, size_t index, uint8_t *buf, uint64_t size, ti_error *err)
{
	if (!zip->za && zip->io->remote)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a compressed record is not read from a URL (download the file)");
	if (!zip->za) {
		int code = 0;
		zip->za = zip_open(zip->path, ZIP_RDONLY, &code);
		if (!zip->za) {
			zip_error_t ze;
			zip_error_init_with_code(&ze, code);
			TI_FAIL(err, TI_E_CORRUPT, "cannot open the archive to inflate a record: %s", zip_error_strerror(&ze));
			zip_error_fini(&ze);
			return TI_E_CORRUPT;
		}
	}
	zip_file_t *f = zip_fopen_index(zip->za, index, 0);
	if (!f)
		return TI_FAIL(err, TI_E_CORRUPT, "cannot open record: %s", zip_strerror(zip->za));
	zip_int64_t got = zip_fread(f, buf, size);
	ti_status s = TI_OK;
	if (got < 0)
		s = TI_FAIL(err, TI_E_CORRUPT, "cannot inflate record: %s", zip_file_strerror(f));
	else if ((uint64_t)got != size)
		s = TI_FAIL(err, TI_E_CORRUPT, "record is truncated: %" PRId64 " of %" PRIu64 " bytes", (int64_t)got, size);
	zip_fclose(f);
	return s;
}

/* The checks every read makes first. */
static ti_status check_size(ti_zip *zip, size_t index, size_t max, ti_error *err)
{
	if (index >= zip->count)
		return TI_FAIL(err, TI_E_INVALID, "no record %zu", index);
	const ti_record *r = &zip->records[index];
	if (r->size > max)
		return TI_FAIL(err, TI_E_LIMIT, "record of %" PRIu64 " bytes exceeds the %zu-byte limit", r->size, max);
	if (r->method == 0 && r->compressed_size != r->size)
		return TI_FAIL(err, TI_E_CORRUPT, "stored record's sizes disagree (%" PRIu64 " and %" PRIu64 ")", r->size, r->compressed_size);
	return TI_OK;
}

ti_status ti_zip_stored_range(ti_zip *zip, size_t index, size_t max, uint64_t *offset, ti_error *err)
{
	if (check_size(zip, index, max, err))
		return err->code;
	if (zip->records[index].method != 0)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "record is compressed, not stored");
	ti_status st = ti_zip_payload_offset(zip, index, offset, err);
	if (!st) /* read in pieces (a pickle): a URL's asks for it whole */
		ti_io_hint(zip->io, *offset, zip->records[index].size);
	return st;
}

void ti_zip_hint_record(ti_zip *zip, size_t index, uint64_t after)
{
	if (index < zip->count)
		ti_io_hint(zip->io, zip->local_offsets[index],
		           30 + 65535 + 65535 + zip->records[index].compressed_size + after); /* header, name, extra, bytes */
}

ti_status ti_zip_pread(ti_zip *zip, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	return read_at(zip, offset, buf, n, err);
}

ti_status ti_zip_read(ti_zip *zip, size_t index, size_t max, uint8_t **data, size_t *size, ti_error *err)
{
	if (check_size(zip, index, max, err))
		return err->code;
	const ti_record *r = &zip->records[index];
	/* Deflate expands at most 1032 to 1: a larger claim would only make us allocate for nothing. */
	if (r->method != 0 && r->size / 1032 > r->compressed_size + 1)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "record '%s' claims %" PRIu64 " bytes from %" PRIu64 " compressed bytes, more than deflate can make",
		               r->name, r->size, r->compressed_size);
	uint8_t *buf = malloc((size_t)r->size + 1);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading a record of %" PRIu64 " bytes", r->size);
	uint64_t offset;
	ti_status s;
	if (r->method == 0)
		s = ti_zip_payload_offset(zip, index, &offset, err) || read_at(zip, offset, buf, (size_t)r->size, err);
	else
		s = read_compressed(zip, index, buf, r->size, err);
	if (s) {
		free(buf);
		return err->code ? err->code : TI_E_CORRUPT;
	}
	buf[r->size] = 0;
	*data = buf;
	*size = (size_t)r->size;
	return TI_OK;
}

/* ---- streams: a record read in pieces ---- */

enum { SKIP_CHUNK = 64 * 1024 };

struct ti_zip_stream {
	ti_zip *zip;
	size_t index;
	uint64_t payload;  /* stored: where the bytes start in the file */
	zip_file_t *file;  /* compressed: the inflating stream, or NULL before the first read */
	uint64_t at;       /* compressed: bytes of the record inflated so far */
	uint8_t *scratch;  /* compressed: where skipped bytes go */
};

static ti_status open_libzip(ti_zip *zip, ti_error *err)
{
	if (zip->za)
		return TI_OK;
	if (zip->io->remote)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a compressed record is not read from a URL (download the file)");
	int code = 0;
	zip->za = zip_open(zip->path, ZIP_RDONLY, &code);
	if (zip->za)
		return TI_OK;
	zip_error_t ze;
	zip_error_init_with_code(&ze, code);
	TI_FAIL(err, TI_E_CORRUPT, "cannot open the archive to inflate a record: %s", zip_error_strerror(&ze));
	zip_error_fini(&ze);
	return TI_E_CORRUPT;
}

ti_status ti_zip_stream_open(ti_zip *zip, size_t index, ti_zip_stream **out, ti_error *err)
{
	*out = NULL;
	if (check_size(zip, index, SIZE_MAX, err))
		return err->code;
	const ti_record *r = &zip->records[index];
	/* Deflate expands at most 1032 to 1: a larger claim is a lie, not worth inflating */
	if (r->method != 0 && r->size / 1032 > r->compressed_size + 1)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "record '%s' claims %" PRIu64 " bytes from %" PRIu64 " compressed bytes, more than deflate can make",
		               r->name, r->size, r->compressed_size);
	ti_zip_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	s->zip = zip;
	s->index = index;
	ti_status st = r->method == 0 ? ti_zip_payload_offset(zip, index, &s->payload, err) : open_libzip(zip, err);
	if (st) {
		free(s);
		return st;
	}
	*out = s;
	return TI_OK;
}

/* Inflates n bytes into buf (NULL: into the scratch buffer, dropped). */
static ti_status inflate_next(ti_zip_stream *s, void *buf, uint64_t n, ti_error *err)
{
	const ti_record *r = &s->zip->records[s->index];
	while (n) {
		size_t want = buf ? (size_t)n : (n < SKIP_CHUNK ? (size_t)n : SKIP_CHUNK);
		zip_int64_t got = zip_fread(s->file, buf ? buf : s->scratch, want);
		if (got < 0)
			return TI_FAIL(err, TI_E_CORRUPT, "cannot inflate record '%s' at offset %" PRIu64 ": %s", r->name, s->at,
			               zip_file_strerror(s->file));
		if (got == 0)
			return TI_FAIL(err, TI_E_CORRUPT, "record '%s' inflates to %" PRIu64 " bytes, not the %" PRIu64 " it claims",
			               r->name, s->at, r->size);
		s->at += (uint64_t)got;
		n -= (uint64_t)got;
		if (buf)
			buf = (char *)buf + got;
	}
	return TI_OK;
}

ti_status ti_zip_stream_read(ti_zip_stream *s, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	const ti_record *r = &s->zip->records[s->index];
	if (offset > r->size || n > r->size - offset)
		return TI_FAIL(err, TI_E_INVALID, "read of %zu bytes at %" PRIu64 " passes record '%s'", n, offset, r->name);
	if (r->method == 0)
		return read_at(s->zip, s->payload + offset, buf, n, err);
	if (s->file && offset < s->at) { /* behind us: start over */
		zip_fclose(s->file);
		s->file = NULL;
	}
	if (!s->file) {
		if (!s->scratch && !(s->scratch = malloc(SKIP_CHUNK)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		if (!(s->file = zip_fopen_index(s->zip->za, s->index, 0)))
			return TI_FAIL(err, TI_E_CORRUPT, "cannot open record '%s': %s", r->name, zip_strerror(s->zip->za));
		s->at = 0;
	}
	ti_status st = inflate_next(s, NULL, offset - s->at, err);
	if (!st)
		st = inflate_next(s, buf, n, err);
	if (st) { /* where the stream stands is unknown now: the next read starts over */
		zip_fclose(s->file);
		s->file = NULL;
	}
	return st;
}

void ti_zip_stream_close(ti_zip_stream *s)
{
	if (!s)
		return;
	if (s->file)
		zip_fclose(s->file);
	free(s->scratch);
	free(s);
}
