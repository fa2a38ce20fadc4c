/*
 * cmd_run.c - `tinspect run MODEL.json`: execute a described model for real
 * on the CPU (tinspect/run.h). One row per step: its outputs' real shapes,
 * checked against the propagated ones, and their statistics; the outputs
 * (or every step's) written to safetensors with --save.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/outfile.h"
#include "cli/output.h"
#include "tinspect/check.h"
#include "tinspect/memory.h"
#include "tinspect/run.h"
#include "tinspect/safetensors.h"

enum {
	OPT_HELP = 1, OPT_JSON, OPT_BIND, OPT_INPUT, OPT_FILL, OPT_WEIGHTS, OPT_SEED, OPT_SAVE, OPT_SAVE_ALL,
	OPT_THREADS, OPT_MAX_MEMORY, OPT_DEPTH, OPT_LIST, OPT_FORCE, OPT_DTYPE, OPT_NO_STRICT
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"bind", 0, OPT_VALUE, OPT_BIND},
	{"input", 0, OPT_VALUE, OPT_INPUT},
	{"fill", 0, OPT_VALUE, OPT_FILL},
	{"weights", 0, OPT_VALUE, OPT_WEIGHTS},
	{"seed", 0, OPT_VALUE, OPT_SEED},
	{"save", 0, OPT_VALUE, OPT_SAVE},
	{"save-all", 0, OPT_FLAG, OPT_SAVE_ALL},
	{"threads", 0, OPT_VALUE, OPT_THREADS},
	{"max-memory", 0, OPT_VALUE, OPT_MAX_MEMORY},
	{"depth", 0, OPT_VALUE, OPT_DEPTH},
	{"list-kernels", 0, OPT_FLAG, OPT_LIST},
	{"force", 'f', OPT_FLAG, OPT_FORCE},
	{"dtype", 0, OPT_VALUE, OPT_DTYPE},
	{"no-strict", 0, OPT_FLAG, OPT_NO_STRICT},
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect run MODEL.json [options]\n"
	"\n"
	"Execute a described model for real on the CPU (OpenBLAS behind Linear,\n"
	"matmul, attention and convolution; float16, bfloat16 and float64 values\n"
	"computed in float32 and rounded back after each operator): each step's\n"
	"outputs with their real shapes, checked against shape propagation, and\n"
	"statistics. Weights are filled (--fill) or loaded (--weights) as\n"
	"load_state_dict would bind them.\n"
	"\n"
	"options:\n"
	"  --input NAME=SPEC\n"
	"                  the input's values: a fill policy (zeros, randn, ones, ...;\n"
	"                  default randn, zeros for integers) or a tensor of a file:\n"
	"                  FILE.npy, FILE.npz:NAME, FILE.safetensors:NAME, any\n"
	"                  checkpoint's FILE:NAME (its shape and dtype bind the\n"
	"                  description's); repeatable\n"
	"  --dtype DT      floating parameters, buffers and inputs in DT (float16,\n"
	"                  bfloat16, float64): as model.to(DT) and inputs .to(DT)\n"
	"  --bind NAME=N   give symbol NAME the value N (repeatable)\n"
	"  --fill POLICY   parameters' values without --weights (default init: as\n"
	"                  PyTorch initialises them; see materialize --fill)\n"
	"  --weights CKPT  load parameters from a checkpoint, names bound as\n"
	"                  load_state_dict binds them; a file that load_state_dict\n"
	"                  refuses gets check's words (every missing, unexpected and\n"
	"                  mismatched name) and status 1\n"
	"  --no-strict     load_state_dict(strict=False): missing and unexpected names\n"
	"                  pass (a parameter with no tensor is still an error)\n"
	"  --seed S        seed of the random fills (default 0)\n"
	"  --save OUT.safetensors\n"
	"                  write the outputs (under their names), atomically\n"
	"  --save-all      with --save: every step's outputs too (\"step.N.NAME\")\n"
	"  -f, --force     overwrite OUT\n"
	"  --threads N     threads for OpenBLAS and the kernels (default: every core)\n"
	"  --max-memory SIZE\n"
	"                  refuse (exit 4) before allocating when the run's planned\n"
	"                  peak passes SIZE (default: the machine's memory)\n"
	"  --depth N       show nested calls, with statistics, down to depth N\n"
	"                  (default 1: the graph's steps only)\n"
	"  --json          print one JSON document instead of a table\n"
	"  --list-kernels  list the operators and module types that have CPU kernels\n"
	"  -h, --help      show this help\n";

typedef struct args {
	cli_model cm;
	ti_run_options o;
	ti_run_input inputs[CLI_MODEL_MAX_BINDS];
	ti_source *sources[CLI_MODEL_MAX_BINDS];
	char shape_specs[CLI_MODEL_MAX_BINDS][256];
	const char *input_values[CLI_MODEL_MAX_BINDS];
	const char *input_names[CLI_MODEL_MAX_BINDS];
	int input_count;
	const char *weights, *save;
	bool save_all, json, force, no_strict;
	int depth;
} args;

/* --list-kernels: "operators:" then "modules:", names wrapped at 78 columns. */
typedef struct lister {
	int column;
	int section; /* -1 before the first name, 0 operators, 1 modules */
} lister;

