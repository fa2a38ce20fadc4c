/*
 * fuzz_checkpoint.c - the zip checkpoint reader, on whole files.
 *
 * Each input is a file (seeds: the .pt files of fixtures/ and fixtures/broken/):
 * ti_ckpt_open() takes a path, so the input is written to this process's
 * scratch file first. An opened checkpoint is walked through the public API
 * (fuzz_walk.h): every record and its payload offset, every storage, every
 * entry, printed as the CLI prints it; then closed. Covers the zip directory
 * reader (ZIP64 records and extras, local headers, libzip for deflated
 * records), the small records (version, byteorder, .format_version,
 * .storage_alignment), the sniffing of other formats, the pickle through the
 * torch interpreter, the storage checks and the naming of entries.
 */
#include <stdint.h>

#include "fuzz_common.h"
#include "fuzz_walk.h"
#include "tinspect/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128];
	fuzz_path(path, sizeof(path), "checkpoint.pt");
	fuzz_write_file(path, data, size);

	ti_ckpt *ckpt = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_ckpt_open(path, NULL, &ckpt, &err);
	fuzz_check_status(s, &err, ckpt);
	if (s == TI_OK)
		fuzz_walk_ckpt(ckpt);
	ti_ckpt_close(ckpt);
	return 0;
}
