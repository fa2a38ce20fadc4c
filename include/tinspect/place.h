/*
 * place.h - materializing a source's storages in memory: on the CPU, or on
 * a CUDA device through the driver (cuda.h).
 *
 * Every storage that a tensor views is allocated once (views and tied
 * weights stay shared, as with to_empty) and filled from the source: the
 * file's bytes, or the fill set on it (ti_source_set_fill). Constant fills on
 * CUDA happen on the device; everything else streams through the driver's
 * bounded pinned buffers. Nothing is kept: the memory is freed before
 * ti_place returns, after the figures are taken.
 */
#ifndef TINSPECT_PLACE_H
#define TINSPECT_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "tinspect/error.h"
#include "tinspect/source.h"

typedef struct ti_place_options {
	bool cuda;            /* false: the CPU */
	int cuda_index;       /* N of cuda:N */
	bool verify;          /* read back what was placed and compare checksums */
	void (*progress)(void *user, uint64_t done, uint64_t total);
	void *progress_user;
} ti_place_options;

typedef struct ti_place_stats {
	size_t storages;
	uint64_t bytes;           /* placed */
	uint64_t filled_on_device;/* of those, written by device fills */
	bool verified;            /* verify was asked and every checksum matched */
	/* CUDA: the driver's figures before allocating and after placing */
	char device[256];
	uint64_t free_before, free_after, total;
} ti_place_stats;

struct ti_fill_policy;

/*
 * From now on storage i's bytes are the fill policy's (fill.h), under the
 * random key (seed, name): reads compute them (a generator, source.h). The
 * policy must be one ti_fill() writes (not init or load; the caller
 * resolves those), checked for the storage's dtype; it is copied.
 */
ti_status ti_source_set_fill(ti_source *src, size_t storage, const struct ti_fill_policy *policy, uint64_t seed,
                             const char *name, ti_error *err);
/* The fill set on storage i, or NULL when its bytes come from a file. */
const struct ti_fill_policy *ti_source_fill(const ti_source *src, size_t storage);

struct ti_cuda;

/* ti_cuda_open, with TI_E_IO's message "CUDA not available: WHY", as ti_place says it. */
ti_status ti_place_cuda_open(int index, struct ti_cuda **out, ti_error *err);

/*
 * Streams storage i's bytes (its file's, or the fill set on it) into ptr,
 * which the caller allocated on cuda with the storage's nbytes, through the
 * driver's staging buffers, as ti_place does. *checksum (may be NULL) gets
 * the XXH64 of the bytes sent when want_checksum; on_piece (may be NULL)
 * hears of each piece's size as it goes. stats.h uploads with it.
 */
ti_status ti_place_upload(struct ti_cuda *cuda, ti_source *src, size_t i, uint64_t ptr, bool want_checksum,
                          uint64_t *checksum, void (*on_piece)(void *user, size_t n), void *user, ti_error *err);

/* Places every storage of src. TI_E_IO "CUDA not available: ..." when the driver or device is missing. */
ti_status ti_place(ti_source *src, const ti_place_options *options, ti_place_stats *stats, ti_error *err);

#endif
