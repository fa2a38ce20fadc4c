/* common.c - option parsing, error reports and number formatting for the commands. */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/output.h"

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
	cli_usage_error("%s: unknown option '%s' (see 'tinspect %s --help')", p->command, arg, p->command);
	return -2;
}

int cli_exit_code(ti_status status)
{
	switch (status) {
	case TI_OK: return EXIT_OK;
	case TI_E_INVALID: return EXIT_USAGE;
	case TI_E_SHAPE: return EXIT_NEGATIVE;
	case TI_E_IO: case TI_E_NOMEM: return EXIT_RESOURCE;
	default: return EXIT_INPUT;
	}
}

int cli_report(const char *file, const ti_error *err)
{
	char msg[TI_ERROR_MESSAGE_MAX + TI_ERROR_MEMBER_MAX + 64];
	ti_error_format(err, msg, sizeof(msg));
	fprintf(stderr, "tinspect: ");
	cli_put_safe(stderr, file, 0);
	fprintf(stderr, ": ");
	cli_put_safe(stderr, msg, 0);
	fputc('\n', stderr);
	return cli_exit_code(err->code);
}

const char *cli_bytes(int64_t n, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0 && n >= 0 && size >= 7) { /* "1023 B" at most: by hand, as it is a column of every row */
		char digits[4];
		size_t k = 0, len = 0;
		do
			digits[k++] = (char)('0' + n % 10);
		while ((n /= 10));
		while (k)
			buf[len++] = digits[--k];
		memcpy(buf + len, " B", 3);
	} else if (u == 0)
		snprintf(buf, size, "%" PRId64 " B", n);
	else
		snprintf(buf, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}

const char *cli_count(int64_t n, char *buf, size_t size)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%" PRId64, n);
	size_t j = 0;
	for (int i = 0; i < len && j + 2 < size; i++) {
		buf[j++] = digits[i];
		int rest = len - i - 1;
		if (rest > 0 && rest % 3 == 0 && digits[i] != '-')
			buf[j++] = ',';
	}
	buf[j] = '\0';
	return buf;
}

const char *cli_dims(const int64_t *d, int n, char *buf, size_t size)
{
	/* By hand, not snprintf: this runs for every tensor of 20,000-tensor checkpoints. */
	size_t len = 0;
	if (size < 24 + 3)
		return buf[0] = '\0', buf;
	buf[len++] = '[';
	for (int i = 0; i < n; i++) {
		char digits[24];
		int k = 0;
		uint64_t u = d[i] < 0 ? 0 - (uint64_t)d[i] : (uint64_t)d[i];
		do
			digits[k++] = (char)('0' + u % 10);
		while ((u /= 10));
		if (d[i] < 0)
			digits[k++] = '-';
		if (len + (size_t)k + 4 + 3 >= size) {
			memcpy(buf + len, "...", 3);
			len += 3;
			break;
		}
		if (i) {
			buf[len++] = ',';
			buf[len++] = ' ';
		}
		while (k)
			buf[len++] = digits[--k];
	}
	buf[len++] = ']';
	buf[len] = '\0';
	return buf;
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
