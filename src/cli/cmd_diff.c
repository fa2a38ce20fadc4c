/*
 * cmd_diff.c - `tinspect diff A B`: two checkpoints compared by name, in
 * any formats tinspect reads, mixed. For CI: exit 0 the same, 1 different.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli/ci_report.h"
#include "cli/cli.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "tinspect/diff.h"
#include "tinspect/value.h"
#include "util/strmap.h"

enum {
	OPT_HELP = 1, OPT_JSON, OPT_VALUES, OPT_ATOL, OPT_RTOL, OPT_TRUST, OPT_JUNIT, OPT_FORMAT, OPT_KEY, OPT_STRIP,
	OPT_FILTER, OPT_QUIET
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"values", 0, OPT_FLAG, OPT_VALUES},
	{"atol", 0, OPT_VALUE, OPT_ATOL},
	{"rtol", 0, OPT_VALUE, OPT_RTOL},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{"junit", 0, OPT_VALUE, OPT_JUNIT},
	{"format", 0, OPT_VALUE, OPT_FORMAT},
	{"key", 0, OPT_VALUE, OPT_KEY},
	{"strip-prefix", 0, OPT_VALUE, OPT_STRIP},
	{"filter", 0, OPT_VALUE, OPT_FILTER},
	{"quiet", 'q', OPT_FLAG, OPT_QUIET},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect diff A B [options]\n"
	"\n"
	"Compare two checkpoints by tensor name, in any formats tinspect reads\n"
	"(torch zip, safetensors, sharded, folders), mixed: tensors removed (-),\n"
	"added (+), renamed (R: same dtype, shape and bytes under a new name), and\n"
	"changed (~) in shape, dtype or ties; other values (epoch, __metadata__)\n"
	"by their repr. With --values the data is read too, a few MiB at a time,\n"
	"and each tensor whose values differ shows its max |a-b| and\n"
	"max |a-b|/|b|. Exit 0 when nothing differs, 1 when something does.\n"
	"\n"
	"options:\n"
	"  --values           read and compare the data of the tensors in both\n"
	"  --atol X, --rtol X values count as equal when |a-b| <= X + Y*|b|\n"
	"                     (torch.allclose); both 0 by default: exactly equal\n"
	"  --key K            compare the state dict under K ('model', 'ema') of each file\n"
	"                     that has one (default: found as check finds it, when one\n"
	"                     file's names are the other's under a key)\n"
	"  --strip-prefix P   take P ('module.') off the names that start with it\n"
	"  --filter GLOB      compare only the tensors whose name matches (repeatable)\n"
	"  -q, --quiet        no progress bar (drawn with --values on a terminal)\n"
	"  --trust            read a checkpoint whose pickle scan finds dangerous\n"
	"  --json             print one JSON document\n"
	"  --junit FILE       also write a JUnit XML report: a test case per kind of\n"
	"                     difference (names, shapes, dtypes, ties, values, other\n"
	"                     values)\n"
	"  --format text|github\n"
	"                     github: also print GitHub Actions ::error annotations\n"
	CLI_URL_HELP("   ")
	"  -h, --help         show this help\n";

enum { FILTER_MAX = 64 };

static void on_progress(void *user, uint64_t done, uint64_t total)
{
	cli_progress *bar = user;
	bar->total = total;
	cli_progress_add(bar, done - bar->done);
}

/* The names side's tensors take under key (NULL: all) with strip taken off, into names. 0, or -1 out of memory. */
static int names_as(const ti_source *src, const char *key, const char *strip, ti_strmap *names)
{
	size_t klen = key ? strlen(key) : 0, slen = strip ? strlen(strip) : 0;
	for (size_t k = 0; k < ti_source_tensor_count(src); k++) {
		const char *name = ti_source_tensor_at(src, k)->name;
		if (klen && (strncmp(name, key, klen) || name[klen] != '.'))
			continue;
		name += klen ? klen + 1 : 0;
		if (slen && !strncmp(name, strip, slen) && name[slen])
			name += slen;
		if (ti_strmap_put(names, name, (void *)1))
			return -1;
	}
	return 0;
}

