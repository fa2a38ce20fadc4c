/* ci_report.c - check's and diff's results as JUnit XML and GitHub workflow commands (see ci_report.h). */
#include "cli/ci_report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/outfile.h"

/* U+FFFD REPLACEMENT CHARACTER in UTF-8, written for what cannot be written as it is. */
#define REPLACEMENT "\xEF\xBF\xBD"
#define NOT_A_CHAR UINT32_MAX

/*
 * The next character of s (n bytes): its length in bytes (at least 1), and
 * *cp its code point, or NOT_A_CHAR for a byte sequence that is not UTF-8.
 * Ranges from the Unicode Standard's table 3-7 (well-formed UTF-8 byte
 * sequences): that leaves out overlong forms, surrogates and anything past
 * U+10FFFF. A bad sequence is consumed up to the byte that breaks it (the
 * standard's "maximal subpart"), so it becomes one U+FFFD and the byte that
 * broke it is read again as the start of the next character.
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char low = 0x80, high = 0xBF; /* the second byte's range */
	uint32_t value;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		value = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		value = c & 0x0F;
		if (c == 0xE0)
			low = 0xA0; /* below: overlong */
		else if (c == 0xED)
			high = 0x9F; /* above: surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		value = c & 0x07;
		if (c == 0xF0)
			low = 0x90; /* below: overlong */
		else if (c == 0xF4)
			high = 0x8F; /* above: past U+10FFFF */
	} else {
		*cp = NOT_A_CHAR; /* a continuation byte, or C0, C1, F5..FF: never a start */
		return 1;
	}
	for (size_t i = 1; i < len; i++) {
		unsigned char b = i < n ? s[i] : 0;
		if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xBF)) {
			*cp = NOT_A_CHAR;
			return i;
		}
		value = value << 6 | (b & 0x3F);
	}
	*cp = value;
	return len;
}

/* XML 1.0's Char production (section 2.2): tab, LF, CR, and the rest above the C0 controls
 * less the surrogates, U+FFFE and U+FFFF. */
static bool xml_char(uint32_t cp)
{
	return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
	       (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

/*
 * s as XML character data: &, < and > as entities everywhere (">" so that
 * "]]>" never appears); in an attribute also both quotes, and tab, LF and CR
 * as character references, because attribute-value normalization (XML 1.0
 * section 3.3.3) would turn them into spaces. In text CR is a reference too,
 * or end-of-line handling (section 2.11) would drop it. What XML cannot hold
 * is U+FFFD.
 */
static void put_xml(FILE *out, const char *s, bool attribute)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);

	while (n) {
		uint32_t cp;
		size_t len = utf8_next(p, n, &cp);
		const char *entity = NULL;

		switch (cp) {
		case '&': entity = "&amp;"; break;
		case '<': entity = "&lt;"; break;
		case '>': entity = "&gt;"; break;
		case '\r': entity = "&#13;"; break;
		case '"': entity = attribute ? "&quot;" : NULL; break;
		case '\'': entity = attribute ? "&apos;" : NULL; break;
		case '\n': entity = attribute ? "&#10;" : NULL; break;
		case '\t': entity = attribute ? "&#9;" : NULL; break;
		default: break;
		}
		if (entity)
			fputs(entity, out);
		else if (cp == NOT_A_CHAR || !xml_char(cp))
			fputs(REPLACEMENT, out);
		else
			fwrite(p, 1, len, out);
		p += len;
		n -= len;
	}
}

/* A name="value" attribute, with a space before it. */
static void put_attribute(FILE *out, const char *name, const char *value)
{
	fprintf(out, " %s=\"", name);
	put_xml(out, value, true);
	fputc('"', out);
}

/* Seconds as whole milliseconds: negative, NaN and absurd times (over 31 years) are clamped,
 * so the sums below cannot overflow. */
static uint64_t milliseconds(double seconds)
{
	if (!(seconds > 0))
		return 0;
	if (seconds > 1e9)
		seconds = 1e9;
	return (uint64_t)(seconds * 1000.0 + 0.5);
}

