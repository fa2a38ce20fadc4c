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
 * torch interpreter, the storage checks and the naming of entries. Then a
 * TorchScript archive through ti_source_open(), whose row reads what the
 * checkpoint does not: the class declarations in code/ and the
 * constants.pkl (seeded with a copy of jit_tied_scripted.pt whose records
 * are all stored, so that mutations reach the code's text); every tensor
 * must view its storage within its bytes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_walk.h"
#include "tinspect/checkpoint.h"
#include "tinspect/source.h"

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
	bool torchscript = s == TI_OK && !strcmp(ti_ckpt_get_info(ckpt)->format, "torchscript-zip");
	if (s == TI_OK)
		fuzz_walk_ckpt(ckpt);
	ti_ckpt_close(ckpt);
	if (!torchscript) /* the torch zip row reads what ti_ckpt_open read */
		return 0;

	ti_source *src = NULL;
	ti_error_clear(&err);
	s = ti_source_open(path, &src, &err);
	fuzz_check_status(s, &err, src);
	if (s == TI_OK) {
		size_t n = 0;
		const ti_entry *e = ti_source_entries(src, &n, &err);
		for (size_t i = 0; e && i < n; i++) {
			FUZZ_CHECK(e[i].name && e[i].value, "source entry %zu", i);
			fuzz_walk_value(e[i].value);
		}
		for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
			const ti_source_tensor *t = ti_source_tensor_at(src, i);
			const ti_source_storage *st = ti_source_storage_at(src, t->storage);
			FUZZ_CHECK(t->name && st, "source tensor %zu", i);
			FUZZ_CHECK(t->unsupported || !st->has_data || ti_source_tensor_extent(t) <= st->nbytes,
			           "tensor '%s' passes its storage's %llu bytes", t->name, (unsigned long long)st->nbytes);
		}
	}
	ti_source_close(src);
	return 0;
}
