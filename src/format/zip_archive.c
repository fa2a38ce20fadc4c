/*
 * zip_archive.c - records of a zip checkpoint, through libzip.
 *
 * libzip lists and reads records but does not say where a payload begins,
 * which a reader that maps storages needs. For that one fact we read the
 * central directory (APPNOTE.TXT 4.3.12-4.3.16, with the ZIP64 end record
 * that torch always writes) and then each record's local header: the payload
 * follows the 30-byte local header, its name and its extra field, whose
 * length differs from the central one because of torch's 'FB' padding.
 */
#include "format/zip_archive.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

struct ti_zip {
	zip_t *za;
	char *path;
	size_t count;
	uint64_t *local_offsets; /* by index, read on first need */
};

static ti_status from_libzip(int code, const char *what, ti_error *err)
{
	zip_error_t ze;
	zip_error_init_with_code(&ze, code);
	ti_status status = TI_E_CORRUPT;
	if (code == ZIP_ER_OPEN || code == ZIP_ER_READ || code == ZIP_ER_SEEK || code == ZIP_ER_TELL)
		status = TI_E_IO;
	else if (code == ZIP_ER_MEMORY)
		status = TI_E_NOMEM;
	else if (code == ZIP_ER_COMPNOTSUPP || code == ZIP_ER_ENCRNOTSUPP || code == ZIP_ER_MULTIDISK)
		status = TI_E_UNSUPPORTED;
	TI_FAIL(err, status, "%s: %s", what, zip_error_strerror(&ze));
	zip_error_fini(&ze);
	return status;
}

ti_status ti_zip_open(const char *path, size_t records_max, ti_zip **out, ti_error *err)
{
	int code = 0;
	zip_t *za = zip_open(path, ZIP_RDONLY, &code);
	if (!za)
	{
		if (code == ZIP_ER_NOZIP)
			return TI_FAIL(err, TI_E_CORRUPT, "not a readable zip archive (no end of central directory: truncated or damaged)");
		return from_libzip(code, "cannot open zip archive", err);
	}
	zip_int64_t n = zip_get_num_entries(za, 0);
	if (n < 0 || (uint64_t)n > records_max) {
		zip_discard(za);
		return TI_FAIL(err, TI_E_LIMIT, "archive has %" PRId64 " records, more than the %zu allowed", (int64_t)n, records_max);
	}
	ti_zip *zip = calloc(1, sizeof(*zip));
	if (!zip || !(zip->path = strdup(path))) {
		free(zip);
		zip_discard(za);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory opening the archive");
	}
	zip->za = za;
	zip->count = (size_t)n;
	/* Two records with one name make the archive ambiguous: refuse, as torch's reader does. */
	for (size_t i = 0; i < zip->count; i++) {
		const char *name = zip_get_name(za, i, ZIP_FL_ENC_RAW);
		if (!name) {
			ti_zip_close(zip);
			return TI_FAIL(err, TI_E_CORRUPT, "record %zu has no readable name", i);
		}
		zip_int64_t first = zip_name_locate(za, name, ZIP_FL_ENC_RAW);
		if (first >= 0 && (size_t)first != i) {
			TI_FAIL(err, TI_E_CORRUPT, "duplicate record");
			ti_error_at(err, name, -1);
			ti_zip_close(zip);
			return TI_E_CORRUPT;
		}
	}
	*out = zip;
	return TI_OK;
}

void ti_zip_close(ti_zip *zip)
{
	if (!zip)
		return;
	zip_discard(zip->za);
	free(zip->local_offsets);
	free(zip->path);
	free(zip);
}

size_t ti_zip_count(const ti_zip *zip) { return zip->count; }

ti_status ti_zip_stat(ti_zip *zip, size_t index, ti_zip_entry *entry, ti_error *err)
{
	zip_stat_t st;
	zip_stat_init(&st);
	if (zip_stat_index(zip->za, index, ZIP_FL_ENC_RAW, &st))
		return from_libzip(zip_error_code_zip(zip_get_error(zip->za)), "cannot read a record's header", err);
	entry->name = st.name;
	entry->size = st.size;
	entry->compressed_size = st.comp_size;
	entry->method = st.comp_method;
	return TI_OK;
}

int64_t ti_zip_find(ti_zip *zip, const char *name)
{
	return zip_name_locate(zip->za, name, ZIP_FL_ENC_RAW);
}

ti_status ti_zip_read(ti_zip *zip, size_t index, size_t max, uint8_t **data, size_t *size, ti_error *err)
{
	ti_zip_entry e;
	if (ti_zip_stat(zip, index, &e, err))
		return err->code;
	if (e.size > max)
		return TI_FAIL(err, TI_E_LIMIT, "record of %" PRIu64 " bytes exceeds the %zu-byte limit", e.size, max);
	uint8_t *buf = malloc((size_t)e.size + 1);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading a record of %" PRIu64 " bytes", e.size);
	zip_file_t *f = zip_fopen_index(zip->za, index, 0);
	if (!f) {
		free(buf);
		return from_libzip(zip_error_code_zip(zip_get_error(zip->za)), "cannot open record", err);
	}
	zip_int64_t got = zip_fread(f, buf, e.size);
	ti_status s = TI_OK;
	if (got < 0)
		s = from_libzip(zip_error_code_zip(zip_file_get_error(f)), "cannot read record", err);
	else if ((uint64_t)got != e.size)
		s = TI_FAIL(err, TI_E_CORRUPT, "record is truncated: %" PRId64 " of %" PRIu64 " bytes", (int64_t)got, e.size);
	zip_fclose(f);
	if (s) {
		free(buf);
		return s;
	}
	buf[e.size] = 0;
	*data = buf;
	*size = (size_t)e.size;
	return TI_OK;
}

