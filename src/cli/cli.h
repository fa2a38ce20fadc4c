/*
 * cli.h - what the commands share: option parsing, exit codes, printing.
 * Only src/cli/ parses argv, prints or exits; the library reports errors
 * through ti_error and the commands turn them into the exit codes below.
 */
#ifndef TINSPECT_CLI_H
#define TINSPECT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tinspect/tinspect.h"

/* Exit status, one scheme for every command (man page: EXIT STATUS). */
enum {
	EXIT_OK = 0,
	EXIT_NEGATIVE = 1, /* a negative verdict: shape error, failed check, unsafe file */
	EXIT_USAGE = 2,
	EXIT_INPUT = 3,    /* unreadable, corrupt or unsupported input */
	EXIT_RESOURCE = 4  /* I/O or resource failure */
};

typedef struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} cli_command;

int cmd_inspect(int argc, char **argv);
int cmd_shapes(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_materialize(int argc, char **argv);
int cmd_scan(int argc, char **argv);

/* Options: a table per command; values come as --opt=V or --opt V. */
typedef enum { OPT_FLAG, OPT_VALUE } cli_opt_kind;
typedef struct cli_option {
	const char *name;   /* "json" for --json */
	char letter;        /* 'h' for -h, or 0 */
	cli_opt_kind kind;
	int id;
} cli_option;

typedef struct cli_parser {
	int argc, index;
	char **argv;
	const cli_option *options;
	const char *command;
	bool only_operands; /* after "--" */
} cli_parser;

/* Returns the option id, 0 for an operand (in *value), -1 at the end, -2 on a usage error (printed). */
int cli_next(cli_parser *p, const char **value);

/* Prints "tinspect: ..." to stderr and returns EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "tinspect: FILE: message (location)" and returns the exit code for the status. */
int cli_report(const char *file, const ti_error *err);
int cli_exit_code(ti_status status);

/*
 * Before using a checkpoint: warns on stderr of each global and call in its
 * pickle that weights_only=True would refuse, and refuses (EXIT_NEGATIVE,
 * one line) a dangerous one unless trust. EXIT_OK to go on.
 */
int cli_check_safety(const char *file, ti_scan_severity worst, const ti_scan_finding *findings, size_t count,
                     bool trust);
/* The same for every file of a source. */
int cli_check_source_safety(const ti_source *src, bool trust);
/*
 * For a file that could not be opened: a legacy or bare pickle, a zip with
 * two data.pkl... If scan finds it dangerous, says so and refuses
 * (EXIT_NEGATIVE) whatever trust says, since it cannot be read anyway;
 * otherwise reports err as cli_report() does.
 */
int cli_report_open_failure(const char *file, const ti_error *err);

/* Formatting helpers. */
const char *cli_bytes(int64_t n, char *buf, size_t size);   /* "4.59 KiB", "16 B" */
const char *cli_count(int64_t n, char *buf, size_t size);   /* "1,234,567" */
const char *cli_dims(const int64_t *d, int n, char *buf, size_t size); /* "[8, 3, 7, 7]" */
/* Writes s with control characters escaped, so names cannot drive the terminal. */
void cli_put_safe(FILE *f, const char *s, int width);

#endif
