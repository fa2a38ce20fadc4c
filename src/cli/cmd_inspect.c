/*
 * cmd_inspect.c - `tinspect [inspect] FILE`: a checkpoint on the meta device.
 * Prints the tensor table, the other values and a summary, or one JSON
 * document with --json (keys documented in tinspect(1); added, never renamed).
 */
#include <cJSON.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/inspect_tensors.h"

enum { OPT_HELP = 1, OPT_DEVICE, OPT_JSON, OPT_FILTER, OPT_DEPTH, OPT_RECORDS };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"device", 0, OPT_VALUE, OPT_DEVICE},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"filter", 0, OPT_VALUE, OPT_FILTER},
	{"depth", 0, OPT_VALUE, OPT_DEPTH},
	{"records", 0, OPT_FLAG, OPT_RECORDS},
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect [inspect] FILE [options]\n"
	"\n"
	"List every tensor in a PyTorch zip checkpoint as torch.load(FILE,\n"
	"map_location='meta') sees it, reading only the archive directory and\n"
	"data.pkl. The pickle is interpreted, never executed.\n"
	"\n"
	"options:\n"
	"  --device meta   the device to load onto; inspect reads metadata only (default)\n"
	"  --json          print one JSON document instead of tables\n"
	"  --filter GLOB   keep tensors and values whose name matches GLOB (repeatable)\n"
	"  --depth N       fold names deeper than N components into their prefix, with totals\n"
	"  --records       also list the archive's records with sizes and payload offsets\n"
	"  -h, --help      show this help\n"
	"\n"
	"exit status: 0 success, 2 usage error, 3 unreadable, corrupt or unsupported\n"
	"input, 4 I/O or resource failure.\n";

enum { FILTERS_MAX = 64 };

typedef struct inspect {
	const char *file;
	bool json, records;
	int depth; /* 0: no folding */
	const char *filters[FILTERS_MAX];
	int filter_count;
	ti_ckpt *ckpt;
} inspect;

static bool wanted(const inspect *in, const char *name)
{
	if (!in->filter_count)
		return true;
	for (int i = 0; i < in->filter_count; i++)
		if (!fnmatch(in->filters[i], name, 0))
			return true;
	return false;
}

/* ---- totals ---- */

typedef struct dtype_total {
	int64_t tensors, numel, nbytes;
} dtype_total;

typedef struct totals {
	int64_t tensors, numel, nbytes, unique_nbytes, storages, shared_storages, values;
	dtype_total by_dtype[TI_DT_COUNT];
} totals;

static void count_storage(const ti_storage *st, unsigned char *seen, totals *t)
{
	if (!st || seen[st->index])
		return;
	seen[st->index] = 1;
	t->unique_nbytes += st->nbytes;
	t->storages++;
	if (st->tensor_count > 1)
		t->shared_storages++;
}

static int compute_totals(const inspect *in, totals *t)
{
	memset(t, 0, sizeof(*t));
	size_t ns = ti_ckpt_storage_count(in->ckpt);
	unsigned char *seen = calloc(ns ? ns : 1, 1);
	if (!seen)
		return -1;
	for (size_t i = 0; i < ti_ckpt_entry_count(in->ckpt); i++) {
		const ti_entry *e = ti_ckpt_entry(in->ckpt, i);
		if (!wanted(in, e->name))
			continue;
		if (e->value->kind != TI_TENSOR) {
			t->values++;
			continue;
		}
		const ti_tensor *x = e->value->as.tensor;
		t->tensors++;
		t->numel += x->numel;
		t->nbytes += x->nbytes;
		dtype_total *d = &t->by_dtype[x->dtype];
		d->tensors++;
		d->numel += x->numel;
		d->nbytes += x->nbytes;
		count_storage(x->storage, seen, t);
		for (size_t k = 0; k < x->component_count; k++)
			count_storage(x->components[k]->storage, seen, t);
		if (x->quant.scales) {
			count_storage(x->quant.scales->storage, seen, t);
			count_storage(x->quant.zero_points->storage, seen, t);
		}
	}
	free(seen);
	return 0;
}

