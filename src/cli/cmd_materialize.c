/*
 * cmd_materialize.c - `tinspect materialize SOURCE`: metadata into real
 * tensors, as to_empty() and the empty_like family do, then filled: the
 * checkpoint's own bytes, a constant or random fill, or PyTorch's default
 * initialisation. Placed on the CPU or a CUDA device, or written to a file.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"
#include "cli/outfile.h"
#include "cli/progress.h"
#include "tinspect/convert.h"
#include "tinspect/fill.h"
#include "tinspect/init_rules.h"
#include "tinspect/place.h"

enum {
	OPT_HELP = 1, OPT_DEVICE, OPT_FILL, OPT_SEED, OPT_OUTPUT, OPT_FORMAT, OPT_DRY_RUN, OPT_VERIFY, OPT_FORCE,
	OPT_QUIET, OPT_JSON, OPT_BIND, OPT_TRUST, OPT_RAW
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"device", 0, OPT_VALUE, OPT_DEVICE},
	{"fill", 0, OPT_VALUE, OPT_FILL},
	{"seed", 0, OPT_VALUE, OPT_SEED},
	{"output", 'o', OPT_VALUE, OPT_OUTPUT},
	{"format", 0, OPT_VALUE, OPT_FORMAT},
	{"dry-run", 'n', OPT_FLAG, OPT_DRY_RUN},
	{"verify", 0, OPT_FLAG, OPT_VERIFY},
	{"force", 'f', OPT_FLAG, OPT_FORCE},
	{"quiet", 'q', OPT_FLAG, OPT_QUIET},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect materialize SOURCE [options]\n"
	"\n"
	"Turn metadata into real tensors: every storage of SOURCE (a checkpoint, or\n"
	"a model description MODEL.json) allocated once and filled, on the CPU or\n"
	"a CUDA device, or written to a file with -o.\n"
	"\n"
	"options:\n"
	"  --fill POLICY        how to fill every tensor: empty, zeros, ones, full:V,\n"
	"                       rand, randn, uniform:A,B, normal:MEAN,STD, arange,\n"
	"                       init (PyTorch's default initialisation), load (the\n"
	"                       checkpoint's bytes; the default for checkpoints)\n"
	"  --fill GLOB=POLICY   the policy for tensors whose name matches (repeatable;\n"
	"                       the last match wins)\n"
	"                       A random fill for every tensor (rand, randn, uniform,\n"
	"                       normal) leaves integer, bool and float8 tensors zero,\n"
	"                       as PyTorch's init leaves num_batches_tracked; a GLOB\n"
	"                       that names them applies to them as given.\n"
	"  --seed S             seed of the random fills (default 0)\n"
	"  --device DEV         cpu (default) or cuda[:N]\n"
	"  -o, --output OUT     write a torch zip or .safetensors file instead of placing\n"
	"  --format FMT         torch or safetensors (default: from OUT's extension)\n"
	"  -n, --dry-run        print what would be allocated where, and stop\n"
	"  --verify             read placed data back and compare checksums\n"
	"  -f, --force          replace OUT if it exists\n"
	"  -q, --quiet          no progress bar\n"
	"  --json               print the report as JSON\n"
	"  --raw                print sizes as exact integers, not 4.59 KiB\n"
	"  --trust              use a checkpoint whose pickle calls something dangerous,\n"
	"                       which is refused otherwise (it is never executed)\n"
	CLI_URL_HELP("     ")
	"  -h, --help           show this help\n";

typedef struct job {
	const char *file;
	cli_model cm;              /* when SOURCE is a description */
	ti_source *src;
	ti_arena arena;
	ti_fill_table table;       /* --fill GLOB=POLICY */
	ti_fill_policy fallback;   /* --fill POLICY */
	bool has_fallback;
	uint64_t seed;
	const char **policy_text;  /* per storage, for reports */
	const char **rule;         /* per storage: init's PyTorch call */
} job;

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

