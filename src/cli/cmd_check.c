/*
 * cmd_check.c - `tinspect check MODEL.json CHECKPOINT`: would
 * model.load_state_dict(checkpoint) succeed, in PyTorch's words, do the
 * shapes still propagate, and do the gates hold (memory, parameters,
 * dtype). For CI: exit 0 pass, 1 fail; JUnit and GitHub annotations, and
 * many pairs from a manifest, on every core (check_manifest.c).
 *
 * One pair is checked in this process into a JSON report (its "checks":
 * one per check made); text, JSON, JUnit and annotations are all written
 * from that report, so a pair checked in a child (the manifest) prints as
 * one checked here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli/check_cli.h"
#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"
#include "cli/subrun.h"
#include "tinspect/check.h"
#include "tinspect/memory.h"

/*
 * Option ids by role: a pair's own options (forwarded to a child that
 * checks the pair), memory's options (forwarded to `memory` too), then the
 * run's (output, manifest).
 */
enum {
	OPT_HELP = 1,
	/* the pair */
	OPT_NO_STRICT, OPT_KEY, OPT_STRIP, OPT_ADD, OPT_RENAME, OPT_IGNORE, OPT_BIND, OPT_INPUT, OPT_TRUST, OPT_DTYPE,
	OPT_MAX_PARAMS,
	/* memory's */
	OPT_FIRST_MEMORY, OPT_DEVICE_MEMORY = OPT_FIRST_MEMORY, OPT_MODE, OPT_OPTIMIZER, OPT_IMPL, OPT_DEVICE, OPT_CPU_ISA, OPT_AMP,
	OPT_STRATEGY, OPT_WORLD, OPT_BUCKET, OPT_WRAP, OPT_MICRO, OPT_TRAINABLE, OPT_FROZEN, OPT_ACCUMULATE, OPT_OVERHEAD,
	OPT_ACT_CHECKPOINT,
	/* the run's */
	OPT_FIRST_RUN, OPT_JSON = OPT_FIRST_RUN, OPT_JUNIT, OPT_FORMAT, OPT_MANIFEST, OPT_JOBS
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"no-strict", 0, OPT_FLAG, OPT_NO_STRICT},
	{"key", 0, OPT_VALUE, OPT_KEY},
	{"strip-prefix", 0, OPT_VALUE, OPT_STRIP},
	{"add-prefix", 0, OPT_VALUE, OPT_ADD},
	{"rename", 0, OPT_VALUE, OPT_RENAME},
	{"ignore", 0, OPT_VALUE, OPT_IGNORE},
	{"bind", 0, OPT_VALUE, OPT_BIND},
	{"input", 0, OPT_VALUE, OPT_INPUT},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{"dtype", 0, OPT_VALUE, OPT_DTYPE},
	{"max-params", 0, OPT_VALUE, OPT_MAX_PARAMS},
	{"device-memory", 0, OPT_VALUE, OPT_DEVICE_MEMORY},
	{"mode", 0, OPT_VALUE, OPT_MODE},
	{"optimizer", 0, OPT_VALUE, OPT_OPTIMIZER},
	{"impl", 0, OPT_VALUE, OPT_IMPL},
	{"device", 0, OPT_VALUE, OPT_DEVICE},
	{"cpu-isa", 0, OPT_VALUE, OPT_CPU_ISA},
	{"amp", 0, OPT_VALUE, OPT_AMP},
	{"strategy", 0, OPT_VALUE, OPT_STRATEGY},
	{"world-size", 0, OPT_VALUE, OPT_WORLD},
	{"bucket", 0, OPT_VALUE, OPT_BUCKET},
	{"wrap", 0, OPT_VALUE, OPT_WRAP},
	{"micro-batches", 0, OPT_VALUE, OPT_MICRO},
	{"trainable", 0, OPT_VALUE, OPT_TRAINABLE},
	{"frozen", 0, OPT_VALUE, OPT_FROZEN},
	{"accumulate", 0, OPT_VALUE, OPT_ACCUMULATE},
	{"overhead", 0, OPT_VALUE, OPT_OVERHEAD},
	{"checkpoint", 0, OPT_VALUE, OPT_ACT_CHECKPOINT},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"junit", 0, OPT_VALUE, OPT_JUNIT},
	{"format", 0, OPT_VALUE, OPT_FORMAT},
	{"manifest", 0, OPT_VALUE, OPT_MANIFEST},
	{"jobs", 'j', OPT_VALUE, OPT_JOBS},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect check MODEL.json CHECKPOINT [options]\n"
	"       tinspect check FOLDER [options]\n"
	"       tinspect check --manifest CHECKS.json [options]\n"
	"\n"
	"MODEL.json may be a Hugging Face folder or its config.json (tinspect\n"
	"describe); FOLDER alone checks its weights against its config.json.\n"
	"\n"
	"Say whether CHECKPOINT loads into the described model as\n"
	"model.load_state_dict(state_dict, strict=True) would: missing keys,\n"
	"unexpected keys and size mismatches, in PyTorch's order and words; ties\n"
	"the model declares kept; then propagate shapes through the model, as\n"
	"`tinspect shapes` does, and check the gates asked for. A state dict\n"
	"nested under state_dict, model, model_state_dict, module, ema or net is\n"
	"found, and a module. (DDP) or _orig_mod. (torch.compile) prefix on every key\n"
	"taken off, each with a note. Exit 0 when every check passes, 1 when not.\n"
	"\n"
	"loading:\n"
	"  --no-strict        as strict=False: missing and unexpected keys are\n"
	"                     reported, not failures (size mismatches still fail)\n"
	"  --key K            the state dict is the checkpoint's entry K\n"
	"  --strip-prefix P   take P off every key that starts with it\n"
	"  --add-prefix P     put P before every key\n"
	"  --rename s/OLD/NEW/\n"
	"                     the first OLD in every key becomes NEW (repeatable)\n"
	"  --ignore GLOB      names matching GLOB are neither missing nor unexpected\n"
	"                     (repeatable)\n"
	"  --input NAME=SHAPE[:DTYPE], --bind NAME=N\n"
	"                     sizes for the shape propagation, as with shapes\n"
	"  --trust            read a checkpoint whose pickle scan finds dangerous\n"
	"gates:\n"
	"  --dtype DT         every floating tensor of the checkpoint is DT\n"
	"  --max-params N     the model has at most N parameters (25M, 7B, 1.5e9)\n"
	"  --device-memory SIZE\n"
	"                     one step fits SIZE (24GiB, or a GPU: A100-40GB), as\n"
	"                     `tinspect memory` estimates it with the checkpoint's\n"
	"                     dtypes; memory's options apply: --mode, --optimizer,\n"
	"                     --impl, --device, --cpu-isa, --amp, --strategy,\n"
	"                     --world-size, --bucket, --wrap, --micro-batches,\n"
	"                     --trainable, --frozen, --accumulate, --overhead,\n"
	"                     --checkpoint\n"
	"output:\n"
	"  --json             print one JSON document\n"
	"  --junit FILE       also write a JUnit XML report, a test case per check\n"
	"  --format text|github\n"
	"                     github: also print GitHub Actions ::error annotations\n"
	"  --manifest FILE    check every pair FILE lists, in parallel, one report\n"
	"                     (options given here apply to every pair)\n"
	"  -j, --jobs N       pairs checked at once (default: the cores online)\n"
	CLI_URL_HELP("   ")
	"  -h, --help         show this help\n";

