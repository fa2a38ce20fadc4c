/*
 * fuzz_npy.c - NumPy .npy arrays and .npz archives, on whole files.
 *
 * Each input is read three ways:
 *
 *   1. ti_npy_parse() on the bytes in memory: the strict dict parser, the
 *      descr table, the ceilings on header length, rank and counts. A parsed
 *      header must be consistent (the data inside the input, the element
 *      count the product of the shape), and the header ti_npy_header_format()
 *      writes for its dtype and shape must parse back to the same.
 *   2. ti_source_open() on the input written as 'array.npy' in the scratch
 *      folder: whatever the content is (sniffing picks the row: a .npy, an
 *      .npz whose first member is *.npy, a torch zip...), every tensor's
 *      first and last bytes are read with ti_source_read(), which must then
 *      succeed or fail with a status, never crash (a deflated member is
 *      inflated through libzip, backwards too); entries and safety are
 *      walked.
 *   3. ti_scan_buffer() on the bytes: an object array's pickle, npz members.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tinspect/npy.h"
#include "tinspect/scan.h"
#include "tinspect/source.h"

enum { PEEK = 64 };

static void check_header(const uint8_t *data, size_t size)
{
	ti_npy_header h;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_npy_parse(data, size, size, &h, &err);
	fuzz_check_status(s, &err, s ? NULL : (void *)&h);
	if (s)
		return;
	FUZZ_CHECK(h.ndim >= 0 && h.ndim <= TI_MAX_DIMS, "rank %d", h.ndim);
	uint64_t numel = 1;
	for (int i = 0; i < h.ndim; i++) {
		FUZZ_CHECK(h.shape[i] >= 0, "dimension %d is %lld", i, (long long)h.shape[i]);
		numel *= (uint64_t)h.shape[i];
	}
	FUZZ_CHECK(numel == (uint64_t)h.numel, "numel %lld of a shape of %llu elements", (long long)h.numel,
	           (unsigned long long)numel);
	FUZZ_CHECK(h.data_offset <= size, "data at %llu of %zu bytes", (unsigned long long)h.data_offset, size);
	if (h.object)
		return;
	FUZZ_CHECK(h.nbytes == numel * ti_dtype_size(h.dtype), "nbytes %llu", (unsigned long long)h.nbytes);
	FUZZ_CHECK(h.nbytes <= size - h.data_offset, "data runs past the input");
	char again[TI_NPY_HEAD_MAX];
	size_t len;
	ti_npy_header back;
	s = ti_npy_header_format(h.dtype, h.ndim, h.shape, again, sizeof(again), &len, &err);
	FUZZ_CHECK(s == TI_OK, "cannot write the header of a parsed one: %s", err.message);
	s = ti_npy_parse(again, len, len + h.nbytes, &back, &err);
	FUZZ_CHECK(s == TI_OK, "the written header does not parse: %s", err.message);
	FUZZ_CHECK(back.dtype == h.dtype && back.ndim == h.ndim && back.numel == h.numel && !back.fortran_order,
	           "the written header reads back otherwise");
	FUZZ_CHECK(!memcmp(back.shape, h.shape, (size_t)h.ndim * sizeof(h.shape[0])), "shapes differ");
}

static void walk_source(ti_source *src)
{
	uint8_t buf[PEEK];
	ti_error err;
	ti_error_clear(&err);
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		FUZZ_CHECK(t && t->name, "tensor %zu", i);
		const ti_source_storage *st = ti_source_storage_at(src, t->storage);
		FUZZ_CHECK(st != NULL, "tensor '%s' has no storage", t->name);
		if (!st->has_data || t->unsupported)
			continue;
		FUZZ_CHECK(ti_source_tensor_extent(t) <= st->nbytes, "tensor '%s' views past its storage", t->name);
		size_t esize = ti_dtype_size(st->dtype);
		if (!esize || st->nbytes < esize)
			continue;
		size_t len = st->nbytes < PEEK ? (size_t)st->nbytes : PEEK;
		len -= len % esize;
		/* the end first, then the start: a deflated member is inflated again from its beginning */
		for (int k = 0; k < 2; k++) {
			ti_status s = ti_source_read(src, t->storage, k ? 0 : st->nbytes - len, buf, len, &err);
			FUZZ_CHECK(s == TI_OK || (s == err.code && err.message[0] && s != TI_E_INVALID),
			           "reading tensor '%s' gave %d: %s", t->name, (int)s, err.message);
		}
		ti_status s = ti_source_read(src, t->storage, st->nbytes, buf, esize, &err);
		FUZZ_CHECK(s == TI_E_INVALID, "reading past storage %zu gave %d", t->storage, (int)s);
	}
	size_t n;
	const ti_entry *e = ti_source_entries(src, &n, &err);
	for (size_t i = 0; e && i < n; i++)
		FUZZ_CHECK(e[i].name && e[i].value, "entry %zu", i);
	for (size_t i = 0; i < ti_source_file_count(src); i++) {
		const ti_scan_finding *f;
		size_t count;
		ti_scan_severity worst = ti_source_safety(src, i, &f, &count);
		for (size_t k = 0; k < count; k++)
			FUZZ_CHECK(f[k].severity <= worst && f[k].message, "finding %zu", k);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_header(data, size);

	char path[128];
	fuzz_path(path, sizeof(path), "array.npy");
	fuzz_write_file(path, data, size);
	ti_source *src = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_source_open(path, &src, &err);
	fuzz_check_status(s, &err, src);
	if (s == TI_OK)
		walk_source(src);
	ti_source_close(src);

	ti_scan_report *report = NULL;
	ti_error_clear(&err);
	s = ti_scan_buffer("array.npy", data, size, NULL, &report, &err);
	FUZZ_CHECK(s == TI_OK || s == TI_E_NOMEM, "scan failed: %s", err.message);
	for (size_t i = 0; report && i < report->count; i++)
		FUZZ_CHECK(report->findings[i].severity <= report->verdict, "finding %zu worse than the verdict", i);
	ti_scan_report_free(report);
	return 0;
}
