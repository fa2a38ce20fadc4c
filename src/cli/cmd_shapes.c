/*
 * cmd_shapes.c - `tinspect shapes MODEL.json`: shape propagation through a
 * described model, as a forward pass on the meta device. A table in the
 * spirit of torchinfo, or one JSON document with --json (keys documented in
 * tinspect(1): JSON OUTPUT, schema 1).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"

enum { OPT_HELP = 1, OPT_JSON, OPT_BIND, OPT_DEPTH, OPT_RAW, OPT_INPUT, OPT_MODE };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"bind", 0, OPT_VALUE, OPT_BIND},
	{"depth", 0, OPT_VALUE, OPT_DEPTH},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	{"input", 0, OPT_VALUE, OPT_INPUT},
	{"mode", 0, OPT_VALUE, OPT_MODE},
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect shapes MODEL.json [options]\n"
	"\n"
	"Propagate shapes through a model described in JSON, as building it on the\n"
	"meta device and calling it on a meta input would: each step's output\n"
	"shapes, parameters and operation counts, then totals. Symbolic sizes\n"
	"(\"N\") stay formulas unless bound.\n"
	"\n"
	"options:\n"
	"  --input NAME=SHAPE[:DTYPE]\n"
	"                  the input's shape (8x3x224x224 or N,3,224,224) and dtype,\n"
	"                  in place of the description's (repeatable)\n"
	"  --bind NAME=N   give symbol NAME, one the description uses, the value N\n"
	"                  (0 to 2^40; repeatable, once per symbol)\n"
	"  --mode eval|train\n"
	"                  run modules as after model.eval() (default) or model.train():\n"
	"                  batch statistics, active dropout; rows that differ get a *\n"
	"  --depth N       show nested module calls down to depth N (default: all)\n"
	"  --json          print one JSON document instead of tables\n"
	"  --raw           print counts and sizes as exact integers, not 25.6 M\n"
	"  -h, --help      show this help\n";

/* ---- text ---- */

static void step_label(const ti_model_step *s, char *buf, size_t size)
{
	const char *mark = s->mode_dependent ? " *" : "";
	if (s->kind == TI_STEP_OPAQUE && s->type)
		snprintf(buf, size, "%*s%s (%s, opaque)%s", 2 * s->depth, "", s->target, s->type, mark);
	else if (s->kind == TI_STEP_OPAQUE)
		snprintf(buf, size, "%*s%s (opaque)%s", 2 * s->depth, "", s->target, mark);
	else if (s->kind == TI_STEP_ATTR)
		snprintf(buf, size, "%*s%s (attr)", 2 * s->depth, "", s->target);
	else if (s->is_call)
		snprintf(buf, size, "%*s%s (%s)%s", 2 * s->depth, "", *s->target ? s->target : "(model)", s->type, mark);
	else
		snprintf(buf, size, "%*s%s%s", 2 * s->depth, "", s->target, mark);
}

static void step_outputs(const ti_model_step *s, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < s->output_count && n + 4 < size; i++) {
		if (i)
			n += (size_t)snprintf(buf + n, size - n, ", ");
		if (n < size)
			cli_shape_text(s->outputs[i].shape, s->outputs[i].ndim, buf + n, size - n);
		n += strlen(buf + n);
	}
	if (!s->output_count)
		snprintf(buf, size, "-");
}

static void step_names(const ti_model_step *s, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < s->out_count && n + 2 < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "", s->out_names[i]);
}

static const cli_column columns[] = {
	{"STEP", CLI_LEFT, 0},   {"LAYER", CLI_LEFT, 48}, {"OUT", CLI_LEFT, 24},   {"OUTPUT SHAPE", CLI_LEFT, 0},
	{"PARAMS", CLI_RIGHT, 0}, {"MACS", CLI_RIGHT, 0},  {"FLOPS", CLI_LEFT, 0},
};

