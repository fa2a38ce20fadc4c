/*
 * npy.h - NumPy's .npy array files and .npz archives of them: the header
 * reader and the writers.
 *
 * The format (numpy/lib/format.py, NEP 1):
 *
 *   "\x93NUMPY" | major u8 | minor u8 | header length | header | data
 *
 * The length is a little-endian u16 in version 1.0 and a u32 in 2.0 and 3.0;
 * the header is a Python dict literal, latin-1 (1.0, 2.0) or UTF-8 (3.0):
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a final '\n' so that the data starts at a multiple
 * of 64 bytes (ARRAY_ALIGN; older NumPy aligned to 16). descr is a dtype's
 * str: byte order '<' '>' '|' or '=' (native: read as little-endian), a
 * kind letter and the item size. The data is the elements in C order, or
 * in Fortran (column-major) order when fortran_order is True; for an object
 * array ('|O') it is a pickle of the whole array instead.
 *
 * Reading. ti_npy_parse() checks the magic and version and parses the dict
 * with a strict parser of its own (never Python's eval): exactly the three
 * keys, each once; descr a string; fortran_order True or False; shape a
 * tuple of non-negative decimal integers ('()' for a scalar, '(3,)' for one
 * dimension; a Python 2 'L' suffix is accepted, as NumPy's _filter_header
 * does); whitespace and a trailing comma anywhere Python allows them.
 * Ceilings: the header length at most TI_NPY_HEADER_MAX (NumPy's
 * _MAX_HEADER_SIZE), at most TI_MAX_DIMS dimensions, element count and byte
 * size below 2^63. Dtypes read: b1, i1 i2 i4 i8, u1 u2 u4 u8, f2 f4 f8,
 * c8 c16, little- or big-endian. An object array is recognised (object set,
 * dtype TI_DT_INVALID): its pickle is the caller's to judge. Refused with
 * TI_E_UNSUPPORTED and a message that says why: structured dtypes (a list
 * descr), void 'V' (ml_dtypes' bfloat16 is saved as '<V2', which nothing in
 * the file tells from any other 2-byte record), strings, datetimes, long
 * double. Any other defect is TI_E_CORRUPT; offsets in the error are bytes
 * from the start of the array's file or member.
 *
 * Writing. ti_npy_header_format() makes the version 1.0 header NumPy's
 * np.save writes for a C-order array (2.0 when it passes 65535 bytes), byte
 * for byte. A ti_npz_writer writes what np.savez writes: a zip of stored
 * NAME.npy members, streamed (the caller hands over each array's bytes), with
 * CRC-32 and sizes in each local header (patched with pwrite once a member is
 * complete: fd must be seekable) and ZIP64 fields where sizes or offsets pass
 * 32 bits.
 *
 * Ownership: ti_npy_header holds no pointers; a ti_npz_writer owns its
 * memory and never closes fd.
 */
#ifndef TINSPECT_NPY_H
#define TINSPECT_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/tensor.h"

/* NumPy's format._MAX_HEADER_SIZE: np.load refuses a longer header (without allow_pickle). */
#define TI_NPY_HEADER_MAX 10000u
/* The magic, version and a u32 length: what must be read before the header. */
#define TI_NPY_PREFIX_MAX 12u
/* The most bytes ti_npy_parse() can need: prefix and header. */
#define TI_NPY_HEAD_MAX (TI_NPY_PREFIX_MAX + TI_NPY_HEADER_MAX)

typedef struct ti_npy_header {
	int major, minor;       /* format version: 1.0, 2.0 or 3.0 */
	char descr[16];         /* as the header spells it: "<f4" */
	ti_dtype dtype;         /* TI_DT_INVALID for an object array */
	bool object;            /* descr '|O': a pickle of the array follows the header */
	bool structured;        /* descr is a list or tuple: fields or a subarray (refused, but known as such) */
	bool big_endian;        /* elements are big-endian ('>' of a multi-byte dtype) */
	bool fortran_order;
	int ndim;
	int64_t shape[TI_MAX_DIMS];
	int64_t numel;          /* product of shape: 1 for '()', 0 when a dimension is 0 */
	uint64_t nbytes;        /* numel * item size; 0 for an object array */
	uint64_t data_offset;   /* where the data starts: after the magic, length and header */
} ti_npy_header;

/* Whether the first n bytes start with the magic "\x93NUMPY". */
bool ti_npy_sniff(const void *head, size_t n);

/*
 * Parses the header at the start of data (n bytes of it available; at most
 * TI_NPY_HEAD_MAX are needed) of an array whose file or member holds size
 * bytes, and checks that the data fits in size (bytes after it are allowed,
 * as np.load ignores them). On failure *out holds what was read so far:
 * structured tells a refused structured dtype, which may hold objects.
 */
ti_status ti_npy_parse(const void *data, size_t n, uint64_t size, ti_npy_header *out, ti_error *err);

/* The descr NumPy writes for dtype, "<f4"; NULL for a dtype NumPy has none of (bfloat16, float8, complex32...). */
const char *ti_npy_descr(ti_dtype dtype);

/*
 * Formats the header np.save writes for a C-order array of dtype and shape
 * into buf (size bytes; TI_NPY_HEAD_MAX always suffice) and sets *len to
 * its length, a multiple of 64. TI_E_UNSUPPORTED for a dtype NumPy lacks.
 */
ti_status ti_npy_header_format(ti_dtype dtype, int ndim, const int64_t *shape, char *buf, size_t size, size_t *len,
                               ti_error *err);

/* --- .npz writing ------------------------------------------------------- */

typedef struct ti_npz_writer ti_npz_writer;

/* Starts an archive at fd's offset 0 (a seekable file, not O_APPEND). */
ti_status ti_npz_writer_begin(int fd, ti_npz_writer **out, ti_error *err);

/*
 * Starts member NAME.npy (NAME is any non-empty UTF-8 string, as np.savez
 * takes any keyword) for a C-order array: its local header and .npy header.
 * The previous member must be complete. TI_E_INVALID for a name given twice.
 */
ti_status ti_npz_writer_add(ti_npz_writer *w, const char *name, ti_dtype dtype, int ndim, const int64_t *shape,
                            ti_error *err);

/* Appends n bytes of the current member's data (little-endian elements in C order); never past its size. */
ti_status ti_npz_writer_put(ti_npz_writer *w, const void *bytes, size_t n, ti_error *err);

/* Checks the last member is complete, writes the central directory and end records, cuts the file there. */
ti_status ti_npz_writer_end(ti_npz_writer *w, ti_error *err);

void ti_npz_writer_free(ti_npz_writer *w);

#endif