/* What a tensor's row says beyond dtype, shape and bytes. */
static void describe(const ti_tensor *x, char *buf, size_t size)
{
	char dims[256], num[64];
	size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__))
	buf[0] = '\0';
	if (x->is_parameter)
		ADD("param ");
	if (x->requires_grad)
		ADD("grad ");
	if (x->layout != TI_LAYOUT_STRIDED) {
		ADD("%s ", ti_layout_name(x->layout));
		for (size_t i = 0; i < x->component_count; i++)
			ADD("%s=%s%s ", x->component_names[i], ti_dtype_name(x->components[i]->dtype),
			    cli_dims(x->components[i]->shape, x->components[i]->ndim, dims, sizeof(dims)));
	}
	if (x->stride && !ti_tensor_is_contiguous(x))
		ADD("stride=%s ", cli_dims(x->stride, x->ndim, dims, sizeof(dims)));
	if (x->storage_offset)
		ADD("offset=%" PRId64 " ", x->storage_offset);
	if (x->storage && x->storage->tensor_count > 1)
		ADD("shared storage '%s' (%zu tensors) ", x->storage->key, x->storage->tensor_count);
	if (!x->storage && x->layout == TI_LAYOUT_STRIDED)
		ADD("meta(no storage) ");
	if (x->storage && strcmp(x->storage->location, "cpu"))
		ADD("saved on %s ", x->storage->location);
	if (x->conj)
		ADD("conj ");
	if (x->neg)
		ADD("neg ");
	if (x->quant.scheme != TI_QS_NONE) {
		ADD("%s ", ti_qscheme_name(x->quant.scheme));
		if (x->quant.scales) {
			ADD("axis=%" PRId64 " ", x->quant.axis);
		} else {
			ti_format_float(x->quant.scale, num, sizeof(num));
			ADD("scale=%s zero_point=%" PRId64 " ", num, x->quant.zero_point);
		}
	}
	if (x->subclass)
		ADD("%s ", x->subclass);
#undef ADD
	if (n && n <= size)
		buf[n - 1] = '\0';
}

/* ---- text ---- */

/* Column widths for the tensor table: as wide as the widest cell, within reason. */
typedef struct widths {
	int name, dtype, shape;
} widths;

static widths column_widths(const inspect *in)
{
	widths w = {6, 5, 5}; /* "(root)", "DTYPE", "SHAPE" */
	char dims[512];
	for (size_t i = 0; i < ti_ckpt_entry_count(in->ckpt); i++) {
		const ti_entry *e = ti_ckpt_entry(in->ckpt, i);
		if (!wanted(in, e->name))
			continue;
		int len = (int)strlen(e->name);
		if (len > w.name)
			w.name = len;
		if (e->value->kind != TI_TENSOR)
			continue;
		const ti_tensor *x = e->value->as.tensor;
		int d = (int)strlen(ti_dtype_name(x->dtype));
		int s = (int)strlen(cli_dims(x->shape, x->ndim, dims, sizeof(dims)));
		if (d > w.dtype)
			w.dtype = d;
		if (s > w.shape)
			w.shape = s;
	}
	if (w.name > 60)
		w.name = 60;
	if (w.shape > 30)
		w.shape = 30;
	return w;
}

/* The first `depth` dot-separated components of name. */
static size_t prefix_len(const char *name, int depth)
{
	const char *p = name;
	for (int d = 0; d < depth; d++) {
		p = strchr(p, '.');
		if (!p)
			return strlen(name);
		if (d + 1 < depth)
			p++;
	}
	return (size_t)(p - name);
}

/* --depth: tensors grouped by their first N name components, in order of first appearance. */
typedef struct group {
	char *name;
	int64_t tensors, numel, nbytes;
} group;

