/*
 * registry.c - every module table, and lookup by torch.nn class name.
 * Adding a module family: one file under src/nn/ exporting a table, and one
 * line below.
 */
#include <string.h>

#include "nn/tables.h"
#include "util/closest.h"

static const ti_module_rule *const tables[] = {
	ti_nn_linear, ti_nn_conv, ti_nn_norm, ti_nn_activation, ti_nn_pooling, ti_nn_embedding,
	ti_nn_dropout, ti_nn_resize, ti_nn_rnn, ti_nn_attention, ti_nn_transformer,
};

const ti_module_rule *ti_module_find(const char *type)
{
	size_t n = strlen(type);
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_module_rule *r = tables[t]; r->signature; r++)
			if (!strncmp(r->signature, type, n) && r->signature[n] == '(')
				return r;
	return NULL;
}

const char *ti_module_closest(const char *type, char *buf, size_t size)
{
	static const char *const containers[] = {"Sequential", "ModuleList", "ModuleDict", "Module"};
	ti_closest c;
	ti_closest_init(&c, type);
	for (size_t i = 0; i < sizeof(containers) / sizeof(containers[0]); i++)
		ti_closest_offer(&c, containers[i], strlen(containers[i]));
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_module_rule *r = tables[t]; r->signature; r++)
			ti_closest_offer_signature(&c, r->signature);
	return ti_closest_copy(&c, buf, size);
}

void ti_module_each(void (*fn)(void *user, const ti_module_rule *rule), void *user)
{
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_module_rule *r = tables[t]; r->signature; r++)
			fn(user, r);
}

/*
 * Module._version where a class changes it: what state_dict() records in
 * _metadata for load_state_dict's upgrades. _NormBase sets 2 (its buffers
 * gained num_batches_tracked); every other torch.nn class keeps
 * Module._version = 1 (checked against PyTorch 1.13's torch.nn).
 */
static const struct {
	const char *type;
	int64_t version;
} versions[] = {
	{"BatchNorm1d", 2}, {"BatchNorm2d", 2}, {"BatchNorm3d", 2}, {"SyncBatchNorm", 2},
	{"InstanceNorm1d", 2}, {"InstanceNorm2d", 2}, {"InstanceNorm3d", 2},
	{"LazyBatchNorm1d", 2}, {"LazyBatchNorm2d", 2}, {"LazyBatchNorm3d", 2},
	{"LazyInstanceNorm1d", 2}, {"LazyInstanceNorm2d", 2}, {"LazyInstanceNorm3d", 2},
};

int64_t ti_module_version(const char *type)
{
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(versions[i].type, type))
			return versions[i].version;
	return 1;
}
