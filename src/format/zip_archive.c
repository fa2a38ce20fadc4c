/*
 * zip_archive.c - records of a zip checkpoint.
 *
 * We read the central directory ourselves (PKWARE APPNOTE.TXT 4.3.12-4.3.16,
 * with the ZIP64 end record and extras that torch always writes): one read of
 * the end records, one of the directory, and a hash of the names. libzip's
 * zip_open does the same work plus a time conversion and allocations per
 * entry, which for a 20,000-tensor checkpoint cost more than reading
 * data.pkl itself; inspection must stay near that floor.
 *
 * Stored records (torch.save writes nothing else) are read with pread from
 * the payload offset their local header gives: it differs from the central
 * directory's idea because of torch's 'FB' padding extra field. Compressed
 * records are read through libzip, opened on first need: this file is the
 * only one that includes <zip.h>.
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

#include "util/strmap.h"

typedef struct record {
	char *name;
	uint64_t size, compressed_size, local_offset;
	int method;
} record;

struct ti_zip {
	int fd;
	char *path;
	uint64_t file_size;
	uint8_t *directory; /* the central directory; names are copied out of it */
	record *records;
	size_t count;
	ti_strmap by_name;
	zip_t *za; /* libzip, for compressed records only */
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
	size_t done = 0;
	while (done < n) {
		ssize_t got = pread(zip->fd, (char *)buf + done, n - done, (off_t)(off + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return TI_FAIL(err, TI_E_IO, "cannot read: %s", strerror(errno));
		if (got == 0)
			return TI_FAIL(err, TI_E_CORRUPT, "file is shorter than its zip directory says");
		done += (size_t)got;
	}
	return TI_OK;
}

#define CORRUPT(err, ...) TI_FAIL((err), TI_E_CORRUPT, __VA_ARGS__)

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

/* Reads the ZIP64 extra (id 1): the saturated fields, in order size, compressed size, offset. */
static ti_status zip64_extra(const uint8_t *x, size_t xlen, record *r, bool want_size, bool want_csize,
                             bool want_offset, ti_error *err)
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
				r->local_offset = rd(p, 8), p += 8;
			return TI_OK;
		}
		x += 4 + len;
	}
	return CORRUPT(err, "zip record needs a zip64 extra field and has none");
}

