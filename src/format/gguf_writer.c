/*
 * gguf_writer.c - the streaming GGUF v3 writer (see tinspect/gguf.h). The
 * header is built in memory (it grows with the tensor count, not the data)
 * and written at once; data is copied through a small buffer, each tensor
 * padded to the alignment, and Q8_0 blocks are made as the floats arrive.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinspect/cast.h"
#include "tinspect/gguf.h"

enum { ALIGN = TI_GGUF_DEFAULT_ALIGNMENT, OUT_BUFFER = 64 * 1024, Q8_BLOCK = 32, Q8_BYTES = 34 };

typedef struct out_tensor {
	uint32_t type;
	uint64_t in_bytes;   /* what put must deliver */
	uint64_t out_bytes;  /* what lands in the file */
} out_tensor;

struct ti_gguf_writer {
	int fd;
	out_tensor *tensors;
	size_t count;
	size_t current;          /* the tensor being written */
	uint64_t received;       /* of the current tensor's in_bytes */
	float block[Q8_BLOCK];   /* Q8_0: floats of a block not yet complete */
	size_t block_fill;       /* bytes of block filled */
	unsigned char *buf;
	size_t buf_len;
};

/* ---- bytes out ---- */

static ti_status write_all(int fd, const void *p, size_t n, ti_error *err)
{
	const char *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return TI_FAIL(err, TI_E_IO, "cannot write the GGUF file: %s", strerror(errno));
		b += k;
		n -= (size_t)k;
	}
	return TI_OK;
}

static ti_status flush(ti_gguf_writer *w, ti_error *err)
{
	ti_status st = write_all(w->fd, w->buf, w->buf_len, err);
	w->buf_len = 0;
	return st;
}

static ti_status emit(ti_gguf_writer *w, const void *p, size_t n, ti_error *err)
{
	const unsigned char *b = p;
	while (n) {
		if (w->buf_len == OUT_BUFFER) {
			ti_status st = flush(w, err);
			if (st)
				return st;
		}
		size_t m = OUT_BUFFER - w->buf_len < n ? OUT_BUFFER - w->buf_len : n;
		memcpy(w->buf + w->buf_len, b, m);
		w->buf_len += m;
		b += m;
		n -= m;
	}
	return TI_OK;
}

/* ---- the header, in memory ---- */

typedef struct bytes {
	unsigned char *p;
	size_t len, cap;
	bool failed;
} bytes;

static void put_bytes(bytes *b, const void *p, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		unsigned char *bigger = realloc(b->p, cap);
		if (!bigger) {
			b->failed = true;
			return;
		}
		b->p = bigger;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void put_le(bytes *b, uint64_t v, int n)
{
	unsigned char t[8];
	for (int i = 0; i < n; i++)
		t[i] = (unsigned char)(v >> (8 * i));
	put_bytes(b, t, (size_t)n);
}

static void put_string(bytes *b, const char *s)
{
	size_t n = strlen(s);
	put_le(b, n, 8);
	put_bytes(b, s, n);
}

static uint64_t padded(uint64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

ti_status ti_gguf_writer_begin(int fd, const ti_gguf_spec *tensors, size_t count, const ti_gguf_meta *meta,
                               size_t meta_count, ti_gguf_writer **out, ti_error *err)
{
	*out = NULL;
	ti_gguf_writer *w = calloc(1, sizeof(*w));
	if (w) {
		w->tensors = calloc(count + 1, sizeof(*w->tensors));
		w->buf = malloc(OUT_BUFFER);
	}
	if (!w || !w->tensors || !w->buf) {
		ti_gguf_writer_free(w);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory writing the GGUF header");
	}
	w->fd = fd;
	w->count = count;
	bytes h = {0};
	put_bytes(&h, "GGUF", 4);
	put_le(&h, 3, 4);
	put_le(&h, count, 8);
	put_le(&h, meta_count, 8);
	for (size_t i = 0; i < meta_count; i++) {
		put_string(&h, meta[i].key);
		put_le(&h, meta[i].string ? TI_GGUF_STRING : TI_GGUF_UINT32, 4);
		if (meta[i].string)
			put_string(&h, meta[i].string);
		else
			put_le(&h, meta[i].u32, 4);
	}
	ti_status st = TI_OK;
	uint64_t offset = 0;
	for (size_t i = 0; i < count && !st; i++) {
		const ti_gguf_spec *s = &tensors[i];
		const ti_ggml_type *ty = ti_ggml_type_of(s->type);
		int64_t numel = 1;
		for (int d = 0; d < s->ndim; d++)
			numel *= s->shape[d];
		int64_t row = s->ndim ? s->shape[s->ndim - 1] : 1;
		if (!ty || (ty->dtype == TI_DT_INVALID && s->type != TI_GGML_Q8_0))
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "cannot write '%s' as ggml type %s", s->name, ty ? ty->name : "?");
		else if (s->ndim > TI_GGUF_MAX_DIMS)
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' has %d dimensions; GGUF holds at most %d", s->name, s->ndim,
			             TI_GGUF_MAX_DIMS);
		else if (row % ty->block_size)
			st = TI_FAIL(err, TI_E_INVALID, "'%s' cannot be %s: its last dimension %lld is not a multiple of %u",
			             s->name, ty->name, (long long)row, ty->block_size);
		if (st)
			break;
		out_tensor *o = &w->tensors[i];
		o->type = s->type;
		o->out_bytes = (uint64_t)numel / ty->block_size * ty->block_bytes;
		o->in_bytes = s->type == TI_GGML_Q8_0 ? (uint64_t)numel * 4 : o->out_bytes;
		put_string(&h, s->name);
		put_le(&h, (uint64_t)s->ndim, 4);
		for (int d = s->ndim - 1; d >= 0; d--) /* ggml order: fastest first */
			put_le(&h, (uint64_t)s->shape[d], 8);
		put_le(&h, s->type, 4);
		put_le(&h, offset, 8);
		offset += padded(o->out_bytes);
	}
	if (!st && h.failed)
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory writing the GGUF header");
	if (!st) {
		static const unsigned char zeros[ALIGN];
		put_bytes(&h, zeros, padded(h.len) - h.len);
		st = h.failed ? TI_FAIL(err, TI_E_NOMEM, "out of memory writing the GGUF header")
		              : write_all(fd, h.p, h.len, err);
	}
	free(h.p);
	if (st) {
		ti_gguf_writer_free(w);
		return st;
	}
	*out = w;
	return TI_OK;
}