/* How many names of src under key, strip taken off, the other side has. */
static size_t in_common(const ti_source *src, const char *key, const char *strip, const ti_strmap *other)
{
	ti_strmap mine;
	ti_strmap_init(&mine);
	size_t n = 0;
	if (!names_as(src, key, strip, &mine))
		for (size_t i = 0; i < mine.capacity; i++)
			n += mine.keys[i] && ti_strmap_get(other, mine.keys[i]);
	ti_strmap_release(&mine);
	return n;
}

static bool holds_key(const ti_source *src, const char *key)
{
	size_t plen = strlen(key);
	for (size_t k = 0; k < ti_source_tensor_count(src); k++) {
		const char *name = ti_source_tensor_at(src, k)->name;
		if (!strncmp(name, key, plen) && name[plen] == '.')
			return true;
	}
	return false;
}

/*
 * Which tensors each side compares: --key K takes the state dict under K of
 * each file that holds one; a side it does not name is taken whole, or, when
 * its names under a key check knows ('model', 'state_dict', 'ema', ...) match
 * the other side's better, as that state dict, said in a note (as check
 * finds a nested state dict). --strip-prefix comes off the names that start
 * with it, --filter keeps the matching ones. EXIT_OK, or the exit status
 * with *why filled.
 */
static int select_state_dicts(ti_source *src[2], const char *files[2], const ti_source_selection *sel,
                              ti_diff_options *o, char prefixes[2][80], char notes[2][320], char *why, size_t cap)
{
	ti_error err;
	ti_error_clear(&err);
	const char *keys[2] = {NULL, NULL};
	bool given[2] = {false, false};
	for (int i = 0; i < 2 && sel->key; i++)
		if (holds_key(src[i], sel->key))
			keys[i] = sel->key, given[i] = true;
	if (sel->key && !keys[0] && !keys[1]) {
		snprintf(why, cap, "--key %s: neither file holds tensors under '%s.'", sel->key, sel->key);
		return cli_usage_error("diff: %s", why);
	}
	const char *strip = sel->strip_prefix;
	/*
	 * The sides --key does not name: the pair of state dicts (each side whole,
	 * or under a key check knows, with a wrapper's prefix or none) whose names
	 * have the most in common, when that beats both sides as they are.
	 */
	const char *cands[2][16];
	int ncand[2] = {0, 0};
	for (int i = 0; i < 2; i++) {
		cands[i][ncand[i]++] = keys[i]; /* as --key left it: NULL, the whole file */
		for (size_t k = 0; !given[i] && ti_state_dict_keys[k] && ncand[i] < 16; k++)
			if (holds_key(src[i], ti_state_dict_keys[k]))
				cands[i][ncand[i]++] = ti_state_dict_keys[k];
	}
	size_t best = 0;
	const char *best_keys[2] = {keys[0], keys[1]};
	/* no other key to try on either side (plain state dicts): nothing to search, each name map built once below */
	for (int x = 0; x < ncand[0] && (ncand[0] > 1 || ncand[1] > 1); x++)
		for (int y = 0; y < ncand[1]; y++)
			for (int w = -1; w < 0 || (!strip && ti_key_wrappers[w].prefix); w++)
				for (int side = 0; side < 2; side++) { /* the wrapper's prefix on A's names, or on B's */
					ti_strmap other;
					ti_strmap_init(&other);
					const char *k[2] = {cands[0][x], cands[1][y]};
					const char *wrap = w < 0 ? strip : ti_key_wrappers[w].prefix;
					if (names_as(src[1 - side], k[1 - side], strip, &other)) {
						ti_strmap_release(&other);
						fprintf(stderr, "tinspect: out of memory\n");
						return EXIT_RESOURCE;
					}
					size_t n = in_common(src[side], k[side], wrap, &other);
					ti_strmap_release(&other);
					if (n > best) {
						best = n;
						best_keys[0] = k[0];
						best_keys[1] = k[1];
					}
				}
	for (int i = 0; i < 2; i++) {
		keys[i] = best_keys[i];
		if (keys[i] && !given[i])
			snprintf(notes[i], 320, "%s's state dict is its '%s' entry (as check finds it; --key to choose)",
			         files[i], keys[i]);
	}
	/* no --strip-prefix: a wrapper's prefix on every name of one side only comes off it, as check takes it off */
	const char *auto_strip[2] = {NULL, NULL};
	for (int w = 0; !strip && ti_key_wrappers[w].prefix; w++) {
		bool all[2] = {true, true};
		for (int i = 0; i < 2; i++) {
			ti_strmap mine;
			ti_strmap_init(&mine);
			size_t n = 0;
			if (!names_as(src[i], keys[i], NULL, &mine))
				for (size_t k = 0; k < mine.capacity && all[i]; k++)
					if (mine.keys[k] && ++n)
						all[i] = !strncmp(mine.keys[k], ti_key_wrappers[w].prefix, strlen(ti_key_wrappers[w].prefix));
			all[i] = all[i] && n;
			ti_strmap_release(&mine);
		}
		for (int i = 0; i < 2; i++)
			if (all[i] && !all[1 - i] && !auto_strip[i]) {
				auto_strip[i] = ti_key_wrappers[w].prefix;
				size_t len = strlen(notes[i]);
				snprintf(notes[i] + len, 320 - len, "%s%s names had the prefix '%s' (%s): taken off",
				         len ? "; " : "", len ? "its" : files[i], ti_key_wrappers[w].prefix, ti_key_wrappers[w].why);
			}
	}
	bool strips[2] = {false, false}; /* --strip-prefix applies where names (under the key) start with it */
	for (int i = 0; i < 2 && strip; i++) {
		ti_strmap mine;
		ti_strmap_init(&mine);
		if (!names_as(src[i], keys[i], NULL, &mine))
			for (size_t k = 0; k < mine.capacity && !strips[i]; k++)
				strips[i] = mine.keys[k] && !strncmp(mine.keys[k], strip, strlen(strip)) && mine.keys[k][strlen(strip)];
		ti_strmap_release(&mine);
	}
	if (strip && !strips[0] && !strips[1]) {
		snprintf(why, cap, "--strip-prefix %s: no name of either file starts with it", strip);
		return cli_usage_error("diff: %s", why);
	}
	for (int i = 0; i < 2; i++) {
		ti_source_selection one = *sel;
		one.key = keys[i];
		one.strip_prefix = strips[i] ? strip : auto_strip[i];
		o->value_prefix[i] = NULL;
		if (keys[i]) {
			snprintf(prefixes[i], 80, "%s.", keys[i]);
			o->value_prefix[i] = prefixes[i];
		}
		if ((one.key || one.strip_prefix || one.filter_count) && ti_source_select(src[i], &one, &err)) {
			snprintf(why, cap, "%s: %s", files[i], err.message);
			return err.code == TI_E_INVALID ? cli_usage_error("diff: %s: %s", files[i], err.message)
			                                : cli_report(files[i], &err);
		}
	}
	return EXIT_OK;
}

