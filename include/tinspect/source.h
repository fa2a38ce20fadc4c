/*
 * source.h - named tensors and their bytes, from any file tinspect reads.
 *
 * The layer below every command: "open any model file and give me its
 * tensors". A source is a torch.save zip, a safetensors file, a Hugging
 * Face sharded checkpoint (its *.index.json, with safetensors or torch zip
 * shards), a folder that holds one of these as from_pretrained finds it, or
 * a model description's parameters. Which reader opens a file is decided by
 * its content (sniff.h), one table row per format (src/source/source.c). It lists storages
 * (runs of bytes of one dtype) and tensors (views of a storage: shape,
 * strides in elements, offset in elements), as PyTorch has them: tensors that
 * share a storage (tied weights, views) point to the same one. A safetensors
 * tensor is its own storage. A storage reads as the values its tensors have:
 * a view saved with PyTorch 2.x's conjugate or negative bit views a storage
 * of its own, whose bytes are resolved as they are read (conjugated,
 * negated), so nothing downstream needs to know of the bits. Bytes are read on demand, in pieces, with
 * pread: opening reads only headers, and memory never grows with the data.
 *
 * Ownership: the handle owns everything it returns, in one arena, and the
 * files it opened; ti_source_close frees them all.
 */
#ifndef TINSPECT_SOURCE_H
#define TINSPECT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/checkpoint.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/io.h"
#include "tinspect/findings.h"

typedef struct ti_source ti_source;

typedef enum ti_source_format {
	TI_SOURCE_TORCH_ZIP,
	TI_SOURCE_SAFETENSORS,
	TI_SOURCE_HF_SHARDED,
	TI_SOURCE_MODEL,       /* a model description's parameters: no data until filled */
	TI_SOURCE_TORCH_LEGACY,/* torch.save's legacy stream (before 1.6): read as a torch zip is */
	TI_SOURCE_DCP,         /* a torch.distributed.checkpoint folder (dcp.h): .metadata and its __R_N.distcp files */
	TI_SOURCE_TORCHSCRIPT, /* torch.jit.save: its module's state_dict(), named from code/'s classes */
	TI_SOURCE_GGUF,        /* a GGUF file (llama.cpp): shapes in PyTorch's order, ggml's reversed */
	TI_SOURCE_NPY,         /* a NumPy .npy array: one tensor, named after the file's stem */
	TI_SOURCE_NPZ          /* a NumPy .npz archive (np.savez, np.savez_compressed): NAME.npy members */
} ti_source_format;

typedef struct ti_source_storage {
	ti_dtype dtype;     /* what its elements are */
	uint64_t nbytes;
	bool has_data;      /* false: saved from the meta device, nothing to read */
} ti_source_storage;

/*
 * Computes count elements of a storage from element first on, into out:
 * a storage whose bytes are made, not read (a fill policy, fill.h).
 */
typedef ti_status (*ti_source_generator)(const void *ctx, ti_dtype dtype, uint64_t first, size_t count, void *out,
                                         ti_error *err);

typedef struct ti_source_tensor {
	const char *name;     /* "layer1.0.conv1.weight", "optimizer.state.0.exp_avg" */
	ti_dtype dtype;
	int ndim;
	const int64_t *shape;
	const int64_t *stride;  /* in elements */
	int64_t offset;         /* in elements, into the storage */
	int64_t numel;
	size_t storage;         /* index of its storage */
	bool requires_grad;
	bool is_parameter;
	const char *unsupported;/* why it cannot be moved (quantized, sparse), or NULL */
	const char *tie_of;     /* named only by a "tie.NAME" of safetensors __metadata__: the tensor whose data it is */
	bool conj, neg;         /* saved as a lazy conjugate/negative view (dtype.h): its storage reads resolved */
	/* A DCP tensor's chunks (dcp.h); chunk file i is ti_source_file_at(i + 1), after .metadata. Else none. */
	const struct ti_dcp_chunk *chunks;
	size_t chunk_count;
} ti_source_tensor;

