/*
 * torch_writer.h - a streaming writer of PyTorch zip checkpoints.
 *
 * Writes what torch.save(model.state_dict(), f) writes: a zip archive whose
 * data.pkl is a protocol-2 pickle of a collections.OrderedDict of name ->
 * tensor, each tensor torch._utils._rebuild_tensor_v2(storage, offset, size,
 * stride, requires_grad, OrderedDict()) over a persistent id
 * ('storage', torch.<Legacy>Storage, key, 'cpu', numel), with the opcodes,
 * memo numbering and batching that torch 1.13's pickler produces, so that
 * torch.load(f) and torch.load(f, weights_only=True) (torch 1.13 and later)
 * read it. Tensor bytes are streamed: the writer never holds them.
 *
 * Ownership: ti_tw_begin() copies what it needs from its arguments (nothing
 * it is given must outlive the call) and returns a writer that owns its
 * memory, which ti_tw_free() releases. The caller owns the file descriptor:
 * the writer never closes, syncs or renames it; writing to a temporary file
 * and renaming it once ti_tw_end() succeeded is the caller's part.
 *
 * Invariants of the file written (each checked by the unit tests):
 *   - records, all stored (method 0), in this order: <root>/data.pkl,
 *     <root>/byteorder, <root>/data/0 ... <root>/data/N-1 (storage i is
 *     record data/<i>, in numeric order), <root>/version;
 *   - every record's payload starts at a multiple of 64 bytes in the file,
 *     padded by an extra field with id 'FB' filled with 'Z', as
 *     PyTorchStreamWriter does (caffe2/serialize/inline_container.cc);
 *   - the local and central headers carry the correct CRC-32 and sizes
 *     (the local CRC of a storage is patched in with pwrite once its bytes
 *     are through, so the file must be seekable); no data descriptors;
 *   - ZIP64 extras for any size or offset at or past zip64_threshold
 *     (0xFFFFFFFF by default, as miniz does), and the ZIP64 end record and
 *     locator always, as torch writes them.
 *
 * What is written and why (torch-formats.md section 1):
 *   - version is "3\n", what torch.save writes in 1.13 and in 2.x;
 *   - byteorder ("little" or "big") is what 2.1 and later write; 1.13 ignores it;
 *   - .data/serialization_id (2.1+) is left out: it is a hash of std::hash
 *     values that only a build of PyTorch can reproduce, readers treat it as
 *     optional and use it only for logging;
 *   - .format_version and .storage_alignment (2.7+) are left out: with them
 *     2.7+ may compute payload offsets from its own header arithmetic instead
 *     of reading our local headers.
 *   So the layout is that of torch 2.1-2.6 (data records in numeric order,
 *   as 2.7+ does, where 1.13 sorts the keys as strings; no reader depends on
 *   record order). Zip fields that differ from miniz's, on purpose: flags
 *   0x0800 without data descriptors (miniz: 0x0808 and zero local CRC and
 *   sizes), DOS date 1980-01-01 (miniz: 0), version needed 1.0 or 4.5 (miniz:
 *   0), and no header offset in the local ZIP64 extra (APPNOTE 4.5.3 has
 *   sizes only there).
 *
 * Storage keys are the storage indices. torch numbers storages in the order
 * the pickle first meets them: number them in the order of their first
 * tensor and data.pkl is byte for byte what torch.save writes for the same
 * state dict (the conformance test checks this).
 *
 * A zip64_threshold below 4 GiB is for tests: libzip, Python's zipfile and
 * our reader read such a file, but torch's miniz refuses a saturated
 * offset in a file smaller than 4 GiB. A writer is used by one thread.
 *
 * Dtypes with a legacy storage class in torch 1.13 that weights_only=True
 * can rebuild (float32/64/16, bfloat16, int64/32/16/8, uint8, bool,
 * complex64/128) are written as above, which every torch since 1.13 loads.
 * The dtypes PyTorch 2.x added, which have no typed storage (complex32,
 * uint16/32/64, the float8 and float4 types, the bits types: 2.x's
 * torch.storage._new_dtypes()), are written as 2.x writes them:
 * _rebuild_tensor_v3(storage, offset, size, stride, requires_grad,
 * OrderedDict(), torch.<dtype>) over ('storage',
 * torch.storage.UntypedStorage, key, 'cpu', nbytes), which torch 2.2 and
 * later load (no torch 1.x has those dtypes). Quantized dtypes need
 * _rebuild_qtensor, which 1.13's weights_only refuses: ti_tw_begin() fails
 * with TI_E_UNSUPPORTED naming the dtype.
 */
#ifndef TINSPECT_TORCH_WRITER_H
#define TINSPECT_TORCH_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"

