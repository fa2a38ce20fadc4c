/*
 * gguf.c - the source row for GGUF files (llama.cpp, ggml): each tensor is
 * its own contiguous storage at its offset, its shape in PyTorch's order
 * (the file's ne reversed), and the metadata pairs as text.
 *
 * A tensor of a plain ggml type (F32, F16, BF16, F64, I8 to I64) reads as
 * its bytes. Q8_0 and Q4_0 tensors read as float32, dequantized block by
 * block as ggml's dequantize_row_q8_0/q4_0 do, so convert, materialize and
 * diff see values; inspect still shows the stored type and its size. Other
 * quantized types (the K and IQ families...) are listed, with their bytes
 * and bits per weight, and refused by whatever needs their values.
 */
#include "source/source_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tinspect/cast.h"
#include "tinspect/gguf.h"

/* Where a dequantized tensor's blocks lie. */
typedef struct blocks {
	ti_io *io;
	uint64_t offset;
	uint32_t type;
} blocks;

enum { CHUNK_BLOCKS = 128 };

static float half_at(const unsigned char *b)
{
	float f;
	ti_error ignored;
	ti_error_clear(&ignored);
	ti_cast(TI_DT_FLOAT16, b, TI_DT_FLOAT32, &f, 1, 0, &ignored);
	return f;
}

