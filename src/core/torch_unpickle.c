/*
 * torch_unpickle.c - torch.load's unpickler as hooks of the pickle machine
 * (torch_unpickle.h): globals looked up in the known-globals table, calls
 * run by its rows (torch_calls.c), persistent ids resolved to storages,
 * findings recorded. Above the table and the calls it dispatches to.
 */
#include <inttypes.h>
#include <string.h>

#include "core/findings.h"
#include "core/known_globals.h"
#include "core/torch_unpickle.h"
#include "core/value_build.h"
#include "tinspect/tensor.h"

#define NOMEM(err) TI_FAIL((err), TI_E_LIMIT, "metadata exceeds the memory ceiling")

/* ---- the hooks ---- */

static const struct ti_known_global *lookup(void *ctx, const char *module, const char *name, int64_t offset)
{
	(void)ctx;
	(void)offset;
	return ti_known_global_find(module, name);
}

static ti_status call(void *ctx, ti_arena *arena, ti_value *callable, ti_value *args,
                      ti_call_kind how, ti_value **out, ti_error *err)
{
	(void)arena;
	if (callable->kind != TI_GLOBAL || !callable->as.global->known || !callable->as.global->known->call)
		return TI_OK;
	return callable->as.global->known->call(ctx, args, how, out, err);
}

static ti_status build(void *ctx, ti_arena *arena, ti_value *object, ti_value *state, int *handled, ti_error *err)
{
	(void)ctx;
	(void)arena;
	(void)state;
	(void)err;
	/* Tensor.__setstate__ (old files) and Parameter attributes: metadata is unaffected. */
	if (object->kind == TI_TENSOR)
		*handled = 1;
	return TI_OK;
}

bool ti_torch_key_position(const char *key, size_t *k)
{
	size_t n = 0, v = 0; /* in a local: a store through k could change key's bytes, as far as the compiler knows */
	for (; n < 10 && key[n] >= '0' && key[n] <= '9'; n++)
		v = v * 10 + (size_t)(key[n] - '0');
	*k = v;
	return n && !key[n] && (key[0] != '0' || n == 1);
}

/*
 * Storages by key: while every key is its own position (ti_torch_key_position)
 * a key is found without hashing; the first key that is not puts them all in
 * the index by name, which serves from then on. *next says whether key is
 * the position a new storage would take.
 */
static int64_t find_storage(ti_torch *t, const char *key, bool *next)
{
	size_t k;
	bool position = ti_torch_key_position(key, &k);
	*next = position && k == t->storage_count;
	if (!t->keys_are_positions) /* positions are kept one up: NULL is "absent" */
		return (int64_t)(uintptr_t)ti_strmap_get(&t->by_key, key) - 1;
	return position && k < t->storage_count ? (int64_t)k : -1;
}

/* Indexes the storage just added, whose key was its position if at_position; -1 when memory runs out. */
static int index_storage(ti_torch *t, bool at_position)
{
	size_t last = t->storage_count - 1;
	if (t->keys_are_positions && at_position)
		return 0;
	size_t from = t->keys_are_positions ? 0 : last;
	t->keys_are_positions = false;
	for (size_t i = from; i <= last; i++)
		if (ti_strmap_put(&t->by_key, t->storages[i]->key, (void *)(uintptr_t)(i + 1)))
			return -1;
	return 0;
}

/*
 * The element type a storage class names; TI_DT_UINT8 and *untyped for the
 * untyped ones. The pickle machine makes each known global once, so the
 * last few answers are kept by the global's address.
 */
static ti_dtype storage_dtype(ti_torch *t, const ti_global *cls, bool *untyped)
{
	size_t n = sizeof(t->classes) / sizeof(t->classes[0]);
	for (size_t i = 0; i < n; i++)
		if (t->classes[i].global == cls) {
			*untyped = t->classes[i].untyped;
			return t->classes[i].dtype;
		}
	const char *name = cls->name;
	*untyped = !strcmp(name, "UntypedStorage") || !strcmp(name, "TypedStorage") || !strcmp(name, "_UntypedStorage");
	ti_dtype dtype = *untyped ? TI_DT_UINT8 : ti_dtype_from_storage_name(name);
	size_t i = t->class_count++ % n;
	t->classes[i].global = cls;
	t->classes[i].dtype = dtype;
	t->classes[i].untyped = *untyped;
	return dtype;
}