/* The first tensor that views storage i: it names the storage's policy and random stream. */
static size_t first_viewer(const ti_source *src, size_t storage)
{
	for (size_t k = 0; k < ti_source_tensor_count(src); k++)
		if (ti_source_tensor_at(src, k)->storage == storage && !ti_source_tensor_at(src, k)->unsupported)
			return k;
	return SIZE_MAX;
}

static bool draws_random(ti_fill_kind kind)
{
	return kind == TI_FILL_RAND || kind == TI_FILL_RANDN || kind == TI_FILL_UNIFORM || kind == TI_FILL_NORMAL ||
	       kind == TI_FILL_INIT;
}

/* --seed with no random fill would be ignored: say so instead. */
static int check_seed(const job *j, const char *seed_text)
{
	bool random = j->has_fallback && draws_random(j->fallback.kind);
	for (size_t i = 0; i < j->table.count && !random; i++)
		random = draws_random(j->table.items[i].policy.kind);
	if (seed_text && !random)
		return cli_usage_error("materialize: --seed %s seeds the random fills (rand, randn, uniform, normal, init); "
		                       "no --fill asks for one", seed_text);
	return EXIT_OK;
}

static const char *tensor_name(const void *src, size_t i) { return ti_source_tensor_at(src, i)->name; }

/* Every --fill GLOB=POLICY must name some tensor: a GLOB that matches none is a mistake, not a no-op. */
static int check_fill_globs(const job *j)
{
	for (size_t i = 0; i < j->table.count; i++) {
		const char *glob = j->table.items[i].glob;
		int rc = cli_check_globs("materialize", "--fill", j->file, &glob, 1, tensor_name, j->src,
		                         ti_source_tensor_count(j->src));
		if (rc)
			return rc;
	}
	return EXIT_OK;
}

/*
 * A random fill given for every tensor (no GLOB names this one) leaves
 * integer and bool tensors, and dtypes it cannot draw, to zeros, as
 * PyTorch's default initialisation leaves num_batches_tracked at 0.
 */
static bool skips_random(const ti_fill_policy *policy, ti_dtype dtype)
{
	if ((policy->kind != TI_FILL_RAND && policy->kind != TI_FILL_RANDN && policy->kind != TI_FILL_UNIFORM &&
	     policy->kind != TI_FILL_NORMAL) || ti_dtype_is_sub_byte(dtype)) /* no fill at all: refused by its name */
		return false;
	ti_error ignored;
	return ti_fill_check(policy, dtype, &ignored) != TI_OK; /* integers, bool, float8: PyTorch cannot draw them either */
}

/* 'load' where there are no bytes: the tensors without data, from storage `from` on, named once. */
static int no_data_to_load(const job *j, size_t from)
{
	bool model = ti_source_get_format(j->src) == TI_SOURCE_MODEL;
	char names[400] = "";
	size_t len = 0, count = 0;
	for (size_t i = from; i < ti_source_storage_count(j->src); i++) {
		size_t t = first_viewer(j->src, i);
		if (t == SIZE_MAX || (!model && ti_source_storage_at(j->src, i)->has_data))
			continue;
		const ti_fill_override *o = ti_fill_table_lookup(&j->table, ti_source_tensor_at(j->src, t)->name);
		ti_fill_policy policy = o ? o->policy : j->fallback;
		if ((o || j->has_fallback) && policy.kind != TI_FILL_LOAD)
			continue;
		if (count++ < 3) {
			int n = snprintf(names + len, sizeof(names) - len, "%s'%.100s'", len ? ", " : "",
			                 ti_source_tensor_at(j->src, t)->name);
			len += n > 0 && (size_t)n < sizeof(names) - len ? (size_t)n : 0;
		}
	}
	if (count > 3)
		snprintf(names + len, sizeof(names) - len, " and %zu more", count - 3);
	fprintf(stderr, "tinspect: %s: Cannot copy out of meta tensor; no data! (%s): %s; give --fill init or another "
	        "policy\n", j->file, names, model ? "a description has no bytes to load" : "'load' needs a checkpoint's bytes");
	return EXIT_USAGE;
}

