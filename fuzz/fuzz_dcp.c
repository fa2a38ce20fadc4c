/*
 * fuzz_dcp.c - a torch.distributed.checkpoint folder's .metadata, and the
 * folder read through it.
 *
 * Each input is a .metadata (seeds: the .metadata of fixtures/dcp, fixtures/dcp_v22 and
 * each fixtures/dcp_broken folder) and is read twice:
 *
 *   1. ti_dcp_parse(): the pickle machine with the DCP checks (globals,
 *      calls, builds), then the Metadata's fields. A parsed one is walked:
 *      every item's name, rank and shape; every chunk inside its tensor,
 *      the chunks' elements adding up to the tensor's; every file index
 *      valid and every file name one of the folder.
 *   2. The input as '.metadata' of the scratch folder, beside the data
 *      files it names (at most 8): the fixture's own __0_0.distcp and
 *      __1_0.distcp when it names those and the harness runs from the
 *      repository root, zeros for the rest. ti_source_open() on the folder,
 *      then every tensor of at most 1 MiB read whole: chunks that are no
 *      torch.save zip, hold another tensor, or lie anywhere in the files
 *      must fail as bad input, never as a caller's mistake.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tinspect/dcp.h"
#include "tinspect/source.h"

enum { FILES_MAX = 8, READ_MAX = 1 << 20, ZEROS_MAX = 1 << 16 };

static void walk(const ti_dcp *d)
{
	size_t files = ti_dcp_file_count(d);
	for (size_t i = 0; i < files; i++) {
		const char *f = ti_dcp_file_at(d, i);
		FUZZ_CHECK(f && f[0] && !strchr(f, '/') && strcmp(f, "..") && strcmp(f, ".") && strcmp(f, ".metadata"),
		           "file name '%s' leaves the folder", f ? f : "(null)");
	}
	FUZZ_CHECK(ti_dcp_file_at(d, files) == NULL, "a file past the end");
	size_t n = ti_dcp_item_count(d);
	for (size_t i = 0; i < n; i++) {
		const ti_dcp_item *it = ti_dcp_item_at(d, i);
		FUZZ_CHECK(it && it->name && it->value, "item %zu", i);
		FUZZ_CHECK(it->chunks && (it->is_tensor || it->chunk_count == 1), "item '%s' chunks", it->name);
		for (size_t k = 0; k < it->chunk_count; k++)
			FUZZ_CHECK(it->chunks[k].file < files, "item '%s' chunk %zu in file %zu", it->name, k,
			           it->chunks[k].file);
		if (!it->is_tensor)
			continue;
		FUZZ_CHECK(it->ndim >= 0 && it->ndim <= 64 && it->shape, "tensor '%s' of rank %d", it->name, it->ndim);
		uint64_t numel = 1, covered = 0;
		for (int k = 0; k < it->ndim; k++) {
			FUZZ_CHECK(it->shape[k] >= 0, "tensor '%s' dimension %d", it->name, k);
			numel *= (uint64_t)it->shape[k];
		}
		FUZZ_CHECK(numel == (uint64_t)it->numel, "tensor '%s' numel", it->name);
		for (size_t c = 0; c < it->chunk_count; c++) {
			const ti_dcp_chunk *ch = &it->chunks[c];
			uint64_t cn = 1;
			for (int k = 0; k < it->ndim; k++) {
				FUZZ_CHECK(ch->offsets[k] >= 0 && ch->sizes[k] >= 0 &&
				               ch->offsets[k] + ch->sizes[k] <= it->shape[k],
				           "tensor '%s' chunk %zu outside", it->name, c);
				cn *= (uint64_t)ch->sizes[k];
			}
			covered += cn;
		}
		FUZZ_CHECK(covered == numel, "tensor '%s': chunks hold %llu of %llu elements", it->name,
		           (unsigned long long)covered, (unsigned long long)numel);
	}
	FUZZ_CHECK(ti_dcp_item_at(d, n) == NULL, "an item past the end");
}

/* The scratch folder emptied: nothing of the last input's folder may stay. */
static void clear_dir(const char *dir)
{
	DIR *dd = opendir(dir);
	if (!dd)
		return;
	struct dirent *e;
	char path[512];
	while ((e = readdir(dd)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	closedir(dd);
}

/* A fixture data file's bytes (read on first use, kept: the same for every input), or NULL. */
static const uint8_t *fixture_file(const char *name, size_t *size)
{
	static uint8_t *data[2];
	static size_t sizes[2];
	static int tried[2];
	int i = !strcmp(name, "__0_0.distcp") ? 0 : !strcmp(name, "__1_0.distcp") ? 1 : -1;
	if (i < 0)
		return NULL;
	if (!tried[i]) {
		tried[i] = 1;
		char path[64];
		snprintf(path, sizeof(path), "fixtures/dcp/%s", name);
		FILE *f = fopen(path, "rb");
		if (f) {
			data[i] = malloc(1 << 16);
			sizes[i] = data[i] ? fread(data[i], 1, 1 << 16, f) : 0;
			fclose(f);
		}
	}
	*size = sizes[i];
	return data[i];
}

static void read_folder(const ti_dcp *d, const uint8_t *meta, size_t meta_size)
{
	char dir[128], path[512];
	fuzz_path(path, sizeof(path), ".metadata");
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	clear_dir(dir);
	fuzz_write_file(path, meta, meta_size);
	static const uint8_t zeros[ZEROS_MAX];
	for (size_t i = 0; i < ti_dcp_file_count(d); i++) {
		size_t size = 0;
		const uint8_t *bytes = fixture_file(ti_dcp_file_at(d, i), &size);
		snprintf(path, sizeof(path), "%s/%s", dir, ti_dcp_file_at(d, i));
		fuzz_write_file(path, bytes ? bytes : zeros, bytes ? size : sizeof(zeros));
	}
	ti_source *src = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_source_open(dir, &src, &err);
	fuzz_check_status(s, &err, src);
	if (s)
		return;
	FUZZ_CHECK(ti_source_get_format(src) == TI_SOURCE_DCP, "a folder with .metadata opened as %s",
	           ti_source_format_name(ti_source_get_format(src)));
	static uint8_t buf[READ_MAX];
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		const ti_source_storage *st = ti_source_storage_at(src, t->storage);
		FUZZ_CHECK(st && st->nbytes == (uint64_t)t->numel * ti_dtype_size(t->dtype), "tensor '%s' storage", t->name);
		if (st->nbytes > READ_MAX)
			continue;
		ti_error_clear(&err);
		s = ti_source_read(src, t->storage, 0, buf, (size_t)st->nbytes, &err);
		FUZZ_CHECK(s != TI_E_INVALID, "reading tensor '%s' whole: a usage error: %s", t->name, err.message);
		FUZZ_CHECK(s == TI_OK || err.message[0], "reading tensor '%s' failed with no message", t->name);
	}
	ti_source_close(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ti_dcp *d = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_dcp_parse(data, size, NULL, &d, &err);
	fuzz_check_status(s, &err, d);
	if (s == TI_OK) {
		walk(d);
		if (ti_dcp_file_count(d) <= FILES_MAX)
			read_folder(d, data, size);
	}
	ti_dcp_close(d);
	return 0;
}
