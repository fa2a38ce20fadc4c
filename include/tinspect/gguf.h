/*
 * gguf.h - GGUF files (ggml, llama.cpp): a header reader and a streaming
 * writer.
 *
 * The format (ggml docs/gguf.md), all little-endian:
 *
 *   "GGUF" | u32 version | u64 tensor_count | u64 metadata_kv_count
 *   | metadata_kv_count x (string key, u32 value_type, value)
 *   | tensor_count x (string name, u32 n_dims, n_dims x u64 ne,
 *                     u32 ggml_type, u64 offset)
 *   | padding to general.alignment (default 32) | data section
 *
 * A string is a u64 length and that many bytes (no NUL). A value is one of
 * 13 types; an array is a u32 element type, a u64 count and the elements,
 * which may be arrays themselves. Tensor offsets are relative to the data
 * section and multiples of the alignment. ggml lists dimensions fastest
 * first (ne[0] is the row length): a tensor that PyTorch calls [4096, 11008]
 * is ne = {11008, 4096} in the file. This reader and the writer speak
 * PyTorch's order: shapes are the file's reversed.
 *
 * Reading. ti_gguf_open() reads the header (nothing of the data) and checks:
 * the magic; version 2 or 3 (version 1, with 32-bit counts, and a
 * big-endian file are TI_E_UNSUPPORTED); every count, length and nesting
 * depth against a ceiling and against the bytes left in the file; key and
 * name uniqueness; n_dims <= 4; dimensions that are not negative and whose
 * product fits int64; a known ggml type whose block divides ne[0]; offsets
 * that are multiples of the alignment, inside the file, and tensors that do
 * not overlap. Errors carry the byte offset of the field at fault.
 *
 * Ownership: a ti_gguf_file owns its descriptor and one arena holding every
 * tensor, name, shape and metadata pair it returns; they live until
 * ti_gguf_close(). Memory is proportional to the header, and arrays in the
 * metadata are kept only as a short summary (their first elements).
 */
#ifndef TINSPECT_GGUF_H
#define TINSPECT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/io.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"

/* GGML_MAX_DIMS */
#define TI_GGUF_MAX_DIMS 4
#define TI_GGUF_DEFAULT_ALIGNMENT 32

/* ggml_type values used by name here (ggml.h's enum ggml_type). */
enum {
	TI_GGML_F32 = 0, TI_GGML_F16 = 1, TI_GGML_Q4_0 = 2, TI_GGML_Q8_0 = 8, TI_GGML_Q4_K = 12,
	TI_GGML_I8 = 24, TI_GGML_I16 = 25, TI_GGML_I32 = 26, TI_GGML_I64 = 27, TI_GGML_F64 = 28,
	TI_GGML_BF16 = 30
};

/* Metadata value types (gguf_metadata_value_type). */
typedef enum ti_gguf_value_type {
	TI_GGUF_UINT8, TI_GGUF_INT8, TI_GGUF_UINT16, TI_GGUF_INT16, TI_GGUF_UINT32, TI_GGUF_INT32,
	TI_GGUF_FLOAT32, TI_GGUF_BOOL, TI_GGUF_STRING, TI_GGUF_ARRAY, TI_GGUF_UINT64, TI_GGUF_INT64,
	TI_GGUF_FLOAT64, TI_GGUF_VALUE_TYPE_COUNT
} ti_gguf_value_type;

/* A ggml type as ggml's type traits describe it: block_size elements in block_bytes bytes. */
typedef struct ti_ggml_type {
	const char *name;   /* "F32", "Q8_0", "Q4_K": what llama.cpp prints */
	uint32_t block_size;
	uint32_t block_bytes;
	ti_dtype dtype;     /* the PyTorch dtype of its elements, TI_DT_INVALID for a quantized type */
} ti_ggml_type;

/* The type of id, or NULL when ggml has no (or no longer a) type of that number. */
const ti_ggml_type *ti_ggml_type_of(uint32_t id);
/* The id of a type by name ("Q8_0", case-insensitive), -1 when none. */
int ti_ggml_type_from_name(const char *name);
/* The ggml type that holds a PyTorch dtype as it is, -1 when none does. */
int ti_ggml_type_from_dtype(ti_dtype dtype);
const char *ti_gguf_value_type_name(uint32_t type); /* "uint32", "string", "array" */