static int parse_tolerance(const char *name, const char *text, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (!*text || *end || errno || !isfinite(v) || v < 0)
		return cli_usage_error("diff: --%s '%s' is not a number of 0 or more", name, text);
	*out = v;
	return EXIT_OK;
}

/*
 * Non-finite numbers as strings: JSON has no inf or nan. Finite ones with
 * the shortest digits that read back as the same double (Python's repr):
 * cJSON's own printing stops at 15 digits when they compare close enough.
 */
static cJSON *json_number(double v)
{
	if (isnan(v))
		return cJSON_CreateString("nan");
	if (isinf(v))
		return cJSON_CreateString(v > 0 ? "inf" : "-inf");
	char buf[64];
	ti_format_float(v, buf, sizeof(buf));
	return cJSON_CreateRaw(buf);
}

static cJSON *json_side(ti_dtype dtype, int ndim, const int64_t *shape, const char *tie)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "dtype", ti_dtype_name(dtype));
	cJSON *s = cJSON_AddArrayToObject(o, "shape");
	for (int i = 0; i < ndim; i++)
		cJSON_AddItemToArray(s, cJSON_CreateNumber((double)shape[i]));
	if (tie)
		cJSON_AddStringToObject(o, "tied_to", tie);
	else
		cJSON_AddNullToObject(o, "tied_to");
	return o;
}

