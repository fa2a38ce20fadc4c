/* json_text.c - a cJSON value's text in malloc'd memory (see json_text.h). */
#include "util/json_text.h"

#include <stdlib.h>
#include <string.h>

char *ti_json_print(const cJSON *item, bool formatted)
{
	char *text = formatted ? cJSON_Print(item) : cJSON_PrintUnformatted(item);
	if (!text)
		return NULL;
	size_t n = strlen(text) + 1;
	char *copy = malloc(n);
	if (copy)
		memcpy(copy, text, n);
	cJSON_free(text);
	return copy;
}
