/*
 * zip_archive.h - the zip container (library-internal).
 * A ti_zip owns its file descriptor, its directory (the records, their
 * names: in the arena it was opened with, else its own) and, when a
 * compressed record was read, a libzip handle; what it returns lives as
 * long as it (and as the arena).
 */
#ifndef TINSPECT_ZIP_ARCHIVE_H
#define TINSPECT_ZIP_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/checkpoint.h"
#include "tinspect/error.h"
#include "tinspect/io.h"

typedef struct ti_zip ti_zip;

/*
 * Opens and lists; refuses more than records_max entries and duplicate names.
 * With an arena, the directory is kept in it (a checkpoint's, which outlives
 * the zip); with NULL, in memory of the zip's own.
 */
ti_status ti_zip_open(const char *path, size_t records_max, ti_arena *arena, ti_zip **out, ti_error *err);
/* The same, from a file already open (a path or a URL, io.h): the zip takes its own reference. */
ti_status ti_zip_open_io(ti_io *io, size_t records_max, ti_arena *arena, ti_zip **out, ti_error *err);
void ti_zip_close(ti_zip *zip);
/* The archive a torch zip checkpoint was read from (NULL for a legacy file): the checkpoint's, closed with it. */
ti_zip *ti_ckpt_zip(const ti_ckpt *ckpt);

size_t ti_zip_count(const ti_zip *zip);
/* The records in directory order; records[i].index is i. */
const ti_record *ti_zip_records(const ti_zip *zip);
/* The index of a name, or -1. */
int64_t ti_zip_find(ti_zip *zip, const char *name);
/* Reads a whole record into a malloc'd buffer (NUL-terminated), refusing more than max bytes. */
ti_status ti_zip_read(ti_zip *zip, size_t index, size_t max, uint8_t **data, size_t *size, ti_error *err);
/*
 * For reading a stored (uncompressed) record in pieces: checks it as
 * ti_zip_read would, refusing more than max bytes, and gives the file offset
 * of its bytes; then ti_zip_pread reads any part of them.
 */
ti_status ti_zip_stored_range(ti_zip *zip, size_t index, size_t max, uint64_t *offset, ti_error *err);
ti_status ti_zip_pread(ti_zip *zip, uint64_t offset, void *buf, size_t n, ti_error *err);
/*
 * Says that record index (its local header and bytes) and what lies after
 * bytes past it will be read soon, in pieces (io.h's ti_io_hint).
 */
void ti_zip_hint_record(ti_zip *zip, size_t index, uint64_t after);
/* Where a record's local header starts: known from the central directory, nothing read. */
uint64_t ti_zip_local_offset(const ti_zip *zip, size_t index);
/* Where a record's payload starts in the file, from its local header. */
ti_status ti_zip_payload_offset(ti_zip *zip, size_t index, uint64_t *offset, ti_error *err);

/*
 * A record's uncompressed bytes, read at any offset in pieces: a stored
 * record with pread, a compressed one inflated through libzip in order
 * (reading behind the last piece starts the inflation over; reading ahead
 * inflates and drops the bytes between, in a fixed 64 KiB scratch buffer),
 * so memory never grows with the record. A stream lives no longer than its
 * zip. Its reads fail with TI_E_CORRUPT when the record inflates to less
 * than its size or fails its CRC.
 */
typedef struct ti_zip_stream ti_zip_stream;
ti_status ti_zip_stream_open(ti_zip *zip, size_t index, ti_zip_stream **out, ti_error *err);
ti_status ti_zip_stream_read(ti_zip_stream *s, uint64_t offset, void *buf, size_t n, ti_error *err);
void ti_zip_stream_close(ti_zip_stream *s);

#endif
