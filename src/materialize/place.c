/*
 * place.c - storages into CPU or CUDA memory (see tinspect/place.h).
 */
#include "tinspect/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinspect/cuda.h"
#include "tinspect/fill.h"

enum { CHUNK = 8 << 20 };

/* Which storages some tensor views: only those are placed. */
static bool *used_storages(const ti_source *src)
{
	size_t n = ti_source_storage_count(src);
	bool *used = calloc(n + 1, 1);
	for (size_t i = 0; used && i < ti_source_tensor_count(src); i++)
		if (!ti_source_tensor_at(src, i)->unsupported)
			used[ti_source_tensor_at(src, i)->storage] = true;
	return used;
}

/* A tensor with nothing to place (saved from the meta device) fails as PyTorch does; quantized and sparse ones are refused. */
static ti_status placeable(const ti_source *src, ti_error *err)
{
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		if (t->unsupported && strstr(t->unsupported, "meta device"))
			return TI_FAIL(err, TI_E_INVALID, "Cannot copy out of meta tensor; no data! ('%s')", t->name);
		if (t->unsupported)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is %s: it cannot be materialized", t->name, t->unsupported);
	}
	return TI_OK;
}

static ti_status need_data(const ti_source *src, size_t i, ti_error *err)
{
	if (ti_source_storage_at(src, i)->has_data)
		return TI_OK;
	for (size_t k = 0; k < ti_source_tensor_count(src); k++)
		if (ti_source_tensor_at(src, k)->storage == i)
			return TI_FAIL(err, TI_E_INVALID, "Cannot copy out of meta tensor; no data! ('%s')",
			               ti_source_tensor_at(src, k)->name);
	return TI_FAIL(err, TI_E_INVALID, "Cannot copy out of meta tensor; no data!");
}

/* ---- CPU ---- */

static ti_status place_cpu(ti_source *src, const bool *used, const ti_place_options *o, ti_place_stats *stats,
                           uint64_t total, ti_error *err)
{
	size_t n = ti_source_storage_count(src);
	void **memory = calloc(n + 1, sizeof(*memory));
	char *check = o->verify ? malloc(CHUNK) : NULL;
	ti_status st = memory && (!o->verify || check) ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < n && !st; i++) {
		if (!used[i])
			continue;
		uint64_t bytes = ti_source_storage_at(src, i)->nbytes;
		if (bytes > SIZE_MAX || !(memory[i] = malloc(bytes ? (size_t)bytes : 1))) {
			st = TI_FAIL(err, TI_E_NOMEM, "cannot allocate %llu bytes on the CPU", (unsigned long long)bytes);
			break;
		}
		for (uint64_t at = 0; at < bytes && !st; at += CHUNK) {
			size_t m = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
			st = ti_source_read(src, i, at, (char *)memory[i] + at, m, err);
			stats->bytes += m;
			if (o->progress)
				o->progress(o->progress_user, stats->bytes, total);
		}
		stats->storages++;
	}
	/* verify: the source read again, chunk by chunk, against what memory holds */
	for (size_t i = 0; i < n && !st && o->verify; i++) {
		uint64_t bytes = used[i] ? ti_source_storage_at(src, i)->nbytes : 0;
		for (uint64_t at = 0; at < bytes && !st; at += CHUNK) {
			size_t m = bytes - at < CHUNK ? (size_t)(bytes - at) : CHUNK;
			st = ti_source_read(src, i, at, check, m, err);
			if (!st && memcmp(check, (char *)memory[i] + at, m))
				st = TI_FAIL(err, TI_E_IO, "verify: storage %zu differs from its source at byte %llu", i,
				             (unsigned long long)at);
		}
	}
	stats->verified = o->verify && !st;
	for (size_t i = 0; memory && i < n; i++)
		free(memory[i]);
	free(memory);
	free(check);
	return st;
}

/* ---- CUDA ---- */

/* A fill whose every element is the same bytes: done on the device. */
static bool constant_fill(const ti_fill_policy *p)
{
	return p && (p->kind == TI_FILL_ZEROS || p->kind == TI_FILL_ONES || p->kind == TI_FILL_FULL) &&
	       p->zero_begin == p->zero_end;
}

ti_status ti_place_cuda_open(int index, ti_cuda **out, ti_error *err)
{
	ti_status st = ti_cuda_open(index, out, err);
	if (st == TI_E_IO) {
		char why[TI_ERROR_MESSAGE_MAX];
		snprintf(why, sizeof(why), "%s", err->message);
		TI_FAIL(err, TI_E_IO, "CUDA not available: %s", why);
	}
	return st;
}

ti_status ti_place_upload(ti_cuda *cuda, ti_source *src, size_t i, ti_cuda_ptr ptr, bool want_checksum,
                          uint64_t *checksum, void (*on_piece)(void *user, size_t n), void *user, ti_error *err)
{
	uint64_t bytes = ti_source_storage_at(src, i)->nbytes;
	ti_status st = ti_cuda_upload_begin(cuda, ptr, bytes, want_checksum, err);
	size_t esize = ti_dtype_size(ti_source_storage_at(src, i)->dtype);
	for (uint64_t at = 0; !st && at < bytes;) {
		void *window;
		size_t cap;
		if ((st = ti_cuda_upload_window(cuda, &window, &cap, err)))
			break;
		size_t m = bytes - at < cap ? (size_t)(bytes - at) : cap;
		if (m < bytes - at && esize > 1)
			m -= m % esize; /* fills, swaps and conj/neg bits work in whole elements */
		if (!(st = ti_source_read(src, i, at, window, m, err)))
			st = ti_cuda_upload_commit(cuda, m, err);
		at += m;
		if (on_piece)
			on_piece(user, m);
	}
	if (st) {
		ti_cuda_upload_abort(cuda);
		return st;
	}
	return ti_cuda_upload_end(cuda, checksum, err);
}

