/*
 * tensor.h - a tensor on the meta device: metadata, no data.
 *
 * A ti_tensor says what torch.load(map_location='meta') would know of a
 * tensor: dtype, shape, stride, storage offset, requires_grad, whether it is
 * an nn.Parameter, and which storage it views. Tensors and storages live in
 * the arena of the checkpoint that made them. Several tensors may point to
 * one ti_storage (views, tied weights); storage->tensor_count says how many.
 */
#ifndef TINSPECT_TENSOR_H
#define TINSPECT_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"

/* PyTorch caps a tensor's rank at 64 (c10 kDimVectorStaticSize is smaller; 64 is the hard limit). */
#define TI_MAX_DIMS 64

typedef enum ti_layout {
	TI_LAYOUT_STRIDED, TI_LAYOUT_SPARSE_COO, TI_LAYOUT_SPARSE_CSR,
	TI_LAYOUT_SPARSE_CSC, TI_LAYOUT_SPARSE_BSR, TI_LAYOUT_SPARSE_BSC,
	TI_LAYOUT_COUNT
} ti_layout;

typedef enum ti_qscheme {
	TI_QS_NONE, TI_QS_PER_TENSOR_AFFINE, TI_QS_PER_CHANNEL_AFFINE,
	TI_QS_PER_TENSOR_SYMMETRIC, TI_QS_PER_CHANNEL_SYMMETRIC,
	TI_QS_PER_CHANNEL_AFFINE_FLOAT_QPARAMS, TI_QS_COUNT
} ti_qscheme;

typedef struct ti_storage {
	const char *key;      /* opaque; the record is <root>/data/<key> */
	ti_dtype dtype;       /* element type; for an untyped storage, the viewing tensor's */
	bool untyped;         /* torch.UntypedStorage: numel counts bytes */
	int64_t numel;        /* as declared in the persistent id */
	int64_t nbytes;
	const char *location; /* where it was saved from: "cpu", "cuda:0" */
	int64_t record_index; /* archive index of its record, or -1 */
	uint64_t record_size;
	size_t tensor_count;  /* tensors that view it */
	size_t index;         /* its position in the checkpoint's storage list */
} ti_storage;

typedef struct ti_tensor ti_tensor;

#define TI_MAX_COMPONENTS 4

/* What few tensors have: a quantizer, sparse components, a Python subclass. */
typedef struct ti_tensor_ext {
	const char *subclass;   /* "module.Class" from _rebuild_from_type_v2, or NULL */
	struct {
		ti_qscheme scheme;  /* TI_QS_NONE if not quantized */
		double scale;
		int64_t zero_point;
		int64_t axis;
		const ti_tensor *scales, *zero_points; /* per channel */
	} quant;
	/* sparse: COO (indices, values); compressed (crow/ccol, col/row, values) */
	size_t component_count;
	const char *component_names[TI_MAX_COMPONENTS];
	const ti_tensor *components[TI_MAX_COMPONENTS];
	bool coalesced;
	/* a GGUF tensor: its ggml type ("F16", "Q4_K") and its offset from the data section; NULL otherwise */
	const char *ggml_type;
	int64_t data_offset;
	/* a GGUF tensor of quantized blocks (no PyTorch dtype): its ggml type, and bits per weight; NULL otherwise */
	const char *block_type;
	double bits_per_weight;
} ti_tensor_ext;

struct ti_tensor {
	ti_dtype dtype;
	ti_layout layout;
	int ndim;
	bool requires_grad;
	bool is_parameter;
	bool conj, neg;         /* the v2/v3 metadata argument */
	const int64_t *shape;
	const int64_t *stride;  /* NULL for sparse layouts, which have none */
	int64_t storage_offset; /* in elements */
	int64_t numel;
	int64_t nbytes;         /* numel * element size; sparse: its components' bytes */
	ti_storage *storage;    /* NULL for a meta tensor saved without storage, and sparse */
	const char *rebuild;    /* the function that rebuilt it: "_rebuild_tensor_v2" */
	const ti_tensor_ext *ext; /* NULL for a plain tensor, as most are */
};

/* The tensor's extension, or one with nothing set (never NULL). */
const ti_tensor_ext *ti_tensor_ext_of(const ti_tensor *t);

const char *ti_layout_name(ti_layout layout);     /* "strided", "sparse_coo" */
const char *ti_qscheme_name(ti_qscheme scheme);   /* "per_tensor_affine" */
ti_qscheme ti_qscheme_from_name(const char *name);
ti_layout ti_layout_from_name(const char *name);  /* accepts "torch.sparse_coo"; TI_LAYOUT_COUNT if unknown */

/* True if the strides are the contiguous ones for the shape (size-1 dims may have any stride). */
bool ti_tensor_is_contiguous(const ti_tensor *t);

/*
 * Checks a strided shape against its storage and computes numel and the
 * element extent it needs (offset + sum((size-1)*stride) + 1, or 0 when
 * empty), with overflow-safe 64-bit math. Fails with TI_E_CORRUPT on negative
 * sizes or strides and on overflow.
 */
ti_status ti_shape_check(int ndim, const int64_t *shape, const int64_t *stride,
                         int64_t offset, int64_t *numel, int64_t *extent,
                         ti_error *err);

#endif
