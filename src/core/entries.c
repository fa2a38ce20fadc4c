/* entries.c - flattening a value graph into named entries (see entries.h). */
#include "core/entries.h"

#include <stdint.h>

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/strsort.h"

/*
 * Which containers hold a tensor, computed once per container: a graph that
 * shares tensor-free subtrees (ten references to a dict of ten references
 * ...) is then named in time linear in its size, not in its paths.
 */
typedef struct holds_map {
	const ti_value **keys;
	unsigned char *state; /* 1 visiting, 2 holds no tensor, 3 holds one */
	size_t count, capacity;
} holds_map;

static size_t holds_slot(const holds_map *h, const ti_value *v)
{
	size_t mask = h->capacity - 1, i = (size_t)(((uintptr_t)v >> 4) * 0x9e3779b97f4a7c15u) & mask;
	while (h->keys[i] && h->keys[i] != v)
		i = (i + 1) & mask;
	return i;
}

static int holds_put(holds_map *h, const ti_value *v, unsigned char state)
{
	if ((h->count + 1) * 2 > h->capacity) {
		size_t cap = h->capacity ? h->capacity * 2 : 256;
		holds_map bigger = {calloc(cap, sizeof(*bigger.keys)), calloc(cap, 1), 0, cap};
		if (!bigger.keys || !bigger.state) {
			free(bigger.keys);
			free(bigger.state);
			return -1;
		}
		for (size_t i = 0; i < h->capacity; i++)
			if (h->keys[i]) {
				size_t j = holds_slot(&bigger, h->keys[i]);
				bigger.keys[j] = h->keys[i];
				bigger.state[j] = h->state[i];
				bigger.count++;
			}
		free(h->keys);
		free(h->state);
		*h = bigger;
	}
	size_t i = holds_slot(h, v);
	if (!h->keys[i]) {
		h->keys[i] = v;
		h->count++;
	}
	h->state[i] = state;
	return 0;
}

static unsigned char holds_get(const holds_map *h, const ti_value *v)
{
	if (!h->capacity)
		return 0;
	size_t i = holds_slot(h, v);
	return h->keys[i] ? h->state[i] : 0;
}

typedef struct walker {
	ti_arena *arena;
	ti_entry_list *list;
	size_t depth_max, entries_max;
	size_t visits, visits_max;
	const ti_value **path; /* containers being opened, to notice cycles */
	size_t depth;
	size_t tensors;
	holds_map holds;
	ti_error *err;
} walker;

static ti_status add(walker *w, const char *name, const ti_value *v)
{
	ti_entry_list *l = w->list;
	if (l->count >= w->entries_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "checkpoint names more than %zu entries", w->entries_max);
	if (ti_arena_array_grow(w->arena, (void **)&l->items, &l->capacity, sizeof(*l->items), l->count + 1))
		return TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
	l->items[l->count].name = name;
	l->items[l->count++].value = v;
	if (v->kind == TI_TENSOR)
		w->tensors++;
	return TI_OK;
}

enum { KEY_TEXT_MAX = 1 << 20 }; /* a dict key's text, whole; a longer one is refused, never cut */

/* str(key), whole, in the arena: a name is never shortened (only a table column may be). */
static const char *key_text(walker *w, const ti_value *key)
{
	size_t size = 128;
	for (;;) {
		char *text = ti_arena_alloc(w->arena, size);
		if (!text)
			return NULL;
		size_t len = ti_value_str(key, text, size);
		if (len < size)
			return text;
		if (len >= KEY_TEXT_MAX)
			return NULL;
		size = len + 1;
	}
}

/*
 * prefix + "." + key, with a dict key spelled as PyTorch's state_dict spells
 * it. At the top a str key is its own name: the string is shared, not copied.
 */
