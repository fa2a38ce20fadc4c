/*
 * cmd_inspect.c - `tinspect [inspect] FILE`: a checkpoint on the meta device.
 * Prints the tensor table, the other values and a summary, or one JSON
 * document with --json (tinspect(1): JSON OUTPUT, schema 1).
 */
#include <cJSON.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "tinspect/io.h"
#include "tinspect/stats.h"
#include "util/strmap.h"

enum {
	OPT_HELP = 1, OPT_DEVICE, OPT_JSON, OPT_FILTER, OPT_DEPTH, OPT_RECORDS, OPT_TRUST, OPT_RAW, OPT_CHECK_FINITE,
	OPT_KEY, OPT_STRIP
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"device", 0, OPT_VALUE, OPT_DEVICE},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"filter", 0, OPT_VALUE, OPT_FILTER},
	{"key", 0, OPT_VALUE, OPT_KEY},
	{"strip-prefix", 0, OPT_VALUE, OPT_STRIP},
	{"depth", 0, OPT_VALUE, OPT_DEPTH},
	{"records", 0, OPT_FLAG, OPT_RECORDS},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	{"check-finite", 0, OPT_FLAG, OPT_CHECK_FINITE},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

bool cli_inspect_takes(const char *name)
{
	for (const cli_option *o = options; o->name; o++)
		if (!strcmp(o->name, name))
			return true;
	return false;
}

static const char help[] =
	"usage: tinspect [inspect] FILE [options]\n"
	"\n"
	"List every tensor in a PyTorch zip checkpoint as torch.load(FILE,\n"
	"map_location='meta') sees it, reading only the archive directory and\n"
	"data.pkl. The pickle is interpreted, never executed. FILE may also be a\n"
	"safetensors file, a sharded checkpoint's index or a folder holding one:\n"
	"the same table, summary and JSON keys, from their headers.\n"
	"\n"
	"FILE may be a URL: http://, https:// or hf://ORG/REPO[@REVISION]/PATH (the\n"
	"Hub at $HF_ENDPOINT, default https://huggingface.co). Only the bytes needed\n"
	"are fetched, with HTTP range requests; the summary says how many. They are\n"
	"kept in the remote-read cache ('tinspect cache'): a second read of the URL\n"
	"costs one conditional request, the rest comes from disk.\n"
	"\n"
	"options:\n"
	"  --device DEV    meta (default): metadata only; cpu or cuda[:N]: also read every\n"
	"                  tensor's data and add its statistics (finite min, max, mean,\n"
	"                  std; NaN and inf counts, zeros, an XXH64 checksum)\n"
	"  --check-finite  exit 1 when any tensor holds NaN or inf (implies --device cpu)\n"
	"  --json          print one JSON document instead of tables\n"
	"  --filter GLOB   keep tensors and values whose name matches GLOB (repeatable)\n"
	"  --key K         only what is under K ('model', 'state_dict'), named without 'K.'\n"
	"  --strip-prefix P  take P ('module.') off the names that start with it\n"
	"  --depth N       fold names deeper than N components into their prefix, with totals\n"
	"  --records       also list the archive's records with sizes and payload offsets\n"
	"  --raw           print counts and sizes as exact integers, not 4.59 KiB\n"
	"  --trust         list a file whose pickle calls something dangerous (os.system,\n"
	"                  eval...), which is refused otherwise; it is never executed\n"
	CLI_URL_HELP("")
	"  -h, --help      show this help\n"
	"\n"
	"Globals outside torch.load's weights_only allow-list get a warning on\n"
	"stderr; 'tinspect scan' lists them all.\n";

enum { FILTERS_MAX = 64 };

typedef struct inspect {
	const char *file;
	bool json, records;
	int depth; /* 0: no folding */
	const char *filters[FILTERS_MAX];
	int filter_count;
	ti_source *src;
	ti_ckpt *ckpt;            /* a torch zip alone: its header, records and format details; else NULL */
	const ti_entry *entries;  /* every file's, in order */
	size_t entry_count;
	const ti_source_tensor **ties; /* safetensors: tensors named only by a __metadata__ tie */
	size_t tie_count;
	cli_out out; /* all of stdout goes through it */
	/* --device cpu|cuda[:N]: the statistics of each tensor entry, or NULL */
	bool stats, cuda, check_finite;
	int cuda_index;
	const ti_tensor_stats **entry_stats; /* per entry */
	ti_tensor_stats *results;
	size_t stats_count, nonfinite;
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

enum { BLOCK_TYPES_MAX = 48 }; /* ggml has fewer types */

typedef struct totals {
	int64_t tensors, numel, nbytes, unique_nbytes, storages, shared_storages, values;
	dtype_total by_dtype[TI_DT_COUNT];
	/* GGUF quantized tensors, by ggml type: no PyTorch dtype is theirs */
	const char *block_names[BLOCK_TYPES_MAX];
	dtype_total by_block[BLOCK_TYPES_MAX];
	int block_types;
} totals;

/* What the DTYPE column says: the dtype, or a GGUF tensor's ggml block type ("Q4_K"). */
static const char *dtype_label(const ti_tensor *x)
{
	const char *block = ti_tensor_ext_of(x)->block_type;
	return block ? block : ti_dtype_name(x->dtype);
}

/* The totals of a tensor's dtype, or of its ggml block type. */
static dtype_total *total_of(totals *t, const ti_tensor *x)
{
	const char *block = ti_tensor_ext_of(x)->block_type;
	if (!block)
		return &t->by_dtype[x->dtype];
	int i = 0;
	while (i < t->block_types && strcmp(t->block_names[i], block))
		i++;
	if (i == t->block_types && i < BLOCK_TYPES_MAX)
		t->block_names[t->block_types++] = block;
	return i < BLOCK_TYPES_MAX ? &t->by_block[i] : &t->by_dtype[x->dtype];
}

/*
 * The storages counted so far. A checkpoint's own are marked by their
 * position in it, a bit each; any other (a sharded source's files number
 * their storages each from 0, a TorchScript archive's constants have their
 * own) by address, in a table that doubles when half full. A table sized
 * for 20,000 storages up front was half a megabyte touched all over.
 */
typedef struct storage_set {
	const ti_ckpt *ckpt;
	uint64_t *own;            /* a bit per storage of ckpt */
	const ti_storage **slots; /* mask + 1 of them, or none yet */
	size_t mask, used;
	bool failed;              /* out of memory */
} storage_set;

static bool place_storage(const ti_storage **slots, size_t mask, const ti_storage *st)
{
	size_t h = ((uintptr_t)st >> 4) * 0x9e3779b97f4a7c15ull;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		if (slots[i] == st)
			return false;
		if (!slots[i]) {
			slots[i] = st;
			return true;
		}
	}
}

static bool seen_before(storage_set *set, const ti_storage *st)
{
	if (set->ckpt && st->index < ti_ckpt_storage_count(set->ckpt) && ti_ckpt_storage(set->ckpt, st->index) == st) {
		uint64_t bit = (uint64_t)1 << (st->index % 64), *word = &set->own[st->index / 64];
		bool seen = *word & bit;
		*word |= bit;
		return seen;
	}
	if (2 * (set->used + 1) > set->mask + 1) {
		size_t cap = set->slots ? 2 * (set->mask + 1) : 64;
		const ti_storage **bigger = calloc(cap, sizeof(*bigger));
		if (!bigger) {
			set->failed = true;
			return true;
		}
		for (size_t i = 0; set->slots && i <= set->mask; i++)
			if (set->slots[i])
				place_storage(bigger, cap - 1, set->slots[i]);
		free(set->slots);
		set->slots = bigger;
		set->mask = cap - 1;
	}
	if (!place_storage(set->slots, set->mask, st))
		return true;
	set->used++;
	return false;
}

static void count_storage(const ti_storage *st, storage_set *seen, totals *t)
{
	if (!st || seen_before(seen, st))
		return;
	t->unique_nbytes += st->nbytes;
	t->storages++;
	if (st->tensor_count > 1)
		t->shared_storages++;
}

