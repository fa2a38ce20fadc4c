/*
 * json_error.c - a recursive-descent reader of JSON that only looks for
 * the first error and says it well (see json_error.h). Used after a parser
 * (cJSON) has refused the text, so speed does not matter; clarity does.
 */
#include "util/json_error.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DEPTH_MAX 1000

typedef struct reader {
	const char *s;
	size_t len, at;
	int depth;
	ti_json_error *e;
	bool failed;
} reader;

static void where(const reader *r, size_t at, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < at && i < r->len; i++) {
		if (r->s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)r->s[i] & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

/* The error at byte `at`: "what" then, printf-style, the rest. */
static bool fail(reader *r, size_t at, const char *fmt, ...)
{
	if (r->failed)
		return false;
	r->failed = true;
	where(r, at, &r->e->line, &r->e->column);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->e->message, sizeof(r->e->message), fmt, ap);
	va_end(ap);
	return false;
}

/* What is at `at`, quoted for a message: "'}'", "'\"name\"'", "the end of the text". */
static const char *found(const reader *r, size_t at, char *buf, size_t cap)
{
	if (at >= r->len)
		return "the end of the text";
	unsigned char c = (unsigned char)r->s[at];
	if (c == '"') {
		size_t end = at + 1;
		while (end < r->len && end - at < 24 && r->s[end] != '"' && r->s[end] != '\n')
			end++;
		snprintf(buf, cap, "'%.*s%s'", (int)(end - at), r->s + at, end < r->len && r->s[end] == '"' ? "\"" : "...");
	} else if (c < 0x20 || c == 0x7f)
		snprintf(buf, cap, "the control character 0x%02X", c);
	else if (isalnum(c) || c == '-' || c == '_') {
		size_t end = at;
		while (end < r->len && end - at < 24 && (isalnum((unsigned char)r->s[end]) || strchr("-_.+", r->s[end])))
			end++;
		snprintf(buf, cap, "'%.*s'", (int)(end - at), r->s + at);
	} else if (c >= 0x80)
		snprintf(buf, cap, "a byte 0x%02X", c);
	else
		snprintf(buf, cap, "'%c'", c);
	return buf;
}

static void skip_space(reader *r)
{
	while (r->at < r->len && (r->s[r->at] == ' ' || r->s[r->at] == '\t' || r->s[r->at] == '\n' ||
	                          r->s[r->at] == '\r'))
		r->at++;
}

static bool value(reader *r);

static bool string(reader *r)
{
	size_t open = r->at++;
	while (r->at < r->len) {
		unsigned char c = (unsigned char)r->s[r->at];
		if (c == '"') {
			r->at++;
			return true;
		}
		if (c == '\n')
			return fail(r, open, "the string that begins here does not end on its line (a '\"' is missing)");
		if (c < 0x20)
			return fail(r, r->at, "a raw control character 0x%02X in a string: write it escaped (\\n, \\t, \\u%04X)",
			            c, c);
		if (c == '\\') {
			char x = r->at + 1 < r->len ? r->s[r->at + 1] : '\0';
			if (!x || !strchr("\"\\/bfnrtu", x))
				return fail(r, r->at, "'\\%c' is not an escape JSON knows (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
				            x ? x : ' ');
			if (x == 'u') {
				for (int k = 2; k < 6; k++)
					if (r->at + (size_t)k >= r->len || !isxdigit((unsigned char)r->s[r->at + (size_t)k]))
						return fail(r, r->at, "'\\u' needs four hexadecimal digits");
				r->at += 6;
				continue;
			}
			r->at += 2;
			continue;
		}
		r->at++;
	}
	return fail(r, open, "the string that begins here never ends (a '\"' is missing)");
}

static bool number(reader *r)
{
	size_t start = r->at;
	const char *s = r->s;
	size_t n = r->len, i = r->at;
	if (i < n && s[i] == '-')
		i++;
	if (i >= n || !isdigit((unsigned char)s[i]))
		return fail(r, start, "a '-' must be followed by a digit");
	if (s[i] == '0' && i + 1 < n && isdigit((unsigned char)s[i + 1]))
		return fail(r, start, "a number cannot start with 0 followed by digits (JSON has no octal)");
	while (i < n && isdigit((unsigned char)s[i]))
		i++;
	if (i < n && s[i] == '.') {
		i++;
		if (i >= n || !isdigit((unsigned char)s[i]))
			return fail(r, i, "a digit must follow the decimal point");
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !isdigit((unsigned char)s[i]))
			return fail(r, i, "an exponent needs digits");
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	}
	r->at = i;
	return true;
}