/* The table of what a bit is called, in the order lines and JSON list them. */
static const struct {
	unsigned bit;
	const char *name;
} change_names[] = {
	{TI_DIFF_ADDED, "added"},     {TI_DIFF_REMOVED, "removed"}, {TI_DIFF_RENAMED, "renamed"},
	{TI_DIFF_SHAPE, "shape"},     {TI_DIFF_DTYPE, "dtype"},     {TI_DIFF_TIES, "ties"},
	{TI_DIFF_VALUES, "values"},
};

static int print_json(const char *a, const char *b, const ti_diff_options *o, const ti_diff_report *r,
                      const char *const notes[2])
{
	cJSON *root = cli_json_root();
	cJSON_AddStringToObject(root, "a", a);
	cJSON_AddStringToObject(root, "b", b);
	cJSON *nl = cJSON_AddArrayToObject(root, "notes"); /* where each side's state dict was found */
	for (int i = 0; i < 2; i++)
		if (*notes[i])
			cJSON_AddItemToArray(nl, cJSON_CreateString(notes[i]));
	cJSON_AddBoolToObject(root, "same", r->same);
	cJSON_AddBoolToObject(root, "values_read", o->values);
	cJSON_AddNumberToObject(root, "atol", o->atol);
	cJSON_AddNumberToObject(root, "rtol", o->rtol);
	cJSON *sum = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddNumberToObject(sum, "compared", (double)r->common);
	cJSON_AddNumberToObject(sum, "added", (double)r->added);
	cJSON_AddNumberToObject(sum, "removed", (double)r->removed);
	cJSON_AddNumberToObject(sum, "renamed", (double)r->renamed);
	cJSON_AddNumberToObject(sum, "shape", (double)r->shape);
	cJSON_AddNumberToObject(sum, "dtype", (double)r->dtype);
	cJSON_AddNumberToObject(sum, "ties", (double)r->ties);
	cJSON_AddNumberToObject(sum, "values", (double)r->changed_values);
	cJSON_AddNumberToObject(sum, "not_bit_identical", (double)r->bit_different);
	cJSON_AddNumberToObject(sum, "other_values", (double)r->value_count);
	cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
	for (size_t i = 0; i < r->tensor_count; i++) {
		const ti_diff_tensor *e = &r->tensors[i];
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", e->name);
		cJSON *ch = cJSON_AddArrayToObject(t, "changes");
		for (size_t k = 0; k < sizeof(change_names) / sizeof(change_names[0]); k++)
			if (e->changes & change_names[k].bit)
				cJSON_AddItemToArray(ch, cJSON_CreateString(change_names[k].name));
		if (e->renamed_to)
			cJSON_AddStringToObject(t, "renamed_to", e->renamed_to);
		if (e->in_a)
			cJSON_AddItemToObject(t, "a", json_side(e->dtype_a, e->ndim_a, e->shape_a, e->tie_a));
		if (e->in_b)
			cJSON_AddItemToObject(t, "b", json_side(e->dtype_b, e->ndim_b, e->shape_b, e->tie_b));
		if (e->compared) {
			cJSON *v = cJSON_AddObjectToObject(t, "values");
			cJSON_AddBoolToObject(v, "bit_identical", e->bit_identical);
			cJSON_AddItemToObject(v, "max_abs", e->has_max ? json_number(e->max_abs) : cJSON_CreateNull());
			cJSON_AddItemToObject(v, "max_rel", e->has_max ? json_number(e->max_rel) : cJSON_CreateNull());
			cJSON_AddNumberToObject(v, "not_close", (double)e->not_close);
			cJSON_AddNumberToObject(v, "numel", (double)e->numel);
		} else if (e->not_compared) {
			cJSON_AddStringToObject(t, "not_compared", e->not_compared);
		}
		cJSON_AddItemToArray(tensors, t);
	}
	cJSON *values = cJSON_AddArrayToObject(root, "other_values");
	for (size_t i = 0; i < r->value_count; i++) {
		cJSON *v = cJSON_CreateObject();
		cJSON_AddStringToObject(v, "name", r->values[i].name);
		cJSON_AddItemToObject(v, "a", r->values[i].a ? cJSON_CreateString(r->values[i].a) : cJSON_CreateNull());
		cJSON_AddItemToObject(v, "b", r->values[i].b ? cJSON_CreateString(r->values[i].b) : cJSON_CreateNull());
		cJSON_AddItemToArray(values, v);
	}
	return cli_json_print(root);
}