static int compute_totals(const inspect *in, totals *t)
{
	memset(t, 0, sizeof(*t));
	size_t own = in->ckpt ? ti_ckpt_storage_count(in->ckpt) : 0;
	storage_set set = {.ckpt = in->ckpt, .own = calloc(own / 64 + 1, sizeof(uint64_t))}, *seen = &set;
	if (!set.own)
		return -1;
	for (size_t i = 0; i < in->entry_count; i++) {
		const ti_entry *e = &in->entries[i];
		if (!wanted(in, e->name))
			continue;
		if (e->value->kind != TI_TENSOR) {
			t->values++;
			continue;
		}
		const ti_tensor *x = e->value->as.tensor;
		const ti_tensor_ext *xe = ti_tensor_ext_of(x);
		t->tensors++;
		t->numel += x->numel;
		t->nbytes += x->nbytes;
		dtype_total *d = total_of(t, x);
		d->tensors++;
		d->numel += x->numel;
		d->nbytes += x->nbytes;
		count_storage(x->storage, seen, t);
		for (size_t k = 0; k < xe->component_count; k++)
			count_storage(xe->components[k]->storage, seen, t);
		if (xe->quant.scales) {
			count_storage(xe->quant.scales->storage, seen, t);
			count_storage(xe->quant.zero_points->storage, seen, t);
		}
	}
	free(set.own);
	free(set.slots);
	return set.failed ? -1 : 0;
}

/* What a tensor's row says beyond dtype, shape and bytes. */
static void describe(const ti_tensor *x, char *buf, size_t size)
{
	const ti_tensor_ext *xe = ti_tensor_ext_of(x);
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
		for (size_t i = 0; i < xe->component_count; i++)
			ADD("%s=%s%s ", xe->component_names[i], ti_dtype_name(xe->components[i]->dtype),
			    cli_dims(xe->components[i]->shape, xe->components[i]->ndim, dims, sizeof(dims)));
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
	if (xe->quant.scheme != TI_QS_NONE) {
		ADD("%s ", ti_qscheme_name(xe->quant.scheme));
		if (xe->quant.scales) {
			ADD("axis=%" PRId64 " ", xe->quant.axis);
		} else {
			ti_format_float(xe->quant.scale, num, sizeof(num));
			ADD("scale=%s zero_point=%" PRId64 " ", num, xe->quant.zero_point);
		}
	}
	if (xe->subclass)
		ADD("%s ", xe->subclass);
	if (xe->block_type)
		ADD("%.2f bits/weight%s ", xe->bits_per_weight, x->dtype == TI_DT_FLOAT32 ? ", reads as float32" : "");
#undef ADD
	if (n && n <= size)
		buf[n - 1] = '\0';
}

/* The names tied to tensor `name` by safetensors __metadata__ ("tie.NAME": name), one at a time. */
static const char *next_tie(const inspect *in, const char *name, size_t *at)
{
	for (; *at < in->tie_count; ++*at)
		if (!strcmp(in->ties[*at]->tie_of, name))
			return in->ties[(*at)++]->name;
	return NULL;
}

/*
 * A DCP tensor's source tensor, which lists its chunks: a DCP folder makes
 * one storage per tensor, in order, so the storage's index finds it.
 */
static const ti_source_tensor *chunked(const inspect *in, const ti_tensor *x)
{
	if (in->ckpt || !x->storage || ti_source_get_format(in->src) != TI_SOURCE_DCP)
		return NULL;
	const ti_source_tensor *t = ti_source_tensor_at(in->src, x->storage->index);
	return t && t->storage == x->storage->index && t->chunk_count ? t : NULL;
}

/* The name of a chunk's file, as .metadata gives it. */
static const char *chunk_file(const inspect *in, const ti_dcp_chunk *c)
{
	const char *path = ti_source_file_at(in->src, c->file + 1), *slash = path ? strrchr(path, '/') : NULL;
	return slash ? slash + 1 : path ? path : "?";
}

/* Adds where a DCP tensor's chunks lie to a row's notes: "sharded in 3 chunks over 2 files", "in '__0_0.distcp'". */
static void add_chunks(const inspect *in, const ti_tensor *x, char *notes, size_t size)
{
	const ti_source_tensor *t = chunked(in, x);
	size_t n = strlen(notes);
	if (!t || n >= size)
		return;
	size_t files = 0;
	for (size_t i = 0; i < t->chunk_count; i++) {
		size_t k = 0;
		while (k < i && t->chunks[k].file != t->chunks[i].file)
			k++;
		files += k == i;
	}
	if (t->chunk_count == 1)
		snprintf(notes + n, size - n, "%sin '%s'", n ? " " : "", chunk_file(in, &t->chunks[0]));
	else
		snprintf(notes + n, size - n, "%ssharded in %zu chunks over %zu file%s", n ? " " : "", t->chunk_count, files,
		         files == 1 ? "" : "s");
}

/* Adds "tied to 'NAME'" to a row's notes for each name tied to tensor `name`. */
static void add_ties(const inspect *in, const char *name, char *notes, size_t size)
{
	size_t at = 0, n = strlen(notes);
	for (const char *tie; n < size && (tie = next_tie(in, name, &at));)
		n += (size_t)snprintf(notes + n, size - n, "%stied to '%s'", n ? " " : "", tie);
}

/* ---- text ---- */

/* The tensor table's columns: the same words as every other table of tensors. */
static const cli_column cli_tensor_columns[5] = {
	{"NAME", CLI_LEFT, 60}, {"DTYPE", CLI_LEFT, 0}, {"SHAPE", CLI_LEFT, 0}, {"BYTES", CLI_RIGHT, 0}, {"NOTES", CLI_LEFT, 0},
};

/* Column widths for the tensor table: as wide as the widest cell, within the ceilings. */
typedef struct widths {
	int name, dtype, shape, bytes;
} widths;

