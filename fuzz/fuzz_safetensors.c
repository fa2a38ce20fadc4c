/*
 * fuzz_safetensors.c - the safetensors reader and the sharded-checkpoint
 * index, on whole files.
 *
 * Each input is written to this process's scratch folder as
 * 'model.safetensors' (seeds: everything under fixtures/safetensors/, the index files
 * among them; both formats are JSON, so mutations cross between them) and
 * read twice:
 *
 *   1. ti_st_open(): the 8-byte size, the JSON header and every check of
 *      safetensors.h. An opened file is walked: every tensor in header and
 *      offset order, found again by name, its first and last bytes read
 *      with ti_st_read() (which must then succeed: open promised that the
 *      tensors tile the file), the metadata pairs; ti_st_sniff() must agree.
 *   2. ti_hf_index_open() on the same file: the weight_map, shard names and
 *      metadata checks of hf_index.h. An opened index is walked, and its
 *      shards checked with ti_hf_index_check_shards(): a weight_map naming
 *      'model.safetensors' makes the input its own shard. The tensor names
 *      of pass 1, when it opened, are checked against shard 0 too.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tinspect/hf_index.h"
#include "tinspect/safetensors.h"

enum { PEEK = 64 }; /* bytes read at each end of a tensor */

static void walk_file(const ti_st_file *f, const uint8_t *data, size_t size)
{
	const ti_st_info *info = ti_st_file_info(f);
	FUZZ_CHECK(info->file_size == size, "file of %zu bytes has size %llu", size, (unsigned long long)info->file_size);
	FUZZ_CHECK(info->data_start == 8 + info->header_size && info->data_start <= size, "data starts at %llu",
	           (unsigned long long)info->data_start);
	FUZZ_CHECK(ti_st_sniff(data, size, size), "an opened file fails the sniff");
	size_t n = ti_st_tensor_count(f);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const ti_st_tensor *t = ti_st_tensor_at(f, i);
		FUZZ_CHECK(t && t->name && t->dtype_name && t->shape, "tensor %zu", i);
		FUZZ_CHECK(t->index == i, "tensor %zu says it is %zu", i, t->index);
		FUZZ_CHECK(t->ndim >= 0 && t->ndim <= 64, "tensor '%s' of rank %d", t->name, t->ndim);
		FUZZ_CHECK(t->begin <= t->end && t->nbytes == t->end - t->begin, "tensor '%s' offsets", t->name);
		FUZZ_CHECK(t->offset == info->data_start + t->begin && t->offset + t->nbytes <= size,
		           "tensor '%s' lies outside the file", t->name);
		FUZZ_CHECK(ti_st_find(f, t->name) == t, "tensor '%s' is not found by name", t->name);
		FUZZ_CHECK(ti_st_tensor_by_offset(f, i) != NULL, "no tensor %zu by offset", i);
		(void)ti_st_dtype_name(t->dtype);
		total += t->nbytes;
		uint8_t buf[PEEK];
		size_t len = t->nbytes < PEEK ? (size_t)t->nbytes : PEEK;
		ti_error err;
		ti_error_clear(&err);
		ti_status s = ti_st_read(f, i, 0, buf, len, &err);
		FUZZ_CHECK(s == TI_OK, "reading tensor '%s': %s", t->name, err.message);
		FUZZ_CHECK(!memcmp(buf, data + t->offset, len), "tensor '%s' read other bytes", t->name);
		s = ti_st_read(f, i, t->nbytes - len, buf, len, &err);
		FUZZ_CHECK(s == TI_OK, "reading the end of tensor '%s': %s", t->name, err.message);
		/* One byte past the end is the caller's mistake, and must say so. */
		s = ti_st_read(f, i, t->nbytes, buf, 1, &err);
		FUZZ_CHECK(s == TI_E_INVALID, "reading past tensor '%s' gave %d", t->name, (int)s);
	}
	FUZZ_CHECK(total == info->data_size, "tensors hold %llu bytes of a %llu-byte buffer", (unsigned long long)total,
	           (unsigned long long)info->data_size);
	FUZZ_CHECK(ti_st_tensor_at(f, n) == NULL && ti_st_tensor_by_offset(f, n) == NULL, "tensor past the end");
	size_t m = ti_st_metadata_count(f);
	for (size_t i = 0; i < m; i++) {
		const ti_st_pair *p = ti_st_metadata_at(f, i);
		FUZZ_CHECK(p && p->key && p->value, "metadata pair %zu", i);
		FUZZ_CHECK(ti_st_metadata_get(f, p->key) != NULL, "metadata '%s' is not found by key", p->key);
	}
}

static void walk_index(const ti_hf_index *idx, const ti_st_file *f)
{
	size_t shards = ti_hf_index_shard_count(idx), weights = ti_hf_index_weight_count(idx);
	for (size_t i = 0; i < shards; i++) {
		const ti_hf_shard *sh = ti_hf_index_shard(idx, i);
		FUZZ_CHECK(sh && sh->file && sh->path, "shard %zu", i);
		FUZZ_CHECK(!strchr(sh->file, '/') && !strchr(sh->file, '\\') && strcmp(sh->file, "..") &&
		               strcmp(sh->file, ".") && sh->file[0],
		           "shard name '%s' leaves the folder", sh->file);
	}
	for (size_t i = 0; i < weights; i++) {
		const ti_hf_weight *w = ti_hf_index_weight(idx, i);
		FUZZ_CHECK(w && w->name && w->shard < shards, "weight %zu", i);
		FUZZ_CHECK(ti_hf_index_find(idx, w->name) == w, "weight '%s' is not found by name", w->name);
	}
	(void)ti_hf_index_total_size(idx);
	size_t m = ti_hf_index_metadata_count(idx);
	for (size_t i = 0; i < m; i++) {
		const ti_st_pair *p = ti_hf_index_metadata_at(idx, i);
		FUZZ_CHECK(p && p->key && p->value, "index metadata pair %zu", i);
	}

	ti_error err;
	ti_error_clear(&err);
	size_t torch = 0;
	ti_status s = ti_hf_index_check_shards(idx, NULL, &torch, &err);
	fuzz_check_status(s, &err, s ? NULL : (void *)idx);
	if (f && shards) {
		ti_error_clear(&err);
		s = ti_hf_index_check_safetensors(idx, 0, f, &err);
		fuzz_check_status(s, &err, s ? NULL : (void *)idx);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	fuzz_path(path, sizeof(path), "model.safetensors");
	fuzz_write_file(path, data, size);

	ti_st_file *f = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_st_open(path, NULL, &f, &err);
	fuzz_check_status(s, &err, f);
	if (s == TI_OK)
		walk_file(f, data, size);

	ti_hf_index *idx = NULL;
	ti_error_clear(&err);
	s = ti_hf_index_open(path, NULL, &idx, &err);
	fuzz_check_status(s, &err, idx);
	if (s == TI_OK)
		walk_index(idx, f);
	ti_hf_index_close(idx);
	ti_st_close(f);
	return 0;
}
