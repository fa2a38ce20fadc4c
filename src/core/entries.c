/* entries.c - flattening a value graph into named entries (see entries.h). */
#include "core/entries.h"

#include <stdint.h>

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/strmap.h"

typedef struct walker {
	ti_arena *arena;
	ti_entry_list *list;
	size_t depth_max, entries_max;
	size_t visits, visits_max;
	const ti_value **path; /* containers being opened, to notice cycles */
	size_t depth;
	size_t tensors;
	ti_error *err;
} walker;

static ti_status add(walker *w, const char *name, const ti_value *v)
{
	ti_entry_list *l = w->list;
	if (l->count >= w->entries_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "checkpoint names more than %zu entries", w->entries_max);
	if (l->count == l->capacity) {
		size_t cap = l->capacity ? l->capacity * 2 : 256;
		ti_entry *items = ti_arena_calloc(w->arena, cap, sizeof(*items));
		if (!items)
			return TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
		if (l->count)
			memcpy(items, l->items, l->count * sizeof(*items));
		l->items = items;
		l->capacity = cap;
	}
	l->items[l->count].name = name;
	l->items[l->count++].value = v;
	if (v->kind == TI_TENSOR)
		w->tensors++;
	return TI_OK;
}

/* prefix + "." + key, with a dict key spelled as PyTorch's state_dict spells it. */
static const char *child_name(walker *w, const char *prefix, const ti_value *key, size_t index)
{
	char buf[64];
	const char *k = buf;
	if (!key)
		snprintf(buf, sizeof(buf), "%zu", index);
	else if (key->kind == TI_STR)
		k = key->as.bytes.data;
	else if (key->kind == TI_INT)
		snprintf(buf, sizeof(buf), "%" PRId64, key->as.integer);
	else
		k = ti_value_repr(key, buf, sizeof(buf), 48);
	/* Joined by hand: this runs once per entry, and printf costs more than the rest of the walk. */
	size_t plen = strlen(prefix), klen = strlen(k);
	char *name = ti_arena_alloc(w->arena, plen + klen + 2);
	if (!name)
		return NULL;
	memcpy(name, prefix, plen);
	if (plen)
		name[plen++] = '.';
	memcpy(name + plen, k, klen + 1);
	return name;
}

static ti_status walk(walker *w, const char *name, const ti_value *v);

static ti_status walk_seq(walker *w, const char *name, const ti_value *v)
{
	for (size_t i = 0; i < v->as.seq.count; i++) {
		const char *n = child_name(w, name, NULL, i);
		if (!n)
			return TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
		if (walk(w, n, v->as.seq.items[i]))
			return w->err->code;
	}
	return TI_OK;
}

/*
 * A pickled dict may repeat a key; Python keeps the first position and the
 * last value. Names are what we compare, so keys 1 and '1' count as one,
 * as they would in a state_dict's dotted names.
 */
static ti_status walk_dict(walker *w, const char *name, const ti_value *v)
{
	size_t n = v->as.dict.count;
	const char **names = n ? ti_arena_calloc(w->arena, n, sizeof(*names)) : NULL;
	ti_strmap last;
	ti_strmap_init(&last);
	ti_status s = TI_OK;
	if (n && !names)
		return TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
	for (size_t i = 0; i < n; i++) {
		names[i] = child_name(w, name, v->as.dict.keys[i], i);
		if (!names[i]) {
			s = TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
			goto done;
		}
		if (n > 1 && ti_strmap_put(&last, names[i], (void *)(uintptr_t)(i + 1))) {
			s = TI_FAIL(w->err, TI_E_NOMEM, "out of memory naming entries");
			goto done;
		}
	}
	for (size_t i = 0; i < n; i++) {
		size_t take = i;
		if (n > 1) {
			size_t at = (size_t)(uintptr_t)ti_strmap_get(&last, names[i]);
			if (at == 0)
				continue; /* an earlier duplicate already took this name */
			take = at - 1;
			ti_strmap_put(&last, names[i], NULL); /* replacing never allocates */
		}
		if ((s = walk(w, names[i], v->as.dict.values[take])))
			goto done;
	}
done:
	ti_strmap_release(&last);
	return s;
}

/* An object we did not run: its tensors can sit in its arguments, its state, or items added to it. */
static ti_status walk_object(walker *w, const char *name, const ti_value *v)
{
	const ti_value *parts[] = {v->as.object.args, v->as.object.state, v->as.object.list_items, v->as.object.dict_items};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		const ti_value *p = parts[i];
		if (!p)
			continue;
		if (p->kind == TI_DICT) {
			if (walk_dict(w, name, p))
				return w->err->code;
		} else if (p->kind == TI_TUPLE || p->kind == TI_LIST) {
			if (walk_seq(w, name, p))
				return w->err->code;
		} else if (walk(w, name, p)) {
			return w->err->code;
		}
	}
	return TI_OK;
}

static bool is_container(const ti_value *v)
{
	switch (v->kind) {
	case TI_TUPLE: case TI_LIST: case TI_SET: case TI_FROZENSET: case TI_DICT: case TI_OBJECT:
		return true;
	default:
		return false;
	}
}

static ti_status walk(walker *w, const char *name, const ti_value *v)
{
	if (++w->visits > w->visits_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "checkpoint's values are shared too often to name (over %zu visits)", w->visits_max);
	if (!is_container(v))
		return add(w, name, v);
	for (size_t i = 0; i < w->depth; i++)
		if (w->path[i] == v)
			return add(w, name, v); /* a cycle: name it once, as a value */
	if (w->depth >= w->depth_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "containers nest deeper than %zu levels", w->depth_max);
	size_t count = w->list->count, tensors = w->tensors;
	w->path[w->depth++] = v;
	ti_status s;
	if (v->kind == TI_DICT)
		s = walk_dict(w, name, v);
	else if (v->kind == TI_OBJECT)
		s = walk_object(w, name, v);
	else
		s = walk_seq(w, name, v);
	w->depth--;
	if (s)
		return s;
	if (w->tensors == tensors) {
		/* No tensor inside: the container is one value, shown with its repr. */
		w->list->count = count;
		return add(w, name, v);
	}
	return TI_OK;
}

ti_status ti_entries_collect(const ti_value *root, ti_arena *arena, size_t depth_max,
                             size_t entries_max, ti_entry_list *out, ti_error *err)
{
	walker w = {.arena = arena, .list = out, .depth_max = depth_max, .entries_max = entries_max,
	            .visits_max = entries_max * 4, .err = err};
	memset(out, 0, sizeof(*out));
	w.path = malloc((depth_max + 1) * sizeof(*w.path));
	if (!w.path)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_status s = walk(&w, "", root);
	free(w.path);
	return s;
}