static widths column_widths(const inspect *in)
{
	widths w = {0, 0, 0, 0};
	char dims[512], num[32];
	for (size_t i = 0; i < in->entry_count; i++) {
		const ti_entry *e = &in->entries[i];
		if (!wanted(in, e->name))
			continue;
		int len = cli_text_width(e->name);
		if (len > w.name)
			w.name = len;
		if (e->value->kind != TI_TENSOR)
			continue;
		const ti_tensor *x = e->value->as.tensor;
		int d = (int)strlen(dtype_label(x));
		int s = (int)strlen(cli_dims(x->shape, x->ndim, dims, sizeof(dims)));
		int b = (int)strlen(cli_bytes(x->nbytes, num, sizeof(num)));
		if (d > w.dtype)
			w.dtype = d;
		if (s > w.shape)
			w.shape = s;
		if (b > w.bytes)
			w.bytes = b;
	}
	w.name = cli_column_width(&cli_tensor_columns[0], w.name);
	w.dtype = cli_column_width(&cli_tensor_columns[1], w.dtype);
	w.shape = cli_column_width(&cli_tensor_columns[2], w.shape);
	w.bytes = cli_column_width(&cli_tensor_columns[3], w.bytes);
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
	size_t n = in->entry_count, count = 0, cap = 0, last = 0;
	group *g = NULL;
	for (size_t i = 0; i < n; i++) {
		const ti_entry *e = &in->entries[i];
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

static const cli_column cli_group_columns[4] = {
	{"PREFIX", CLI_LEFT, 60}, {"TENSORS", CLI_RIGHT, 0}, {"NUMEL", CLI_RIGHT, 0}, {"BYTES", CLI_RIGHT, 0},
};

static int print_folded(inspect *in)
{
	char b0[32], b1[32], b2[32];
	group *g;
	long n = collect_groups(in, &g);
	if (n < 0)
		return -1;
	cli_table t;
	cli_table_init(&t, cli_group_columns, 4);
	for (long i = 0; i < n; i++) {
		snprintf(b0, sizeof(b0), "%" PRId64, g[i].tensors);
		const char *row[] = {g[i].name[0] ? g[i].name : "(root)", b0, cli_human(g[i].numel, "", b1, sizeof(b1)),
		                     cli_bytes(g[i].nbytes, b2, sizeof(b2))};
		cli_table_add(&t, row);
	}
	free_groups(g, (size_t)n);
	bool ok = cli_table_print(&t, &in->out);
	cli_table_free(&t);
	return ok ? 0 : -1;
}

/*
 * What a checkpoint's top-level keys say it is, a row a key: training
 * scripts, Lightning's Trainer.save_checkpoint and torch.save(model) each
 * have their layout. The summary names what it found in that order.
 */
typedef enum key_role { ROLE_WEIGHTS, ROLE_OPTIMIZER, ROLE_SCHEDULER, ROLE_COUNTER, ROLE_LIGHTNING } key_role;

static const struct known_key {
	const char *key;
	key_role role;
} known_keys[] = {
	{"pytorch-lightning_version", ROLE_LIGHTNING},
	{"state_dict", ROLE_WEIGHTS}, {"model", ROLE_WEIGHTS}, {"model_state_dict", ROLE_WEIGHTS},
	{"module", ROLE_WEIGHTS}, {"ema", ROLE_WEIGHTS}, {"net", ROLE_WEIGHTS},
	{"optimizer", ROLE_OPTIMIZER}, {"optimizer_state_dict", ROLE_OPTIMIZER}, {"optimizer_states", ROLE_OPTIMIZER},
	{"lr_schedulers", ROLE_SCHEDULER}, {"lr_scheduler", ROLE_SCHEDULER}, {"scheduler", ROLE_SCHEDULER},
	{"epoch", ROLE_COUNTER}, {"global_step", ROLE_COUNTER}, {"step", ROLE_COUNTER}, {"iteration", ROLE_COUNTER},
};

/* Tensors named under key: "key.*". */
static size_t tensors_under(const inspect *in, const char *key)
{
	size_t n = 0, len = strlen(key);
	for (size_t i = 0; i < in->entry_count; i++)
		if (in->entries[i].value->kind == TI_TENSOR && !strncmp(in->entries[i].name, key, len) &&
		    in->entries[i].name[len] == '.')
			n++;
	return n;
}

/* "holds": a whole module's class, or a training checkpoint's parts; nothing for a plain state dict. */
static void print_contents(inspect *in)
{
	cli_out *o = &in->out;
	const ti_value *root = in->ckpt ? ti_ckpt_root(in->ckpt) : NULL;
	char line[1024] = "";
	size_t at = 0, parts = 0;
	if (root && root->kind == TI_OBJECT && root->as.object->callable->kind == TI_GLOBAL) {
		for (size_t i = 0; i < in->entry_count; i++)
			if (!strcmp(in->entries[i].name, "__class__")) {
				const ti_global *g = root->as.object->callable->as.global;
				cli_out_printf(o, "  holds          a whole module, %s.%s: its state_dict() (loading it needs the class's code)\n",
				               g->module, g->name);
				return;
			}
	}
	if (!root || root->kind != TI_DICT)
		return;
	bool weights = false, lightning = false;
	for (size_t k = 0; k < sizeof(known_keys) / sizeof(known_keys[0]) && at < sizeof(line) - 128; k++) {
		const ti_value *v = ti_dict_get(root, known_keys[k].key);
		if (!v)
			continue;
		const char *key = known_keys[k].key;
		int n = 0;
		switch (known_keys[k].role) {
		case ROLE_LIGHTNING:
			lightning = v->kind == TI_STR;
			if (lightning)
				n = snprintf(line + at, sizeof(line) - at, "a Lightning %.32s checkpoint:", v->as.bytes.data);
			break;
		case ROLE_WEIGHTS:
			if (v->kind == TI_DICT && !weights && tensors_under(in, key)) {
				weights = true;
				size_t count = tensors_under(in, key);
				n = snprintf(line + at, sizeof(line) - at, "%s state dict '%s' (%zu tensor%s)", parts ? "," : "", key,
				             count, count == 1 ? "" : "s");
			}
			break;
		case ROLE_OPTIMIZER:
			if (v->kind == TI_DICT || v->kind == TI_LIST)
				n = snprintf(line + at, sizeof(line) - at, "%s optimizer '%s'", parts ? "," : "", key);
			break;
		case ROLE_SCHEDULER:
			if (v->kind == TI_DICT || v->kind == TI_LIST)
				n = snprintf(line + at, sizeof(line) - at, "%s scheduler '%s'", parts ? "," : "", key);
			break;
		case ROLE_COUNTER:
			if (v->kind == TI_INT)
				n = snprintf(line + at, sizeof(line) - at, "%s %s %" PRId64, parts ? "," : "", key, v->as.integer);
			break;
		}
		if (n > 0 && (size_t)n < sizeof(line) - at) {
			at += (size_t)n;
			parts += known_keys[k].role != ROLE_LIGHTNING;
		}
	}
	/* a training checkpoint has weights and something beside them; a state dict alone says nothing here */
	if ((weights && parts > 1) || lightning)
		cli_out_printf(o, "  holds         %s%s\n", lightning ? " " : "", line);
}

/* The summary's last lines: the container's format and details. */
static void print_format(inspect *in)
{
	cli_out *o = &in->out;
	char fetched[96];
	if (cli_fetched_words(ti_io_remote_counts(), fetched, sizeof(fetched)))
		cli_out_printf(o, "  fetched        %s\n", fetched);
	if (in->ckpt) {
		const ti_ckpt_info *info = ti_ckpt_get_info(in->ckpt);
		cli_out_printf(o, "  format         %s, version %" PRId64 ", byteorder %s, pickle protocol %d, root '%s'\n",
		               info->format, info->version, info->byteorder, info->pickle_protocol, info->root);
		if (info->format_version >= 0 || info->storage_alignment >= 0)
			cli_out_printf(o, "  written by     PyTorch 2.x (format_version %" PRId64 ", storage_alignment %" PRId64 ")\n",
			               info->format_version, info->storage_alignment);
		return;
	}
	size_t files = ti_source_file_count(in->src);
	cli_out_printf(o, "  format         %s, %zu file%s\n", ti_source_format_name(ti_source_get_format(in->src)), files,
	               files == 1 ? "" : "s");
	for (size_t i = 0; i < ti_source_metadata_count(in->src); i++) {
		const ti_source_pair *m = ti_source_metadata_at(in->src, i);
		cli_out_puts(o, "  metadata       ");
		cli_out_safe(o, m->key, 0);
		cli_out_puts(o, " = ");
		cli_out_safe(o, m->value, 0);
		cli_out_puts(o, "\n");
	}
}

static int print_text(inspect *in, const totals *t)
{
	char dims[512], num[32], num2[32], notes[512], repr[256], type[256];
	widths w = column_widths(in);
	cli_out *o = &in->out;

	if (in->depth > 0) {
		if (print_folded(in))
			return -1;
	} else if (t->tensors) {
		const int width[] = {w.name, w.dtype, w.shape, w.bytes, 0};
		for (int c = 0; c < 5; c++) {
			if (c)
				cli_out_put(o, "  ", CLI_GAP);
			cli_out_cell(o, cli_tensor_columns[c].header, width[c], cli_tensor_columns[c].align, c == 4);
		}
		cli_out_put(o, "\n", 1);
		for (size_t i = 0; i < in->entry_count; i++) {
			const ti_entry *e = &in->entries[i];
			if (e->value->kind != TI_TENSOR || !wanted(in, e->name))
				continue;
			const ti_tensor *x = e->value->as.tensor;
			/* written piece by piece: printf costs more than the rest */
			describe(x, notes, sizeof(notes));
			add_ties(in, e->name, notes, sizeof(notes));
			add_chunks(in, x, notes, sizeof(notes));
			cli_out_cell(o, e->name, w.name, CLI_LEFT, false);
			cli_out_put(o, "  ", CLI_GAP);
			cli_out_left(o, dtype_label(x), w.dtype);
			cli_out_put(o, "  ", CLI_GAP);
			cli_out_cell(o, cli_dims(x->shape, x->ndim, dims, sizeof(dims)), w.shape, CLI_LEFT, false);
			cli_out_put(o, "  ", CLI_GAP);
			cli_out_right(o, cli_bytes(x->nbytes, num, sizeof(num)), w.bytes);
			if (notes[0]) {
				cli_out_put(o, "  ", CLI_GAP);
				cli_out_puts(o, notes);
			}
			cli_out_put(o, "\n", 1);
		}
	}
	if (t->values) {
		/* the type column as wide as its widest type, within 40 */
		int type_width = 0;
		for (size_t i = 0; i < in->entry_count; i++) {
			const ti_entry *e = &in->entries[i];
			if (e->value->kind == TI_TENSOR || !wanted(in, e->name))
				continue;
			int tw = cli_text_width(ti_value_type_name(e->value, type, sizeof(type)));
			type_width = tw > type_width ? (tw < 40 ? tw : 40) : type_width;
		}
		cli_out_puts(o, "\nvalues:\n");
		for (size_t i = 0; i < in->entry_count; i++) {
			const ti_entry *e = &in->entries[i];
			if (e->value->kind == TI_TENSOR || !wanted(in, e->name))
				continue;
			cli_out_puts(o, "  ");
			cli_out_cell(o, e->name, w.name, CLI_LEFT, false);
			cli_out_puts(o, "  ");
			cli_out_cell(o, ti_value_type_name(e->value, type, sizeof(type)), type_width, CLI_LEFT, false);
			cli_out_puts(o, "  ");
			cli_out_safe(o, ti_value_repr(e->value, repr, sizeof(repr), 72), 0);
			cli_out_puts(o, "\n");
		}
	}
	cli_out_puts(o, "\nsummary:\n");
	cli_out_printf(o, "  tensors        %s\n", cli_count(t->tensors, num, sizeof(num)));
	cli_out_printf(o, "  elements       %s\n", cli_quantity(t->numel, false, num, sizeof(num)));
	cli_out_printf(o, "  bytes          %s\n", cli_quantity(t->nbytes, true, num, sizeof(num)));
	const char *label = "  by dtype       ";
	for (int d = 0; d < TI_DT_COUNT; d++) {
		const dtype_total *dt = &t->by_dtype[d];
		if (!dt->tensors)
			continue;
		cli_out_printf(o, "%s%-16s %6" PRId64 " %-7s  %8s elements  %10s\n", label, ti_dtype_name((ti_dtype)d), dt->tensors,
		               dt->tensors == 1 ? "tensor" : "tensors",
		               cli_human(dt->numel, "", num, sizeof(num)), cli_bytes(dt->nbytes, num2, sizeof(num2)));
		label = "                 ";
	}
	for (int b = 0; b < t->block_types; b++) {
		const dtype_total *dt = &t->by_block[b];
		cli_out_printf(o, "%s%-16s %6" PRId64 " %-7s  %8s elements  %10s\n", label, t->block_names[b], dt->tensors,
		               dt->tensors == 1 ? "tensor" : "tensors",
		               cli_human(dt->numel, "", num, sizeof(num)), cli_bytes(dt->nbytes, num2, sizeof(num2)));
		label = "                 ";
	}
	cli_out_printf(o, "  unique bytes   %s in %" PRId64 " %s (%" PRId64 " shared)\n", cli_bytes(t->unique_nbytes, num, sizeof(num)),
	               t->storages, t->storages == 1 ? "storage" : "storages", t->shared_storages);
	print_contents(in);
	print_format(in);
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

static const cli_column record_columns[] = {
	{"NAME", CLI_LEFT, 60}, {"BYTES", CLI_RIGHT, 0}, {"OFFSET", CLI_RIGHT, 0}, {"METHOD", CLI_LEFT, 0},
};

static int print_records_text(inspect *in)
{
	char size[32], offset[32];
	cli_table t;
	cli_table_init(&t, record_columns, 4);
	for (size_t i = 0; i < ti_ckpt_record_count(in->ckpt); i++) {
		const ti_record *r = ti_ckpt_record(in->ckpt, i);
		uint64_t off;
		int rc;
		if (!record_offset(in, i, &off, &rc)) {
			cli_table_free(&t);
			return rc;
		}
		snprintf(size, sizeof(size), "%" PRIu64, (uint64_t)r->size); /* offsets and sizes of records: exact */
		snprintf(offset, sizeof(offset), "%" PRIu64, off);
		const char *row[] = {r->name, size, offset, method_name(r->method)};
		cli_table_add(&t, row);
	}
	cli_out_puts(&in->out, "\nrecords:\n");
	bool ok = cli_table_print(&t, &in->out);
	cli_table_free(&t);
	if (!ok) {
		fprintf(stderr, "tinspect: out of memory\n");
		return EXIT_RESOURCE;
	}
	return EXIT_OK;
}

/* ---- JSON ----
 * The document is streamed: a header, then one compact object per tensor,
 * value, record and group, written as they are reached, so memory stays
 * bounded by one row, not the checkpoint. What the document has once (the
 * header's members, the summary) cJSON builds and prints; the rows, which
 * come by the twenty thousand, are written directly in cJSON's compact
 * format, strings escaped as it escapes them (cli_out_json_string): through
 * cJSON they cost more than reading the checkpoint. Integers are written
 * as they are: cJSON prints numbers through double, which would round past 2^53.
 */

static cJSON *json_int(int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cJSON_CreateRaw(buf);
}

static void add_int(cJSON *o, const char *key, int64_t v) { cJSON_AddItemToObject(o, key, json_int(v)); }

/* A row object's members: "key": before each, with a comma before all but the first. */
typedef struct row {
	cli_out *o;
	bool started;
} row;

static row row_open(cli_out *o)
{
	cli_out_put(o, "{", 1);
	return (row){o, false};
}

static void row_close(row *r) { cli_out_put(r->o, "}", 1); }

/*
 * A member's key, "name": with its quotes and colon, and its length: keys are
 * ours, plain ASCII, so they are written as they are, a constant at a time.
 */
#define K(name) "\"" name "\":", sizeof(name) + 2

/*
 * The put_ functions are inlined where they are called, so that each key's
 * length is a constant there and its copy a few moves, not a call: a row of
 * the 20,000-tensor checkpoint's JSON writes fifteen of them.
 */
#define INLINE static inline __attribute__((always_inline))

INLINE void key(row *r, const char *quoted, size_t n)
{
	if (r->started)
		cli_out_put(r->o, ",", 1);
	r->started = true;
	cli_out_put(r->o, quoted, n);
}

/* A key known only when running: a sparse component's name. */
static void key_named(row *r, const char *name)
{
	key(r, "", 0);
	cli_out_json_string(r->o, name);
	cli_out_put(r->o, ":", 1);
}

INLINE void put_str(row *r, const char *k, size_t n, const char *v)
{
	key(r, k, n);
	cli_out_json_string(r->o, v);
}

INLINE void put_int(row *r, const char *k, size_t n, int64_t v)
{
	key(r, k, n);
	cli_out_int(r->o, v);
}

INLINE void put_raw(row *r, const char *k, size_t n, const char *v)
{
	key(r, k, n);
	cli_out_puts(r->o, v);
}

INLINE void put_bool(row *r, const char *k, size_t n, bool v)
{
	key(r, k, n);
	cli_out_put(r->o, v ? "true" : "false", v ? 4 : 5);
}

INLINE void put_null(row *r, const char *k, size_t n)
{
	key(r, k, n);
	cli_out_put(r->o, "null", 4);
}

/* A name of ours (a dtype's, a layout's): plain ASCII, nothing to escape. */
INLINE void put_name(row *r, const char *k, size_t n, const char *v)
{
	key(r, k, n);
	cli_out_put(r->o, "\"", 1);
	cli_out_puts(r->o, v);
	cli_out_put(r->o, "\"", 1);
}

INLINE void put_dims(row *r, const char *k, size_t n, const int64_t *d, int ndim)
{
	key(r, k, n);
	cli_out_dims(r->o, d, ndim); /* "[8, 3, 7, 7]" is JSON already */
}

/* A double as cJSON prints it (%1.15g, or %1.17g when that does not read back). */
static bool put_double(row *r, const char *k, size_t n, double v)
{
	cJSON *number = cJSON_CreateNumber(v);
	char *text = number ? cJSON_PrintUnformatted(number) : NULL;
	cJSON_Delete(number);
	if (!text)
		return false;
	put_raw(r, k, n, text);
	cJSON_free(text);
	return true;
}

/* A statistic: the shortest digits that read back (Python's repr), or null. */
static void put_stat(row *r, const char *k, size_t n, double v, bool valid)
{
	char buf[64];
	if (!valid) {
		put_null(r, k, n);
		return;
	}
	if (!isfinite(v)) { /* a float64 sum or square past 1.8e308: inf, as torch's own; JSON has no inf */
		put_name(r, k, n, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
		return;
	}
	ti_format_float(v, buf, sizeof(buf));
	put_raw(r, k, n, buf);
}

static void put_count(row *r, const char *k, size_t n, uint64_t v, bool valid)
{
	if (valid)
		put_int(r, k, n, (int64_t)v);
	else
		put_null(r, k, n);
}

/* "stats": the same keys for every tensor, null where there is no answer. */
static void json_stats(cli_out *o, row *r, const ti_tensor_stats *s)
{
	char sum[24];
	bool v = s->has_values && s->finite;
	key(r, K("stats"));
	row w = row_open(o);
	if (s->integer && v) {
		put_int(&w, K("min"), s->min_int);
		put_int(&w, K("max"), s->max_int);
	} else {
		put_stat(&w, K("min"), s->min, v);
		put_stat(&w, K("max"), s->max, v);
	}
	put_stat(&w, K("mean"), s->mean, v);
	put_stat(&w, K("std"), s->std, v && s->finite > 1);
	put_count(&w, K("nan"), s->nan, s->has_values);
	put_count(&w, K("posinf"), s->posinf, s->has_values);
	put_count(&w, K("neginf"), s->neginf, s->has_values);
	put_stat(&w, K("zero_fraction"), s->count ? (double)s->zeros / (double)s->count : 0, s->has_values && s->count);
	if (s->skipped) {
		put_null(&w, K("checksum"));
	} else {
		snprintf(sum, sizeof(sum), "%016" PRIx64, s->checksum);
		put_name(&w, K("checksum"), sum);
	}
	if (s->skipped || !s->has_values)
		put_str(&w, K("note"), s->skipped ? s->skipped : "checksum only");
	else
		put_null(&w, K("note"));
	row_close(&w);
}

/* One tensor object; name NULL for the components and quantizer tensors inside another. */
/* A constant piece of a row at p: its bytes are known where it is inlined, so it is a move or two. */
#define AT(p, text) (memcpy((p), (text), sizeof(text) - 1), (p) + sizeof(text) - 1)

INLINE char *bool_at(char *p, bool v) { return v ? AT(p, "true") : AT(p, "false"); }

/*
 * The members every tensor row has, "name" (when it has one) to "shared",
 * written with a cursor into the output buffer after taking room for the
 * most they can be: each member through cli_out, with its own check for
 * room, cost twice as much for the 20,000 rows of a big state_dict. A row
 * too long for the buffer is made in one of its own.
 */
static bool json_tensor_head(cli_out *o, row *r, const char *name, const ti_tensor *x, bool tied)
{
	const char *dtype = dtype_label(x), *layout = ti_layout_name(x->layout);
	const char *key = x->storage ? x->storage->key : NULL;
	const char *device = x->storage ? x->storage->location : x->layout == TI_LAYOUT_STRIDED ? "meta" : "cpu";
	size_t ln = name ? strlen(name) : 0, lk = key ? strlen(key) : 0, ld = strlen(device);
	size_t lt = strlen(dtype), ll = strlen(layout);
	size_t most = 320 + lt + ll + 6 * (ln + lk + ld) + 2 * CLI_DIMS_TEXT_MAX(x->ndim) + 3 * CLI_INT_TEXT_MAX;
	char *start = most <= CLI_OUT_BUFFER / 2 ? cli_out_room(o, most) : NULL, *own = NULL;
	if (!start && !(start = own = malloc(most)))
		return false;
	char *p = start;
	if (name) {
		p = AT(p, "\"name\":");
		p = cli_json_string_at(p, name, ln);
		p = AT(p, ",");
	}
	p = AT(p, "\"dtype\":\"");
	memcpy(p, dtype, lt); /* names of ours: nothing to escape */
	p += lt;
	p = AT(p, "\",\"shape\":");
	p = cli_dims_at(p, x->shape, x->ndim);
	p = AT(p, ",\"stride\":");
	p = x->stride ? cli_dims_at(p, x->stride, x->ndim) : AT(p, "null");
	p = AT(p, ",\"storage_offset\":");
	p = cli_int_at(p, x->storage_offset);
	p = AT(p, ",\"requires_grad\":");
	p = bool_at(p, x->requires_grad);
	p = AT(p, ",\"parameter\":");
	p = bool_at(p, x->is_parameter);
	p = AT(p, ",\"layout\":\"");
	memcpy(p, layout, ll);
	p += ll;
	p = AT(p, "\",\"storage\":");
	p = key ? cli_json_string_at(p, key, lk) : AT(p, "null");
	p = AT(p, ",\"storage_nbytes\":");
	p = key ? cli_int_at(p, x->storage->nbytes) : AT(p, "null");
	p = AT(p, ",\"saved_device\":");
	p = cli_json_string_at(p, device, ld);
	p = AT(p, ",\"nbytes\":");
	p = cli_int_at(p, x->nbytes);
	p = AT(p, ",\"numel\":");
	p = cli_int_at(p, x->numel);
	/* torch refuses is_contiguous() on sparse layouts: null says there is no answer */
	p = AT(p, ",\"contiguous\":");
	p = x->layout == TI_LAYOUT_STRIDED ? bool_at(p, ti_tensor_is_contiguous(x)) : AT(p, "null");
	p = AT(p, ",\"shared\":");
	p = bool_at(p, (x->storage && x->storage->tensor_count > 1) || tied);
	if (own) {
		cli_out_put(o, own, (size_t)(p - own));
		free(own);
	} else {
		cli_out_wrote(o, (size_t)(p - start));
	}
	r->started = true;
	return true;
}

static bool json_tensor(const inspect *in, cli_out *o, const char *name, const ti_tensor *x,
                        const ti_tensor_stats *stats)
{
	size_t at = 0;
	const char *tie = name ? next_tie(in, name, &at) : NULL;
	const ti_tensor_ext *xe = ti_tensor_ext_of(x);
	row r = row_open(o);
	bool ok = json_tensor_head(o, &r, name, x, tie);
	if (tie) { /* safetensors __metadata__ ties: the other names of this tensor's data */
		key(&r, K("ties"));
		cli_out_put(o, "[", 1);
		for (bool first = true; tie; tie = next_tie(in, name, &at), first = false) {
			if (!first)
				cli_out_put(o, ",", 1);
			cli_out_json_string(o, tie);
		}
		cli_out_put(o, "]", 1);
	}
	const ti_source_tensor *sharded = name ? chunked(in, x) : NULL;
	if (sharded) { /* a DCP tensor: where each chunk of it lies */
		key(&r, K("chunks"));
		cli_out_put(o, "[", 1);
		for (size_t i = 0; i < sharded->chunk_count; i++) {
			const ti_dcp_chunk *c = &sharded->chunks[i];
			if (i)
				cli_out_put(o, ",", 1);
			row ch = row_open(o);
			put_dims(&ch, K("offsets"), c->offsets, x->ndim);
			put_dims(&ch, K("sizes"), c->sizes, x->ndim);
			put_str(&ch, K("file"), chunk_file(in, c));
			put_int(&ch, K("offset"), (int64_t)c->offset);
			put_int(&ch, K("length"), (int64_t)c->length);
			row_close(&ch);
		}
		cli_out_put(o, "]", 1);
	}
	if (x->conj)
		put_bool(&r, K("conj"), true);
	if (x->neg)
		put_bool(&r, K("neg"), true);
	if (xe->subclass)
		put_str(&r, K("subclass"), xe->subclass);
	if (xe->ggml_type) { /* a GGUF tensor: its type and place as the file records them */
		put_name(&r, K("ggml_type"), xe->ggml_type);
		put_int(&r, K("data_offset"), xe->data_offset);
	}
	if (xe->block_type) /* quantized blocks: the dtype is the ggml type */
		ok = put_double(&r, K("bits_per_weight"), xe->bits_per_weight) && ok;
	if (xe->quant.scheme != TI_QS_NONE) {
		key(&r, K("quantization"));
		row q = row_open(o);
		put_str(&q, K("scheme"), ti_qscheme_name(xe->quant.scheme));
		if (xe->quant.scales) {
			put_int(&q, K("axis"), xe->quant.axis);
			key(&q, K("scales"));
			ok = json_tensor(in, o, NULL, xe->quant.scales, NULL);
			key(&q, K("zero_points"));
			ok = json_tensor(in, o, NULL, xe->quant.zero_points, NULL) && ok;
		} else {
			ok = put_double(&q, K("scale"), xe->quant.scale);
			put_int(&q, K("zero_point"), xe->quant.zero_point);
		}
		row_close(&q);
	}
	if (xe->component_count) {
		key(&r, K("components"));
		row c = row_open(o);
		for (size_t i = 0; i < xe->component_count; i++) {
			key_named(&c, xe->component_names[i]);
			ok = json_tensor(in, o, NULL, xe->components[i], NULL) && ok;
		}
		row_close(&c);
		if (x->layout == TI_LAYOUT_SPARSE_COO)
			put_bool(&r, K("coalesced"), xe->coalesced);
	}
	if (stats)
		json_stats(o, &r, stats);
	row_close(&r);
	return ok;
}

/* The `"key": value` pair of a one-member object (value consumed), for the header; false when memory ran out. */
static bool emit_member(cli_out *o, const char *lead, const char *key, cJSON *value)
{
	cJSON *obj = cJSON_CreateObject();
	if (!obj || !value) {
		cJSON_Delete(obj);
		cJSON_Delete(value);
		return false;
	}
	cJSON_AddItemToObject(obj, key, value);
	char *text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	if (!text)
		return false;
	size_t n = strlen(text);
	cli_out_puts(o, lead);
	cli_out_put(o, text + 1, n - 2); /* without the braces */
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
	for (int b = 0; b < t->block_types; b++) {
		cJSON *o = cJSON_AddObjectToObject(by, t->block_names[b]);
		add_int(o, "tensors", t->by_block[b].tensors);
		add_int(o, "numel", t->by_block[b].numel);
		add_int(o, "nbytes", t->by_block[b].nbytes);
	}
	return s;
}

/* `,\n  "name": [` ... `\n  ]`: rows, one a line, or `[]` when there are none. */
static void array_open(cli_out *o, const char *name)
{
	cli_out_puts(o, ",\n  ");
	cli_out_json_string(o, name);
	cli_out_puts(o, ": [");
}

static void array_row(cli_out *o, size_t i) { cli_out_puts(o, i ? ",\n    " : "\n    "); }

static void array_close(cli_out *o, size_t rows) { cli_out_puts(o, rows ? "\n  ]" : "]"); }

static int emit_records(inspect *in)
{
	cli_out *o = &in->out;
	size_t n = ti_ckpt_record_count(in->ckpt);
	array_open(o, "records");
	for (size_t i = 0; i < n; i++) {
		const ti_record *r = ti_ckpt_record(in->ckpt, i);
		uint64_t off;
		int rc;
		if (!record_offset(in, i, &off, &rc))
			return rc;
		array_row(o, i);
		row w = row_open(o);
		put_str(&w, K("name"), r->name);
		put_int(&w, K("size"), (int64_t)r->size);
		put_int(&w, K("offset"), (int64_t)off);
		put_str(&w, K("method"), method_name(r->method));
		row_close(&w);
	}
	array_close(o, n);
	return EXIT_OK;
}

static bool emit_groups(inspect *in)
{
	cli_out *o = &in->out;
	group *g;
	long n = collect_groups(in, &g);
	if (n < 0)
		return false;
	array_open(o, "groups");
	for (long i = 0; i < n; i++) {
		array_row(o, (size_t)i);
		row w = row_open(o);
		put_str(&w, K("name"), g[i].name);
		put_int(&w, K("tensors"), g[i].tensors);
		put_int(&w, K("numel"), g[i].numel);
		put_int(&w, K("nbytes"), g[i].nbytes);
		row_close(&w);
	}
	array_close(o, (size_t)n);
	free_groups(g, (size_t)n);
	return true;
}

/* The document's members before the tensors: the file, its format, and what the format records. */
static bool emit_header(inspect *in)
{
	cli_out *o = &in->out;
	cli_out_puts(o, "{\n  \"schema\": " TI_STRINGIFY(CLI_JSON_SCHEMA));
	bool ok = emit_member(o, ",\n  ", "file", cJSON_CreateString(in->file));
	if (in->ckpt) {
		const ti_ckpt_info *info = ti_ckpt_get_info(in->ckpt);
		ok = ok && emit_member(o, ",\n  ", "format", cJSON_CreateString(info->format)) &&
		     emit_member(o, ",\n  ", "version", json_int(info->version)) &&
		     emit_member(o, ",\n  ", "byteorder", cJSON_CreateString(info->byteorder)) &&
		     emit_member(o, ",\n  ", "root", cJSON_CreateString(info->root)) &&
		     emit_member(o, ",\n  ", "pickle_protocol", json_int(info->pickle_protocol)) &&
		     emit_member(o, ",\n  ", "pickle_nbytes", json_int((int64_t)info->pickle_size));
		if (ok && info->format_version >= 0)
			ok = emit_member(o, ",\n  ", "format_version", json_int(info->format_version));
		if (ok && info->storage_alignment >= 0)
			ok = emit_member(o, ",\n  ", "storage_alignment", json_int(info->storage_alignment));
	} else {
		ok = ok && emit_member(o, ",\n  ", "format",
		                       cJSON_CreateString(ti_source_format_name(ti_source_get_format(in->src))));
	}
	cJSON *files = cJSON_CreateArray(), *meta = cJSON_CreateObject();
	for (size_t i = 0; files && i < ti_source_file_count(in->src); i++)
		cJSON_AddItemToArray(files, cJSON_CreateString(ti_source_file_at(in->src, i)));
	for (size_t i = 0; meta && i < ti_source_metadata_count(in->src); i++)
		cJSON_AddStringToObject(meta, ti_source_metadata_at(in->src, i)->key, ti_source_metadata_at(in->src, i)->value);
	ok = ok && emit_member(o, ",\n  ", "files", files) && emit_member(o, ",\n  ", "metadata", meta);
	ti_io_counts c = ti_io_remote_counts();
	if (ok && c.requests)
		ok = emit_member(o, ",\n  ", "fetched", cli_fetched_json(c));
	return ok;
}

/* What --device cpu|cuda read, once: the device, how many tensors, which hold NaN or inf. */
static cJSON *json_stats_summary(const inspect *in)
{
	char where[32] = "cpu";
	if (in->cuda)
		snprintf(where, sizeof(where), "cuda:%d", in->cuda_index);
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "device", where);
	add_int(s, "tensors", (int64_t)in->stats_count);
	cJSON *list = cJSON_AddArrayToObject(s, "nonfinite");
	for (size_t i = 0; list && i < in->entry_count; i++)
		if (in->entry_stats[i] && ti_stats_nonfinite(in->entry_stats[i]))
			cJSON_AddItemToArray(list, cJSON_CreateString(in->entries[i].name));
	return s;
}

/*
 * A non-tensor value as JSON, beside its repr: None, bools, integers, finite
 * floats, str, and tuples, lists and str-keyed dicts of those, up to a depth
 * and a count; anything else (an object, bytes, a NaN) has its repr only.
 */
enum { JSON_VALUE_DEPTH = 16, JSON_VALUE_ITEMS = 4096 };

static bool json_value_ok(const ti_value *v, int depth, size_t *budget)
{
	if (!v || depth > JSON_VALUE_DEPTH || !(*budget)--)
		return false;
	switch (v->kind) {
	case TI_NONE:
	case TI_BOOL:
	case TI_INT:
		return true;
	case TI_FLOAT:
		return v->as.real == v->as.real && v->as.real - v->as.real == 0; /* finite */
	case TI_STR:
		return !memchr(v->as.bytes.data, '\0', v->as.bytes.size);
	case TI_TUPLE:
	case TI_LIST:
		for (uint32_t i = 0; i < v->as.seq.count; i++)
			if (!json_value_ok(v->as.seq.items[i], depth + 1, budget))
				return false;
		return true;
	case TI_DICT:
		if (v->as.dict->attributes)
			return false;
		for (size_t i = 0; i < v->as.dict->count; i++)
			if (v->as.dict->keys[i]->kind != TI_STR || !json_value_ok(v->as.dict->keys[i], depth + 1, budget) ||
			    !json_value_ok(v->as.dict->values[i], depth + 1, budget))
				return false;
		return true;
	default:
		return false;
	}
}

static void json_string_n(cli_out *o, const char *data, size_t size)
{
	char small[256], *t = size < sizeof(small) ? small : malloc(size + 1);
	if (!t) {
		cli_out_puts(o, "null");
		return;
	}
	memcpy(t, data, size);
	t[size] = '\0';
	cli_out_json_string(o, t);
	if (t != small)
		free(t);
}

/* After json_value_ok: the value written as JSON (a float in the fewest digits that read back the same). */
static void json_value_put(cli_out *o, const ti_value *v)
{
	char num[40];
	switch (v->kind) {
	case TI_NONE: cli_out_puts(o, "null"); break;
	case TI_BOOL: cli_out_puts(o, v->as.boolean ? "true" : "false"); break;
	case TI_INT: cli_out_int(o, v->as.integer); break;
	case TI_FLOAT:
		for (int digits = 15; digits <= 17; digits++) {
			snprintf(num, sizeof(num), "%.*g", digits, v->as.real);
			if (strtod(num, NULL) == v->as.real)
				break;
		}
		cli_out_puts(o, num);
		break;
	case TI_STR: json_string_n(o, v->as.bytes.data, v->as.bytes.size); break;
	case TI_TUPLE:
	case TI_LIST:
		cli_out_put(o, "[", 1);
		for (uint32_t i = 0; i < v->as.seq.count; i++) {
			if (i)
				cli_out_put(o, ",", 1);
			json_value_put(o, v->as.seq.items[i]);
		}
		cli_out_put(o, "]", 1);
		break;
	case TI_DICT:
		cli_out_put(o, "{", 1);
		for (size_t i = 0; i < v->as.dict->count; i++) {
			if (i)
				cli_out_put(o, ",", 1);
			json_string_n(o, v->as.dict->keys[i]->as.bytes.data, v->as.dict->keys[i]->as.bytes.size);
			cli_out_put(o, ":", 1);
			json_value_put(o, v->as.dict->values[i]);
		}
		cli_out_put(o, "}", 1);
		break;
	default: cli_out_puts(o, "null"); break;
	}
}

static int print_json(inspect *in, const totals *t)
{
	cli_out *o = &in->out;
	char repr[1024], type[256];
	bool ok = emit_header(in);
	for (int pass = 0; ok && pass < 2; pass++) {
		array_open(o, pass ? "values" : "tensors");
		size_t rows = 0;
		for (size_t i = 0; ok && i < in->entry_count; i++) {
			const ti_entry *e = &in->entries[i];
			if ((e->value->kind == TI_TENSOR) == pass || !wanted(in, e->name))
				continue;
			array_row(o, rows++);
			if (!pass) {
				ok = json_tensor(in, o, e->name, e->value->as.tensor, in->entry_stats ? in->entry_stats[i] : NULL);
			} else {
				row w = row_open(o);
				put_str(&w, K("name"), e->name);
				put_str(&w, K("type"), ti_value_type_name(e->value, type, sizeof(type)));
				put_str(&w, K("repr"), ti_value_repr(e->value, repr, sizeof(repr), 400));
				size_t budget = JSON_VALUE_ITEMS;
				if (json_value_ok(e->value, 0, &budget)) {
					key(&w, K("value"));
					json_value_put(o, e->value);
				}
				row_close(&w);
			}
		}
		array_close(o, rows);
	}
	ok = ok && emit_member(o, ",\n  ", "summary", json_summary(t));
	if (ok && in->entry_stats)
		ok = emit_member(o, ",\n  ", "stats", json_stats_summary(in));
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
	cli_out_puts(o, "\n}\n");
	return EXIT_OK;
}

/* ---- statistics (--device cpu|cuda[:N]) ---- */

static void on_progress(void *user, uint64_t done, uint64_t total)
{
	cli_progress *bar = user;
	bar->total = total;
	cli_progress_add(bar, done - bar->done);
}

/* Reads every wanted tensor entry's data; prints the error and returns an exit code. */
static int compute_stats(inspect *in)
{
	size_t nt = ti_source_tensor_count(in->src), n = 0;
	ti_strmap by_name;
	ti_strmap_init(&by_name);
	size_t *which = malloc((in->entry_count + 1) * sizeof(*which));
	size_t *entry_of = malloc((in->entry_count + 1) * sizeof(*entry_of));
	in->entry_stats = calloc(in->entry_count + 1, sizeof(*in->entry_stats));
	in->results = calloc(in->entry_count + 1, sizeof(*in->results));
	int rc = which && entry_of && in->entry_stats && in->results ? EXIT_OK : EXIT_RESOURCE;
	for (size_t i = 0; i < nt && !rc; i++) {
		void *old;
		if (ti_strmap_add(&by_name, ti_source_tensor_at(in->src, i)->name, (void *)(uintptr_t)(i + 1), &old) < 0)
			rc = EXIT_RESOURCE;
	}
	for (size_t i = 0; i < in->entry_count && !rc; i++) {
		const ti_entry *e = &in->entries[i];
		size_t t = (size_t)(uintptr_t)ti_strmap_get(&by_name, e->name);
		if (e->value->kind != TI_TENSOR || !wanted(in, e->name) || !t)
			continue;
		which[n] = t - 1;
		entry_of[n++] = i;
	}
	ti_strmap_release(&by_name);
	if (rc) {
		fprintf(stderr, "tinspect: out of memory\n");
	} else {
		ti_error err;
		ti_error_clear(&err);
		cli_progress bar;
		cli_progress_begin(&bar, stderr, "inspect", 0, true);
		ti_stats_options o = {.cuda = in->cuda, .cuda_index = in->cuda_index, .progress = on_progress,
		                      .progress_user = &bar};
		ti_status st = ti_stats_run(in->src, which, n, &o, in->results, &err);
		cli_progress_end(&bar);
		if (st) {
			rc = cli_report(in->file, &err);
		} else {
			for (size_t k = 0; k < n; k++) {
				in->entry_stats[entry_of[k]] = &in->results[k];
				in->nonfinite += ti_stats_nonfinite(&in->results[k]);
			}
			in->stats_count = n;
		}
	}
	free(which);
	free(entry_of);
	return rc;
}

/* A statistic for a person: 6 significant digits, an integer tensor's exactly; "-" when there is none. */
static const char *stat_text(const ti_tensor_stats *s, double v, int64_t exact, bool valid, char *buf, size_t size)
{
	if (!valid)
		return "-";
	if (s->integer)
		snprintf(buf, size, "%" PRId64, exact);
	else
		snprintf(buf, size, "%.6g", v);
	return buf;
}

static const char *zeros_text(const ti_tensor_stats *s, char *buf, size_t size)
{
	if (!s->has_values || !s->count)
		return "-";
	double pct = 100.0 * (double)s->zeros / (double)s->count;
	if (s->zeros == 0 || s->zeros == s->count)
		snprintf(buf, size, "%s", s->zeros ? "100%" : "0%");
	else if (pct < 0.1)
		snprintf(buf, size, "<0.1%%");
	else if (pct > 99.9)
		snprintf(buf, size, ">99.9%%");
	else
		snprintf(buf, size, "%.1f%%", pct);
	return buf;
}

static const cli_column stats_columns[] = {
	{"NAME", CLI_LEFT, 60}, {"MIN", CLI_RIGHT, 0},   {"MAX", CLI_RIGHT, 0},   {"MEAN", CLI_RIGHT, 0},
	{"STD", CLI_RIGHT, 0},  {"NAN", CLI_RIGHT, 0},   {"INF", CLI_RIGHT, 0},   {"ZEROS", CLI_RIGHT, 0},
	{"CHECKSUM", CLI_LEFT, 0}, {"NOTE", CLI_LEFT, 0},
};

/* The names of the tensors that hold NaN or inf, quoted: the first five and how many more. */
static void nonfinite_names(const inspect *in, char *buf, size_t size)
{
	size_t len = 0, shown = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < in->entry_count; i++) {
		const ti_tensor_stats *s = in->entry_stats[i];
		if (!s || !ti_stats_nonfinite(s))
			continue;
		if (shown++ == 5)
			break;
		int w = snprintf(buf + len, size - len, "%s'%.100s'", len ? ", " : "", in->entries[i].name);
		len += w > 0 && (size_t)w < size - len ? (size_t)w : 0;
	}
	if (in->nonfinite > 5)
		snprintf(buf + len, size - len, " and %zu more", in->nonfinite - 5);
}

static int print_stats_text(inspect *in)
{
	char lo[32], hi[32], mean[32], std[32], nan[24], inf[24], zeros[16], sum[24], names[1024];
	cli_table t;
	cli_table_init(&t, stats_columns, 10);
	for (size_t i = 0; i < in->entry_count; i++) {
		const ti_tensor_stats *s = in->entry_stats[i];
		if (!s)
			continue;
		bool v = s->has_values && s->finite;
		snprintf(nan, sizeof(nan), "%" PRIu64, s->nan);
		snprintf(inf, sizeof(inf), "%" PRIu64, s->posinf + s->neginf);
		snprintf(sum, sizeof(sum), "%016" PRIx64, s->checksum);
		const char *note = s->skipped ? s->skipped : !s->has_values ? "checksum only" : "";
		const char *row[] = {in->entries[i].name,
		                     stat_text(s, s->min, s->min_int, v, lo, sizeof(lo)),
		                     stat_text(s, s->max, s->max_int, v, hi, sizeof(hi)),
		                     v ? (snprintf(mean, sizeof(mean), "%.6g", s->mean), mean) : "-",
		                     v && s->finite > 1 ? (snprintf(std, sizeof(std), "%.6g", s->std), std) : "-",
		                     s->has_values ? nan : "-",
		                     s->has_values ? inf : "-",
		                     zeros_text(s, zeros, sizeof(zeros)),
		                     s->skipped ? "-" : sum,
		                     note};
		cli_table_add(&t, row);
	}
	char where[32] = "cpu";
	if (in->cuda)
		snprintf(where, sizeof(where), "cuda:%d", in->cuda_index);
	cli_out_printf(&in->out, "\nstatistics (%s):\n", where);
	bool ok = cli_table_print(&t, &in->out);
	cli_table_free(&t);
	if (!ok)
		return -1;
	size_t read = 0;
	for (size_t i = 0; i < in->entry_count; i++)
		read += in->entry_stats[i] && !in->entry_stats[i]->skipped;
	char unread[48] = "";
	if (read < in->stats_count)
		snprintf(unread, sizeof(unread), " (%zu not read)", in->stats_count - read);
	if (!in->nonfinite) {
		cli_out_printf(&in->out, "no NaN or inf in %zu tensor%s%s\n", read, read == 1 ? "" : "s", unread);
		return 0;
	}
	nonfinite_names(in, names, sizeof(names));
	cli_out_printf(&in->out, "%zu tensor%s NaN or inf: %s\n", in->nonfinite, in->nonfinite == 1 ? " holds" : "s hold",
	               names);
	return 0;
}

static const char *entry_name(const void *in, size_t i) { return ((const inspect *)in)->entries[i].name; }

/*
 * --key K, --strip-prefix P: only the entries under "K." named without it, P
 * taken off the names that start with it (as convert and diff take them).
 * EXIT_OK with in->entries pointing at *out (the caller frees it).
 */
static int select_entries(inspect *in, const char *key, const char *strip, ti_entry **out)
{
	size_t klen = key ? strlen(key) : 0, slen = strip ? strlen(strip) : 0, n = 0;
	bool stripped = false;
	ti_entry *sel = calloc(in->entry_count + 1, sizeof(*sel));
	if (!sel) {
		fprintf(stderr, "tinspect: out of memory\n");
		return EXIT_RESOURCE;
	}
	for (size_t i = 0; i < in->entry_count; i++) {
		const char *name = in->entries[i].name;
		if (klen) {
			if (strncmp(name, key, klen) || name[klen] != '.')
				continue;
			name += klen + 1;
		}
		if (slen && !strncmp(name, strip, slen) && name[slen]) {
			name += slen;
			stripped = true;
		}
		sel[n] = in->entries[i];
		sel[n++].name = name;
	}
	*out = sel;
	if (klen && !n)
		return cli_usage_error("inspect: --key %s: nothing in %s is under '%s.'", key, in->file, key);
	if (slen && !stripped)
		return cli_usage_error("inspect: --strip-prefix %s: no name%s starts with it", strip, klen ? " under --key" : "");
	in->entries = sel;
	in->entry_count = n;
	return EXIT_OK;
}

int cmd_inspect(int argc, char **argv)
{
	inspect in = {0};
	bool trust = false, device_given = false;
	const char *key = NULL, *strip = NULL;
	cli_parser p = {argc, 1, argv, options, "inspect", false};
	const char *value;
	int id;
	while ((id = cli_next(&p, &value)) != -1) {
		char *end;
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (in.file && cli_unknown_command(in.file)) /* "tinspect --json run m.json": a typo, not a FILE */
				return EXIT_USAGE;
			if (in.file)
				return cli_usage_error("inspect: one FILE at a time ('%s' and '%s')", in.file, value);
			in.file = value;
			break;
		case OPT_HELP:
			return cli_help(help);
		case OPT_DEVICE: {
			bool meta;
			int rc = cli_parse_device("inspect", value, true, &meta, &in.cuda, &in.cuda_index);
			if (rc)
				return rc;
			in.stats = !meta;
			device_given = true;
			break;
		}
		case OPT_CHECK_FINITE:
			in.check_finite = true;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int rc = cli_url_option("inspect", id, value);
			if (rc)
				return rc;
			break;
		}
		case OPT_JSON:
			in.json = true;
			break;
		case OPT_TRUST:
			trust = true;
			break;
		case OPT_RAW:
			cli_raw_numbers = true;
			break;
		case OPT_RECORDS:
			in.records = true;
			break;
		case OPT_KEY:
			key = value;
			break;
		case OPT_STRIP:
			strip = value;
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
	if (in.check_finite && device_given && !in.stats)
		return cli_usage_error("inspect: --check-finite reads the data; --device meta reads none (give --device cpu "
		                       "or cuda)");
	in.stats |= in.check_finite;
	int checked = cli_check_input(in.file);
	if (checked)
		return checked;
	ti_error err;
	ti_source *src;
	if (ti_source_open(in.file, &src, &err))
		return cli_report_open_failure(in.file, &err);
	in.src = src;
	/* one torch zip: its pickle's header and records too; anything else from the tensors its headers list */
	in.ckpt = ti_source_file_count(src) == 1 ? ti_source_checkpoint(src, 0) : NULL;
	int refused = cli_check_source_safety(src, trust);
	if (!refused && in.records && !in.ckpt)
		refused = cli_usage_error("inspect: --records lists a zip archive's records; '%s' is not one", in.file);
	ti_error_clear(&err);
	if (!refused && !(in.entries = ti_source_entries(src, &in.entry_count, &err)) && err.code)
		refused = cli_report(in.file, &err);
	ti_entry *selected = NULL;
	if (!refused && (key || strip))
		refused = select_entries(&in, key, strip, &selected);
	if (!refused)
		refused = cli_check_globs("inspect", "--filter", in.file, in.filters, (size_t)in.filter_count, entry_name,
		                          &in, in.entry_count);
	if (!refused && !in.ckpt && (in.ties = calloc(ti_source_tensor_count(src) + 1, sizeof(*in.ties)))) {
		for (size_t i = 0; i < ti_source_tensor_count(src); i++)
			if (ti_source_tensor_at(src, i)->tie_of)
				in.ties[in.tie_count++] = ti_source_tensor_at(src, i);
	} else if (!refused && !in.ckpt) {
		fprintf(stderr, "tinspect: out of memory\n");
		refused = EXIT_RESOURCE;
	}
	if (refused) {
		free(in.ties);
		free(selected);
		ti_source_close(src);
		return refused;
	}
	cli_out_init(&in.out, stdout);
	totals t;
	int rc = EXIT_OK;
	if (compute_totals(&in, &t)) {
		fprintf(stderr, "tinspect: out of memory\n");
		rc = EXIT_RESOURCE;
	} else if (in.stats && (rc = compute_stats(&in))) {
		/* reported */
	} else if (in.json) {
		rc = print_json(&in, &t);
	} else {
		if (print_text(&in, &t) || (in.stats && print_stats_text(&in))) {
			fprintf(stderr, "tinspect: out of memory\n");
			rc = EXIT_RESOURCE;
		} else if (in.records) {
			rc = print_records_text(&in);
		}
	}
	if (rc == EXIT_OK && in.check_finite && in.nonfinite)
		rc = EXIT_NEGATIVE;
	cli_out_close(&in.out);
	free(in.entry_stats);
	free(in.results);
	free(in.ties);
	free(selected);
	ti_source_close(src);
	if (rc == EXIT_OK && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "tinspect: cannot write output\n");
		rc = EXIT_RESOURCE;
	}
	return rc;
}