/* A module of a description, as state_dict()._metadata records it: its prefix and class _version. */
typedef struct ti_source_module {
	const char *prefix;
	int64_t version;
} ti_source_module;

typedef struct ti_source_pair {
	const char *key, *value;
} ti_source_pair;

struct ti_model;

/*
 * Opens path with the reader its content names (sniff.h). A folder is read
 * as from_pretrained reads it: model.safetensors, else
 * model.safetensors.index.json, else pytorch_model.bin, else
 * pytorch_model.bin.index.json. A file of no format tinspect reads fails
 * with TI_E_UNSUPPORTED and says what the file is.
 */
ti_status ti_source_open(const char *path, ti_source **out, ti_error *err);
void ti_source_close(ti_source *src);

/*
 * A model description's parameters and persistent buffers as its
 * state_dict() returns them: in its order, plain tensors (not Parameters,
 * requires_grad false), with no data (has_data false) until a fill is set,
 * and its modules' versions for _metadata (ti_source_modules). A tied
 * parameter shares its target's storage. The model must outlive src.
 */
ti_status ti_source_from_model(const struct ti_model *model, ti_source **out, ti_error *err);

/* A description's modules for state_dict()._metadata, the root first; none for a file. */
const ti_source_module *ti_source_modules(const ti_source *src, size_t *count);

/*
 * From now on storage i's bytes are gen's: reads compute them (fill.h's
 * ti_source_set_fill sets a fill policy this way). ctx must live as long
 * as src: ti_source_alloc gives memory that does.
 */
ti_status ti_source_set_generator(ti_source *src, size_t storage, ti_source_generator gen, const void *ctx,
                                  ti_error *err);
/* The generator set on storage i (and its ctx), or NULL when its bytes come from a file. */
ti_source_generator ti_source_generator_of(const ti_source *src, size_t storage, const void **ctx);
/* Zeroed memory owned by src, freed by ti_source_close; NULL when out of memory. */
void *ti_source_alloc(ti_source *src, size_t size);

/*
 * The weight file from_pretrained would read in folder dir (the order
 * above), joined to dir in out (size bytes). TI_E_UNSUPPORTED when the
 * folder holds none, or holds a folder under such a name.
 */
ti_status ti_source_folder_weights(const char *dir, char *out, size_t size, ti_error *err);

/* Whether name is an hf://ORG/REPO[@REVISION] with no file in it: a repository, read as a folder is. */
bool ti_source_is_hf_repo(const char *name);
/*
 * The first of names (count of them) that repository repo has, joined to it
 * in out (size bytes) and opened as *io; a 404 goes on to the next name. None:
 * TI_E_UNSUPPORTED ("a repository that holds no ..."); another failure is
 * the server's (TI_E_NETWORK).
 */
ti_status ti_source_repo_file(const char *repo, const char *const *names, size_t count, char *out, size_t size,
                              ti_io **io, ti_error *err);
/* The weights file from_pretrained reads in repository repo, in the folder order above, opened as *io. */
ti_status ti_source_repo_weights(const char *repo, char *out, size_t size, ti_io **io, ti_error *err);

/* The path the source was opened from (a folder, an index or a file). */
const char *ti_source_path(const ti_source *src);

ti_source_format ti_source_get_format(const ti_source *src);
/* The files the source reads (a sharded checkpoint's shards), so that no output may replace one. */
size_t ti_source_file_count(const ti_source *src);
/*
 * For file i: what its pickle names and calls, judged as scan judges it
 * (ti_ckpt_safety); safe with no findings for a file with no pickle.
 */
ti_scan_severity ti_source_safety(const ti_source *src, size_t i, const ti_scan_finding **findings, size_t *count);
const char *ti_source_file_at(const ti_source *src, size_t i);
/*
 * What inspect lists: every named value of every file, in file order. A
 * torch zip's entries are its checkpoint's (tensors and other values, as
 * ti_ckpt names them); a safetensors file's are its header tensors, each a
 * contiguous tensor saved from the CPU that is its own storage, keyed by
 * its index in the source. A tensor named only by a "tie." of __metadata__
 * is no entry (its tie_of names the entry it shares). The array lives as
 * long as src; NULL (with err) only when out of memory.
 */
