/*
 * cmd_scan.c - `tinspect scan FILE...`: is each file safe to torch.load?
 *
 * Lists every global each pickle names and every call it makes, judged
 * against PyTorch's weights_only=True allow-list (src/scan/policy.c), and
 * the zip tricks and storage records that make readers disagree; then a
 * verdict per file. Nothing in a file is ever executed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "tinspect/scan.h"

enum { OPT_HELP = 1, OPT_JSON, OPT_ALLOW, OPT_QUIET, OPT_JSON_LINES, OPT_JOBS };
enum { JOBS_MAX = 256 };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"allow", 0, OPT_VALUE, OPT_ALLOW},
	{"quiet", 'q', OPT_FLAG, OPT_QUIET},
	{"json-lines", 0, OPT_FLAG, OPT_JSON_LINES},
	{"jobs", 'j', OPT_VALUE, OPT_JOBS},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect scan FILE... [options]\n"
	"\n"
	"Say whether each file is safe to torch.load, without executing any of it.\n"
	"Every pickle in the file is read (data.pkl, TorchScript's constants.pkl,\n"
	"legacy torch.save files, bare pickles, pickles under other names, archives\n"
	"inside archives); each global it names and each call it makes is judged\n"
	"against PyTorch's weights_only=True allow-list:\n"
	"  safe        on the allow-list: loads with weights_only=True\n"
	"  unknown     not on it, not known to be harmful: safe only if you trust the file\n"
	"  suspicious  zip tricks, hidden pickles, storages smaller than declared\n"
	"  dangerous   can run code or touch the system when unpickled\n"
	"A file's verdict is its worst finding, or 'unreadable'. What a file is comes\n"
	"from its content: a safetensors or GGUF file holds no code (its header and\n"
	"offsets are checked); a checkpoint index has every shard it names scanned;\n"
	"a folder is scanned as from_pretrained would load it; a bare pickle that is\n"
	"not a torch.save file is 'unknown' (torch.load cannot load it; pickle.load\n"
	"runs it); text or JSON that is no index is 'not-a-model'. The exit status is 1\n"
	"when any file is not safe (not-a-model is not unsafe), else 6 when a server\n"
	"failed on a URL, else 3 when one is unreadable.\n"
	"\n"
	"FILE may be a URL (http://, https://, hf://ORG/REPO[@REVISION][/PATH]): a\n"
	"torch zip is judged from its directory and the records torch.load unpickles\n"
	"(a multi-GB pytorch_model.bin from a few hundred KiB); each file says what\n"
	"it fetched.\n"
	"\n"
	"options:\n"
	"  --allow GLOB    treat globals matching GLOB (module.name) as allowed, as\n"
	"                  torch.serialization.add_safe_globals does; repeatable\n"
	"  -q, --quiet     print only the verdict lines\n"
	"  --json          print one JSON document instead of text\n"
	"  --json-lines    print one JSON object per file, on one line, as each finishes\n"
	"  -j, --jobs N    scan up to N files at once (1 to 256; default 1): over URLs,\n"
	"                  at most N connections\n"
	CLI_URL_HELP("")
	"  -h, --help      show this help\n";

/* "unreadable" wins over safe and unknown: what could not be read may hold anything. */
static const char *verdict_name(const ti_scan_report *r)
{
	if (r->not_model && r->verdict == TI_SCAN_SAFE && !r->unreadable)
		return "not-a-model";
	if (r->unreadable && r->verdict < TI_SCAN_SUSPICIOUS)
		return "unreadable";
	return ti_scan_severity_name(r->verdict);
}

static size_t unsafe_count(const ti_scan_report *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->count; i++)
		n += r->findings[i].severity > TI_SCAN_SAFE;
	return n;
}

static void print_finding(const ti_scan_finding *f)
{
	const char *label = !strcmp(f->kind, "error") ? "error" : ti_scan_severity_name(f->severity);
	printf("  %-10s  ", label);
	if (f->record || f->offset >= 0) {
		cli_put_safe(stdout, f->record ? f->record : "", 0);
		if (f->offset >= 0)
			printf("@%lld", (long long)f->offset);
		fputs("  ", stdout);
	}
	cli_put_safe(stdout, f->message, 0);
	if (f->count > 1)
		printf(" (%llu times)", (unsigned long long)f->count);
	putchar('\n');
}

static void print_text(const ti_scan_report *r, ti_io_counts cost, bool quiet)
{
	/* the error that makes a file unreadable goes to stderr (exit status 3): not twice */
	bool skip_error = !strcmp(verdict_name(r), "unreadable");
	if (!quiet) {
		cli_put_safe(stdout, r->path, 0);
		printf(" (%s, %zu pickle%s, %zu global reference%s)\n", r->format, r->pickles, r->pickles == 1 ? "" : "s",
		       r->globals, r->globals == 1 ? "" : "s");
		/* worst first, each severity in the order found */
		for (int s = TI_SCAN_DANGEROUS; s >= TI_SCAN_SAFE; s--)
			for (size_t i = 0; i < r->count; i++) {
				if ((int)r->findings[i].severity != s)
					continue;
				if (skip_error && !strcmp(r->findings[i].kind, "error")) {
					skip_error = false;
					continue;
				}
				print_finding(&r->findings[i]);
			}
		char fetched[96];
		if (cli_fetched_words(cost, fetched, sizeof(fetched)))
			printf("  fetched     %s\n", fetched);
	}
	size_t n = unsafe_count(r);
	cli_put_safe(stdout, r->path, 0);
	printf(": verdict: %s (%zu finding%s)\n", verdict_name(r), n, n == 1 ? "" : "s");
}