/* Resolves every storage's policy and sets the fills; prints the error and returns an exit code. */
static int resolve_policies(job *j, bool to_file)
{
	ti_error err;
	ti_error_clear(&err);
	size_t n = ti_source_storage_count(j->src);
	j->policy_text = ti_arena_calloc(&j->arena, n + 1, sizeof(*j->policy_text));
	j->rule = ti_arena_calloc(&j->arena, n + 1, sizeof(*j->rule));
	if (!j->policy_text || !j->rule)
		return fprintf(stderr, "tinspect: out of memory\n"), EXIT_RESOURCE;
	bool model = ti_source_get_format(j->src) == TI_SOURCE_MODEL;
	for (size_t i = 0; i < n; i++) {
		size_t t = first_viewer(j->src, i);
		if (t == SIZE_MAX)
			continue;
		const ti_source_tensor *x = ti_source_tensor_at(j->src, t);
		const ti_fill_override *o = ti_fill_table_lookup(&j->table, x->name);
		ti_fill_policy policy = o ? o->policy : j->fallback;
		if (!o && skips_random(&policy, x->dtype)) /* as PyTorch's init leaves num_batches_tracked */
			policy = ti_fill_constant(TI_FILL_ZEROS);
		if (!o && !j->has_fallback) {
			if (model) {
				fprintf(stderr, "tinspect: %s: Cannot copy out of meta tensor; no data! ('%s'): give --fill init "
				        "(PyTorch's default initialisation) or another --fill policy\n", j->file, x->name);
				return EXIT_USAGE;
			}
			policy = ti_fill_constant(TI_FILL_LOAD);
		}
		ti_status st = TI_OK;
		if (policy.kind == TI_FILL_LOAD) {
			if (model || !ti_source_storage_at(j->src, i)->has_data)
				return no_data_to_load(j, i);
			j->policy_text[i] = "load";
			continue;
		}
		if (ti_dtype_is_sub_byte(x->dtype)) /* refused by the policy asked for, before init resolves it */
			st = ti_fill_check(&policy, x->dtype, &err);
		if (!st && policy.kind == TI_FILL_EMPTY && to_file)
			return cli_usage_error("materialize: 'empty' leaves memory uninitialised: refused for file output ('%s')",
			                       x->name);
		if (!st && policy.kind == TI_FILL_INIT)
			st = model ? ti_model_param_init(j->cm.model, t, &policy, &j->rule[i], &err)
			           : ti_init_policy_by_name(x->name, x->dtype, x->ndim, x->shape, &policy, &j->rule[i], &err);
		if (!st)
			st = ti_source_set_fill(j->src, i, &policy, j->seed, x->name, &err);
		if (st) {
			ti_error_at(&err, x->name, -1);
			return cli_report(j->file, &err);
		}
		char text[TI_FILL_TEXT_MAX];
		ti_fill_format(&policy, text, sizeof(text));
		j->policy_text[i] = ti_arena_strdup(&j->arena, text);
	}
	return EXIT_OK;
}

static const cli_column plan_columns[] = {
	{"NAME", CLI_LEFT, 60}, {"DTYPE", CLI_LEFT, 0}, {"SHAPE", CLI_LEFT, 0},
	{"BYTES", CLI_RIGHT, 0}, {"FILL", CLI_LEFT, 0},  {"INIT", CLI_LEFT, 0},
};