/* ---- payload offsets, from the central directory and local headers ---- */

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

static int read_at(FILE *f, uint64_t off, void *buf, size_t n)
{
	if (off > INT64_MAX || fseeko(f, (off_t)off, SEEK_SET))
		return -1;
	return fread(buf, 1, n, f) == n ? 0 : -1;
}

static ti_status load_offsets(ti_zip *zip, ti_error *err)
{
	FILE *f = fopen(zip->path, "rb");
	if (!f)
		return TI_FAIL(err, TI_E_IO, "cannot open: %s", strerror(errno));
	ti_status s = TI_E_CORRUPT;
	uint8_t *cd = NULL;
	uint64_t *offsets = NULL;
	if (fseeko(f, 0, SEEK_END))
		goto done;
	uint64_t size = (uint64_t)ftello(f);
	/* The end record is 22 bytes plus a comment of at most 65535. */
	size_t tail = size < 22 + 65535 ? (size_t)size : 22 + 65535;
	uint8_t *buf = malloc(tail);
	if (!buf || read_at(f, size - tail, buf, tail)) {
		free(buf);
		goto done;
	}
	size_t eocd = tail;
	for (size_t i = tail - 22 + 1; i-- > 0;)
		if (!memcmp(buf + i, "PK\5\6", 4)) {
			eocd = i;
			break;
		}
	if (eocd == tail) {
		free(buf);
		goto done;
	}
	uint64_t cd_size = rd(buf + eocd + 12, 4), cd_off = rd(buf + eocd + 16, 4);
	uint64_t eocd_pos = size - tail + eocd;
	free(buf);
	if (cd_off == 0xffffffffu || cd_size == 0xffffffffu) {
		uint8_t loc[20], rec[56];
		if (eocd_pos < 20 || read_at(f, eocd_pos - 20, loc, 20) || memcmp(loc, "PK\6\7", 4) ||
		    read_at(f, rd(loc + 8, 8), rec, 56) || memcmp(rec, "PK\6\6", 4))
			goto done;
		cd_size = rd(rec + 40, 8);
		cd_off = rd(rec + 48, 8);
	}
	if (cd_off > size || cd_size > size - cd_off || !(cd = malloc(cd_size ? cd_size : 1)) ||
	    read_at(f, cd_off, cd, cd_size) || !(offsets = calloc(zip->count ? zip->count : 1, sizeof(*offsets))))
		goto done;
	size_t pos = 0;
	for (size_t i = 0; i < zip->count; i++) {
		if (pos + 46 > cd_size || memcmp(cd + pos, "PK\1\2", 4))
			goto done;
		size_t nlen = rd(cd + pos + 28, 2), xlen = rd(cd + pos + 30, 2), clen = rd(cd + pos + 32, 2);
		if (pos + 46 + nlen + xlen + clen > cd_size)
			goto done;
		uint64_t local = rd(cd + pos + 42, 4);
		if (local == 0xffffffffu) {
			/* ZIP64 extra (id 1): sizes first if they saturate, then the offset. */
			const uint8_t *x = cd + pos + 46 + nlen, *end = x + xlen;
			int skip = (rd(cd + pos + 24, 4) == 0xffffffffu) + (rd(cd + pos + 20, 4) == 0xffffffffu);
			while (x + 4 <= end) {
				size_t id = rd(x, 2), len = rd(x + 2, 2);
				if (x + 4 + len > end)
					break;
				if (id == 1 && len >= (size_t)(skip + 1) * 8)
					local = rd(x + 4 + skip * 8, 8);
				x += 4 + len;
			}
		}
		offsets[i] = local;
		pos += 46 + nlen + xlen + clen;
	}
	zip->local_offsets = offsets;
	offsets = NULL;
	s = TI_OK;
done:
	if (s)
		TI_FAIL(err, s, "cannot read the zip central directory");
	free(cd);
	free(offsets);
	fclose(f);
	return s;
}

ti_status ti_zip_payload_offset(ti_zip *zip, size_t index, uint64_t *offset, ti_error *err)
{
	if (index >= zip->count)
		return TI_FAIL(err, TI_E_INVALID, "no record %zu", index);
	if (!zip->local_offsets && load_offsets(zip, err))
		return err->code;
	FILE *f = fopen(zip->path, "rb");
	if (!f)
		return TI_FAIL(err, TI_E_IO, "cannot open: %s", strerror(errno));
	uint8_t h[30];
	int bad = read_at(f, zip->local_offsets[index], h, sizeof(h)) || memcmp(h, "PK\3\4", 4);
	fclose(f);
	if (bad)
		return TI_FAIL(err, TI_E_CORRUPT, "record %zu has no local header at offset %" PRIu64, index, zip->local_offsets[index]);
	*offset = zip->local_offsets[index] + 30 + rd(h + 26, 2) + rd(h + 28, 2);
	return TI_OK;
}
