/* common.c - option parsing, input checks, error reports and number formatting for the commands. */
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "tinspect/io.h"

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("tinspect: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

int cli_next(cli_parser *p, const char **value)
{
	*value = NULL;
	if (p->index >= p->argc)
		return -1;
	char *arg = p->argv[p->index++];
	if (p->only_operands || arg[0] != '-' || !strcmp(arg, "-")) {
		*value = arg;
		return 0;
	}
	if (!strcmp(arg, "--")) {
		p->only_operands = true;
		return cli_next(p, value);
	}
	const char *name = arg + 1, *inline_value = NULL;
	size_t len;
	bool is_long = arg[1] == '-';
	if (is_long) {
		name = arg + 2;
		const char *eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		inline_value = eq ? eq + 1 : NULL;
	} else {
		len = strlen(name);
	}
	for (const cli_option *o = p->options; o->name; o++) {
		bool match = is_long ? (strlen(o->name) == len && !strncmp(o->name, name, len))
		                     : (o->letter && len == 1 && name[0] == o->letter);
		if (!match)
			continue;
		if (o->kind == OPT_FLAG) {
			if (inline_value) {
				cli_usage_error("%s: option '--%s' takes no value", p->command, o->name);
				return -2;
			}
			return o->id;
		}
		if (!inline_value) {
			if (p->index >= p->argc) {
				cli_usage_error("%s: option '%s' needs a value", p->command, arg);
				return -2;
			}
			inline_value = p->argv[p->index++];
		}
		*value = inline_value;
		return o->id;
	}
	/* "did you mean": among the long options for a long one, else among the letters */
	const char *names[64];
	size_t n = 0;
	for (const cli_option *o = p->options; o->name && n + 1 < 64; o++)
		names[n++] = o->name;
	names[n] = NULL;
	char word[64], hint[256] = "";
	if (is_long && len < sizeof(word)) {
		memcpy(word, name, len);
		word[len] = '\0';
		cli_did_you_mean(word, names, "--", hint, sizeof(hint));
	}
	cli_usage_error("%s: unknown option '%s'%s (see 'tinspect %s --help')", p->command, arg, hint, p->command);
	return -2;
}

int cli_exit_code(ti_status status)
{
	switch (status) {
	case TI_OK: return EXIT_OK;
	case TI_E_INVALID: return EXIT_USAGE;
	case TI_E_SHAPE: return EXIT_NEGATIVE;
	case TI_E_IO: case TI_E_NOMEM: return EXIT_RESOURCE;
	case TI_E_NETWORK: return EXIT_NETWORK;
	default: return EXIT_INPUT;
	}
}

/* A URL as it may be shown: credentials in it (user:password@) become "***@". */
static const char *shown_name(const char *file, char *buf, size_t size)
{
	const char *sep = ti_io_is_url(file) ? strstr(file, "://") : NULL;
	if (!sep)
		return file;
	const char *host = sep + 3, *end = host + strcspn(host, "/?#"), *at = NULL;
	for (const char *c = host; c < end; c++)
		if (*c == '@')
			at = c;
	if (!at)
		return file;
	snprintf(buf, size, "%.*s***%s", (int)(host - file), file, at);
	return buf;
}

int cli_report(const char *file, const ti_error *err)
{
	char msg[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64], name[4096];
	ti_error_format(err, msg, sizeof(msg));
	fprintf(stderr, "tinspect: ");
	cli_put_safe(stderr, shown_name(file, name, sizeof(name)), 0);
	fprintf(stderr, ": ");
	cli_put_safe(stderr, msg, 0);
	fputc('\n', stderr);
	return cli_exit_code(err->code);
}

void cli_put_safe(FILE *f, const char *s, int width)
{
	char buf[256];
	cli_out o;
	cli_out_init_buffer(&o, f, buf, sizeof(buf));
	cli_out_safe(&o, s, width);
	cli_out_close(&o);
}

static void put_finding(const ti_scan_finding *f)
{
	if (f->record) {
		cli_put_safe(stderr, f->record, 0);
		if (f->offset >= 0)
			fprintf(stderr, "@%lld", (long long)f->offset);
		fputs(": ", stderr);
	}
	cli_put_safe(stderr, f->message, 0);
}

int cli_check_safety(const char *file, ti_scan_severity worst, const ti_scan_finding *findings, size_t count,
                     bool trust)
{
	if (worst == TI_SCAN_DANGEROUS && !trust) {
		for (size_t i = 0; i < count; i++)
			if (findings[i].severity == TI_SCAN_DANGEROUS) {
				fprintf(stderr, "tinspect: %s: refusing a dangerous pickle: ", file);
				put_finding(&findings[i]);
				fputs(" (nothing was executed; see 'tinspect scan', or pass --trust)\n", stderr);
				return EXIT_NEGATIVE;
			}
	}
	if (trust)
		return EXIT_OK;
	for (size_t i = 0; i < count; i++) {
		if (findings[i].severity == TI_SCAN_SAFE)
			continue;
		fprintf(stderr, "tinspect: warning: %s: ", file);
		put_finding(&findings[i]);
		fputs(findings[i].severity == TI_SCAN_UNKNOWN ? " (torch.load with weights_only=True refuses it)\n" : "\n",
		      stderr);
	}
	return EXIT_OK;
}

int cli_check_source_safety(const ti_source *src, bool trust)
{
	for (size_t i = 0; i < ti_source_file_count(src); i++) {
		const ti_scan_finding *f;
		size_t n;
		ti_scan_severity worst = ti_source_safety(src, i, &f, &n);
		int rc = cli_check_safety(ti_source_file_at(src, i), worst, f, n, trust);
		if (rc)
			return rc;
	}
	return EXIT_OK;
}

int cli_report_open_failure(const char *file, const ti_error *err)
{
	if (ti_io_is_url(file)) /* scan reads local files only */
		return cli_report(file, err);
	ti_scan_report *r = NULL;
	ti_error scan_err;
	ti_error_clear(&scan_err);
	if (!ti_scan_file(file, NULL, &r, &scan_err) && r->verdict == TI_SCAN_DANGEROUS) {
		int rc = cli_check_safety(file, r->verdict, r->findings, r->count, false);
		ti_scan_report_free(r);
		return rc;
	}
	ti_scan_report_free(r);
	return cli_report(file, err);
}

int cli_help(const char *text)
{
	fputs(text, stdout);
	fputs("\n" CLI_EXIT_TABLE, stdout);
	return EXIT_OK;
}

/* ---- input paths ---- */

/* A folder is one checkpoint when it holds a weight file from_pretrained would read (source.h). */
bool cli_is_checkpoint_directory(const char *path)
{
	char weights[4096];
	ti_error err;
	ti_error_clear(&err);
	return !ti_source_folder_weights(path, weights, sizeof(weights), &err) || ti_dcp_is_folder(path);
}

static int input_error(const char *path, const char *reason)
{
	fputs("tinspect: ", stderr);
	cli_put_safe(stderr, path, 0);
	fprintf(stderr, ": %s\n", reason);
	return EXIT_RESOURCE;
}

static bool is_url(const char *path)
{
	struct stat st; /* a path of that name that exists is a path */
	return ti_io_is_url(path) || (ti_io_looks_like_url(path) && stat(path, &st));
}

int cli_check_url(const char *path)
{
	ti_error err;
	ti_error_clear(&err);
	return is_url(path) && ti_io_check_url(path, &err) ? cli_report(path, &err) : EXIT_OK;
}

int cli_check_input(const char *path)
{
	struct stat st;
	if (is_url(path)) /* refused in one line before any request, or read */
		return cli_check_url(path);
	/* O_NONBLOCK: a FIFO opens at once instead of waiting for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		char reason[256];
		snprintf(reason, sizeof(reason), "cannot open: %s", strerror(errno));
		return input_error(path, reason);
	}
	int failed = fstat(fd, &st);
	int saved = errno;
	close(fd);
	if (failed) {
		char reason[256];
		snprintf(reason, sizeof(reason), "cannot stat: %s", strerror(saved));
		return input_error(path, reason);
	}
	if (S_ISREG(st.st_mode))
		return EXIT_OK;
	if (S_ISDIR(st.st_mode))
		return cli_is_checkpoint_directory(path) ? EXIT_OK
		                                         : input_error(path, "is a directory that holds no Hugging Face "
		                                                             "checkpoint (model.safetensors, its index, "
		                                                             "pytorch_model.bin or its index)");
	return input_error(path, S_ISFIFO(st.st_mode)   ? "is a FIFO, not a regular file"
	                         : S_ISSOCK(st.st_mode) ? "is a socket, not a regular file"
	                                                : "is a device, not a regular file");
}

/* ---- URLs ---- */

enum { JSON_HEAD = 1 << 16 }; /* what cli_read_json reads first, to tell JSON from a checkpoint */

/* The last URL cli_read_head read: a command asks for a config.json several times, the server once. */
static struct {
	char *name, *bytes;
	size_t size;
	bool whole; /* bytes are the whole file, not only its first size bytes */
} head_memo;

/* Keeps what cli_read_head read of a URL (a copy; nothing when out of memory). */
static void remember_head(const char *path, const char *buf, size_t size, bool whole)
{
	char *name = strdup(path), *bytes = malloc(size + 1);
	if (!name || !bytes) {
		free(name);
		free(bytes);
		return;
	}
	free(head_memo.name);
	free(head_memo.bytes);
	head_memo.name = name;
	head_memo.bytes = memcpy(bytes, buf, size + 1);
	head_memo.size = size;
	head_memo.whole = whole;
}

char *cli_read_head(const char *path, size_t max, size_t *got, ti_error *err)
{
	*got = 0;
	if (head_memo.name && !strcmp(head_memo.name, path) && (head_memo.whole || max <= head_memo.size)) {
		size_t n = head_memo.size < max ? head_memo.size : max;
		char *copy = malloc(n + 1);
		if (!copy) {
			TI_FAIL(err, TI_E_NOMEM, "out of memory");
			return NULL;
		}
		memcpy(copy, head_memo.bytes, n);
		copy[n] = '\0';
		*got = n;
		return copy;
	}
	ti_io *io;
	if (ti_io_open(path, &io, err))
		return NULL;
	size_t n = io->size < max ? (size_t)io->size : max;
	char *buf = malloc(n + 1);
	if (!buf)
		TI_FAIL(err, TI_E_NOMEM, "out of memory");
	else if (ti_io_read(io, 0, buf, n, got, err)) {
		free(buf);
		buf = NULL;
	}
	bool whole = buf && *got == io->size;
	ti_io_close(io);
	if (!buf)
		return NULL;
	buf[*got] = '\0';
	if (ti_io_is_url(path))
		remember_head(path, buf, *got, whole);
	return buf;
}

char *cli_read_json(const char *path, size_t max, size_t *got, ti_error *err)
{
	char *head = cli_read_head(path, max < JSON_HEAD ? max : JSON_HEAD, got, err);
	if (!head)
		return NULL;
	if (ti_file_sniff(head, *got, *got + 1) != TI_FILE_JSON) {
		free(head);
		TI_FAIL(err, TI_E_UNSUPPORTED, "not JSON");
		return NULL;
	}
	if (*got < JSON_HEAD || max <= JSON_HEAD)
		return head; /* the whole file, or all that was asked for */
	free(head);
	return cli_read_head(path, max, got, err);
}

int cli_set_token_file(const char *command, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "tinspect: %s: --token-file ", command);
		cli_put_safe(stderr, path, 0);
		fprintf(stderr, ": cannot open: %s\n", strerror(errno));
		return EXIT_RESOURCE;
	}
	char token[4096];
	size_t n = fread(token, 1, sizeof(token) - 1, f);
	fclose(f);
	token[n] = '\0';
	n = strcspn(token, "\r\n");
	token[n] = '\0';
	while (n && (token[n - 1] == ' ' || token[n - 1] == '\t'))
		token[--n] = '\0';
	if (!n)
		return cli_usage_error("%s: --token-file %s holds no token on its first line", command, path);
	ti_io_set_token(token);
	memset(token, 0, sizeof(token));
	return EXIT_OK;
}