typedef struct ti_gguf_tensor {
	const char *name;
	uint32_t type;          /* ggml type id */
	int ndim;
	const int64_t *shape;   /* PyTorch order: the file's ne reversed */
	int64_t numel;
	uint64_t nbytes;
	uint64_t offset;        /* in the file */
	uint64_t data_offset;   /* as the file records it: from the data section's start */
	uint64_t info_offset;   /* where its tensor info begins in the file */
	size_t index;
} ti_gguf_tensor;

typedef struct ti_gguf_kv {
	const char *key;
	uint32_t type;          /* ti_gguf_value_type */
	uint32_t array_type;    /* an array's element type */
	uint64_t count;         /* an array's length; 1 otherwise */
	/*
	 * The value as text: a number, true/false, a string as it is (cut at
	 * 64 KiB), or for an array "[32000 x string] "<unk>", "<s>", ..." with
	 * its first elements only.
	 */
	const char *text;
	uint64_t offset;        /* where the pair begins in the file */
} ti_gguf_kv;

typedef struct ti_gguf_info {
	uint32_t version;
	uint64_t alignment;
	uint64_t data_start;    /* the data section's offset in the file */
	uint64_t file_size;
} ti_gguf_info;

typedef struct ti_gguf_file ti_gguf_file;

ti_status ti_gguf_open(const char *path, ti_gguf_file **out, ti_error *err);
/* The same checks on a descriptor the caller keeps (it is not closed). */
ti_status ti_gguf_open_fd(int fd, ti_gguf_file **out, ti_error *err);
/* The same on a file already open (a path or a URL, io.h): the handle takes its own reference. */
ti_status ti_gguf_open_io(ti_io *io, ti_gguf_file **out, ti_error *err);
void ti_gguf_close(ti_gguf_file *f);

const ti_gguf_info *ti_gguf_file_info(const ti_gguf_file *f);
size_t ti_gguf_tensor_count(const ti_gguf_file *f);
const ti_gguf_tensor *ti_gguf_tensor_at(const ti_gguf_file *f, size_t i);
size_t ti_gguf_kv_count(const ti_gguf_file *f);
const ti_gguf_kv *ti_gguf_kv_at(const ti_gguf_file *f, size_t i);
const ti_gguf_kv *ti_gguf_kv_find(const ti_gguf_file *f, const char *key);

/* True when head (n bytes) starts like a GGUF file, of any version or byte order. */
bool ti_gguf_sniff(const void *head, size_t n);

/* --- writing ------------------------------------------------------------- */

typedef struct ti_gguf_spec {
	const char *name;
	uint32_t type;          /* ggml type to store */
	int ndim;
	const int64_t *shape;   /* PyTorch order */
} ti_gguf_spec;

/* A metadata pair the writer writes: a string, or a uint32. */
typedef struct ti_gguf_meta {
	const char *key;
	const char *string;     /* NULL: the uint32 below */
	uint32_t u32;
} ti_gguf_meta;

typedef struct ti_gguf_writer ti_gguf_writer;

/*
 * Writes the header of a GGUF v3 file of these tensors (offsets in the
 * given order, each aligned to 32 bytes) and metadata to fd, then takes
 * each tensor's data in order with ti_gguf_writer_put, in pieces of any
 * size. The data of a tensor of a plain type (F32, F16, BF16, F64, I8 to
 * I64) is its elements as they are; of Q8_0, float32 elements, which the
 * writer quantizes as ggml's quantize_row_q8_0_ref does. Q8_0 needs the
 * last dimension a multiple of 32; other quantized types are not written.
 */
ti_status ti_gguf_writer_begin(int fd, const ti_gguf_spec *tensors, size_t count, const ti_gguf_meta *meta,
                               size_t meta_count, ti_gguf_writer **out, ti_error *err);
ti_status ti_gguf_writer_put(ti_gguf_writer *w, size_t tensor, const void *bytes, size_t n, ti_error *err);
ti_status ti_gguf_writer_end(ti_gguf_writer *w, ti_error *err);
void ti_gguf_writer_free(ti_gguf_writer *w);

#endif
