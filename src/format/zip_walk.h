/*
 * zip_walk.h - a zip archive walked byte by byte, for the safety scanner
 * (library-internal).
 *
 * Our reader (format/zip_archive.c) trusts the central directory, and so
 * does torch.load's miniz; Python's zipfile, unzip and libzip each trust
 * something slightly different (the local headers, the first or the last end
 * record, offsets shifted by prepended bytes). A file built so that two of
 * them disagree lets a scanner read one pickle while torch.load runs
 * another. zw_walk() reads every structure the archive holds, checks each
 * against the others, and reports each disagreement, each byte no record
 * accounts for, and each feature torch.save never writes. It fails only
 * when there is nothing to walk.
 *
 * It reads through a ti_pickle_source, so a file and an archive nested in
 * one's record are walked alike. A zw_archive owns its entries and their
 * names; zw_free() releases them. Report callbacks get strings that live
 * only for the call.
 */
#ifndef TINSPECT_SCAN_ZIP_WALK_H
#define TINSPECT_SCAN_ZIP_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"
#include "tinspect/pickle.h" /* ti_pickle_source: the bytes being walked */
#include "tinspect/findings.h" /* ti_scan_severity */

typedef struct zw_entry {
	const char *name;          /* central directory name, NUL-terminated (owned by the zw_archive) */
	size_t name_length;        /* its bytes: less than strlen() sees only when it holds a NUL */
	uint16_t flags, method;    /* general purpose bits, compression method (central) */
	uint32_t crc;
	uint64_t compressed_size, size;  /* central values, ZIP64 extra resolved */
	uint64_t local_offset;     /* of the local header */
	uint64_t data_offset;      /* where the payload begins, from the local header's name and extra lengths */
	int duplicate;             /* another central entry has the same name */
	int readable;              /* local header found and consistent enough to read the payload */
} zw_entry;

typedef struct zw_archive {
	zw_entry *entries;         /* in central directory order */
	size_t count;
	uint64_t cd_offset, cd_size, eocd_offset; /* the directory and the end record chosen */
	char *names;               /* every name, NUL-terminated, one after another */
	size_t unvisited;          /* entries whose local header zw_walk_some did not read */
} zw_archive;

/*
 * Called once per anomaly. offset is a file offset (or -1); record is the
 * entry's name or NULL: its bytes as the archive has them up to a NUL, so
 * possibly with control characters that a printer must escape. message:
 * one line, no full stop, odd bytes of names escaped. Both strings are
 * valid only during the call.
 */
typedef void (*zw_report_fn)(void *ctx, ti_scan_severity severity, const char *record, int64_t offset,
                             const char *message);

/*
 * Walks the archive in src. Fails (TI_E_CORRUPT, TI_E_LIMIT, TI_E_IO,
 * TI_E_NOMEM) only when it cannot be walked: no end-of-central-directory
 * record, a central directory outside the file, more than entries_max
 * entries, or a read that fails. Anything else is reported and the walk goes
 * on. On success *out holds the entries (release with zw_free); on failure
 * it holds nothing to release.
 */
ti_status zw_walk(const ti_pickle_source *src, size_t entries_max, zw_report_fn report, void *ctx,
                  zw_archive *out, ti_error *err);
/*
 * The same walk, when reading the whole file costs too much (a URL): the end
 * records and the central directory, then only the local headers of the
 * entries visit(name) wants; the others stay not readable (counted in
 * out->unvisited), and the layout (overlaps, hidden bytes, other end
 * records), which needs every local header, is not checked. visit NULL:
 * zw_walk.
 */
ti_status zw_walk_some(const ti_pickle_source *src, size_t entries_max, bool (*visit)(const char *name),
                       zw_report_fn report, void *ctx, zw_archive *out, ti_error *err);

/*
 * Reads entry i's uncompressed bytes into *data, malloc'd, NUL-terminated
 * (the NUL not counted in *size); the caller frees it. Refuses an entry of
 * more than max bytes (TI_E_LIMIT) before allocating anything, and checks
 * the CRC-32 (TI_E_CORRUPT "CRC mismatch..."). Stored and deflated entries
 * only (else TI_E_UNSUPPORTED); an entry that is not readable is TI_E_CORRUPT.
 */
ti_status zw_read(const ti_pickle_source *src, const zw_archive *a, size_t i, size_t max, uint8_t **data,
                  size_t *size, ti_error *err);

void zw_free(zw_archive *a);

#endif
