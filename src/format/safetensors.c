/*
 * safetensors.c - the safetensors header reader and the streaming writer
 * (see tinspect/safetensors.h for the format and the rules checked).
 * The header is parsed by format/json_scan.c (a strict pass, then cJSON) and
 * read here from the cJSON tree. The writer prints its JSON itself: cJSON
 * prints large integers as %g, and the bytes must be serde_json's.
 */
#define _GNU_SOURCE /* copy_file_range */
#include "tinspect/safetensors.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/json_scan.h"
#include "tinspect/arena.h"

/* PyTorch caps a tensor's rank at 64; the writer keeps to it. */
enum { RANK_MAX = 64, WRITE_BUFFER = 64 * 1024 };

/* --- dtypes ------------------------------------------------------------- */

/*
 * One row per safetensors dtype, in the order of the Rust Dtype enum
 * (safetensors/src/tensor.rs: "They MUST be in increasing alignment order");
 * the official writer sorts by this rank, largest first. The sub-byte F4,
 * F6_E2M3 and F6_E3M2 pack several elements per byte (Dtype::bitsize 4, 6
 * and 6): no torch dtype holds one element of them (float4_e2m1fn_x2 counts
 * pairs), so they map to tinspect's own sub-byte dtypes (dtype.h).
 */
static const struct st_dtype_row {
	const char *name;
	ti_dtype dtype;
} st_dtypes[] = {
	{"BOOL", TI_DT_BOOL},
	{"F4", TI_DT_FLOAT4_E2M1FN},
	{"F6_E2M3", TI_DT_FLOAT6_E2M3FN},
	{"F6_E3M2", TI_DT_FLOAT6_E3M2FN},
	{"U8", TI_DT_UINT8},
	{"I8", TI_DT_INT8},
	{"F8_E5M2", TI_DT_FLOAT8_E5M2},
	{"F8_E4M3", TI_DT_FLOAT8_E4M3FN},
	{"F8_E8M0", TI_DT_FLOAT8_E8M0FNU},
	{"F8_E4M3FNUZ", TI_DT_FLOAT8_E4M3FNUZ},
	{"F8_E5M2FNUZ", TI_DT_FLOAT8_E5M2FNUZ},
	{"I16", TI_DT_INT16},
	{"U16", TI_DT_UINT16},
	{"F16", TI_DT_FLOAT16},
	{"BF16", TI_DT_BFLOAT16},
	{"I32", TI_DT_INT32},
	{"U32", TI_DT_UINT32},
	{"F32", TI_DT_FLOAT32},
	{"C64", TI_DT_COMPLEX64},
	{"F64", TI_DT_FLOAT64},
	{"I64", TI_DT_INT64},
	{"U64", TI_DT_UINT64},
};
enum { ST_DTYPE_COUNT = sizeof(st_dtypes) / sizeof(st_dtypes[0]) };

static const struct st_dtype_row *st_dtype_row(const char *name)
{
	for (size_t i = 0; i < ST_DTYPE_COUNT; i++)
		if (!strcmp(st_dtypes[i].name, name))
			return &st_dtypes[i];
	return NULL;
}

/* The rank in the Rust enum; -1 for a dtype safetensors cannot hold. */
static int st_dtype_rank(ti_dtype dtype)
{
	for (size_t i = 0; i < ST_DTYPE_COUNT; i++)
		if (st_dtypes[i].dtype == dtype && dtype != TI_DT_INVALID)
			return (int)i;
	return -1;
}

ti_dtype ti_st_dtype_from_name(const char *name)
{
	const struct st_dtype_row *row = name ? st_dtype_row(name) : NULL;
	return row ? row->dtype : TI_DT_INVALID;
}

const char *ti_st_dtype_name(ti_dtype dtype)
{
	int rank = st_dtype_rank(dtype);
	return rank < 0 ? NULL : st_dtypes[rank].name;
}

void ti_st_limits_default(ti_st_limits *limits)
{
	limits->header_max = TI_ST_HEADER_MAX;
	limits->tensors_max = 1000000;
	limits->values_max = 8000000;
	limits->rank_max = RANK_MAX;
}

/* --- shared helpers ----------------------------------------------------- */

static uint64_t load_u64_le(const unsigned char *b)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static void store_u64_le(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

/* "[2, 3]" into buf, cut short with "..." if it does not fit. */
static const char *shape_text(const int64_t *shape, int ndim, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < ndim && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? ", " : "", shape[i]);
	if (n < size)
		snprintf(buf + n, size - n, "]");
	if (n >= size && size > 4)
		strcpy(buf + size - 4, "...");
	return buf;
}

/* Multiplies the sizes, refusing an overflow of int64 as the Rust reader does (ValidationOverflow). */
static bool shape_numel(const int64_t *shape, int ndim, int64_t *numel)
{
	int64_t n = 1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0 || (shape[i] != 0 && n > INT64_MAX / shape[i]))
			return false;
		n *= shape[i];
	}
	*numel = n;
	return true;
}

static int compare_names(const void *a, const void *b)
{
	const ti_st_tensor *x = *(const ti_st_tensor *const *)a, *y = *(const ti_st_tensor *const *)b;
	return strcmp(x->name, y->name);
}

/* --- reading ------------------------------------------------------------ */