#define CHECK_MAX_LIST 64   /* --rename and --ignore, each */
#define CHECK_MAX_PASS 512  /* option words forwarded to a child */

typedef struct check_args {
	cli_model cm;
	const char *ckpt;
	ti_check_options o;
	const char *renames[CHECK_MAX_LIST], *ignores[CHECK_MAX_LIST];
	bool hf_folder;                  /* `check FOLDER`: its weights against its config.json */
	bool trust;
	int64_t max_params;              /* 0: no gate */
	const char *device_memory;       /* --device-memory, or NULL */
	const char *memory_words[CHECK_MAX_PASS]; /* memory's options, as given */
	int memory_word_count;
	const char *pass[CHECK_MAX_PASS];/* the pair's and memory's options, for a child */
	char flags[CHECK_MAX_PASS][32];  /* "--key": the flags pass points to */
	char input_copies[CLI_MODEL_MAX_BINDS][256];
	int pass_count;
	bool json, github;
	const char *junit, *manifest;
	int jobs;
} check_args;

static cJSON *json_strings(const char *const *items, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
	return a;
}

static cJSON *json_shape(int ndim, const int64_t *shape)
{
	ti_dim d[64];
	for (int i = 0; i < ndim && i < 64; i++)
		d[i] = ti_dim_int(shape[i]);
	return cli_json_dims(d, ndim < 64 ? ndim : 64);
}

