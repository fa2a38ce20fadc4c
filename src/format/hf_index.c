/*
 * hf_index.c - Hugging Face shard indexes (see tinspect/hf_index.h).
 * Format facts: transformers modeling_utils (save_pretrained writes the index
 * with indent=2, sort_keys=True) and huggingface_hub
 * split_state_dict_into_shards_factory (shard names, weight_map).
 */
#include "tinspect/hf_index.h"
#include "tinspect/io.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/json_scan.h"
#include "tinspect/arena.h"

struct ti_hf_index {
	ti_arena arena;
	ti_hf_shard *shards;
	size_t shard_count;
	ti_hf_weight *weights;      /* file order */
	size_t weight_count;
	const ti_hf_weight **by_name;
	ti_st_pair *metadata;
	size_t metadata_count;
	int64_t total_size;
};

static ti_status no_memory(ti_error *err)
{
	return TI_FAIL(err, TI_E_NOMEM, "out of memory reading the shard index");
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

static ti_hf_format shard_format(const char *file)
{
	if (ends_with(file, ".safetensors"))
		return TI_HF_SAFETENSORS;
	if (ends_with(file, ".bin") || ends_with(file, ".pt") || ends_with(file, ".pth"))
		return TI_HF_TORCH;
	return TI_HF_UNKNOWN;
}

/* A shard must be a plain file name next to the index: the index is untrusted. */
static ti_status check_shard_name(const char *tensor, const char *file, ti_error *err)
{
	if (!file[0])
		return TI_FAIL(err, TI_E_CORRUPT, "weight_map puts tensor '%s' in a shard with an empty name", tensor);
	if (!strcmp(file, ".") || !strcmp(file, ".."))
		return TI_FAIL(err, TI_E_CORRUPT, "weight_map puts tensor '%s' in the shard '%s', which is a folder",
		               tensor, file);
	if (strchr(file, '/') || strchr(file, '\\'))
		return TI_FAIL(err, TI_E_CORRUPT,
		               "weight_map puts tensor '%s' in the shard '%s', which is not a plain file name next to the index",
		               tensor, file);
	return TI_OK;
}

typedef struct shard_ref {
	const char *file;
	size_t weight;  /* the weight_map entry that names it */
} shard_ref;

static int compare_refs(const void *a, const void *b)
{
	const shard_ref *x = a, *y = b;
	int c = strcmp(x->file, y->file);
	if (c)
		return c;
	return x->weight < y->weight ? -1 : x->weight > y->weight;
}

typedef struct shard_group {
	size_t first;  /* the first weight naming the shard */
	size_t start;  /* where its refs begin in the sorted refs */
	size_t count;
} shard_group;

static int compare_groups(const void *a, const void *b)
{
	const shard_group *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int compare_weight_names(const void *a, const void *b)
{
	return strcmp((*(const ti_hf_weight *const *)a)->name, (*(const ti_hf_weight *const *)b)->name);
}

/*
 * Distinct shards in first-appearance order, found by sorting (a hostile
 * index may name a new shard for every tensor: no O(n^2) scan). files[i] is
 * the shard of weight i, a string of the cJSON tree.
 */
static ti_status build_shards(ti_hf_index *idx, const char *const *files, const char *dir, size_t dir_len,
                              ti_error *err)
{
	size_t n = idx->weight_count;
	shard_ref *refs = calloc(n ? n : 1, sizeof(*refs));
	shard_group *groups = calloc(n ? n : 1, sizeof(*groups));
	ti_status s = TI_OK;
	if (!refs || !groups) {
		s = no_memory(err);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		refs[i] = (shard_ref){files[i], i};
	qsort(refs, n, sizeof(*refs), compare_refs);
	size_t count = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && !strcmp(refs[i].file, refs[i - 1].file)) {
			groups[count - 1].count++;
			continue;
		}
		s = check_shard_name(idx->weights[refs[i].weight].name, refs[i].file, err);
		if (s)
			goto out;
		groups[count++] = (shard_group){refs[i].weight, i, 1};
	}
	qsort(groups, count, sizeof(*groups), compare_groups);
	idx->shards = ti_arena_calloc(&idx->arena, count ? count : 1, sizeof(ti_hf_shard));
	if (!idx->shards) {
		s = no_memory(err);
		goto out;
	}
	for (size_t g = 0; g < count; g++) {
		ti_hf_shard *sh = &idx->shards[g];
		const char *file = refs[groups[g].start].file;
		sh->file = ti_arena_strdup(&idx->arena, file);
		sh->path = ti_arena_printf(&idx->arena, "%.*s%s", (int)dir_len, dir, file);
		if (!sh->file || !sh->path) {
			s = no_memory(err);
			goto out;
		}
		sh->format = shard_format(file);
		sh->tensor_count = groups[g].count;
		for (size_t k = 0; k < groups[g].count; k++)
			idx->weights[refs[groups[g].start + k].weight].shard = g;
	}
	idx->shard_count = count;
out:
	free(refs);
	free(groups);
	return s;
}

static ti_status read_weight_map(ti_hf_index *idx, const cJSON *map, const ti_st_limits *lim, const char *dir,
                                 size_t dir_len, ti_error *err)
{
	if (!cJSON_IsObject(map))
		return TI_FAIL(err, TI_E_CORRUPT, "index has a weight_map that is not an object");
	size_t n = 0;
	for (const cJSON *c = map->child; c; c = c->next)
		n++;
	if (n > lim->tensors_max)
		return TI_FAIL(err, TI_E_LIMIT, "index maps %zu tensors, more than the limit of %zu", n, lim->tensors_max);
	idx->weights = ti_arena_calloc(&idx->arena, n ? n : 1, sizeof(ti_hf_weight));
	idx->by_name = ti_arena_calloc(&idx->arena, n ? n : 1, sizeof(*idx->by_name));
	const char **files = calloc(n ? n : 1, sizeof(*files));
	if (!idx->weights || !idx->by_name || !files) {
		free(files);
		return no_memory(err);
	}
	ti_status s = TI_OK;
	for (const cJSON *c = map->child; c && !s; c = c->next) {
		if (!cJSON_IsString(c)) {
			s = TI_FAIL(err, TI_E_CORRUPT, "weight_map gives tensor '%s' a shard that is not a string", c->string);
			break;
		}
		ti_hf_weight *w = &idx->weights[idx->weight_count];
		w->name = ti_arena_strdup(&idx->arena, c->string);
		if (!w->name)
			s = no_memory(err);
		files[idx->weight_count] = c->valuestring;
		idx->by_name[idx->weight_count] = w;
		idx->weight_count++;
	}
	if (!s) {
		qsort(idx->by_name, idx->weight_count, sizeof(*idx->by_name), compare_weight_names);
		for (size_t i = 1; i < idx->weight_count && !s; i++)
			if (!strcmp(idx->by_name[i - 1]->name, idx->by_name[i]->name))
				s = TI_FAIL(err, TI_E_CORRUPT, "weight_map names tensor '%s' twice", idx->by_name[i]->name);
	}
	if (!s)
		s = build_shards(idx, files, dir, dir_len, err);
	free(files);
	return s;
}

static ti_status read_metadata(ti_hf_index *idx, const cJSON *meta, ti_error *err)
{
	if (cJSON_IsNull(meta))
		return TI_OK;
	if (!cJSON_IsObject(meta))
		return TI_FAIL(err, TI_E_CORRUPT, "index has metadata that is not an object");
	size_t n = 0;
	for (const cJSON *c = meta->child; c; c = c->next)
		n++;
	idx->metadata = ti_arena_calloc(&idx->arena, n ? n : 1, sizeof(ti_st_pair));
	const char **keys = ti_arena_calloc(&idx->arena, n ? n : 1, sizeof(*keys));
	if (!idx->metadata || !keys)
		return no_memory(err);
	for (const cJSON *c = meta->child; c; c = c->next) {
		ti_st_pair *p = &idx->metadata[idx->metadata_count];
		p->key = ti_arena_strdup(&idx->arena, c->string);
		if (cJSON_IsString(c))
			p->value = ti_arena_strdup(&idx->arena, c->valuestring);
		else {
			char *text = cJSON_PrintUnformatted(c);
			p->value = text ? ti_arena_strdup(&idx->arena, text) : NULL;
			cJSON_free(text);
		}
		if (!p->key || !p->value)
			return no_memory(err);
		keys[idx->metadata_count++] = p->key;
		if (!strcmp(c->string, "total_size")) {
			/* A byte count: json_scan did not force integers here, so check this one. */
			double v = c->valuedouble;
			if (!cJSON_IsNumber(c) || v < 0 || v >= TI_JSON_INT_LIMIT || v != (double)(int64_t)v)
				return TI_FAIL(err, TI_E_CORRUPT, "index metadata has a total_size that is not a byte count");
			idx->total_size = (int64_t)v;
		}
	}
	const char *dup = ti_json_duplicate_key(keys, n);
	if (dup)
		return TI_FAIL(err, TI_E_CORRUPT, "index metadata has the key '%s' twice", dup);
	return TI_OK;
}

static ti_status read_index(ti_hf_index *idx, const char *text, size_t n, const ti_st_limits *lim, const char *dir,
                            size_t dir_len, ti_error *err)
{
	ti_json_scan scan = {.what = "index", .base_offset = 0, .integers_only = false, .values_max = lim->values_max};
	cJSON *root;
	ti_status s = ti_json_parse(text, n, &scan, &root, err);
	if (s)
		return s;
	const cJSON *map = NULL, *meta = NULL;
	for (const cJSON *c = root->child; c && !s; c = c->next) {
		const cJSON **slot = !strcmp(c->string, "weight_map") ? &map : !strcmp(c->string, "metadata") ? &meta : NULL;
		if (slot && *slot)
			s = TI_FAIL(err, TI_E_CORRUPT, "index has the key '%s' twice", c->string);
		else if (slot)
			*slot = c;
	}
	if (!s && !map)
		s = TI_FAIL(err, TI_E_UNSUPPORTED, "a JSON file with no \"weight_map\": not a checkpoint index");
	if (!s)
		s = read_weight_map(idx, map, lim, dir, dir_len, err);
	if (!s && meta)
		s = read_metadata(idx, meta, err);
	cJSON_Delete(root);
	return s;
}

static ti_status load(ti_hf_index *idx, ti_io *io, const ti_st_limits *lim, ti_error *err)
{
	const char *path = io->name;
	ti_status s = TI_OK;
	char *text = NULL;
	size_t n = 0;
	if (io->size > lim->header_max || io->size > SIZE_MAX - 1)
		s = TI_FAIL(err, TI_E_LIMIT, "index of %" PRIu64 " bytes is larger than the limit of %" PRIu64 " bytes",
		            io->size, lim->header_max);
	else if (!(text = malloc((size_t)io->size + 1)))
		s = no_memory(err);
	else
		s = ti_io_read(io, 0, text, (size_t)io->size, &n, err);
	if (!s) {
		text[n] = '\0';
		const char *slash = strrchr(path, '/');
		size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
		/* Every string kept is a copy of file text and each struct costs less than the
		 * 8 bytes of JSON ("a":"b",) that make it, except the shard paths, which repeat
		 * the folder once for each shard, and there are at most n / 8 shards. */
		size_t paths = (n / 8 + 1) * (dir_len + 32);
		ti_arena_init(&idx->arena, ((size_t)1 << 20) + n * 8 + paths);
		s = read_index(idx, text, n, lim, path, dir_len, err);
	}
	free(text);
	return s;
}

ti_status ti_hf_index_open(const char *path, const ti_st_limits *limits, ti_hf_index **out, ti_error *err)
{
	ti_error_clear(err);
	if (!out)
		return TI_FAIL(err, TI_E_INVALID, "ti_hf_index_open needs somewhere to put the index");
	*out = NULL;
	if (!path)
		return TI_FAIL(err, TI_E_INVALID, "ti_hf_index_open needs a path");
	ti_io *io;
	ti_status s = ti_io_open(path, &io, err); /* a FIFO is refused, never waited on */
	if (s)
		return s;
	s = ti_hf_index_open_io(io, limits, out, err);
	ti_io_close(io);
	return s;
}

ti_status ti_hf_index_open_io(ti_io *io, const ti_st_limits *limits, ti_hf_index **out, ti_error *err)
{
	ti_error_clear(err);
	*out = NULL;
	ti_st_limits lim;
	if (limits)
		lim = *limits;
	else
		ti_st_limits_default(&lim);
	ti_hf_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return no_memory(err);
	idx->total_size = -1;
	ti_status s = load(idx, io, &lim, err);
	if (s) {
		ti_hf_index_close(idx);
		return s;
	}
	*out = idx;
	return TI_OK;
}

void ti_hf_index_close(ti_hf_index *index)
{
	if (!index)
		return;
	ti_arena_release(&index->arena);
	free(index);
}

size_t ti_hf_index_shard_count(const ti_hf_index *index) { return index->shard_count; }

const ti_hf_shard *ti_hf_index_shard(const ti_hf_index *index, size_t i)
{
	return i < index->shard_count ? &index->shards[i] : NULL;
}

size_t ti_hf_index_weight_count(const ti_hf_index *index) { return index->weight_count; }

const ti_hf_weight *ti_hf_index_weight(const ti_hf_index *index, size_t i)
{
	return i < index->weight_count ? &index->weights[i] : NULL;
}

const ti_hf_weight *ti_hf_index_find(const ti_hf_index *index, const char *name)
{
	size_t lo = 0, hi = index->weight_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(index->by_name[mid]->name, name);
		if (c == 0)
			return index->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int64_t ti_hf_index_total_size(const ti_hf_index *index) { return index->total_size; }

size_t ti_hf_index_metadata_count(const ti_hf_index *index) { return index->metadata_count; }

const ti_st_pair *ti_hf_index_metadata_at(const ti_hf_index *index, size_t i)
{
	return i < index->metadata_count ? &index->metadata[i] : NULL;
}

ti_status ti_hf_index_check_names(const ti_hf_index *index, size_t shard, const char *const *names, size_t count,
                                  ti_error *err)
{
	if (!index || shard >= index->shard_count || (count && !names))
		return TI_FAIL(err, TI_E_INVALID, "ti_hf_index_check_names got a bad argument");
	const char *file = index->shards[shard].file;
	unsigned char *seen = calloc(index->weight_count ? index->weight_count : 1, 1);
	if (!seen)
		return no_memory(err);
	ti_status s = TI_OK;
	for (size_t i = 0; i < count && !s; i++) {
		const ti_hf_weight *w = ti_hf_index_find(index, names[i]);
		if (!w)
			s = TI_FAIL(err, TI_E_CORRUPT, "shard '%s' holds tensor '%s', which is not in the weight_map", file,
			            names[i]);
		else if (w->shard != shard)
			s = TI_FAIL(err, TI_E_CORRUPT, "shard '%s' holds tensor '%s', which the weight_map puts in shard '%s'",
			            file, names[i], index->shards[w->shard].file);
		else if (seen[w - index->weights]++)
			s = TI_FAIL(err, TI_E_CORRUPT, "shard '%s' holds tensor '%s' twice", file, names[i]);
	}
	for (size_t i = 0; i < index->weight_count && !s; i++)
		if (index->weights[i].shard == shard && !seen[i])
			s = TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' of the weight_map is missing from shard '%s'",
			            index->weights[i].name, file);
	free(seen);
	return s;
}

ti_status ti_hf_index_check_safetensors(const ti_hf_index *index, size_t shard, const ti_st_file *file,
                                        ti_error *err)
{
	size_t n = ti_st_tensor_count(file);
	const char **names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return no_memory(err);
	for (size_t i = 0; i < n; i++)
		names[i] = ti_st_tensor_at(file, i)->name;
	ti_status s = ti_hf_index_check_names(index, shard, names, n, err);
	free(names);
	return s;
}

ti_status ti_hf_index_check_shards(const ti_hf_index *index, const ti_st_limits *limits, size_t *torch_shards,
                                   ti_error *err)
{
	ti_error_clear(err);
	size_t torch = 0;
	for (size_t i = 0; i < index->shard_count; i++) {
		const ti_hf_shard *sh = &index->shards[i];
		if (sh->format == TI_HF_TORCH) {
			torch++;
			continue;
		}
		if (sh->format == TI_HF_UNKNOWN)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "shard '%s' is neither a safetensors nor a torch file", sh->file);
		ti_st_file *f;
		ti_status s = ti_st_open(sh->path, limits, &f, err);
		if (!s) {
			s = ti_hf_index_check_safetensors(index, i, f, err);
			ti_st_close(f);
		}
		if (s) {
			ti_error_at(err, sh->path, -1);
			return s;
		}
	}
	if (torch_shards)
		*torch_shards = torch;
	return TI_OK;
}