static int print_table(const ti_model_report *rep, int depth)
{
	char index[16], label[1024], names[1024], shape[1024], params[32], macs[512], flops[512];
	cli_table t;
	cli_table_init(&t, columns, 7);
	for (size_t i = 0; i < rep->step_count; i++) {
		const ti_model_step *s = &rep->steps[i];
		if (depth && s->depth >= depth)
			continue;
		index[0] = '\0';
		if (s->depth == 0)
			snprintf(index, sizeof(index), "%d", s->index);
		step_label(s, label, sizeof(label));
		step_names(s, names, sizeof(names));
		step_outputs(s, shape, sizeof(shape));
		if (s->is_call || (s->kind == TI_STEP_OPAQUE && s->type))
			cli_human(s->params, "", params, sizeof(params));
		else
			snprintf(params, sizeof(params), "-");
		cli_dim_human(s->macs, "", macs, sizeof(macs));
		cli_dim_human(s->flops, "", flops, sizeof(flops));
		if (s->kind == TI_STEP_OPAQUE)
			snprintf(macs, sizeof(macs), "?"), snprintf(flops, sizeof(flops), "? (opaque: not modelled)");
		else if (!s->counted) /* a count without a rule would read as zero work: say so */
			snprintf(flops + strlen(flops), sizeof(flops) - strlen(flops), " (no counting rule for a part)");
		const char *row[] = {index, label, names, shape, params, macs, flops};
		cli_table_add(&t, row);
	}
	return cli_table_flush(&t);
}

static void print_totals(const ti_model_report *rep)
{
	const ti_model_totals *t = &rep->totals;
	char a[512], b[512], c[64];
	printf("\n");
	/* what forward returns, on one line, each named once: "y [2, 1000] float32" (a label "output" would
	   read "output output" for an output named so) */
	for (size_t i = 0; i < rep->output_count; i++) {
		const ti_model_tensor *o = &rep->outputs[i];
		fputs(i ? ", " : "returns:           ", stdout);
		cli_put_safe(stdout, o->name, 0);
		printf(" %s %s", cli_shape_text(o->shape, o->ndim, a, sizeof(a)), ti_dtype_name(o->dtype));
	}
	if (rep->output_count)
		printf("\n");
	printf("parameters:        %s (trainable %s, non-trainable %s)\n", cli_human(t->params, "", a, sizeof(a)),
	       cli_human(t->trainable, "", b, sizeof(b)), cli_human(t->non_trainable, "", c, sizeof(c)));
	printf("parameter bytes:   %s", cli_bytes(t->param_bytes, a, sizeof(a)));
	printf(" (buffers %s)\n", cli_bytes(t->buffer_bytes, a, sizeof(a)));
	printf("input bytes:       %s\n", cli_dim_text(t->input_bytes, true, a, sizeof(a)));
	printf("activation bytes:  %s (forward, outputs of every step)\n",
	       cli_dim_text(t->activation_bytes, true, a, sizeof(a)));
	printf("MACs:              %s\n", cli_dim_human(t->macs, "Mac", a, sizeof(a)));
	printf("FLOPs:             %s (2 per multiply-accumulate, plus other arithmetic)\n",
	       cli_dim_human(t->flops, "FLOP", a, sizeof(a)));
	printf("  as PyTorch:      %s (FlopCounterMode: 2 per multiply-accumulate of matrix products)\n",
	       cli_dim_human(t->flops_torch, "FLOP", a, sizeof(a)));
	printf("  as fvcore:       %s (FlopCountAnalysis: 1 per multiply-accumulate, norms, upsampling)\n",
	       cli_dim_human(t->flops_fvcore, "FLOP", a, sizeof(a)));
	if (t->uncounted_steps) {
		printf("not counted:       %zu step%s without a counting rule:", t->uncounted_steps,
		       t->uncounted_steps == 1 ? "" : "s");
		for (size_t i = 0; i < rep->step_count; i++)
			if (!rep->steps[i].depth && !rep->steps[i].counted)
				printf(" %d", rep->steps[i].index);
		printf("\n");
	}
	size_t opaque = 0, dependent = 0;
	for (size_t i = 0; i < rep->step_count; i++) {
		opaque += rep->steps[i].kind == TI_STEP_OPAQUE;
		dependent += rep->steps[i].mode_dependent && !rep->steps[i].depth;
	}
	if (opaque) {
		printf("opaque:            %zu step%s not modelled, outputs as the exporter recorded:", opaque,
		       opaque == 1 ? "" : "s");
		for (size_t i = 0; i < rep->step_count; i++)
			if (rep->steps[i].kind == TI_STEP_OPAQUE)
				printf(" %d", rep->steps[i].index);
		printf("\n");
	}
	if (dependent)
		printf("mode:              %s; * marks the %zu step%s that behave%s differently in %s\n",
		       rep->training ? "train" : "eval", dependent, dependent == 1 ? "" : "s", dependent == 1 ? "s" : "",
		       rep->training ? "evaluation" : "training");
	for (size_t i = 0; i < rep->assumption_count; i++)
		printf("assuming:          %s\n", rep->assumptions[i]);
}

/* ---- JSON ---- */