static const char *const outcome_names[] = {"pass", "fail", "error", "skipped"};

/* One check of the report: what check_cases reads back. */
static void add_check(cJSON *checks, const char *name, ci_outcome outcome, const char *file, const char *title,
                      const char *message)
{
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", name);
	cJSON_AddStringToObject(c, "outcome", outcome_names[outcome]);
	if (file)
		cJSON_AddStringToObject(c, "file", file);
	if (title)
		cJSON_AddStringToObject(c, "title", title);
	if (message)
		cJSON_AddStringToObject(c, "message", message);
	cJSON_AddItemToArray(checks, c);
}

/* "2 missing keys, 1 unexpected key, 1 size mismatch" */
static const char *load_title(const ti_check_report *r, bool strict, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	const struct { size_t count; const char *one, *many; bool shown; } parts[] = {
		{r->missing_count, "missing key", "missing keys", strict},
		{r->unexpected_count, "unexpected key", "unexpected keys", strict},
		{r->mismatch_count, "size mismatch", "size mismatches", true},
	};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i].count && parts[i].shown && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%zu %s", n ? ", " : "", parts[i].count,
			                      parts[i].count == 1 ? parts[i].one : parts[i].many);
	return buf;
}

static int64_t parameter_count(const ti_model *m)
{
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].buffer || p[i].tied_to)
			continue;
		int64_t numel = 1;
		for (int k = 0; k < p[i].ndim; k++)
			numel *= p[i].shape[k];
		total += numel;
	}
	return total;
}

/* "25M", "7B", "1.5e9", "350000": a count of parameters. */
static int parse_count_suffix(const char *text, int64_t *out)
{
	char *end;
	double v = strtod(text, &end);
	static const struct { char suffix; double scale; } scales[] = {
		{'K', 1e3}, {'k', 1e3}, {'M', 1e6}, {'m', 1e6}, {'B', 1e9}, {'b', 1e9}, {'G', 1e9}, {'T', 1e12}, {'t', 1e12}};
	if (end != text && *end && !end[1])
		for (size_t i = 0; i < sizeof(scales) / sizeof(scales[0]); i++)
			if (*end == scales[i].suffix) {
				v *= scales[i].scale;
				end++;
				break;
			}
	if (end == text || *end || !(v >= 1) || v > 1e18 || v != floor(v))
		return cli_usage_error("check: --max-params wants a count of parameters (25M, 7B, 350000), not '%s'", text);
	*out = (int64_t)v;
	return EXIT_OK;
}

/*
 * The memory gate: `memory MODEL --json --device-memory SIZE ...` in a child,
 * with the checkpoint's dtypes when it loads. Adds the check; returns
 * EXIT_USAGE (printed) when memory refused its options.
 */
