/*
 * check_report.c - a pair's check report (the JSON `check --json` prints)
 * read back: its exit status and its text. cmd_check.c prints one pair's;
 * check_manifest.c prints those its children wrote.
 */
#include <stdbool.h>
#include <string.h>

#include "cli/check_cli.h"
#include "cli/cli.h"

int check_report_status(const cJSON *report)
{
	const cJSON *c;
	int rc = EXIT_OK;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(report, "checks"))
	{
		const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(c, "outcome"));
		if (o && !strcmp(o, "fail") && rc < EXIT_NEGATIVE)
			rc = EXIT_NEGATIVE;
		if (o && !strcmp(o, "error"))
			rc = EXIT_INPUT;
	}
	return rc;
}

void check_report_text(const cJSON *report, FILE *out, FILE *errs)
{
	const char *model = cJSON_GetStringValue(cJSON_GetObjectItem(report, "model"));
	const cJSON *msg = cJSON_GetObjectItem(report, "message");
	fprintf(out, "%s\n", cJSON_GetStringValue(msg ? msg : cJSON_GetObjectItem(report, "result")));
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(report, "notes"))
		fprintf(out, "note: %s\n", cJSON_GetStringValue(c));
	bool all = true;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(report, "checks"))
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
		const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItem(c, "outcome"));
		const char *title = cJSON_GetStringValue(cJSON_GetObjectItem(c, "title"));
		const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));
		bool pass = !strcmp(outcome, "pass");
		all = all && (pass || !strcmp(outcome, "skipped"));
		if (!strcmp(name, "load_state_dict") || !strcmp(outcome, "skipped"))
			continue;
		if (!strcmp(name, "shapes")) {
			if (!pass) /* as `shapes` reports a step that raises */
				fprintf(errs, "tinspect: %s: %s\n", model, text ? text : title);
			continue;
		}
		if (!strcmp(name, "ties")) { /* a line per tie broken */
			const cJSON *t;
			cJSON_ArrayForEach(t, cJSON_GetObjectItem(report, "tie_errors"))
				fprintf(out, "ties: %s\n", cJSON_GetStringValue(t));
			continue;
		}
		fprintf(out, "%s: %s%s%s\n", name, title, text ? ": " : "", text ? text : "");
	}
	const cJSON *shapes = cJSON_GetObjectItem(report, "shapes");
	if (all && shapes)
		fprintf(out, "%s: %d tensors load into %s (%s); shapes propagate through its %d steps\n",
		        cJSON_GetStringValue(cJSON_GetObjectItem(report, "checkpoint")),
		        (int)cJSON_GetNumberValue(cJSON_GetObjectItem(report, "matched")), model,
		        cJSON_GetStringValue(cJSON_GetObjectItem(report, "class")),
		        (int)cJSON_GetNumberValue(cJSON_GetObjectItem(shapes, "steps")));
	fflush(out);
}