/* Block k's 32 values: Q8_0 is d, q[32] (x = d*q); Q4_0 is d, 16 bytes (low nibbles first, x = d*(q-8)). */
static void dequantize(uint32_t type, const unsigned char *b, float *x)
{
	float d = half_at(b);
	if (type == TI_GGML_Q8_0) {
		for (int j = 0; j < 32; j++)
			x[j] = d * (float)(int8_t)b[2 + j];
		return;
	}
	for (int j = 0; j < 16; j++) {
		x[j] = d * (float)((b[2 + j] & 0x0f) - 8);
		x[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
	}
}

static ti_status generate(const void *ctx, ti_dtype dtype, uint64_t first, size_t count, void *out, ti_error *err)
{
	const blocks *q = ctx;
	const ti_ggml_type *ty = ti_ggml_type_of(q->type);
	unsigned char raw[CHUNK_BLOCKS * 34];
	float values[32];
	float *o = out;
	(void)dtype;
	while (count) {
		uint64_t block = first / 32, last = (first + count - 1) / 32;
		size_t n = last - block + 1 < CHUNK_BLOCKS ? (size_t)(last - block + 1) : CHUNK_BLOCKS;
		size_t want = n * ty->block_bytes, got = 0;
		ti_status rs = ti_io_read(q->io, q->offset + block * ty->block_bytes, raw, want, &got, err);
		if (rs)
			return rs;
		if (got < want)
			return TI_FAIL(err, TI_E_IO, "cannot read tensor data: the file is shorter than it was");
		for (size_t b = 0; b < n && count; b++) {
			dequantize(q->type, raw + b * ty->block_bytes, values);
			for (size_t j = first % 32; j < 32 && count; j++, count--, first++)
				*o++ = values[j];
		}
	}
	return TI_OK;
}

static ti_entry make_entry(ti_source *s, const ti_source_tensor *t, const ti_gguf_tensor *g, ti_value *v,
                           ti_tensor *x, ti_storage *sto, ti_tensor_ext *ext)
{
	char key[24];
	snprintf(key, sizeof(key), "%zu", t->storage);
	const ti_ggml_type *ty = ti_ggml_type_of(g->type);
	bool blocked = ty->dtype == TI_DT_INVALID;
	*sto = (ti_storage){.key = ti_arena_strdup(&s->arena, key), .dtype = t->dtype, .numel = t->numel,
	                    .nbytes = (int64_t)g->nbytes, .location = "cpu", .record_index = -1, .tensor_count = 1,
	                    .index = t->storage};
	*x = (ti_tensor){.dtype = t->dtype, .layout = TI_LAYOUT_STRIDED, .ndim = t->ndim, .shape = t->shape,
	                 .stride = t->stride, .numel = t->numel, .nbytes = (int64_t)g->nbytes, .storage = sto,
	                 .rebuild = "gguf"};
	ext->ggml_type = ty->name;
	ext->data_offset = (int64_t)g->data_offset;
	if (blocked) {
		ext->block_type = ty->name;
		ext->bits_per_weight = 8.0 * ty->block_bytes / ty->block_size;
	}
	x->ext = ext;
	v->kind = TI_TENSOR;
	v->as.tensor = x;
	return (ti_entry){t->name, v};
}

static ti_status open_gguf(ti_source *s, const char *path, ti_error *err)
{
	source_part *p;
	ti_status st = source_add_part(s, path, &p, err);
	if (!st)
		st = ti_gguf_open_io(p->io, &p->gguf, err);
	if (st)
		return st;
	size_t n = ti_gguf_tensor_count(p->gguf);
	ti_entry *entries = ti_arena_calloc(&s->arena, n + 1, sizeof(*entries));
	ti_value *values = ti_arena_calloc(&s->arena, n + 1, sizeof(*values));
	ti_tensor *tensors = ti_arena_calloc(&s->arena, n + 1, sizeof(*tensors));
	ti_storage *storages = ti_arena_calloc(&s->arena, n + 1, sizeof(*storages));
	ti_tensor_ext *exts = ti_arena_calloc(&s->arena, n + 1, sizeof(*exts));
	if (!entries || !values || !tensors || !storages || !exts || source_reserve(s, n, n, err))
		return source_out_of_memory(err);
	for (size_t i = 0; i < n; i++) {
		const ti_gguf_tensor *g = ti_gguf_tensor_at(p->gguf, i);
		const ti_ggml_type *ty = ti_ggml_type_of(g->type);
		ti_source_tensor *t = source_add_tensor(s);
		int64_t *stride = source_contiguous_strides(s, g->shape, g->ndim);
		if (!t || !stride)
			return source_out_of_memory(err);
		source_place where = {.io = p->io, .offset = g->offset, .record = -1};
		ti_dtype dtype = ty->dtype;
		uint64_t nbytes = g->nbytes;
		if (g->type == TI_GGML_Q8_0 || g->type == TI_GGML_Q4_0) {
			blocks *q = ti_arena_calloc(&s->arena, 1, sizeof(*q));
			if (!q)
				return source_out_of_memory(err);
			*q = (blocks){p->io, g->offset, g->type};
			where.gen = generate;
			where.gen_ctx = q;
			dtype = TI_DT_FLOAT32;
			nbytes = (uint64_t)g->numel * 4;
		} else if (dtype == TI_DT_INVALID) {
			dtype = TI_DT_UINT8; /* its bytes, which no PyTorch dtype reads */
			t->unsupported = ti_arena_printf(&s->arena, "a GGUF %s tensor (ggml quantized blocks tinspect does not "
			                                 "dequantize; Q8_0 and Q4_0 it does)", ty->name);
			if (!t->unsupported)
				return source_out_of_memory(err);
		}
		if (!source_add_storage(s, dtype, nbytes, true, where))
			return source_out_of_memory(err);
		t->name = g->name;
		t->dtype = dtype;
		t->ndim = g->ndim;
		t->shape = g->shape;
		t->stride = stride;
		t->numel = g->numel;
		t->storage = s->storage_count - 1;
		entries[i] = make_entry(s, t, g, &values[i], &tensors[i], &storages[i], &exts[i]);
	}
	p->entries = entries;
	p->entry_count = n;
	size_t m = ti_gguf_kv_count(p->gguf);
	s->metadata = ti_arena_calloc(&s->arena, m + 1, sizeof(*s->metadata));
	if (!s->metadata)
		return source_out_of_memory(err);
	for (size_t i = 0; i < m; i++)
		s->metadata[i] = (ti_source_pair){ti_gguf_kv_at(p->gguf, i)->key, ti_gguf_kv_at(p->gguf, i)->text};
	s->metadata_count = m;
	return TI_OK;
}

const source_row source_gguf = {.format = TI_SOURCE_GGUF, .kind = TI_FILE_GGUF, .open = open_gguf};