struct ti_st_file {
	ti_io *io;
	ti_arena arena;
	ti_st_info info;
	ti_st_tensor *tensors;          /* header order */
	size_t count;
	const ti_st_tensor **by_offset; /* data order */
	const ti_st_tensor **by_name;   /* strcmp order, for ti_st_find */
	ti_st_pair *metadata;
	size_t metadata_count;
};

static ti_status no_memory(ti_error *err)
{
	return TI_FAIL(err, TI_E_NOMEM, "out of memory reading the safetensors header");
}

static int compare_offsets(const void *a, const void *b)
{
	const ti_st_tensor *x = *(const ti_st_tensor *const *)a, *y = *(const ti_st_tensor *const *)b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static ti_status read_metadata(ti_st_file *f, const cJSON *item, ti_error *err)
{
	f->info.has_metadata = true;
	if (cJSON_IsNull(item))
		return TI_OK; /* serde reads null as no metadata */
	if (!cJSON_IsObject(item))
		return TI_FAIL(err, TI_E_CORRUPT, "__metadata__ in the header is not an object of strings");
	size_t n = 0;
	for (const cJSON *c = item->child; c; c = c->next)
		n++;
	f->metadata = ti_arena_calloc(&f->arena, n ? n : 1, sizeof(ti_st_pair));
	const char **keys = ti_arena_calloc(&f->arena, n ? n : 1, sizeof(*keys));
	if (!f->metadata || !keys)
		return no_memory(err);
	for (const cJSON *c = item->child; c; c = c->next) {
		if (!cJSON_IsString(c))
			return TI_FAIL(err, TI_E_CORRUPT, "__metadata__ value of '%s' is not a string", c->string);
		ti_st_pair *p = &f->metadata[f->metadata_count];
		p->key = ti_arena_strdup(&f->arena, c->string);
		p->value = ti_arena_strdup(&f->arena, c->valuestring);
		if (!p->key || !p->value)
			return no_memory(err);
		keys[f->metadata_count++] = p->key;
	}
	const char *dup = ti_json_duplicate_key(keys, n);
	if (dup)
		return TI_FAIL(err, TI_E_CORRUPT, "duplicate key '%s' in __metadata__", dup);
	return TI_OK;
}

/* The three fields of a tensor entry, each found once; other keys are ignored, as serde does. */
static ti_status entry_fields(const cJSON *item, const char *name, const cJSON *fields[3], ti_error *err)
{
	static const char *const wanted[3] = {"dtype", "shape", "data_offsets"};
	if (!cJSON_IsObject(item))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' in the header is not an object", name);
	fields[0] = fields[1] = fields[2] = NULL;
	for (const cJSON *c = item->child; c; c = c->next)
		for (int k = 0; k < 3; k++)
			if (!strcmp(c->string, wanted[k])) {
				if (fields[k])
					return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has two '%s' fields", name, wanted[k]);
				fields[k] = c;
			}
	for (int k = 0; k < 3; k++)
		if (!fields[k])
			return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has no '%s'", name, wanted[k]);
	return TI_OK;
}

static ti_status read_tensor(ti_st_file *f, const cJSON *item, ti_st_tensor *t, const ti_st_limits *lim,
                             ti_error *err)
{
	const char *name = item->string;
	const cJSON *fields[3];
	ti_status s = entry_fields(item, name, fields, err);
	if (s)
		return s;
	const cJSON *dtype = fields[0], *shape = fields[1], *offsets = fields[2];

	if (!cJSON_IsString(dtype))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has a dtype that is not a string", name);
	const struct st_dtype_row *row = st_dtype_row(dtype->valuestring);
	if (!row)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "tensor '%s' has the unknown dtype '%s'", name,
		               dtype->valuestring);

	if (!cJSON_IsArray(shape))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has a shape that is not a list of integers", name);
	int ndim = 0;
	for (const cJSON *c = shape->child; c; c = c->next) {
		if (!cJSON_IsNumber(c))
			return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has a shape that is not a list of integers", name);
		if (++ndim > lim->rank_max)
			return TI_FAIL(err, TI_E_LIMIT, "tensor '%s' has more than %d dimensions", name, lim->rank_max);
	}
	int64_t *dims = ti_arena_calloc(&f->arena, ndim ? (size_t)ndim : 1, sizeof(int64_t));
	t->name = ti_arena_strdup(&f->arena, name);
	if (!dims || !t->name)
		return no_memory(err);
	int d = 0;
	for (const cJSON *c = shape->child; c; c = c->next)
		dims[d++] = (int64_t)c->valuedouble; /* exact: json_scan let through only integers below 2^53 */
	t->dtype = row->dtype;
	t->dtype_name = row->name;
	t->ndim = ndim;
	t->shape = dims;

	char text[128];
	unsigned bits = ti_dtype_bits(row->dtype);
	if (!shape_numel(dims, ndim, &t->numel) || (uint64_t)t->numel > UINT64_MAX / bits)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has the shape %s, too large to count", name,
		               shape_text(dims, ndim, text, sizeof(text)));
	/* numel * bits / 8 bytes; a sub-byte tensor must end on a byte (tensor.rs validate: MisalignedSlice) */
	if (!ti_dtype_nbytes(row->dtype, (uint64_t)t->numel, &t->nbytes))
		return TI_FAIL(err, TI_E_CORRUPT,
		               "tensor '%s' has the shape %s: %" PRId64 " elements of %s (%u bits each) end inside a byte",
		               name, shape_text(dims, ndim, text, sizeof(text)), t->numel, row->name, bits);

	if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 || !cJSON_IsNumber(offsets->child) ||
	    !cJSON_IsNumber(offsets->child->next))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has data_offsets that are not two integers", name);
	uint64_t begin = (uint64_t)offsets->child->valuedouble, end = (uint64_t)offsets->child->next->valuedouble;
	if (begin > end)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor '%s' has data_offsets [%" PRIu64 ", %" PRIu64 "] that end before they begin",
		               name, begin, end);
	if (end > f->info.data_size)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "tensor '%s' has data_offsets [%" PRIu64 ", %" PRIu64 "] past the end of the data"
		               " (%" PRIu64 " bytes)",
		               name, begin, end, f->info.data_size);
	if (end - begin != t->nbytes)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "tensor '%s' has data_offsets [%" PRIu64 ", %" PRIu64 "] holding %" PRIu64 " bytes,"
		               " but %s of shape %s needs %" PRIu64,
		               name, begin, end, end - begin, row->name, shape_text(dims, ndim, text, sizeof(text)),
		               t->nbytes);
	t->begin = begin;
	t->end = end;
	t->offset = f->info.data_start + begin;
	return TI_OK;
}