static void list_kernel(void *user, const char *name, bool module)
{
	lister *l = user;
	if (l->section != (int)module) {
		if (l->section >= 0)
			putchar('\n');
		l->column = printf("%s", module ? "modules:" : "operators:");
		l->section = module;
	}
	int width = (int)strlen(name) + 1;
	if (l->column + width > 78) {
		printf("\n ");
		l->column = 1;
	}
	l->column += printf(" %s", name);
}

/* --input NAME=POLICY or NAME=FILE[:TENSOR] (any readable file): a tensor input also gives its shape to propagation. */
static int parse_input(args *a, char *text)
{
	char *eq = strchr(text, '=');
	if (!eq || eq == text || !eq[1])
		return cli_usage_error("run: --input wants NAME=POLICY or NAME=FILE[:TENSOR], not '%s'", text);
	if (a->input_count == CLI_MODEL_MAX_BINDS)
		return cli_usage_error("run: more than %d --input options", CLI_MODEL_MAX_BINDS);
	*eq = '\0';
	for (int i = 0; i < a->input_count; i++)
		if (!strcmp(a->input_names[i], text))
			return cli_usage_error("run: --input %s given twice; give it once", text);
	a->input_names[a->input_count] = text;
	a->input_values[a->input_count++] = eq + 1;
	return EXIT_OK;
}

static int open_inputs(args *a)
{
	for (int i = 0; i < a->input_count; i++) {
		const char *value = a->input_values[i];
		ti_run_input *in = &a->inputs[a->o.input_count];
		ti_error err;
		ti_error_clear(&err);
		in->name = a->input_names[i];
		if (ti_fill_parse(value, &in->fill, &err) == TI_OK) {
			in->kind = TI_RUN_INPUT_FILL;
			a->o.input_count++;
			continue;
		}
		char path[4096];
		snprintf(path, sizeof(path), "%s", value);
		char *colon = strrchr(path, ':');
		const char *tensor = NULL;
		if (colon && !strstr(colon, "/")) {
			*colon = '\0';
			tensor = colon + 1;
		}
		ti_source *src;
		if (ti_source_open(path, &src, &err))
			return cli_report(path, &err);
		a->sources[i] = src;
		size_t count = ti_source_tensor_count(src), found = count;
		for (size_t k = 0; k < count; k++)
			if (tensor ? !strcmp(ti_source_tensor_at(src, k)->name, tensor) : count == 1)
				found = k;
		if (found == count) {
			fprintf(stderr, "tinspect: %s: %s\n", path,
			        tensor ? "no such tensor (give FILE:TENSOR)" : "holds several tensors: give FILE:TENSOR");
			return EXIT_USAGE;
		}
		const ti_source_tensor *t = ti_source_tensor_at(src, found);
		if (ti_dtype_is_sub_byte(t->dtype)) /* packed float4/float6 of safetensors: torch has no such dtype */
			return cli_report(path, (TI_FAIL(&err, TI_E_UNSUPPORTED, "'%s' is %s, which no kernel computes with",
			                                 t->name, ti_dtype_name(t->dtype)), &err));
		in->kind = TI_RUN_INPUT_TENSOR;
		in->source = src;
		in->tensor = found;
		/* its shape is the input's, as `shapes --input NAME=SHAPE:DTYPE` would give it */
		char *spec = a->shape_specs[i];
		size_t n = 0;
		for (int d = 0; d < t->ndim && n < 200; d++)
			n += (size_t)snprintf(spec + n, 256 - n, "%s%" PRId64, d ? "x" : "", t->shape[d]);
		snprintf(spec + n, 256 - n, ":%s", ti_dtype_name(t->dtype));
		a->cm.input_names[a->cm.input_count] = in->name;
		a->cm.input_specs[a->cm.input_count++] = spec;
		a->o.input_count++;
	}
	a->o.inputs = a->inputs;
	return EXIT_OK;
}

