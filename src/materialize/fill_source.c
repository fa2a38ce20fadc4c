/*
 * fill_source.c - a fill policy as a source's generator: the storages of a
 * description (or of a checkpoint saved from the meta device) get bytes
 * that reads compute, element by element, from the policy and its key.
 */
#include "tinspect/fill.h"
#include "tinspect/place.h"

typedef struct fill_generator {
	ti_fill_policy policy;
	ti_fill_key key;
} fill_generator;

static ti_status generate(const void *ctx, ti_dtype dtype, uint64_t first, size_t count, void *out, ti_error *err)
{
	const fill_generator *g = ctx;
	return ti_fill(&g->policy, dtype, g->key, first, count, out, err);
}

ti_status ti_source_set_fill(ti_source *src, size_t storage, const ti_fill_policy *policy, uint64_t seed,
                             const char *name, ti_error *err)
{
	const ti_source_storage *sto = ti_source_storage_at(src, storage);
	if (!sto)
		return TI_FAIL(err, TI_E_INVALID, "no storage %zu", storage);
	ti_status st = ti_fill_check(policy, sto->dtype, err);
	if (st)
		return st;
	fill_generator *g = ti_source_alloc(src, sizeof(*g));
	if (!g)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory listing tensors");
	g->policy = *policy;
	g->key = ti_fill_key_of(seed, name);
	return ti_source_set_generator(src, storage, generate, g, err);
}

const ti_fill_policy *ti_source_fill(const ti_source *src, size_t storage)
{
	const void *ctx;
	if (ti_source_generator_of(src, storage, &ctx) != generate)
		return NULL;
	return &((const fill_generator *)ctx)->policy;
}
