/*
 * json_scan.h - a pass over untrusted JSON text before cJSON parses it
 * (library-internal; used by the safetensors and Hugging Face index readers).
 *
 * cJSON takes bytes on trust: it does not check UTF-8, it turns "\u0000"
 * into a string that C then cuts short (two different names could compare
 * equal), it accepts raw control characters in strings, it reads every
 * number as a double, and it allocates one node per value with no ceiling.
 * This pass reads the raw bytes once, rejects what cJSON would get wrong,
 * and counts the values so that the caller can refuse text that would make
 * cJSON allocate without bound. It allocates nothing and never reads past
 * len. Whatever it lets through still has to be parsed by cJSON, which
 * rejects the remaining grammar errors: ti_json_parse() does both.
 */
#ifndef TINSPECT_JSON_SCAN_H
#define TINSPECT_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "tinspect/error.h"

typedef struct ti_json_scan {
	/* in */
	const char *what;      /* names the text in messages: "header", "index" */
	int64_t base_offset;   /* added to offsets in errors (where the text starts in its file) */
	bool integers_only;    /* numbers must be non-negative integers below 2^53 */
	size_t values_max;     /* ceiling on values: objects, arrays, keys, strings, numbers, literals */
	/* out */
	size_t values;
	/* scratch: where the scan is, to say in which top-level entry a fault lies */
	size_t depth;
	const char *key;       /* the raw text of the last top-level key, or NULL */
	size_t key_len;
} ti_json_scan;

/* 2^53: every integer below it is exact in a double. */
#define TI_JSON_INT_LIMIT 9007199254740992.0

/*
 * Checks text[0..len): valid UTF-8; a '{' first, after optional JSON
 * whitespace; no raw control byte and no \u0000 escape inside a string;
 * no byte >= 0x80 outside a string; with integers_only, every number is
 * 0 or [1-9][0-9]* below 2^53; at most values_max values.
 * TI_E_CORRUPT (TI_E_LIMIT for the ceiling) with the offset of the fault,
 * and, for a fault inside the value of a top-level key, that key:
 *   header has the number '-2' where only non-negative integers belong, in the entry 'a' 
 */
ti_status ti_json_scan_text(const char *text, size_t len, ti_json_scan *scan, ti_error *err);

/*
 * Scans text with ti_json_scan_text(), parses it with cJSON and refuses
 * anything but JSON whitespace after the value (writers pad with spaces;
 * the NUL padding some writers use is refused, as serde refuses it). On
 * success *root is an object, the caller's to cJSON_Delete().
 */
ti_status ti_json_parse(const char *text, size_t len, ti_json_scan *scan, cJSON **root, ti_error *err);

/* Sorts keys[0..n) (strcmp order) and returns a key that appears twice, or NULL. */
const char *ti_json_duplicate_key(const char **keys, size_t n);

/* The length of the valid UTF-8 sequence at s[0..len), or 0 when it is not one. */
size_t ti_utf8_sequence(const unsigned char *s, size_t len);

/* Whether s[0..len) is valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
bool ti_utf8_valid(const char *s, size_t len);

/* JSON whitespace: space, tab, line feed, carriage return. */
static inline bool ti_json_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

#endif
