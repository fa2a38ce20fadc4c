/*
 * npz_writer.c - what np.savez writes: a zip of stored NAME.npy members,
 * streamed (see tinspect/npy.h).
 *
 * Each member's size is known when it starts (its .npy header plus the
 * array's bytes), so the local header carries the sizes; its CRC-32 is
 * patched in with pwrite once the bytes are through (APPNOTE 4.3.7, 4.4.7),
 * so no data descriptor is needed. ZIP64 (APPNOTE 4.5.3): a member of 4 GiB
 * or more has both sizes in a local and a central extra; a header offset
 * past 32 bits goes in the central extra; the ZIP64 end record and locator
 * are written when a count, size or offset of the directory saturates.
 */
#include "tinspect/npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/crc32.h"
#include "util/strmap.h"

enum {
	LOCAL_HEADER = 30,
	CENTRAL_HEADER = 46,
	FLAG_UTF8 = 0x0800,        /* names are UTF-8 (APPNOTE appendix D) */
	DOS_DATE_1980 = 0x21,      /* 1980-01-01: reproducible output */
	VERSION_PLAIN = 20,        /* 2.0 */
	VERSION_ZIP64 = 45,        /* 4.5 */
};
static const uint64_t ZIP64_LIMIT = 0xffffffffu;

typedef struct member {
	char *name;            /* NAME.npy */
	uint64_t header_offset;
	uint64_t size;
	uint32_t crc;
} member;

struct ti_npz_writer {
	int fd;
	uint64_t pos;
	member *members;
	size_t count, capacity;
	uint64_t done;         /* bytes of the current member written */
	ti_strmap names;
	bool failed, finished;
};

static void le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static ti_status write_all(ti_npz_writer *w, const void *data, size_t n, ti_error *err)
{
	const char *p = data;
	while (n) {
		ssize_t got = write(w->fd, p, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			w->failed = true;
			return TI_FAIL(err, TI_E_IO, "cannot write the archive: %s", got < 0 ? strerror(errno) : "no progress");
		}
		p += got;
		n -= (size_t)got;
		w->pos += (uint64_t)got;
	}
	return TI_OK;
}

static ti_status usable(const ti_npz_writer *w, ti_error *err)
{
	if (!w)
		return TI_FAIL(err, TI_E_INVALID, "no writer");
	if (w->failed)
		return TI_FAIL(err, TI_E_INVALID, "the .npz writer failed earlier and cannot go on");
	if (w->finished)
		return TI_FAIL(err, TI_E_INVALID, "the .npz archive is already finished");
	return TI_OK;
}

ti_status ti_npz_writer_begin(int fd, ti_npz_writer **out, ti_error *err)
{
	*out = NULL;
	ti_npz_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	w->fd = fd;
	ti_strmap_init(&w->names);
	if (lseek(fd, 0, SEEK_SET) < 0) {
		ti_npz_writer_free(w);
		return TI_FAIL(err, TI_E_IO, "cannot write the archive: %s", strerror(errno));
	}
	*out = w;
	return TI_OK;
}