static const char *child_name(walker *w, const char *prefix, const ti_value *key, size_t index)
{
	char buf[64];
	const char *k = buf;
	if (key && key->kind == TI_STR && !prefix[0])
		return key->as.bytes.data;
	if (!key)
		snprintf(buf, sizeof(buf), "%zu", index);
	else if (key->kind == TI_STR)
		k = key->as.bytes.data;
	else if (key->kind == TI_INT)
		snprintf(buf, sizeof(buf), "%" PRId64, key->as.integer);
	else if ((k = key_text(w, key)) == NULL)
		return NULL;
	/* Joined without printf: this runs once per entry, and printf costs more than the rest of the walk. */
	return prefix[0] ? ti_arena_cat(w->arena, (const char *const[]){prefix, ".", k}, 3) : ti_arena_strdup(w->arena, k);
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

static const char *name_of(const void *ctx, uint32_t i) { return ((const char *const *)ctx)[i]; }

/* A top-level dict whose keys are all strings: each key is its name (child_name), and no list of names is made. */
static const char *key_name_of(const void *ctx, uint32_t i) { return ((const ti_dict *)ctx)->keys[i]->as.bytes.data; }

static bool keys_are_names(const char *prefix, const ti_dict *d)
{
	if (prefix[0])
		return false;
	for (size_t i = 0; i < d->count; i++)
		if (d->keys[i]->kind != TI_STR)
			return false;
	return true;
}

/*
 * take[i]: whose value the name first seen at i shows, SKIP for a later
 * repeat; made on the first repeat, as a state_dict has none.
 */
typedef struct repeats {
	uint32_t *take;
	size_t count;
	bool failed; /* out of memory */
} repeats;

enum { SKIP = UINT32_MAX };

static void take_last(void *ctx, uint32_t first, uint32_t later)
{
	repeats *r = ctx;
	if (!r->take && !r->failed) {
		if (!(r->take = malloc(r->count * sizeof(*r->take)))) {
			r->failed = true;
			return;
		}
		for (size_t i = 0; i < r->count; i++)
			r->take[i] = (uint32_t)i;
	}
	if (r->take) {
		r->take[first] = later;
		r->take[later] = SKIP;
	}
}

/*
 * A pickled dict may repeat a key; Python keeps the first position and the
 * last value. Names are what we compare, so keys 1 and '1' count as one,
 * as they would in a state_dict's dotted names. The names are sorted by
 * hash to find repeats (strsort.h); a state_dict has none.
 */
static ti_status walk_dict(walker *w, const char *name, const ti_value *v)
{
	size_t n = v->as.dict->count;
	if (n > TI_STRSORT_MAX)
		return TI_FAIL(w->err, TI_E_LIMIT, "dict of %zu items is too big to name", n);
	/* A state_dict's keys are its names: a list of 20,000 pointers to them would be fresh memory for nothing. */
	bool keyed = keys_are_names(name, v->as.dict);
	const char **names = n && !keyed ? malloc(n * sizeof(*names)) : NULL;
	repeats r = {NULL, n, false};
	ti_strsort sorted;
	ti_status s = TI_OK;
	if (n && !keyed && !names)
		return TI_FAIL(w->err, TI_E_NOMEM, "out of memory naming entries");
	for (size_t i = 0; i < n && !keyed; i++) {
		names[i] = child_name(w, name, v->as.dict->keys[i], i);
		if (!names[i]) {
			s = TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
			goto done;
		}
	}
	if (n > 1) { /* the sorted names go before the walk, which needs memory of its own */
		const ti_dict *d = v->as.dict;
		r.failed = (keyed && d->hashes ? ti_strsort_build_hashed(&sorted, n, d->hashes, key_name_of, d)
		            : keyed            ? ti_strsort_build(&sorted, n, key_name_of, d)
		                               : ti_strsort_build(&sorted, n, name_of, names)) != 0;
		if (!r.failed)
			ti_strsort_repeats(&sorted, take_last, &r);
		ti_strsort_release(&sorted);
		if (r.failed) {
			s = TI_FAIL(w->err, TI_E_NOMEM, "out of memory naming entries");
			goto done;
		}
	}
	for (size_t i = 0; i < n; i++) {
		size_t from = r.take ? r.take[i] : i;
		if (from != SKIP && (s = walk(w, keyed ? key_name_of(v->as.dict, (uint32_t)i) : names[i], v->as.dict->values[from])))
			goto done;
	}
done:
	free(names);
	free(r.take);
	return s;
}

/* An object we did not run: its tensors can sit in its arguments, its state, or items added to it. */
static ti_status walk_object(walker *w, const char *name, const ti_value *v)
{
	const ti_value *parts[] = {v->as.object->args, v->as.object->state, v->as.object->list_items, v->as.object->dict_items};
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

/*
 * A whole nn.Module saved by torch.save(model): an object whose state is a
 * dict with the dicts _parameters, _buffers and _modules. Its state dict is
 * named as Module.state_dict() names it: its parameters that are not None,
 * its buffers not in _non_persistent_buffers_set, then each submodule's
 * under its name. The class comes first, as NAME.__class__ (the root's
 * plain __class__): loading the module needs that class's code.
 */
static const ti_value *module_part(const ti_value *v, const char *key)
{
	if (v->kind != TI_OBJECT || !v->as.object->state || v->as.object->state->kind != TI_DICT)
		return NULL;
	const ti_value *part = ti_dict_get(v->as.object->state, key);
	return part && part->kind == TI_DICT ? part : NULL;
}

static bool is_module(const ti_value *v)
{
	return module_part(v, "_parameters") && module_part(v, "_buffers") && module_part(v, "_modules");
}

static bool in_set(const ti_value *set, const ti_value *key)
{
	if (!set || (set->kind != TI_SET && set->kind != TI_FROZENSET) || key->kind != TI_STR)
		return false;
	for (size_t i = 0; i < set->as.seq.count; i++) {
		const ti_value *x = set->as.seq.items[i];
		if (x->kind == TI_STR && x->as.bytes.size == key->as.bytes.size &&
		    !memcmp(x->as.bytes.data, key->as.bytes.data, key->as.bytes.size))
			return true;
	}
	return false;
}

static ti_status walk_module(walker *w, const char *name, const ti_value *v)
{
	for (size_t i = 0; i < w->depth; i++)
		if (w->path[i] == v)
			return add(w, name, v); /* a module inside itself: named once, as a value */
	if (w->depth >= w->depth_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "containers nest deeper than %zu levels", w->depth_max);
	static const ti_value class_key = {.kind = TI_STR, .as.bytes = {"__class__", 9}};
	const char *class_name = child_name(w, name, &class_key, 0);
	if (!class_name)
		return TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
	if (add(w, class_name, v->as.object->callable))
		return w->err->code;
	const ti_value *skip = ti_dict_get(v->as.object->state, "_non_persistent_buffers_set");
	const char *parts[] = {"_parameters", "_buffers", "_modules"};
	w->path[w->depth++] = v;
	for (size_t p = 0; p < 3; p++) {
		const ti_value *d = module_part(v, parts[p]);
		for (size_t i = 0; i < d->as.dict->count; i++) {
			const ti_value *key = d->as.dict->keys[i], *item = d->as.dict->values[i];
			if (item->kind == TI_NONE || (p == 1 && in_set(skip, key)))
				continue; /* state_dict() leaves out None and non-persistent buffers */
			const char *n = child_name(w, name, key, i);
			if (!n) {
				w->depth--;
				return TI_FAIL(w->err, TI_E_LIMIT, "metadata exceeds the memory ceiling");
			}
			if (walk(w, n, item)) {
				w->depth--;
				return w->err->code;
			}
		}
	}
	w->depth--;
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

/* Sets *yes if v holds a tensor anywhere below it; a cycle holds nothing new. */
static ti_status holds_tensor(walker *w, const ti_value *v, size_t depth, bool *yes)
{
	*yes = false;
	if (v->kind == TI_TENSOR) {
		*yes = true;
		return TI_OK;
	}
	if (!is_container(v))
		return TI_OK;
	unsigned char known = holds_get(&w->holds, v);
	if (known) {
		*yes = known == 3;
		return TI_OK;
	}
	if (depth >= w->depth_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "containers nest deeper than %zu levels", w->depth_max);
	if (holds_put(&w->holds, v, 1))
		return TI_FAIL(w->err, TI_E_NOMEM, "out of memory naming entries");
	const ti_value *const *items = NULL;
	size_t n = 0;
	const ti_value *parts[4] = {NULL, NULL, NULL, NULL};
	if (v->kind == TI_DICT) {
		items = (const ti_value *const *)v->as.dict->values;
		n = v->as.dict->count;
	} else if (v->kind == TI_OBJECT) {
		parts[0] = v->as.object->args;
		parts[1] = v->as.object->state;
		parts[2] = v->as.object->list_items;
		parts[3] = v->as.object->dict_items;
		items = parts;
		n = 4;
	} else {
		items = (const ti_value *const *)v->as.seq.items;
		n = v->as.seq.count;
	}
	bool any = false;
	for (size_t i = 0; i < n && !any; i++)
		if (items[i] && holds_tensor(w, items[i], depth + 1, &any))
			return w->err->code;
	if (holds_put(&w->holds, v, any ? 3 : 2))
		return TI_FAIL(w->err, TI_E_NOMEM, "out of memory naming entries");
	*yes = any;
	return TI_OK;
}

static ti_status walk(walker *w, const char *name, const ti_value *v)
{
	if (++w->visits > w->visits_max)
		return TI_FAIL(w->err, TI_E_LIMIT, "checkpoint's values are shared too often to name (over %zu visits)", w->visits_max);
	if (!is_container(v))
		return add(w, name, v);
	if (is_module(v))
		return walk_module(w, name, v);
	bool holds;
	if (holds_tensor(w, v, w->depth, &holds))
		return w->err->code;
	/* No tensor inside: one value, shown with its repr; but the root is always
	 * opened, so a checkpoint of plain values lists them by name. */
	if (!holds && (w->depth > 0 || v->kind == TI_OBJECT))
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
	if (w->tensors == tensors && w->depth > 0) {
		/* Its tensors were all behind cycles: the container is one value after all. */
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
	/* torch.save(tensor): the root itself is the one entry, named alike in every command */
	if (!s && out->count == 1 && out->items[0].value == root && !out->items[0].name[0])
		out->items[0].name = TI_ROOT_NAME;
	free(w.path);
	free(w.holds.keys);
	free(w.holds.state);
	return s;
}