static cJSON *json_report(const ti_scan_report *r, ti_io_counts cost)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "file", r->path);
	cJSON_AddStringToObject(o, "format", r->format);
	cJSON_AddStringToObject(o, "verdict", verdict_name(r));
	cJSON_AddItemToObject(o, "pickles", cli_json_dim(ti_dim_int((int64_t)r->pickles)));
	cJSON_AddItemToObject(o, "globals", cli_json_dim(ti_dim_int((int64_t)r->globals)));
	if (r->unreadable) {
		char text[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64];
		ti_error_format(&r->error, text, sizeof(text));
		cJSON_AddStringToObject(o, "error", text);
	}
	cJSON *list = cJSON_AddArrayToObject(o, "findings");
	for (size_t i = 0; i < r->count; i++) {
		const ti_scan_finding *f = &r->findings[i];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "severity", !strcmp(f->kind, "error") ? "error" : ti_scan_severity_name(f->severity));
		cJSON_AddStringToObject(j, "kind", f->kind);
		if (f->record)
			cJSON_AddStringToObject(j, "record", f->record);
		else
			cJSON_AddNullToObject(j, "record");
		cJSON_AddItemToObject(j, "offset", cli_json_dim(ti_dim_int(f->offset)));
		if (f->opcode)
			cJSON_AddStringToObject(j, "opcode", f->opcode);
		if (f->module)
			cJSON_AddStringToObject(j, "module", f->module);
		if (f->name)
			cJSON_AddStringToObject(j, "name", f->name);
		cJSON_AddItemToObject(j, "count", cli_json_dim(ti_dim_int((int64_t)f->count)));
		cJSON_AddStringToObject(j, "message", f->message);
		cJSON_AddItemToArray(list, j);
	}
	if (cost.requests)
		cJSON_AddItemToObject(o, "fetched", cli_fetched_json(cost));
	return o;
}

/*
 * The files, scanned by up to -j workers. Threads rather than libcurl's
 * multi interface: every reader (the zip walk, the pickle machine, the
 * header parsers) pulls its bytes through a blocking ti_io_read, and a
 * thread per file in flight keeps each of them as it is, where curl multi
 * would turn each into a state machine. A file's URL is one connection
 * (its ti_io's), so N workers hold at most N connections.
 */
typedef struct scan_job {
	const char *file;
	ti_scan_report *report;
	ti_status status; /* ti_scan_file's own failure (out of memory), in err */
	ti_error err;
	ti_io_counts cost; /* what its URL took: the worker's thread counts, before and after */
	bool done;
} scan_job;

typedef struct scan_pool {
	scan_job *jobs;
	size_t count, next, finished;
	const ti_scan_options *opt;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	size_t *order; /* the jobs in the order they finished */
} scan_pool;

static void scan_one(scan_pool *p, scan_job *j)
{
	ti_io_counts before = ti_io_thread_counts();
	ti_error_clear(&j->err);
	j->status = ti_scan_file(j->file, p->opt, &j->report, &j->err);
	ti_io_counts after = ti_io_thread_counts();
	j->cost = (ti_io_counts){after.requests - before.requests, after.bytes - before.bytes};
}