static int memory_gate(check_args *a, bool loads, bool shapes_ok, cJSON *root, cJSON *checks)
{
	char *argv[CHECK_MAX_PASS + 3 * CLI_MODEL_MAX_BINDS + 16];
	int argc = 0;
	argv[argc++] = "memory";
	argv[argc++] = (char *)a->cm.file;
	argv[argc++] = "--json";
	if (loads) {
		argv[argc++] = "--weights";
		argv[argc++] = (char *)a->ckpt;
	}
	if (a->trust && loads)
		argv[argc++] = "--trust";
	for (int i = 0; i < a->memory_word_count; i++)
		argv[argc++] = (char *)a->memory_words[i];
	char binds[CLI_MODEL_MAX_BINDS][96];
	for (int i = 0; i < a->cm.bind_count; i++) {
		snprintf(binds[i], sizeof(binds[i]), "%s=%lld", a->cm.bind_names[i], (long long)a->cm.bind_values[i]);
		argv[argc++] = "--bind";
		argv[argc++] = binds[i];
	}
	char inputs[CLI_MODEL_MAX_BINDS][256];
	for (int i = 0; i < a->cm.input_count; i++) {
		snprintf(inputs[i], sizeof(inputs[i]), "%s=%s", a->cm.input_names[i], a->cm.input_specs[i]);
		argv[argc++] = "--input";
		argv[argc++] = inputs[i];
	}
	argv[argc] = NULL;
	if (!shapes_ok) {
		add_check(checks, "memory", CI_SKIPPED, a->cm.file, "not estimated: the shapes do not propagate", NULL);
		return EXIT_OK;
	}
	cli_subrun run = {.run = cmd_memory, .argc = argc, .argv = argv};
	if (cli_subrun_all(&run, 1, 1))
		return EXIT_RESOURCE;
	int rc = EXIT_OK;
	cJSON *m = run.status <= EXIT_NEGATIVE || run.status == EXIT_UNDECIDED ? cJSON_Parse(run.out) : NULL;
	cJSON *fits = m ? cJSON_GetObjectItem(m, "fits") : NULL;
	if (run.status == EXIT_USAGE) {
		fputs(run.err, stderr);
		rc = EXIT_USAGE;
	} else if (cJSON_IsNull(fits)) { /* a lower bound that fits: the gate cannot pass on it */
		char need[32], title[160];
		cli_bytes((int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "device_need")), need, sizeof(need));
		snprintf(title, sizeof(title), "cannot tell whether it fits: needs at least %s, %s has more, but the "
		         "peak is a lower bound (opaque steps)", need, a->device_memory);
		add_check(checks, "memory", CI_FAIL, a->cm.file, title, NULL);
	} else if (!cJSON_IsBool(fits)) {
		char *nl = strchr(run.err, '\n');
		if (nl)
			*nl = '\0';
		add_check(checks, "memory", CI_ERROR, a->cm.file, "the memory estimate failed", run.err);
	} else {
		char need[32], have[32], title[160];
		double need_b = cJSON_GetNumberValue(cJSON_GetObjectItem(m, "device_need"));
		double have_b = cJSON_GetNumberValue(cJSON_GetObjectItem(m, "device_memory"));
		cli_bytes((int64_t)need_b, need, sizeof(need));
		cli_bytes((int64_t)have_b, have, sizeof(have));
		const char *step = cJSON_GetStringValue(cJSON_GetObjectItem(m, "peak_step"));
		if (cJSON_IsTrue(fits))
			snprintf(title, sizeof(title), "fits: %s of %s (%s), %.1f %%", need, have, a->device_memory,
			         100.0 * need_b / have_b);
		else
			snprintf(title, sizeof(title), "does not fit: needs %s at %s, %s has %s", need, step ? step : "?",
			         a->device_memory, have);
		add_check(checks, "memory", cJSON_IsTrue(fits) ? CI_PASS : CI_FAIL, a->cm.file, title, NULL);
		cJSON *o = cJSON_AddObjectToObject(root, "memory");
		static const char *const keep[] = {"mode", "device", "optimizer", "peak", "peak_step", "device_memory",
		                                   "device_need", "fits"};
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
			cJSON *v = cJSON_GetObjectItem(m, keep[i]);
			if (v)
				cJSON_AddItemToObject(o, keep[i], cJSON_Duplicate(v, 1));
		}
	}
	cJSON_Delete(m);
	cli_subrun_release(&run, 1);
	return rc;
}

