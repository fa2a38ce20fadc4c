/*
 * diff.h - two checkpoints compared by name, in any formats source.h reads.
 *
 * Tensors are matched by name: a tensor of A missing from B is removed, one
 * of B missing from A added, and a removed tensor whose bytes equal an added
 * one's (same dtype and shape) is renamed instead. A tensor in both may have
 * changed shape, dtype, ties (the first tensor of both checkpoints that
 * shares its storage, in A's order, is another in A than in B) and, when the
 * values are read, values. Non-tensor values (a torch zip's ints and strings,
 * safetensors __metadata__) are compared by name and repr.
 *
 * Values are read in chunks of TI_DIFF_CHUNK elements a side, whatever a
 * tensor's size; a view is read through its strides and offset. Two
 * elements a and b (A's and B's, both as float64) are close when
 * |a - b| <= atol + rtol * |b| (torch.allclose), or when they are equal
 * (+inf and +inf), or both NaN. max_abs is the largest |a - b|, max_rel the
 * largest |a - b| / |b|, where an element equal in both counts 0 (also
 * 0 and 0) and one that differs against b == 0 counts +inf; a NaN on one
 * side only makes both NaN. Bit-identical means the same bytes, so -0.0
 * against 0.0 is equal but not bit-identical, and NaN against the same NaN
 * is both. A dtype with no float64 reading (complex, float8, quantized,
 * the sub-byte float4/float6 of safetensors) is compared bit for bit: an
 * element differs or not, and there is no max_abs; a sub-byte element is
 * its bits of the packed bytes, the lowest bits of a byte first.
 *
 * Ownership: the report lives in the arena given; it copies what it keeps
 * of the sources' tensors, so it outlives them.
 */
#ifndef TINSPECT_DIFF_H
#define TINSPECT_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/source.h"

/* Elements read per side and chunk: 1 MiB of float32, which the comparison then finds in cache (memory stays
 * below 16 MiB whatever the tensors). */
#define TI_DIFF_CHUNK ((size_t)1 << 18)

/* What changed in one tensor: bits of ti_diff_tensor.changes. */
enum {
	TI_DIFF_ADDED = 1u << 0,
	TI_DIFF_REMOVED = 1u << 1,
	TI_DIFF_RENAMED = 1u << 2,
	TI_DIFF_SHAPE = 1u << 3,
	TI_DIFF_DTYPE = 1u << 4,
	TI_DIFF_TIES = 1u << 5,
	TI_DIFF_VALUES = 1u << 6  /* some elements are not close (values read) */
};

typedef struct ti_diff_options {
	bool values;       /* read both sides' data and compare it */
	double atol, rtol; /* what close means; 0 and 0: equal */
	/* A's and B's non-tensor values: only those named under this prefix ("model."), without it; NULL: all */
	const char *value_prefix[2];
	/*
	 * With values: called after each chunk compared with the bytes read of
	 * both sides so far and in all (the pairs compared, in the order their
	 * bytes lie in A's files); NULL for none.
	 */
	void (*progress)(void *user, uint64_t done, uint64_t total);
	void *progress_user;
} ti_diff_options;

typedef struct ti_diff_tensor {
	const char *name;       /* A's name; B's for an added tensor */
	const char *renamed_to; /* TI_DIFF_RENAMED: B's name for it */
	unsigned changes;       /* TI_DIFF_* bits; 0: the same (as far as it was compared) */
	bool in_a, in_b;        /* present under this name (a renamed tensor: in_a only) */
	ti_dtype dtype_a, dtype_b;
	int ndim_a, ndim_b;
	const int64_t *shape_a, *shape_b;
	int64_t numel;          /* A's; B's for an added tensor */
	const char *tie_a, *tie_b; /* the first tensor of both sharing its storage in A, in B; NULL for none */
	/* Values (options.values, tensors in both with the same shape): */
	bool compared;          /* the data was read */
	const char *not_compared; /* why not, when values were asked for: "shape changed", "no data in A" */
	bool bit_identical;     /* the same bytes (same dtype) */
	bool has_max;           /* max_abs and max_rel were computed (dtypes ti_cast reads) */
	double max_abs, max_rel;
	uint64_t not_close;     /* elements that are not close */
} ti_diff_tensor;

/* A non-tensor value that differs: NULL on the side that lacks it. */
typedef struct ti_diff_value {
	const char *name; /* an entry's name, or "__metadata__.KEY" */
	const char *a, *b;
} ti_diff_value;

typedef struct ti_diff_report {
	ti_diff_tensor *tensors; /* A's tensors in A's order, then B's additions in B's order */
	size_t tensor_count;
	ti_diff_value *values;   /* only those that differ: A's order, then B's additions */
	size_t value_count;
	size_t common;           /* tensors in both under the same name */
	size_t added, removed, renamed, shape, dtype, ties, changed_values, bit_different;
	bool same;               /* nothing differs */
	int failed_input;        /* after a failure: 0 when reading A failed, 1 when B */
} ti_diff_report;

/*
 * Compares a with b. TI_OK with the report filled, whatever it says; a
 * failure to read either (the report's failed_input says which) is the
 * reader's status: TI_E_IO, TI_E_CORRUPT (a view past its storage),
 * TI_E_NOMEM. TI_E_INVALID for a negative or NaN tolerance.
 */
ti_status ti_diff_run(ti_source *a, ti_source *b, const ti_diff_options *options, ti_arena *arena,
                      ti_diff_report *out, ti_error *err);

#endif