/* ---- output ---- */

static const char *number(double v, char *buf, size_t size)
{
	snprintf(buf, size, "%.6g", v);
	return buf;
}

static const cli_column columns[] = {
	{"STEP", CLI_LEFT, 0}, {"LAYER", CLI_LEFT, 40}, {"OUTPUT SHAPE", CLI_LEFT, 0}, {"", CLI_LEFT, 0},
	{"MIN", CLI_RIGHT, 0}, {"MAX", CLI_RIGHT, 0},   {"MEAN", CLI_RIGHT, 0},         {"STD", CLI_RIGHT, 0},
	{"NAN/INF", CLI_RIGHT, 0},
};

static int print_table(const ti_run_report *r, int depth)
{
	cli_table t;
	cli_table_init(&t, columns, 9);
	for (size_t i = 0; i < r->step_count; i++) {
		const ti_run_step *rs = &r->steps[i];
		const ti_model_step *s = rs->step;
		if (s->depth >= depth)
			continue;
		for (int k = 0; k < (rs->output_count ? rs->output_count : 1); k++) {
			char index[16] = "", label[512] = "", shape[256] = "-", check[8] = "", lo[32] = "", hi[32] = "",
			     mean[32] = "", sd[32] = "", bad[48] = "";
			if (!k && !s->depth)
				snprintf(index, sizeof(index), "%d", s->index);
			if (!k)
				snprintf(label, sizeof(label), "%*s%s%s%s%s", 2 * s->depth, "", s->target && *s->target ? s->target
				         : "(model)", s->type ? " (" : "", s->type ? s->type : "", s->type ? ")" : "");
			if (rs->output_count) {
				const ti_run_tensor *o = &rs->outputs[k];
				cli_dims(o->shape, o->ndim, shape, sizeof(shape));
				if (o->dtype != TI_DT_FLOAT32) /* float32 goes without saying, as in `shapes` */
					snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), " %s", ti_dtype_name(o->dtype));
				snprintf(check, sizeof(check), "%s", o->checked ? "ok" : "-");
				if (o->stats.count || o->stats.nan || o->stats.inf) {
					number(o->stats.min, lo, sizeof(lo));
					number(o->stats.max, hi, sizeof(hi));
					number(o->stats.mean, mean, sizeof(mean));
					number(o->stats.std, sd, sizeof(sd));
					snprintf(bad, sizeof(bad), "%" PRId64 "/%" PRId64, o->stats.nan, o->stats.inf);
				}
			}
			const char *row[] = {index, label, shape, check, lo, hi, mean, sd, bad};
			cli_table_add(&t, row);
		}
	}
	return cli_table_flush(&t);
}

static cJSON *json_tensor(const ti_run_tensor *o)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", o->name ? o->name : "");
	cJSON *shape = cJSON_AddArrayToObject(j, "shape");
	for (int d = 0; d < o->ndim; d++)
		cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)o->shape[d]));
	cJSON_AddStringToObject(j, "dtype", ti_dtype_name(o->dtype));
	cJSON_AddBoolToObject(j, "checked", o->checked);
	cJSON_AddNumberToObject(j, "min", o->stats.min);
	cJSON_AddNumberToObject(j, "max", o->stats.max);
	cJSON_AddNumberToObject(j, "mean", o->stats.mean);
	cJSON_AddNumberToObject(j, "std", o->stats.std);
	cJSON_AddNumberToObject(j, "nan", (double)o->stats.nan);
	cJSON_AddNumberToObject(j, "inf", (double)o->stats.inf);
	return j;
}

