/*
 * checkpoint.h - a PyTorch zip checkpoint, opened onto the meta device.
 * A legacy torch.save file (before 1.6) opens alike, each storage a made
 * record "data/<key>" whose payload offset is where its bytes begin.
 *
 * ti_ckpt_open() reads the archive's directory and its data.pkl, runs the
 * pickle through the torch interpreter, checks every storage against its
 * record, and flattens the result into named entries. It reads no byte of
 * any storage record. The handle owns everything it returns: one arena for
 * values, tensors, storages, names and records, freed by ti_ckpt_close().
 */
#ifndef TINSPECT_CHECKPOINT_H
#define TINSPECT_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/io.h"
#include "tinspect/error.h"
#include "tinspect/pickle.h"
#include "tinspect/findings.h"
#include "tinspect/tensor.h"
#include "tinspect/value.h"

typedef struct ti_ckpt ti_ckpt;

typedef struct ti_limits {
	size_t pickle_max;    /* bytes of data.pkl we agree to read */
	size_t arena_max;     /* bytes of metadata we agree to build */
	size_t records_max;   /* archive entries */
	size_t depth_max;     /* nesting of containers when naming entries */
	size_t entries_max;   /* named entries (a shared container counts each time) */
	ti_pickle_limits pickle;
} ti_limits;

void ti_limits_default(ti_limits *limits);

typedef struct ti_record {
	const char *name;       /* full name in the archive: "model/data/0" */
	uint64_t size;          /* uncompressed */
	uint64_t compressed_size;
	int method;             /* 0 stored, 8 deflated */
	int64_t index;          /* libzip index */
} ti_record;

typedef struct ti_ckpt_info {
	const char *format;     /* "torch-zip", "torchscript-zip", or "torch-legacy" (no root, version 1001) */
	const char *root;       /* the archive's root folder: "model", "archive" */
	int64_t version;        /* the version record */
	const char *byteorder;  /* "little" or "big"; "little" when absent, as torch assumes */
	bool has_byteorder;
	int64_t format_version; /* .format_version, or -1 if absent */
	int64_t storage_alignment; /* .storage_alignment, or -1 if absent */
	uint64_t pickle_size;   /* bytes of data.pkl */
	int pickle_protocol;    /* from PROTO, 0/1 when absent */
} ti_ckpt_info;

/* ti_entry and TI_ROOT_NAME, what a checkpoint's entries are, are value.h's. */
/* limits may be NULL for the defaults. */
ti_status ti_ckpt_open(const char *path, const ti_limits *limits, ti_ckpt **out,
                       ti_error *err);
/* The same, from a file already open (a path or a URL, io.h): the checkpoint takes its own reference. */
ti_status ti_ckpt_open_io(ti_io *io, const ti_limits *limits, ti_ckpt **out, ti_error *err);
void ti_ckpt_close(ti_ckpt *ckpt);

const ti_ckpt_info *ti_ckpt_get_info(const ti_ckpt *ckpt);
const ti_value *ti_ckpt_root(const ti_ckpt *ckpt);

size_t ti_ckpt_record_count(const ti_ckpt *ckpt);
const ti_record *ti_ckpt_record(const ti_ckpt *ckpt, size_t i);
/* Where a stored record's bytes begin in the file, from its local header. */
ti_status ti_ckpt_record_payload_offset(ti_ckpt *ckpt, size_t i, uint64_t *offset,
                                        ti_error *err);
/*
 * Where record i lies in the file, near enough to order reads by and with
 * nothing read: a zip record's local header (its bytes follow it), a legacy
 * storage's bytes. UINT64_MAX for no such record.
 */
uint64_t ti_ckpt_record_place(const ti_ckpt *ckpt, size_t i);

size_t ti_ckpt_storage_count(const ti_ckpt *ckpt);
const ti_storage *ti_ckpt_storage(const ti_ckpt *ckpt, size_t i);

/*
 * What data.pkl names and calls, judged as ti_scan_file() judges it
 * (scan.h): the findings worse than safe, and the worst of them. Opening
 * never executes anything whatever this says; a caller that hands the file
 * on to PyTorch, or trusts its contents, should refuse a dangerous one.
 */
ti_scan_severity ti_ckpt_safety(const ti_ckpt *ckpt, const ti_scan_finding **findings, size_t *count);

size_t ti_ckpt_entry_count(const ti_ckpt *ckpt);
const ti_entry *ti_ckpt_entry(const ti_ckpt *ckpt, size_t i);

#endif
