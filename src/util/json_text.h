/*
 * json_text.h - a cJSON value's text in malloc'd memory.
 *
 * cJSON_Print's text comes from cJSON's allocator, which the program may
 * replace (cli/json_pool.h); text handed to a caller who frees it with
 * free() is copied out of it first.
 */
#ifndef TINSPECT_UTIL_JSON_TEXT_H
#define TINSPECT_UTIL_JSON_TEXT_H

#include <stdbool.h>

#include <cJSON.h>

/* cJSON_Print (formatted) or cJSON_PrintUnformatted of item, malloc'd; NULL when memory runs out. */
char *ti_json_print(const cJSON *item, bool formatted);

#endif