static int print_plan(const job *j, const char *where, bool json)
{
	char shape[256], bytes[32], total_text[32];
	uint64_t total = 0;
	const ti_source *src = j->src;
	cJSON *root = json ? cli_json_root() : NULL, *list = NULL;
	cli_table t;
	cli_table_init(&t, plan_columns, 6);
	if (json) {
		cJSON_AddStringToObject(root, "file", j->file);
		cJSON_AddStringToObject(root, "device", where);
		list = cJSON_AddArrayToObject(root, "tensors");
	}
	for (size_t k = 0; k < ti_source_tensor_count(src); k++) {
		const ti_source_tensor *x = ti_source_tensor_at(src, k);
		bool first = first_viewer(src, x->storage) == k;
		uint64_t b = first ? ti_source_storage_at(src, x->storage)->nbytes : 0;
		total += b;
		const char *policy = j->policy_text[x->storage] ? j->policy_text[x->storage] : "-";
		if (json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", x->name);
			cJSON_AddStringToObject(o, "dtype", ti_dtype_name(x->dtype));
			cJSON *s = cJSON_AddArrayToObject(o, "shape");
			for (int d = 0; d < x->ndim; d++)
				cJSON_AddItemToArray(s, cli_json_dim(ti_dim_int(x->shape[d])));
			cJSON_AddItemToObject(o, "nbytes", cli_json_dim(ti_dim_int((int64_t)b)));
			cJSON_AddStringToObject(o, "fill", policy);
			if (j->rule[x->storage])
				cJSON_AddStringToObject(o, "init", j->rule[x->storage]);
			if (!first)
				cJSON_AddBoolToObject(o, "shared", true);
			cJSON_AddItemToArray(list, o);
			continue;
		}
		const char *row[] = {x->name, ti_dtype_name(x->dtype), cli_dims(x->shape, x->ndim, shape, sizeof(shape)),
		                     first ? cli_bytes((int64_t)b, bytes, sizeof(bytes)) : "shared", policy, j->rule[x->storage]};
		cli_table_add(&t, row);
	}
	if (json) {
		cJSON_AddItemToObject(root, "nbytes", cli_json_dim(ti_dim_int((int64_t)total)));
		cli_table_free(&t);
		return cli_json_print(root);
	}
	int rc = cli_table_flush(&t);
	if (rc)
		return rc;
	printf("\n%zu tensors, %s to allocate on %s\n", ti_source_tensor_count(src),
	       cli_bytes((int64_t)total, total_text, sizeof(total_text)), where);
	return EXIT_OK;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_progress(void *user, uint64_t done, uint64_t total)
{
	cli_progress *bar = user;
	bar->total = total;
	cli_progress_add(bar, done - bar->done);
}

static int print_placed(const job *j, const ti_place_stats *s, double seconds, bool json)
{
	char a[32], b[32], c[32], rate[32];
	double per_second = seconds > 0 ? (double)s->bytes / seconds : 0;
	if (json) {
		char text[64];
		cJSON *root = cli_json_root();
		cJSON_AddStringToObject(root, "file", j->file);
		cJSON_AddStringToObject(root, "device", s->device);
		cJSON_AddItemToObject(root, "storages", cli_json_dim(ti_dim_int((int64_t)s->storages)));
		cJSON_AddItemToObject(root, "nbytes", cli_json_dim(ti_dim_int((int64_t)s->bytes)));
		cJSON_AddItemToObject(root, "seconds", cJSON_CreateRaw(cli_json_seconds(seconds, text, sizeof(text))));
		cJSON_AddItemToObject(root, "bytes_per_second", cli_json_dim(ti_dim_int((int64_t)per_second)));
		if (s->total) {
			cJSON_AddItemToObject(root, "device_free_before", cli_json_dim(ti_dim_int((int64_t)s->free_before)));
			cJSON_AddItemToObject(root, "device_free_after", cli_json_dim(ti_dim_int((int64_t)s->free_after)));
			cJSON_AddItemToObject(root, "device_total", cli_json_dim(ti_dim_int((int64_t)s->total)));
			cJSON_AddItemToObject(root, "filled_on_device", cli_json_dim(ti_dim_int((int64_t)s->filled_on_device)));
		}
		cJSON_AddBoolToObject(root, "verified", s->verified);
		return cli_json_print(root);
	}
	printf("placed %zu storages, %s on %s in %.3f s (%s/s)%s\n", s->storages, cli_bytes((int64_t)s->bytes, a, sizeof(a)),
	       s->device, seconds, cli_bytes((int64_t)per_second, rate, sizeof(rate)), s->verified ? ", verified" : "");
	cli_print_fetched();
	if (s->total)
		printf("device memory free: %s before, %s after, of %s\n", cli_bytes((int64_t)s->free_before, a, sizeof(a)),
		       cli_bytes((int64_t)s->free_after, b, sizeof(b)), cli_bytes((int64_t)s->total, c, sizeof(c)));
	return EXIT_OK;
}

static int run(job *j, const char *out, const char *format, bool dry_run, bool verify, bool force, bool quiet,
               bool json, bool cuda, int cuda_index)
{
	int rc = resolve_policies(j, out != NULL);
	if (rc)
		return rc;
	char where[32] = "cpu";
	if (cuda)
		snprintf(where, sizeof(where), "cuda:%d", cuda_index);
	if (dry_run) {
		return print_plan(j, out ? out : where, json);
	}
	ti_error err;
	ti_error_clear(&err);
	cli_progress bar;
	cli_progress_begin(&bar, stderr, "materialize", 0, !quiet);
	double start = now();
	if (out) {
		ti_convert_options o = {0};
		o.format = (format ? !strcmp(format, "safetensors") : ends_with(out, ".safetensors")) ? TI_OUT_SAFETENSORS
		                                                                                      : TI_OUT_TORCH_ZIP;
		o.keep_storage = o.format == TI_OUT_TORCH_ZIP; /* shared storages stay shared */
		o.progress = on_progress;
		o.progress_user = &bar;
		cli_outfile of;
		const char *inputs[65] = {j->file};
		int input_count = 1;
		for (size_t i = 0; i < ti_source_file_count(j->src) && input_count < 65; i++)
			inputs[input_count++] = ti_source_file_at(j->src, i);
		if ((rc = cli_outfile_open(&of, out, inputs, input_count, force)))
			return rc;
		ti_convert_stats stats;
		ti_status st = ti_convert(j->src, of.fd, &o, &stats, &err);
		cli_progress_end(&bar);
		if (st) {
			cli_outfile_abort(&of);
			return cli_report(j->file, &err);
		}
		if ((rc = cli_outfile_commit(&of)))
			return rc;
		char bytes[64];
		if (!json) {
			printf("wrote %s: %zu tensors, %s of data\n", out, stats.tensors,
			       cli_quantity((int64_t)stats.data_bytes, true, bytes, sizeof(bytes)));
			cli_print_fetched();
		} else {
			char text[64];
			cJSON *root = cli_json_root();
			cJSON_AddStringToObject(root, "file", j->file);
			cJSON_AddStringToObject(root, "output", out);
			cJSON_AddItemToObject(root, "tensors", cli_json_dim(ti_dim_int((int64_t)stats.tensors)));
			cJSON_AddItemToObject(root, "nbytes", cli_json_dim(ti_dim_int((int64_t)stats.data_bytes)));
			cJSON_AddItemToObject(root, "seconds", cJSON_CreateRaw(cli_json_seconds(now() - start, text, sizeof(text))));
			return cli_json_print(root);
		}
		return EXIT_OK;
	}
	ti_place_options po = {cuda, cuda_index, verify, on_progress, &bar};
	ti_place_stats stats;
	ti_status st = ti_place(j->src, &po, &stats, &err);
	cli_progress_end(&bar);
	if (st)
		return cli_report(j->file, &err);
	return print_placed(j, &stats, now() - start, json);
}

int cmd_materialize(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "materialize", false};
	job j;
	memset(&j, 0, sizeof(j));
	ti_arena_init(&j.arena, (size_t)1 << 30);
	ti_fill_table_init(&j.table, &j.arena);
	const char *out = NULL, *format = NULL, *seed_text = NULL;
	char hint[128];
	bool dry_run = false, verify = false, force = false, quiet = false, json = false, cuda = false, trust = false;
	int cuda_index = 0, id, rc = EXIT_OK;
	const char *value;
	ti_error err;
	ti_error_clear(&err);
	while (!rc && (id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			rc = EXIT_USAGE;
			break;
		case 0:
			if (j.file)
				rc = cli_usage_error("materialize: one SOURCE at a time");
			j.file = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE:
			rc = cli_url_option("materialize", id, value);
			break;
		case OPT_HELP:
			ti_arena_release(&j.arena);
			return cli_help(help);
		case OPT_DEVICE:
			rc = cli_parse_device("materialize", value, false, NULL, &cuda, &cuda_index);
			break;
		case OPT_FILL:
			if (strchr(value, '=') ? ti_fill_table_add(&j.table, value, &err)
			                       : ti_fill_parse(value, &j.fallback, &err))
				rc = cli_usage_error("materialize: %s", err.message);
			j.has_fallback |= !strchr(value, '=');
			break;
		case OPT_SEED: {
			char *end;
			seed_text = value;
			j.seed = strtoull(value, &end, 10);
			if (*value < '0' || *value > '9' || *end)
				rc = cli_usage_error("materialize: --seed wants a non-negative integer, not '%s'", value);
			break;
		}
		case OPT_OUTPUT:
			out = value;
			break;
		case OPT_FORMAT:
			format = value;
			if (strcmp(value, "torch") && strcmp(value, "safetensors"))
				rc = cli_usage_error("materialize: --format wants torch or safetensors, not '%s'%s", value,
				                     cli_did_you_mean(value, (const char *const[]){"torch", "safetensors", NULL}, "",
				                                      hint, sizeof(hint)));
			break;
		case OPT_DRY_RUN:
			dry_run = true;
			break;
		case OPT_VERIFY:
			verify = true;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case OPT_TRUST:
			trust = true;
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_RAW:
			cli_raw_numbers = true;
			break;
		}
	}
	if (!rc && !j.file)
		rc = cli_usage_error("materialize: no SOURCE given (see 'tinspect materialize --help')");
	if (!rc && out && cuda)
		rc = cli_usage_error("materialize: -o writes a file: it takes no --device");
	/* options that would do nothing are refused, not ignored */
	if (!rc && format && !out)
		rc = cli_usage_error("materialize: --format %s names the format of -o OUT; give -o OUT too", format);
	if (!rc && verify && out)
		rc = cli_usage_error("materialize: --verify reads placed memory back; -o writes a file, which it does not "
		                     "check (read it back with 'tinspect inspect')");
	if (!rc)
		rc = check_seed(&j, seed_text);
	if (!rc && force && !out)
		rc = cli_usage_error("materialize: --force replaces an existing -o OUT; give -o OUT too");
	if (!rc && verify && dry_run)
		rc = cli_usage_error("materialize: --verify checks placed memory; --dry-run places nothing");
	if (!rc)
		rc = cli_check_input(j.file);
	if (rc) {
		ti_arena_release(&j.arena);
		return rc;
	}
	ti_status st;
	if (cli_is_description(j.file)) {
		j.cm.file = j.file;
		if ((rc = cli_model_open(&j.cm))) {
			ti_arena_release(&j.arena);
			return rc;
		}
		st = ti_source_from_model(j.cm.model, &j.src, &err);
	} else {
		st = ti_source_open(j.file, &j.src, &err);
	}
	if (st)
		rc = j.cm.model ? cli_report(j.file, &err) : cli_report_open_failure(j.file, &err);
	else if (!(rc = cli_check_source_safety(j.src, trust)) && !(rc = check_fill_globs(&j)))
		rc = run(&j, out, format, dry_run, verify, force, quiet, json, cuda, cuda_index);
	ti_source_close(j.src);
	ti_model_close(j.cm.model);
	ti_arena_release(&j.arena);
	return rc;
}