/* Sorted by offset, the tensors must tile the data buffer exactly (tensor.rs Metadata::validate). */
static ti_status check_tiling(ti_st_file *f, ti_error *err)
{
	uint64_t expect = 0;
	const ti_st_tensor *last = NULL; /* the tensor that ends at expect */
	for (size_t i = 0; i < f->count; i++) {
		const ti_st_tensor *t = f->by_offset[i];
		if (t->begin > expect)
			return TI_FAIL(err, TI_E_CORRUPT,
			               "bytes [%" PRIu64 ", %" PRIu64 ") of the data belong to no tensor:"
			               " a hole before tensor '%s'",
			               expect, t->begin, t->name);
		if (t->begin < expect)
			return TI_FAIL(err, TI_E_CORRUPT,
			               "tensor '%s' at data_offsets [%" PRIu64 ", %" PRIu64 "] overlaps tensor '%s'"
			               " at [%" PRIu64 ", %" PRIu64 "]",
			               t->name, t->begin, t->end, last->name, last->begin, last->end);
		if (t->end > expect || !last) {
			expect = t->end;
			last = t;
		}
	}
	if (expect != f->info.data_size)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "the last %" PRIu64 " bytes of the data (from %" PRIu64 " on) belong to no tensor",
		               f->info.data_size - expect, expect);
	return TI_OK;
}

static ti_status read_header(ti_st_file *f, char *text, uint64_t n, const ti_st_limits *lim, ti_error *err)
{
	ti_json_scan scan = {.what = "header", .base_offset = 8, .integers_only = true, .values_max = lim->values_max};
	cJSON *root;
	ti_status s = ti_json_parse(text, (size_t)n, &scan, &root, err);
	if (s)
		return s;

	size_t count = 0;
	for (const cJSON *c = root->child; c; c = c->next)
		count += strcmp(c->string, "__metadata__") != 0;
	if (count > lim->tensors_max) {
		cJSON_Delete(root);
		return TI_FAIL(err, TI_E_LIMIT, "header lists %zu tensors, more than the limit of %zu", count,
		               lim->tensors_max);
	}
	f->tensors = ti_arena_calloc(&f->arena, count ? count : 1, sizeof(ti_st_tensor));
	f->by_offset = ti_arena_calloc(&f->arena, count ? count : 1, sizeof(*f->by_offset));
	f->by_name = ti_arena_calloc(&f->arena, count ? count : 1, sizeof(*f->by_name));
	if (!f->tensors || !f->by_offset || !f->by_name) {
		cJSON_Delete(root);
		return no_memory(err);
	}
	s = TI_OK;
	for (const cJSON *c = root->child; c && !s; c = c->next) {
		if (!strcmp(c->string, "__metadata__")) {
			if (f->info.has_metadata)
				s = TI_FAIL(err, TI_E_CORRUPT, "duplicate key '__metadata__' in the header");
			else
				s = read_metadata(f, c, err);
			continue;
		}
		ti_st_tensor *t = &f->tensors[f->count];
		t->index = f->count;
		s = read_tensor(f, c, t, lim, err);
		if (!s) {
			f->by_offset[f->count] = t;
			f->by_name[f->count] = t;
			f->count++;
		}
	}
	cJSON_Delete(root);
	if (s)
		return s;

	qsort(f->by_name, f->count, sizeof(*f->by_name), compare_names);
	for (size_t i = 1; i < f->count; i++)
		if (!strcmp(f->by_name[i - 1]->name, f->by_name[i]->name))
			return TI_FAIL(err, TI_E_CORRUPT, "duplicate tensor name '%s' in the header", f->by_name[i]->name);
	qsort(f->by_offset, f->count, sizeof(*f->by_offset), compare_offsets);
	return check_tiling(f, err);
}

