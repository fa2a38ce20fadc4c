/*
 * sniff.h - what a file is, from its first bytes alone.
 *
 * Every command asks the same question first: is this a torch.save zip, a
 * safetensors file, a checkpoint index, a bare pickle, or no model file at
 * all? The answer comes from content (magic bytes and structure), never
 * from a name: a safetensors file renamed model.bin is still safetensors,
 * and a config.json is not a checkpoint index because of its extension.
 * The source layer (source.h) picks its reader by this answer, and scan
 * (scan.h) picks what to look at.
 */
#ifndef TINSPECT_SNIFF_H
#define TINSPECT_SNIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ti_file_kind {
	TI_FILE_EMPTY,        /* no bytes at all */
	TI_FILE_ZIP,          /* "PK\3\4" (or an empty zip's "PK\5\6"): torch.save since 1.6, TorchScript */
	TI_FILE_LEGACY_TORCH, /* pickle protocol 2 of the magic number 0x1950a86a20f9469cfc6c: torch.save before 1.6 */
	TI_FILE_SAFETENSORS,  /* an 8-byte little-endian header length, then a JSON object */
	TI_FILE_PICKLE,       /* a pickle (PROTO 2 to 5) that is not a torch.save file */
	TI_FILE_JSON,         /* a JSON object or array: a checkpoint index, or a config */
	TI_FILE_TEXT,         /* printable text that is none of the above */
	TI_FILE_DIRECTORY,    /* not bytes: a folder (a Hugging Face checkpoint directory, perhaps) */
	TI_FILE_DCP,          /* a folder that holds '.metadata': a torch.distributed.checkpoint (dcp.h) */
	TI_FILE_GGUF,         /* "GGUF": a ggml/llama.cpp model file */
	TI_FILE_NPY,          /* "\x93NUMPY": a NumPy .npy array */
	TI_FILE_NPZ,          /* a zip of NumPy .npy arrays: never from the first bytes alone (ti_npz_sniff) */
	/* Archives and compressed files of other kinds, which torch.load cannot open (nullifAI wraps models in 7z): */
	TI_FILE_7Z,           /* "7z\xbc\xaf\x27\x1c" */
	TI_FILE_GZIP,         /* 0x1f 0x8b */
	TI_FILE_BZIP2,        /* "BZh1".."BZh9", then the block magic 0x314159265359 */
	TI_FILE_XZ,           /* "\xfd7zXZ\0" */
	TI_FILE_ZSTD,         /* 0x28 0xb5 0x2f 0xfd */
	TI_FILE_RAR,          /* "Rar!\x1a\x07" */
	TI_FILE_UNKNOWN
} ti_file_kind;

/* Bytes of a file's head that ti_file_sniff needs to decide. */
enum { TI_SNIFF_BYTES = 64 };

/*
 * What head (the first n bytes of a file of file_size bytes; n may be
 * less than TI_SNIFF_BYTES for a short file) says the file is. A
 * safetensors file whose header length is wrong is still safetensors: its
 * reader then says what is wrong with it.
 */
ti_file_kind ti_file_sniff(const void *head, size_t n, uint64_t file_size);

/*
 * Whether a zip (TI_FILE_ZIP) is a NumPy .npz: its first member, whose
 * local header starts the file (np.savez writes one), is named *.npy. head
 * holds the first n bytes; false when the name does not fit in them.
 */
bool ti_npz_sniff(const void *head, size_t n);

/*
 * How many of a zip's first bytes ti_npz_sniff reads: the 30 of the first
 * local header and the name after them (30 to 30 + 65535), from at least the
 * first 30 in head; 0 when head does not start a local header.
 */
size_t ti_npz_sniff_size(const void *head, size_t n);

/* "torch zip", "safetensors", "JSON", ...: what a message calls the kind. */
const char *ti_file_kind_name(ti_file_kind kind);

/* Whether kind is an archive or compressed file of a kind no torch loader opens (7z, gzip, xz ...). */
bool ti_file_kind_is_foreign_archive(ti_file_kind kind);

#endif
