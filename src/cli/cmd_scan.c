/*
 * cmd_scan.c - `tinspect scan FILE...`: is each file safe to torch.load?
 *
 * Lists every global each pickle names and every call it makes, judged
 * against PyTorch's weights_only=True allow-list (src/scan/policy.c), and
 * the zip tricks and storage records that make readers disagree; then a
 * verdict per file. Nothing in a file is ever executed.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "tinspect/scan.h"

enum { OPT_HELP = 1, OPT_JSON, OPT_ALLOW, OPT_QUIET };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"allow", 0, OPT_VALUE, OPT_ALLOW},
	{"quiet", 'q', OPT_FLAG, OPT_QUIET},
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
	"when any file is not safe (not-a-model is not unsafe), else 3 when one is\n"
	"unreadable.\n"
	"\n"
	"options:\n"
	"  --allow GLOB    treat globals matching GLOB (module.name) as allowed, as\n"
	"                  torch.serialization.add_safe_globals does; repeatable\n"
	"  -q, --quiet     print only the verdict lines\n"
	"  --json          print one JSON document instead of text\n"
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

static void print_text(const ti_scan_report *r, bool quiet)
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
	}
	size_t n = unsafe_count(r);
	cli_put_safe(stdout, r->path, 0);
	printf(": verdict: %s (%zu finding%s)\n", verdict_name(r), n, n == 1 ? "" : "s");
}

static cJSON *json_report(const ti_scan_report *r)
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
	return o;
}

int cmd_scan(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "scan", false};
	const char **files = calloc((size_t)argc, sizeof(*files));
	const char **allow = calloc((size_t)argc, sizeof(*allow));
	size_t nfiles = 0, nallow = 0;
	bool json = false, quiet = false;
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
		case OPT_HELP:
			cli_help(help);
			goto out;
		case OPT_JSON:
			json = true;
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		case OPT_ALLOW:
			allow[nallow++] = value;
			break;
		}
	}
	if (json && quiet) {
		rc = cli_usage_error("scan: -q shortens the text report; --json prints the whole document (give one of them)");
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
	cJSON *root = json ? cli_json_root() : NULL, *list = root ? cJSON_AddArrayToObject(root, "files") : NULL;
	bool unsafe = false, unreadable = false;
	ti_scan_severity worst = TI_SCAN_SAFE;
	for (size_t i = 0; i < nfiles; i++) {
		ti_scan_report *r = NULL;
		ti_error err;
		ti_error_clear(&err);
		if (ti_scan_file(files[i], &opt, &r, &err)) {
			rc = cli_report(files[i], &err);
			cJSON_Delete(root);
			goto out;
		}
		if (r->verdict > worst)
			worst = r->verdict;
		unsafe |= r->verdict > TI_SCAN_SAFE && strcmp(verdict_name(r), "unreadable");
		if (!strcmp(verdict_name(r), "unreadable")) {
			unreadable = true;
			cli_report(files[i], &r->error); /* the one line on stderr that exit status 3 promises */
		}
		if (json)
			cJSON_AddItemToArray(list, json_report(r));
		else
			print_text(r, quiet);
		fflush(stdout);
		ti_scan_report_free(r);
	}
	rc = unsafe ? EXIT_NEGATIVE : unreadable ? EXIT_INPUT : EXIT_OK;
	if (json) {
		cJSON_AddStringToObject(root, "verdict",
		                        unsafe ? ti_scan_severity_name(worst) : unreadable ? "unreadable" : "safe");
		int prc = cli_json_print(root);
		if (prc)
			rc = prc;
	}
out:
	free(files);
	free(allow);
	return rc;
}