static bool word(reader *r)
{
	static const char *const words[] = {"true", "false", "null"};
	size_t end = r->at;
	while (end < r->len && isalpha((unsigned char)r->s[end]))
		end++;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (end - r->at == strlen(words[i]) && !strncmp(r->s + r->at, words[i], end - r->at)) {
			r->at = end;
			return true;
		}
	char buf[64];
	return fail(r, r->at, "%s is not a JSON value (a string in double quotes, a number, true, false, null, an "
	                      "object or a list)", found(r, r->at, buf, sizeof(buf)));
}

/* A list or an object: items separated by ',', closed by `close`, with no trailing ','. */
static bool container(reader *r, bool object)
{
	char close = object ? '}' : ']', buf[64];
	size_t open = r->at++;
	if (++r->depth > DEPTH_MAX)
		return fail(r, open, "nested deeper than %d", DEPTH_MAX);
	skip_space(r);
	if (r->at < r->len && r->s[r->at] == close) {
		r->at++;
		r->depth--;
		return true;
	}
	for (;;) {
		skip_space(r);
		if (r->at >= r->len)
			return fail(r, open, "the %s that begins here never ends (a '%c' is missing)", object ? "object" : "list",
			            close);
		if (object) {
			if (r->s[r->at] == '\'')
				return fail(r, r->at, "a key in single quotes: JSON strings use double quotes");
			if (r->s[r->at] != '"')
				return fail(r, r->at, "expected a key in double quotes, found %s", found(r, r->at, buf, sizeof(buf)));
			if (!string(r))
				return false;
			size_t after_key = r->at;
			skip_space(r);
			if (r->at >= r->len || r->s[r->at] != ':')
				return fail(r, after_key, "expected ':' after the key, found %s", found(r, r->at, buf, sizeof(buf)));
			r->at++;
		}
		if (!value(r))
			return false;
		size_t after = r->at; /* where a ',' or the close belongs */
		skip_space(r);
		if (r->at < r->len && r->s[r->at] == close) {
			r->at++;
			r->depth--;
			return true;
		}
		if (r->at >= r->len) {
			size_t line, col;
			where(r, open, &line, &col);
			return fail(r, after, "the text ends inside the %s that begins at line %zu, column %zu (a '%c' is "
			            "missing)", object ? "object" : "list", line, col, close);
		}
		if (r->s[r->at] != ',') {
			size_t line, col;
			where(r, r->at, &line, &col);
			return fail(r, after, "expected ',' or '%c' after this %s, found %s at line %zu, column %zu", close,
			            object ? "member" : "item", found(r, r->at, buf, sizeof(buf)), line, col);
		}
		size_t comma = r->at++;
		skip_space(r);
		if (r->at < r->len && r->s[r->at] == close)
			return fail(r, comma, "a ',' before '%c': JSON allows no trailing comma", close);
	}
}

static bool value(reader *r)
{
	char buf[64];
	skip_space(r);
	if (r->at >= r->len)
		return fail(r, r->at, "expected a value, found the end of the text");
	char c = r->s[r->at];
	if (c == '{' || c == '[')
		return container(r, c == '{');
	if (c == '"')
		return string(r);
	if (c == '-' || isdigit((unsigned char)c))
		return number(r);
	if (isalpha((unsigned char)c))
		return word(r);
	if (c == '\'')
		return fail(r, r->at, "a string in single quotes: JSON strings use double quotes");
	return fail(r, r->at, "expected a value, found %s", found(r, r->at, buf, sizeof(buf)));
}

bool ti_json_diagnose(const char *text, size_t len, ti_json_error *e)
{
	memset(e, 0, sizeof(*e));
	reader r = {text, len, 0, 0, e, false};
	if (!value(&r))
		return false;
	size_t end = r.at;
	skip_space(&r);
	if (r.at < r.len) {
		char buf[64];
		size_t line, col;
		where(&r, end, &line, &col);
		return fail(&r, r.at, "%s after the end of the JSON value (which ended at line %zu, column %zu)",
		            found(&r, r.at, buf, sizeof(buf)), line, col);
	}
	return true;
}
