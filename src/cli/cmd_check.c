/*
 * cmd_check.c - `tinspect check MODEL.json CHECKPOINT`: would
 * model.load_state_dict(checkpoint) succeed, in PyTorch's words, and do the
 * shapes still propagate. For CI: exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"
#include "tinspect/check.h"

enum {
	OPT_HELP = 1, OPT_JSON, OPT_NO_STRICT, OPT_KEY, OPT_STRIP, OPT_ADD, OPT_RENAME, OPT_IGNORE, OPT_BIND, OPT_INPUT,
	OPT_TRUST
};

#define CHECK_MAX_LIST 64 /* --rename and --ignore, each */

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"no-strict", 0, OPT_FLAG, OPT_NO_STRICT},
	{"key", 0, OPT_VALUE, OPT_KEY},
	{"strip-prefix", 0, OPT_VALUE, OPT_STRIP},
	{"add-prefix", 0, OPT_VALUE, OPT_ADD},
	{"rename", 0, OPT_VALUE, OPT_RENAME},
	{"ignore", 0, OPT_VALUE, OPT_IGNORE},
	{"bind", 0, OPT_VALUE, OPT_BIND},
	{"input", 0, OPT_VALUE, OPT_INPUT},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect check MODEL.json CHECKPOINT [options]\n"
	"\n"
	"Say whether CHECKPOINT loads into the described model as\n"
	"model.load_state_dict(state_dict, strict=True) would: missing keys,\n"
	"unexpected keys and size mismatches, in PyTorch's order and words; then\n"
	"propagate shapes through the model, as `tinspect shapes` does. A state\n"
	"dict nested under state_dict, model, model_state_dict, module, ema or net is\n"
	"found, and a module. (DDP) or _orig_mod. (torch.compile) prefix on every key\n"
	"taken off, each with a note. Exit 0 when it loads and runs, 1 when not.\n"
	"\n"
	"options:\n"
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
	"  --json             print one JSON document\n"
	"  -h, --help         show this help\n";

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

static int print_json(const char *model, const char *ckpt, const ti_check_report *r, const ti_model_report *rep,
                      const ti_error *run_err)
{
	cJSON *root = cli_json_root();
	cJSON_AddStringToObject(root, "model", model);
	cJSON_AddStringToObject(root, "checkpoint", ckpt);
	cJSON_AddStringToObject(root, "class", r->class_name);
	cJSON_AddBoolToObject(root, "loads", r->message == NULL);
	cJSON_AddNumberToObject(root, "matched", (double)r->matched);
	cJSON_AddItemToObject(root, "missing", json_strings(r->missing, r->missing_count));
	cJSON_AddItemToObject(root, "unexpected", json_strings(r->unexpected, r->unexpected_count));
	cJSON *mm = cJSON_AddArrayToObject(root, "size_mismatches");
	for (size_t i = 0; i < r->mismatch_count; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->mismatches[i].name);
		cJSON_AddItemToObject(o, "checkpoint", json_shape(r->mismatches[i].ckpt_ndim, r->mismatches[i].ckpt_shape));
		cJSON_AddItemToObject(o, "model", json_shape(r->mismatches[i].model_ndim, r->mismatches[i].model_shape));
		cJSON_AddItemToArray(mm, o);
	}
	cJSON_AddItemToObject(root, "notes", json_strings(r->notes, r->note_count));
	if (r->message)
		cJSON_AddStringToObject(root, "message", r->message);
	else
		cJSON_AddStringToObject(root, "result", r->result);
	if (rep || run_err) {
		cJSON *s = cJSON_AddObjectToObject(root, "shapes");
		bool ok = rep && !rep->failed;
		cJSON_AddBoolToObject(s, "ok", ok);
		if (!ok)
			cJSON_AddStringToObject(s, "error", rep ? rep->error.message : run_err->message);
	}
	return cli_json_print(root);
}

int cmd_check(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "check", false};
	cli_model cm = {0};
	const char *ckpt = NULL, *value;
	const char *renames[CHECK_MAX_LIST], *ignores[CHECK_MAX_LIST];
	ti_check_options o = {true, NULL, NULL, NULL, renames, 0, ignores, 0};
	bool json = false, trust = false;
	int id, rc;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (!cm.file)
				cm.file = value;
			else if (!ckpt)
				ckpt = value;
			else
				return cli_usage_error("check: one MODEL.json and one CHECKPOINT");
			break;
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON:
			json = true;
			break;
		case OPT_NO_STRICT:
			o.strict = false;
			break;
		case OPT_KEY:
			o.key = value;
			break;
		case OPT_STRIP:
			o.strip_prefix = value;
			break;
		case OPT_ADD:
			o.add_prefix = value;
			break;
		case OPT_RENAME:
		case OPT_IGNORE: {
			size_t *n = id == OPT_RENAME ? &o.rename_count : &o.ignore_count;
			if (*n == CHECK_MAX_LIST)
				return cli_usage_error("check: more than %d --%s options", CHECK_MAX_LIST,
				                       id == OPT_RENAME ? "rename" : "ignore");
			(id == OPT_RENAME ? renames : ignores)[(*n)++] = value;
			break;
		}
		case OPT_TRUST:
			trust = true;
			break;
		case OPT_BIND:
			if ((rc = cli_model_bind(&cm, value)))
				return rc;
			break;
		case OPT_INPUT:
			if ((rc = cli_model_input(&cm, "check", (char *)value)))
				return rc;
			break;
		}
	}
	if (!cm.file || !ckpt)
		return cli_usage_error("check: give MODEL.json and CHECKPOINT (see 'tinspect check --help')");
	if ((rc = cli_model_open(&cm)))
		return rc;
	ti_error err;
	ti_error_clear(&err);
	ti_source *src;
	if (ti_source_open(ckpt, &src, &err)) {
		ti_model_close(cm.model);
		return cli_report_open_failure(ckpt, &err);
	}
	if ((rc = cli_check_source_safety(src, trust))) {
		ti_source_close(src);
		ti_model_close(cm.model);
		return rc;
	}
	ti_arena arena;
	ti_arena_init(&arena, (size_t)1 << 30);
	ti_check_report r;
	ti_status st = ti_check_load(cm.model, src, &o, &arena, &r, &err);
	ti_source_close(src);
	if (st) {
		rc = st == TI_E_INVALID ? cli_usage_error("check: %s", err.message) : cli_report(ckpt, &err);
		ti_arena_release(&arena);
		ti_model_close(cm.model);
		return rc;
	}
	const ti_model_report *rep = NULL;
	ti_error run_err;
	ti_error_clear(&run_err);
	ti_status run = r.message ? TI_OK : ti_model_run(cm.model, &rep, &run_err);
	if (json) {
		rc = print_json(cm.file, ckpt, &r, rep, run ? &run_err : NULL);
	} else {
		printf("%s\n", r.message ? r.message : r.result);
		for (size_t i = 0; i < r.note_count; i++)
			printf("note: %s\n", r.notes[i]);
		if (!r.message && !run && !rep->failed)
			printf("%s: %zu tensors load into %s (%s); shapes propagate through its %zu steps\n", ckpt, r.matched,
			       cm.file, r.class_name, rep->step_count);
		fflush(stdout);
		rc = EXIT_OK;
	}
	if (!rc && r.message)
		rc = EXIT_NEGATIVE;
	else if (!rc && run)
		rc = cli_report(cm.file, &run_err);
	else if (!rc && rep && rep->failed)
		rc = cli_report(cm.file, &rep->error);
	ti_arena_release(&arena);
	ti_model_close(cm.model);
	return rc;
}
