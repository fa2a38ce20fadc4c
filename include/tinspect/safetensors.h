/*
 * safetensors.h - Hugging Face safetensors files: a header reader and a
 * streaming writer.
 *
 * The format (huggingface/safetensors README and safetensors/src/tensor.rs):
 *
 *   u64 little-endian N | N bytes of UTF-8 JSON (the header) | data buffer
 *
 * The header is one JSON object. Each key but "__metadata__" names a tensor:
 *   "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
 * with offsets relative to the start of the data buffer (file offset 8 + N).
 * Tensor data is contiguous, row-major (C order) and little-endian; there are
 * no strides and no shared storage. "__metadata__", when present, maps
 * strings to strings (transformers writes {"format": "pt"}).
 *
 * Reading. ti_st_open() reads the 8-byte size and the header (nothing else)
 * and checks everything the official reader checks, and a little more:
 *   - the file holds the 8-byte size; N >= 2; 8 + N lies inside the file;
 *     N is at most limits->header_max (the Rust reader's 100,000,000);
 *   - the header is UTF-8, starts with '{' after optional JSON whitespace
 *     (the README says it must start with '{'; the current Rust reader,
 *     since safetensors PR #686, accepts leading whitespace), ends in JSON
 *     whitespace only (writers pad with spaces), and is valid JSON;
 *   - no key appears twice, at either level (the README forbids duplicates);
 *   - every number is a non-negative integer below 2^53 (the header holds
 *     only sizes and offsets; cJSON reads numbers as doubles);
 *   - no string holds "\u0000" (a C string could not keep it);
 *   - each tensor has a dtype, a shape of at most limits->rank_max
 *     dimensions and two data_offsets, begin <= end <= the buffer size, and
 *     end - begin == numel * element size (the Rust TensorInvalidInfo),
 *     where a sub-byte dtype's numel * bits must be a whole number of bytes
 *     (tensor.rs validate's MisalignedSlice: F4 of shape [3] is refused);
 *   - sorted by offset, the tensors tile the data buffer from 0 to the end
 *     of the file with no hole and no overlap (InvalidOffset,
 *     MetadataIncompleteBuffer).
 * Keys of a tensor entry other than dtype, shape and data_offsets are
 * ignored, as serde ignores them. A dtype we do not know is
 * TI_E_UNSUPPORTED; any other defect is TI_E_CORRUPT, a ceiling
 * TI_E_LIMIT, a failing system call TI_E_IO. Messages name the tensor.
 *
 * Ownership: a ti_st_file owns its file descriptor and one arena holding
 * every tensor, name, shape and metadata pair it returns; they live until
 * ti_st_close(). Memory is proportional to the header, never to the data.
 * The handle is immutable after ti_st_open(), so ti_st_read() may be called
 * from several threads at once (it uses pread only).
 *
 * Writing. A ti_st_writer never holds tensor data. ti_st_writer_begin()
 * takes the list of tensors (name, dtype, shape) and the metadata, lays the
 * data out, and writes the 8 size bytes and the header to a file descriptor
 * the caller opened (the caller owns temporary files, fsync and rename).
 * The caller then hands over each tensor's bytes, in the writer's order,
 * with ti_st_writer_put(), in as many pieces as it likes; the writer checks
 * that exactly the declared bytes arrive for each tensor, and
 * ti_st_writer_end() that none is missing. See ti_st_writer_begin() for the
 * layout and the byte-for-byte JSON it writes.
 */
#ifndef TINSPECT_SAFETENSORS_H
#define TINSPECT_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/io.h"

/* The Rust reader's MAX_HEADER_SIZE (safetensors/src/tensor.rs). */
#define TI_ST_HEADER_MAX 100000000u

typedef struct ti_st_limits {
	uint64_t header_max;  /* bytes of JSON header; default TI_ST_HEADER_MAX */
	size_t tensors_max;   /* tensors in one file; default 1,000,000 */
	size_t values_max;    /* JSON values (cJSON allocates one node each); default 8,000,000 */
	int rank_max;         /* dimensions of one tensor; default 64, PyTorch's cap */
} ti_st_limits;

void ti_st_limits_default(ti_st_limits *limits);

/* --- dtypes ------------------------------------------------------------- */