static const char *number(double v, char *buf, size_t size)
{
	snprintf(buf, size, "%.6g", v);
	return buf;
}

static void put_tensor(cli_out *o, char mark, const char *name, ti_dtype dtype, int ndim, const int64_t *shape)
{
	char dims[256];
	cli_out_printf(o, "%c ", mark);
	cli_out_safe(o, name, 0);
	cli_out_printf(o, "  %s %s\n", ti_dtype_name(dtype), cli_dims(shape, ndim, dims, sizeof(dims)));
}

static void put_change(cli_out *o, const char *name, const char *what)
{
	cli_out_puts(o, "~ ");
	cli_out_safe(o, name, 0);
	cli_out_puts(o, ": ");
	cli_out_safe(o, what, 0);
	cli_out_puts(o, "\n");
}

static const char *tie_text(const char *tie, char *buf, size_t size)
{
	if (!tie)
		return "not tied";
	snprintf(buf, size, "tied to %s", tie);
	return buf;
}

static void print_text(const char *a, const char *b, const ti_diff_options *opt, const ti_diff_report *r)
{
	cli_out o;
	cli_out_init(&o, stdout);
	char line[1024], x[256], y[256], n1[64], n2[64];
	for (size_t i = 0; i < r->tensor_count; i++) {
		const ti_diff_tensor *e = &r->tensors[i];
		if (e->changes & TI_DIFF_REMOVED)
			put_tensor(&o, '-', e->name, e->dtype_a, e->ndim_a, e->shape_a);
		if (e->changes & TI_DIFF_ADDED)
			put_tensor(&o, '+', e->name, e->dtype_b, e->ndim_b, e->shape_b);
		if (e->changes & TI_DIFF_RENAMED) {
			cli_out_puts(&o, "R ");
			cli_out_safe(&o, e->name, 0);
			cli_out_puts(&o, " -> ");
			cli_out_safe(&o, e->renamed_to, 0);
			cli_out_puts(&o, "\n");
		}
		if (e->changes & TI_DIFF_SHAPE) {
			snprintf(line, sizeof(line), "shape %s -> %s", cli_dims(e->shape_a, e->ndim_a, x, sizeof(x)),
			         cli_dims(e->shape_b, e->ndim_b, y, sizeof(y)));
			put_change(&o, e->name, line);
		}
		if (e->changes & TI_DIFF_DTYPE) {
			snprintf(line, sizeof(line), "dtype %s -> %s", ti_dtype_name(e->dtype_a), ti_dtype_name(e->dtype_b));
			put_change(&o, e->name, line);
		}
		if (e->changes & TI_DIFF_TIES) {
			snprintf(line, sizeof(line), "%s in A, %s in B", tie_text(e->tie_a, x, sizeof(x)),
			         tie_text(e->tie_b, y, sizeof(y)));
			put_change(&o, e->name, line);
		}
		if ((e->changes & TI_DIFF_VALUES) && e->has_max) {
			snprintf(line, sizeof(line), "values differ: max abs %s, max rel %s, %s of %s elements not close",
			         number(e->max_abs, x, sizeof(x)), number(e->max_rel, y, sizeof(y)),
			         cli_count((int64_t)e->not_close, n1, sizeof(n1)), cli_count(e->numel, n2, sizeof(n2)));
			put_change(&o, e->name, line);
		} else if (e->changes & TI_DIFF_VALUES) {
			snprintf(line, sizeof(line), "values differ: %s of %s elements", cli_count((int64_t)e->not_close, n1, sizeof(n1)),
			         cli_count(e->numel, n2, sizeof(n2)));
			put_change(&o, e->name, line);
		} else if (e->compared && !e->bit_identical && e->dtype_a == e->dtype_b) {
			snprintf(line, sizeof(line), "bytes differ, values close: max abs %s, max rel %s",
			         number(e->max_abs, x, sizeof(x)), number(e->max_rel, y, sizeof(y)));
			put_change(&o, e->name, line);
		}
		if (opt->values && e->not_compared && !(e->changes & TI_DIFF_SHAPE)) {
			snprintf(line, sizeof(line), "values not compared: %s", e->not_compared);
			put_change(&o, e->name, line);
		}
	}
	for (size_t i = 0; i < r->value_count; i++) {
		const ti_diff_value *v = &r->values[i];
		cli_out_puts(&o, v->a && v->b ? "~ " : v->a ? "- " : "+ ");
		cli_out_safe(&o, v->name, 0);
		cli_out_puts(&o, ": ");
		cli_out_safe(&o, v->a ? v->a : v->b, 0);
		if (v->a && v->b) {
			cli_out_puts(&o, " -> ");
			cli_out_safe(&o, v->b, 0);
		}
		cli_out_puts(&o, "\n");
	}
	cli_out_safe(&o, a, 0);
	cli_out_puts(&o, " vs ");
	cli_out_safe(&o, b, 0);
	cli_out_printf(&o, ": %s%zu tensor%s compared%s", r->same ? "identical, " : "", r->common,
	               r->common == 1 ? "" : "s", opt->values ? " with values" : "");
	const struct {
		size_t n;
		const char *what;
	} parts[] = {
		{r->added, "added"},          {r->removed, "removed"},          {r->renamed, "renamed"},
		{r->shape, "shape changed"},  {r->dtype, "dtype changed"},      {r->ties, "ties changed"},
		{r->changed_values, "values changed"}, {r->value_count, "other values changed"},
	};
	for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
		if (parts[k].n)
			cli_out_printf(&o, ", %zu %s", parts[k].n, parts[k].what);
	cli_out_puts(&o, "\n");
	cli_out_close(&o);
	cli_print_fetched();
	fflush(stdout);
}

