/*
 * source_internal.h - what a format row of the source layer builds with.
 *
 * A source is filled by exactly one row of the format table (source.c):
 * the row opens its files as parts, adds a storage for each run of bytes
 * and a tensor for each view, and says where each storage's bytes are.
 * Everything lives in the source's arena; parts own their readers and
 * descriptors until ti_source_close.
 */
#ifndef TINSPECT_SOURCE_INTERNAL_H
#define TINSPECT_SOURCE_INTERNAL_H

#include "tinspect/checkpoint.h"
#include "tinspect/io.h"
#include "tinspect/safetensors.h"
#include "tinspect/source.h"
#include "tinspect/sniff.h"

/*
 * Where a storage's bytes are: a generator (gen != NULL); or a file at an
 * offset; or, for a torch zip, a record whose payload offset is found on
 * the first read (record >= 0), so that listing costs no read per storage.
 * As file bytes are read: swap, they are big-endian and turned
 * little-endian, as torch.load does for a file whose byteorder record says
 * "big"; conj, neg, they are a lazy conjugate or negative view's
 * (dtype.h) and resolved.
 */
typedef struct source_place {
	ti_io *io;        /* the part's file (borrowed); NULL when no file holds the bytes */
	uint64_t offset;
	ti_ckpt *ckpt;
	int64_t record;   /* the ckpt's record, its offset not yet known; -1 when offset is */
	ti_source_generator gen;
	const void *gen_ctx;
	bool swap, conj, neg;
	/* bytes that no pread reaches (a deflated .npz member): read(read_ctx, offset + at, ...) gives them */
	ti_status (*read)(void *read_ctx, uint64_t at, void *buf, size_t n, ti_error *err);
	void *read_ctx;
} source_place;

/*
 * One file of the source, and its bytes (io.h). Its entries are
 * what inspect lists: a checkpoint's own, or made for a safetensors
 * file's header tensors.
 */
typedef struct source_part {
	ti_ckpt *ckpt;
	ti_st_file *st;
	struct ti_gguf_file *gguf;
	ti_io *io;        /* the file, a path or a URL (io.h) */
	const char *path;
	const ti_entry *entries;
	size_t entry_count;
	/* When judged: what all of its pickles name and call, in place of its checkpoint's data.pkl alone. */
	bool judged;
	ti_scan_severity worst;
	/* a row's own reader (a .npz's zip), released by ti_source_close */
	void *state;
	void (*release)(void *state);
	/* what a pickle of a part with no checkpoint names and calls (an object .npy), judged as scan judges it */
	ti_scan_severity safety;
	const ti_scan_finding *findings;
	size_t finding_count;
} source_part;

struct ti_source {
	ti_arena arena;
	ti_source_format format;
	const char *path;           /* as the caller named it */
	source_part *parts;
	size_t part_count, part_capacity;
	ti_source_storage *storages;
	source_place *places;
	size_t storage_count, storage_capacity;
	ti_source_tensor *tensors;
	size_t tensor_count, tensor_capacity;
	ti_source_pair *metadata;
	size_t metadata_count;
	const ti_source_module *modules; /* a description's, for state_dict()._metadata */
	size_t module_count;
	const ti_entry *entries;    /* every part's, once asked for */
	size_t entry_count;
	/*
	 * A torch zip opened alone lists its tensors on the first query that
	 * needs them: inspect reads the checkpoint itself and pays nothing more.
	 */
	source_part *unlisted;
	ti_status list_status;
	ti_error list_error;
	struct ti_dcp *dcp;         /* a DCP folder's metadata, closed with the source */
	ti_io *sniffed;             /* the file whose first bytes chose the row: its first part takes it */
	ti_io **opened;             /* a remote index's shards, opened at once (hf_index.c): its part takes each */
	size_t opened_count;
};

/*
 * A row of the format table (source.c): the kind of file it reads (sniff.h)
 * and how. Only source.c picks a row; no row opens a file by its content.
 *
 * Several formats are zip archives, which sniff.h calls TI_FILE_ZIP alike:
 * a NumPy .npz, a TorchScript archive, a torch.save zip. Each of their rows
 * says how it claims a zip, and source.c asks them in the table's order:
 * first from the archive's first bytes (claims_head: the row then opens
 * the file itself), then, when none claims it so, from the archive read
 * once as a torch checkpoint (claims_checkpoint; the torch zip row, last,
 * claims every one), and the row that claims it reads on from that
 * checkpoint (read_checkpoint), so the directory is read once.
 *
 * A folder's row may instead name the file in it that stands for it
 * (stands_for): source.c opens that one by its content.
 */
typedef struct source_row {
	ti_source_format format;
	ti_file_kind kind;
	ti_status (*open)(ti_source *s, const char *path, ti_error *err);
	bool (*claims_head)(ti_io *io);
	bool (*claims_checkpoint)(const ti_ckpt *ckpt);
	ti_status (*read_checkpoint)(ti_source *s, source_part *p, ti_error *err);
	ti_status (*stands_for)(ti_source *s, const char *path, const char **file, ti_error *err);
} source_row;

/* The rows, in source.c's table. */
extern const source_row source_npz, source_torchscript, source_torch_zip;
extern const source_row source_safetensors, source_hf_index, source_hf_directory, source_torch_legacy;
extern const source_row source_dcp, source_gguf, source_npy;

/* The weights file an hf:// repository (ti_source_is_hf_repo) stands for (hf_directory.c), opened as s->sniffed. */
ti_status source_hf_repo_weights(ti_source *s, const char *repo, const char **file, ti_error *err);

/* A source with no file yet: what a model description's parameters become (description.c). */
ti_status source_new_empty(ti_source_format format, ti_source **out, ti_error *err);

/* Opens path (or a URL) as a new part (its reader is the caller's to set). */
ti_status source_add_part(ti_source *s, const char *path, source_part **out, ti_error *err);
/* Room for this many more storages and tensors, so that lists of known length grow once. */
ti_status source_reserve(ti_source *s, size_t storages, size_t tensors, ti_error *err);
ti_source_storage *source_add_storage(ti_source *s, ti_dtype dtype, uint64_t nbytes, bool has_data, source_place where);
ti_source_tensor *source_add_tensor(ti_source *s);
/* Contiguous strides for shape (arena), the same rule PyTorch uses: empty dims count as 1. */
int64_t *source_contiguous_strides(ti_source *s, const int64_t *shape, int ndim);
ti_status source_out_of_memory(ti_error *err);

/* Adds the tensors of an opened part: a torch zip's (torch_zip.c), a safetensors file's (safetensors.c). */
ti_status source_add_torch_zip(ti_source *s, source_part *p, ti_error *err);
ti_status source_list_torch_zip(ti_source *s, source_part *p, ti_error *err);
/* Lists p's checkpoint's storages, and the tensors of these entries (values of that checkpoint) in s. */
ti_status source_list_ckpt_entries(ti_source *s, source_part *p, const ti_entry *entries, size_t count, ti_error *err);
ti_status source_add_safetensors(ti_source *s, source_part *p, bool keep_metadata, ti_error *err);

#endif