/*
 * The safetensors dtype names (every one of the Rust Dtype enum) and the
 * dtypes they hold: BOOL bool, U8 uint8, I8 int8, I16 int16, U16 uint16,
 * I32 int32, U32 uint32, I64 int64, U64 uint64, F16 float16, BF16 bfloat16,
 * F32 float32, F64 float64, C64 complex64, F8_E5M2 float8_e5m2,
 * F8_E4M3 float8_e4m3fn, F8_E8M0 float8_e8m0fnu, F8_E4M3FNUZ
 * float8_e4m3fnuz, F8_E5M2FNUZ float8_e5m2fnuz (the torch ones, as the
 * Python binding maps them), and the sub-byte F4 float4_e2m1fn, F6_E2M3
 * float6_e2m3fn, F6_E3M2 float6_e3m2fn (dtype.h: 4, 6 and 6 bits, packed).
 */

/* TI_DT_INVALID for a name not in that list. */
ti_dtype ti_st_dtype_from_name(const char *name);

/* "F32" for TI_DT_FLOAT32; NULL for a dtype safetensors cannot hold
 * (complex32, complex128, the quantized and bits types, float4_e2m1fn_x2). */
const char *ti_st_dtype_name(ti_dtype dtype);

/* --- reading ------------------------------------------------------------ */

typedef struct ti_st_file ti_st_file;

typedef struct ti_st_tensor {
	const char *name;
	size_t index;          /* position in the header, 0-based */
	ti_dtype dtype;
	const char *dtype_name;/* as the header spells it: "F32" */
	int ndim;              /* 0 for a scalar */
	const int64_t *shape;  /* ndim sizes; not NULL even when ndim is 0 */
	int64_t numel;         /* product of shape; 1 for a scalar, 0 for an empty tensor */
	uint64_t begin, end;   /* data_offsets, relative to the data buffer */
	uint64_t offset;       /* where the first byte is in the file: 8 + N + begin */
	uint64_t nbytes;       /* end - begin == numel * element size (numel * bits / 8) */
} ti_st_tensor;

typedef struct ti_st_pair {
	const char *key;
	const char *value;
} ti_st_pair;

typedef struct ti_st_info {
	uint64_t file_size;
	uint64_t header_size;  /* N, padding included */
	uint64_t data_start;   /* 8 + N */
	uint64_t data_size;    /* file_size - data_start: the sum of all nbytes */
	bool has_metadata;     /* "__metadata__" was present (possibly empty or null) */
} ti_st_info;

/*
 * Opens path, reads and checks its header (see the top of this file).
 * limits may be NULL for the defaults. On failure *out is NULL and err
 * says what failed; offsets in err are file offsets.
 */
ti_status ti_st_open(const char *path, const ti_st_limits *limits, ti_st_file **out, ti_error *err);
/* The same, from a file already open (a path or a URL, io.h): the handle takes its own reference. */
ti_status ti_st_open_io(ti_io *io, const ti_st_limits *limits, ti_st_file **out, ti_error *err);
/* Closes the file and frees everything it returned. NULL is a no-op. */
void ti_st_close(ti_st_file *file);

const ti_st_info *ti_st_file_info(const ti_st_file *file);

size_t ti_st_tensor_count(const ti_st_file *file);
/* The i-th tensor in header order; NULL when i is out of range. */
const ti_st_tensor *ti_st_tensor_at(const ti_st_file *file, size_t i);
/* The i-th tensor in data order (by offset, which is how the bytes lie in
 * the file; empty tensors sharing an offset keep header order). */
const ti_st_tensor *ti_st_tensor_by_offset(const ti_st_file *file, size_t i);
/* The tensor with this name, or NULL (binary search). */
const ti_st_tensor *ti_st_find(const ti_st_file *file, const char *name);

/* __metadata__ pairs in header order; values are strings. */
size_t ti_st_metadata_count(const ti_st_file *file);
const ti_st_pair *ti_st_metadata_at(const ti_st_file *file, size_t i);
/* The value for key, or NULL. */
const char *ti_st_metadata_get(const ti_st_file *file, const char *key);

/*
 * Reads n bytes of tensor `index` (header order), starting `offset` bytes
 * into the tensor, into buf: read a big tensor in chunks of a fixed buffer.
 * offset + n must not pass the tensor's nbytes (TI_E_INVALID). A file that
 * shrank since it was opened gives TI_E_IO.
 */
ti_status ti_st_read(const ti_st_file *file, size_t index, uint64_t offset, void *buf, size_t n,
                     ti_error *err);

/* The open file descriptor (borrowed: the handle closes it), for callers that
 * stream with their own pread, e.g. into pinned memory; -1 for a URL. */
int ti_st_fd(const ti_st_file *file);

/* --- writing ------------------------------------------------------------ */

typedef struct ti_st_writer ti_st_writer;