/* The kinds of difference, each a test case of the CI report: a line per tensor (or value) it holds. */
enum { KIND_NAMES, KIND_SHAPES, KIND_DTYPES, KIND_TIES, KIND_VALUES, KIND_OTHER, KIND_COUNT };
static const char *const kind_names[KIND_COUNT] = {"names", "shapes", "dtypes", "ties", "values", "other values"};
static const char *const kind_titles[KIND_COUNT] = {
	"%zu tensors added, removed or renamed", "%zu tensors changed shape", "%zu tensors changed dtype",
	"%zu tensors changed ties", "%zu tensors' values differ", "%zu other values differ"};

static void kind_lines(const ti_diff_report *r, FILE *f[KIND_COUNT], size_t count[KIND_COUNT])
{
	char x[256], y[256];
	for (size_t i = 0; i < r->tensor_count; i++) {
		const ti_diff_tensor *e = &r->tensors[i];
		if (e->changes & (TI_DIFF_REMOVED | TI_DIFF_ADDED | TI_DIFF_RENAMED)) {
			if (e->changes & TI_DIFF_RENAMED)
				fprintf(f[KIND_NAMES], "%srenamed %s -> %s", count[KIND_NAMES] ? "\n" : "", e->name, e->renamed_to);
			else
				fprintf(f[KIND_NAMES], "%s%s %s", count[KIND_NAMES] ? "\n" : "",
				        e->changes & TI_DIFF_ADDED ? "added" : "removed", e->name);
			count[KIND_NAMES]++;
		}
		if (e->changes & TI_DIFF_SHAPE)
			fprintf(f[KIND_SHAPES], "%s%s: %s -> %s", count[KIND_SHAPES]++ ? "\n" : "", e->name,
			        cli_dims(e->shape_a, e->ndim_a, x, sizeof(x)), cli_dims(e->shape_b, e->ndim_b, y, sizeof(y)));
		if (e->changes & TI_DIFF_DTYPE)
			fprintf(f[KIND_DTYPES], "%s%s: %s -> %s", count[KIND_DTYPES]++ ? "\n" : "", e->name,
			        ti_dtype_name(e->dtype_a), ti_dtype_name(e->dtype_b));
		if (e->changes & TI_DIFF_TIES)
			fprintf(f[KIND_TIES], "%s%s: %s in A, %s in B", count[KIND_TIES]++ ? "\n" : "", e->name,
			        tie_text(e->tie_a, x, sizeof(x)), tie_text(e->tie_b, y, sizeof(y)));
		if (e->changes & TI_DIFF_VALUES) {
			fprintf(f[KIND_VALUES], "%s%s: %llu of %lld elements not close", count[KIND_VALUES]++ ? "\n" : "",
			        e->name, (unsigned long long)e->not_close, (long long)e->numel);
			if (e->has_max)
				fprintf(f[KIND_VALUES], ", max abs %s, max rel %s", number(e->max_abs, x, sizeof(x)),
				        number(e->max_rel, y, sizeof(y)));
		}
	}
	for (size_t i = 0; i < r->value_count; i++) {
		const ti_diff_value *v = &r->values[i];
		fprintf(f[KIND_OTHER], "%s%s: %s -> %s", count[KIND_OTHER]++ ? "\n" : "", v->name, v->a ? v->a : "(none)",
		        v->b ? v->b : "(none)");
	}
}

