/*
 * stats.h - a checkpoint's health: per tensor, what its values are.
 *
 * For each tensor of a source: the finite range, mean and standard
 * deviation, how many values are NaN, +inf and -inf, the fraction that are
 * exactly zero, and a checksum of its bytes. Values are read as
 * torch.load(map_location='cpu') would hold them (byte order, conjugate and
 * negative bits resolved), through each view's shape, strides and offset,
 * in chunks of TI_STATS_CHUNK elements: memory stays below 48 MiB whatever
 * the tensor's size (view.h's window and offsets included).
 *
 * What is computed, in float64:
 *   min, max      over the finite values only. torch.min() returns nan when
 *                 any value is NaN and inf when any is inf; the finite range
 *                 next to the NaN and inf counts says more. Integer and bool
 *                 tensors: exact (min_int, max_int), bool as 0 and 1.
 *   mean, std     over the finite values: torch.mean and torch.std (unbiased,
 *                 correction=1, torch.std's default) of x[x.isfinite()] in
 *                 float64. Two passes over each chunk (its mean, then the
 *                 sum of squared deviations from it), chunks combined with
 *                 Chan, Golub and LeVeque's pairwise update: stable however
 *                 large the tensor or its mean. std needs 2 finite values.
 *                 float64 values past about 1e154 overflow the squares (and
 *                 past 1.8e308 / n the sum) to inf, as torch.std's do.
 *   nan, posinf, neginf   counts; integers and bool have none.
 *   zeros         values == 0 (-0.0 counts), of all elements.
 *   checksum      XXH64, seed 0 (cuda.h's ti_checksum), of the tensor's bytes
 *                 in logical order, as t.contiguous() holds them in memory
 *                 (little endian): in Python,
 *                 xxhash.xxh64(t.resolve_conj().resolve_neg().contiguous()
 *                 .reshape(-1).view(torch.uint8).numpy().tobytes()).intdigest().
 *                 An empty tensor's is XXH64 of no bytes, 0xef46db3751d8e999.
 *
 * Complex, float8, bits and sub-byte dtypes (their bytes packed, as the
 * file holds them) get the checksum and the element count
 * only (has_values false). A tensor with no data (saved from the meta
 * device), a quantized or a sparse one gets nothing: skipped says why.
 *
 * On CUDA (options.cuda), each storage is uploaded to the device through
 * the driver as `materialize --device cuda` places it (ti_place_upload),
 * one storage at a time, and every statistic is computed on the host from
 * the bytes copied back from the device in chunks (cuMemcpyDtoH): what
 * arrived on the device, not what was read from the file. No kernel runs.
 *
 * Ownership: the caller owns the output array; nothing is kept.
 */
#ifndef TINSPECT_STATS_H
#define TINSPECT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"
#include "tinspect/source.h"
#include "tinspect/view.h"

/* Elements per chunk: 1 MiB of float32, which two passes find in cache. */
#define TI_STATS_CHUNK ((size_t)1 << 18)

typedef struct ti_tensor_stats {
	const char *skipped;  /* why nothing was read ("no data", "a quantized tensor"), or NULL */
	bool has_values;      /* the statistics below the counts were computed (not complex, float8, bits) */
	bool integer;         /* integer or bool: min_int and max_int are exact */
	uint64_t count;       /* elements read: numel */
	uint64_t finite;      /* of them finite: min..std are over these */
	uint64_t nan, posinf, neginf, zeros;
	double min, max;      /* valid when finite > 0 */
	int64_t min_int, max_int; /* integer: the same, exact (uint64 values above INT64_MAX: use min, max) */
	double mean;          /* valid when finite > 0 */
	double std;           /* valid when finite > 1 */
	uint64_t checksum;    /* XXH64 of the logical bytes (skipped: 0) */
} ti_tensor_stats;

typedef struct ti_stats_options {
	bool cuda;          /* upload to cuda:cuda_index and compute from what the device holds */
	int cuda_index;
	void (*progress)(void *user, uint64_t done, uint64_t total); /* bytes of tensor data read */
	void *progress_user;
} ti_stats_options;

/*
 * One tensor t of src, read through reader r (a reader of the source's
 * bytes, or of one's own: view.h), into *out. TI_E_CORRUPT for a view that
 * reaches past its storage; the reader's status when a read fails.
 */
ti_status ti_stats_tensor(ti_source *src, const ti_source_tensor *t, ti_view_reader *r, ti_tensor_stats *out,
                          ti_error *err);

/*
 * The tensors of src whose indices are which[0..n-1], into out[0..n-1].
 * On CUDA, a missing driver or device is TI_E_IO "CUDA not available: ...",
 * as ti_place says it. A failure names the tensor (err's member).
 */
ti_status ti_stats_run(ti_source *src, const size_t *which, size_t n, const ti_stats_options *options,
                       ti_tensor_stats *out, ti_error *err);

/* Whether the tensor holds NaN or an infinity. */
static inline bool ti_stats_nonfinite(const ti_tensor_stats *s) { return s->nan || s->posinf || s->neginf; }

#endif