/* Quantizes one block of 32 floats as ggml's quantize_row_q8_0_ref: d = max|x| / 127, q = round(x / d). */
static ti_status q8_0_block(ti_gguf_writer *w, const float *x, ti_error *err)
{
	float amax = 0;
	for (int j = 0; j < Q8_BLOCK; j++)
		amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
	float d = amax / 127, id = d ? 1.0f / d : 0.0f;
	unsigned char b[Q8_BYTES];
	ti_status st = ti_cast(TI_DT_FLOAT32, &d, TI_DT_FLOAT16, b, 1, 0, err); /* GGML_FP32_TO_FP16 */
	if (st)
		return st;
	for (int j = 0; j < Q8_BLOCK; j++)
		b[2 + j] = (unsigned char)(int8_t)roundf(x[j] * id);
	return emit(w, b, sizeof(b), err);
}

/* The current tensor is complete: pad it and move to the next. */
static ti_status finish_tensor(ti_gguf_writer *w, ti_error *err)
{
	static const unsigned char zeros[ALIGN];
	out_tensor *o = &w->tensors[w->current];
	ti_status st = emit(w, zeros, padded(o->out_bytes) - o->out_bytes, err);
	w->current++;
	w->received = 0;
	return st;
}

ti_status ti_gguf_writer_put(ti_gguf_writer *w, size_t tensor, const void *p, size_t n, ti_error *err)
{
	/* tensors with no bytes before this one are complete already */
	while (w->current < tensor && w->current < w->count && w->received == w->tensors[w->current].in_bytes) {
		ti_status st = finish_tensor(w, err);
		if (st)
			return st;
	}
	if (tensor != w->current || tensor >= w->count)
		return TI_FAIL(err, TI_E_INVALID, "GGUF writer: data for tensor %zu while tensor %zu is due", tensor, w->current);
	out_tensor *o = &w->tensors[tensor];
	if (n > o->in_bytes - w->received)
		return TI_FAIL(err, TI_E_INVALID, "GGUF writer: more data than tensor %zu holds", tensor);
	const unsigned char *b = p;
	ti_status st = TI_OK;
	if (o->type != TI_GGML_Q8_0) {
		st = emit(w, b, n, err);
	} else {
		for (size_t done = 0; done < n && !st;) {
			size_t m = sizeof(w->block) - w->block_fill < n - done ? sizeof(w->block) - w->block_fill : n - done;
			memcpy((unsigned char *)w->block + w->block_fill, b + done, m);
			w->block_fill += m;
			done += m;
			if (w->block_fill == sizeof(w->block)) {
				st = q8_0_block(w, w->block, err);
				w->block_fill = 0;
			}
		}
	}
	w->received += n;
	if (!st && w->received == o->in_bytes)
		st = finish_tensor(w, err);
	return st;
}

ti_status ti_gguf_writer_end(ti_gguf_writer *w, ti_error *err)
{
	while (w->current < w->count && w->received == w->tensors[w->current].in_bytes) {
		ti_status st = finish_tensor(w, err);
		if (st)
			return st;
	}
	if (w->current < w->count)
		return TI_FAIL(err, TI_E_INVALID, "GGUF writer: tensor %zu is missing data", w->current);
	return flush(w, err);
}

void ti_gguf_writer_free(ti_gguf_writer *w)
{
	if (!w)
		return;
	free(w->tensors);
	free(w->buf);
	free(w);
}
