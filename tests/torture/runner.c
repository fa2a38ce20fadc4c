/*
 * runner.c - runs tinspect on damaged copies and judges each run, for
 * tests/torture/run.sh.
 *
 * usage: runner TINSPECT SCRATCH [SAMPLE SEED] < LIST
 *
 * Each line of LIST is a file and the arguments of one run, separated by
 * tabs: FILE\t--json, FILE\t--json\t--records, FILE\tscan (run as
 * `TINSPECT scan --json FILE`) or FILE\tconvert (run as `TINSPECT convert
 * --force FILE -o SCRATCH/converted.safetensors`). Any other arguments
 * follow FILE as given. The run's stdout and stderr go to SCRATCH/out and
 * SCRATCH/err, stdin is /dev/null, and it is killed after 10 seconds.
 *
 * Why a program and not a shell function: the judgement used to take five
 * to eight processes per run (timeout, grep, head, tail, wc), which made
 * the torture cost minutes of process creation; here each run is one
 * posix_spawn.
 *
 * A run passes when it exits 0 with a whole document on stdout and nothing
 * but warnings ('tinspect: warning: ...') on stderr; or exits 3 with exactly
 * one newline-terminated line on stderr beside the warnings, starting with
 * 'tinspect: '; or exits 1 refusing a dangerous pickle in one line. scan may
 * exit 0, 1 or 3, always with its JSON report on stdout. Anything else
 * fails: another exit status (4 is an I/O or resource error that a damaged
 * byte must not cause), a signal (a sanitizer abort), or the timeout.
 *
 * SAMPLE N (with SEED) runs only the lines whose hash, mixed with SEED,
 * is 0 modulo N: the same lines for the same list and seed. The ASan build
 * starts about twenty times slower than the plain one, so make asan runs
 * the CLI on a sample and every copy through the in-process harnesses.
 *
 * Prints 'FAIL NAME ARGS: WHY' and up to 20 lines of the run's stderr for
 * each failure, the failed files' paths to SCRATCH/failed (one per line),
 * and last a line 'count PASSED FAILED'. Exit 0, or 2 on a usage or system
 * error.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { MAX_ARGS = 16, TIMEOUT_S = 10, ERR_LINES_SHOWN = 20 };
#define MAX_OUTPUT ((size_t)256 << 20)

static volatile sig_atomic_t alarm_fired;

static void on_alarm(int sig)
{
	(void)sig;
	alarm_fired = 1;
}

typedef struct {
	char *bytes;
	size_t len;
} text;

static bool read_text(const char *path, text *t)
{
	free(t->bytes);
	t->bytes = NULL;
	t->len = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t cap = 4096;
	t->bytes = malloc(cap + 1);
	while (t->bytes) {
		t->len += fread(t->bytes + t->len, 1, cap - t->len, f);
		if (t->len < cap || cap >= MAX_OUTPUT)
			break;
		char *bigger = realloc(t->bytes, cap * 2 + 1);
		if (!bigger) {
			free(t->bytes);
			t->bytes = NULL;
			break;
		}
		t->bytes = bigger;
		cap *= 2;
	}
	fclose(f);
	if (!t->bytes)
		return false;
	t->bytes[t->len] = '\0';
	return true;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && !memcmp(s, prefix, n);
}

/* The last line, as `tail -n 1` then the shell's $(...) would give it: one
 * final newline is not a line of its own. */
static void last_line(const text *t, const char **line, size_t *len)
{
	size_t end = t->len;
	if (end && t->bytes[end - 1] == '\n')
		end--;
	size_t start = end;
	while (start && t->bytes[start - 1] != '\n')
		start--;
	*line = t->bytes + start;
	*len = end - start;
}

static bool is_whole_json(const text *out)
{
	const char *line;
	size_t len;
	last_line(out, &line, &len);
	return out->len && out->bytes[0] == '{' && len == 1 && line[0] == '}';
}

static bool contains(const text *t, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= t->len; i++)
		if (!memcmp(t->bytes + i, needle, n))
			return true;
	return false;
}

static bool is_warning(const char *line, size_t len)
{
	return starts_with(line, len, "tinspect: warning: ");
}

/* The lines of err that are not warnings: how many, whether each ends in
 * a newline, and the first of them. */
typedef struct {
	size_t count;
	bool all_terminated;
	const char *first;
	size_t first_len;
} other_lines;