ti_status ti_zip_open(const char *path, size_t records_max, ti_zip **out, ti_error *err)
{
	ti_zip *zip = calloc(1, sizeof(*zip));
	if (!zip || !(zip->path = strdup(path))) {
		free(zip);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory opening the archive");
	}
	ti_strmap_init(&zip->by_name);
	zip->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (zip->fd < 0 || fstat(zip->fd, &st)) {
		TI_FAIL(err, TI_E_IO, "cannot open: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		TI_FAIL(err, TI_E_IO, "not a regular file");
		goto fail;
	}
	zip->file_size = (uint64_t)st.st_size;
	uint64_t cd_off = 0, cd_size = 0, entries = 0;
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
	zip->directory = malloc(cd_size ? (size_t)cd_size : 1);
	zip->records = calloc(entries ? (size_t)entries : 1, sizeof(*zip->records));
	if (!zip->directory || !zip->records) {
		TI_FAIL(err, TI_E_NOMEM, "out of memory reading the zip directory");
		goto fail;
	}
	if (read_at(zip, cd_off, zip->directory, (size_t)cd_size, err))
		goto fail;
	const uint8_t *cd = zip->directory;
	size_t pos = 0;
	for (size_t i = 0; i < entries; i++) {
		if (pos + 46 > cd_size || memcmp(cd + pos, "PK\1\2", 4)) {
			TI_FAIL(err, TI_E_CORRUPT, "zip central directory entry %zu is damaged", i);
			goto fail;
		}
		const uint8_t *h = cd + pos;
		size_t nlen = rd(h + 28, 2), xlen = rd(h + 30, 2), clen = rd(h + 32, 2);
		if (pos + 46 + nlen + xlen + clen > cd_size) {
			TI_FAIL(err, TI_E_CORRUPT, "zip central directory entry %zu runs past the directory", i);
			goto fail;
		}
		record *r = &zip->records[i];
		zip->count = i + 1; /* from here on ti_zip_close frees this record's name */
		/* Names are not NUL-terminated in the directory: keep a terminated copy. */
		r->name = malloc(nlen + 1);
		if (!r->name) {
			TI_FAIL(err, TI_E_NOMEM, "out of memory");
			goto fail;
		}
		memcpy(r->name, h + 46, nlen);
		r->name[nlen] = '\0';
		if (memchr(r->name, '\0', nlen)) {
			TI_FAIL(err, TI_E_CORRUPT, "zip record %zu has a NUL byte in its name", i);
			goto fail;
		}
		r->method = (int)rd(h + 10, 2);
		r->compressed_size = rd(h + 20, 4);
		r->size = rd(h + 24, 4);
		r->local_offset = rd(h + 42, 4);
		bool s = r->size == 0xffffffffu, c = r->compressed_size == 0xffffffffu, o = r->local_offset == 0xffffffffu;
		if ((s || c || o) && zip64_extra(h + 46 + nlen, xlen, r, s, c, o, err))
			goto fail;
		if (rd(h + 8, 2) & 1) {
			TI_FAIL(err, TI_E_UNSUPPORTED, "encrypted zip records are not supported");
			ti_error_at(err, r->name, -1);
			goto fail;
		}
		/* Two records with one name make the archive ambiguous: refuse. */
		void *first;
		int added = ti_strmap_add(&zip->by_name, r->name, (void *)(uintptr_t)(i + 1), &first);
		if (added == 1) {
			TI_FAIL(err, TI_E_CORRUPT, "duplicate record");
			ti_error_at(err, r->name, -1);
			goto fail;
		}
		if (added < 0) {
			TI_FAIL(err, TI_E_NOMEM, "out of memory");
			goto fail;
		}
		pos += 46 + nlen + xlen + clen;
	}
	free(zip->directory);
	zip->directory = NULL;
	*out = zip;
	return TI_OK;
fail:
	ti_zip_close(zip);
	return err->code;
}

void ti_zip_close(ti_zip *zip)
{
	if (!zip)
		return;
	if (zip->za)
		zip_discard(zip->za);
	if (zip->fd >= 0)
		close(zip->fd);
	for (size_t i = 0; i < zip->count; i++)
		free(zip->records[i].name);
	free(zip->records);
	free(zip->directory);
	ti_strmap_release(&zip->by_name);
	free(zip->path);
	free(zip);
}

size_t ti_zip_count(const ti_zip *zip) { return zip->count; }

ti_status ti_zip_stat(ti_zip *zip, size_t index, ti_zip_entry *entry, ti_error *err)
{
	if (index >= zip->count)
		return TI_FAIL(err, TI_E_INVALID, "no record %zu", index);
	const record *r = &zip->records[index];
	entry->name = r->name;
	entry->size = r->size;
	entry->compressed_size = r->compressed_size;
	entry->method = r->method;
	return TI_OK;
}

int64_t ti_zip_find(ti_zip *zip, const char *name)
{
	return (int64_t)(uintptr_t)ti_strmap_get(&zip->by_name, name) - 1;
}

ti_status ti_zip_payload_offset(ti_zip *zip, size_t index, uint64_t *offset, ti_error *err)
{
	if (index >= zip->count)
		return TI_FAIL(err, TI_E_INVALID, "no record %zu", index);
	const record *r = &zip->records[index];
	uint8_t h[30];
	if (read_at(zip, r->local_offset, h, sizeof(h), err) || memcmp(h, "PK\3\4", 4)) {
		TI_FAIL(err, TI_E_CORRUPT, "no local header at offset %" PRIu64, r->local_offset);
		ti_error_at(err, r->name, -1);
		return TI_E_CORRUPT;
	}
	*offset = r->local_offset + 30 + rd(h + 26, 2) + rd(h + 28, 2);
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

ti_status ti_zip_read(ti_zip *zip, size_t index, size_t max, uint8_t **data, size_t *size, ti_error *err)
{
	if (index >= zip->count)
		return TI_FAIL(err, TI_E_INVALID, "no record %zu", index);
	const record *r = &zip->records[index];
	if (r->size > max)
		return TI_FAIL(err, TI_E_LIMIT, "record of %" PRIu64 " bytes exceeds the %zu-byte limit", r->size, max);
	if (r->method == 0 && r->compressed_size != r->size)
		return TI_FAIL(err, TI_E_CORRUPT, "stored record's sizes disagree (%" PRIu64 " and %" PRIu64 ")", r->size, r->compressed_size);
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