int cli_url_option(const char *command, int id, const char *value)
{
	static int cache_option; /* the first of --offline and --no-cache given */
	switch (id) {
	case CLI_OPT_TOKEN_FILE:
		return cli_set_token_file(command, value);
	case CLI_OPT_CACERT:
		ti_io_set_cacert(value);
		return EXIT_OK;
	case CLI_OPT_OFFLINE:
	case CLI_OPT_NO_CACHE:
		if (cache_option && cache_option != id)
			return cli_usage_error("%s: --offline reads the cache alone, --no-cache never reads it: give one",
			                       command);
		cache_option = id;
		ti_io_set_cache_mode(id == CLI_OPT_OFFLINE ? TI_IO_CACHE_ONLY : TI_IO_CACHE_BYPASS);
		return EXIT_OK;
	}
	return cli_usage_error("%s: not an option for URLs", command);
}

void cli_print_fetched(void)
{
	char words[96];
	if (cli_fetched_words(ti_io_remote_counts(), words, sizeof(words)))
		printf("fetched %s\n", words);
}

/* ---- did you mean ---- */

/* Edit distance with swaps of neighbours (optimal string alignment), as git's help.c weighs none. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 64 || m > 64)
		return SIZE_MAX;
	size_t d[65][65];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++)
		for (size_t j = 1; j <= m; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[n][m];
}

static size_t closeness(const char *word, const char *candidate)
{
	size_t n = strlen(word);
	if (n >= 2 && !strncmp(candidate, word, n))
		return 0; /* the word is the start of the candidate: "shape" for "shapes" */
	size_t d = edit_distance(word, candidate);
	size_t limit = n < 4 ? 1 : n < 8 ? 2 : 3;
	return d <= limit ? d : SIZE_MAX;
}

