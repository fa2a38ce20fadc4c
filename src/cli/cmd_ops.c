/*
 * cmd_ops.c - `tinspect ops`: every operator and module type a description
 * may name, with its PyTorch signature, optionally filtered by a glob.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "tinspect/model.h"

enum { OPT_HELP = 1, OPT_JSON };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect ops [GLOB] [--json]\n"
	"\n"
	"List the operators and torch.nn module types a model description may\n"
	"name, with their PyTorch signatures (the arguments a step or module\n"
	"takes, and their defaults) and how each is counted: by a rule, free (no\n"
	"arithmetic) or not at all. GLOB keeps the names it matches (conv*).\n"
	"\n"
	"options:\n"
	"  --json          print one JSON document instead of a table\n"
	"  -h, --help      show this help\n";

typedef struct listing {
	const char *glob;
	cli_table *ops, *modules;
	cJSON *jops, *jmodules;
	int matched, op_rows, module_rows;
} listing;

static void add(void *user, const ti_model_known *k)
{
	listing *l = user;
	char name[128];
	size_t n = strcspn(k->signature, "(");
	snprintf(name, sizeof(name), "%.*s", (int)n, k->signature);
	if (l->glob && fnmatch(l->glob, name, 0))
		return;
	l->matched++;
	if (l->jops) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, k->module ? "type" : "name", name);
		cJSON_AddStringToObject(o, "signature", k->signature);
		if (k->forward)
			cJSON_AddStringToObject(o, "forward", k->forward);
		cJSON_AddStringToObject(o, "counting", k->counting);
		cJSON_AddItemToArray(k->module ? l->jmodules : l->jops, o);
		return;
	}
	(k->module ? &l->module_rows : &l->op_rows)[0]++;
	if (k->module) {
		const char *row[] = {k->signature, k->forward, k->counting};
		cli_table_add(l->modules, row);
	} else {
		const char *row[] = {k->signature, k->counting};
		cli_table_add(l->ops, row);
	}
}

static const cli_column op_columns[] = {{"OPERATOR", CLI_LEFT, 0}, {"COUNTING", CLI_LEFT, 0}};
static const cli_column module_columns[] = {
	{"MODULE", CLI_LEFT, 0}, {"FORWARD", CLI_LEFT, 0}, {"COUNTING", CLI_LEFT, 0},
};

int cmd_ops(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "ops", false};
	bool json = false;
	const char *glob = NULL, *value;
	int id;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (glob)
				return cli_usage_error("ops: one GLOB at a time");
			glob = value;
			break;
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON:
			json = true;
			break;
		}
	}
	listing l = {glob, NULL, NULL, NULL, NULL, 0, 0, 0};
	if (json) {
		cJSON *root = cli_json_root();
		l.jops = cJSON_AddArrayToObject(root, "ops");
		l.jmodules = cJSON_AddArrayToObject(root, "modules");
		ti_model_each_known(add, &l);
		if (glob && !l.matched) {
			cJSON_Delete(root);
			return cli_usage_error("ops: no operator or module type matches '%s'", glob);
		}
		return cli_json_print(root);
	}
	cli_table ops, modules;
	cli_table_init(&ops, op_columns, 2);
	cli_table_init(&modules, module_columns, 3);
	l.ops = &ops;
	l.modules = &modules;
	ti_model_each_known(add, &l);
	if (glob && !l.matched) {
		cli_table_free(&ops);
		cli_table_free(&modules);
		return cli_usage_error("ops: no operator or module type matches '%s'", glob);
	}
	/* a table with no row is left out (a glob that matches only modules) */
	int rc = EXIT_OK;
	if (l.op_rows)
		rc = cli_table_flush(&ops);
	else
		cli_table_free(&ops);
	if (!rc && l.module_rows) {
		if (l.op_rows)
			printf("\n");
		rc = cli_table_flush(&modules);
	} else {
		cli_table_free(&modules);
	}
	return rc;
}