static cJSON *json_tensor(const ti_model_tensor *x, bool with_name, bool with_stride)
{
	cJSON *o = cJSON_CreateObject();
	if (with_name)
		cJSON_AddStringToObject(o, "name", x->name ? x->name : "");
	cJSON_AddItemToObject(o, "shape", cli_json_dims(x->shape, x->ndim));
	cJSON_AddStringToObject(o, "dtype", ti_dtype_name(x->dtype));
	if (with_stride)
		cJSON_AddItemToObject(o, "stride", cli_json_dims(x->stride, x->ndim));
	return o;
}

/* A row and, under "calls", the rows nested in it (rows follow their parent). */
static cJSON *json_step(const ti_model_report *rep, size_t *i)
{
	const ti_model_step *s = &rep->steps[*i];
	size_t row = (*i)++;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "index", s->index);
	if (s->depth == 0) {
		cJSON *out = cJSON_AddArrayToObject(o, "out");
		for (int k = 0; k < s->out_count; k++)
			cJSON_AddItemToArray(out, cJSON_CreateString(s->out_names[k]));
	}
	static const char *const kinds[] = {"op", "call", "attr", "opaque"};
	cJSON_AddStringToObject(o, s->kind == TI_STEP_OPAQUE && s->type ? "call" : kinds[s->kind], s->target);
	if (s->type)
		cJSON_AddStringToObject(o, "type", s->type);
	if (s->kind == TI_STEP_OPAQUE)
		cJSON_AddStringToObject(o, "opaque", s->opaque);
	if (s->mode_dependent)
		cJSON_AddBoolToObject(o, "mode_dependent", true);
	cJSON *outputs = cJSON_AddArrayToObject(o, "outputs");
	for (int k = 0; k < s->output_count; k++)
		cJSON_AddItemToArray(outputs, json_tensor(&s->outputs[k], true, true));
	cJSON_AddItemToObject(o, "params", cli_json_dim(ti_dim_int(s->params)));
	cJSON_AddItemToObject(o, "macs", cli_json_dim(s->macs));
	cJSON_AddItemToObject(o, "flops", cli_json_dim(s->flops));
	cJSON_AddItemToObject(o, "flops_torch", cli_json_dim(s->flops_torch));
	cJSON_AddItemToObject(o, "flops_fvcore", cli_json_dim(s->flops_fvcore));
	cJSON_AddBoolToObject(o, "counted", s->counted);
	cJSON *calls = NULL;
	while (*i < rep->step_count && rep->steps[*i].parent == (int)row) {
		if (!calls)
			calls = cJSON_AddArrayToObject(o, "calls");
		cJSON_AddItemToArray(calls, json_step(rep, i));
	}
	return o;
}

/* The keys before "steps": file, error, inputs. */
static cJSON *json_head(const char *file, const ti_model_report *rep)
{
	cJSON *root = cli_json_root();
	cJSON_AddStringToObject(root, "file", file);
	cJSON_AddStringToObject(root, "mode", rep->training ? "train" : "eval");
	if (rep->failed) {
		cJSON *e = cJSON_AddObjectToObject(root, "error");
		cJSON_AddNumberToObject(e, "step", rep->error_step);
		cJSON_AddStringToObject(e, "message", rep->error.message);
	}
	cJSON *inputs = cJSON_AddObjectToObject(root, "inputs");
	for (size_t i = 0; i < rep->input_count; i++)
		cJSON_AddItemToObject(inputs, rep->inputs[i].name, json_tensor(&rep->inputs[i], false, false));
	return root;
}

