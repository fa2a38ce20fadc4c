/*
 * dcp.h - the .metadata of a torch.distributed.checkpoint (DCP) directory.
 *
 * A DCP checkpoint is a folder: '.metadata', a pickle of
 * torch.distributed.checkpoint.metadata.Metadata, and the data files
 * '__R_N.distcp' that it points into. ti_dcp_open() runs the pickle through
 * the pickle machine (pickle.h), which never executes anything, and accepts
 * only the globals a Metadata is made of: its dataclasses and enums, the
 * storage record _StorageInfo, torch.Size, torch dtypes and layouts,
 * pathlib paths and OrderedDict; every other global is refused with its
 * offset (PyTorch itself reads this file with an unrestricted pickle.load).
 * The result lists every item of the state dict, in the pickle's order: a
 * tensor with its global dtype and shape and its chunks (offsets and sizes
 * in the global tensor, and the file and byte range that holds each chunk's
 * torch.save blob), or a bytes item (a torch.save blob of any object).
 *
 * Facts: torch/distributed/checkpoint/metadata.py, filesystem.py
 * (_StorageInfo, _write_item), 2.0 to 2.10; see
 * shared/reference/torch-formats.md section 7.
 *
 * Ownership: the handle owns everything it returns, in one arena, freed
 * by ti_dcp_close.
 */
#ifndef TINSPECT_DCP_H
#define TINSPECT_DCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/value.h"

typedef struct ti_dcp ti_dcp;

/* Where one chunk (or a bytes item's blob) lies: a file of the folder and a byte range in it. */
typedef struct ti_dcp_chunk {
	const int64_t *offsets, *sizes; /* in the global tensor, ndim each; NULL for a bytes item */
	size_t file;                    /* index into ti_dcp_file_at */
	uint64_t offset, length;        /* the blob's bytes in that file */
} ti_dcp_chunk;

typedef struct ti_dcp_item {
	const char *name;            /* the flattened state-dict key: "model.layer1.weight" */
	bool is_tensor;              /* false: a BytesStorageMetadata item */
	ti_dtype dtype;
	bool requires_grad;
	int ndim;
	const int64_t *shape;        /* the global shape */
	int64_t numel;
	const ti_dcp_chunk *chunks;  /* a tensor's chunks, tiling it; a bytes item's one blob */
	size_t chunk_count;
	const ti_value *value;       /* the pickle's own value for the item */
} ti_dcp_item;

/* Ceilings on what one .metadata may make us build. */
typedef struct ti_dcp_limits {
	size_t metadata_max; /* bytes of .metadata */
	size_t items_max;    /* state-dict items */
	size_t chunks_max;   /* chunks of all tensors together */
	size_t files_max;    /* distinct data files */
} ti_dcp_limits;

void ti_dcp_limits_default(ti_dcp_limits *limits);

/* True if dir is a folder that holds a regular file '.metadata': what sniffing calls a DCP checkpoint. */
bool ti_dcp_is_folder(const char *dir);

/* Reads the .metadata file at path; limits may be NULL for the defaults. */
ti_status ti_dcp_open(const char *path, const ti_dcp_limits *limits, ti_dcp **out, ti_error *err);
/* The same from bytes in memory (what the fuzzer and the tests feed). */
ti_status ti_dcp_parse(const uint8_t *data, size_t size, const ti_dcp_limits *limits, ti_dcp **out,
                       ti_error *err);
void ti_dcp_close(ti_dcp *dcp);

size_t ti_dcp_item_count(const ti_dcp *dcp);
const ti_dcp_item *ti_dcp_item_at(const ti_dcp *dcp, size_t i);
/* The data files the chunks name ("__0_0.distcp"), each once, in order of first mention. */
size_t ti_dcp_file_count(const ti_dcp *dcp);
const char *ti_dcp_file_at(const ti_dcp *dcp, size_t i);
/* Metadata.version ("1.0.0"), or NULL when the writer recorded none (before PyTorch 2.6). */
const char *ti_dcp_version(const ti_dcp *dcp);

/*
 * Whether module.name is a global a .metadata may name (the allow-list
 * above), for scan: what a DCP folder's .metadata is judged by.
 */
bool ti_dcp_global_allowed(const char *module, const char *name);
/* The classes and functions of that list, one at a time: the module, and the name in *name; NULL past the end. */
size_t ti_dcp_class_count(void);
const char *ti_dcp_class_at(size_t i, const char **name);

#endif
