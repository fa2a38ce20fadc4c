/*
 * inspect_tensors.c - `tinspect inspect` of a safetensors file or a sharded
 * checkpoint's *.index.json: the same table, summary and JSON keys as for a
 * torch zip, from the files' headers alone (a safetensors tensor is
 * contiguous, its own storage, not a parameter, saved from the CPU).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/inspect_tensors.h"
#include "cli/model_cli.h"
#include "cli/output.h"
#include "tinspect/safetensors.h"
#include "tinspect/source.h"

bool cli_is_tensor_file(const char *path)
{
	size_t n = strlen(path);
	if (n >= 11 && !strcmp(path + n - 11, ".index.json"))
		return true;
	unsigned char head[16];
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t got = fread(head, 1, sizeof(head), f);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	return size > 0 && ti_st_sniff(head, got, (uint64_t)size);
}

static bool wanted(const cli_inspect_request *r, const char *name)
{
	if (!r->filter_count)
		return true;
	for (int i = 0; i < r->filter_count; i++)
		if (!fnmatch(r->filters[i], name, 0))
			return true;
	return false;
}

static int64_t nbytes_of(const ti_source_tensor *t)
{
	return t->numel * (int64_t)ti_dtype_size(t->dtype);
}

/* Totals by dtype, in the order dtypes first appear. */
typedef struct by_dtype {
	ti_dtype dtype;
	int64_t tensors, numel, nbytes;
} by_dtype;

typedef struct totals {
	int64_t tensors, numel, nbytes;
	by_dtype dtypes[TI_DT_COUNT];
	int dtype_count;
} totals;

static void count(totals *t, const ti_source_tensor *x)
{
	t->tensors++;
	t->numel += x->numel;
	t->nbytes += nbytes_of(x);
	int k = 0;
	while (k < t->dtype_count && t->dtypes[k].dtype != x->dtype)
		k++;
	if (k == t->dtype_count)
		t->dtypes[t->dtype_count++] = (by_dtype){x->dtype, 0, 0, 0};
	t->dtypes[k].tensors++;
	t->dtypes[k].numel += x->numel;
	t->dtypes[k].nbytes += nbytes_of(x);
}

/* The first depth components of a dotted name. */
static size_t prefix_len(const char *name, int depth)
{
	size_t n = 0;
	for (int d = 0; name[n]; n++)
		if (name[n] == '.' && ++d == depth)
			break;
	return n;
}

static int print_text(const cli_inspect_request *r, const ti_source *src, const totals *t)
{
	char shape[256], bytes[32], a[64], b[64];
	size_t n = ti_source_tensor_count(src);
	cli_out o;
	cli_out_init(&o, stdout);
	cli_table table;
	if (r->depth) {
		cli_table_init(&table, cli_group_columns, 4);
		for (size_t i = 0; i < n; i++) {
			const ti_source_tensor *x = ti_source_tensor_at(src, i);
			size_t len = prefix_len(x->name, r->depth);
			bool seen = false;
			for (size_t k = 0; k < i && !seen; k++) {
				const ti_source_tensor *y = ti_source_tensor_at(src, k);
				seen = wanted(r, y->name) && prefix_len(y->name, r->depth) == len && !strncmp(y->name, x->name, len);
			}
			if (seen || !wanted(r, x->name))
				continue;
			int64_t tensors = 0, numel = 0, nb = 0;
			for (size_t k = i; k < n; k++) {
				const ti_source_tensor *y = ti_source_tensor_at(src, k);
				if (wanted(r, y->name) && prefix_len(y->name, r->depth) == len && !strncmp(y->name, x->name, len)) {
					tensors++;
					numel += y->numel;
					nb += nbytes_of(y);
				}
			}
			char prefix[1024], count[32];
			snprintf(prefix, sizeof(prefix), "%.*s", (int)len, x->name);
			snprintf(count, sizeof(count), "%lld", (long long)tensors);
			const char *row[] = {prefix, count, cli_human(numel, "", a, sizeof(a)), cli_bytes(nb, b, sizeof(b))};
			cli_table_add(&table, row);
		}
	} else {
		cli_table_init(&table, cli_tensor_columns, 5);
		for (size_t i = 0; i < n; i++) {
			const ti_source_tensor *x = ti_source_tensor_at(src, i);
			if (!wanted(r, x->name))
				continue;
			const char *row[] = {x->name, ti_dtype_name(x->dtype), cli_dims(x->shape, x->ndim, shape, sizeof(shape)),
			                     cli_bytes(nbytes_of(x), bytes, sizeof(bytes)), NULL};
			cli_table_add(&table, row);
		}
	}
	bool ok = cli_table_print(&table, &o);
	cli_table_free(&table);
	/* the summary as cmd_inspect.c writes it for a torch zip */
	cli_out_puts(&o, "\nsummary:\n");
	cli_out_printf(&o, "  tensors        %lld\n", (long long)t->tensors);
	cli_out_printf(&o, "  elements       %s\n", cli_quantity(t->numel, false, a, sizeof(a)));
	cli_out_printf(&o, "  bytes          %s\n", cli_quantity(t->nbytes, true, a, sizeof(a)));
	for (int k = 0; k < t->dtype_count; k++)
		cli_out_printf(&o, "%s%-16s %6lld %-7s  %8s elements  %10s\n", k ? "                 " : "  by dtype       ",
		               ti_dtype_name(t->dtypes[k].dtype), (long long)t->dtypes[k].tensors,
		               t->dtypes[k].tensors == 1 ? "tensor" : "tensors", cli_human(t->dtypes[k].numel, "", a, sizeof(a)),
		               cli_bytes(t->dtypes[k].nbytes, b, sizeof(b)));
	cli_out_printf(&o, "  format         %s, %zu file%s\n", ti_source_format_name(ti_source_get_format(src)),
	               ti_source_file_count(src), ti_source_file_count(src) == 1 ? "" : "s");
	for (size_t i = 0; i < ti_source_metadata_count(src); i++) {
		const ti_source_pair *m = ti_source_metadata_at(src, i);
		cli_out_puts(&o, "  metadata       ");
		cli_out_safe(&o, m->key, 0);
		cli_out_puts(&o, " = ");
		cli_out_safe(&o, m->value, 0);
		cli_out_puts(&o, "\n");
	}
	cli_out_close(&o);
	if (!ok) {
		fprintf(stderr, "tinspect: out of memory\n");
		return EXIT_RESOURCE;
	}
	return EXIT_OK;
}