static ti_status open_file(ti_st_file *f, const ti_st_limits *lim, ti_error *err)
{
	const char *path = f->io->name;
	uint64_t size = f->io->size;
	f->info.file_size = size;

	/* u64 little-endian N, then N bytes of header (README "Format"). */
	unsigned char head[8];
	size_t got;
	if (size < 8)
		return TI_FAIL(err, TI_E_CORRUPT, "file of %" PRIu64 " bytes is too short for the 8-byte header size", size);
	ti_status rs = ti_io_read(f->io, 0, head, 8, &got, err);
	if (rs)
		return rs;
	if (got < 8)
		return TI_FAIL(err, TI_E_IO, "'%s' shrank while being read", path);
	uint64_t n = load_u64_le(head);
	if (n > size - 8) {
		TI_FAIL(err, TI_E_CORRUPT, "header size %" PRIu64 " runs past the end of the file (%" PRIu64 " bytes)", n, size);
		ti_error_at(err, NULL, 0);
		return TI_E_CORRUPT;
	}
	if (n > lim->header_max || n > SIZE_MAX - 1) {
		TI_FAIL(err, TI_E_LIMIT, "header of %" PRIu64 " bytes is larger than the limit of %" PRIu64 " bytes", n,
		        lim->header_max);
		ti_error_at(err, NULL, 0);
		return TI_E_LIMIT;
	}
	if (n < 2) {
		TI_FAIL(err, TI_E_CORRUPT, "header of %" PRIu64 " bytes is too short to hold a JSON object", n);
		ti_error_at(err, NULL, 0);
		return TI_E_CORRUPT;
	}
	f->info.header_size = n;
	f->info.data_start = 8 + n;
	f->info.data_size = size - 8 - n;

	/* Everything kept is smaller than the header text many times over: names and
	 * strings are copies, each tensor costs fewer bytes than its ~45 bytes of JSON. */
	ti_arena_init(&f->arena, ((size_t)2 << 20) + (n <= SIZE_MAX / 32 ? (size_t)n * 16 : SIZE_MAX / 2));

	char *text = malloc((size_t)n + 1);
	if (!text)
		return no_memory(err);
	ti_status s;
	if ((s = ti_io_read(f->io, 8, text, (size_t)n, &got, err)))
		;
	else if (got < n)
		s = TI_FAIL(err, TI_E_IO, "'%s' shrank while being read", path);
	else {
		text[n] = '\0';
		s = read_header(f, text, n, lim, err);
	}
	free(text);
	return s;
}

ti_status ti_st_open(const char *path, const ti_st_limits *limits, ti_st_file **out, ti_error *err)
{
	ti_error_clear(err);
	if (!out)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_open needs somewhere to put the handle");
	*out = NULL;
	if (!path)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_open needs a path");
	ti_st_limits lim;
	if (limits)
		lim = *limits;
	else
		ti_st_limits_default(&lim);
	ti_io *io;
	ti_status s = ti_io_open(path, &io, err);
	if (s)
		return s;
	s = ti_st_open_io(io, &lim, out, err);
	ti_io_close(io);
	return s;
}

ti_status ti_st_open_io(ti_io *io, const ti_st_limits *limits, ti_st_file **out, ti_error *err)
{
	ti_error_clear(err);
	*out = NULL;
	ti_st_limits lim;
	if (limits)
		lim = *limits;
	else
		ti_st_limits_default(&lim);
	ti_st_file *f = calloc(1, sizeof(*f));
	if (!f)
		return no_memory(err);
	f->io = ti_io_ref(io);
	ti_status s = open_file(f, &lim, err);
	if (s) {
		ti_st_close(f);
		return s;
	}
	*out = f;
	return TI_OK;
}

void ti_st_close(ti_st_file *file)
{
	if (!file)
		return;
	ti_io_close(file->io);
	ti_arena_release(&file->arena);
	free(file);
}

const ti_st_info *ti_st_file_info(const ti_st_file *file) { return &file->info; }

size_t ti_st_tensor_count(const ti_st_file *file) { return file->count; }

const ti_st_tensor *ti_st_tensor_at(const ti_st_file *file, size_t i)
{
	return i < file->count ? &file->tensors[i] : NULL;
}

const ti_st_tensor *ti_st_tensor_by_offset(const ti_st_file *file, size_t i)
{
	return i < file->count ? file->by_offset[i] : NULL;
}