static void free_groups(group *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(g[i].name);
	free(g);
}

/* Returns the number of groups in *out (malloc'd), or -1 when memory runs out. */
static long collect_groups(const inspect *in, group **out)
{
	size_t n = ti_ckpt_entry_count(in->ckpt), count = 0, cap = 0, last = 0;
	group *g = NULL;
	for (size_t i = 0; i < n; i++) {
		const ti_entry *e = ti_ckpt_entry(in->ckpt, i);
		if (e->value->kind != TI_TENSOR || !wanted(in, e->name))
			continue;
		char *prefix = strndup(e->name, prefix_len(e->name, in->depth));
		if (!prefix)
			goto nomem;
		/* State dicts keep a prefix's tensors together: try the last group first. */
		size_t at = last && !strcmp(g[last - 1].name, prefix) ? last : 0;
		for (size_t k = 0; !at && k < count; k++)
			if (!strcmp(g[k].name, prefix))
				at = k + 1;
		if (at) {
			free(prefix);
		} else {
			if (count == cap) {
				cap = cap ? cap * 2 : 64;
				group *bigger = realloc(g, cap * sizeof(*g));
				if (!bigger) {
					free(prefix);
					goto nomem;
				}
				g = bigger;
			}
			g[count] = (group){prefix, 0, 0, 0};
			at = ++count;
		}
		last = at;
		group *gr = &g[at - 1];
		gr->tensors++;
		gr->numel += e->value->as.tensor->numel;
		gr->nbytes += e->value->as.tensor->nbytes;
	}
	*out = g;
	return (long)count;
nomem:
	free_groups(g, count);
	return -1;
}

static int print_folded(const inspect *in)
{
	char b1[32], b2[32];
	group *g;
	long n = collect_groups(in, &g);
	if (n < 0)
		return -1;
	printf("%-40s %8s %16s %12s\n", "NAME", "TENSORS", "ELEMENTS", "BYTES");
	for (long i = 0; i < n; i++) {
		cli_put_safe(stdout, g[i].name[0] ? g[i].name : "(root)", 40);
		printf(" %8" PRId64 " %16s %12s\n", g[i].tensors, cli_count(g[i].numel, b1, sizeof(b1)),
		       cli_bytes(g[i].nbytes, b2, sizeof(b2)));
	}
	free_groups(g, (size_t)n);
	return 0;
}