/* A message that joins items: "a (float32), b (float32)". */
static char *joined(const char *const *items, size_t n, const char *sep)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(items[i]) + strlen(sep);
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	*s = '\0';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? sep : "", items[i]);
	return s;
}

/*
 * Checks one pair into *out (a report whose "checks" say how it went).
 * EXIT_OK with the report, else the exit code of an input or usage
 * problem, printed.
 */
static int check_pair(check_args *a, cJSON **out)
{
	int rc;
	*out = NULL;
	if ((rc = cli_model_open(&a->cm)))
		return rc;
	if (a->hf_folder) {
		/* save_pretrained leaves a tied parameter out and from_pretrained's tie_weights fills it: not missing */
		size_t n;
		const ti_model_param *p = ti_model_params(a->cm.model, &n);
		for (size_t i = 0; i < n && a->o.ignore_count < CHECK_MAX_LIST; i++)
			if (p[i].tied_to)
				a->ignores[a->o.ignore_count++] = p[i].name;
	}
	ti_error err;
	ti_error_clear(&err);
	ti_source *src;
	if ((rc = cli_check_input(a->ckpt))) {
		ti_model_close(a->cm.model);
		return rc;
	}
	if (ti_source_open(a->ckpt, &src, &err)) {
		ti_model_close(a->cm.model);
		return cli_report_open_failure(a->ckpt, &err);
	}
	if ((rc = cli_check_source_safety(src, a->trust))) {
		ti_source_close(src);
		ti_model_close(a->cm.model);
		return rc;
	}
	ti_arena arena;
	ti_arena_init(&arena, (size_t)1 << 30);
	ti_check_report r;
	ti_status st = ti_check_load(a->cm.model, src, &a->o, &arena, &r, &err);
	ti_source_close(src);
	if (st) {
		rc = st == TI_E_INVALID ? cli_usage_error("check: %s", err.message) : cli_report(a->ckpt, &err);
		ti_arena_release(&arena);
		ti_model_close(a->cm.model);
		return rc;
	}
	const ti_model_report *rep = NULL;
	ti_error run_err;
	ti_error_clear(&run_err);
	ti_status run = r.message ? TI_OK : ti_model_run(a->cm.model, &rep, &run_err);

	cJSON *root = cli_json_root();
	cJSON_AddStringToObject(root, "model", a->cm.file);
	cJSON_AddStringToObject(root, "checkpoint", a->ckpt);
	cJSON_AddStringToObject(root, "class", r.class_name);
	cJSON_AddBoolToObject(root, "loads", r.message == NULL);
	cJSON_AddNumberToObject(root, "matched", (double)r.matched);
	cJSON_AddItemToObject(root, "missing", json_strings(r.missing, r.missing_count));
	cJSON_AddItemToObject(root, "unexpected", json_strings(r.unexpected, r.unexpected_count));
	cJSON *mm = cJSON_AddArrayToObject(root, "size_mismatches");
	for (size_t i = 0; i < r.mismatch_count; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r.mismatches[i].name);
		cJSON_AddItemToObject(o, "checkpoint", json_shape(r.mismatches[i].ckpt_ndim, r.mismatches[i].ckpt_shape));
		cJSON_AddItemToObject(o, "model", json_shape(r.mismatches[i].model_ndim, r.mismatches[i].model_shape));
		cJSON_AddItemToArray(mm, o);
	}
	cJSON_AddItemToObject(root, "notes", json_strings(r.notes, r.note_count));
	if (r.message)
		cJSON_AddStringToObject(root, "message", r.message);
	else
		cJSON_AddStringToObject(root, "result", r.result);
	if (rep || run) {
		cJSON *s = cJSON_AddObjectToObject(root, "shapes");
		bool ok = rep && !rep->failed;
		cJSON_AddBoolToObject(s, "ok", ok);
		if (ok)
			cJSON_AddNumberToObject(s, "steps", (double)rep->step_count);
		else
			cJSON_AddStringToObject(s, "error", rep ? rep->error.message : run_err.message);
	}
	cJSON *checks = cJSON_CreateArray();
	char title[256];
	add_check(checks, "load_state_dict", r.message ? CI_FAIL : CI_PASS, a->ckpt,
	          r.message ? load_title(&r, a->o.strict, title, sizeof(title)) : "loads", r.message ? r.message : r.result);
	bool tied = false;
	size_t np;
	const ti_model_param *params = ti_model_params(a->cm.model, &np);
	for (size_t i = 0; i < np && !tied; i++)
		tied = params[i].tied_to != NULL;
	if (tied || r.tie_error_count) {
		cJSON_AddItemToObject(root, "tie_errors", json_strings(r.tie_errors, r.tie_error_count));
		char *msg = joined(r.tie_errors, r.tie_error_count, "\n");
		snprintf(title, sizeof(title), "%zu tie%s the checkpoint breaks", r.tie_error_count,
		         r.tie_error_count == 1 ? "" : "s");
		add_check(checks, "ties", r.tie_error_count ? CI_FAIL : CI_PASS, a->ckpt,
		          r.tie_error_count ? title : "the model's ties hold", msg && *msg ? msg : NULL);
		free(msg);
	}
	if (a->o.dtype) {
		cJSON *d = cJSON_AddObjectToObject(root, "dtype");
		cJSON_AddStringToObject(d, "want", ti_dtype_name(a->o.dtype));
		cJSON_AddItemToObject(d, "other", json_strings(r.dtype_errors, r.dtype_error_count));
		char *msg = joined(r.dtype_errors, r.dtype_error_count, ", ");
		if (r.dtype_error_count)
			snprintf(title, sizeof(title), "%zu floating tensor%s not %s", r.dtype_error_count,
			         r.dtype_error_count == 1 ? " is" : "s are", ti_dtype_name(a->o.dtype));
		else
			snprintf(title, sizeof(title), "every floating tensor is %s", ti_dtype_name(a->o.dtype));
		add_check(checks, "dtype", r.dtype_error_count ? CI_FAIL : CI_PASS, a->ckpt, title, msg && *msg ? msg : NULL);
		free(msg);
	}
	if (a->max_params) {
		int64_t count = parameter_count(a->cm.model);
		char have[32], limit[32];
		cJSON *p = cJSON_AddObjectToObject(root, "parameters");
		cJSON_AddNumberToObject(p, "count", (double)count);
		cJSON_AddNumberToObject(p, "max", (double)a->max_params);
		snprintf(title, sizeof(title), "%s parameters, %s --max-params %s", cli_count(count, have, sizeof(have)),
		         count > a->max_params ? "more than" : "within", cli_count(a->max_params, limit, sizeof(limit)));
		add_check(checks, "max_params", count > a->max_params ? CI_FAIL : CI_PASS, a->cm.file, title, NULL);
	}
	bool shapes_ok = !r.message && !run && rep && !rep->failed;
	if (r.message)
		add_check(checks, "shapes", CI_SKIPPED, a->cm.file, "not propagated: the checkpoint does not load", NULL);
	else if (run)
		add_check(checks, "shapes", CI_ERROR, a->cm.file, "the description is invalid", run_err.message);
	else
		add_check(checks, "shapes", shapes_ok ? CI_PASS : CI_FAIL, a->cm.file,
		          shapes_ok ? "shapes propagate" : "a step raises", shapes_ok ? NULL : rep->error.message);
	rc = EXIT_OK;
	if (a->device_memory)
		rc = memory_gate(a, !r.message, shapes_ok, root, checks);
	cJSON_AddItemToObject(root, "checks", checks);
	if (run && run_err.code != TI_E_SHAPE) /* a bad description met while running: unreadable input */
		rc = rc ? rc : cli_report(a->cm.file, &run_err);
	ti_arena_release(&arena);
	ti_model_close(a->cm.model);
	a->cm.model = NULL;
	if (rc && rc != EXIT_NEGATIVE) {
		cJSON_Delete(root);
		return rc;
	}
	*out = root;
	return EXIT_OK;
}