const ti_st_tensor *ti_st_find(const ti_st_file *file, const char *name)
{
	size_t lo = 0, hi = file->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(file->by_name[mid]->name, name);
		if (c == 0)
			return file->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t ti_st_metadata_count(const ti_st_file *file) { return file->metadata_count; }

const ti_st_pair *ti_st_metadata_at(const ti_st_file *file, size_t i)
{
	return i < file->metadata_count ? &file->metadata[i] : NULL;
}

const char *ti_st_metadata_get(const ti_st_file *file, const char *key)
{
	for (size_t i = 0; i < file->metadata_count; i++)
		if (!strcmp(file->metadata[i].key, key))
			return file->metadata[i].value;
	return NULL;
}

int ti_st_fd(const ti_st_file *file) { return file->io->fd; }

ti_status ti_st_read(const ti_st_file *file, size_t index, uint64_t offset, void *buf, size_t n, ti_error *err)
{
	if (index >= file->count)
		return TI_FAIL(err, TI_E_INVALID, "no tensor %zu: the file has %zu", index, file->count);
	const ti_st_tensor *t = &file->tensors[index];
	if (offset > t->nbytes || n > t->nbytes - offset)
		return TI_FAIL(err, TI_E_INVALID,
		               "reading %zu bytes at %" PRIu64 " runs past the end of tensor '%s' (%" PRIu64 " bytes)", n,
		               offset, t->name, t->nbytes);
	size_t got;
	ti_status rs = ti_io_read(file->io, t->offset + offset, buf, n, &got, err);
	if (rs)
		return rs;
	if (got < n) {
		TI_FAIL(err, TI_E_IO, "the file ended while reading tensor '%s': it shrank after it was opened", t->name);
		ti_error_at(err, NULL, (int64_t)(t->offset + offset + got));
		return TI_E_IO;
	}
	return TI_OK;
}

bool ti_st_sniff(const void *prefix, size_t n, uint64_t file_size)
{
	const unsigned char *p = prefix;
	if (!p || n < 9 || file_size < 10)
		return false;
	uint64_t size = load_u64_le(p);
	if (size < 2 || size > file_size - 8)
		return false;
	for (size_t i = 8; i < n && i < 8 + size; i++) {
		if (p[i] == '{')
			return true;
		if (!ti_json_is_space(p[i]))
			return false;
	}
	return false;
}

/* --- writing ------------------------------------------------------------ */

struct ti_st_writer {
	int fd;
	ti_arena arena;
	ti_st_tensor *plan;  /* data order */
	size_t *slot;        /* slot[spec index] = position in plan */
	size_t count;
	size_t current;      /* the first entry of plan not yet complete */
	uint64_t filled;     /* bytes of plan[current] received */
	uint64_t file_size;
	bool broken;         /* a write failed: the file is unusable */
	size_t buffered;
	unsigned char buffer[WRITE_BUFFER];
};

/* A growing JSON text with a ceiling: the header the reader will accept. */
typedef struct json_text {
	char *p;
	size_t len, cap;
	bool full;  /* passed TI_ST_HEADER_MAX */
	bool nomem;
} json_text;

static void json_raw(json_text *j, const char *s, size_t n)
{
	if (j->full || j->nomem)
		return;
	if (n > TI_ST_HEADER_MAX - j->len) {
		j->full = true;
		return;
	}
	if (j->len + n > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		while (cap < j->len + n)
			cap *= 2;
		char *p = realloc(j->p, cap);
		if (!p) {
			j->nomem = true;
			return;
		}
		j->p = p;
		j->cap = cap;
	}
	memcpy(j->p + j->len, s, n);
	j->len += n;
}

static void json_lit(json_text *j, const char *s) { json_raw(j, s, strlen(s)); }

/* A JSON string escaped exactly as serde_json escapes it (ser.rs ESCAPE table). */
static void json_string(json_text *j, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	json_raw(j, "\"", 1);
	const char *run = s;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		char esc[7];
		size_t n = 0;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (c < 0x20) {
			const char *shortform = c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\n' ? "\\n"
			                      : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
			if (shortform) {
				memcpy(esc, shortform, 2);
				n = 2;
			} else {
				memcpy(esc, "\\u00", 4);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				n = 6;
			}
		} else
			continue;
		json_raw(j, run, (size_t)(p - run));
		json_raw(j, esc, n);
		run = p + 1;
	}
	json_raw(j, run, strlen(run));
	json_raw(j, "\"", 1);
}

static void json_u64(json_text *j, uint64_t v)
{
	char buf[24];
	json_raw(j, buf, (size_t)snprintf(buf, sizeof(buf), "%" PRIu64, v));
}

/* A tensor's sort key in the official order, its dtype rank looked up once. */
typedef struct official_key {
	int rank;
	const ti_st_tensor *tensor;
} official_key;

static int compare_official(const void *a, const void *b)
{
	const official_key *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1; /* largest alignment first */
	return strcmp(x->tensor->name, y->tensor->name); /* names are unique: a total order */
}

/* Reorders plan as tensor.rs prepare() does: dtype rank descending, then name. */
static ti_status sort_official(ti_st_writer *w, ti_error *err)
{
	official_key *keys = calloc(w->count ? w->count : 1, sizeof(*keys));
	ti_st_tensor *sorted = ti_arena_calloc(&w->arena, w->count ? w->count : 1, sizeof(ti_st_tensor));
	if (!keys || !sorted) {
		free(keys);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the safetensors header");
	}
	for (size_t i = 0; i < w->count; i++)
		keys[i] = (official_key){st_dtype_rank(w->plan[i].dtype), &w->plan[i]};
	qsort(keys, w->count, sizeof(*keys), compare_official);
	for (size_t k = 0; k < w->count; k++)
		sorted[k] = *keys[k].tensor;
	free(keys);
	w->plan = sorted;
	return TI_OK;
}

static ti_status write_all(int fd, const void *buf, size_t n, ti_error *err)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = write(fd, (const char *)buf + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return TI_FAIL(err, TI_E_IO, "cannot write the safetensors file: %s",
			               r < 0 ? strerror(errno) : "no progress");
		done += (size_t)r;
	}
	return TI_OK;
}

