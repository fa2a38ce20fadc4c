/*
 * registry.c - every operator table, and lookup by name.
 * Adding an operator family: one file under src/ops/ exporting a table, and
 * one line below.
 */
#include <string.h>

#include "ops/op.h"
#include "ops/tables.h"
#include "util/closest.h"
#include "util/strmap.h"

static const ti_op_rule *const tables[] = {
	ti_ops_elementwise, ti_ops_activation, ti_ops_linalg, ti_ops_conv, ti_ops_pooling,
	ti_ops_resize, ti_ops_shape, ti_ops_join, ti_ops_index, ti_ops_reduce, ti_ops_norm,
	ti_ops_attention, ti_ops_create, ti_ops_scan, ti_ops_sort, ti_ops_triangular,
	ti_ops_data_dependent, ti_ops_python,
};

static const char *const prefixes[] = {"torch.nn.functional.", "torch.Tensor.", "torch.", "F.", "Tensor."};

/* The name before '(' in a signature equals name. */
static int signature_names(const char *signature, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(signature, name, n) && signature[n] == '(';
}

/* Name -> first rule with that name, built on first use and kept for the process. */
static ti_strmap by_name;
static char names[8192 * 4];

static const ti_op_rule *scan(const char *name)
{
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_op_rule *r = tables[t]; r->signature; r++)
			if (signature_names(r->signature, name))
				return r;
	return NULL;
}

static void index_names(void)
{
	size_t used = 0;
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_op_rule *r = tables[t]; r->signature; r++) {
			size_t len = strcspn(r->signature, "(");
			if (used + len + 1 > sizeof(names))
				return; /* the index is only a shortcut: scan() still answers */
			memcpy(names + used, r->signature, len);
			names[used + len] = '\0';
			void *existing;
			if (ti_strmap_add(&by_name, names + used, (void *)r, &existing) < 0)
				return;
			used += len + 1;
		}
}

const ti_op_rule *ti_op_find(const char *name)
{
	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++) {
		size_t n = strlen(prefixes[p]);
		if (!strncmp(name, prefixes[p], n)) {
			name += n;
			break;
		}
	}
	if (!by_name.capacity)
		index_names();
	const ti_op_rule *r = ti_strmap_get(&by_name, name);
	return r ? r : scan(name);
}

const char *ti_op_closest(const char *name, char *buf, size_t size)
{
	ti_closest c;
	ti_closest_init(&c, name);
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_op_rule *r = tables[t]; r->signature; r++)
			ti_closest_offer_signature(&c, r->signature);
	return ti_closest_copy(&c, buf, size);
}

void ti_op_each(void (*fn)(void *user, const ti_op_rule *rule), void *user)
{
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const ti_op_rule *r = tables[t]; r->signature; r++)
			fn(user, r);
}
