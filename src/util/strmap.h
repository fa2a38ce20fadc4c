/*
 * strmap.h - a string-keyed hash map (library-internal).
 * Keys are borrowed, not copied: they must outlive the map (they live in an
 * arena). The table itself is malloc'd and freed by ti_strmap_release().
 */
#ifndef TINSPECT_STRMAP_H
#define TINSPECT_STRMAP_H

#include <stddef.h>

typedef struct ti_strmap {
	const char **keys;
	void **values;
	size_t count, capacity;
} ti_strmap;

void ti_strmap_init(ti_strmap *map);
void ti_strmap_release(ti_strmap *map);
void *ti_strmap_get(const ti_strmap *map, const char *key);
/* Inserts or replaces; returns -1 when memory runs out. */
int ti_strmap_put(ti_strmap *map, const char *key, void *value);
/* Inserts unless present: returns 0 inserted, 1 present (*existing set, nothing changed), -1 out of memory. */
int ti_strmap_add(ti_strmap *map, const char *key, void *value, void **existing);

#endif