static cJSON *json_ints(const int64_t *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cli_json_dim(ti_dim_int(v[i])));
	return a;
}

static int print_json(const cli_inspect_request *r, const ti_source *src, const totals *t)
{
	cJSON *root = cli_json_root();
	cJSON_AddStringToObject(root, "file", r->file);
	cJSON_AddStringToObject(root, "format", ti_source_format_name(ti_source_get_format(src)));
	cJSON *files = cJSON_AddArrayToObject(root, "files");
	for (size_t i = 0; i < ti_source_file_count(src); i++)
		cJSON_AddItemToArray(files, cJSON_CreateString(ti_source_file_at(src, i)));
	cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
	for (size_t i = 0; i < ti_source_metadata_count(src); i++)
		cJSON_AddStringToObject(meta, ti_source_metadata_at(src, i)->key, ti_source_metadata_at(src, i)->value);
	cJSON *list = cJSON_AddArrayToObject(root, "tensors");
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const ti_source_tensor *x = ti_source_tensor_at(src, i);
		if (!wanted(r, x->name))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", x->name);
		cJSON_AddStringToObject(o, "dtype", ti_dtype_name(x->dtype));
		cJSON_AddItemToObject(o, "shape", json_ints(x->shape, x->ndim));
		cJSON_AddItemToObject(o, "stride", json_ints(x->stride, x->ndim));
		cJSON_AddItemToObject(o, "storage_offset", cli_json_dim(ti_dim_int(x->offset)));
		cJSON_AddBoolToObject(o, "requires_grad", x->requires_grad);
		cJSON_AddBoolToObject(o, "parameter", x->is_parameter);
		cJSON_AddStringToObject(o, "layout", "strided");
		char key[32];
		snprintf(key, sizeof(key), "%zu", x->storage);
		cJSON_AddStringToObject(o, "storage", key);
		cJSON_AddItemToObject(o, "storage_nbytes",
		                      cli_json_dim(ti_dim_int((int64_t)ti_source_storage_at(src, x->storage)->nbytes)));
		cJSON_AddItemToObject(o, "nbytes", cli_json_dim(ti_dim_int(nbytes_of(x))));
		cJSON_AddStringToObject(o, "saved_device", "cpu");
		cJSON_AddItemToObject(o, "numel", cli_json_dim(ti_dim_int(x->numel)));
		cJSON_AddBoolToObject(o, "contiguous", ti_source_tensor_contiguous(x));
		cJSON_AddItemToArray(list, o);
	}
	cJSON_AddArrayToObject(root, "values");
	cJSON *s = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddItemToObject(s, "tensors", cli_json_dim(ti_dim_int(t->tensors)));
	cJSON_AddItemToObject(s, "numel", cli_json_dim(ti_dim_int(t->numel)));
	cJSON_AddItemToObject(s, "nbytes", cli_json_dim(ti_dim_int(t->nbytes)));
	cJSON_AddItemToObject(s, "unique_nbytes", cli_json_dim(ti_dim_int(t->nbytes)));
	cJSON *bd = cJSON_AddObjectToObject(s, "by_dtype");
	for (int k = 0; k < t->dtype_count; k++) {
		cJSON *o = cJSON_AddObjectToObject(bd, ti_dtype_name(t->dtypes[k].dtype));
		cJSON_AddItemToObject(o, "tensors", cli_json_dim(ti_dim_int(t->dtypes[k].tensors)));
		cJSON_AddItemToObject(o, "numel", cli_json_dim(ti_dim_int(t->dtypes[k].numel)));
		cJSON_AddItemToObject(o, "nbytes", cli_json_dim(ti_dim_int(t->dtypes[k].nbytes)));
	}
	return cli_json_print(root);
}

static const char *tensor_name(const void *src, size_t i) { return ti_source_tensor_at(src, i)->name; }

int cli_inspect_tensor_file(const cli_inspect_request *r)
{
	if (r->records)
		return cli_usage_error("inspect: --records lists a zip archive's records; '%s' is not one", r->file);
	ti_error err;
	ti_error_clear(&err);
	ti_source *src;
	if (ti_source_open(r->file, &src, &err))
		return cli_report_open_failure(r->file, &err);
	int refused = cli_check_source_safety(src, r->trust);
	if (refused) {
		ti_source_close(src);
		return refused;
	}
	int unmatched = cli_check_globs("inspect", "--filter", r->file, r->filters, (size_t)r->filter_count, tensor_name, src,
	                                ti_source_tensor_count(src));
	if (unmatched) {
		ti_source_close(src);
		return unmatched;
	}
	totals t;
	memset(&t, 0, sizeof(t));
	for (size_t i = 0; i < ti_source_tensor_count(src); i++)
		if (wanted(r, ti_source_tensor_at(src, i)->name))
			count(&t, ti_source_tensor_at(src, i));
	int rc = EXIT_OK;
	if (r->json)
		rc = print_json(r, src, &t);
	else
		rc = print_text(r, src, &t);
	ti_source_close(src);
	return rc;
}