/* One tensor to write. The writer copies what it keeps. */
typedef struct ti_st_spec {
	const char *name;      /* UTF-8, unique, not "__metadata__" */
	ti_dtype dtype;        /* one ti_st_dtype_name() knows */
	int ndim;              /* 0 ... 64 */
	const int64_t *shape;  /* ndim sizes >= 0; may be NULL when ndim is 0 */
} ti_st_spec;

typedef enum ti_st_order {
	/* Data in the order the specs are given; the header lists them so. */
	TI_ST_ORDER_AS_GIVEN,
	/* As the official writer (tensor.rs prepare()): by dtype alignment,
	 * largest first (the rank of the dtype in the Rust Dtype enum, which is
	 * "in increasing alignment order"), then by name, bytewise. With the same
	 * tensors and metadata, the file is then byte for byte what
	 * safetensors.torch.save_file() writes. */
	TI_ST_ORDER_OFFICIAL,
} ti_st_order;

/*
 * Plans the file and writes its size bytes and header to fd, at fd's
 * current position, with write(2). The header JSON is compact, as
 * serde_json writes it: "__metadata__" first when metadata_count > 0 (its
 * pairs in the order given; with no pairs there is no "__metadata__" key),
 * then the tensors in data order, each as
 *   "name":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}
 * Strings are escaped as serde_json does (\" \\ \b \f \n \r \t, other
 * control bytes as \u00xx, everything else raw UTF-8). The JSON is padded
 * with spaces to a multiple of 8 bytes, so that the data starts 8-aligned.
 * The same arguments always give the same bytes.
 *
 * Fails with TI_E_INVALID for a bad argument (a duplicate or reserved name,
 * invalid UTF-8, a negative size, a duplicate metadata key, a sub-byte
 * tensor whose elements end inside a byte), TI_E_UNSUPPORTED
 * for a dtype safetensors cannot hold, TI_E_LIMIT when sizes overflow or the
 * header would pass TI_ST_HEADER_MAX, TI_E_IO when writing fails. On failure
 * *out is NULL and some bytes may have been written.
 */
ti_status ti_st_writer_begin(int fd, const ti_st_spec *tensors, size_t count,
                             const ti_st_pair *metadata, size_t metadata_count, ti_st_order order,
                             ti_st_writer **out, ti_error *err);

/*
 * The planned layout, in data order: entry k is the k-th tensor whose bytes
 * must be put; its index field is the position of its spec in the list given
 * to ti_st_writer_begin(), and offset/nbytes say where it lands in the file.
 */
size_t ti_st_writer_count(const ti_st_writer *w);
const ti_st_tensor *ti_st_writer_tensor(const ti_st_writer *w, size_t k);
/* 8 + N + data: the size of the finished file, known from the start. */
uint64_t ti_st_writer_file_size(const ti_st_writer *w);

/*
 * Appends n bytes of the tensor whose spec is tensors[tensor] (little-endian,
 * row-major). Tensors must come in data order and each must be complete
 * before the next one starts (empty tensors need no call); a piece that would
 * run past the tensor's size, or bytes for a tensor out of turn, is
 * TI_E_INVALID and writes nothing. A put of 0 bytes does nothing. Bytes are
 * gathered in a fixed 64 KiB buffer, so small pieces cost few system calls.
 * After a TI_E_IO failure every later call fails.
 */
ti_status ti_st_writer_put(ti_st_writer *w, size_t tensor, const void *bytes, size_t n, ti_error *err);

/*
 * Like ti_st_writer_put for n bytes that lie in another file, at in_offset
 * of in_fd: the kernel copies them (copy_file_range), or, where it cannot,
 * they are read and written in 64 KiB pieces. in_fd's file offset is not
 * used or moved.
 */
ti_status ti_st_writer_copy(ti_st_writer *w, size_t tensor, int in_fd, uint64_t in_offset, uint64_t n,
                            ti_error *err);

/*
 * Flushes and checks that every tensor got all its bytes (TI_E_INVALID names
 * the first that did not). It does not fsync or close fd.
 */
ti_status ti_st_writer_end(ti_st_writer *w, ti_error *err);

/* Frees the writer, whether or not it ended; the caller closes fd. NULL is a no-op. */
void ti_st_writer_free(ti_st_writer *w);

/*
 * Whether the first bytes of a file look like safetensors, for telling
 * formats apart before opening: at least 9 bytes, a size N with
 * 2 <= N <= file_size - 8, and '{' (after JSON whitespace) at byte 8.
 * A torch zip starts "PK", a legacy pickle 0x80: neither passes.
 */
bool ti_st_sniff(const void *prefix, size_t n, uint64_t file_size);

#endif
