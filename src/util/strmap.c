/* strmap.c - open addressing with linear probing, FNV-1a hashes (see strmap.h). */
#include "util/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	/* FNV's low bits cluster on keys like "0", "1", ...; fold the high bits in. */
	return h ^ (h >> 29) ^ (h >> 47);
}

void ti_strmap_init(ti_strmap *map) { memset(map, 0, sizeof(*map)); }

void ti_strmap_release(ti_strmap *map)
{
	free(map->keys);
	free(map->values);
	memset(map, 0, sizeof(*map));
}

static size_t slot(const ti_strmap *map, const char *key)
{
	size_t mask = map->capacity - 1, i = (size_t)hash(key) & mask;
	while (map->keys[i] && strcmp(map->keys[i], key))
		i = (i + 1) & mask;
	return i;
}

void *ti_strmap_get(const ti_strmap *map, const char *key)
{
	if (!map->capacity)
		return NULL;
	size_t i = slot(map, key);
	return map->keys[i] ? map->values[i] : NULL;
}

int ti_strmap_put(ti_strmap *map, const char *key, void *value)
{
	void *existing;
	int r = ti_strmap_add(map, key, value, &existing);
	if (r == 1) /* replacing never allocates */
		map->values[slot(map, key)] = value;
	return r < 0 ? -1 : 0;
}

int ti_strmap_add(ti_strmap *map, const char *key, void *value, void **existing)
{
	if (map->capacity) {
		size_t i = slot(map, key);
		if (map->keys[i]) {
			*existing = map->values[i];
			return 1;
		}
	}
	if ((map->count + 1) * 2 > map->capacity) {
		size_t cap = map->capacity ? map->capacity * 2 : 64;
		if (cap > SIZE_MAX / sizeof(void *))
			return -1;
		ti_strmap bigger = {calloc(cap, sizeof(char *)), calloc(cap, sizeof(void *)), 0, cap};
		if (!bigger.keys || !bigger.values) {
			free(bigger.keys);
			free(bigger.values);
			return -1;
		}
		for (size_t i = 0; i < map->capacity; i++)
			if (map->keys[i]) {
				size_t j = slot(&bigger, map->keys[i]);
				bigger.keys[j] = map->keys[i];
				bigger.values[j] = map->values[i];
				bigger.count++;
			}
		ti_strmap_release(map);
		*map = bigger;
	}
	size_t i = slot(map, key);
	if (!map->keys[i]) {
		map->keys[i] = key;
		map->count++;
	}
	map->values[i] = value;
	return 0;
}
