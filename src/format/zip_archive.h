/*
 * zip_archive.h - the zip container (library-internal).
 * A ti_zip owns its file descriptor, its directory and, when a compressed
 * record was read, a libzip handle; names it returns live as long as it.
 */
#ifndef TINSPECT_ZIP_ARCHIVE_H
#define TINSPECT_ZIP_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"

typedef struct ti_zip ti_zip;

typedef struct ti_zip_entry {
	const char *name;
	uint64_t size, compressed_size;
	int method;
} ti_zip_entry;

/* Opens and lists; refuses more than records_max entries and duplicate names. */
ti_status ti_zip_open(const char *path, size_t records_max, ti_zip **out, ti_error *err);
void ti_zip_close(ti_zip *zip);

size_t ti_zip_count(const ti_zip *zip);
ti_status ti_zip_stat(ti_zip *zip, size_t index, ti_zip_entry *entry, ti_error *err);
/* The index of a name, or -1. */
int64_t ti_zip_find(ti_zip *zip, const char *name);
/* Reads a whole record into a malloc'd buffer (NUL-terminated), refusing more than max bytes. */
ti_status ti_zip_read(ti_zip *zip, size_t index, size_t max, uint8_t **data, size_t *size, ti_error *err);
/* Where a record's payload starts in the file, from its local header. */
ti_status ti_zip_payload_offset(ti_zip *zip, size_t index, uint64_t *offset, ti_error *err);

#endif