/* Records an option as given, for a child (and for memory when it is memory's). */
static int remember(check_args *a, int id, const char *value)
{
	const cli_option *o = options;
	while (o->name && o->id != id)
		o++;
	if (a->pass_count + 2 > CHECK_MAX_PASS || a->memory_word_count + 2 > CHECK_MAX_PASS)
		return cli_usage_error("check: more than %d option words", CHECK_MAX_PASS);
	char *flag = a->flags[a->pass_count];
	snprintf(flag, sizeof(a->flags[0]), "--%s", o->name);
	a->pass[a->pass_count++] = flag;
	if (o->kind == OPT_VALUE)
		a->pass[a->pass_count++] = value;
	if (id > OPT_FIRST_MEMORY && id < OPT_FIRST_RUN) { /* --device-memory is added where it is parsed */
		a->memory_words[a->memory_word_count++] = flag;
		a->memory_words[a->memory_word_count++] = value;
	}
	return EXIT_OK;
}

static int parse(check_args *a, int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "check", false};
	const char *value;
	int id, rc;
	a->o.strict = true;
	a->o.renames = a->renames;
	a->o.ignores = a->ignores;
	while ((id = cli_next(&p, &value)) != -1) {
		if (id > OPT_HELP && id < OPT_FIRST_RUN && (rc = remember(a, id, value)))
			return rc;
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (!a->cm.file)
				a->cm.file = value;
			else if (!a->ckpt)
				a->ckpt = value;
			else
				return cli_usage_error("check: one MODEL.json and one CHECKPOINT");
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int url_rc = cli_url_option("check", id, value);
			if (url_rc)
				return url_rc;
			break;
		}
		case OPT_HELP:
			cli_help(help);
			return -1;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_NO_STRICT:
			a->o.strict = false;
			break;
		case OPT_KEY:
			a->o.key = value;
			break;
		case OPT_STRIP:
			a->o.strip_prefix = value;
			break;
		case OPT_ADD:
			a->o.add_prefix = value;
			break;
		case OPT_RENAME:
		case OPT_IGNORE: {
			size_t *n = id == OPT_RENAME ? &a->o.rename_count : &a->o.ignore_count;
			if (*n == CHECK_MAX_LIST)
				return cli_usage_error("check: more than %d --%s options", CHECK_MAX_LIST,
				                       id == OPT_RENAME ? "rename" : "ignore");
			(id == OPT_RENAME ? a->renames : a->ignores)[(*n)++] = value;
			break;
		}
		case OPT_TRUST:
			a->trust = true;
			break;
		case OPT_BIND:
			if ((rc = cli_model_bind(&a->cm, value)))
				return rc;
			break;
		case OPT_INPUT: { /* cli_model_input cuts its text: a copy, so that the words passed on stay whole */
			char *copy = a->input_copies[a->cm.input_count < CLI_MODEL_MAX_BINDS ? a->cm.input_count : 0];
			if (strlen(value) >= sizeof(a->input_copies[0]))
				return cli_usage_error("check: --input '%.40s...' is too long", value);
			strcpy(copy, value);
			if ((rc = cli_model_input(&a->cm, "check", copy)))
				return rc;
			break;
		}
		case OPT_DTYPE: {
			ti_dtype dt = ti_dtype_from_torch_name(value);
			if (dt != TI_DT_FLOAT16 && dt != TI_DT_BFLOAT16 && dt != TI_DT_FLOAT32 && dt != TI_DT_FLOAT64)
				return cli_usage_error("check: --dtype '%s' is not a floating dtype (float32, float16, bfloat16, ...)",
				                       value);
			a->o.dtype = dt;
			break;
		}
		case OPT_MAX_PARAMS:
			if ((rc = parse_count_suffix(value, &a->max_params)))
				return rc;
			break;
		case OPT_DEVICE_MEMORY: {
			int64_t bytes;
			const char *gpu;
			ti_error err;
			ti_error_clear(&err);
			if (ti_memory_parse_size(value, &bytes, &gpu, &err) || !bytes)
				return cli_usage_error("check: --device-memory %s", err.message[0] ? err.message : "must be more than 0");
			a->device_memory = value;
			a->memory_words[a->memory_word_count++] = "--device-memory";
			a->memory_words[a->memory_word_count++] = value;
			break;
		}
		case OPT_MODE:
			a->cm.training = !strcmp(value, "train"); /* the shapes run as the step does */
			break;
		case OPT_JUNIT:
			a->junit = value;
			break;
		case OPT_FORMAT:
			if (strcmp(value, "text") && strcmp(value, "github"))
				return cli_usage_error("check: --format is text or github, not '%s'", value);
			a->github = !strcmp(value, "github");
			break;
		case OPT_MANIFEST:
			a->manifest = value;
			break;
		case OPT_JOBS: {
			char *end;
			long n = strtol(value, &end, 10);
			if (end == value || *end || n < 1 || n > 64)
				return cli_usage_error("check: --jobs wants a number from 1 to 64, not '%s'", value);
			a->jobs = (int)n;
			break;
		}
		default: /* memory's: checked by memory itself */
			break;
		}
	}
	if (a->memory_word_count && !a->device_memory)
		return cli_usage_error("check: memory's options apply with --device-memory SIZE");
	return EXIT_OK;
}

