/*
 * view.c - a view's elements in logical order, in chunks (view.h).
 */
#include "tinspect/view.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "tinspect/tensor.h"

void ti_view_reader_init(ti_view_reader *r) { memset(r, 0, sizeof(*r)); }

void ti_view_reader_release(ti_view_reader *r)
{
	free(r->offsets);
	free(r->window);
	r->offsets = NULL;
	r->window = NULL;
}

/* A sub-byte view: contiguous, from a whole byte, inside its storage. */
static ti_status sub_byte_check(const ti_source_storage *s, const ti_source_tensor *t, ti_error *err)
{
	uint64_t first, bytes;
	if (!ti_source_tensor_contiguous(t) || !ti_dtype_nbytes(t->dtype, (uint64_t)t->offset, &first))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "tensor '%s' is a %s view that does not start on a byte: it cannot be read",
		               t->name, ti_dtype_name(t->dtype));
	if (!ti_dtype_nbytes(t->dtype, (uint64_t)t->numel, &bytes) || first > s->nbytes || bytes > s->nbytes - first)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' reaches past its storage (%llu bytes)", t->name,
		               (unsigned long long)s->nbytes);
	return TI_OK;
}

ti_status ti_view_check(ti_source *src, const ti_source_tensor *t, ti_error *err)
{
	if (t->numel == 0)
		return TI_OK;
	const ti_source_storage *s = ti_source_storage_at(src, t->storage);
	uint64_t es = ti_dtype_size(t->dtype), last;
	if (!s || !ti_dtype_bits(t->dtype) || t->offset < 0)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has no readable storage", t->name);
	if (!es) /* packed: read as bytes, which needs a contiguous view from a whole byte on */
		return sub_byte_check(s, t, err);
	last = (uint64_t)t->offset;
	for (int i = 0; i < t->ndim; i++) {
		if (t->shape[i] <= 0 || t->stride[i] < 0)
			return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has a negative stride", t->name);
		uint64_t step;
		if (__builtin_mul_overflow((uint64_t)(t->shape[i] - 1), (uint64_t)t->stride[i], &step) ||
		    __builtin_add_overflow(last, step, &last))
			return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' reaches past its storage", t->name);
	}
	uint64_t end;
	if (__builtin_add_overflow(last, 1, &end) || __builtin_mul_overflow(end, es, &end) || end > s->nbytes)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' reaches past its storage (%llu bytes)", t->name,
		               (unsigned long long)s->nbytes);
	return TI_OK;
}

/*
 * Before a read of t's file bytes: tells the kernel, once per file, that
 * this file is read in order (POSIX_FADV_SEQUENTIAL: Linux doubles its
 * read-ahead window), so that it reads ahead while the caller computes.
 * Nothing more is asked: measured cold, a posix_fadvise WILLNEED of the
 * chunk to come stops the kernel's own read-ahead at that chunk (the pages
 * are there when the read comes, so nothing triggers the next window) and
 * halves the throughput; WILLNEED windows of 16 to 256 MiB ahead did no
 * better than the kernel's read-ahead alone.
 */
static void advise_sequential(ti_view_reader *r, ti_source *src, const ti_source_tensor *t)
{
	int fd;
	uint64_t base;
	if (r->read || !ti_source_file_place(src, t->storage, &fd, &base))
		return;
	for (int i = 0; i < TI_VIEW_SEQUENTIAL_FILES; i++)
		if (r->sequential[i] == fd + 1)
			return;
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	r->sequential[r->sequential_next++ % TI_VIEW_SEQUENTIAL_FILES] = fd + 1;
}

static ti_status read_storage(ti_view_reader *r, ti_source *src, const ti_source_tensor *t, uint64_t offset,
                              void *buf, size_t n, ti_error *err)
{
	ti_status st = r->read ? r->read(r->read_ctx, src, t->storage, offset, buf, n, err)
	                       : ti_source_read(src, t->storage, offset, buf, n, err);
	if (st == TI_E_INVALID) /* past the end: the file's fault, not the caller's */
		st = err->code = TI_E_CORRUPT;
	return st;
}

ti_status ti_view_read(ti_view_reader *r, ti_source *src, const ti_source_tensor *t, int64_t first, size_t n,
                       void *buf, ti_error *err)
{
	unsigned char *out = buf;
	size_t es = ti_dtype_size(t->dtype);
	if (n == 0)
		return TI_OK;
	if (n > TI_VIEW_CHUNK_MAX)
		return TI_FAIL(err, TI_E_INVALID, "a view read of %zu elements (at most %zu)", n, TI_VIEW_CHUNK_MAX);
	if (!es) { /* packed: whole bytes of a contiguous view (ti_view_check) */
		uint64_t at, bytes;
		if (!ti_source_tensor_contiguous(t) || first < 0 ||
		    !ti_dtype_nbytes(t->dtype, (uint64_t)(t->offset + first), &at) || !ti_dtype_nbytes(t->dtype, n, &bytes))
			return TI_FAIL(err, TI_E_INVALID, "a read of %zu %s elements from %lld does not start and end on a byte",
			               n, ti_dtype_name(t->dtype), (long long)first);
		advise_sequential(r, src, t);
		return read_storage(r, src, t, at, out, (size_t)bytes, err);
	}
	if (ti_source_tensor_contiguous(t)) {
		advise_sequential(r, src, t);
		return read_storage(r, src, t, (uint64_t)(t->offset + first) * es, out, n * es, err);
	}
	if (!r->offsets && !(r->offsets = malloc(TI_VIEW_CHUNK_MAX * sizeof(int64_t))))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a strided read");
	int64_t idx[TI_MAX_DIMS], pos = t->offset, rem = first;
	int nd = t->ndim;
	for (int d = nd - 1; d >= 0; d--) {
		idx[d] = rem % t->shape[d];
		rem /= t->shape[d];
		pos += idx[d] * t->stride[d];
	}
	int64_t lo = pos, hi = pos;
	for (size_t k = 0; k < n; k++) {
		r->offsets[k] = pos;
		lo = pos < lo ? pos : lo;
		hi = pos > hi ? pos : hi;
		for (int d = nd - 1; d >= 0; d--) { /* the next index, the last dimension fastest */
			if (++idx[d] < t->shape[d]) {
				pos += t->stride[d];
				break;
			}
			pos -= (t->shape[d] - 1) * t->stride[d];
			idx[d] = 0;
		}
	}
	uint64_t span = (uint64_t)(hi - lo + 1) * es;
	if (span <= TI_VIEW_WINDOW_BYTES) {
		if (!r->window && !(r->window = malloc(TI_VIEW_WINDOW_BYTES)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a strided read");
		advise_sequential(r, src, t);
		ti_status st = read_storage(r, src, t, (uint64_t)lo * es, r->window, span, err);
		if (st)
			return st;
		for (size_t k = 0; k < n; k++)
			memcpy(out + k * es, r->window + (uint64_t)(r->offsets[k] - lo) * es, es);
		return TI_OK;
	}
	for (size_t k = 0; k < n; k++) {
		ti_status st = read_storage(r, src, t, (uint64_t)r->offsets[k] * es, out + k * es, es, err);
		if (st)
			return st;
	}
	return TI_OK;
}