static int print_text(const inspect *in, const totals *t)
{
	const ti_ckpt_info *info = ti_ckpt_get_info(in->ckpt);
	char dims[512], num[32], num2[32], notes[512], repr[256], type[256];
	widths w = column_widths(in);

	if (in->depth > 0) {
		if (print_folded(in))
			return -1;
	} else if (t->tensors) {
		printf("%-*s  %-*s  %-*s  %10s  %s\n", w.name, "NAME", w.dtype, "DTYPE", w.shape, "SHAPE", "BYTES", "NOTES");
		for (size_t i = 0; i < ti_ckpt_entry_count(in->ckpt); i++) {
			const ti_entry *e = ti_ckpt_entry(in->ckpt, i);
			if (e->value->kind != TI_TENSOR || !wanted(in, e->name))
				continue;
			const ti_tensor *x = e->value->as.tensor;
			cli_put_safe(stdout, e->name[0] ? e->name : "(root)", w.name);
			describe(x, notes, sizeof(notes));
			printf("  %-*s  %-*s  %10s  %s\n", w.dtype, ti_dtype_name(x->dtype), w.shape,
			       cli_dims(x->shape, x->ndim, dims, sizeof(dims)), cli_bytes(x->nbytes, num, sizeof(num)), notes);
		}
	}
	if (t->values) {
		printf("\nvalues:\n");
		for (size_t i = 0; i < ti_ckpt_entry_count(in->ckpt); i++) {
			const ti_entry *e = ti_ckpt_entry(in->ckpt, i);
			if (e->value->kind == TI_TENSOR || !wanted(in, e->name))
				continue;
			printf("  ");
			cli_put_safe(stdout, e->name[0] ? e->name : "(root)", w.name);
			printf("  %-20s  ", ti_value_type_name(e->value, type, sizeof(type)));
			cli_put_safe(stdout, ti_value_repr(e->value, repr, sizeof(repr), 72), 0);
			printf("\n");
		}
	}
	printf("\nsummary:\n");
	printf("  tensors        %s\n", cli_count(t->tensors, num, sizeof(num)));
	printf("  elements       %s\n", cli_count(t->numel, num, sizeof(num)));
	printf("  bytes          %s (%s)\n", cli_bytes(t->nbytes, num, sizeof(num)), cli_count(t->nbytes, num2, sizeof(num2)));
	const char *label = "  by dtype       ";
	for (int d = 0; d < TI_DT_COUNT; d++) {
		const dtype_total *dt = &t->by_dtype[d];
		if (!dt->tensors)
			continue;
		printf("%s%-16s %6" PRId64 " %-7s %16s elements %12s\n", label, ti_dtype_name((ti_dtype)d), dt->tensors,
		       dt->tensors == 1 ? "tensor" : "tensors",
		       cli_count(dt->numel, num, sizeof(num)), cli_bytes(dt->nbytes, num2, sizeof(num2)));
		label = "                 ";
	}
	printf("  unique bytes   %s in %" PRId64 " %s (%" PRId64 " shared)\n", cli_bytes(t->unique_nbytes, num, sizeof(num)),
	       t->storages, t->storages == 1 ? "storage" : "storages", t->shared_storages);
	printf("  format         %s, version %" PRId64 ", byteorder %s, pickle protocol %d, root '%s'\n",
	       info->format, info->version, info->byteorder, info->pickle_protocol, info->root);
	if (info->format_version >= 0 || info->storage_alignment >= 0)
		printf("  written by     PyTorch 2.x (format_version %" PRId64 ", storage_alignment %" PRId64 ")\n",
		       info->format_version, info->storage_alignment);
	return 0;
}

/* A record's payload offset, or a reported error (its exit code in *rc). */
static bool record_offset(inspect *in, size_t i, uint64_t *off, int *rc)
{
	ti_error err;
	ti_error_clear(&err);
	if (!ti_ckpt_record_payload_offset(in->ckpt, i, off, &err))
		return true;
	*rc = cli_report(in->file, &err);
	return false;
}

static const char *method_name(int method)
{
	return method == 0 ? "stored" : method == 8 ? "deflated" : "other";
}

static int print_records_text(inspect *in)
{
	char num[32];
	printf("\nrecords:\n  %-48s %14s %14s %s\n", "NAME", "SIZE", "PAYLOAD AT", "METHOD");
	for (size_t i = 0; i < ti_ckpt_record_count(in->ckpt); i++) {
		const ti_record *r = ti_ckpt_record(in->ckpt, i);
		uint64_t off;
		int rc;
		if (!record_offset(in, i, &off, &rc))
			return rc;
		printf("  ");
		cli_put_safe(stdout, r->name, 48);
		printf(" %14s %14" PRIu64 " %s\n", cli_count((int64_t)r->size, num, sizeof(num)), off,
		       method_name(r->method));
	}
	return EXIT_OK;
}

/* ---- JSON ----
 * The document is streamed: a header, then one compact object per tensor and
 * per value, each built and printed by cJSON and freed at once, so memory
 * stays bounded by one tensor, not the checkpoint. Integers go in as raw
 * text: cJSON prints numbers through double, which would round past 2^53.
 */

static cJSON *json_int(int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cJSON_CreateRaw(buf);
}

static void add_int(cJSON *o, const char *key, int64_t v) { cJSON_AddItemToObject(o, key, json_int(v)); }