const char *cli_did_you_mean(const char *word, const char *const *candidates, const char *prefix, char *buf,
                             size_t size)
{
	size_t best = SIZE_MAX, len = 0;
	buf[0] = '\0';
	for (size_t i = 0; candidates[i]; i++) {
		size_t d = closeness(word, candidates[i]);
		if (d < best)
			best = d;
	}
	if (best == SIZE_MAX)
		return buf;
	for (size_t i = 0; candidates[i] && len < size; i++) {
		if (closeness(word, candidates[i]) != best)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s'%s%s'", len ? " or " : "; did you mean ", prefix,
		                        candidates[i]);
	}
	if (len < size)
		snprintf(buf + len, size - len, "?");
	return buf;
}

bool cli_unknown_command(const char *word)
{
	struct stat st;
	if (!*word || strpbrk(word, "/.") || !lstat(word, &st))
		return false;
	char hint[256], list[256];
	size_t len = 0;
	list[0] = '\0';
	for (size_t i = 0; cli_command_names[i]; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "", cli_command_names[i]);
	fputs("tinspect: '", stderr);
	cli_put_safe(stderr, word, 0);
	fprintf(stderr, "' is not a tinspect command or a file%s (commands: %s)\n",
	        cli_did_you_mean(word, cli_command_names, "", hint, sizeof(hint)), list);
	return true;
}

