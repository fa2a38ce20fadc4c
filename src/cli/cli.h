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

#include "cli/exit.h"
#include "cli/output.h"
#include "tinspect/tinspect.h"

/* Prints a command's help text, then CLI_EXIT_TABLE; returns EXIT_OK. */
int cli_help(const char *text);

/* The commands, for "did you mean" and the list in an unknown-command error. */
extern const char *const cli_command_names[];
/*
 * The first word of a command line that is neither a command nor a file:
 * if it cannot be a path (no '/' or '.', nothing of that name exists), prints
 * "tinspect: 'WORD' is not a tinspect command" with the closest commands
 * and returns true.
 */
bool cli_unknown_command(const char *word);
/*
 * "did you mean" for word among candidates (NULL-terminated): writes
 * "; did you mean 'X'?" (prefix before each name) or "" into buf: the candidates at the smallest edit
 * distance (insertions, deletions, substitutions, swaps of two neighbours),
 * when that distance is small for the word's length, or that word begins.
 */
const char *cli_did_you_mean(const char *word, const char *const *candidates, const char *prefix, char *buf,
                             size_t size);

/*
 * The one check every command makes on an input path before reading it:
 * something that opens, and a regular file (or a directory holding a
 * checkpoint, see cli_is_checkpoint_directory). Never blocks: a FIFO is
 * opened without waiting for a writer and refused. Otherwise prints
 * "tinspect: PATH: reason" and returns EXIT_RESOURCE. A URL is checked as
 * ti_io_check_url does, with no request: one it cannot use (another scheme,
 * credentials, no host) is "tinspect: URL: reason" and EXIT_USAGE.
 */
int cli_check_input(const char *path);
/* The URL half of cli_check_input alone: EXIT_OK for a path, whatever it names. */
int cli_check_url(const char *path);
/*
 * The first max bytes (or fewer: the whole file) of a path or URL, malloc'd
 * and NUL-terminated (*got bytes before the NUL); NULL with err set when it
 * cannot be read. What was last read of a URL is remembered: reading it
 * again (or less of it) costs no request.
 */
char *cli_read_head(const char *path, size_t max, size_t *got, ti_error *err);
/* The same, of a file that is JSON: its first 64 KiB tell, and only JSON is read on (a checkpoint never is). */
char *cli_read_json(const char *path, size_t max, size_t *got, ti_error *err);
/* --token-file FILE: its first line is the token sent to the Hub (io.h); a reported exit code on failure. */
int cli_set_token_file(const char *command, const char *path);
/*
 * The options of every command that reads URLs, one row each in its table
 * (CLI_URL_OPTIONS), its help (CLI_URL_HELP), and taken by cli_url_option
 * (EXIT_OK, or the exit code of a failure it printed): --token-file F,
 * --cacert F, --offline (the remote-read cache alone, no request) and
 * --no-cache (neither read nor written; io.h: ti_io_cache_mode).
 */
enum { CLI_OPT_TOKEN_FILE = 1000, CLI_OPT_CACERT, CLI_OPT_OFFLINE, CLI_OPT_NO_CACHE };
#define CLI_URL_OPTIONS                                                                           \
	{"token-file", 0, OPT_VALUE, CLI_OPT_TOKEN_FILE}, {"cacert", 0, OPT_VALUE, CLI_OPT_CACERT}, \
	{"offline", 0, OPT_FLAG, CLI_OPT_OFFLINE}, {"no-cache", 0, OPT_FLAG, CLI_OPT_NO_CACHE}
#define CLI_URL_HELP(PAD) /* PAD: spaces that line the words up with the command's other options' */ \
	"  --token-file F  " PAD "send F's first line as the Hub token (instead of\n"                  \
	"                  " PAD "$HF_TOKEN), to the Hub's host only\n"                               \
	"  --cacert F      " PAD "verify https servers against the CA certificates in F\n"            \
	"  --offline       " PAD "read URLs from the cache alone, no request (also\n"                 \
	"                  " PAD "TINSPECT_OFFLINE=1 or HF_HUB_OFFLINE=1); see 'tinspect cache'\n"    \
	"  --no-cache      " PAD "neither read nor keep URLs' bytes in the cache\n"
int cli_url_option(const char *command, int id, const char *value);

/* "fetched WORDS" on a line of its own (stdout), when the command made a request */
void cli_print_fetched(void);
/* Whether a directory is to be read as one checkpoint (a Hugging Face model directory). */
bool cli_is_checkpoint_directory(const char *path);

typedef struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} cli_command;

int cmd_inspect(int argc, char **argv);
/* Whether inspect (the default command) has the long option NAME (without "--"). */
bool cli_inspect_takes(const char *name);
int cmd_shapes(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_materialize(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_cache(int argc, char **argv);

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

/*
 * Each of globs must match at least one of the n names name_at gives, as git
 * refuses a pathspec that matches no file: otherwise prints
 * "tinspect: COMMAND: OPTION 'GLOB' matches no name in FILE" and returns EXIT_USAGE.
 */
int cli_check_globs(const char *command, const char *option, const char *file, const char *const *globs, size_t count,
                    const char *(*name_at)(const void *ctx, size_t i), const void *ctx, size_t n);

/*
 * --device VALUE: cpu, cuda or cuda:N (N < 1024), and meta where allowed
 * (*meta set). Otherwise prints "COMMAND: --device wants ..., not 'VALUE'"
 * with the closest name and returns EXIT_USAGE.
 */
int cli_parse_device(const char *command, const char *value, bool allow_meta, bool *meta, bool *cuda, int *index);

/* Writes s with control characters escaped, so names cannot drive the terminal. */
void cli_put_safe(FILE *f, const char *s, int width);

#endif