static cJSON *json_dims(const int64_t *d, int n)
{
	char buf[TI_MAX_DIMS * 24 + 8];
	return cJSON_CreateRaw(cli_dims(d, n, buf, sizeof(buf))); /* "[8, 3, 7, 7]" is JSON already */
}

static cJSON *json_tensor(const char *name, const ti_tensor *x)
{
	cJSON *o = cJSON_CreateObject();
	if (name)
		cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "dtype", ti_dtype_name(x->dtype));
	cJSON_AddItemToObject(o, "shape", json_dims(x->shape, x->ndim));
	cJSON_AddItemToObject(o, "stride", x->stride ? json_dims(x->stride, x->ndim) : cJSON_CreateNull());
	add_int(o, "storage_offset", x->storage_offset);
	cJSON_AddBoolToObject(o, "requires_grad", x->requires_grad);
	cJSON_AddBoolToObject(o, "parameter", x->is_parameter);
	cJSON_AddStringToObject(o, "layout", ti_layout_name(x->layout));
	if (x->storage) {
		cJSON_AddStringToObject(o, "storage", x->storage->key);
		add_int(o, "storage_nbytes", x->storage->nbytes);
		cJSON_AddStringToObject(o, "saved_device", x->storage->location);
	} else {
		cJSON_AddNullToObject(o, "storage");
		cJSON_AddNullToObject(o, "storage_nbytes");
		cJSON_AddStringToObject(o, "saved_device", x->layout == TI_LAYOUT_STRIDED ? "meta" : "cpu");
	}
	add_int(o, "nbytes", x->nbytes);
	add_int(o, "numel", x->numel);
	/* torch refuses is_contiguous() on sparse layouts: null says there is no answer */
	cJSON_AddItemToObject(o, "contiguous", x->layout == TI_LAYOUT_STRIDED ? cJSON_CreateBool(ti_tensor_is_contiguous(x)) : cJSON_CreateNull());
	cJSON_AddBoolToObject(o, "shared", x->storage && x->storage->tensor_count > 1);
	if (x->conj)
		cJSON_AddTrueToObject(o, "conj");
	if (x->neg)
		cJSON_AddTrueToObject(o, "neg");
	if (x->subclass)
		cJSON_AddStringToObject(o, "subclass", x->subclass);
	if (x->quant.scheme != TI_QS_NONE) {
		cJSON *q = cJSON_AddObjectToObject(o, "quantization");
		cJSON_AddStringToObject(q, "scheme", ti_qscheme_name(x->quant.scheme));
		if (x->quant.scales) {
			add_int(q, "axis", x->quant.axis);
			cJSON_AddItemToObject(q, "scales", json_tensor(NULL, x->quant.scales));
			cJSON_AddItemToObject(q, "zero_points", json_tensor(NULL, x->quant.zero_points));
		} else {
			cJSON_AddNumberToObject(q, "scale", x->quant.scale);
			add_int(q, "zero_point", x->quant.zero_point);
		}
	}
	if (x->component_count) {
		cJSON *c = cJSON_AddObjectToObject(o, "components");
		for (size_t i = 0; i < x->component_count; i++)
			cJSON_AddItemToObject(c, x->component_names[i], json_tensor(NULL, x->components[i]));
		if (x->layout == TI_LAYOUT_SPARSE_COO)
			cJSON_AddBoolToObject(o, "coalesced", x->coalesced);
	}
	return o;
}

/* Prints item (consumed) compactly after `lead`; false when memory ran out. */
static bool emit(const char *lead, cJSON *item)
{
	char *text = item ? cJSON_PrintUnformatted(item) : NULL;
	cJSON_Delete(item);
	if (!text)
		return false;
	fputs(lead, stdout);
	fputs(text, stdout);
	cJSON_free(text);
	return true;
}