/* ('storage', storage_type, key, location, numel): torch/serialization.py persistent_id */
static ti_status persistent_load(void *ctx, ti_arena *arena, ti_value *pid, ti_value **out, ti_error *err)
{
	ti_torch *t = ctx;
	const ti_seq *p;
	if (pid->kind != TI_TUPLE || (p = &pid->as.seq)->count < 5 || p->count > 6 ||
	    p->items[0]->kind != TI_STR || strcmp(p->items[0]->as.bytes.data, "storage"))
		return TI_FAIL(err, TI_E_CORRUPT, "persistent id is not a ('storage', type, key, location, size) tuple");
	const ti_value *type = p->items[1], *key = p->items[2], *loc = p->items[3];
	int64_t numel;
	if (!ti_global_is(type, TI_G_STORAGE_CLASS))
		return TI_FAIL(err, TI_E_CORRUPT, "persistent id names %s, not a storage class",
		               type->kind == TI_GLOBAL ? type->as.global->name : ti_kind_name(type->kind));
	if (key->kind != TI_STR || loc->kind != TI_STR)
		return TI_FAIL(err, TI_E_CORRUPT, "persistent id key and location must be strings");
	if (ti_value_as_int(p->items[4], &numel, err))
		return err->code;
	if (numel < 0)
		return TI_FAIL(err, TI_E_CORRUPT, "storage '%s' has negative size %" PRId64, key->as.bytes.data, numel);
	bool untyped;
	ti_dtype dtype = storage_dtype(t, type->as.global, &untyped);
	if (dtype == TI_DT_INVALID)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "unknown storage class '%s'", type->as.global->name);

	/* A fresh value each time: the rebuild call that takes it is its only user. */
	ti_value *v = ti_value_new(arena, TI_STORAGE);
	if (!v)
		return NOMEM(err);
	bool next;
	int64_t known = find_storage(t, key->as.bytes.data, &next);
	if (known >= 0) {
		/* The pickler repeats the tuple for every tensor of a storage: it must agree. */
		ti_storage *st = t->storages[known];
		if (st->untyped != untyped || (!untyped && st->dtype != dtype) || st->numel != numel)
			return TI_FAIL(err, TI_E_CORRUPT, "storage '%s' is declared twice with different types or sizes", st->key);
		v->as.storage = st;
		*out = v;
		return TI_OK;
	}
	if (t->storage_count >= t->storages_max)
		return TI_FAIL(err, TI_E_LIMIT, "more than %zu storages", t->storages_max);
	ti_storage *st = ti_arena_alloc(arena, sizeof(*st));
	if (!st)
		return NOMEM(err);
	st->key = key->as.bytes.data;
	st->dtype = dtype;
	st->untyped = untyped;
	st->numel = numel;
	if (__builtin_mul_overflow(numel, (int64_t)ti_dtype_size(dtype), &st->nbytes))
		return TI_FAIL(err, TI_E_CORRUPT, "storage '%s' byte size overflows 64 bits", st->key);
	st->location = loc->as.bytes.data;
	st->record_index = -1;
	st->index = t->storage_count;
	v->as.storage = st;
	if (ti_arena_array_grow(arena, (void **)&t->storages, &t->storage_capacity, sizeof(*t->storages), t->storage_count + 1))
		return NOMEM(err);
	t->storages[t->storage_count++] = st;
	if (index_storage(t, next))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory indexing storages");
	*out = v;
	return TI_OK;
}

void ti_torch_init(ti_torch *t, ti_arena *arena, size_t storages_max)
{
	memset(t, 0, sizeof(*t));
	t->arena = arena;
	t->storages_max = storages_max;
	t->keys_are_positions = true;
	ti_strmap_init(&t->by_key);
}

void ti_torch_release(ti_torch *t) { ti_strmap_release(&t->by_key); }

static ti_status observe(void *ctx, uint8_t opcode, const ti_value *target, int64_t offset, ti_error *err)
{
	ti_torch *t = ctx;
	return scan_observe(t->findings, opcode, target, offset, err);
}

static ti_status observe_call(void *ctx, uint8_t opcode, const ti_value *callable, const ti_value *args,
                              int64_t offset, ti_error *err)
{
	ti_torch *t = ctx;
	return scan_observe_call(t->findings, opcode, callable, args, offset, err);
}

static ti_status diverge(void *ctx, uint8_t opcode, const char *what, int64_t offset, ti_error *err)
{
	ti_torch *t = ctx;
	return scan_diverge(t->findings, opcode, what, offset, err);
}

void ti_torch_hooks(ti_torch *t, ti_pickle_hooks *hooks)
{
	hooks->ctx = t;
	hooks->lookup = lookup;
	hooks->call = call;
	hooks->build = build;
	hooks->persistent_load = persistent_load;
	hooks->observe = t->findings ? observe : NULL;
	hooks->observe_call = t->findings ? observe_call : NULL;
	hooks->diverge = t->findings ? diverge : NULL;
}
