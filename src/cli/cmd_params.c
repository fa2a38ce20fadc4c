/*
 * cmd_params.c - `tinspect params MODEL.json`: the parameters and buffers a
 * described model's PyTorch state_dict would hold, with its exact names,
 * shapes and dtypes, in state_dict order.
 */
#include <string.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"

enum { OPT_HELP = 1, OPT_JSON, OPT_RAW };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect params MODEL.json [options]\n"
	"\n"
	"List the parameters and buffers of a model described in JSON, with the\n"
	"names, shapes and dtypes its PyTorch state_dict would have\n"
	"(non-persistent buffers are not in a state_dict and are not listed).\n"
	"\n"
	"options:\n"
	"  --json          print one JSON document instead of a table\n"
	"  --raw           print counts and sizes as exact integers, not 25.6 M\n"
	CLI_URL_HELP("")
	"  -h, --help      show this help\n";

static int64_t numel(const ti_model_param *p)
{
	int64_t n = 1;
	for (int k = 0; k < p->ndim; k++)
		n *= p->shape[k];
	return n;
}

static const cli_column columns[] = {
	{"NAME", CLI_LEFT, 64}, {"KIND", CLI_LEFT, 0}, {"DTYPE", CLI_LEFT, 0},
	{"SHAPE", CLI_LEFT, 0}, {"NUMEL", CLI_RIGHT, 0}, {"NOTES", CLI_LEFT, 0},
};

static int print_table(const ti_model_param *p, size_t n)
{
	char shape[1024], count[32], notes[1024];
	int64_t params = 0, trainable = 0, buffers = 0, bytes = 0, buffer_bytes = 0;
	cli_table t;
	cli_table_init(&t, columns, 6);
	for (size_t i = 0; i < n; i++) {
		int64_t e = numel(&p[i]);
		if (p[i].tied_to)
			snprintf(notes, sizeof(notes), "tied to %s", p[i].tied_to);
		else
			snprintf(notes, sizeof(notes), "%s", p[i].buffer || p[i].trainable ? "" : "frozen");
		const char *row[] = {p[i].name, p[i].buffer ? "buffer" : "parameter", ti_dtype_name(p[i].dtype),
		                     cli_dims(p[i].shape, p[i].ndim, shape, sizeof(shape)), cli_human(e, "", count, sizeof(count)),
		                     notes};
		cli_table_add(&t, row);
		int64_t b = e * (int64_t)ti_dtype_size(p[i].dtype);
		if (p[i].buffer) {
			buffers += e;
			buffer_bytes += b;
		} else if (!p[i].tied_to) {
			params += e;
			trainable += p[i].trainable ? e : 0;
			bytes += b;
		}
	}
	int rc = cli_table_flush(&t);
	if (rc)
		return rc;
	char a[32], tr[32], s1[32], s2[32], s3[32];
	printf("\nparameters: %s (trainable %s), %s; buffers: %s elements, %s\n", cli_human(params, "", a, sizeof(a)),
	       cli_human(trainable, "", tr, sizeof(tr)), cli_bytes(bytes, s1, sizeof(s1)),
	       cli_human(buffers, "", s2, sizeof(s2)), cli_bytes(buffer_bytes, s3, sizeof(s3)));
	return EXIT_OK;
}

int cmd_params(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "params", false};
	cli_model cm = {0};
	bool json = false;
	int id, rc;
	const char *value;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (cm.file)
				return cli_usage_error("params: one MODEL.json at a time");
			cm.file = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int url_rc = cli_url_option("params", id, value);
			if (url_rc)
				return url_rc;
			break;
		}
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON:
			json = true;
			break;
		case OPT_RAW:
			cli_raw_numbers = true;
			break;
		}
	}
	if (!cm.file)
		return cli_usage_error("params: no MODEL.json given (see 'tinspect params --help')");
	if ((rc = cli_model_open(&cm)))
		return rc;
	size_t n;
	const ti_model_param *params = ti_model_params(cm.model, &n);
	if (json) {
		cJSON *root = cli_json_root();
		cJSON_AddStringToObject(root, "file", cm.file);
		cJSON_AddItemToObject(root, "parameters", cli_json_params(cm.model));
		rc = cli_json_print(root);
	} else {
		if (!(rc = print_table(params, n)))
			cli_print_fetched();
	}
	ti_model_close(cm.model);
	return rc;
}