/* The keys after "steps": outputs, parameters, totals, assumptions. */
static cJSON *json_tail(const ti_model *model, const ti_model_report *rep)
{
	cJSON *root = cJSON_CreateObject();
	if (!rep->failed) {
		cJSON *outputs = cJSON_AddObjectToObject(root, "outputs");
		for (size_t i = 0; i < rep->output_count; i++)
			cJSON_AddItemToObject(outputs, rep->outputs[i].name, json_tensor(&rep->outputs[i], false, false));
	}
	cJSON_AddItemToObject(root, "parameters", cli_json_params(model));
	const ti_model_totals *t = &rep->totals;
	cJSON *tot = cJSON_AddObjectToObject(root, "totals");
	cJSON_AddItemToObject(tot, "params", cli_json_dim(ti_dim_int(t->params)));
	cJSON_AddItemToObject(tot, "trainable_params", cli_json_dim(ti_dim_int(t->trainable)));
	cJSON_AddItemToObject(tot, "non_trainable_params", cli_json_dim(ti_dim_int(t->non_trainable)));
	cJSON_AddItemToObject(tot, "param_bytes", cli_json_dim(ti_dim_int(t->param_bytes)));
	cJSON_AddItemToObject(tot, "buffer_bytes", cli_json_dim(ti_dim_int(t->buffer_bytes)));
	cJSON_AddItemToObject(tot, "input_bytes", cli_json_dim(t->input_bytes));
	cJSON_AddItemToObject(tot, "activation_bytes", cli_json_dim(t->activation_bytes));
	cJSON_AddItemToObject(tot, "macs", cli_json_dim(t->macs));
	cJSON_AddItemToObject(tot, "flops", cli_json_dim(t->flops));
	cJSON_AddItemToObject(tot, "flops_torch", cli_json_dim(t->flops_torch));
	cJSON_AddItemToObject(tot, "flops_fvcore", cli_json_dim(t->flops_fvcore));
	cJSON *unc = cJSON_AddArrayToObject(tot, "uncounted_steps");
	for (size_t i = 0; i < rep->step_count; i++)
		if (!rep->steps[i].depth && !rep->steps[i].counted)
			cJSON_AddItemToArray(unc, cJSON_CreateNumber(rep->steps[i].index));
	cJSON *as = cJSON_AddArrayToObject(root, "assumptions");
	for (size_t i = 0; i < rep->assumption_count; i++)
		cJSON_AddItemToArray(as, cJSON_CreateString(rep->assumptions[i]));
	return root;
}

/*
 * One JSON document, written as it is built: the steps one at a time, each
 * freed once printed, so memory stays that of one step however long the graph.
 */
static int print_json(const char *file, const ti_model *model, const ti_model_report *rep)
{
	cli_json_doc d;
	cli_json_begin(&d, stdout);
	cli_json_members(&d, json_head(file, rep));
	cli_json_array_begin(&d, "steps");
	for (size_t i = 0; i < rep->step_count;)
		cli_json_array_row(&d, json_step(rep, &i));
	cli_json_array_end(&d);
	cli_json_members(&d, json_tail(model, rep));
	return cli_json_end(&d);
}

int cmd_shapes(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "shapes", false};
	cli_model cm = {0};
	bool json = false;
	int depth = 0, id, rc;
	const char *value;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (cm.file)
				return cli_usage_error("shapes: one MODEL.json at a time");
			cm.file = value;
			break;
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON:
			json = true;
			break;
		case OPT_RAW:
			cli_raw_numbers = true;
			break;
		case OPT_BIND:
			if ((rc = cli_model_bind(&cm, value)))
				return rc;
			break;
		case OPT_INPUT:
			if ((rc = cli_model_input(&cm, "shapes", (char *)value)))
				return rc;
			break;
		case OPT_MODE:
			if (strcmp(value, "eval") && strcmp(value, "train"))
				return cli_usage_error("shapes: --mode wants eval or train, not '%s'", value);
			cm.training = !strcmp(value, "train");
			break;
		case OPT_DEPTH: {
			char *end;
			long d = strtol(value, &end, 10);
			if (*value < '0' || *value > '9' || *end || d < 1 || d > 1000)
				return cli_usage_error("shapes: --depth wants a number from 1 to 1000, not '%s'", value);
			depth = (int)d;
			break;
		}
		}
	}
	if (!cm.file)
		return cli_usage_error("shapes: no MODEL.json given (see 'tinspect shapes --help')");
	if (json && depth)
		return cli_usage_error("shapes: --depth cuts the table; --json always holds every call, nested under \"calls\"");
	if ((rc = cli_model_open(&cm)))
		return rc;
	ti_error err;
	ti_error_clear(&err);
	const ti_model_report *rep;
	ti_status st = ti_model_run(cm.model, &rep, &err);
	if (!st && !rep->failed && cm.bind_count && (st = ti_model_check_binds(cm.model, &err))) {
		/* a --bind the description never uses is a usage error, not a bad description */
		rc = cli_usage_error("shapes: --bind: %s", err.message);
		ti_model_close(cm.model);
		return rc;
	}
	if (st) {
		rc = cli_report(cm.file, &err);
		ti_model_close(cm.model);
		return rc;
	}
	if (json) {
		rc = print_json(cm.file, cm.model, rep);
	} else {
		rc = print_table(rep, depth);
		if (!rc && !rep->failed)
			print_totals(rep);
		fflush(stdout);
	}
	if (!rc && rep->failed)
		rc = cli_report(cm.file, &rep->error);
	ti_model_close(cm.model);
	return rc;
}