/* The `"key": value` pair of a one-member object, for the streamed header. */
static bool emit_member(const char *lead, const char *key, cJSON *value)
{
	cJSON *o = cJSON_CreateObject();
	if (!o || !value) {
		cJSON_Delete(o);
		cJSON_Delete(value);
		return false;
	}
	cJSON_AddItemToObject(o, key, value);
	char *text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		return false;
	size_t n = strlen(text);
	fputs(lead, stdout);
	fwrite(text + 1, 1, n - 2, stdout); /* without the braces */
	cJSON_free(text);
	return true;
}

static cJSON *json_summary(const totals *t)
{
	cJSON *s = cJSON_CreateObject();
	add_int(s, "tensors", t->tensors);
	add_int(s, "numel", t->numel);
	add_int(s, "nbytes", t->nbytes);
	add_int(s, "unique_nbytes", t->unique_nbytes);
	add_int(s, "storages", t->storages);
	add_int(s, "shared_storages", t->shared_storages);
	add_int(s, "values", t->values);
	cJSON *by = cJSON_AddObjectToObject(s, "by_dtype");
	for (int d = 0; d < TI_DT_COUNT; d++) {
		const dtype_total *dt = &t->by_dtype[d];
		if (!dt->tensors)
			continue;
		cJSON *o = cJSON_AddObjectToObject(by, ti_dtype_name((ti_dtype)d));
		add_int(o, "tensors", dt->tensors);
		add_int(o, "numel", dt->numel);
		add_int(o, "nbytes", dt->nbytes);
	}
	return s;
}

static int emit_records(inspect *in)
{
	printf(",\n  \"records\": [");
	for (size_t i = 0; i < ti_ckpt_record_count(in->ckpt); i++) {
		const ti_record *r = ti_ckpt_record(in->ckpt, i);
		uint64_t off;
		int rc;
		if (!record_offset(in, i, &off, &rc))
			return rc;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->name);
		add_int(o, "size", (int64_t)r->size);
		add_int(o, "offset", (int64_t)off);
		cJSON_AddStringToObject(o, "method", method_name(r->method));
		if (!emit(i ? ",\n    " : "\n    ", o))
			return EXIT_RESOURCE;
	}
	printf("\n  ]");
	return EXIT_OK;
}

static bool emit_groups(inspect *in)
{
	group *g;
	long n = collect_groups(in, &g);
	if (n < 0)
		return false;
	printf(",\n  \"groups\": [");
	bool ok = true;
	for (long i = 0; ok && i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", g[i].name);
		add_int(o, "tensors", g[i].tensors);
		add_int(o, "numel", g[i].numel);
		add_int(o, "nbytes", g[i].nbytes);
		ok = emit(i ? ",\n    " : "\n    ", o);
	}
	printf(n ? "\n  ]" : "]");
	free_groups(g, (size_t)n);
	return ok;
}