static ti_status check_specs(const ti_st_spec *specs, size_t count, ti_error *err)
{
	for (size_t i = 0; i < count; i++) {
		const ti_st_spec *s = &specs[i];
		if (!s->name)
			return TI_FAIL(err, TI_E_INVALID, "tensor %zu has no name", i);
		if (!ti_utf8_valid(s->name, strlen(s->name)))
			return TI_FAIL(err, TI_E_INVALID, "tensor name '%s' is not valid UTF-8", s->name);
		if (!strcmp(s->name, "__metadata__"))
			return TI_FAIL(err, TI_E_INVALID, "'__metadata__' is reserved and cannot name a tensor");
		if (!ti_st_dtype_name(s->dtype))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "tensor '%s' has the dtype %s, which safetensors cannot hold",
			               s->name, ti_dtype_name(s->dtype));
		if (s->ndim < 0 || s->ndim > RANK_MAX)
			return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has %d dimensions; safetensors takes 0 to %d",
			               s->name, s->ndim, RANK_MAX);
		if (s->ndim && !s->shape)
			return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has %d dimensions but no shape", s->name, s->ndim);
		for (int d = 0; d < s->ndim; d++) {
			if (s->shape[d] < 0)
				return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has the negative size %" PRId64 " in dimension %d",
				               s->name, s->shape[d], d);
			if ((double)s->shape[d] >= TI_JSON_INT_LIMIT)
				return TI_FAIL(err, TI_E_LIMIT, "tensor '%s' has the size %" PRId64 ", too large for a reader to trust",
				               s->name, s->shape[d]);
		}
	}
	return TI_OK;
}

static ti_status check_metadata(ti_arena *arena, const ti_st_pair *pairs, size_t n, ti_error *err)
{
	const char **keys = ti_arena_calloc(arena, n ? n : 1, sizeof(*keys));
	if (!keys)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the safetensors header");
	for (size_t i = 0; i < n; i++) {
		const ti_st_pair *p = &pairs[i];
		if (!p->key || !p->value)
			return TI_FAIL(err, TI_E_INVALID, "metadata pair %zu has no key or no value", i);
		if (!ti_utf8_valid(p->key, strlen(p->key)) || !ti_utf8_valid(p->value, strlen(p->value)))
			return TI_FAIL(err, TI_E_INVALID, "metadata pair '%s' is not valid UTF-8", p->key);
		keys[i] = p->key;
	}
	const char *dup = ti_json_duplicate_key(keys, n);
	if (dup)
		return TI_FAIL(err, TI_E_INVALID, "duplicate metadata key '%s'", dup);
	return TI_OK;
}

/* Copies the specs into the writer's plan, in data order, with their offsets relative to the data. */
static ti_status plan_tensors(ti_st_writer *w, const ti_st_spec *specs, ti_st_order order, ti_error *err)
{
	ti_st_tensor **by_name = ti_arena_calloc(&w->arena, w->count ? w->count : 1, sizeof(*by_name));
	w->plan = ti_arena_calloc(&w->arena, w->count ? w->count : 1, sizeof(ti_st_tensor));
	w->slot = ti_arena_calloc(&w->arena, w->count ? w->count : 1, sizeof(size_t));
	if (!by_name || !w->plan || !w->slot)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the safetensors header");
	for (size_t i = 0; i < w->count; i++) {
		const ti_st_spec *s = &specs[i];
		ti_st_tensor *t = &w->plan[i];
		int64_t *dims = ti_arena_calloc(&w->arena, s->ndim ? (size_t)s->ndim : 1, sizeof(int64_t));
		t->name = ti_arena_strdup(&w->arena, s->name);
		if (!dims || !t->name)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory planning the safetensors header");
		if (s->ndim)
			memcpy(dims, s->shape, (size_t)s->ndim * sizeof(int64_t));
		t->index = i;
		t->dtype = s->dtype;
		t->dtype_name = ti_st_dtype_name(s->dtype);
		t->ndim = s->ndim;
		t->shape = dims;
		char text[128];
		/* numel * bits stays below 2^63, so the bytes do */
		if (!shape_numel(dims, s->ndim, &t->numel) || (uint64_t)t->numel > INT64_MAX / ti_dtype_bits(s->dtype))
			return TI_FAIL(err, TI_E_LIMIT, "tensor '%s' has the shape %s, too large to count", s->name,
			               shape_text(dims, s->ndim, text, sizeof(text)));
		if (!ti_dtype_nbytes(s->dtype, (uint64_t)t->numel, &t->nbytes)) /* what a reader refuses: MisalignedSlice */
			return TI_FAIL(err, TI_E_INVALID,
			               "tensor '%s' has the shape %s: %" PRId64 " elements of %s (%u bits each) end inside a byte",
			               s->name, shape_text(dims, s->ndim, text, sizeof(text)), t->numel, t->dtype_name,
			               ti_dtype_bits(s->dtype));
		by_name[i] = t;
	}
	qsort(by_name, w->count, sizeof(*by_name), compare_names);
	for (size_t i = 1; i < w->count; i++)
		if (!strcmp(by_name[i - 1]->name, by_name[i]->name))
			return TI_FAIL(err, TI_E_INVALID, "duplicate tensor name '%s'", by_name[i]->name);
	if (order == TI_ST_ORDER_OFFICIAL) {
		ti_status s = sort_official(w, err);
		if (s)
			return s;
	}
	uint64_t offset = 0;
	for (size_t k = 0; k < w->count; k++) {
		ti_st_tensor *t = &w->plan[k];
		/* Offsets must stay below 2^53 for a reader that uses doubles (ours, and any JavaScript one). */
		if ((double)t->nbytes >= TI_JSON_INT_LIMIT - (double)offset)
			return TI_FAIL(err, TI_E_LIMIT, "tensors past '%s' take more than 2^53 bytes", t->name);
		t->begin = offset;
		t->end = offset + t->nbytes;
		offset = t->end;
		w->slot[t->index] = k;
	}
	return TI_OK;
}