/* PyTorch's hard limit on a tensor's rank; the reader's too. */
#define TI_TW_MAX_DIMS 64
/* Ceiling on data.pkl: about 60 bytes per tensor, so far beyond any real state dict. */
#define TI_TW_PICKLE_MAX ((size_t)1 << 30)
/* Ceiling on the root folder's name, in bytes. */
#define TI_TW_ROOT_MAX 1024

typedef struct ti_tw ti_tw;

/* A storage: numel elements of dtype, numel * element size bytes, written as record data/<index>. */
typedef struct ti_tw_storage {
	ti_dtype dtype;
	uint64_t numel;
} ti_tw_storage;

/*
 * A state-dict entry: a view of storage `storage` (an index into the
 * storages). Several tensors may view one storage (tied weights, views);
 * torch.load then gives them one storage again. All counts are in elements
 * of the storage's dtype, as torch's are.
 */
typedef struct ti_tw_tensor {
	const char *name;       /* the key, UTF-8, unique in the state dict */
	size_t storage;
	uint64_t offset;        /* storage_offset() */
	size_t ndim;            /* 0 for a scalar; at most TI_TW_MAX_DIMS */
	const int64_t *shape;   /* ndim sizes, >= 0 */
	const int64_t *stride;  /* ndim strides, >= 0; NULL for contiguous */
	bool requires_grad;     /* floating point and complex dtypes only, as torch allows */
	/* An nn.Parameter: _rebuild_parameter(tensor, requires_grad, OrderedDict()),
	 * as torch.save writes a Parameter (a state_dict() holds plain tensors). */
	bool is_parameter;
} ti_tw_tensor;

/* One entry of state_dict()._metadata: a module's prefix ("" for the root, "layer1.0") and its _version. */
typedef struct ti_tw_module_version {
	const char *prefix;
	int64_t version;
} ti_tw_module_version;

/* A zeroed struct gives every default. */
typedef struct ti_tw_options {
	const char *root;       /* the archive's folder; NULL: "archive", as torch names a buffer's */
	bool big_endian;        /* the storage bytes are big-endian: byteorder says "big" */
	/*
	 * state_dict()._metadata, written as torch.save does (BUILD with
	 * {'_metadata': OrderedDict(prefix -> {'version': v})}), so that
	 * load_state_dict() sees each module's version. Left out when
	 * module_count is 0, as for a plain OrderedDict.
	 */
	const ti_tw_module_version *modules;
	size_t module_count;
	/* Sizes and offsets at or past this get ZIP64 fields; 0: 0xFFFFFFFF. For tests. */
	uint64_t zip64_threshold;
} ti_tw_options;

/*
 * Checks every storage and tensor (dtype supported, size without overflow,
 * each view inside its storage, names unique and UTF-8, requires_grad only
 * where torch allows it, every storage viewed by some tensor), pickles the state dict, and writes data.pkl,
 * byteorder and the header of the first storage's record to fd, which must
 * be a seekable file at offset 0, not opened with O_APPEND. options may be
 * NULL. Bad arguments fail with TI_E_INVALID, dtypes with
 * TI_E_UNSUPPORTED, write errors with TI_E_IO; nothing is returned then.
 */
ti_status ti_tw_begin(int fd, const ti_tw_storage *storages, size_t storage_count,
                      const ti_tw_tensor *tensors, size_t tensor_count,
                      const ti_tw_options *options, ti_tw **out, ti_error *err);

/*
 * Appends n bytes to the storages, in order: storage 0's bytes, then
 * storage 1's... A call may not run past the end of the storage being
 * written (TI_E_INVALID); chunks of any size are fine. Empty storages are
 * passed over by themselves.
 */
ti_status ti_tw_storage_put(ti_tw *w, const void *bytes, size_t n, ti_error *err);

/*
 * Once every storage is complete, writes the version record, the central
 * directory and the end records, and cuts the file there (ftruncate, in
 * case it held more). The file is then a complete checkpoint.
 */
ti_status ti_tw_end(ti_tw *w, ti_error *err);

/* Frees the writer, finished or not (an unfinished file is not a checkpoint). NULL is fine. */
void ti_tw_free(ti_tw *w);

/* Queries. */
/* The storage whose bytes ti_tw_storage_put() takes next; storage_count once all are through. */
size_t ti_tw_current_storage(const ti_tw *w);
/* Bytes of the archive produced so far (the last MiB may still be in the writer's buffer): for progress. */
uint64_t ti_tw_bytes_written(const ti_tw *w);

/* torch's legacy storage class for a dtype ("FloatStorage"), or NULL if it has none the writer may use. */
const char *ti_tw_storage_class(ti_dtype dtype);
/* True for a dtype written with _rebuild_tensor_v3 over an UntypedStorage (float8_e4m3fn, uint16 ...). */
bool ti_tw_needs_v3(ti_dtype dtype);

#endif