static int print_json(inspect *in, const totals *t)
{
	const ti_ckpt_info *info = ti_ckpt_get_info(in->ckpt);
	char repr[1024], type[256];
	bool ok = emit_member("{\n  ", "file", cJSON_CreateString(in->file)) &&
	          emit_member(",\n  ", "format", cJSON_CreateString(info->format)) &&
	          emit_member(",\n  ", "version", json_int(info->version)) &&
	          emit_member(",\n  ", "byteorder", cJSON_CreateString(info->byteorder)) &&
	          emit_member(",\n  ", "root", cJSON_CreateString(info->root)) &&
	          emit_member(",\n  ", "pickle_protocol", json_int(info->pickle_protocol)) &&
	          emit_member(",\n  ", "pickle_nbytes", json_int((int64_t)info->pickle_size));
	if (ok && info->format_version >= 0)
		ok = emit_member(",\n  ", "format_version", json_int(info->format_version));
	if (ok && info->storage_alignment >= 0)
		ok = emit_member(",\n  ", "storage_alignment", json_int(info->storage_alignment));
	for (int pass = 0; ok && pass < 2; pass++) {
		printf(pass ? ",\n  \"values\": [" : ",\n  \"tensors\": [");
		const char *lead = "\n    ";
		for (size_t i = 0; ok && i < ti_ckpt_entry_count(in->ckpt); i++) {
			const ti_entry *e = ti_ckpt_entry(in->ckpt, i);
			if ((e->value->kind == TI_TENSOR) == pass || !wanted(in, e->name))
				continue;
			cJSON *o;
			if (!pass) {
				o = json_tensor(e->name, e->value->as.tensor);
			} else {
				o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "name", e->name);
				cJSON_AddStringToObject(o, "type", ti_value_type_name(e->value, type, sizeof(type)));
				cJSON_AddStringToObject(o, "repr", ti_value_repr(e->value, repr, sizeof(repr), 400));
			}
			ok = emit(lead, o);
			lead = ",\n    ";
		}
		printf(lead[0] == ',' ? "\n  ]" : "]");
	}
	ok = ok && emit_member(",\n  ", "summary", json_summary(t));
	if (ok && in->records) {
		int rc = emit_records(in);
		if (rc)
			return rc;
	}
	if (ok && in->depth > 0)
		ok = emit_groups(in);
	if (!ok) {
		fprintf(stderr, "tinspect: out of memory writing JSON\n");
		return EXIT_RESOURCE;
	}
	printf("\n}\n");
	return EXIT_OK;
}

int cmd_inspect(int argc, char **argv)
{
	inspect in = {0};
	cli_parser p = {argc, 1, argv, options, "inspect", false};
	const char *value;
	int id;
	while ((id = cli_next(&p, &value)) != -1) {
		char *end;
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (in.file)
				return cli_usage_error("inspect: one FILE at a time ('%s' and '%s')", in.file, value);
			in.file = value;
			break;
		case OPT_HELP:
			fputs(help, stdout);
			return EXIT_OK;
		case OPT_DEVICE:
			if (strcmp(value, "meta"))
				return cli_usage_error("inspect: --device %s: inspect loads onto the meta device only (use --device meta)", value);
			break;
		case OPT_JSON:
			in.json = true;
			break;
		case OPT_RECORDS:
			in.records = true;
			break;
		case OPT_FILTER:
			if (in.filter_count == FILTERS_MAX)
				return cli_usage_error("inspect: more than %d --filter options", FILTERS_MAX);
			in.filters[in.filter_count++] = value;
			break;
		case OPT_DEPTH: {
			long d = strtol(value, &end, 10);
			if (!*value || *end || d < 1 || d > 1000)
				return cli_usage_error("inspect: --depth wants a whole number from 1 to 1000, not '%s'", value);
			in.depth = (int)d;
			break;
		}
		}
	}
	if (!in.file)
		return cli_usage_error("inspect: no FILE given (usage: tinspect FILE [--json]; see --help)");
	if (cli_is_tensor_file(in.file)) {
		cli_inspect_request r = {in.file, in.json, in.records, in.depth, in.filters, in.filter_count};
		return cli_inspect_tensor_file(&r);
	}
	ti_error err;
	if (ti_ckpt_open(in.file, NULL, &in.ckpt, &err))
		return cli_report(in.file, &err);
	totals t;
	int rc = EXIT_OK;
	if (compute_totals(&in, &t)) {
		fprintf(stderr, "tinspect: out of memory\n");
		rc = EXIT_RESOURCE;
	} else if (in.json) {
		rc = print_json(&in, &t);
	} else {
		if (print_text(&in, &t)) {
			fprintf(stderr, "tinspect: out of memory\n");
			rc = EXIT_RESOURCE;
		} else if (in.records) {
			rc = print_records_text(&in);
		}
	}
	ti_ckpt_close(in.ckpt);
	if (rc == EXIT_OK && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "tinspect: cannot write output\n");
		rc = EXIT_RESOURCE;
	}
	return rc;
}
