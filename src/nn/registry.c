/*
 * registry.c - every module table, and lookup by torch.nn class name.
 * Adding a module family: one file under src/nn/ exporting a table, and one
 * line below.
 */
#include <string.h>

#include "nn/tables.h"

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