/* A time="S.mmm" attribute, written from integers so that no locale's decimal comma gets in. */
static void put_time(FILE *out, uint64_t ms)
{
	fprintf(out, " time=\"%llu.%03llu\"", (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
}

/* An outcome that is not one of the four (a caller's bug) is reported as an error, never as a pass. */
static ci_outcome outcome_of(const ci_case *c)
{
	switch (c->outcome) {
	case CI_PASS:
	case CI_FAIL:
	case CI_ERROR:
	case CI_SKIPPED:
		return c->outcome;
	}
	return CI_ERROR;
}

static const char *suite_of(const ci_case *c, const char *name)
{
	return c->suite ? c->suite : name;
}

static const char *title_of(const ci_case *c)
{
	if (c->title)
		return c->title;
	return c->name ? c->name : "";
}

typedef struct tally {
	size_t tests, failures, errors, skipped;
	uint64_t ms;
} tally;

static void tally_add(tally *t, const ci_case *c)
{
	ci_outcome outcome = outcome_of(c);
	t->tests++;
	t->failures += outcome == CI_FAIL;
	t->errors += outcome == CI_ERROR;
	t->skipped += outcome == CI_SKIPPED;
	t->ms += milliseconds(c->seconds);
}

static void put_tally(FILE *out, const tally *t)
{
	fprintf(out, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\"", t->tests, t->failures,
	        t->errors, t->skipped);
	put_time(out, t->ms);
}

static void put_testcase(FILE *out, const ci_case *c, const char *suite)
{
	ci_outcome outcome = outcome_of(c);

	fputs("    <testcase", out);
	put_attribute(out, "name", c->name);
	put_attribute(out, "classname", suite);
	put_time(out, milliseconds(c->seconds));
	if (outcome == CI_PASS) {
		fputs("/>\n", out);
		return;
	}
	fputs(">\n      ", out);
	if (outcome == CI_SKIPPED) {
		fputs("<skipped", out);
		put_attribute(out, "message", title_of(c));
	} else {
		fputs(outcome == CI_FAIL ? "<failure" : "<error", out);
		put_attribute(out, "message", title_of(c));
		/* type= is where Ant puts the exception's class; ours is the check that failed. */
		put_attribute(out, "type", c->name);
	}
	if (c->message) {
		fputc('>', out);
		put_xml(out, c->message, false);
		fputs(outcome == CI_FAIL ? "</failure>" : outcome == CI_ERROR ? "</error>" : "</skipped>", out);
	} else {
		fputs("/>", out);
	}
	fputs("\n    </testcase>\n", out);
}

/* Whether a case before cases[i] is in the same suite: then cases[i]'s suite has been written. */
static bool suite_seen(const ci_case *cases, size_t i, const char *name)
{
	const char *suite = suite_of(&cases[i], name);
	for (size_t j = 0; j < i; j++)
		if (!strcmp(suite_of(&cases[j], name), suite))
			return true;
	return false;
}

/* Suites are found again by scanning, not collected: a handful of checks per pair, and nothing
 * to allocate means nothing that can fail but the writes. */
int ci_write_junit(FILE *out, const char *name, const ci_case *cases, size_t count)
{
	tally all = {0};

	if (!name)
		name = "tinspect";
	for (size_t i = 0; i < count; i++)
		tally_add(&all, &cases[i]);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", out);
	put_attribute(out, "name", name);
	put_tally(out, &all);
	fputs(">\n", out);
	for (size_t i = 0; i < count; i++) {
		if (suite_seen(cases, i, name))
			continue;
		const char *suite = suite_of(&cases[i], name);
		tally one = {0};
		for (size_t k = i; k < count; k++)
			if (!strcmp(suite_of(&cases[k], name), suite))
				tally_add(&one, &cases[k]);
		fputs("  <testsuite", out);
		put_attribute(out, "name", suite);
		put_tally(out, &one);
		fputs(">\n", out);
		for (size_t k = i; k < count; k++)
			if (!strcmp(suite_of(&cases[k], name), suite))
				put_testcase(out, &cases[k], suite);
		fputs("  </testsuite>\n", out);
	}
	fputs("</testsuites>\n", out);
	return fflush(out) || ferror(out) ? -1 : 0;
}

/*
 * s escaped as a workflow command's data (after "::") or, with property, as
 * a property's value. The runner reads the line back with the inverse of
 * @actions/core's command.ts: "%" first so that the others' "%" survive,
 * then CR and LF, which would end the command; in a property also ":" and
 * ",", which would end the value. Bytes that are not UTF-8 are U+FFFD, as
 * the runner would decode them anyway.
 */
static void put_github(FILE *out, const char *s, bool property)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);

	while (n) {
		uint32_t cp;
		size_t len = utf8_next(p, n, &cp);
		const char *escape = NULL;

		switch (cp) {
		case '%': escape = "%25"; break;
		case '\r': escape = "%0D"; break;
		case '\n': escape = "%0A"; break;
		case ':': escape = property ? "%3A" : NULL; break;
		case ',': escape = property ? "%2C" : NULL; break;
		default: break;
		}
		if (escape)
			fputs(escape, out);
		else if (cp == NOT_A_CHAR)
			fputs(REPLACEMENT, out);
		else
			fwrite(p, 1, len, out);
		p += len;
		n -= len;
	}
}

int ci_write_github(FILE *out, const ci_case *cases, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const ci_case *c = &cases[i];
		ci_outcome outcome = outcome_of(c);
		if (outcome != CI_FAIL && outcome != CI_ERROR)
			continue;
		fputs("::error ", out);
		if (c->file) {
			fputs("file=", out);
			put_github(out, c->file, true);
			fputc(',', out);
		}
		fputs("title=", out);
		put_github(out, title_of(c), true);
		fputs("::", out);
		/* An annotation without a body shows nothing under its title: the title again. */
		put_github(out, c->message ? c->message : title_of(c), false);
		fputc('\n', out);
	}
	return fflush(out) || ferror(out) ? -1 : 0;
}

int ci_write_junit_file(const char *path, const char *name, const ci_case *cases, size_t count)
{
	cli_outfile f;
	int rc = cli_outfile_open(&f, path, NULL, 0, true);
	if (rc)
		return rc;
	int fd = dup(f.fd);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	bool ok = out && !ci_write_junit(out, name, cases, count);
	if (out && fclose(out))
		ok = false;
	else if (!out && fd >= 0)
		close(fd);
	if (!ok) {
		fprintf(stderr, "tinspect: %s: cannot write the JUnit report: %s\n", path, strerror(errno));
		cli_outfile_abort(&f);
		return EXIT_RESOURCE;
	}
	return cli_outfile_commit(&f);
}
