/* json_scan.c - checking untrusted JSON bytes before cJSON (see json_scan.h). */
#include "format/json_scan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ti_utf8_sequence(const unsigned char *s, size_t len)
{
	/* RFC 3629 section 4: the well-formed byte sequences. */
	if (len == 0)
		return 0;
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0; /* no overlong three-byte forms */
		else if (c == 0xED)
			hi = 0x9F; /* no UTF-16 surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90; /* no overlong four-byte forms */
		else if (c == 0xF4)
			hi = 0x8F; /* nothing above U+10FFFF */
	} else
		return 0;
	if (len < need || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return need;
}

bool ti_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t k = ti_utf8_sequence(p + i, len - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

/* Fails with "<what> <message>" at the file offset of text[at]. */
static ti_status fail_at(ti_error *err, const ti_json_scan *scan, size_t at, ti_status code,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static ti_status fail_at(ti_error *err, const ti_json_scan *scan, size_t at, ti_status code,
                         const char *fmt, ...)
{
	char message[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (scan->depth >= 2 && scan->key) {
		int n = scan->key_len > 80 ? 80 : (int)scan->key_len;
		TI_FAIL(err, code, "%s %s, in the entry '%.*s%s'", scan->what, message, n, scan->key,
		        scan->key_len > 80 ? "..." : "");
	} else
		TI_FAIL(err, code, "%s %s", scan->what, message);
	ti_error_at(err, NULL, scan->base_offset + (int64_t)at);
	return code;
}

static bool is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A number token at text[i]: checks it when integers_only; returns its length. */
static ti_status scan_number(const char *text, size_t len, size_t i, ti_json_scan *scan, size_t *out,
                             ti_error *err)
{
	size_t j = i;
	while (j < len && ((text[j] >= '0' && text[j] <= '9') || text[j] == '+' || text[j] == '-' ||
	                   text[j] == '.' || text[j] == 'e' || text[j] == 'E'))
		j++;
	*out = j - i;
	if (!scan->integers_only)
		return TI_OK;
	char shown[32];
	size_t n = j - i < sizeof(shown) - 4 ? j - i : sizeof(shown) - 4;
	memcpy(shown, text + i, n);
	strcpy(shown + n, j - i > n ? "..." : "");
	for (size_t k = i; k < j; k++)
		if (text[k] < '0' || text[k] > '9')
			return fail_at(err, scan, i, TI_E_CORRUPT,
			               "has the number '%s' where only non-negative integers belong", shown);
	if (j - i > 1 && text[i] == '0')
		return fail_at(err, scan, i, TI_E_CORRUPT, "has the number '%s' with a leading zero", shown);
	/* 2^53 has 16 digits; anything longer is above it. */
	uint64_t v = 0;
	if (j - i <= 16)
		for (size_t k = i; k < j; k++)
			v = v * 10 + (uint64_t)(text[k] - '0');
	if (j - i > 16 || (double)v >= TI_JSON_INT_LIMIT)
		return fail_at(err, scan, i, TI_E_CORRUPT, "has the number '%s', not below 2^53", shown);
	return TI_OK;
}

ti_status ti_json_scan_text(const char *text, size_t len, ti_json_scan *scan, ti_error *err)
{
	const unsigned char *p = (const unsigned char *)text;
	scan->values = 0;
	scan->depth = 0;
	scan->key = NULL;
	scan->key_len = 0;
	unsigned char last = 0; /* the last structural character outside strings */
	size_t i = 0;
	while (i < len && ti_json_is_space(p[i]))
		i++;
	if (i == len || p[i] != '{')
		return fail_at(err, scan, i, TI_E_CORRUPT, "does not start with '{'");
	while (i < len) {
		unsigned char c = p[i];
		if (c == '"') {
			/* A string, up to its closing quote. */
			size_t start = i++;
			for (;;) {
				if (i >= len)
					return fail_at(err, scan, start, TI_E_CORRUPT, "has a string that never ends");
				c = p[i];
				if (c == '"') {
					i++;
					break;
				}
				if (c < 0x20)
					return fail_at(err, scan, i, TI_E_CORRUPT,
					               "has a raw control character in a string");
				if (c == '\\') {
					if (i + 1 >= len)
						return fail_at(err, scan, start, TI_E_CORRUPT, "has a string that never ends");
					if (p[i + 1] == 'u') {
						if (i + 6 > len || !is_hex(p[i + 2]) || !is_hex(p[i + 3]) || !is_hex(p[i + 4]) ||
						    !is_hex(p[i + 5]))
							return fail_at(err, scan, i, TI_E_CORRUPT, "has a bad \\u escape");
						if (!memcmp(p + i + 2, "0000", 4))
							return fail_at(err, scan, i, TI_E_CORRUPT,
							               "has a \\u0000 escape, which no name or value may hold");
						i += 6;
					} else
						i += 2;
					continue;
				}
				size_t k = ti_utf8_sequence(p + i, len - i);
				if (!k)
					return fail_at(err, scan, i, TI_E_CORRUPT, "is not valid UTF-8");
				i += k;
			}
			scan->values++;
			if (scan->depth == 1 && (last == '{' || last == ',')) {
				scan->key = text + start + 1; /* a key of the root object */
				scan->key_len = i - start - 2;
			}
			last = '"';
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			size_t n;
			ti_status s = scan_number(text, len, i, scan, &n, err);
			if (s)
				return s;
			i += n;
			scan->values++;
		} else if (c == '{' || c == '[') {
			scan->values++;
			scan->depth++;
			last = c;
			i++;
		} else if (c == 't' || c == 'f' || c == 'n') {
			scan->values++;
			i++;
			while (i < len && p[i] >= 'a' && p[i] <= 'z')
				i++; /* the rest of true, false, null: cJSON checks the spelling */
		} else if (c == '}' || c == ']' || c == ',' || c == ':') {
			if ((c == '}' || c == ']') && scan->depth)
				scan->depth--;
			last = c;
			i++;
		} else if (c >= 0x80) {
			if (ti_utf8_sequence(p + i, len - i))
				return fail_at(err, scan, i, TI_E_CORRUPT, "has a non-ASCII character outside a string");
			return fail_at(err, scan, i, TI_E_CORRUPT, "is not valid UTF-8");
		} else
			i++;
		if (scan->values > scan->values_max)
			return fail_at(err, scan, i, TI_E_LIMIT, "has more than %zu JSON values", scan->values_max);
	}
	return TI_OK;
}

ti_status ti_json_parse(const char *text, size_t len, ti_json_scan *scan, cJSON **root, ti_error *err)
{
	*root = NULL;
	ti_status s = ti_json_scan_text(text, len, scan, err);
	if (s)
		return s;
	const char *end = NULL;
	cJSON *json = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!json) {
		TI_FAIL(err, TI_E_CORRUPT, "%s is not valid JSON", scan->what);
		if (end >= text && end <= text + len)
			ti_error_at(err, NULL, scan->base_offset + (int64_t)(end - text));
		return TI_E_CORRUPT;
	}
	for (const char *p = end; p < text + len; p++)
		if (!ti_json_is_space((unsigned char)*p)) {
			cJSON_Delete(json);
			TI_FAIL(err, TI_E_CORRUPT, "%s has bytes after its JSON object", scan->what);
			ti_error_at(err, NULL, scan->base_offset + (int64_t)(p - text));
			return TI_E_CORRUPT;
		}
	*root = json; /* an object: the scan saw '{' first */
	return TI_OK;
}

static int compare_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *ti_json_duplicate_key(const char **keys, size_t n)
{
	qsort(keys, n, sizeof(*keys), compare_keys);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			return keys[i];
	return NULL;
}
