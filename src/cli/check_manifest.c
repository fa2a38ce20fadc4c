/*
 * check_manifest.c - `check` over many pairs (a manifest) or with CI
 * reports: each pair is checked in a child that prints its JSON report,
 * jobs at once, and the reports become one text, JSON document, JUnit
 * file and set of GitHub annotations (check_cli.h).
 *
 * A manifest is {"checks": [PAIR, ...]} or [PAIR, ...], each PAIR
 * {"model": "m.json", "checkpoint": "m.pt", "name": "...", "args": ["--key", "ema"]}
 * with paths relative to the manifest's folder.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/check_cli.h"
#include "cli/cli.h"
#include "cli/subrun.h"
#include "tinspect/arena.h"

#define MANIFEST_MAX_BYTES ((size_t)16 << 20)
#define MANIFEST_MAX_PAIRS 10000
#define MANIFEST_MAX_ARGS 256

static const char *const outcome_names[] = {"pass", "fail", "error", "skipped"};

static ci_outcome outcome_of(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (name && !strcmp(name, outcome_names[i]))
			return (ci_outcome)i;
	return CI_ERROR;
}

/* A child's stderr without its last newline. */
static const char *trimmed(ti_arena *arena, const char *text)
{
	size_t n = strlen(text);
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	return ti_arena_strndup(arena, text, n);
}

/* "a/b/../../c/./d" as "c/d": a path with its "." and "name/.." taken out, as the text says. */
static const char *lexically_normal(ti_arena *arena, const char *path)
{
	size_t len = strlen(path);
	char *out = ti_arena_alloc(arena, len + 2);
	if (!out)
		return path;
	size_t n = 0, kept = 0; /* kept: segments in out that a ".." may take back */
	if (path[0] == '/')
		out[n++] = '/';
	for (const char *s = path; *s;) {
		const char *e = strchr(s, '/');
		size_t seg = e ? (size_t)(e - s) : strlen(s);
		if ((seg == 1 && s[0] == '.') || seg == 0) {
			/* nothing */
		} else if (seg == 2 && s[0] == '.' && s[1] == '.' && kept) {
			n--; /* the '/' after the last segment, if any, then the segment */
			while (n && out[n - 1] != '/')
				n--;
			kept--;
		} else {
			if (n && out[n - 1] != '/')
				out[n++] = '/';
			memcpy(out + n, s, seg);
			n += seg;
			kept += !(seg == 2 && s[0] == '.' && s[1] == '.');
		}
		s += seg + (e ? 1 : 0);
	}
	if (n > 1 && out[n - 1] == '/')
		n--;
	if (!n)
		out[n++] = '.';
	out[n] = '\0';
	return out;
}

/* A path as the annotation must name it: from where we run, not from the manifest. */
static const char *from_here(ti_arena *arena, const char *dir, const char *path)
{
	if (!path || !dir || path[0] == '/' || !strcmp(dir, "."))
		return path;
	const char *joined = ti_arena_printf(arena, "%s/%s", dir, path);
	return joined ? lexically_normal(arena, joined) : path;
}

/* The first line of a child's stderr, without "tinspect: ". */
static const char *first_line(ti_arena *arena, const char *text)
{
	if (!strncmp(text, "tinspect: ", 10))
		text += 10;
	const char *nl = strchr(text, '\n');
	return ti_arena_strndup(arena, text, nl ? (size_t)(nl - text) : strlen(text));
}