const ti_entry *ti_source_entries(ti_source *src, size_t *count, ti_error *err);

/* File i's torch checkpoint (its pickle's values and records), or NULL when file i is not a torch zip or legacy file. */
ti_ckpt *ti_source_checkpoint(ti_source *src, size_t i);
const char *ti_source_format_name(ti_source_format format); /* "torch-zip", "safetensors", "hf-sharded", "torch-legacy" */

/* ---- the state dict a command reads ---- */

/* The keys a training checkpoint holds its state dict under, as check tries them (NULL-terminated). */
extern const char *const ti_state_dict_keys[];
/* Prefixes a wrapper puts on every key, and who: {"module.", "DataParallel/DistributedDataParallel"}, ... */
typedef struct ti_key_wrapper {
	const char *prefix, *why;
} ti_key_wrapper;
extern const ti_key_wrapper ti_key_wrappers[]; /* ends with {NULL, NULL} */

typedef struct ti_source_selection {
	const char *key;            /* only the tensors under KEY., named without it ("model"); NULL: all */
	const char *strip_prefix;   /* taken off the names that start with it ("module."); NULL: none */
	const char *const *filters; /* globs on the names (after key and prefix): only matching ones; none: all */
	size_t filter_count;
} ti_source_selection;

/*
 * Narrows src to the selection, in place: ti_source_tensor_count/at then
 * list only those tensors, under their new names (storages are untouched).
 * TI_E_INVALID when the key holds no tensor (naming the keys that do), the
 * prefix starts no name, or no name matches the filters.
 */
ti_status ti_source_select(ti_source *src, const ti_source_selection *sel, ti_error *err);

size_t ti_source_tensor_count(const ti_source *src);
const ti_source_tensor *ti_source_tensor_at(const ti_source *src, size_t i);
size_t ti_source_storage_count(const ti_source *src);
const ti_source_storage *ti_source_storage_at(const ti_source *src, size_t i);
/* safetensors __metadata__ (and a sharded index's "metadata" values that are strings). */
size_t ti_source_metadata_count(const ti_source *src);
const ti_source_pair *ti_source_metadata_at(const ti_source *src, size_t i);

/* Reads n bytes of storage i from byte offset on. TI_E_INVALID past its end; TI_E_IO when the file fails. */
ti_status ti_source_read(ti_source *src, size_t storage, uint64_t offset, void *buf, size_t n, ti_error *err);

/*
 * Where storage i's bytes lie when they are a file's (not generated): its
 * descriptor and offset. False otherwise, or when the offset cannot be
 * found (a damaged record: ti_source_read then says why).
 */
bool ti_source_file_place(ti_source *src, size_t storage, int *fd, uint64_t *offset);
/*
 * As ti_source_file_place, but an order and nothing read: an offset that
 * sorts storages of one file as their bytes lie (a zip record's local
 * header where its bytes' offset is not yet read), for reading many in the
 * file's order. False where ti_source_file_place would be.
 */
bool ti_source_file_order(ti_source *src, size_t storage, int *fd, uint64_t *order);
/*
 * The order to read tensors which[0..n) in so that a file is read front to
 * back, as the kernel's read-ahead expects: order[k] is an index into
 * which, by file (as opened) and place in it (ti_source_file_order, plus
 * the tensor's offset into its storage); tensors whose bytes are not a local
 * file's come last, in the order given. TI_E_NOMEM or TI_OK.
 */
ti_status ti_source_read_order(ti_source *src, const size_t *which, size_t n, size_t *order, ti_error *err);

/*
 * The byte extent of a strided view: (offset + sum((size-1)*stride) + 1) *
 * element size (a sub-byte dtype's bits rounded up to a byte), 0 when empty.
 */
uint64_t ti_source_tensor_extent(const ti_source_tensor *t);
/* True when the view is contiguous (size-1 dims may have any stride). */
bool ti_source_tensor_contiguous(const ti_source_tensor *t);

#endif