static int print_json(const char *file, const ti_run_report *r, double seconds, int depth)
{
	cli_json_doc d;
	cli_json_begin(&d, stdout);
	cli_json_members(&d, cli_json_root()); /* "schema", as every command's document begins */
	cli_json_member(&d, "file", cJSON_CreateString(file));
	cli_json_array_begin(&d, "steps");
	for (size_t i = 0; i < r->step_count; i++) {
		const ti_run_step *rs = &r->steps[i];
		if (rs->step->depth >= depth)
			continue; /* as the table: rows down to --depth, the ones with statistics */
		cJSON *row = cJSON_CreateObject();
		cJSON_AddNumberToObject(row, "index", rs->step->index);
		cJSON_AddNumberToObject(row, "depth", rs->step->depth);
		cJSON_AddStringToObject(row, "target", rs->step->target ? rs->step->target : "");
		if (rs->step->type)
			cJSON_AddStringToObject(row, "type", rs->step->type);
		cJSON *outs = cJSON_AddArrayToObject(row, "outputs");
		for (int k = 0; k < rs->output_count; k++)
			cJSON_AddItemToArray(outs, json_tensor(&rs->outputs[k]));
		cli_json_array_row(&d, row);
	}
	cli_json_array_end(&d);
	cJSON *outs = cJSON_CreateArray();
	for (size_t i = 0; i < r->output_count; i++)
		cJSON_AddItemToArray(outs, json_tensor(&r->outputs[i]));
	cli_json_member(&d, "outputs", outs);
	cli_json_member(&d, "peak_bytes", cJSON_CreateNumber((double)r->peak_bytes));
	char buf[64];
	cli_json_member(&d, "seconds", cJSON_CreateRaw(cli_json_seconds(seconds, buf, sizeof(buf))));
	cli_json_member(&d, "forward_seconds", cJSON_CreateRaw(cli_json_seconds(r->forward_seconds, buf, sizeof(buf))));
	if (r->mismatch)
		cli_json_member(&d, "mismatch", cJSON_CreateString(r->mismatch));
	return cli_json_end(&d);
}

/* --save: the outputs under their names; --save-all: every step's too, as "step.ROW.NAME". */
static int save(const args *a, const ti_run_report *r)
{
	size_t cap = r->output_count;
	if (a->save_all)
		for (size_t i = 0; i < r->step_count; i++)
			cap += (size_t)r->steps[i].output_count;
	ti_st_spec *specs = calloc(cap + 1, sizeof(*specs));
	const ti_run_tensor **tensors = calloc(cap + 1, sizeof(*tensors));
	char **names = calloc(cap + 1, sizeof(*names));
	if (!specs || !tensors || !names) {
		free(specs), free(tensors), free(names);
		fprintf(stderr, "tinspect: out of memory\n");
		return EXIT_RESOURCE;
	}
	size_t n = 0;
	for (size_t i = 0; i < r->output_count; i++) {
		tensors[n] = &r->outputs[i];
		names[n] = strdup(r->outputs[i].name ? r->outputs[i].name : "output");
		n++;
	}
	for (size_t i = 0; a->save_all && i < r->step_count; i++)
		for (int k = 0; k < r->steps[i].output_count; k++) {
			const ti_run_tensor *t = &r->steps[i].outputs[k];
			if (!t->data)
				continue;
			size_t len = strlen(t->name ? t->name : "") + 32;
			names[n] = malloc(len);
			if (names[n])
				snprintf(names[n], len, "step.%zu.%s", i, t->name ? t->name : "out");
			tensors[n++] = t;
		}
	int rc = EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		if (!names[i]) {
			fprintf(stderr, "tinspect: out of memory\n");
			rc = EXIT_RESOURCE;
			goto done;
		}
		specs[i] = (ti_st_spec){names[i], tensors[i]->dtype, tensors[i]->ndim, tensors[i]->shape};
	}
	cli_outfile out;
	const char *inputs[2] = {a->cm.file, a->weights};
	if ((rc = cli_outfile_open(&out, a->save, inputs, a->weights ? 2 : 1, a->force)))
		goto done;
	ti_error err;
	ti_error_clear(&err);
	ti_st_writer *w = NULL;
	ti_status st = ti_st_writer_begin(out.fd, specs, n, NULL, 0, TI_ST_ORDER_AS_GIVEN, &w, &err);
	for (size_t k = 0; !st && k < ti_st_writer_count(w); k++) {
		size_t i = ti_st_writer_tensor(w, k)->index;
		st = ti_st_writer_put(w, i, tensors[i]->data, tensors[i]->nbytes, &err);
	}
	if (!st)
		st = ti_st_writer_end(w, &err);
	ti_st_writer_free(w);
	if (st) {
		cli_outfile_abort(&out);
		rc = cli_report(a->save, &err);
	} else {
		rc = cli_outfile_commit(&out);
	}
done:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(specs);
	free(tensors);
	return rc;
}

static int parse_count(const char *option, const char *value, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(value, &end, 10);
	if (errno || end == value || *end || v < lo || v > hi)
		return cli_usage_error("run: %s wants a number from %lld to %lld, not '%s'", option, (long long)lo,
		                       (long long)hi, value);
	*out = v;
	return EXIT_OK;
}

/*
 * --weights: does the file load, as load_state_dict(strict=...) says (check's
 * verdict)? When it does not, PyTorch's words and check's notes, and status 1,
 * before anything runs.
 */
static int weights_load(const args *a, ti_source *weights)
{
	ti_arena arena;
	ti_arena_init(&arena, (size_t)1 << 30);
	ti_check_options co = {.strict = !a->no_strict, .dtype = TI_DT_INVALID};
	ti_check_report r;
	ti_error err;
	ti_error_clear(&err);
	int rc = EXIT_OK;
	if (ti_check_load(a->cm.model, weights, &co, &arena, &r, &err))
		rc = cli_report(a->weights, &err);
	else if (r.message && a->json) {
		cJSON *root = cli_json_root();
		cJSON_AddStringToObject(root, "file", a->cm.file);
		cJSON_AddStringToObject(root, "weights", a->weights);
		cJSON_AddBoolToObject(root, "loads", false);
		cJSON_AddStringToObject(root, "message", r.message);
		cJSON *notes = cJSON_AddArrayToObject(root, "notes");
		for (size_t i = 0; i < r.note_count; i++)
			cJSON_AddItemToArray(notes, cJSON_CreateString(r.notes[i]));
		rc = cli_json_print(root);
		rc = rc ? rc : EXIT_NEGATIVE;
	} else if (r.message) {
		printf("%s\n", r.message);
		for (size_t i = 0; i < r.note_count; i++)
			printf("note: %s\n", r.notes[i]);
		fprintf(stderr, "tinspect: run: %s does not load into %s (as 'tinspect check' says); nothing ran\n",
		        a->weights, a->cm.file);
		rc = EXIT_NEGATIVE;
	}
	ti_arena_release(&arena);
	return rc;
}