static void *scan_worker(void *ctx)
{
	scan_pool *p = ctx;
	pthread_mutex_lock(&p->lock);
	while (p->next < p->count) {
		scan_job *j = &p->jobs[p->next++];
		pthread_mutex_unlock(&p->lock);
		scan_one(p, j);
		pthread_mutex_lock(&p->lock);
		j->done = true;
		p->order[p->finished++] = (size_t)(j - p->jobs);
		pthread_cond_broadcast(&p->changed);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The job the output takes next: the next in input order, or (--json-lines) the next to finish; waits for it. */
static scan_job *next_finished(scan_pool *p, size_t k, bool as_finished)
{
	pthread_mutex_lock(&p->lock);
	while (as_finished ? p->finished <= k : !p->jobs[k].done)
		pthread_cond_wait(&p->changed, &p->lock);
	scan_job *j = &p->jobs[as_finished ? p->order[k] : k];
	pthread_mutex_unlock(&p->lock);
	return j;
}

int cmd_scan(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "scan", false};
	const char **files = calloc((size_t)argc, sizeof(*files));
	const char **allow = calloc((size_t)argc, sizeof(*allow));
	size_t nfiles = 0, nallow = 0;
	bool json = false, quiet = false, json_lines = false;
	long jobs = 1;
	char *end;
	int id, rc = EXIT_OK;
	const char *value;
	if (!files || !allow) {
		free(files);
		free(allow);
		fputs("tinspect: out of memory\n", stderr);
		return EXIT_RESOURCE;
	}
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			rc = EXIT_USAGE;
			goto out;
		case 0:
			files[nfiles++] = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE:
			if ((rc = cli_url_option("scan", id, value)))
				goto out;
			break;
		case OPT_HELP:
			cli_help(help);
			goto out;
		case OPT_JSON:
			json = true;
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		case OPT_JSON_LINES:
			json_lines = true;
			break;
		case OPT_JOBS:
			jobs = strtol(value, &end, 10);
			if (!*value || *end || jobs < 1 || jobs > JOBS_MAX) {
				rc = cli_usage_error("scan: -j wants a whole number from 1 to %d, not '%s'", JOBS_MAX, value);
				goto out;
			}
			break;
		case OPT_ALLOW:
			allow[nallow++] = value;
			break;
		}
	}
	if ((json || json_lines) && quiet) {
		rc = cli_usage_error("scan: -q shortens the text report; --json%s prints the whole document (give one of them)",
		                     json ? "" : "-lines");
		goto out;
	}
	if (json && json_lines) {
		rc = cli_usage_error("scan: --json prints one document, --json-lines one line per file (give one of them)");
		goto out;
	}
	if (!nfiles) {
		rc = cli_usage_error("scan: no FILE given (see 'tinspect scan --help')");
		goto out;
	}
	for (size_t i = 0; i < nfiles; i++)
		if ((rc = cli_check_input(files[i])))
			goto out;
	ti_scan_options opt = {allow, nallow, 1};
	scan_pool pool = {calloc(nfiles, sizeof(scan_job)), nfiles, 0, 0, &opt, PTHREAD_MUTEX_INITIALIZER,
	                  PTHREAD_COND_INITIALIZER, calloc(nfiles, sizeof(size_t))};
	pthread_t threads[JOBS_MAX];
	size_t started = 0;
	if (!pool.jobs || !pool.order) {
		fputs("tinspect: out of memory\n", stderr);
		rc = EXIT_RESOURCE;
		goto done;
	}
	for (size_t i = 0; i < nfiles; i++)
		pool.jobs[i].file = files[i];
	/* -j 1 scans in this thread: a plain command starts no thread (tests/threads) */
	bool serial = jobs == 1 || nfiles == 1;
	while (!serial && started < (size_t)jobs && started < nfiles &&
	       !pthread_create(&threads[started], NULL, scan_worker, &pool))
		started++;
	if (!serial && !started) {
		fputs("tinspect: scan: cannot start a thread\n", stderr);
		rc = EXIT_RESOURCE;
		goto done;
	}
	cJSON *root = json ? cli_json_root() : NULL, *list = root ? cJSON_AddArrayToObject(root, "files") : NULL;
	bool unsafe = false, unreadable = false, network = false;
	ti_scan_severity worst = TI_SCAN_SAFE;
	for (size_t k = 0; k < nfiles; k++) {
		scan_job *j = &pool.jobs[k];
		if (serial)
			scan_one(&pool, j);
		else
			j = next_finished(&pool, k, json_lines);
		ti_scan_report *r = j->report;
		if (j->status) {
			rc = cli_report(j->file, &j->err);
			cJSON_Delete(root);
			root = NULL;
			break;
		}
		if (r->verdict > worst)
			worst = r->verdict;
		unsafe |= r->verdict > TI_SCAN_SAFE && strcmp(verdict_name(r), "unreadable");
		if (!strcmp(verdict_name(r), "unreadable")) {
			unreadable = true;
			network |= r->error.code == TI_E_NETWORK;
			cli_report(j->file, &r->error); /* the one line on stderr that exit status 3 (6) promises */
		}
		if (json) {
			cJSON_AddItemToArray(list, json_report(r, j->cost));
		} else if (json_lines) {
			cJSON *o = json_report(r, j->cost);
			char *line = o ? cJSON_PrintUnformatted(o) : NULL;
			if (line)
				printf("%s\n", line);
			cJSON_free(line);
			cJSON_Delete(o);
		} else {
			print_text(r, j->cost, quiet);
		}
		fflush(stdout);
		ti_scan_report_free(r);
		j->report = NULL;
	}
	pthread_mutex_lock(&pool.lock);
	pool.next = pool.count; /* after a failure, no file more is started */
	pthread_mutex_unlock(&pool.lock);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	if (rc)
		goto done;
	rc = unsafe ? EXIT_NEGATIVE : network ? EXIT_NETWORK : unreadable ? EXIT_INPUT : EXIT_OK;
	if (json) {
		cJSON_AddStringToObject(root, "verdict",
		                        unsafe ? ti_scan_severity_name(worst) : unreadable ? "unreadable" : "safe");
		int prc = cli_json_print(root);
		if (prc)
			rc = prc;
	}
done:
	for (size_t i = 0; pool.jobs && i < nfiles; i++)
		ti_scan_report_free(pool.jobs[i].report);
	free(pool.jobs);
	free(pool.order);
out:
	free(files);
	free(allow);
	return rc;
}
