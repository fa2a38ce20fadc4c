/*
 * convert.h - moving a source's tensors into a new torch zip or safetensors
 * file: selecting, renaming, casting, and laying storages out.
 *
 * Memory is bounded by a fixed buffer, or by the largest view that is not
 * contiguous (its storage span is read at once to gather it), never by the
 * checkpoint. Data is streamed from the source to the writer.
 *
 * Layout. By default views are written compactly: each distinct view (one
 * storage, offset, shape and stride) becomes a contiguous storage of its
 * own, and tensors that are the same view (tied weights) share it. With
 * keep_storage, a torch output keeps the source's storages whole and every
 * tensor's offset and strides. safetensors forbids aliasing: a tied tensor
 * is written once, and each other name is recorded in __metadata__ as
 * "tie.NAME": "FIRST", which a safetensors source reads back as a tie.
 * A view saved with PyTorch 2.x's conjugate or negative bit reads as its
 * values through a storage of its own (source.h): it is written resolved,
 * without the bit, and never ties with a view of the same bytes without it.
 */
#ifndef TINSPECT_CONVERT_H
#define TINSPECT_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"
#include "tinspect/source.h"

/*
 * NumPy outputs (npy.h) have no shared storage: each tensor is written
 * whole, ties as copies. A .npy holds exactly one array; a .npz names each
 * member NAME.npy, as np.savez does.
 */
typedef enum ti_output_format { TI_OUT_TORCH_ZIP, TI_OUT_SAFETENSORS, TI_OUT_NPY, TI_OUT_NPZ, TI_OUT_GGUF } ti_output_format;

typedef struct ti_rename {
	const char *from, *to; /* name prefix FROM becomes TO */
} ti_rename;

typedef struct ti_convert_options {
	ti_output_format format;
	const char *key;            /* take the tensors under KEY. (e.g. "model" of a training checkpoint) */
	const char *strip_prefix;   /* remove this prefix where present ("module.") */
	const ti_rename *renames;   /* applied in order, first match wins */
	size_t rename_count;
	const char *const *select;  /* globs on the name after key, strip and renames; none: all */
	size_t select_count;
	const char *const *exclude; /* globs; a match is left out */
	size_t exclude_count;
	ti_dtype dtype;             /* cast floating tensors to this; TI_DT_INVALID: keep */
	bool keep_storage;          /* torch output: the source's storages as they are */
	bool untie;                 /* every name its own tensor and data: no tie, in any format */
	/*
	 * GGUF output: floating tensors of two or more dimensions whose last is
	 * a multiple of 32 are written as Q8_0 (the rest as --dtype says).
	 * GGUF has no aliasing: a tied tensor is written in full under each name.
	 */
	bool gguf_q8_0;
	/* added to the refusal of a tensor that cannot be written ("leave it out with --exclude"); NULL: nothing */
	const char *refusal_hint;
	size_t buffer_bytes;        /* streaming buffer; 0: 8 MiB; at least 4 KiB */
	uint64_t gather_max;        /* most bytes read at once to gather a strided view; 0: 16 GiB */
	/* progress: called after each piece is written, with the bytes of data so far */
	void (*progress)(void *user, uint64_t done, uint64_t total);
	void *progress_user;
} ti_convert_options;

typedef struct ti_convert_stats {
	size_t tensors;          /* written */
	size_t storages;
	size_t ties;             /* names that share another's data */
	char first_tie[512];     /* the first of them, "NAME" -> "FIRST" as text, or "" */
	size_t cast;             /* tensors whose dtype changed */
	uint64_t data_bytes;     /* tensor data written */
} ti_convert_stats;

/* Writes the selected tensors of src to fd (the caller's temporary file: it must be seekable). */
ti_status ti_convert(ti_source *src, int fd, const ti_convert_options *options, ti_convert_stats *stats,
                     ti_error *err);

#endif