static int execute(args *a)
{
	int rc;
	ti_error err;
	ti_error_clear(&err);
	if ((rc = open_inputs(a)) || (rc = cli_model_open(&a->cm)))
		return rc;
	ti_source *weights = NULL;
	if (a->weights) {
		if (ti_source_open(a->weights, &weights, &err))
			return cli_report(a->weights, &err);
		a->o.weights = weights;
		if ((rc = weights_load(a, weights))) {
			ti_source_close(weights);
			return rc;
		}
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ti_run *run = NULL;
	const ti_run_report *r = NULL;
	ti_status st = ti_run_execute(a->cm.model, &a->o, &run, &r, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (st) {
		rc = cli_report(a->cm.file, &err);
		if (st == TI_E_LIMIT) /* it would not fit: a resource failure, said before anything was allocated */
			rc = EXIT_RESOURCE;
		goto done;
	}
	if (a->json) {
		rc = print_json(a->cm.file, r, seconds, a->depth);
	} else {
		rc = print_table(r, a->depth);
		char peak[32]; /* no time here: --json has it (seconds, forward_seconds), a table stays reproducible */
		printf("planned peak: %s\n", cli_bytes((int64_t)r->peak_bytes, peak, sizeof(peak)));
	}
	if (r->mismatch) {
		fprintf(stderr, "tinspect: %s: %s\n", a->cm.file, r->mismatch);
		rc = EXIT_NEGATIVE;
		goto done;
	}
	if (!rc && a->save)
		rc = save(a, r);
done:
	ti_run_free(run);
	ti_source_close(weights);
	return rc;
}

int cmd_run(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "run", false};
	args a;
	memset(&a, 0, sizeof(a));
	a.o.fill = ti_fill_constant(TI_FILL_INIT);
	a.depth = 1;
	const char *value;
	int id, rc = EXIT_OK;
	ti_error err;
	while (rc == EXIT_OK && (id = cli_next(&p, &value)) != -1) {
		int64_t n;
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (a.cm.file)
				return cli_usage_error("run: one MODEL.json at a time");
			a.cm.file = value;
			break;
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON: a.json = true; break;
		case OPT_SAVE_ALL: a.save_all = true; break;
		case OPT_FORCE: a.force = true; break;
		case OPT_LIST:
		{
			lister l = {0, -1};
			ti_run_each_kernel(list_kernel, &l);
			putchar('\n');
			return EXIT_OK;
		}
		case OPT_BIND: rc = cli_model_bind(&a.cm, value); break;
		case OPT_INPUT: rc = parse_input(&a, (char *)value); break;
		case OPT_WEIGHTS: a.weights = value; break;
		case OPT_NO_STRICT: a.no_strict = true; break;
		case OPT_SAVE: a.save = value; break;
		case OPT_FILL:
			if (ti_fill_parse(value, &a.o.fill, &err) || a.o.fill.kind == TI_FILL_LOAD)
				return cli_usage_error("run: --fill: %s", a.o.fill.kind == TI_FILL_LOAD
				                                              ? "'load' needs --weights" : err.message);
			break;
		case OPT_SEED:
			rc = parse_count("--seed", value, 0, INT64_MAX, &n);
			a.o.seed = (uint64_t)n;
			break;
		case OPT_THREADS:
			rc = parse_count("--threads", value, 1, 1024, &n);
			a.o.threads = (int)n;
			break;
		case OPT_DEPTH:
			rc = parse_count("--depth", value, 1, 1000, &n);
			a.depth = (int)n;
			break;
		case OPT_DTYPE:
			a.cm.default_dtype = ti_dtype_from_torch_name(value);
			a.cm.cast_floating = true; /* model.to(DT), the inputs .to(DT) */
			if (a.cm.default_dtype != TI_DT_FLOAT32 && a.cm.default_dtype != TI_DT_FLOAT16 &&
			    a.cm.default_dtype != TI_DT_BFLOAT16 && a.cm.default_dtype != TI_DT_FLOAT64)
				return cli_usage_error("run: --dtype '%s' is not a floating dtype (float32, float16, bfloat16, "
				                       "float64)", value);
			break;
		case OPT_MAX_MEMORY: {
			int64_t bytes;
			const char *gpu = NULL;
			if (ti_memory_parse_size(value, &bytes, &gpu, &err) || gpu || bytes <= 0)
				return cli_usage_error("run: --max-memory wants a size (512M, 16G), not '%s'", value);
			a.o.max_memory = (size_t)bytes;
			break;
		}
		}
	}
	if (rc)
		return rc;
	if (!a.cm.file)
		return cli_usage_error("run: no MODEL.json given (see 'tinspect run --help')");
	if (a.save_all && !a.save)
		return cli_usage_error("run: --save-all needs --save OUT.safetensors");
	a.o.keep_all = a.save_all;
	a.o.stats_depth = a.depth;
	rc = execute(&a);
	for (int i = 0; i < CLI_MODEL_MAX_BINDS; i++)
		ti_source_close(a.sources[i]);
	if (a.cm.model)
		ti_model_close(a.cm.model);
	return rc;
}
