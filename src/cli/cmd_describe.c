/*
 * cmd_describe.c - `tinspect describe FOLDER|config.json`: the model
 * description that a Hugging Face config.json stands for, built from the
 * template of its model_type (tinspect/hf_describe.h), on stdout or into a
 * file. The other commands do the same on their own when given a folder or
 * a config.json; this one shows, or keeps, what they read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/outfile.h"
#include "tinspect/hf_describe.h"

enum { OPT_HELP = 1, OPT_JSON, OPT_OUTPUT, OPT_FORCE };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"output", 'o', OPT_VALUE, OPT_OUTPUT},
	{"force", 'f', OPT_FLAG, OPT_FORCE},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help_head[] =
	"usage: tinspect describe FOLDER|config.json [-o MODEL.json] [-f]\n"
	"\n"
	"Write the model description (JSON) of a Hugging Face model from its\n"
	"config.json alone: the modules, state_dict names and shapes and the\n"
	"forward of transformers' code for its model_type, with inputs input_ids\n"
	"[B, T] to bind with --bind. shapes, params, memory, check and run do the\n"
	"same themselves when given a folder or a config.json.\n";

/* after the model_types, which are the templates' own (ti_hf_model_types) */
static const char help[] =
	"\n"
	"options:\n"
	"  --json             print the description (the default)\n"
	"  -o, --output FILE  write it to FILE instead of stdout\n"
	"  -f, --force        let -o replace an existing FILE\n"
	CLI_URL_HELP("   ")
	"  -h, --help         show this help\n";

/* The help, its model_types those the templates describe, wrapped at 76 columns. */
static int describe_help(void)
{
	size_t count, col = 0;
	const char *const *types = ti_hf_model_types(&count);
	fputs(help_head, stdout);
	fputs("model_types:", stdout);
	col = strlen("model_types:");
	for (size_t i = 0; i < count; i++) {
		size_t len = strlen(types[i]) + (i + 1 < count ? 1 : 0);
		if (col + 1 + len > 76) {
			fputs("\n", stdout);
			col = 0;
		} else {
			fputs(" ", stdout);
			col++;
		}
		printf("%s%s", types[i], i + 1 < count ? "," : "");
		col += len;
	}
	fputs(" (see docs/huggingface.md;\nany other: tinspect-export).\n", stdout);
	return cli_help(help);
}

static int write_out(const char *text, const char *path, const char *input, bool force)
{
	cli_outfile o;
	const char *inputs[] = {input};
	int rc = cli_outfile_open(&o, path, inputs, 1, force);
	if (rc)
		return rc;
	size_t len = strlen(text), done = 0;
	while (done < len) {
		ssize_t w = write(o.fd, text + done, len - done);
		if (w <= 0) {
			ti_error err;
			TI_FAIL(&err, TI_E_IO, "write failed: %s", strerror(errno));
			cli_outfile_abort(&o);
			return cli_report(path, &err);
		}
		done += (size_t)w;
	}
	return cli_outfile_commit(&o);
}

int cmd_describe(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "describe", false};
	const char *file = NULL, *output = NULL, *value;
	bool force = false;
	int id;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (file)
				return cli_usage_error("describe: one FOLDER or config.json at a time");
			file = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int url_rc = cli_url_option("describe", id, value);
			if (url_rc)
				return url_rc;
			break;
		}
		case OPT_HELP:
			return describe_help();
		case OPT_JSON:
			break;
		case OPT_OUTPUT:
			output = value;
			break;
		case OPT_FORCE:
			force = true;
			break;
		}
	}
	if (!file)
		return cli_usage_error("describe: no FOLDER or config.json given (see 'tinspect describe --help')");
	char config_path[4096];
	const char *path = cli_hf_config_path(file, config_path, sizeof(config_path));
	char *text;
	size_t size;
	int rc = cli_model_read(path, &text, &size);
	if (rc)
		return rc;
	ti_error err;
	ti_error_clear(&err);
	char *desc;
	ti_status st = ti_hf_describe(text, size, &desc, &err);
	free(text);
	if (st)
		return cli_report(path, &err);
	size_t len = strlen(desc);
	char *line = realloc(desc, len + 2); /* the file ends with a newline, as a text file does */
	if (!line) {
		free(desc);
		TI_FAIL(&err, TI_E_NOMEM, "out of memory for the description");
		return cli_report(path, &err);
	}
	desc = line;
	memcpy(desc + len, "\n", 2);
	if (output) {
		rc = write_out(desc, output, path, force);
	} else {
		fputs(desc, stdout);
		rc = fflush(stdout) ? EXIT_RESOURCE : EXIT_OK;
	}
	free(desc);
	/* stdout is the description: what its URL cost goes to stderr */
	char fetched[96];
	if (!rc && cli_fetched_words(ti_io_remote_counts(), fetched, sizeof(fetched)))
		fprintf(stderr, "tinspect: describe: fetched %s\n", fetched);
	return rc;
}