/* materialize's progress: each piece uploaded counts into the figures and the bar. */
typedef struct placing {
	ti_place_stats *stats;
	const ti_place_options *o;
	uint64_t total;
} placing;

static void count_piece(void *user, size_t n)
{
	placing *p = user;
	p->stats->bytes += n;
	if (p->o->progress)
		p->o->progress(p->o->progress_user, p->stats->bytes, p->total);
}

static ti_status upload(ti_cuda *cuda, ti_source *src, size_t i, ti_cuda_ptr ptr, uint64_t bytes, bool verify,
                        ti_place_stats *stats, const ti_place_options *o, uint64_t total, ti_error *err)
{
	placing p = {.stats = stats, .o = o, .total = total};
	uint64_t sent, back;
	ti_status st = ti_place_upload(cuda, src, i, ptr, verify, &sent, count_piece, &p, err);
	if (st || !verify)
		return st;
	if ((st = ti_cuda_checksum(cuda, ptr, bytes, &back, err)))
		return st;
	return sent == back ? TI_OK
	                    : TI_FAIL(err, TI_E_IO, "verify: storage %zu reads back from the device with another checksum", i);
}

static ti_status place_cuda(ti_source *src, const bool *used, const ti_place_options *o, ti_place_stats *stats,
                            uint64_t total, ti_error *err)
{
	ti_cuda *cuda;
	ti_status st = ti_place_cuda_open(o->cuda_index, &cuda, err);
	if (st)
		return st;
	const ti_cuda_info *info = ti_cuda_device_info(cuda);
	snprintf(stats->device, sizeof(stats->device), "cuda:%d (%.200s)", info->index, info->name);
	st = ti_cuda_mem_info(cuda, &stats->free_before, &stats->total, err);
	size_t n = ti_source_storage_count(src);
	for (size_t i = 0; i < n && !st; i++) {
		if (!used[i])
			continue;
		const ti_source_storage *s = ti_source_storage_at(src, i);
		const ti_fill_policy *fill = ti_source_fill(src, i);
		ti_cuda_ptr ptr;
		if ((st = ti_cuda_alloc(cuda, s->nbytes, &ptr, err)))
			break;
		stats->storages++;
		if ((fill && fill->kind == TI_FILL_EMPTY) || !s->nbytes)
			continue;
		if (constant_fill(fill)) {
			unsigned char pattern[TI_CUDA_PATTERN_MAX];
			size_t esize = ti_dtype_size(s->dtype);
			if (!(st = ti_source_read(src, i, 0, pattern, esize <= sizeof(pattern) ? esize : 0, err)))
				st = ti_cuda_fill(cuda, ptr, s->nbytes, pattern, esize, err);
			stats->bytes += s->nbytes;
			stats->filled_on_device += s->nbytes;
			if (!st && o->verify) {
				/* the device's bytes against the same fill computed on the host */
				ti_checksum c;
				ti_checksum_init(&c);
				for (uint64_t at = 0; at < s->nbytes; at += sizeof(pattern) * 4096) {
					unsigned char block[sizeof(pattern) * 4096];
					size_t m = s->nbytes - at < sizeof(block) ? (size_t)(s->nbytes - at) : sizeof(block);
					m -= m % esize;
					if ((st = ti_source_read(src, i, at, block, m, err)))
						break;
					ti_checksum_update(&c, block, m);
				}
				uint64_t back;
				if (!st && !(st = ti_cuda_checksum(cuda, ptr, s->nbytes, &back, err)) && back != ti_checksum_final(&c))
					st = TI_FAIL(err, TI_E_IO, "verify: storage %zu reads back from the device with another checksum", i);
			}
			if (o->progress)
				o->progress(o->progress_user, stats->bytes, total);
			continue;
		}
		st = upload(cuda, src, i, ptr, s->nbytes, o->verify, stats, o, total, err);
	}
	if (!st)
		st = ti_cuda_mem_info(cuda, &stats->free_after, &stats->total, err);
	stats->verified = o->verify && !st;
	ti_cuda_close(cuda); /* frees every allocation */
	return st;
}

ti_status ti_place(ti_source *src, const ti_place_options *o, ti_place_stats *stats, ti_error *err)
{
	memset(stats, 0, sizeof(*stats));
	snprintf(stats->device, sizeof(stats->device), "cpu");
	bool *used = used_storages(src);
	if (!used)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	uint64_t total = 0;
	ti_status st = placeable(src, err);
	for (size_t i = 0; i < ti_source_storage_count(src) && !st; i++)
		if (used[i]) {
			st = need_data(src, i, err);
			total += ti_source_storage_at(src, i)->nbytes;
		}
	if (!st)
		st = o->cuda ? place_cuda(src, used, o, stats, total, err) : place_cpu(src, used, o, stats, total, err);
	free(used);
	return st;
}
