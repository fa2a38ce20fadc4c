/*
 * hf_index.c - the source row for a Hugging Face sharded checkpoint, opened
 * by its index (model.safetensors.index.json, pytorch_model.bin.index.json):
 * the index is checked (format/hf_index.c), then every shard it names is
 * opened by its content, as a torch zip or a safetensors file, and must
 * hold exactly the tensors the weight_map puts in it.
 */
#include "source/source_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/hf_index.h"

/* Keeps the index's metadata: the index is closed once its shards are open. */
static ti_status keep_metadata(ti_source *s, const ti_hf_index *index, ti_error *err)
{
	size_t meta = ti_hf_index_metadata_count(index);
	s->metadata = ti_arena_calloc(&s->arena, meta + 1, sizeof(*s->metadata));
	if (!s->metadata)
		return source_out_of_memory(err);
	for (size_t i = 0; i < meta; i++) {
		const ti_st_pair *m = ti_hf_index_metadata_at(index, i);
		char *key = ti_arena_strdup(&s->arena, m->key), *value = ti_arena_strdup(&s->arena, m->value);
		if (!key || !value)
			return source_out_of_memory(err);
		s->metadata[s->metadata_count++] = (ti_source_pair){key, value};
	}
	return TI_OK;
}

/* A shard that is not there: the index, the shard, and the tensors it should hold (the first three). */
static ti_status missing_shard(const ti_hf_index *index, size_t shard, const char *index_path, ti_error *err)
{
	const ti_hf_shard *sh = ti_hf_index_shard(index, shard);
	char names[512] = "";
	size_t len = 0, listed = 0;
	for (size_t i = 0; i < ti_hf_index_weight_count(index) && listed < 3; i++) {
		const ti_hf_weight *w = ti_hf_index_weight(index, i);
		if (w->shard != shard)
			continue;
		int n = snprintf(names + len, sizeof(names) - len, "%s'%.120s'", listed ? ", " : "", w->name);
		if (n > 0 && (size_t)n < sizeof(names) - len)
			len += (size_t)n;
		listed++;
	}
	if (sh->tensor_count > listed)
		snprintf(names + len, sizeof(names) - len, " and %zu more", sh->tensor_count - listed);
	return TI_FAIL(err, TI_E_IO, "shard '%s' named by '%s' is missing: it should hold %s", sh->file, index_path,
	               names);
}

static ti_status open_shard(ti_source *s, const ti_hf_index *index, size_t i, const char *index_path, ti_error *err)
{
	const ti_hf_shard *shard = ti_hf_index_shard(index, i);
	struct stat sb;
	if (!ti_io_is_url(shard->path) && stat(shard->path, &sb) && errno == ENOENT)
		return missing_shard(index, i, index_path, err);
	source_part *p;
	ti_status st = source_add_part(s, shard->path, &p, err);
	if (st == TI_E_NETWORK && !strncmp(err->message, "HTTP 404", 8)) /* a shard the server does not have */
		return missing_shard(index, i, index_path, err);
	if (st)
		return st;
	unsigned char head[TI_SNIFF_BYTES];
	size_t got;
	if ((st = ti_io_read(p->io, 0, head, sizeof(head), &got, err))) {
		ti_error_at(err, shard->file, -1);
		return st;
	}
	ti_file_kind kind = ti_file_sniff(head, got, p->io->size);
	size_t before = s->tensor_count;
	if (kind == TI_FILE_SAFETENSORS)
		st = source_add_safetensors(s, p, false, err);
	else if (kind == TI_FILE_ZIP)
		st = source_add_torch_zip(s, p, err);
	else
		st = TI_FAIL(err, TI_E_UNSUPPORTED, "shard '%s' is %s, not a safetensors or torch zip file", shard->file,
		             ti_file_kind_name(kind));
	if (st) {
		ti_error_at(err, shard->file, -1);
		return st;
	}
	ti_io_drop_cache(p->io); /* its header is read: a URL's cached blocks go, not one shard's worth each */
	/* every tensor the index names must be in its shard, and no other */
	const char **names = ti_arena_calloc(&s->arena, s->tensor_count - before + 1, sizeof(*names));
	if (!names)
		return source_out_of_memory(err);
	size_t n = 0;
	for (size_t k = before; k < s->tensor_count; k++)
		if (!s->tensors[k].tie_of)
			names[n++] = s->tensors[k].name;
	return ti_hf_index_check_names(index, i, names, n, err);
}

/*
 * A remote index's shards are opened at once, each over its own connection
 * (at most SHARDS_AT_ONCE), so that their first blocks, which hold a
 * safetensors header or a zip's end, arrive in one round trip rather than
 * one a shard; then they are read in the index's order, as a local folder's
 * are. A shard that failed here is opened again in order, where its error
 * is told as it would be.
 */
enum { SHARDS_AT_ONCE = 8 };

typedef struct shard_opener {
	const ti_hf_index *index;
	ti_io **opened;
	atomic_size_t next;
} shard_opener;

static void *open_shards(void *arg)
{
	shard_opener *o = arg;
	size_t n = ti_hf_index_shard_count(o->index);
	for (size_t i; (i = atomic_fetch_add(&o->next, 1)) < n;) {
		ti_error err;
		ti_error_clear(&err);
		if (ti_io_open(ti_hf_index_shard(o->index, i)->path, &o->opened[i], &err))
			o->opened[i] = NULL;
	}
	return NULL;
}

static void open_remote_shards(ti_source *s, const ti_hf_index *index)
{
	size_t n = ti_hf_index_shard_count(index);
	if (n < 2 || !ti_io_is_url(ti_hf_index_shard(index, 0)->path))
		return;
	shard_opener o = {index, ti_arena_calloc(&s->arena, n, sizeof(*o.opened)), 0};
	if (!o.opened)
		return;
	pthread_t threads[SHARDS_AT_ONCE];
	size_t started = 0;
	while (started < n && started < SHARDS_AT_ONCE && !pthread_create(&threads[started], NULL, open_shards, &o))
		started++;
	if (!started)
		return; /* no thread: each shard is opened in turn */
	for (size_t t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	s->opened = o.opened;
	s->opened_count = n;
}

static void close_opened(ti_source *s)
{
	for (size_t i = 0; i < s->opened_count; i++)
		ti_io_close(s->opened[i]);
	s->opened = NULL;
	s->opened_count = 0;
}

static ti_status open_hf_index(ti_source *s, const char *path, ti_error *err)
{
	ti_hf_index *index;
	ti_status st = s->sniffed && !strcmp(s->sniffed->name, path) ? ti_hf_index_open_io(s->sniffed, NULL, &index, err)
	                                                            : ti_hf_index_open(path, NULL, &index, err);
	if (st)
		return st;
	st = keep_metadata(s, index, err);
	if (!st)
		open_remote_shards(s, index);
	for (size_t i = 0; i < ti_hf_index_shard_count(index) && !st; i++)
		st = open_shard(s, index, i, path, err);
	close_opened(s);
	ti_hf_index_close(index);
	return st;
}

const source_row source_hf_index = {.format = TI_SOURCE_HF_SHARDED, .kind = TI_FILE_JSON, .open = open_hf_index};