static ti_status write_header(ti_st_writer *w, const ti_st_pair *metadata, size_t metadata_count, ti_error *err)
{
	json_text j = {0};
	json_lit(&j, "{");
	if (metadata_count) {
		json_lit(&j, "\"__metadata__\":{");
		for (size_t i = 0; i < metadata_count; i++) {
			if (i)
				json_lit(&j, ",");
			json_string(&j, metadata[i].key);
			json_lit(&j, ":");
			json_string(&j, metadata[i].value);
		}
		json_lit(&j, "}");
	}
	for (size_t k = 0; k < w->count; k++) {
		const ti_st_tensor *t = &w->plan[k];
		if (k || metadata_count)
			json_lit(&j, ",");
		json_string(&j, t->name);
		json_lit(&j, ":{\"dtype\":");
		json_string(&j, t->dtype_name);
		json_lit(&j, ",\"shape\":[");
		for (int d = 0; d < t->ndim; d++) {
			if (d)
				json_lit(&j, ",");
			json_u64(&j, (uint64_t)t->shape[d]);
		}
		json_lit(&j, "],\"data_offsets\":[");
		json_u64(&j, t->begin);
		json_lit(&j, ",");
		json_u64(&j, t->end);
		json_lit(&j, "]}");
	}
	json_lit(&j, "}");
	/* Pad with spaces so that 8 + N, where the data starts, is a multiple of 8 (tensor.rs prepare()). */
	while (!j.full && !j.nomem && j.len % 8)
		json_lit(&j, " ");
	ti_status s = TI_OK;
	if (j.nomem)
		s = TI_FAIL(err, TI_E_NOMEM, "out of memory building the safetensors header");
	else if (j.full)
		s = TI_FAIL(err, TI_E_LIMIT, "the safetensors header would pass %u bytes, the most a reader accepts",
		            TI_ST_HEADER_MAX);
	if (!s) {
		unsigned char size[8];
		store_u64_le(size, j.len);
		uint64_t data = w->count ? w->plan[w->count - 1].end : 0;
		w->file_size = 8 + j.len + data;
		for (size_t k = 0; k < w->count; k++)
			w->plan[k].offset = 8 + j.len + w->plan[k].begin;
		s = write_all(w->fd, size, 8, err);
		if (!s)
			s = write_all(w->fd, j.p, j.len, err);
	}
	free(j.p);
	return s;
}

ti_status ti_st_writer_begin(int fd, const ti_st_spec *tensors, size_t count, const ti_st_pair *metadata,
                             size_t metadata_count, ti_st_order order, ti_st_writer **out, ti_error *err)
{
	ti_error_clear(err);
	if (!out)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_writer_begin needs somewhere to put the writer");
	*out = NULL;
	if (fd < 0 || (count && !tensors) || (metadata_count && !metadata) ||
	    (order != TI_ST_ORDER_AS_GIVEN && order != TI_ST_ORDER_OFFICIAL))
		return TI_FAIL(err, TI_E_INVALID, "ti_st_writer_begin got a bad argument");
	ti_status s = check_specs(tensors, count, err);
	if (s)
		return s;

	/* The arena holds copies of the specs, so its ceiling is their size plus slack. */
	size_t need = ((size_t)1 << 20);
	for (size_t i = 0; i < count; i++) {
		/* name, shape, the plan entry twice (sorting copies it), and alignment slack */
		size_t one = strlen(tensors[i].name) + (size_t)tensors[i].ndim * 8 + 2 * sizeof(ti_st_tensor) + 128;
		if (need > SIZE_MAX / 2 - one)
			return TI_FAIL(err, TI_E_LIMIT, "too many tensors to plan");
		need += one;
	}
	if (metadata_count > SIZE_MAX / 64 || need > SIZE_MAX / 2 - metadata_count * 16)
		return TI_FAIL(err, TI_E_LIMIT, "too many metadata pairs to plan");
	need += metadata_count * 16;

	ti_st_writer *w = malloc(sizeof(*w));
	if (!w)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory starting a safetensors writer");
	memset(w, 0, offsetof(ti_st_writer, buffer));
	w->fd = fd;
	w->count = count;
	ti_arena_init(&w->arena, need);
	s = check_metadata(&w->arena, metadata, metadata_count, err);
	if (!s)
		s = plan_tensors(w, tensors, order, err);
	if (!s)
		s = write_header(w, metadata, metadata_count, err);
	if (s) {
		ti_st_writer_free(w);
		return s;
	}
	*out = w;
	return TI_OK;
}

size_t ti_st_writer_count(const ti_st_writer *w) { return w->count; }

const ti_st_tensor *ti_st_writer_tensor(const ti_st_writer *w, size_t k)
{
	return k < w->count ? &w->plan[k] : NULL;
}

