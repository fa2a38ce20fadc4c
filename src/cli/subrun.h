/*
 * subrun.h - running commands of this program in child processes, some at
 * once, each with its stdout and stderr captured: `check --manifest` runs
 * its pairs this way on every core, and `check --device-memory` asks
 * `memory` for its JSON. A child that crashes is a failed run, not ours.
 */
#ifndef TINSPECT_CLI_SUBRUN_H
#define TINSPECT_CLI_SUBRUN_H

#include <stddef.h>

#define CLI_SUBRUN_MAX_OUTPUT ((size_t)64 << 20) /* captured bytes per stream; the rest is dropped */

typedef struct cli_subrun {
	int (*run)(int argc, char **argv); /* a cmd_* function */
	int argc;
	char **argv;
	const char *dir;                   /* the child works in this directory; NULL: ours */
	/* filled in: */
	char *out, *err;                   /* what it wrote, NUL-terminated, malloc'd (cli_subrun_release) */
	size_t out_len, err_len;
	int status;                        /* its exit code; EXIT_RESOURCE when it died of a signal or could not start */
	double seconds;                    /* wall time, start to exit */
} cli_subrun;

/*
 * Runs every run, at most parallel at once (1 or more), in children, and
 * waits for all. 0, or EXIT_RESOURCE (printed) when no child could be
 * made at all.
 */
int cli_subrun_all(cli_subrun *runs, size_t count, int parallel);
void cli_subrun_release(cli_subrun *runs, size_t count);

#endif
