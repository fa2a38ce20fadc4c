/*
 * hf_index.h - Hugging Face sharded checkpoints: the *.index.json file.
 *
 * transformers and huggingface_hub split a large state dict into shards and
 * write an index next to them (model.safetensors.index.json,
 * pytorch_model.bin.index.json):
 *
 *   {"metadata": {"total_size": 123456, ...},
 *    "weight_map": {"model.embed.weight": "model-00001-of-00002.safetensors", ...}}
 *
 * ti_hf_index_open() reads and checks the index only, not the shards:
 *   - the file is at most limits->header_max bytes of UTF-8 JSON, an object;
 *   - "weight_map" is an object whose values are strings, with no tensor
 *     named twice and at most limits->tensors_max entries;
 *   - every shard is a plain file name in the index's own folder: not empty,
 *     not "." or "..", no '/' (so no absolute path and no climbing out) and
 *     no '\\'. An index is untrusted input: it must not make us open
 *     /etc/passwd or ../../secret;
 *   - "metadata", when present, is an object; its "total_size", when present,
 *     a non-negative integer. Its other keys are kept as text.
 * Other top-level keys are ignored. A defect is TI_E_CORRUPT, a ceiling
 * TI_E_LIMIT, a failing system call TI_E_IO.
 *
 * Shards are classified by their extension: ".safetensors" files are read
 * with tinspect/safetensors.h; ".bin", ".pt" and ".pth" are torch.save zip
 * files, which this module only names (the caller opens them with the
 * checkpoint reader and hands their tensor names to ti_hf_index_check_names()).
 *
 * Ownership: a ti_hf_index owns one arena holding every string, shard and
 * weight it returns, freed by ti_hf_index_close(). It keeps no file open.
 */
#ifndef TINSPECT_HF_INDEX_H
#define TINSPECT_HF_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "tinspect/io.h"
#include "tinspect/error.h"
#include "tinspect/safetensors.h"

typedef struct ti_hf_index ti_hf_index;

typedef enum ti_hf_format {
	TI_HF_SAFETENSORS,  /* "*.safetensors" */
	TI_HF_TORCH,        /* "*.bin", "*.pt", "*.pth": a torch.save zip */
	TI_HF_UNKNOWN,      /* anything else: refused by the checks */
} ti_hf_format;

typedef struct ti_hf_shard {
	const char *file;     /* as the weight_map spells it: "model-00001-of-00002.safetensors" */
	const char *path;     /* the index's folder joined with file: "ckpt/model-00001-of-00002.safetensors" */
	ti_hf_format format;
	size_t tensor_count;  /* weight_map entries naming this shard */
} ti_hf_shard;

typedef struct ti_hf_weight {
	const char *name;     /* the tensor's name */
	size_t shard;         /* index into the shards */
} ti_hf_weight;

/*
 * Reads and checks path (see above). limits may be NULL for the defaults of
 * ti_st_limits_default(); header_max bounds the size of the index file,
 * tensors_max the weight_map, values_max the JSON values. On failure *out
 * is NULL.
 */
ti_status ti_hf_index_open(const char *path, const ti_st_limits *limits, ti_hf_index **out, ti_error *err);
/* The same, from a file already open (a path or a URL, io.h). */
ti_status ti_hf_index_open_io(ti_io *io, const ti_st_limits *limits, ti_hf_index **out, ti_error *err);
/* Frees everything the index returned. NULL is a no-op. */
void ti_hf_index_close(ti_hf_index *index);

/* The distinct shards, in the order they first appear in the weight_map. */
size_t ti_hf_index_shard_count(const ti_hf_index *index);
const ti_hf_shard *ti_hf_index_shard(const ti_hf_index *index, size_t i);

/* The weight_map entries, in file order. */
size_t ti_hf_index_weight_count(const ti_hf_index *index);
const ti_hf_weight *ti_hf_index_weight(const ti_hf_index *index, size_t i);
/* The entry for a tensor name, or NULL (binary search). */
const ti_hf_weight *ti_hf_index_find(const ti_hf_index *index, const char *name);

/* metadata.total_size, or -1 when the index does not give it. */
int64_t ti_hf_index_total_size(const ti_hf_index *index);
/* The metadata object's pairs in file order: string values as they are,
 * other values as compact JSON text ("123", "[1,2]"). */
size_t ti_hf_index_metadata_count(const ti_hf_index *index);
const ti_st_pair *ti_hf_index_metadata_at(const ti_hf_index *index, size_t i);

/*
 * Checks one shard against the weight_map, given the names of the tensors
 * the shard really holds (from whatever reader opened it): every tensor the
 * weight_map puts in this shard must be among names, and every name must be
 * in the weight_map, mapped to this shard. TI_E_CORRUPT names the first
 * tensor and shard that disagree. Memory: one byte per weight, freed before
 * returning.
 */
ti_status ti_hf_index_check_names(const ti_hf_index *index, size_t shard, const char *const *names,
                                  size_t count, ti_error *err);

/* The same check for a safetensors shard the caller has opened. */
ti_status ti_hf_index_check_safetensors(const ti_hf_index *index, size_t shard, const ti_st_file *file,
                                        ti_error *err);

/*
 * Opens every safetensors shard with ti_st_open(limits) (NULL: defaults),
 * checks it as above and closes it. Torch shards are not opened: their count
 * goes to *torch_shards (may be NULL) for the caller to check with
 * ti_hf_index_check_names(). A shard of unknown format is TI_E_UNSUPPORTED;
 * a missing or broken shard fails with ti_st_open()'s error, its path in
 * the error's member.
 */
ti_status ti_hf_index_check_shards(const ti_hf_index *index, const ti_st_limits *limits,
                                   size_t *torch_shards, ti_error *err);

#endif