/* Puts the current member's CRC into its local header once its bytes are all through. */
static ti_status close_member(ti_npz_writer *w, ti_error *err)
{
	if (!w->count)
		return TI_OK;
	member *m = &w->members[w->count - 1];
	if (w->done < m->size)
		return TI_FAIL(err, TI_E_INVALID, "member '%s' got %llu of its %llu bytes", m->name,
		               (unsigned long long)w->done, (unsigned long long)m->size);
	uint8_t crc[4];
	le(crc, m->crc, 4);
	for (size_t done = 0; done < 4;) {
		ssize_t n = pwrite(w->fd, crc + done, 4 - done, (off_t)(m->header_offset + 14 + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			w->failed = true;
			return TI_FAIL(err, TI_E_IO, "cannot write a CRC into the archive: %s", n < 0 ? strerror(errno) : "no progress");
		}
		done += (size_t)n;
	}
	return TI_OK;
}

ti_status ti_npz_writer_add(ti_npz_writer *w, const char *name, ti_dtype dtype, int ndim, const int64_t *shape,
                            ti_error *err)
{
	if (usable(w, err))
		return err->code;
	if (!name || !*name)
		return TI_FAIL(err, TI_E_INVALID, "an array with no name");
	size_t name_len = strlen(name) + 4;
	if (name_len > 65535)
		return TI_FAIL(err, TI_E_INVALID, "the name '%.40s...' is longer than a zip name can be", name);
	char header[TI_NPY_HEAD_MAX];
	size_t header_len;
	if (ti_npy_header_format(dtype, ndim, shape, header, sizeof(header), &header_len, err))
		return err->code;
	uint64_t numel = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] && numel > (uint64_t)INT64_MAX / (uint64_t)shape[i] / 16)
			return TI_FAIL(err, TI_E_INVALID, "array '%s' is too large", name);
		numel *= (uint64_t)shape[i];
	}
	if (close_member(w, err))
		return err->code;
	if (w->count == w->capacity) {
		size_t cap = w->capacity ? 2 * w->capacity : 16;
		member *bigger = realloc(w->members, cap * sizeof(*bigger));
		if (!bigger)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		w->members = bigger;
		w->capacity = cap;
	}
	member *m = &w->members[w->count];
	memset(m, 0, sizeof(*m));
	if (!(m->name = malloc(name_len + 1)))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	memcpy(m->name, name, name_len - 4);
	memcpy(m->name + name_len - 4, ".npy", 5);
	void *earlier;
	int added = ti_strmap_add(&w->names, m->name, NULL, &earlier);
	if (added != 0) {
		free(m->name);
		return added < 0 ? TI_FAIL(err, TI_E_NOMEM, "out of memory")
		                 : TI_FAIL(err, TI_E_INVALID, "two arrays would be named '%s'", name);
	}
	w->count++;
	m->header_offset = w->pos;
	m->size = header_len + numel * ti_dtype_size(dtype);
	m->crc = ti_crc32(0, header, header_len);
	w->done = header_len;
	bool big = m->size >= ZIP64_LIMIT;
	uint8_t h[LOCAL_HEADER + 20];
	memcpy(h, "PK\3\4", 4);
	le(h + 4, big ? VERSION_ZIP64 : VERSION_PLAIN, 2);
	le(h + 6, FLAG_UTF8, 2);
	le(h + 8, 0, 2); /* stored */
	le(h + 10, 0, 2);
	le(h + 12, DOS_DATE_1980, 2);
	le(h + 14, 0, 4); /* the CRC, once known */
	le(h + 18, big ? ZIP64_LIMIT : m->size, 4);
	le(h + 22, big ? ZIP64_LIMIT : m->size, 4);
	le(h + 26, name_len, 2);
	le(h + 28, big ? 20 : 0, 2);
	if (write_all(w, h, LOCAL_HEADER, err) || write_all(w, m->name, name_len, err))
		return err->code;
	if (big) {
		uint8_t x[20];
		le(x, 1, 2);
		le(x + 2, 16, 2);
		le(x + 4, m->size, 8);
		le(x + 12, m->size, 8);
		if (write_all(w, x, sizeof(x), err))
			return err->code;
	}
	return write_all(w, header, header_len, err);
}

ti_status ti_npz_writer_put(ti_npz_writer *w, const void *bytes, size_t n, ti_error *err)
{
	if (usable(w, err))
		return err->code;
	if (!w->count)
		return TI_FAIL(err, TI_E_INVALID, "bytes before any member");
	member *m = &w->members[w->count - 1];
	if (n > m->size - w->done)
		return TI_FAIL(err, TI_E_INVALID, "%zu bytes run past member '%s'", n, m->name);
	if (write_all(w, bytes, n, err))
		return err->code;
	m->crc = ti_crc32(m->crc, bytes, n);
	w->done += n;
	return TI_OK;
}

