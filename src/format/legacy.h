/*
 * legacy.h - torch.save's legacy stream (before PyTorch 1.6, and later with
 * _use_new_zipfile_serialization=False), read onto the meta device
 * (library-internal; checkpoint.c opens it as it opens a zip).
 *
 * The file is five pickles back to back (magic number, protocol version
 * 1001, sys_info, the object, the list of storage keys), then each storage
 * of the list in its order: an int64 little-endian element count and its
 * bytes. Reading runs the object pickle through the torch interpreter,
 * then walks the storages by their count headers, seeking over their
 * bytes: no tensor byte is read. Facts: torch/serialization.py
 * _legacy_save and _legacy_load; torch/csrc/serialization.cpp.
 *
 * Everything it returns lives in the arena it is given.
 */
#ifndef TINSPECT_FORMAT_LEGACY_H
#define TINSPECT_FORMAT_LEGACY_H

#include <stdbool.h>
#include <stdint.h>

#include "tinspect/io.h"
#include "tinspect/checkpoint.h"
#include "tinspect/pickle.h"

struct scan_findings;

typedef struct ti_legacy {
	ti_value *root;          /* what the object pickle holds */
	ti_storage **storages;   /* in order of first appearance in the object pickle */
	size_t storage_count;
	ti_record *records;      /* one per storage, "data/<key>": where its bytes are */
	uint64_t *offsets;       /* records[i]'s bytes begin at offsets[i] in the file */
	int64_t protocol_version;/* 1001 */
	bool little_endian;      /* sys_info's: the writer's order; storages are little-endian whatever it is */
	int pickle_protocol;     /* the object pickle's PROTO */
	uint64_t pickle_size;    /* bytes of the object pickle */
} ti_legacy;

/* What findings call the five pickles, in order: "pickle 4 (object)". */
extern const char *const ti_legacy_pickle_names[5];

/*
 * Where the pickle at the start of src ends (just past its STOP), found by
 * walking its opcodes: counted strings are skipped, not read. What follows
 * a legacy file's pickles (gigabytes of storages) is then never read.
 */
ti_status ti_legacy_pickle_extent(const ti_pickle_source *src, uint64_t *extent, ti_error *err);

/*
 * Reads the legacy file open as io (a path or a URL). Findings about the object pickle's globals
 * and calls go to findings when it is not NULL.
 */
ti_status ti_legacy_read(ti_io *io, ti_arena *arena, const ti_limits *limits,
                         struct scan_findings *findings, ti_legacy *out, ti_error *err);

#endif