int cli_check_globs(const char *command, const char *option, const char *file, const char *const *globs, size_t count,
                    const char *(*name_at)(const void *ctx, size_t i), const void *ctx, size_t n)
{
	for (size_t g = 0; g < count; g++) {
		bool hit = false;
		for (size_t i = 0; i < n && !hit; i++)
			hit = !fnmatch(globs[g], name_at(ctx, i), 0);
		if (!hit)
			return cli_usage_error("%s: %s '%s' matches no name in %s", command, option, globs[g], file);
	}
	return EXIT_OK;
}

int cli_parse_device(const char *command, const char *value, bool allow_meta, bool *meta, bool *cuda, int *index)
{
	*cuda = false;
	if (meta)
		*meta = false;
	if (allow_meta && !strcmp(value, "meta")) {
		*meta = true;
		return EXIT_OK;
	}
	if (!strcmp(value, "cpu"))
		return EXIT_OK;
	if (!strcmp(value, "cuda")) {
		*cuda = true;
		*index = 0;
		return EXIT_OK;
	}
	char *end;
	if (!strncmp(value, "cuda:", 5) && value[5] >= '0' && value[5] <= '9') {
		long n = strtol(value + 5, &end, 10);
		if (!*end && n < 1024) {
			*cuda = true;
			*index = (int)n;
			return EXIT_OK;
		}
	}
	static const char *const devices[] = {"cpu", "cuda", NULL}, *const with_meta[] = {"meta", "cpu", "cuda", NULL};
	char hint[128];
	return cli_usage_error("%s: --device wants %scpu, cuda or cuda:N, not '%s'%s", command, allow_meta ? "meta, " : "",
	                       value, cli_did_you_mean(value, allow_meta ? with_meta : devices, "", hint, sizeof(hint)));
}