int check_pairs_in_children(const check_pair_spec *pairs, size_t count, const char *dir, const check_batch *b)
{
	const char *const *common = b->common;
	int common_count = b->common_count, jobs = b->jobs;
	bool json = b->json, github = b->github;
	const char *junit = b->junit;
	ti_arena arena;
	ti_arena_init(&arena, (size_t)1 << 30);
	cli_subrun *runs = ti_arena_calloc(&arena, count + 1, sizeof(*runs));
	ci_case *cases = ti_arena_calloc(&arena, count * 8 + 1, sizeof(*cases));
	cJSON **reports = ti_arena_calloc(&arena, count + 1, sizeof(*reports));
	if (!runs || !cases || !reports) {
		ti_arena_release(&arena);
		fprintf(stderr, "tinspect: check: out of memory for %zu pairs\n", count);
		return EXIT_RESOURCE;
	}
	for (size_t i = 0; i < count; i++) {
		int argc = 0, cap = 5 + common_count + pairs[i].arg_count;
		char **argv = ti_arena_calloc(&arena, (size_t)cap + 1, sizeof(*argv));
		if (!argv) {
			ti_arena_release(&arena);
			fprintf(stderr, "tinspect: check: out of memory for %zu pairs\n", count);
			return EXIT_RESOURCE;
		}
		argv[argc++] = "check";
		argv[argc++] = (char *)pairs[i].model;
		argv[argc++] = (char *)pairs[i].checkpoint;
		argv[argc++] = "--json";
		for (int k = 0; k < common_count; k++)
			argv[argc++] = (char *)common[k];
		for (int k = 0; k < pairs[i].arg_count; k++)
			argv[argc++] = (char *)pairs[i].args[k];
		runs[i] = (cli_subrun){.run = b->check, .argc = argc, .argv = argv, .dir = dir};
	}
	if (jobs < 1) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = online < 1 ? 1 : online > 64 ? 64 : (int)online;
	}
	int rc = cli_subrun_all(runs, count, jobs);
	if (rc) {
		ti_arena_release(&arena);
		return rc;
	}
	size_t ncases = 0, failed = 0, errors = 0;
	rc = EXIT_OK;
	for (size_t i = 0; i < count; i++) {
		const check_pair_spec *p = &pairs[i];
		const char *suite = p->name ? p->name : ti_arena_printf(&arena, "%s <- %s", p->model, p->checkpoint);
		cli_subrun *r = &runs[i];
		cJSON *report = r->status <= EXIT_NEGATIVE ? cJSON_Parse(r->out) : NULL;
		if (report && !cJSON_IsArray(cJSON_GetObjectItem(report, "checks"))) {
			cJSON_Delete(report);
			report = NULL;
		}
		reports[i] = report;
		int status = report ? r->status : r->status > EXIT_NEGATIVE ? r->status : EXIT_RESOURCE;
		rc = status > rc ? status : rc;
		failed += status == EXIT_NEGATIVE;
		errors += status > EXIT_NEGATIVE;
		if (!json && count > 1)
			printf("%s== %s: %s\n", i ? "\n" : "", suite, status == EXIT_OK ? "pass" : status == EXIT_NEGATIVE ? "FAIL"
			                                                              : "ERROR");
		if (!report) {
			cases[ncases++] = (ci_case){.suite = suite, .name = "check", .file = from_here(&arena, dir, p->checkpoint),
			                            .outcome = CI_ERROR, .title = first_line(&arena, r->err),
			                            .message = trimmed(&arena, r->err), .seconds = r->seconds};
			fputs(r->err, stderr);
			continue;
		}
		if (!json)
			check_report_text(report, stdout, count > 1 ? stdout : stderr);
		const cJSON *c;
		size_t first = ncases;
		cJSON_ArrayForEach(c, cJSON_GetObjectItem(report, "checks"))
		{
			if (ncases - first == 8)
				break;
			cases[ncases++] = (ci_case){
				.suite = suite,
				.name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name")),
				.file = from_here(&arena, dir, cJSON_GetStringValue(cJSON_GetObjectItem(c, "file"))),
				.outcome = outcome_of(cJSON_GetStringValue(cJSON_GetObjectItem(c, "outcome"))),
				.title = cJSON_GetStringValue(cJSON_GetObjectItem(c, "title")),
				.message = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message")),
				.seconds = 0,
			};
		}
		if (ncases > first) /* the pair's time, on its first check */
			cases[first].seconds = r->seconds;
	}
	fflush(stdout);
	if (json && count == 1 && reports[0]) {
		cli_json_print(cJSON_Duplicate(reports[0], 1));
	} else if (json && count > 1) {
		cJSON *root = cli_json_root();
		cJSON_AddNumberToObject(root, "pairs", (double)count);
		cJSON_AddNumberToObject(root, "passed", (double)(count - failed - errors));
		cJSON_AddNumberToObject(root, "failed", (double)failed);
		cJSON_AddNumberToObject(root, "errors", (double)errors);
		cJSON *list = cJSON_AddArrayToObject(root, "reports");
		for (size_t i = 0; i < count; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", pairs[i].name ? pairs[i].name : "");
			cJSON_AddStringToObject(o, "model", pairs[i].model);
			cJSON_AddStringToObject(o, "checkpoint", pairs[i].checkpoint);
			cJSON_AddNumberToObject(o, "status", (double)(reports[i] ? runs[i].status : runs[i].status > 1 ? runs[i].status : EXIT_RESOURCE));
			if (reports[i])
				cJSON_AddItemToObject(o, "report", cJSON_Duplicate(reports[i], 1));
			else
				cJSON_AddStringToObject(o, "error", first_line(&arena, runs[i].err));
			cJSON_AddItemToArray(list, o);
		}
		cli_json_print(root);
	} else if (count > 1) {
		printf("\ncheck: %zu pairs: %zu passed, %zu failed, %zu could not be checked\n", count,
		       count - failed - errors, failed, errors);
	}
	if (github && ci_write_github(stdout, cases, ncases))
		rc = rc > EXIT_RESOURCE ? rc : EXIT_RESOURCE;
	fflush(stdout);
	if (junit) {
		int jrc = ci_write_junit_file(junit, "tinspect check", cases, ncases);
		rc = jrc > rc ? jrc : rc;
	}
	for (size_t i = 0; i < count; i++)
		cJSON_Delete(reports[i]);
	cli_subrun_release(runs, count);
	ti_arena_release(&arena);
	return rc;
}

