/*
 * fuzz_gguf.c - the GGUF reader and its source row, on whole files.
 *
 * Each input is written to this process's scratch folder as 'model.gguf'
 * (seeds: fixtures/gguf/, the damaged ones among them) and read twice:
 *
 *   1. ti_gguf_open(): the magic, version, counts, metadata values (every
 *      type, nested arrays), tensor infos and every check of gguf.h. An
 *      opened file is walked: each tensor must lie inside the file, aligned,
 *      its shape's product its numel, its bytes its ggml type's blocks; each
 *      pair found again by key.
 *   2. ti_source_open() on the same path: the source row must agree with
 *      pass 1 (same count of tensors, same names), and the first and last
 *      elements of each readable tensor (Q8_0 and Q4_0 dequantized) read.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tinspect/gguf.h"
#include "tinspect/source.h"

static void walk_file(const ti_gguf_file *f, size_t size)
{
	const ti_gguf_info *info = ti_gguf_file_info(f);
	FUZZ_CHECK(info->file_size == size, "file of %zu bytes has size %llu", size, (unsigned long long)info->file_size);
	FUZZ_CHECK(info->version == 2 || info->version == 3, "version %u", (unsigned)info->version);
	FUZZ_CHECK(info->alignment && !(info->alignment & (info->alignment - 1)), "alignment %llu",
	           (unsigned long long)info->alignment);
	for (size_t i = 0; i < ti_gguf_tensor_count(f); i++) {
		const ti_gguf_tensor *t = ti_gguf_tensor_at(f, i);
		const ti_ggml_type *ty = ti_ggml_type_of(t->type);
		FUZZ_CHECK(t && t->name && ty && t->index == i, "tensor %zu", i);
		FUZZ_CHECK(t->ndim >= 0 && t->ndim <= TI_GGUF_MAX_DIMS, "tensor '%s' of rank %d", t->name, t->ndim);
		int64_t numel = 1;
		for (int d = 0; d < t->ndim; d++) {
			FUZZ_CHECK(t->shape[d] >= 0, "tensor '%s' dimension %d", t->name, d);
			numel *= t->shape[d];
		}
		FUZZ_CHECK(numel == t->numel, "tensor '%s' numel", t->name);
		FUZZ_CHECK(t->nbytes == (uint64_t)numel / ty->block_size * ty->block_bytes, "tensor '%s' bytes", t->name);
		FUZZ_CHECK(t->data_offset % info->alignment == 0, "tensor '%s' misaligned", t->name);
		FUZZ_CHECK(t->offset == info->data_start + t->data_offset && t->offset + t->nbytes <= size,
		           "tensor '%s' lies outside the file", t->name);
	}
	FUZZ_CHECK(ti_gguf_tensor_at(f, ti_gguf_tensor_count(f)) == NULL, "tensor past the end");
	for (size_t i = 0; i < ti_gguf_kv_count(f); i++) {
		const ti_gguf_kv *kv = ti_gguf_kv_at(f, i);
		FUZZ_CHECK(kv && kv->key && kv->text && kv->type < TI_GGUF_VALUE_TYPE_COUNT, "pair %zu", i);
		FUZZ_CHECK(ti_gguf_kv_find(f, kv->key) == kv, "pair '%s' is not found by key", kv->key);
	}
}

static void walk_source(ti_source *src, const ti_gguf_file *f)
{
	size_t n = ti_source_tensor_count(src);
	FUZZ_CHECK(!f || n == ti_gguf_tensor_count(f), "source lists %zu tensors", n);
	for (size_t i = 0; i < n; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		FUZZ_CHECK(t && t->name, "source tensor %zu", i);
		FUZZ_CHECK(!f || !strcmp(t->name, ti_gguf_tensor_at(f, i)->name), "source tensor %zu named '%s'", i, t->name);
		const ti_source_storage *st = ti_source_storage_at(src, t->storage);
		size_t esize = ti_dtype_size(st->dtype);
		if (t->unsupported || !st->nbytes || !esize)
			continue;
		unsigned char buf[16];
		ti_error err;
		ti_error_clear(&err);
		ti_status s = ti_source_read(src, t->storage, 0, buf, esize, &err);
		FUZZ_CHECK(s == TI_OK, "reading tensor '%s': %s", t->name, err.message);
		s = ti_source_read(src, t->storage, st->nbytes - esize, buf, esize, &err);
		FUZZ_CHECK(s == TI_OK, "reading the end of tensor '%s': %s", t->name, err.message);
	}
	size_t count;
	ti_error err;
	ti_error_clear(&err);
	const ti_entry *e = ti_source_entries(src, &count, &err);
	FUZZ_CHECK(e || !count, "no entries");
	for (size_t i = 0; i < ti_source_metadata_count(src); i++)
		FUZZ_CHECK(ti_source_metadata_at(src, i)->key && ti_source_metadata_at(src, i)->value, "metadata %zu", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	fuzz_path(path, sizeof(path), "model.gguf");
	fuzz_write_file(path, data, size);

	ti_gguf_file *f = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_gguf_open(path, &f, &err);
	fuzz_check_status(s, &err, f);
	if (s == TI_OK)
		walk_file(f, size);

	ti_source *src = NULL;
	ti_error_clear(&err);
	s = ti_source_open(path, &src, &err);
	fuzz_check_status(s, &err, src);
	if (s == TI_OK)
		walk_source(src, ti_source_get_format(src) == TI_SOURCE_GGUF ? f : NULL);
	ti_source_close(src);
	ti_gguf_close(f);
	return 0;
}