int cmd_check(int argc, char **argv)
{
	check_args a; /* not static: a child this process forks runs cmd_check again, while a's words are its argv */
	memset(&a, 0, sizeof(a));
	int rc = parse(&a, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	if (a.manifest) {
		check_batch batch = {cmd_check, a.pass, a.pass_count, a.jobs, a.json, a.github, a.junit};
		if (a.cm.file)
			rc = cli_usage_error("check: --manifest lists the pairs: give no MODEL.json or CHECKPOINT with it");
		else
			rc = check_manifest(a.manifest, &batch);
		return rc;
	}
	char config_path[4096];
	if (a.cm.file && !a.ckpt && cli_hf_config_path(a.cm.file, config_path, sizeof(config_path)) != a.cm.file)
		a.ckpt = a.cm.file, a.hf_folder = true; /* a Hugging Face folder: its weights against its config.json's */
	if (!a.cm.file || !a.ckpt)
		return cli_usage_error("check: give MODEL.json and CHECKPOINT, or a Hugging Face FOLDER "
		                       "(see 'tinspect check --help')");
	if (a.junit || a.github) /* the pair in a child, so that every failure becomes a test case */
		return check_pairs_in_children(&(check_pair_spec){.model = a.cm.file, .checkpoint = a.ckpt}, 1, NULL,
		                               &(check_batch){cmd_check, a.pass, a.pass_count, 1, a.json, a.github, a.junit});
	cJSON *report;
	if ((rc = check_pair(&a, &report)))
		return rc;
	rc = check_report_status(report);
	if (a.json)
		cli_json_print(report);
	else {
		check_report_text(report, stdout, stderr);
		cli_print_fetched();
		cJSON_Delete(report);
	}
	return rc;
}