static int manifest_error(const char *path, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "tinspect: %s: ", path);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return EXIT_INPUT;
}

static char *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(MANIFEST_MAX_BYTES + 1);
	size_t n = buf ? fread(buf, 1, MANIFEST_MAX_BYTES + 1, f) : 0;
	bool bad = ferror(f);
	fclose(f);
	if (!buf || bad || n > MANIFEST_MAX_BYTES) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*size = n;
	return buf;
}

int check_manifest(const char *path, const check_batch *b)
{
	int rc = cli_check_input(path);
	if (rc)
		return rc;
	size_t size;
	char *text = read_all(path, &size);
	if (!text)
		return manifest_error(path, "cannot read the manifest (larger than 16 MiB, or %s)%s",
		                      errno ? strerror(errno) : "a read error", "");
	cJSON *doc = cJSON_ParseWithLength(text, size);
	free(text);
	if (!doc)
		return manifest_error(path, "not JSON: a manifest is {\"checks\": [{\"model\": ..., \"checkpoint\": ...}]}%s%s",
		                      "", "");
	const cJSON *list = cJSON_IsArray(doc) ? doc : cJSON_GetObjectItemCaseSensitive(doc, "checks");
	if (cJSON_IsObject(doc)) {
		const cJSON *k;
		cJSON_ArrayForEach(k, doc) if (strcmp(k->string, "checks"))
		{
			rc = manifest_error(path, "unknown field '%s'; a manifest holds \"checks\"%s", k->string, "");
			cJSON_Delete(doc);
			return rc;
		}
	}
	int n = cJSON_GetArraySize(list);
	if (!cJSON_IsArray(list) || n == 0 || n > MANIFEST_MAX_PAIRS) {
		cJSON_Delete(doc);
		return manifest_error(path, "a manifest lists 1 to 10000 pairs under \"checks\"%s%s", "", "");
	}
	ti_arena arena;
	ti_arena_init(&arena, (size_t)256 << 20);
	check_pair_spec *pairs = ti_arena_calloc(&arena, (size_t)n, sizeof(*pairs));
	static const char *const fields[] = {"name", "model", "checkpoint", "args", NULL};
	const cJSON *e;
	int i = 0;
	rc = pairs ? EXIT_OK : EXIT_RESOURCE;
	cJSON_ArrayForEach(e, list)
	{
		if (rc)
			break;
		char where[64];
		snprintf(where, sizeof(where), "checks.%d", i);
		if (!cJSON_IsObject(e)) {
			rc = manifest_error(path, "%s: a pair is an object {\"model\": ..., \"checkpoint\": ...}%s", where, "");
			break;
		}
		const cJSON *f;
		cJSON_ArrayForEach(f, e)
		{
			int k = 0;
			while (fields[k] && strcmp(fields[k], f->string))
				k++;
			if (!fields[k]) {
				char hint[128];
				cli_did_you_mean(f->string, fields, "", hint, sizeof(hint));
				fprintf(stderr, "tinspect: %s: %s.%s: unknown field%s\n", path, where, f->string, hint);
				rc = EXIT_INPUT;
				break;
			}
			if (strcmp(f->string, "args") ? !cJSON_IsString(f) : !cJSON_IsArray(f)) {
				rc = manifest_error(path, "%s: '%s' is a string (args: a list of strings)", where, f->string);
				break;
			}
		}
		if (rc)
			break;
		check_pair_spec *p = &pairs[i++];
		p->name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
		p->model = cJSON_GetStringValue(cJSON_GetObjectItem(e, "model"));
		p->checkpoint = cJSON_GetStringValue(cJSON_GetObjectItem(e, "checkpoint"));
		if (!p->model || !p->checkpoint) {
			rc = manifest_error(path, "%s: a pair names its \"%s\"", where, p->model ? "checkpoint" : "model");
			break;
		}
		const cJSON *args = cJSON_GetObjectItem(e, "args");
		int nargs = args ? cJSON_GetArraySize(args) : 0;
		if (nargs > MANIFEST_MAX_ARGS) {
			rc = manifest_error(path, "%s: more than 256 args%s", where, "");
			break;
		}
		const char **words = ti_arena_calloc(&arena, (size_t)nargs + 1, sizeof(*words));
		const cJSON *w;
		int k = 0;
		cJSON_ArrayForEach(w, args)
		{
			if (!cJSON_IsString(w)) {
				rc = manifest_error(path, "%s.args: a list of strings (\"--key\", \"ema\")%s", where, "");
				break;
			}
			if (words)
				words[k++] = w->valuestring;
		}
		p->args = words;
		p->arg_count = words ? k : 0;
	}
	if (!rc) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		rc = check_pairs_in_children(pairs, (size_t)n, slash ? dir : NULL, b);
	}
	ti_arena_release(&arena);
	cJSON_Delete(doc);
	return rc;
}