/*
 * --junit and --format github: a case per kind of difference (values only
 * with --values), or one error case when an input could not be read
 * (error is its message then).
 */
static int ci_output(const char *files[2], const ti_diff_options *o, const ti_diff_report *r, const char *error,
                     const char *junit, bool github)
{
	char suite[1024];
	snprintf(suite, sizeof(suite), "%s <-> %s", files[0], files[1]);
	ci_case cases[KIND_COUNT];
	char *text[KIND_COUNT] = {NULL};
	size_t len[KIND_COUNT], count[KIND_COUNT] = {0}, n = 0;
	char titles[KIND_COUNT][96];
	FILE *f[KIND_COUNT];
	int rc = EXIT_OK;
	if (error) {
		cases[n++] = (ci_case){.suite = suite, .name = "read", .file = files[1], .outcome = CI_ERROR,
		                       .title = error, .message = error};
	} else {
		bool ok = true;
		for (int k = 0; k < KIND_COUNT; k++)
			ok = (f[k] = open_memstream(&text[k], &len[k])) != NULL && ok;
		if (ok)
			kind_lines(r, f, count);
		for (int k = 0; k < KIND_COUNT; k++)
			if (f[k])
				fclose(f[k]);
		if (!ok) {
			for (int k = 0; k < KIND_COUNT; k++)
				free(text[k]);
			fprintf(stderr, "tinspect: diff: out of memory writing the CI report\n");
			return EXIT_RESOURCE;
		}
		for (int k = 0; k < KIND_COUNT; k++) {
			if (k == KIND_VALUES && !o->values)
				continue;
			if (count[k]) /* "3 tensors changed shape" */
				snprintf(titles[k], sizeof(titles[k]), kind_titles[k], count[k]);
			else
				snprintf(titles[k], sizeof(titles[k]), "the same %s", kind_names[k]);
			cases[n++] = (ci_case){.suite = suite, .name = kind_names[k], .file = files[1],
			                       .outcome = count[k] ? CI_FAIL : CI_PASS, .title = titles[k],
			                       .message = count[k] ? text[k] : NULL};
		}
	}
	if (github && ci_write_github(stdout, cases, n))
		rc = EXIT_RESOURCE;
	fflush(stdout);
	if (junit) {
		int jrc = ci_write_junit_file(junit, "tinspect diff", cases, n);
		rc = jrc ? jrc : rc;
	}
	for (int k = 0; k < KIND_COUNT; k++)
		free(text[k]);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	cli_parser p = {.argc = argc, .index = 1, .argv = argv, .options = options, .command = "diff"};
	const char *files[2] = {NULL, NULL}, *value;
	ti_diff_options o = {.values = false, .atol = 0, .rtol = 0};
	bool json = false, trust = false, github = false, quiet = false;
	const char *junit = NULL, *filters[FILTER_MAX];
	ti_source_selection sel = {.filters = filters};
	int id, rc;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (files[1])
				return cli_usage_error("diff: give two checkpoints, A and B");
			files[files[0] ? 1 : 0] = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int url_rc = cli_url_option("diff", id, value);
			if (url_rc)
				return url_rc;
			break;
		}
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON:
			json = true;
			break;
		case OPT_VALUES:
			o.values = true;
			break;
		case OPT_ATOL:
			if ((rc = parse_tolerance("atol", value, &o.atol)))
				return rc;
			break;
		case OPT_RTOL:
			if ((rc = parse_tolerance("rtol", value, &o.rtol)))
				return rc;
			break;
		case OPT_TRUST:
			trust = true;
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		case OPT_JUNIT:
			junit = value;
			break;
		case OPT_KEY:
			sel.key = value;
			break;
		case OPT_STRIP:
			sel.strip_prefix = value;
			break;
		case OPT_FILTER:
			if (sel.filter_count == FILTER_MAX)
				return cli_usage_error("diff: more than %d --filter globs", FILTER_MAX);
			filters[sel.filter_count++] = value;
			break;
		case OPT_FORMAT:
			if (strcmp(value, "text") && strcmp(value, "github"))
				return cli_usage_error("diff: --format is text or github, not '%s'", value);
			github = !strcmp(value, "github");
			break;
		}
	}
	if (!files[1])
		return cli_usage_error("diff: give two checkpoints, A and B (see 'tinspect diff --help')");
	if ((o.atol || o.rtol) && !o.values)
		return cli_usage_error("diff: --atol and --rtol need --values");
	ti_error err;
	ti_error_clear(&err);
	ti_source *src[2] = {NULL, NULL};
	char why[TI_ERROR_MESSAGE_MAX + 1100];
	for (int i = 0; i < 2; i++)
		if ((rc = cli_check_url(files[i])))
			return rc;
	for (int i = 0; i < 2; i++) {
		if (ti_source_open(files[i], &src[i], &err)) {
			rc = cli_report_open_failure(files[i], &err);
			snprintf(why, sizeof(why), "%s: %s", files[i], err.message);
			goto failed;
		}
		if ((rc = cli_check_source_safety(src[i], trust))) {
			snprintf(why, sizeof(why), "%s: refused: its pickle calls something dangerous (tinspect scan %s)",
			         files[i], files[i]);
			goto failed;
		}
	}
	char prefixes[2][80], notes[2][320];
	notes[0][0] = notes[1][0] = '\0';
	if ((rc = select_state_dicts(src, files, &sel, &o, prefixes, notes, why, sizeof(why))))
		goto failed;
	for (int i = 0; i < 2 && !json; i++)
		if (*notes[i])
			printf("note: %s\n", notes[i]);
	ti_arena arena;
	ti_arena_init(&arena, (size_t)1 << 30);
	ti_diff_report r;
	cli_progress bar;
	cli_progress_begin(&bar, stderr, "diff", 0, o.values && !quiet);
	o.progress = on_progress;
	o.progress_user = &bar;
	ti_status diffed = ti_diff_run(src[0], src[1], &o, &arena, &r, &err);
	cli_progress_end(&bar);
	if (diffed) {
		rc = cli_report(files[r.failed_input], &err);
		snprintf(why, sizeof(why), "%s: %s", files[r.failed_input], err.message);
		if (junit || github)
			ci_output(files, &o, NULL, why, junit, github);
	} else {
		if (json)
			rc = print_json(files[0], files[1], &o, &r, (const char *const[2]){notes[0], notes[1]});
		else {
			print_text(files[0], files[1], &o, &r);
			rc = EXIT_OK;
		}
		if (!rc && (junit || github))
			rc = ci_output(files, &o, &r, NULL, junit, github);
		if (!rc && !r.same)
			rc = EXIT_NEGATIVE;
	}
	ti_arena_release(&arena);
	goto done;
failed:
	if (junit || github)
		ci_output(files, &o, NULL, why, junit, github);
done:
	ti_source_close(src[0]);
	ti_source_close(src[1]);
	return rc;
}