ti_status ti_npz_writer_end(ti_npz_writer *w, ti_error *err)
{
	if (usable(w, err) || close_member(w, err))
		return err->code;
	uint64_t cd_offset = w->pos;
	for (size_t i = 0; i < w->count; i++) {
		const member *m = &w->members[i];
		size_t name_len = strlen(m->name);
		bool big = m->size >= ZIP64_LIMIT, far = m->header_offset >= ZIP64_LIMIT;
		uint8_t h[CENTRAL_HEADER], x[28];
		size_t xlen = 0;
		if (big || far) {
			le(x, 1, 2);
			xlen = 4;
			if (big) {
				le(x + xlen, m->size, 8);
				le(x + xlen + 8, m->size, 8);
				xlen += 16;
			}
			if (far) {
				le(x + xlen, m->header_offset, 8);
				xlen += 8;
			}
			le(x + 2, xlen - 4, 2);
		}
		memcpy(h, "PK\1\2", 4);
		le(h + 4, VERSION_ZIP64, 2); /* made by: 4.5, MS-DOS attributes */
		le(h + 6, big || far ? VERSION_ZIP64 : VERSION_PLAIN, 2);
		le(h + 8, FLAG_UTF8, 2);
		le(h + 10, 0, 2);
		le(h + 12, 0, 2);
		le(h + 14, DOS_DATE_1980, 2);
		le(h + 16, m->crc, 4);
		le(h + 20, big ? ZIP64_LIMIT : m->size, 4);
		le(h + 24, big ? ZIP64_LIMIT : m->size, 4);
		le(h + 28, name_len, 2);
		le(h + 30, xlen, 2);
		memset(h + 32, 0, 10); /* comment length, disk, attributes */
		le(h + 42, far ? ZIP64_LIMIT : m->header_offset, 4);
		if (write_all(w, h, sizeof(h), err) || write_all(w, m->name, name_len, err) ||
		    (xlen && write_all(w, x, xlen, err)))
			return err->code;
	}
	uint64_t cd_size = w->pos - cd_offset;
	bool zip64 = w->count >= 0xffff || cd_offset >= ZIP64_LIMIT || cd_size >= ZIP64_LIMIT;
	if (zip64) {
		uint64_t record_at = w->pos;
		uint8_t r[56 + 20];
		memcpy(r, "PK\6\6", 4);
		le(r + 4, 44, 8);
		le(r + 12, VERSION_ZIP64, 2);
		le(r + 14, VERSION_ZIP64, 2);
		le(r + 16, 0, 8); /* this disk, the directory's disk */
		le(r + 24, w->count, 8);
		le(r + 32, w->count, 8);
		le(r + 40, cd_size, 8);
		le(r + 48, cd_offset, 8);
		memcpy(r + 56, "PK\6\7", 4);
		le(r + 60, 0, 4);
		le(r + 64, record_at, 8);
		le(r + 72, 1, 4);
		if (write_all(w, r, sizeof(r), err))
			return err->code;
	}
	uint8_t e[22];
	memcpy(e, "PK\5\6", 4);
	le(e + 4, 0, 4);
	le(e + 8, zip64 ? 0xffff : w->count, 2);
	le(e + 10, zip64 ? 0xffff : w->count, 2);
	le(e + 12, cd_size >= ZIP64_LIMIT ? ZIP64_LIMIT : cd_size, 4);
	le(e + 16, cd_offset >= ZIP64_LIMIT ? ZIP64_LIMIT : cd_offset, 4);
	le(e + 20, 0, 2);
	if (write_all(w, e, sizeof(e), err))
		return err->code;
	if (ftruncate(w->fd, (off_t)w->pos)) {
		w->failed = true;
		return TI_FAIL(err, TI_E_IO, "cannot cut the archive to its size: %s", strerror(errno));
	}
	w->finished = true;
	return TI_OK;
}

void ti_npz_writer_free(ti_npz_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->count; i++)
		free(w->members[i].name);
	free(w->members);
	ti_strmap_release(&w->names);
	free(w);
}
