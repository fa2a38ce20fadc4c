/*
 * main.c - the tinspect command: a table of subcommands, inspect by default.
 * `tinspect FILE` is `tinspect inspect FILE`.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_pool.h"

static const cli_command commands[] = {
	{"inspect", cmd_inspect, "list a checkpoint's tensors as the meta device sees them"},
	{"shapes", cmd_shapes, "propagate shapes through a model described in JSON"},
	{"params", cmd_params, "list a described model's parameters as its state_dict would"},
	{"memory", cmd_memory, "estimate one step's memory by simulation: will it fit, why, the largest batch"},
	{"materialize", cmd_materialize, "turn metadata into real tensors on the CPU, a CUDA device or a file"},
	{"convert", cmd_convert, "write a checkpoint as torch zip or safetensors, selected, renamed, cast"},
	{"scan", cmd_scan, "say whether files are safe to torch.load, executing nothing"},
	{"check", cmd_check, "say whether a checkpoint loads into a described model, as load_state_dict would"},
	{"diff", cmd_diff, "compare two checkpoints by name: added, removed, renamed, changed, values"},
	{"describe", cmd_describe, "write the description of a Hugging Face model from its config.json"},
	{"ops", cmd_ops, "list the operators and module types a description may name"},
	{"run", cmd_run, "execute a described model for real on the CPU: real shapes checked, statistics"},
	{"cache", cmd_cache, "list or clear the remote-read cache: the bytes kept from URLs"},
};

const char *const cli_command_names[] = {"inspect", "shapes", "params", "memory", "materialize", "convert", "scan", "check", "diff", "describe", "ops", "run", "cache", NULL};

static void usage(FILE *f)
{
	fprintf(f, "usage: tinspect [inspect] FILE [--device meta] [--json] [--filter GLOB] [--depth N] [--records]\n"
	           "       tinspect shapes MODEL.json [--input NAME=SHAPE] [--bind NAME=N] [--mode eval|train] [--json]\n"
	           "       tinspect params MODEL.json [--json]\n"
	           "       tinspect memory MODEL.json [--mode infer|train] [--optimizer NAME] [--device-memory SIZE] ...\n"
	           "       tinspect materialize SOURCE [--fill POLICY] [--device cpu|cuda[:N]] [-o OUT] ...\n"
	           "       tinspect convert IN -o OUT [--dtype DT] [--select GLOB] [--exclude GLOB] ...\n"
	           "       tinspect scan FILE... [--json] [--allow GLOB] [--quiet]\n"
	           "       tinspect check MODEL.json CHECKPOINT [--no-strict] [--key K] [--json]\n"
	           "       tinspect diff A B [--values] [--atol X] [--rtol X] [--json]\n"
	           "       tinspect describe FOLDER|config.json [-o MODEL.json] [-f]\n"
	           "       tinspect ops [GLOB] [--json]\n"
	           "       tinspect run MODEL.json [--input NAME=SPEC] [--weights CKPT] [--save OUT] ...\n"
	           "       tinspect cache list [--json] | clear [URL...]\n"
	           "       tinspect COMMAND --help\n"
	           "       tinspect --version\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun 'tinspect COMMAND --help' for the options; see tinspect(1).\n\n%s", CLI_EXIT_TABLE);
}

int main(int argc, char **argv)
{
	cli_json_pool_install();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("tinspect %s\n", TINSPECT_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	/* A first word that can only be a command, but is none: a typo, not a second FILE. */
	if (argv[1][0] != '-' && cli_unknown_command(argv[1]))
		return EXIT_USAGE;
	/* "--verison": a typo of tinspect's own options, which inspect's would not suggest */
	static const char *const own[] = {"version", "help", NULL};
	char hint[128];
	if (!strncmp(argv[1], "--", 2) && strlen(argv[1]) < 64 && !strchr(argv[1], '=') &&
	    *cli_did_you_mean(argv[1] + 2, own, "--", hint, sizeof(hint)) && !cli_inspect_takes(argv[1] + 2))
		return cli_usage_error("unknown option '%s'%s (see 'tinspect --help')", argv[1], hint);
	/* No command named: the default one, with every argument as given. */
	return cmd_inspect(argc, argv);
}
