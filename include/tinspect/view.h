/*
 * view.h - a tensor's elements in logical order, read in bounded chunks.
 *
 * A ti_source_tensor is a view of a storage: shape, strides and offset in
 * elements. ti_view_read gives elements first .. first+n-1 of the view in
 * row-major (logical) order, as `t.contiguous()` lays them out, whatever
 * the strides: a contiguous view is one read; any other is gathered
 * element by element, from one read of the bytes its chunk spans when that
 * span fits TI_VIEW_WINDOW_BYTES, else one read per element (correct, slow,
 * and only for views that skip most of their storage). diff and stats read
 * every tensor this way.
 *
 * A sub-byte dtype (dtype.h: float4_e2m1fn, the float6s) is read as its
 * packed bytes: only a contiguous view (what safetensors holds), whose
 * element offset, first and n each fill whole bytes (multiples of
 * ti_dtype_byte_group); n elements are then ti_dtype_nbytes(n) bytes.
 *
 * Bytes come from the source (ti_source_read) unless the reader is given a
 * read function of its own: stats reads back what it placed on a CUDA
 * device through one. A reader of the source's own bytes tells the kernel,
 * once per file, that the file is read in order (POSIX_FADV_SEQUENTIAL), so
 * that its read-ahead keeps the disk busy while the caller computes; no
 * thread is started.
 *
 * Ownership: a ti_view_reader owns its scratch buffers (at most
 * TI_VIEW_CHUNK_MAX offsets and one window, allocated on first need), freed
 * by ti_view_reader_release; it holds nothing of the source.
 */
#ifndef TINSPECT_VIEW_H
#define TINSPECT_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"
#include "tinspect/source.h"

/* The most elements one ti_view_read may ask for: 8 MiB of offsets for a strided chunk. */
#define TI_VIEW_CHUNK_MAX ((size_t)1 << 20)
/* The most bytes read at once to gather a strided chunk. */
#define TI_VIEW_WINDOW_BYTES ((size_t)16 << 20)

/* Files one reader remembers having advised as read in order (view.c): diff reads two at a time. */
#define TI_VIEW_SEQUENTIAL_FILES 4

/* Reads n bytes of storage at byte offset into buf; a ti_source_read of one's own. */
typedef ti_status (*ti_view_read_fn)(void *ctx, ti_source *src, size_t storage, uint64_t offset, void *buf, size_t n,
                                     ti_error *err);

typedef struct ti_view_reader {
	ti_view_read_fn read; /* NULL: ti_source_read */
	void *read_ctx;
	int64_t *offsets;     /* a strided chunk's element offsets */
	unsigned char *window;
	int sequential[TI_VIEW_SEQUENTIAL_FILES]; /* descriptors advised, + 1 (0: none) */
	unsigned sequential_next;                 /* the slot the next one takes */
} ti_view_reader;

/* A reader of the source's own bytes (read NULL); nothing is allocated yet. */
void ti_view_reader_init(ti_view_reader *r);
void ti_view_reader_release(ti_view_reader *r);

/*
 * Checks, before any read, that view t lies inside its storage (overflow
 * included) and has no negative stride: TI_E_CORRUPT otherwise. An empty
 * view is always fine. A sub-byte view that is strided or starts inside a
 * byte is TI_E_UNSUPPORTED (no format tinspect reads makes one).
 */
ti_status ti_view_check(ti_source *src, const ti_source_tensor *t, ti_error *err);

/*
 * Elements first .. first+n-1 of view t (checked by ti_view_check), in
 * logical order, into out (n * element size bytes; a sub-byte dtype's n
 * elements packed, first and n multiples of ti_dtype_byte_group, else
 * TI_E_INVALID). n <= TI_VIEW_CHUNK_MAX.
 * A read past the storage's end is TI_E_CORRUPT (the file's fault); TI_E_IO
 * when reading fails; TI_E_NOMEM for the scratch buffers.
 */
ti_status ti_view_read(ti_view_reader *r, ti_source *src, const ti_source_tensor *t, int64_t first, size_t n,
                       void *out, ti_error *err);

#endif
