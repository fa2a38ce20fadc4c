/*
 * hf_directory.c - the source row for a folder: a Hugging Face checkpoint
 * directory is read as from_pretrained reads it. transformers looks for
 * model.safetensors, then model.safetensors.index.json, then
 * pytorch_model.bin, then pytorch_model.bin.index.json
 * (modeling_utils.py, SAFE_WEIGHTS_NAME and its siblings), and so do we:
 * the first that exists is opened by its content, as if named itself.
 */
#include "source/source_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const weight_files[] = {
	"model.safetensors",
	"model.safetensors.index.json",
	"pytorch_model.bin",
	"pytorch_model.bin.index.json",
};

ti_status ti_source_folder_weights(const char *dir, char *out, size_t size, ti_error *err)
{
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	for (size_t i = 0; i < sizeof(weight_files) / sizeof(weight_files[0]); i++) {
		int n = snprintf(out, size, "%.*s/%s", (int)len, dir, weight_files[i]);
		if (n < 0 || (size_t)n >= size)
			return TI_FAIL(err, TI_E_LIMIT, "the folder's path is too long");
		struct stat sb;
		if (stat(out, &sb)) {
			if (errno == ENOENT)
				continue;
			return TI_FAIL(err, TI_E_IO, "cannot open '%s': %s", out, strerror(errno));
		}
		if (!S_ISREG(sb.st_mode)) /* a folder of that name (or a link back here) is no checkpoint */
			return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is not a regular file", out);
		return TI_OK;
	}
	return TI_FAIL(err, TI_E_UNSUPPORTED, "a directory that holds no Hugging Face checkpoint (model.safetensors, "
	               "model.safetensors.index.json, pytorch_model.bin or pytorch_model.bin.index.json)");
}

bool ti_source_is_hf_repo(const char *name)
{
	if (strncmp(name, "hf://", 5))
		return false;
	const char *slash = strchr(name + 5, '/');
	if (!slash || slash == name + 5 || !slash[1])
		return false; /* no REPO: ti_io_open says what an hf:// URL is */
	const char *rest = strchr(slash + 1, '/');
	return !rest || !rest[1];
}

ti_status ti_source_repo_file(const char *repo, const char *const *names, size_t count, char *out, size_t size,
                              ti_io **io, ti_error *err)
{
	size_t len = strlen(repo);
	while (len && repo[len - 1] == '/')
		len--;
	bool offline = false;
	for (size_t i = 0; i < count; i++) {
		int n = snprintf(out, size, "%.*s/%s", (int)len, repo, names[i]);
		if (n < 0 || (size_t)n >= size)
			return TI_FAIL(err, TI_E_LIMIT, "the repository's URL is too long");
		ti_status st = ti_io_open(out, io, err);
		if (!ti_io_error_is_absent(st, err))
			return st;
		/* not on the server, or offline not in the cache: from_pretrained goes on to the next */
		offline |= !strcmp(err->message, TI_IO_OFFLINE_ABSENT);
	}
	const char *what = count == 1 ? names[0] : "checkpoint from_pretrained reads (model.safetensors, "
	                   "model.safetensors.index.json, pytorch_model.bin or pytorch_model.bin.index.json)";
	if (offline)
		return TI_FAIL(err, TI_E_NETWORK, "offline (--offline, TINSPECT_OFFLINE or HF_HUB_OFFLINE): the cache holds no %s "
		               "of this repository", what);
	return TI_FAIL(err, TI_E_UNSUPPORTED, "a repository that holds no %s", what);
}

ti_status ti_source_repo_weights(const char *repo, char *out, size_t size, ti_io **io, ti_error *err)
{
	return ti_source_repo_file(repo, weight_files, sizeof(weight_files) / sizeof(weight_files[0]), out, size, io, err);
}

/*
 * The weights file of a repository on the Hub, hf://ORG/REPO[@REVISION], in
 * from_pretrained's order: the first the server has (a 404 says it has not)
 * is opened, and kept for source.c to read on (s->sniffed).
 */
ti_status source_hf_repo_weights(ti_source *s, const char *repo, const char **file, ti_error *err)
{
	size_t need = strlen(repo) + 64;
	char *name = ti_arena_alloc(&s->arena, need);
	if (!name)
		return source_out_of_memory(err);
	ti_io_close(s->sniffed);
	s->sniffed = NULL;
	ti_status st = ti_source_repo_weights(repo, name, need, &s->sniffed, err);
	*file = name;
	return st;
}

/* A Hugging Face folder stands for its weights file, which source.c opens by its content. */
static ti_status hf_directory_weights(ti_source *s, const char *path, const char **file, ti_error *err)
{
	size_t need = strlen(path) + 64;
	char *name = ti_arena_alloc(&s->arena, need);
	if (!name)
		return source_out_of_memory(err);
	*file = name;
	return ti_source_folder_weights(path, name, need, err);
}

const source_row source_hf_directory = {
	.format = TI_SOURCE_HF_SHARDED, .kind = TI_FILE_DIRECTORY, .stands_for = hf_directory_weights};