uint64_t ti_st_writer_file_size(const ti_st_writer *w) { return w->file_size; }

static ti_status flush(ti_st_writer *w, ti_error *err)
{
	ti_status s = write_all(w->fd, w->buffer, w->buffered, err);
	w->buffered = 0;
	if (s)
		w->broken = true;
	return s;
}

/* Moves current past the tensors that are complete (empty ones always are). */
static void advance(ti_st_writer *w)
{
	while (w->current < w->count && w->filled == w->plan[w->current].nbytes) {
		w->current++;
		w->filled = 0;
	}
}

/* Whether n more bytes of tensor may come now: the writer's order and the tensor's size. */
static ti_status check_piece(ti_st_writer *w, size_t tensor, size_t n, ti_error *err)
{
	if (w->broken)
		return TI_FAIL(err, TI_E_IO, "the safetensors writer failed earlier");
	if (tensor >= w->count)
		return TI_FAIL(err, TI_E_INVALID, "no tensor %zu: the writer has %zu", tensor, w->count);
	if (n == 0)
		return TI_OK;
	advance(w);
	size_t k = w->slot[tensor];
	const ti_st_tensor *t = &w->plan[k];
	if (k < w->current)
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' is complete: %zu more bytes are too many", t->name, n);
	if (k > w->current) {
		const ti_st_tensor *c = &w->plan[w->current];
		if (w->filled)
			return TI_FAIL(err, TI_E_INVALID,
			               "tensor '%s' got %" PRIu64 " of its %" PRIu64 " bytes before bytes for '%s' arrived",
			               c->name, w->filled, c->nbytes, t->name);
		return TI_FAIL(err, TI_E_INVALID, "bytes for tensor '%s' arrived, but tensor '%s' comes first in the file",
		               t->name, c->name);
	}
	if (n > t->nbytes - w->filled)
		return TI_FAIL(err, TI_E_INVALID,
		               "%zu bytes for tensor '%s' run past its end (%" PRIu64 " of its %" PRIu64 " bytes are left)", n,
		               t->name, t->nbytes - w->filled, t->nbytes);
	return TI_OK;
}

ti_status ti_st_writer_put(ti_st_writer *w, size_t tensor, const void *bytes, size_t n, ti_error *err)
{
	if (!w)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_writer_put needs a writer");
	ti_status s = check_piece(w, tensor, n, err);
	if (s || n == 0)
		return s;
	if (!bytes)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_writer_put got no bytes");
	if (w->buffered + n <= WRITE_BUFFER) {
		memcpy(w->buffer + w->buffered, bytes, n);
		w->buffered += n;
	} else {
		s = flush(w, err);
		if (!s && n < WRITE_BUFFER) {
			memcpy(w->buffer, bytes, n);
			w->buffered = n;
		} else if (!s) {
			s = write_all(w->fd, bytes, n, err);
			if (s)
				w->broken = true;
		}
		if (s)
			return s;
	}
	w->filled += n;
	return TI_OK;
}

ti_status ti_st_writer_copy(ti_st_writer *w, size_t tensor, int in_fd, uint64_t in_offset, uint64_t n,
                            ti_error *err)
{
	if (!w)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_writer_copy needs a writer");
	ti_status s = check_piece(w, tensor, n > SIZE_MAX ? SIZE_MAX : (size_t)n, err);
	if (!s)
		s = flush(w, err);
	if (s)
		return s;
	/* the kernel copies file to file (no trip through our memory); where it cannot, read and write */
	off_t at = (off_t)in_offset;
	uint64_t left = n;
	while (left) {
		size_t piece = left > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)left;
		ssize_t r = copy_file_range(in_fd, &at, w->fd, NULL, piece, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			unsigned char buf[1 << 16];
			size_t m = piece < sizeof(buf) ? piece : sizeof(buf);
			ssize_t got = pread(in_fd, buf, m, at);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				w->broken = true;
				return TI_FAIL(err, TI_E_IO, "cannot read tensor data: %s", got < 0 ? strerror(errno) : "the file shrank");
			}
			if ((s = write_all(w->fd, buf, (size_t)got, err))) {
				w->broken = true;
				return s;
			}
			at += got;
			left -= (uint64_t)got;
			continue;
		}
		if (r <= 0) {
			w->broken = true;
			return TI_FAIL(err, TI_E_IO, "cannot copy tensor data: %s", r < 0 ? strerror(errno) : "the file shrank");
		}
		left -= (uint64_t)r;
	}
	w->filled += n;
	return TI_OK;
}

ti_status ti_st_writer_end(ti_st_writer *w, ti_error *err)
{
	if (!w)
		return TI_FAIL(err, TI_E_INVALID, "ti_st_writer_end needs a writer");
	if (w->broken)
		return TI_FAIL(err, TI_E_IO, "the safetensors writer failed earlier");
	ti_status s = flush(w, err);
	if (s)
		return s;
	advance(w);
	if (w->current < w->count) {
		const ti_st_tensor *t = &w->plan[w->current];
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' got %" PRIu64 " of its %" PRIu64 " bytes", t->name, w->filled,
		               t->nbytes);
	}
	return TI_OK;
}

void ti_st_writer_free(ti_st_writer *w)
{
	if (!w)
		return;
	ti_arena_release(&w->arena);
	free(w);
}
