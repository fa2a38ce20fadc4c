/*
 * json_error.h - why JSON text does not parse, and where, in words a
 * person can act on (jq's and Python's messages are the model): what was
 * expected, at the place it belongs, not where the parser noticed.
 */
#ifndef TINSPECT_UTIL_JSON_ERROR_H
#define TINSPECT_UTIL_JSON_ERROR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ti_json_error {
	size_t line, column;   /* 1-based, of the place the error is said to be */
	char message[256];     /* "expected ',' or '}' after the value (found '\"b\"' at line 3, column 2)" */
} ti_json_error;

/*
 * Reads text[0..len) as one JSON value with whitespace around it (RFC 8259).
 * false with *e filled at the first error; true when the text is valid
 * JSON. Recursion is bounded (nesting deeper than 1000 is an error);
 * nothing is allocated.
 */
bool ti_json_diagnose(const char *text, size_t len, ti_json_error *e);

#endif