static other_lines lines_besides_warnings(const text *err)
{
	other_lines o = {0, true, NULL, 0};
	size_t i = 0;
	while (i < err->len) {
		const char *nl = memchr(err->bytes + i, '\n', err->len - i);
		size_t len = nl ? (size_t)(nl - (err->bytes + i)) : err->len - i;
		if (!is_warning(err->bytes + i, len)) {
			if (!o.count) {
				o.first = err->bytes + i;
				o.first_len = len;
			}
			o.count++;
			if (!nl)
				o.all_terminated = false;
		}
		i += len + 1;
	}
	return o;
}

/* Why the run failed, or NULL when it passed. */
static const char *judge(int status, bool timed_out, bool scan, bool json, const text *out, const text *err,
			 char *why, size_t why_size)
{
	if (timed_out)
		return "timed out after 10 s";
	/* ASan exits 1 after a report, which scan's "unsafe" shares: the report itself fails. */
	if (contains(err, "Sanitizer") || contains(err, "runtime error:"))
		return "a sanitizer report on stderr";
	if (WIFSIGNALED(status)) {
		snprintf(why, why_size, "killed by signal %d", WTERMSIG(status));
		return why;
	}
	int rc = WEXITSTATUS(status);
	other_lines other = lines_besides_warnings(err);
	switch (rc) {
	case 0:
		if (scan)
			return out->len && out->bytes[0] == '{' && !err->len ? NULL
									: "scan exit 0 without a JSON report, or with stderr";
		if (other.count)
			return "exit 0 with output on stderr that is not a warning";
		if (!out->len)
			return "exit 0 with nothing on stdout";
		if (json && !is_whole_json(out))
			return "exit 0 but stdout is not one whole JSON object";
		return NULL;
	case 1:
		if (scan) {
			bool ends = out->len >= 2 && !memcmp(out->bytes + out->len - 2, "}\n", 2);
			return out->len && out->bytes[0] == '{' && (ends || is_whole_json(out))
				       ? NULL
				       : "scan exit 1 but stdout is not one whole JSON object";
		}
		{
			bool one_line = err->len && err->bytes[err->len - 1] == '\n' &&
					memchr(err->bytes, '\n', err->len) == err->bytes + err->len - 1;
			bool refusal = one_line && starts_with(err->bytes, err->len, "tinspect: ") &&
				       contains(err, "refusing a dangerous pickle");
			return refusal ? NULL : "exit 1 that is not one line refusing a dangerous pickle";
		}
	case 3:
		if (scan && !(out->len && out->bytes[0] == '{'))
			return "scan exit 3 without a JSON report";
		if (other.count != 1 || !other.all_terminated) {
			snprintf(why, why_size, "exit 3 with %zu lines on stderr, not one", other.count);
			return why;
		}
		if (!starts_with(other.first, other.first_len, "tinspect: "))
			return "exit 3 but stderr does not start with 'tinspect: '";
		return NULL;
	default:
		snprintf(why, why_size, "exit %d (want 0 or 3, or 1 for a refusal)", rc);
		return why;
	}
}

/* Runs argv with stdout and stderr to the given paths; false on a system
 * error. posix_spawn, not fork: glibc's does not copy this process's page
 * tables. */
static bool run(char *const argv[], const char *out_path, const char *err_path, int *status, bool *timed_out)
{
	posix_spawn_file_actions_t actions;
	if (posix_spawn_file_actions_init(&actions))
		return false;
	bool ok = !posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) &&
		  !posix_spawn_file_actions_addopen(&actions, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) &&
		  !posix_spawn_file_actions_addopen(&actions, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	int e = ok ? posix_spawn(&pid, argv[0], &actions, NULL, argv, environ) : ENOMEM;
	posix_spawn_file_actions_destroy(&actions);
	if (e) {
		errno = e;
		return false;
	}
	alarm_fired = 0;
	*timed_out = false;
	alarm(TIMEOUT_S);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			return false;
		if (alarm_fired && !*timed_out) {
			*timed_out = true;
			kill(pid, SIGKILL);
		}
	}
	alarm(0);
	return true;
}

static uint64_t hash_line(const char *s, uint64_t seed)
{
	uint64_t h = 1469598103934665603ull ^ (seed * 0x9e3779b97f4a7c15ull);
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h ^= h >> 33;
	return h * 0xff51afd7ed558ccdull;
}

static void show_failure(FILE *failed, const char *file, char *const *args, const char *why, const text *err)
{
	const char *name = strrchr(file, '/');
	printf("FAIL %s", name ? name + 1 : file);
	for (; *args; args++)
		printf(" %s", *args);
	printf(": %s\n", why);
	size_t i = 0;
	for (int shown = 0; i < err->len && shown < ERR_LINES_SHOWN; shown++) {
		const char *nl = memchr(err->bytes + i, '\n', err->len - i);
		size_t len = nl ? (size_t)(nl - (err->bytes + i)) : err->len - i;
		printf("  | %.*s\n", (int)len, err->bytes + i);
		i += len + 1;
	}
	fprintf(failed, "%s\n", file);
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: %s TINSPECT SCRATCH [SAMPLE SEED] < LIST\n", argv[0]);
		return 2;
	}
	const char *bin = argv[1], *scratch = argv[2];
	unsigned long sample = argc == 5 ? strtoul(argv[3], NULL, 10) : 1;
	uint64_t seed = argc == 5 ? strtoull(argv[4], NULL, 10) : 0;
	if (!sample)
		sample = 1;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: the alarm interrupts waitpid */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);

	char out_path[4096], err_path[4096], converted[4096], failed_path[4096];
	if (snprintf(out_path, sizeof(out_path), "%s/out", scratch) >= (int)sizeof(out_path) ||
	    snprintf(err_path, sizeof(err_path), "%s/err", scratch) >= (int)sizeof(err_path) ||
	    snprintf(converted, sizeof(converted), "%s/converted.safetensors", scratch) >= (int)sizeof(converted) ||
	    snprintf(failed_path, sizeof(failed_path), "%s/failed", scratch) >= (int)sizeof(failed_path)) {
		fprintf(stderr, "runner: %s: path too long\n", scratch);
		return 2;
	}
	FILE *failed = fopen(failed_path, "a");
	if (!failed) {
		fprintf(stderr, "runner: %s: %s\n", failed_path, strerror(errno));
		return 2;
	}

	unsigned long passed = 0, failures = 0;
	text out = {0}, err = {0};
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (!n)
			continue;
		/* The sample by the file's name and the arguments: the scratch folder's name is random. */
		const char *tab = strchr(line, '\t'), *name = line;
		for (const char *c = line; *c && (!tab || c < tab); c++)
			if (*c == '/')
				name = c + 1;
		if (hash_line(name, seed) % sample)
			continue;
		char *fields[MAX_ARGS + 1];
		int count = 0;
		for (char *f = strtok(line, "\t"); f && count < MAX_ARGS; f = strtok(NULL, "\t"))
			fields[count++] = f;
		fields[count] = NULL;
		const char *file = fields[0];
		char **args = fields + 1;
		bool scan = args[0] && !strcmp(args[0], "scan");
		bool convert = args[0] && !strcmp(args[0], "convert");
		char *cmd[MAX_ARGS + 8];
		int k = 0;
		cmd[k++] = (char *)bin;
		if (scan) {
			cmd[k++] = "scan";
			cmd[k++] = "--json";
			cmd[k++] = (char *)file;
		} else if (convert) {
			cmd[k++] = "convert";
			cmd[k++] = "--force";
			cmd[k++] = (char *)file;
			cmd[k++] = "-o";
			cmd[k++] = converted;
		} else {
			cmd[k++] = (char *)file;
			for (char **a = args; *a; a++)
				cmd[k++] = *a;
		}
		cmd[k] = NULL;

		int status = 0;
		bool timed_out = false;
		if (!run(cmd, out_path, err_path, &status, &timed_out)) {
			fprintf(stderr, "runner: cannot run %s: %s\n", bin, strerror(errno));
			return 2;
		}
		if (!read_text(out_path, &out) || !read_text(err_path, &err)) {
			fprintf(stderr, "runner: cannot read what %s wrote: %s\n", bin, strerror(errno));
			return 2;
		}
		char buf[128];
		bool json = args[0] && !strcmp(args[0], "--json");
		const char *why = judge(status, timed_out, scan, json, &out, &err, buf, sizeof(buf));
		if (!why) {
			passed++;
			continue;
		}
		failures++;
		show_failure(failed, file, args, why, &err);
	}
	free(line);
	free(out.bytes);
	free(err.bytes);
	fclose(failed);
	printf("count %lu %lu\n", passed, failures);
	return 0;
}
